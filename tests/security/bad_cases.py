"""The bad-input corpus of the com.fp8ort ops: each case builds a one-node model and the feeds, and says what must
happen: an error whose text holds every pattern, or a run giving an output of a given shape.

Run as a program (``python -m tests.security.bad_cases ROUTE SEED``) it runs every case on one route in this
process and prints one JSON line per case, preceded by a ``BEGIN`` line: a case that kills the process (a segfault,
an abort) is the last one begun. ``test_bad_models.py`` runs it in a subprocess so that a crash fails a test instead
of killing pytest.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import TensorProto

from fp8ort import numerics as nx
from fp8ort import ops

HUGE = 2**40  # an attribute that makes the output far larger than any memory
OVERFLOW = 2**62  # an attribute whose sums and products overflow int64
MAX_PAD = 2**31 - 1  # the largest pad FP8Conv takes: the output's element count overflows int64
BIG_PAD = 2**20  # an output of ~2^45 elements: counted fine, but no memory holds it


@dataclass
class Case:
    build: Callable[[np.random.Generator], tuple[onnx.ModelProto, dict[str, np.ndarray]]]
    patterns: list[str] = field(default_factory=list)  # the error text must hold each; empty: the run must succeed
    out_shape: tuple[int, ...] | None = None  # for a case that must succeed


def _fp8_weights(rng: np.random.Generator, shape: tuple[int, ...], axis: int = 0):
    w = rng.standard_normal(shape).astype(np.float32)
    reduce_axes = tuple(i for i in range(len(shape)) if i != axis)
    amax = np.abs(w).max(axis=reduce_axes) if w.size else np.ones(shape[axis], np.float32)
    scale = nx.compute_scale(np.maximum(amax, 1e-3), nx.E4M3FN).astype(np.float32)
    bshape = [1] * len(shape)
    bshape[axis] = -1
    return nx.quantize(w, scale.reshape(bshape), nx.E4M3FN), scale


def _conv(x_shape=(1, 4, 6, 6), w_shape=(8, 4, 3, 3), change=None, **attrs):
    def build(rng):
        x = rng.standard_normal(x_shape).astype(np.float32)
        w, ws = _fp8_weights(rng, w_shape)
        inputs = {"X": x, "W": w, "x_scale": np.float32(0.05), "w_scale": ws}
        if change:
            change(inputs)
        model = ops.make_op_model("FP8Conv", inputs, **attrs)
        return model, {"X": inputs["X"]}

    return build


def _matmul(a_shape=(3, 4), b_shape=(4, 6), change=None, **attrs):
    def build(rng):
        a = rng.standard_normal(a_shape).astype(np.float32)
        b, bs = _fp8_weights(rng, b_shape, axis=len(b_shape) - 1)
        inputs = {"A": a, "B": b, "a_scale": np.float32(0.1), "b_scale": bs}
        if change:
            change(inputs)
        model = ops.make_op_model("FP8MatMul", inputs, graph_inputs=["A"], **attrs)
        return model, {"A": inputs["A"]}

    return build


def _unary(op, x, scale, **attrs):
    def build(rng):
        xv = x(rng)
        model = ops.make_op_model(op, {"X": xv, "scale": scale}, **attrs)
        return model, {"X": xv}

    return build


def _pool(x_shape=(1, 6, 6, 4), x=None, **attrs):
    def build(rng):
        xv = rng.standard_normal(x_shape).astype(np.float32) if x is None else x(rng)
        attrs.setdefault("kernel_shape", [3, 3])
        model = ops.make_op_model("FP8MaxPool", {"X": xv}, **attrs)
        return model, {"X": xv}

    return build


def _attention(q=(2, 3, 8), k=(2, 5, 8), v=(2, 5, 8), bias=None, y_scale=None, **attrs):
    def build(rng):
        inputs = {n: rng.standard_normal(shape).astype(np.float32) for n, shape in (("Q", q), ("K", k), ("V", v))}
        if bias is not None:
            inputs["attn_bias"] = np.zeros(bias, np.float32)
        out = attrs.pop("output_dtype", 1)
        if y_scale is not None:
            inputs["y_scale"] = np.float32(y_scale)
        attrs.setdefault("num_heads", 2)
        model = ops.make_op_model("FP8Attention", inputs, graph_inputs=["Q", "K", "V"], output_dtype=out, **attrs)
        return model, {n: inputs[n] for n in ("Q", "K", "V")}

    return build


def _op(op, make, **attrs):
    """A one-node model of ``op`` over the inputs ``make(rng)`` returns (X fed at run time, the rest constants)."""

    def build(rng):
        inputs = make(rng)
        return ops.make_op_model(op, inputs, **attrs), {"X": inputs["X"]}

    return build


def _ln(x=(2, 8), scale=(8,), y_scale=0.1):
    return lambda r: {
        "X": r.standard_normal(x).astype(np.float32),
        "Scale": np.ones(scale, np.float32),
        "y_scale": np.float32(y_scale),
    }


def _channels(x=(2, 3, 3, 4), g=(2, 1, 1, 4), x_scale=0.1):
    return lambda r: {
        "X": (r.standard_normal(x) * 10).astype(np.float32).astype(nx.E4M3FN.dtype),
        "x_scale": np.float32(x_scale),
        "G": np.ones(g, np.float32),
        "y_scale": np.float32(0.1),
    }


def _pool_only(make):
    return lambda r: {k: v for k, v in make(r).items() if k in ("X", "x_scale")}


def _set(**values):
    return lambda inputs: inputs.update(values)


def _f32(shape):
    return lambda rng: rng.standard_normal(shape).astype(np.float32)


CASES: dict[str, Case] = {
    # scales
    "conv-x_scale-negative": Case(_conv(change=_set(x_scale=np.float32(-1))), ["FP8Conv", "x_scale", "> 0"]),
    "conv-x_scale-zero": Case(_conv(change=_set(x_scale=np.float32(0))), ["x_scale", "> 0"]),
    "conv-x_scale-nan": Case(_conv(change=_set(x_scale=np.float32(np.nan))), ["x_scale", "finite"]),
    "conv-x_scale-inf": Case(_conv(change=_set(x_scale=np.float32(np.inf))), ["x_scale", "finite"]),
    "conv-w_scale-inf": Case(_conv(change=_set(w_scale=np.full(8, np.inf, np.float32))), ["w_scale[0]", "finite"]),
    "conv-w_scale-negative": Case(
        _conv(change=_set(w_scale=np.array([1, 1, 1, -1, 1, 1, 1, 1], np.float32))), ["w_scale[3]", "> 0"]
    ),
    "conv-w_scale-2d": Case(_conv(change=_set(w_scale=np.ones((8, 1), np.float32))), ["w_scale", "shape"]),
    "conv-x_scale-empty": Case(_conv(change=_set(x_scale=np.ones(0, np.float32))), ["x_scale", "scalar"]),
    # dtypes
    "conv-W-float": Case(_conv(change=_set(W=np.ones((8, 4, 3, 3), np.float32))), ["input W", "float32", "FP8"]),
    "conv-W-int8": Case(_conv(change=_set(W=np.ones((8, 4, 3, 3), np.int8))), ["input W", "int8", "FP8"]),
    "conv-X-int32": Case(_conv(change=_set(X=np.ones((1, 4, 6, 6), np.int32))), ["input X", "int32"]),
    "conv-x_scale-float16": Case(_conv(change=_set(x_scale=np.float16(0.1))), ["x_scale", "float16", "float32"]),
    "conv-bias-float16": Case(_conv(change=_set(B=np.ones(8, np.float16))), ["input B", "float16", "float32"]),
    "conv-Z-int64": Case(_conv(change=_set(Z=np.ones((1, 8, 4, 4), np.int64))), ["input Z", "int64"]),
    "conv-y_scale-negative": Case(
        _conv(change=_set(y_scale=np.float32(-2)), output_dtype=TensorProto.FLOAT8E4M3FN), ["y_scale", "> 0"]
    ),
    # ranks
    "conv-X-3d": Case(_conv(x_shape=(4, 6, 6)), ["X must be 4-D"]),
    "conv-X-5d": Case(_conv(x_shape=(1, 4, 6, 6, 1)), ["X must be 4-D"]),
    "conv-W-3d": Case(_conv(w_shape=(8, 4, 3)), ["W must be 4-D"]),
    "conv-bias-2d": Case(_conv(change=_set(B=np.ones((8, 1), np.float32))), ["input B", "[8]"]),
    # hostile attributes
    "conv-pads-negative": Case(_conv(pads=[-1, 0, 0, 0]), ["pads", ">= 0"]),
    "conv-strides-negative": Case(_conv(strides=[-1, 1]), ["strides", ">= 1"]),
    "conv-strides-zero": Case(_conv(strides=[1, 0]), ["strides", ">= 1"]),
    "conv-dilations-zero": Case(_conv(dilations=[0, 1]), ["dilations", ">= 1"]),
    "conv-dilations-3": Case(_conv(dilations=[1, 1, 1]), ["dilations", "two"]),
    "conv-group-zero": Case(_conv(group=0), ["group", ">= 1"]),
    "conv-group-negative": Case(_conv(group=-2), ["group", ">= 1"]),
    "conv-group-not-dividing-M": Case(_conv(w_shape=(6, 1, 3, 3), group=4), ["not divisible by group=4"]),
    "conv-group-not-dividing-C": Case(_conv(w_shape=(8, 1, 3, 3), group=8), ["4 channels", "group=8"]),
    "conv-kernel-larger-than-padded-input": Case(_conv(x_shape=(1, 4, 2, 2), pads=[0, 0, 0, 0]), ["larger than"]),
    "conv-dilated-kernel-larger": Case(_conv(dilations=[3, 3]), ["larger than the padded input"]),
    "conv-kernel_shape-mismatch": Case(_conv(kernel_shape=[3, 2]), ["kernel_shape"]),
    "conv-layout-unknown": Case(_conv(layout="CHWN"), ["layout", "CHWN"]),
    "conv-activation-unknown": Case(_conv(activation="Mish"), ["activation", "Mish"]),
    "conv-clip-nan": Case(_conv(activation="Clip", activation_alpha=float("nan")), ["Clip", "NaN"]),
    "conv-output_dtype-int32": Case(_conv(output_dtype=TensorProto.INT32), ["output_dtype=6"]),
    # sizes
    "conv-pads-huge": Case(_conv(pads=[HUGE, HUGE, HUGE, HUGE]), ["pads must be <= 2147483647"]),
    "conv-pads-overflow": Case(_conv(pads=[OVERFLOW, 0, OVERFLOW, 0]), ["pads must be <= 2147483647"]),
    "conv-dilations-overflow": Case(_conv(dilations=[OVERFLOW, 1]), ["dilations must be <= 2147483647"]),
    "conv-output-count-overflow": Case(_conv(pads=[MAX_PAD] * 4), ["output shape", "more elements than int64"]),
    "conv-output-too-large-for-memory": Case(_conv(pads=[BIG_PAD] * 4), ["FP8Conv", "allocate"]),
    "conv-strides-huge": Case(_conv(strides=[OVERFLOW, OVERFLOW]), [], out_shape=(1, 8, 1, 1)),
    "conv-batch-zero": Case(_conv(x_shape=(0, 4, 6, 6)), [], out_shape=(0, 8, 4, 4)),
    "conv-channels-zero": Case(_conv(x_shape=(1, 0, 6, 6), w_shape=(8, 0, 3, 3)), ["W [8, 0, 3, 3]", "zero-size"]),
    "conv-kernel-zero": Case(_conv(w_shape=(8, 4, 0, 3)), ["W [8, 4, 0, 3]", "zero-size"]),
    "conv-input-plane-zero": Case(_conv(x_shape=(1, 4, 0, 6), pads=[2, 0, 1, 0]), [], out_shape=(1, 8, 1, 4)),
    "conv-out-channels-zero": Case(_conv(w_shape=(0, 4, 3, 3)), [], out_shape=(1, 0, 4, 4)),
    # FP8MatMul
    "matmul-K-mismatch": Case(_matmul(a_shape=(3, 5)), ["FP8MatMul", "K=5", "K=4"]),
    "matmul-B-3d": Case(_matmul(b_shape=(1, 4, 6)), ["B must be 2-D"]),
    "matmul-b_scale-length": Case(_matmul(change=_set(b_scale=np.ones(5, np.float32))), ["b_scale", "[6]"]),
    "matmul-a_scale-nan": Case(_matmul(change=_set(a_scale=np.float32(np.nan))), ["a_scale", "finite"]),
    "matmul-transB-2": Case(_matmul(transB=2), ["transB", "0 or 1"]),
    "matmul-C-length": Case(_matmul(change=_set(C=np.ones(4, np.float32))), ["input C", "[6]"]),
    "matmul-rows-zero": Case(_matmul(a_shape=(0, 4)), [], out_shape=(0, 6)),
    "matmul-K-zero": Case(_matmul(a_shape=(3, 0), b_shape=(0, 6)), ["K=0", "K >= 1"]),
    "matmul-N-zero": Case(_matmul(b_shape=(4, 0), change=_set(b_scale=np.ones(1, np.float32))), [], out_shape=(3, 0)),
    # FP8MaxPool
    "maxpool-pads-overflow": Case(_pool(pads=[OVERFLOW, 0, OVERFLOW, 0]), ["FP8MaxPool", "pads"]),
    "maxpool-strides-huge": Case(_pool(strides=[OVERFLOW, OVERFLOW]), ["FP8MaxPool", "strides"]),
    "maxpool-dilations-overflow": Case(_pool(dilations=[OVERFLOW, 1]), ["FP8MaxPool", "dilations"]),
    "maxpool-kernel-negative": Case(_pool(kernel_shape=[-3, 3]), ["FP8MaxPool", "kernel_shape"]),
    "maxpool-batch-zero": Case(_pool(x_shape=(0, 6, 6, 4)), [], out_shape=(0, 4, 4, 4)),
    "maxpool-channels-zero": Case(_pool(x_shape=(1, 6, 6, 0)), [], out_shape=(1, 4, 4, 0)),
    "maxpool-fp8-nan-input": Case(
        _pool(x=lambda r: np.full((1, 6, 6, 4), np.nan, np.float32).astype(nx.E4M3FN.dtype)), [], out_shape=(1, 4, 4, 4)
    ),
    # FP8Attention
    "attention-batch-zero": Case(_attention(q=(0, 3, 8), k=(0, 5, 8), v=(0, 5, 8)), [], out_shape=(0, 3, 8)),
    "attention-no-keys": Case(_attention(k=(2, 0, 8), v=(2, 0, 8)), [], out_shape=(2, 3, 8)),
    "attention-heads-huge": Case(_attention(num_heads=OVERFLOW), ["FP8Attention", "num_heads"]),
    "attention-bias-rank-5": Case(_attention(bias=(1, 1, 1, 1, 5)), ["FP8Attention", "attn_bias", "rank"]),
    "attention-y_scale-negative": Case(_attention(y_scale=-1.0, output_dtype=17), ["FP8Attention", "y_scale"]),
    # FP8LayerNormalization, FP8GlobalAveragePool, FP8ChannelMul
    "layernorm-rows-zero": Case(_op("FP8LayerNormalization", _ln(x=(0, 8))), [], out_shape=(0, 8)),
    "layernorm-scale-shape": Case(_op("FP8LayerNormalization", _ln(scale=(4,))), ["FP8LayerNormalization", "Scale"]),
    "layernorm-y_scale-nan": Case(_op("FP8LayerNormalization", _ln(y_scale=np.nan)), ["y_scale", "finite"]),
    "layernorm-axis-huge": Case(_op("FP8LayerNormalization", _ln(), axis=OVERFLOW), ["FP8LayerNormalization", "axis"]),
    "gap-hw-zero": Case(_op("FP8GlobalAveragePool", _pool_only(_channels(x=(2, 0, 3, 4)))), ["H * W = 0"]),
    "gap-batch-zero": Case(
        _op("FP8GlobalAveragePool", _pool_only(_channels(x=(0, 3, 3, 4)))), [], out_shape=(0, 1, 1, 4)
    ),
    "gap-x_scale-zero": Case(
        _op("FP8GlobalAveragePool", _pool_only(_channels(x_scale=0.0))), ["FP8GlobalAveragePool", "x_scale"]
    ),
    "channelmul-gate-shape": Case(_op("FP8ChannelMul", _channels(g=(1, 1, 1, 4))), ["FP8ChannelMul", "G"]),
    "channelmul-batch-zero": Case(
        _op("FP8ChannelMul", _channels(x=(0, 3, 3, 4), g=(0, 1, 1, 4))), [], out_shape=(0, 3, 3, 4)
    ),
    "channelmul-layout-bad": Case(_op("FP8ChannelMul", _channels(), layout="HWCN"), ["FP8ChannelMul", "layout"]),
    # FP8Quantize / FP8Dequantize
    "quantize-scale-inf": Case(_unary("FP8Quantize", _f32((5,)), np.float32(np.inf)), ["FP8Quantize", "scale"]),
    "quantize-scale-vector": Case(_unary("FP8Quantize", _f32((5,)), np.ones(2, np.float32)), ["scale", "scalar"]),
    "quantize-X-int32": Case(
        _unary("FP8Quantize", lambda r: np.ones(5, np.int32), np.float32(1)), ["input X", "int32"]
    ),
    "quantize-saturate-2": Case(_unary("FP8Quantize", _f32((5,)), np.float32(1), saturate=2), ["saturate"]),
    "quantize-empty": Case(_unary("FP8Quantize", _f32((0, 3)), np.float32(1)), [], out_shape=(0, 3)),
    "dequantize-X-float": Case(
        _unary("FP8Dequantize", _f32((5,)), np.float32(1)), ["FP8Dequantize", "input X", "float32", "FP8"]
    ),
    "dequantize-scale-negative": Case(
        _unary("FP8Dequantize", lambda r: np.ones(5, np.float32).astype(nx.E4M3FN.dtype), np.float32(-1)),
        ["scale", "> 0"],
    ),
    "dequantize-output_dtype-int8": Case(
        _unary(
            "FP8Dequantize",
            lambda r: np.ones(5, np.float32).astype(nx.E4M3FN.dtype),
            np.float32(1),
            output_dtype=TensorProto.INT8,
        ),
        ["output_dtype=3"],
    ),
}


def _run(route: str, model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    if route == "custom_op":
        return ops.run(ops.session(model), feeds)
    import warnings

    import fp8ort

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sess = fp8ort.InferenceSession(model, device="gpu" if route == "ep_gpu" else "cpu")
    arrays = {k: np.ascontiguousarray(v) for k, v in feeds.items()}
    outs = sess.run_with_ort_values(None, {k: ops.to_ort_value(a) for k, a in arrays.items()})
    return [np.empty(o.shape(), np.uint8) if o.data_type().startswith("tensor(float8") else o.numpy() for o in outs]


def run_case(route: str, name: str, seed: int) -> dict:
    """What one case did: {"error": text} or {"shape": [...], "finite": bool}."""
    model, feeds = CASES[name].build(np.random.default_rng([seed, len(name)]))
    try:
        out = _run(route, model, feeds)[0]
    except Exception as exc:  # the case's verdict is made from the text by the test
        return {"error": f"{type(exc).__name__}: {exc}"}
    finite = bool(np.isfinite(out).all()) if out.dtype.kind == "f" else True
    return {"shape": list(out.shape), "finite": finite}


def main(argv: list[str]) -> None:
    route, seed = argv[0], int(argv[1])
    names = argv[2:] or list(CASES)
    for name in names:
        print(json.dumps({"begin": name}), flush=True)
        print(json.dumps({"case": name, **run_case(route, name, seed)}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
