"""Classifies compute-sanitizer racecheck hazards by the kernels they are in: fp8ort's own or a vendor library's.

racecheck prints each hazard with the two threads' locations (``at <kernel>+0x<offset>``). This script counts the
hazards per kernel pair and per owner, so that a run over all kernel tests (thousands of lines) reads as one table:

    compute-sanitizer --tool racecheck --racecheck-report hazard --print-limit 0 --show-backtrace no \\
        python3 -m pytest -q tests/gpu > racecheck_all.log
    python3 tools/racecheck_summary.py racecheck_all.log

A kernel is the vendor's when its name is one of cuBLASLt's / hipBLASLt's (``nvjet_``, ``sm90_xmma``, ``cutlass``,
``Cijk_``...) or the backtrace names the vendor library at its launch; every other kernel is counted as fp8ort's.
Exits 1 when any hazard is in fp8ort's kernels, 0 otherwise (also when there are none).
"""

from __future__ import annotations

import argparse
import collections
import re
import sys
from pathlib import Path

HAZARD = re.compile(r"Error: Potential (\w+) hazard detected at (__shared__|__global__)?")
LOCATION = re.compile(r"(Read|Write) Thread \([^)]*\) at (.+?)\+0x[0-9a-fA-F]+\s*$")
VENDOR_KERNELS = ("nvjet_", "sm90_xmma", "sm80_xmma", "cutlass", "cublas", "Cijk_", "hipblaslt")
VENDOR_LIBRARIES = ("libcublasLt", "libcublas.", "libhipblaslt")


def parse(text: str) -> list[dict]:
    """One dict per hazard: kind, memory space, the kernels of the two accesses, and whether a vendor library
    appears in its backtrace."""
    hazards: list[dict] = []
    current: dict | None = None
    for line in text.splitlines():
        m = HAZARD.search(line)
        if m:
            current = {"kind": m.group(1), "space": m.group(2) or "?", "kernels": [], "vendor_frame": False}
            hazards.append(current)
            continue
        if current is None:
            continue
        loc = LOCATION.search(line)
        if loc:
            current["kernels"].append(loc.group(2))
        elif any(lib in line for lib in VENDOR_LIBRARIES):
            current["vendor_frame"] = True
    return hazards


def owner(hazard: dict) -> str:
    names = hazard["kernels"]
    if hazard["vendor_frame"] or (names and all(n.startswith(VENDOR_KERNELS) for n in names)):
        return "vendor"
    return "fp8ort"


def summarize(hazards: list[dict]) -> tuple[dict[str, int], dict[tuple[str, str, str], int]]:
    by_owner: dict[str, int] = collections.Counter()
    by_kernel: dict[tuple[str, str, str], int] = collections.Counter()
    for h in hazards:
        who = owner(h)
        by_owner[who] += 1
        kernels = " / ".join(sorted(set(h["kernels"]))) or "?"
        by_kernel[(who, h["kind"], kernels)] += 1
    return dict(by_owner), dict(by_kernel)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("log", type=Path)
    args = ap.parse_args()
    text = args.log.read_text(errors="replace")
    hazards = parse(text)
    by_owner, by_kernel = summarize(hazards)
    tail = [line for line in text.splitlines() if "RACECHECK SUMMARY" in line]
    print(f"{len(hazards)} hazards printed ({tail[-1].strip('= ') if tail else 'no summary line'})")
    for who in ("fp8ort", "vendor"):
        print(f"  {who}: {by_owner.get(who, 0)}")
    for (who, kind, kernels), n in sorted(by_kernel.items(), key=lambda kv: -kv[1]):
        print(f"  {n:6d}  {who:7s} {kind:4s} {kernels}")
    return 1 if by_owner.get("fp8ort", 0) else 0


if __name__ == "__main__":
    sys.exit(main())
