"""ResNet-50 on a GPU through onnxruntime-gpu's CUDA EP: fp8ort's FP8 model against ORT FP16, same run.

Contenders, each at every batch size (IOBinding, inputs and outputs on the GPU, median of timed runs):
* ORT CUDA EP FP16, prefer_nhwc + CUDA graph (its best configuration), and plain FP16;
* fp8ort: the model quantized by ``fp8ort.quantize`` (NHWC layout) with the custom-op library's GPU kernels
  on the CUDA EP, with and without CUDA graph.
Also reports the FP8 model's logit SQNR against FP32 on the GPU. Calibration uses random images (this is a
speed benchmark; accuracy on real photos is bench/accuracy.py's job).

    python bench/resnet50_gpu.py --out bench/results/resnet50_gpu.json [--batches 1 32 256]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, numpy_helper

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import fp8ort  # noqa: E402
from fp8ort import zoo  # noqa: E402


def to_float16(model: onnx.ModelProto) -> onnx.ModelProto:
    """FP16 copy of a float model whose ops all take float16 (ResNet-50): initializers and I/O types cast."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    for i, init in enumerate(m.graph.initializer):
        if init.data_type == TensorProto.FLOAT:
            m.graph.initializer[i].CopyFrom(
                numpy_helper.from_array(numpy_helper.to_array(init).astype(np.float16), init.name)
            )
    for vi in list(m.graph.input) + list(m.graph.output) + list(m.graph.value_info):
        if vi.type.tensor_type.elem_type == TensorProto.FLOAT:
            vi.type.tensor_type.elem_type = TensorProto.FLOAT16
    return m


def session(path: str, *, fp8: bool, nhwc: bool = False, graph: bool = False) -> ort.InferenceSession:
    so = ort.SessionOptions()
    if fp8:
        so.register_custom_ops_library(fp8ort.get_library_path())
        so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    cuda = {"prefer_nhwc": "1" if nhwc else "0", "enable_cuda_graph": "1" if graph else "0"}
    return ort.InferenceSession(path, so, providers=[("CUDAExecutionProvider", cuda)])


def time_batch(sess: ort.InferenceSession, x: np.ndarray, runs: int) -> tuple[float, np.ndarray]:
    """Median seconds per run with input and output bound on the GPU; also returns the output."""
    inp, out = sess.get_inputs()[0], sess.get_outputs()[0]
    x_gpu = ort.OrtValue.ortvalue_from_numpy(x, "cuda", 0)
    binding = sess.io_binding()
    binding.bind_ortvalue_input(inp.name, x_gpu)
    binding.bind_output(out.name, "cuda", 0)
    for _ in range(5):  # warm-up; the CUDA graph is captured here
        sess.run_with_iobinding(binding)
    binding.synchronize_outputs()
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        sess.run_with_iobinding(binding)
        binding.synchronize_outputs()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), binding.copy_outputs_to_cpu()[0]


def gpu_name() -> str:
    try:
        return subprocess.run(
            ["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=None)
    ap.add_argument("--batches", type=int, nargs="+", default=[1, 32, 256])
    ap.add_argument("--runs", type=int, default=30)
    args = ap.parse_args()
    if "CUDAExecutionProvider" not in ort.get_available_providers():
        print("onnxruntime has no CUDAExecutionProvider: install onnxruntime-gpu", file=sys.stderr)
        return 2

    work = Path(tempfile.mkdtemp(prefix="fp8ort_r50_"))
    fp32 = zoo.resnet50(batch="N")
    onnx.save(fp32, work / "fp32.onnx")
    onnx.save(to_float16(fp32), work / "fp16.onnx")
    calib = {fp32.graph.input[0].name: zoo.synthetic_images(32, seed=1)}
    t0 = time.perf_counter()
    fp8ort.quantize(fp32, str(work / "fp8.onnx"), calibration_data=calib, config=fp8ort.QuantizeConfig(layout="NHWC"))
    quantize_s = time.perf_counter() - t0

    contenders = {
        "ort_fp16_nhwc_cudagraph": dict(path=work / "fp16.onnx", fp8=False, nhwc=True, graph=True, dtype=np.float16),
        "ort_fp16": dict(path=work / "fp16.onnx", fp8=False, nhwc=False, graph=False, dtype=np.float16),
        "ort_fp32": dict(path=work / "fp32.onnx", fp8=False, nhwc=False, graph=False, dtype=np.float32),
        "fp8ort_fp8_cudagraph": dict(path=work / "fp8.onnx", fp8=True, graph=True, dtype=np.float32),
        "fp8ort_fp8": dict(path=work / "fp8.onnx", fp8=True, graph=False, dtype=np.float32),
    }
    results: dict = {name: {} for name in contenders}
    for batch in args.batches:
        x = zoo.synthetic_images(batch, seed=2)
        ref = None
        for name, c in contenders.items():
            try:
                sess = session(str(c["path"]), fp8=c["fp8"], nhwc=c.get("nhwc", False), graph=c["graph"])
                sec, y = time_batch(sess, x.astype(c["dtype"]), args.runs)
            except Exception as exc:  # one contender failing must not hide the others
                results[name][str(batch)] = {"error": str(exc).splitlines()[0][:300]}
                print(f"batch {batch:4d} {name:28s} failed: {exc}", flush=True)
                continue
            entry = {"ms": sec * 1e3, "images_per_s": batch / sec}
            if name == "ort_fp32":
                ref = y.astype(np.float64)
            results[name][str(batch)] = entry
            print(f"batch {batch:4d} {name:28s} {sec * 1e3:9.3f} ms  {batch / sec:10.0f} img/s", flush=True)
            del sess
        # accuracy of the FP8 model against FP32 on this batch (same GPU run)
        if ref is not None and "ms" in results["fp8ort_fp8"].get(str(batch), {}):
            sess = session(str(work / "fp8.onnx"), fp8=True)
            _, y8 = time_batch(sess, x.astype(np.float32), 1)
            results["fp8ort_fp8"][str(batch)]["logit_sqnr_db_vs_fp32"] = fp8ort.sqnr_db(ref, y8)
    record = {
        "benchmark": "ResNet-50 (random weights) through onnxruntime-gpu's CUDA EP",
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "gpu": gpu_name(),
        "onnxruntime": ort.__version__,
        "fp8ort": fp8ort.__version__,
        "date": datetime.date.today().isoformat(),
        "quantize_s": quantize_s,
        "calibration": "32 random images (speed benchmark)",
        "timing": f"median of {args.runs} runs after 5 warm-ups, IOBinding on the GPU",
        "results": results,
        "environment": {k: v for k, v in os.environ.items() if k.startswith("FP8ORT")},
    }
    text = json.dumps(record, indent=2)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
