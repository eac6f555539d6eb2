"""Per-op host time of one model on fp8ort's plugin EP (GPU device), from ORT's own profiler.

ORT's profiler times each node's Compute call on the host: on a GPU EP that is the launch cost (and any host
synchronisation inside a kernel), not the kernel's GPU time, which is what this script is for. Prints the mean host
microseconds per run for each op type, slowest first.

    python3 tools/host_profile.py --model bert --batch 1 [--runs 50]
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnxruntime as ort

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from harness import make_inputs  # noqa: E402
from pytorch_side import export_and_quantize  # noqa: E402

import fp8ort  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="bert")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--device", default="gpu", choices=["gpu", "cpu"])
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp())
    _, fp8 = export_and_quantize(args.model, work)
    fp8ort.register()
    so = ort.SessionOptions()
    so.enable_profiling = True
    so.profile_file_prefix = str(work / "prof")
    so.add_provider_for_devices([fp8ort.select_device(args.device)], {})
    sess = ort.InferenceSession(str(fp8), so)
    feed = make_inputs(args.model, args.batch, seed=2)
    for _ in range(10):
        sess.run(None, feed)
    for _ in range(args.runs):
        sess.run(None, feed)
    events = json.loads(Path(sess.end_profiling()).read_text())
    per_op: dict[str, float] = collections.defaultdict(float)
    count: dict[str, int] = collections.defaultdict(int)
    runs = [e for e in events if e.get("name") == "model_run"]
    for e in events:
        if e.get("cat") == "Node" and e["name"].endswith("_kernel_time"):
            op = e.get("args", {}).get("op_name", "?")
            per_op[op] += e["dur"]
            count[op] += 1
    n_runs = max(1, len(runs))
    run_us = np.median([e["dur"] for e in runs[10:]] or [0])
    print(f"{args.model} batch {args.batch}: median model_run {run_us:.0f} us over {len(runs)} runs")
    for op, us in sorted(per_op.items(), key=lambda kv: -kv[1]):
        print(f"  {op:24s} {us / n_runs:9.1f} us/run  {count[op] // n_runs:4d} nodes  {us / count[op]:7.1f} us/node")
    return 0


if __name__ == "__main__":
    sys.exit(main())
