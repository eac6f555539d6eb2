"""Where the host time of a run without graph capture goes, on fp8ort's plugin EP (GPU device).

At batch 1 a GPU EP is bound by the host: each node's Compute call (argument checks, ORT C API calls, kernel
launches) and ORT's executor around it. This script runs one exported, quantized model without graph capture, with
device-bound inputs and outputs (as bench/plugin_ep_gpu.py), in several rounds, and prints the median run time per
round. Run it with FP8ORT_HOST_TIMING=1 to get, at exit, the host time spent inside fp8ort's Compute per op type:
the rest of the run time is ORT's executor, memory copies and waiting for the GPU.

    FP8ORT_HOST_TIMING=1 python3 bench/host_overhead.py --model bert --batch 1 [--rounds 5 --runs 200]
        [--list-copies]

``--list-copies`` prints the copies between host and device memory that ORT inserted into the graph it runs
(each MemcpyToHost inside a run makes the host wait for the GPU), with the nodes that produce and read them.
"""

from __future__ import annotations

import argparse
import collections
import gc
import statistics
import sys
import tempfile
import time
from pathlib import Path

import onnxruntime as ort

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import make_inputs  # noqa: E402
from plugin_ep_gpu import VENDOR_IDS, bind_device_io  # noqa: E402
from pytorch_side import export_and_quantize  # noqa: E402

import fp8ort  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="bert")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--list-copies", action="store_true", help="print the Memcpy nodes ORT inserted, with neighbours")
    ap.add_argument("--device", default="gpu", choices=["gpu", "cpu"], help="the EP's device (cpu: a dry run here)")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="fp8ort_host_"))
    _, fp8 = export_and_quantize(args.model, work)
    fp8ort.register()
    so = ort.SessionOptions()
    if args.list_copies:
        so.optimized_model_filepath = str(work / "optimized.onnx")
    so.add_provider_for_devices([fp8ort.select_device(args.device)], {})
    sess = ort.InferenceSession(str(fp8), so)
    feed = make_inputs(args.model, args.batch, seed=2)
    out_shape = list(sess.run([sess.get_outputs()[0].name], feed)[0].shape)
    binding = None
    if args.device == "gpu":
        binding, _y, _keep = bind_device_io(sess, feed, out_shape, VENDOR_IDS.get(fp8ort.backend(), 0x10DE))

        def step() -> None:
            sess.run_with_iobinding(binding)
            binding.synchronize_outputs()
    else:

        def step() -> None:
            sess.run(None, feed)

    for _ in range(20):
        step()
    medians = []
    for r in range(args.rounds):
        times = []
        for _ in range(args.runs):
            t0 = time.perf_counter()
            step()
            times.append(time.perf_counter() - t0)
        medians.append(statistics.median(times))
        print(f"round {r}: median {medians[-1] * 1e6:.0f} us per run ({args.batch / medians[-1]:.0f} per s)")
    placement = fp8ort.InferenceSession(str(fp8), device=args.device).placement
    ops = collections.Counter(placement.values())
    print(f"{args.model} batch {args.batch}: median of rounds {statistics.median(medians) * 1e6:.0f} us; nodes {ops}")
    sess = binding = step = None  # release the session: the kernels add their host times to the table at release
    gc.collect()
    if args.list_copies:
        list_copies(work / "optimized.onnx")
    return 0


def list_copies(path: Path) -> None:
    import onnx

    graph = onnx.load(str(path), load_external_data=False).graph
    producer = {o: n for n in graph.node for o in n.output}
    readers: dict[str, list] = collections.defaultdict(list)
    for n in graph.node:
        for i in n.input:
            readers[i].append(n)
    for n in graph.node:
        if n.op_type.startswith("Memcpy"):
            src = producer.get(n.input[0])
            dst = [f"{r.op_type}({r.name})" for r in readers[n.output[0]]]
            origin = f"{src.op_type}({src.name})" if src else "graph input"
            print(f"{n.op_type}: {n.input[0]} from {origin} to {dst}")


if __name__ == "__main__":
    sys.exit(main())
