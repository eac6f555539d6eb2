"""Executed instructions per SASS opcode of one kernel, from Nsight Compute's source page as CSV
(`ncu --section SourceCounters --page source --print-source sass --csv ...`): where a kernel's issue slots go.

    python3 tools/sass_summary.py sass.csv [--top 25] [--executed sass.tsv]

Prints the opcodes by executed warp instructions (share of the kernel's total), the warp stall samples by reason,
then the hottest instructions with their addresses; --executed writes every executed instruction in address order
(address, executed count, stall samples, SASS) as a small tab-separated file to keep beside the run's logs.
The CSV's column names differ between Nsight Compute versions: the SASS text is the column named
"Source" and the count the first column whose name holds "Instructions Executed" (else "inst_executed"); a file
without them is echoed in part so that the run's log says what ncu printed instead.
"""

from __future__ import annotations

import argparse
import csv
import re
import sys
from collections import defaultdict

PREDICATE = re.compile(r"^@!?U?P[T0-9]+\s+")


def opcode(sass: str) -> str:
    """The mnemonic without its predicate and modifiers: '@!P3 FFMA.RM R1, ...' -> 'FFMA'."""
    text = PREDICATE.sub("", sass.strip())
    return text.split(" ", 1)[0].split(".", 1)[0] if text else ""


def number(text: str) -> float:
    try:
        return float(text.replace(",", "").strip() or 0)
    except ValueError:
        return 0.0


def find_table(lines: list[str]) -> tuple[list[str], list[list[str]]] | None:
    """The CSV header holding a SASS column and an executed-instructions column, and the rows after it."""
    rows = list(csv.reader(lines))
    for i, row in enumerate(rows):
        if "Source" in row and any("Instructions Executed" in c or "inst_executed" in c for c in row):
            return row, rows[i + 1 :]
    return None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv")
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--executed", help="write the executed instructions here (tab-separated)")
    args = ap.parse_args()
    lines = open(args.csv, errors="replace").read().splitlines()
    table = find_table(lines)
    if table is None:
        print(f"{args.csv}: no SASS table with executed instructions; its first lines:")
        print("\n".join(lines[:15]))
        return 1
    header, rows = table
    src = header.index("Source")
    count = next(i for i, c in enumerate(header) if "Instructions Executed" in c or "inst_executed" in c)
    addr = next((i for i, c in enumerate(header) if c.strip().lower() == "address"), None)
    samples = next((i for i, c in enumerate(header) if c.startswith("Warp Stall Sampling (All")), None)
    reasons = [i for i, c in enumerate(header) if c.startswith("stall_") and "Not Issued" not in c]
    per_op: dict[str, float] = defaultdict(float)
    per_reason: dict[str, float] = defaultdict(float)
    hot: list[tuple[float, str, str]] = []
    executed: list[str] = []
    for row in rows:
        if len(row) <= max(src, count):
            continue
        for i in reasons:
            if i < len(row):
                per_reason[header[i]] += number(row[i])
        n = number(row[count])
        if n <= 0:
            continue
        per_op[opcode(row[src])] += n
        a = row[addr] if addr is not None else ""
        hot.append((n, a, row[src].strip()))
        taken = number(row[samples]) if samples is not None and samples < len(row) else 0.0
        executed.append(f"{a}\t{n:.0f}\t{taken:.0f}\t{row[src].strip()}")
    if args.executed:
        with open(args.executed, "w") as f:
            f.write("address\texecuted\tstall_samples\tsass\n" + "\n".join(executed) + "\n")
    total = sum(per_op.values())
    if not total:
        print(f"{args.csv}: the table has no executed instructions")
        return 1
    print(f"{args.csv}: {total:,.0f} warp instructions executed, {len(hot)} instructions with a count")
    for op, n in sorted(per_op.items(), key=lambda kv: -kv[1])[: args.top]:
        print(f"  {op:<12} {n:>16,.0f}  {100 * n / total:5.1f}%")
    all_samples = sum(per_reason.values())
    if all_samples:
        print(f"warp stall samples: {all_samples:,.0f}")
        for reason, n in sorted(per_reason.items(), key=lambda kv: -kv[1])[:8]:
            print(f"  {reason:<24} {n:>10,.0f}  {100 * n / all_samples:5.1f}%")
    print("hottest instructions:")
    for n, a, text in sorted(hot, reverse=True)[: args.top]:
        print(f"  {a:>8} {n:>14,.0f}  {text}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
