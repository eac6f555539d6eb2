"""CPU benchmark: FP8Conv against ONNX Runtime's own FP32 Conv on the same layer, in one run.

Default layer: ResNet-50's 3x3 conv (N=1, 64->64 channels, 56x56, pad 1). Writes a JSON result with the
command, machine, versions and date.

    python bench/cpu_conv.py [--out bench/results/cpu_conv.json] [--repeat 50] [--threads 0]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

import fp8ort
from fp8ort import numerics as nx
from fp8ort import ops


def float_conv_model(w: np.ndarray, b: np.ndarray, shape) -> bytes:
    node = helper.make_node("Conv", ["X", "W", "B"], ["Y"], pads=[1, 1, 1, 1])
    graph = helper.make_graph(
        [node],
        "conv",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, list(shape))],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(w, "W"), numpy_helper.from_array(b, "B")],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)], ir_version=10).SerializeToString()


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=None, help="write the JSON result here")
    ap.add_argument("--repeat", type=int, default=50)
    ap.add_argument("--threads", type=int, default=0, help="intra-op threads (0: ORT default, all cores)")
    ap.add_argument("--n", type=int, default=1)
    ap.add_argument("--channels", type=int, default=64)
    ap.add_argument("--size", type=int, default=56)
    args = ap.parse_args()

    rng = np.random.default_rng(0)
    c, hw = args.channels, args.size
    shape = (args.n, c, hw, hw)
    x = rng.standard_normal(shape).astype(np.float32)
    w = (rng.standard_normal((c, c, 3, 3)) * 0.05).astype(np.float32)
    b = rng.standard_normal(c).astype(np.float32)
    w_scale = nx.compute_scale(np.abs(w).reshape(c, -1).max(axis=1))
    w8 = nx.quantize(w, w_scale[:, None, None, None])
    x_scale = nx.compute_scale(np.abs(x).max())

    so = ort.SessionOptions()
    so.intra_op_num_threads = args.threads
    float_sess = ort.InferenceSession(float_conv_model(w, b, shape), so, providers=["CPUExecutionProvider"])

    # Every contender runs once per round, rounds interleaved, so that load from elsewhere on the machine
    # falls on all of them alike; medians over the rounds.
    sessions = {"ort_fp32_conv": (float_sess, {"X": x}, False)}
    variants = {
        "fp8conv_f32_in_f32_out": (x, TensorProto.FLOAT, {}),
        "fp8conv_fp8_in_fp8_out": (nx.quantize(x, x_scale), TensorProto.FLOAT8E4M3FN, {"y_scale": np.float32(0.05)}),
    }
    keep = []
    for name, (xin, out_type, extra) in variants.items():
        inputs = {"X": xin, "W": w8, "x_scale": x_scale, "w_scale": w_scale, "B": b, **extra}
        model = ops.make_op_model("FP8Conv", inputs, output_dtype=out_type, pads=[1, 1, 1, 1])
        xv = np.ascontiguousarray(xin)
        keep.append(xv)
        sessions[name] = (ops.session(model, threads=args.threads), {"X": ops.to_ort_value(xv)}, True)
    times = {name: [] for name in sessions}
    for round_ in range(args.repeat + 5):
        for name, (sess, feeds, ort_values) in sessions.items():
            t0 = time.perf_counter()
            if ort_values:
                sess.run_with_ort_values(None, feeds)
            else:
                sess.run(None, feeds)
            if round_ >= 5:  # the first rounds warm up
                times[name].append((time.perf_counter() - t0) * 1e3)
    results = {name: {"median_ms": statistics.median(t), "min_ms": min(t), "runs": len(t)} for name, t in times.items()}
    for name in variants:
        results[name]["ratio_to_ort_fp32"] = results[name]["median_ms"] / results["ort_fp32_conv"]["median_ms"]
        results[name]["ratio_of_minimums"] = results[name]["min_ms"] / results["ort_fp32_conv"]["min_ms"]

    record = {
        "benchmark": "FP8Conv vs ORT FP32 Conv, CPU",
        "layer": f"N={args.n}, {c}->{c} channels, {hw}x{hw}, 3x3, pad 1, stride 1",
        "command": " ".join([Path(sys.executable).name] + sys.argv),
        "cpu": cpu_name(),
        "cores": os.cpu_count(),
        "threads": args.threads or os.cpu_count(),
        "onnxruntime": ort.__version__,
        "fp8ort": fp8ort.__version__,
        "date": datetime.date.today().isoformat(),
        "load_average_at_start": os.getloadavg()[0],
        "results": results,
        "gate": "FP8Conv (f32 in/out) within 3x of ORT FP32 Conv",
        "gate_met": results["fp8conv_f32_in_f32_out"]["ratio_to_ort_fp32"] <= 3.0,
    }
    text = json.dumps(record, indent=2)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
