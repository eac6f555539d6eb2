"""Judges the sanitizer logs of a tools/sanitize.sh run (one file per process, ASAN_OPTIONS log_path).

Fails (exit 1) on any AddressSanitizer error (or failed sanitizer CHECK); on any leak whose allocation stack holds
a frame in libfp8ort.so or one of its sources (ep_src/); and on any leak of >= LOOP_OBJECTS objects from one
stack. Other leaks (onnxruntime's wheel has no symbols, so its exit-time leaks cannot be suppressed by name in
tools/lsan.supp) are counted and summarised by their first frame outside the allocator, so that a new one shows
in the CI log.

Usage: python tools/lsan_filter.py LOG_DIR
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from pathlib import Path

OURS = re.compile(r"libfp8ort\.so|ep_src/|hip_kernels/")
LEAK_HEAD = re.compile(r"^(Direct|Indirect) leak of (\d+) byte\(s\) in (\d+) object\(s\) allocated from:")
# Anything else a sanitizer writes is a finding: an error report, a UB diagnostic, a failed internal CHECK.
ERROR = re.compile(r"ERROR: (?!LeakSanitizer: detected memory leaks)|runtime error:|CHECK failed|DEADLYSIGNAL")
FRAME = re.compile(r"^\s+#(\d+) 0x[0-9a-f]+ (?:in (.+?) )?\(?(\S+?)(?:\+0x[0-9a-f]+)?\)?$")
# A leak outside our frames that repeats this often comes from a loop (the create/destroy and register/unregister
# cycles of tests/security/test_concurrency.py run 200 times): a per-session leak that ORT makes on our behalf,
# whose stack the frame-pointer unwinder cut before reaching our code. onnxruntime's exit-time leaks are a few
# objects per stack.
LOOP_OBJECTS = 100
ALLOCATOR = re.compile(r"__interceptor_|operator new|asan_|malloc|calloc|realloc")


def leaks(text: str) -> list[tuple[str, int, int, list[str]]]:
    """Every leak record of one log: (kind, bytes, objects, frame lines)."""
    out: list[tuple[str, int, int, list[str]]] = []
    current: list[str] | None = None
    for line in text.splitlines():
        head = LEAK_HEAD.match(line)
        if head:
            current = []
            out.append((head.group(1), int(head.group(2)), int(head.group(3)), current))
        elif current is not None and line.strip().startswith("#"):
            current.append(line.strip())
        elif current is not None and not line.strip():
            current = None
    return out


def first_frame(frames: list[str]) -> str:
    """The first frame that is not the allocator: where the leaked block came from."""
    for f in frames:
        body = f.split(" in ", 1)[-1] if " in " in f else f.split(" ", 2)[-1]
        if not ALLOCATOR.search(body):
            return re.sub(r"\+0x[0-9a-f]+", "", body)[:120]
    return frames[0] if frames else "?"


def main(log_dir: str) -> int:
    logs = sorted(Path(log_dir).glob("*"))
    failures: list[str] = []
    external: Counter[str] = Counter()
    external_bytes = 0
    for log in logs:
        text = log.read_text(errors="replace")
        for match in ERROR.finditer(text):
            start = max(0, match.start() - 200)
            failures.append(f"{log.name}: sanitizer error:\n{text[start : start + 4000]}")
            break
        for kind, size, objects, frames in leaks(text):
            if any(OURS.search(f) for f in frames):
                failures.append(f"{log.name}: {kind} leak of {size} bytes in fp8ort code:\n  " + "\n  ".join(frames))
            elif objects >= LOOP_OBJECTS:
                failures.append(
                    f"{log.name}: {kind} leak of {size} bytes in {objects} objects from one stack (a leak per loop "
                    f"iteration, >= {LOOP_OBJECTS}):\n  " + "\n  ".join(frames)
                )
            else:
                external[first_frame(frames)] += 1
                external_bytes += size
    print(f"lsan_filter: {len(logs)} sanitizer log(s) in {log_dir}")
    if external:
        records = sum(external.values())
        print(f"lsan_filter: {records} leak record(s), {external_bytes} bytes, outside fp8ort (not ours):")
        for where, n in external.most_common(15):
            print(f"  {n:5d}  {where}")
    for f in failures:
        print(f"lsan_filter: FAIL {f}")
    print(f"lsan_filter: {'FAIL' if failures else 'ok'}: {len(failures)} finding(s) in fp8ort code")
    return 1 if failures else 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1]))
