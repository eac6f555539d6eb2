#!/usr/bin/env python3
"""Fetch the ONNX Runtime C/C++ headers (>= 1.24) that the build compiles against.

No ORT wheel carries its headers; Debian ships them in ``libonnxruntime-dev``. This script reads Debian's
package index, downloads that package, checks its SHA-256 against the index and unpacks
``usr/include/onnxruntime`` into the destination. Pure Python (no apt, no dpkg), so it runs inside a
build on any Linux with network access. Prints the include directory on success.

Usage: fetch_ort_headers.py [DEST]   (default: $FP8ORT_CACHE or ~/.cache/fp8ort, subfolder ort-headers)
"""

from __future__ import annotations

import hashlib
import io
import lzma
import os
import sys
import tarfile
import urllib.request
from pathlib import Path

MIRROR = os.environ.get("FP8ORT_DEBIAN_MIRROR", "http://deb.debian.org/debian")
SUITES = ("experimental", "unstable")
PACKAGE = "libonnxruntime-dev"
MIN_VERSION = (1, 24)
MARKER = "onnxruntime_ep_c_api.h"


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=60) as r:
        return r.read()


def _version_tuple(v: str) -> tuple[int, ...]:
    core = v.split(":")[-1].split("+")[0].split("-")[0].split("~")[0]
    return tuple(int(p) for p in core.split(".") if p.isdigit())


def _find_package(suite: str, arch: str) -> dict[str, str] | None:
    index = lzma.decompress(_get(f"{MIRROR}/dists/{suite}/main/binary-{arch}/Packages.xz")).decode()
    best = None
    for stanza in index.split("\n\n"):
        fields: dict[str, str] = {}
        for line in stanza.splitlines():
            if line and not line[0].isspace() and ":" in line:
                key, value = line.split(":", 1)
                fields[key] = value.strip()
        if fields.get("Package") != PACKAGE:
            continue
        if _version_tuple(fields["Version"]) < MIN_VERSION:
            continue
        if best is None or _version_tuple(fields["Version"]) > _version_tuple(best["Version"]):
            best = fields
    return best


def _ar_members(blob: bytes) -> dict[str, bytes]:
    if not blob.startswith(b"!<arch>\n"):
        raise RuntimeError("downloaded package is not a Debian archive")
    pos, members = 8, {}
    while pos + 60 <= len(blob):
        header = blob[pos : pos + 60]
        name = header[:16].decode().strip().rstrip("/")
        size = int(header[48:58].decode().strip())
        members[name] = blob[pos + 60 : pos + 60 + size]
        pos += 60 + size + (size & 1)
    return members


def fetch(dest: Path) -> Path:
    include = dest / "include" / "onnxruntime"
    if (include / MARKER).is_file():
        return include
    arch = {"x86_64": "amd64", "aarch64": "arm64"}.get(os.uname().machine, "amd64")
    found = None
    for suite in SUITES:
        found = _find_package(suite, arch)
        if found:
            break
    if not found:
        raise RuntimeError(f"no {PACKAGE} >= {'.'.join(map(str, MIN_VERSION))} in Debian {SUITES}")
    blob = _get(f"{MIRROR}/{found['Filename']}")
    digest = hashlib.sha256(blob).hexdigest()
    if digest != found["SHA256"]:
        raise RuntimeError(f"SHA-256 mismatch for {found['Filename']}: {digest} != {found['SHA256']}")
    members = _ar_members(blob)
    data_name = next((n for n in members if n.startswith("data.tar")), None)
    if data_name is None:
        raise RuntimeError("package has no data.tar member")
    tmp = dest / f".tmp-{os.getpid()}"
    (tmp / "include" / "onnxruntime").mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(members[data_name])) as tar:
        for member in tar.getmembers():
            parts = Path(member.name).parts
            if "onnxruntime" not in parts or "include" not in parts or not member.isfile():
                continue
            rel = Path(*parts[parts.index("onnxruntime") + 1 :])
            target = tmp / "include" / "onnxruntime" / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(tar.extractfile(member).read())
    (tmp / "VERSION").write_text(found["Version"] + "\n")
    if not (tmp / "include" / "onnxruntime" / MARKER).is_file():
        raise RuntimeError(f"{PACKAGE} {found['Version']} lacks {MARKER}")
    dest.mkdir(parents=True, exist_ok=True)
    for name in ("include", "VERSION"):
        final = dest / name
        if not final.exists():
            (tmp / name).rename(final)
    return include


def main() -> int:
    default = Path(os.environ.get("FP8ORT_CACHE", Path.home() / ".cache" / "fp8ort")) / "ort-headers"
    dest = Path(sys.argv[1]) if len(sys.argv) > 1 else default
    try:
        print(fetch(dest))
    except Exception as exc:  # report any failure as one line for CMake
        print(f"fetch_ort_headers: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
