"""``fp8ort demo``: build (or take) a model, calibrate, quantize, run FP32 and FP8, print them side by side."""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from typing import Any

import numpy as np
import onnx

from . import numerics as nx
from . import zoo
from .quantization.calibration import InputSpec, random_feeds


def _inputs(model_path: str, n: int, seed: int) -> dict[str, np.ndarray]:
    m = onnx.load(model_path, load_external_data=False)
    inits = {i.name for i in m.graph.initializer}
    specs = []
    for v in m.graph.input:
        if v.name in inits:
            continue
        dims = tuple(d.dim_value if d.HasField("dim_value") else None for d in v.type.tensor_type.shape.dim)
        specs.append(InputSpec(v.name, onnx.helper.tensor_dtype_to_np_dtype(v.type.tensor_type.elem_type), dims))
    if len(specs) == 1 and specs[0].shape is not None and len(specs[0].shape) == 4 and specs[0].shape[1] == 3:
        size = specs[0].shape[2] or 224
        return {specs[0].name: zoo.synthetic_images(n, seed, size)}
    feeds = random_feeds([InputSpec(s.name, s.dtype, (n,) + tuple(s.shape[1:])) for s in specs], 1, seed)
    return feeds[0]


def _time(sess: Any, feed: dict, runs: int) -> tuple[list[np.ndarray], float]:
    out = sess.run(None, feed)
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        sess.run(None, feed)
        times.append(time.perf_counter() - t)
    return out, float(np.median(times)) if times else float("nan")


def _size(path: str) -> int:
    total = os.path.getsize(path)
    data = path + ".data"
    return total + (os.path.getsize(data) if os.path.exists(data) else 0)


def run_demo(args: argparse.Namespace) -> int:
    import onnxruntime as ort

    from . import get_library_path
    from .quantization import QuantizeConfig, quantize

    tmp = None
    workdir = args.workdir
    if workdir is None:
        tmp = tempfile.TemporaryDirectory()
        workdir = tmp.name
    os.makedirs(workdir, exist_ok=True)
    if args.model:
        float_path = args.model
    elif getattr(args, "quick", False):
        float_path = os.path.join(workdir, "resnet_small.onnx")
        print("building a small ResNet (1 block per stage, width 16, 64x64 inputs, random weights) ...")
        onnx.save(zoo.resnet(blocks=(1, 1, 1, 1), width=16, size=64, num_classes=100), float_path)
    else:
        float_path = os.path.join(workdir, "resnet50.onnx")
        print("building ResNet-50 (random weights, onnx helpers) ...")
        onnx.save(zoo.resnet50(), float_path)
    calib = _inputs(float_path, args.calibration_images, seed=0)
    evals = _inputs(float_path, args.eval_images, seed=1234)
    fp8_path = os.path.join(workdir, os.path.basename(float_path).replace(".onnx", "") + ".fp8.onnx")
    print(f"quantizing {float_path} with {args.calibration_images} calibration samples ({args.calibration_method}) ...")
    t = time.perf_counter()
    _, report = quantize(
        float_path,
        fp8_path,
        calibration_data=calib,
        return_report=True,
        config=QuantizeConfig(calibration_method=args.calibration_method),
    )
    q_time = time.perf_counter() - t
    print(report.summary())

    fp32 = ort.InferenceSession(float_path, providers=["CPUExecutionProvider"])
    ref, t32 = _time(fp32, evals, args.runs)
    rows = [("FP32 (ORT CPU)", _size(float_path), ref, t32)]
    try:
        get_library_path()
        have_lib = True
    except FileNotFoundError as exc:
        have_lib = False
        print(f"note: {exc}\n      running the FP8 model's standard QDQ twin instead (same numerics)")
    if have_lib:
        # the plugin EP: its GPU device where it offers one, and its CPU device (exact reference kernels)
        from .session import InferenceSession, select_device

        devices = ["cpu"]
        try:
            select_device("gpu")
            devices.insert(0, "gpu")
        except (RuntimeError, ValueError):
            pass
        for device in devices:
            try:
                sess = InferenceSession(fp8_path, device=device)
                out, t8 = _time(sess, evals, args.runs)
                rows.append((f"FP8 fp8ort EP ({sess.device})", _size(fp8_path), out, t8))
            except Exception as exc:  # one device failing must not hide the other
                print(f"note: the plugin EP on {device} failed: {exc}")
    else:
        qdq_path = fp8_path.replace(".fp8.onnx", ".qdq.onnx")
        quantize(float_path, qdq_path, calibration_data=calib, config=QuantizeConfig(format="qdq"))
        so = ort.SessionOptions()
        # run the FP8 QDQ as written: ORT's QDQ fusions (QLinearConv, MatMulIntegerToFloat) reject FP8 inputs
        so.add_session_config_entry("session.disable_quant_qdq", "1")
        sess = ort.InferenceSession(qdq_path, so, providers=["CPUExecutionProvider"])
        out, t8 = _time(sess, evals, args.runs)
        rows.append(("FP8 QDQ twin (ORT CPU)", _size(qdq_path), out, t8))

    n = args.eval_images
    print(
        f"\n{n} held-out inputs, batch {n}; quantization took {q_time:.1f} s; "
        f"{100 * report.fp8_mac_share:.1f}% of MACs in FP8\n"
    )
    print(f"{'model':<26}{'file MB':>9}{'size':>8}{'SQNR dB':>9}{'top-1 agree':>13}{'ms/batch':>10}")
    for name, size, out, secs in rows:
        sq = nx.sqnr_db(ref[0], out[0])
        agree = float(np.mean(ref[0].reshape(n, -1).argmax(1) == out[0].reshape(n, -1).argmax(1)))
        print(f"{name:<26}{size / 2**20:>9.1f}{size / rows[0][1]:>8.1%}{sq:>9.1f}{agree:>13.1%}{1e3 * secs:>10.1f}")
    if tmp is None:
        print(f"\nmodels in {workdir}")
    else:
        tmp.cleanup()
    return 0
