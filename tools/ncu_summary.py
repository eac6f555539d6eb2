"""Totals per kernel from `ncu --print-summary per-kernel --metrics gpu__time_duration.sum` output: one line per
kernel name (template arguments kept, parameter list dropped), sorted by total time.

    python3 tools/ncu_summary.py profile.txt
"""

from __future__ import annotations

import re
import sys
from collections import defaultdict

UNITS = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3, "s": 1e6, "second": 1e6}
HEADER = re.compile(r"^\s+(?P<name>.+?) \(\d+, \d+, \d+\)x\(\d+, \d+, \d+\).*Invocations (?P<n>\d+)")
METRIC = re.compile(r"^\s+gpu__time_duration\.sum\s+(?P<unit>\S+)\s+\S+\s+\S+\s+(?P<avg>[\d.,]+)")


def short(name: str) -> str:
    depth, cut = 0, len(name)
    for i in range(len(name) - 1, -1, -1):  # drop the trailing parameter list
        if name[i] == ")":
            depth += 1
        elif name[i] == "(":
            depth -= 1
            if depth == 0:
                cut = i
                break
    return re.sub(r"^void ", "", name[:cut]).replace("(anonymous namespace)::", "")


def main() -> int:
    totals: dict[str, float] = defaultdict(float)
    counts: dict[str, int] = defaultdict(int)
    current, n = None, 0
    for line in open(sys.argv[1], errors="replace"):
        m = HEADER.match(line)
        if m:
            current, n = short(m["name"]), int(m["n"])
            continue
        m = METRIC.match(line)
        if m and current:
            totals[current] += float(m["avg"].replace(",", "")) * UNITS.get(m["unit"], 1.0) * n
            counts[current] += n
            current = None
    grand = sum(totals.values())
    print(f"{sys.argv[1]}: {sum(counts.values())} kernels, {grand / 1e3:.3f} ms in all")
    for name, t in sorted(totals.items(), key=lambda kv: -kv[1]):
        print(f"{t / 1e3:9.3f} ms {100 * t / max(grand, 1e-9):5.1f}% x{counts[name]:<4d} {name[:150]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
