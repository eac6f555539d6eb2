"""Bad input gives an ORT error naming the op, the input and the problem; never a crash."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto

from fp8ort import numerics as nx
from fp8ort import ops

from ._util import fp8_weights


def _conv_inputs(rng):
    x = rng.standard_normal((1, 4, 6, 6)).astype(np.float32)
    w, ws = fp8_weights(rng, (8, 4, 3, 3))
    return {"X": x, "W": w, "x_scale": np.float32(0.05), "w_scale": ws}


def _fails(model, feeds, library, *patterns):
    """Building a session and running it raises an error whose text holds every pattern."""
    with pytest.raises(
        (
            ort.capi.onnxruntime_pybind11_state.Fail,
            ort.capi.onnxruntime_pybind11_state.InvalidArgument,
            ort.capi.onnxruntime_pybind11_state.RuntimeException,
        )
    ) as info:
        ops.run(ops.session(model, library), feeds)
    text = str(info.value)
    for p in patterns:
        assert p in text, f"{p!r} not in error: {text}"


@pytest.mark.parametrize(
    "change, patterns",
    [
        (lambda i: i.update(x_scale=np.float32(-1.0)), ["FP8Conv 'bad'", "x_scale", "> 0"]),
        (lambda i: i.update(x_scale=np.float32(np.nan)), ["FP8Conv 'bad'", "x_scale", "finite"]),
        (lambda i: i.update(x_scale=np.array([0.1, 0.2], np.float32)), ["x_scale", "scalar"]),
        (lambda i: i.update(w_scale=np.ones(3, np.float32)), ["w_scale", "[8]"]),
        (lambda i: i.update(w_scale=np.zeros(8, np.float32)), ["w_scale[0]", "> 0"]),
        (lambda i: i.update(W=np.ones((8, 4, 3, 3), np.float32)), ["W", "float32", "FP8"]),
        (lambda i: i.update(W=np.ones((8, 3, 3, 3), np.float32).astype(nx.E4M3FN.dtype)), ["channels"]),
        (lambda i: i.update(B=np.ones(5, np.float32)), ["input B", "[8]"]),
        (lambda i: i.update(Z=np.ones((1, 8, 5, 5), np.float32)), ["input Z", "shape"]),
        (lambda i: i.update(Z=np.ones((1, 8, 4, 4), np.float32).astype(nx.E4M3FN.dtype)), ["Z is FP8", "z_scale"]),
        (lambda i: i.update(z_scale=np.float32(1.0)), ["z_scale", "without Z"]),
        (lambda i: i.update(x_scale=np.float64(0.1)), ["x_scale", "float64", "float32"]),
    ],
    ids=[
        "negative-scale",
        "nan-scale",
        "scale-not-scalar",
        "w_scale-length",
        "zero-w_scale",
        "float-weights",
        "channel-mismatch",
        "bias-length",
        "residual-shape",
        "fp8-residual-no-scale",
        "z_scale-without-Z",
        "double-scale",
    ],
)
def test_conv_bad_inputs(change, patterns, rng, library):
    inputs = _conv_inputs(rng)
    change(inputs)
    model = ops.make_op_model("FP8Conv", inputs, name="bad")
    model.graph.node[0].name = "bad"
    _fails(model, {"X": inputs["X"]}, library, *patterns)


@pytest.mark.parametrize(
    "attrs, patterns",
    [
        ({"activation": "Swish"}, ["activation", "Swish", '"GeluTanh"']),
        ({"activation": "relu"}, ["activation", "relu", '"Relu"']),
        ({"activation": "Clip", "activation_alpha": 7.0, "activation_beta": 6.0}, ["Clip", "min", "<= ", "max"]),
        ({"activation": "Clip", "activation_alpha": 7.0}, ["Clip", "min=7", "max=6"]),
        ({"activation": "Clip", "activation_beta": float("nan")}, ["Clip", "NaN"]),
        ({"activation": "Relu", "activation_alpha": 0.1}, ["Relu", "activation_alpha", "drop"]),
        ({"activation": "Gelu", "activation_beta": 0.0}, ["Gelu", "activation_beta", "drop"]),
        ({"activation": "", "activation_alpha": 0.0}, ["activation_alpha", "drop"]),
        ({"activation": "HardSwish", "activation_alpha": 0.2}, ["HardSwish", "fixed", "drop"]),
        ({"activation": "HardSigmoid", "activation_alpha": float("inf")}, ["HardSigmoid", "finite"]),
        ({"activation": "Clip", "activation_alpha": 0}, ["activation_alpha", "float attribute"]),
        ({"layout": "NCWH"}, ["layout", "NCWH"]),
        ({"group": 3}, ["group=3"]),
        ({"pads": [1, 1]}, ["pads", "4 values"]),
        ({"strides": [0, 1]}, ["strides", ">= 1"]),
        ({"auto_pad": "SAME_UPPER"}, ["auto_pad", "explicit pads"]),
        ({"output_dtype": TensorProto.INT8}, ["output_dtype=3"]),
        ({"output_dtype": TensorProto.FLOAT8E4M3FN}, ["y_scale"]),
        ({"kernel_shape": [5, 5]}, ["kernel_shape"]),
    ],
    ids=[
        "activation",
        "activation-case",
        "clip-min-above-max",
        "clip-min-above-default-max",
        "clip-nan",
        "alpha-on-relu",
        "beta-on-gelu",
        "alpha-without-activation",
        "hardswish-alpha",
        "hardsigmoid-inf",
        "int-alpha",
        "layout",
        "group",
        "pads",
        "strides",
        "auto_pad",
        "int8-output",
        "fp8-out-no-y_scale",
        "kernel_shape",
    ],
)
def test_conv_bad_attributes(attrs, patterns, rng, library):
    inputs = _conv_inputs(rng)
    output_dtype = attrs.pop("output_dtype", TensorProto.FLOAT)
    model = ops.make_op_model("FP8Conv", inputs, output_dtype=output_dtype, **attrs)
    _fails(model, {"X": inputs["X"]}, library, "FP8Conv", *patterns)


@pytest.mark.parametrize(
    "attrs, patterns",
    [
        ({"activation": "Tanh"}, ["activation", "Tanh", '"Clip"']),
        ({"activation": "Clip", "activation_alpha": 2.0, "activation_beta": -2.0}, ["Clip", "min", "max"]),
        ({"activation": "Sigmoid", "activation_alpha": 1.0}, ["Sigmoid", "activation_alpha"]),
    ],
    ids=["unknown", "clip-min-above-max", "alpha-on-sigmoid"],
)
def test_matmul_bad_activation(attrs, patterns, rng, library):
    a = rng.standard_normal((3, 4)).astype(np.float32)
    b, bs = fp8_weights(rng, (4, 6), axis=1)
    model = ops.make_op_model(
        "FP8MatMul", {"A": a, "B": b, "a_scale": np.float32(0.1), "b_scale": bs}, graph_inputs=["A"], **attrs
    )
    _fails(model, {"A": a}, library, "FP8MatMul", *patterns)


def test_hardswish_accepts_its_fixed_parameters(rng, library):
    """HardSwish's own alpha (float32 1/6) and beta (0.5) may be spelled out; the result is the plain HardSwish."""
    inputs = _conv_inputs(rng)
    plain = ops.run(
        ops.session(ops.make_op_model("FP8Conv", inputs, activation="HardSwish"), library), {"X": inputs["X"]}
    )[0]
    model = ops.make_op_model(
        "FP8Conv", inputs, activation="HardSwish", activation_alpha=float(np.float32(1 / 6)), activation_beta=0.5
    )
    spelled = ops.run(ops.session(model, library), {"X": inputs["X"]})[0]
    np.testing.assert_array_equal(spelled, plain)
    assert (plain < 0).any() and (plain > 0).any()


def test_conv_missing_required_scale(rng, library):
    inputs = _conv_inputs(rng)
    del inputs["w_scale"]
    model = ops.make_op_model("FP8Conv", inputs)
    with pytest.raises(Exception, match="w_scale|Input3|input"):
        ops.run(ops.session(model, library), {"X": inputs["X"]})


def test_conv_input_rank(rng, library):
    inputs = _conv_inputs(rng)
    inputs["X"] = np.ones((4, 6, 6), np.float32)
    model = ops.make_op_model("FP8Conv", inputs)
    _fails(model, {"X": inputs["X"]}, library, "FP8Conv", "X must be 4-D")


def test_conv_kernel_larger_than_input(rng, library):
    inputs = _conv_inputs(rng)
    inputs["X"] = np.ones((1, 4, 2, 2), np.float32)
    model = ops.make_op_model("FP8Conv", inputs)
    _fails(model, {"X": inputs["X"]}, library, "FP8Conv", "larger than the padded input")


def test_matmul_bad_inputs(rng, library):
    a = rng.standard_normal((3, 5)).astype(np.float32)
    b, bs = fp8_weights(rng, (6, 4), axis=1)
    model = ops.make_op_model(
        "FP8MatMul", {"A": a, "B": b, "a_scale": np.float32(0.1), "b_scale": bs}, graph_inputs=["A"]
    )
    _fails(model, {"A": a}, library, "FP8MatMul", "K=5", "K=6")
    model = ops.make_op_model(
        "FP8MatMul", {"A": a, "B": b, "a_scale": np.float32(0.1), "b_scale": bs}, graph_inputs=["A"], transA=1
    )
    _fails(model, {"A": a}, library, "FP8MatMul", "transA")


def test_quantize_bad_inputs(library):
    x = np.ones(4, np.float64)
    model = ops.make_op_model("FP8Quantize", {"X": x, "scale": np.float32(1.0)})
    _fails(model, {"X": x}, library, "FP8Quantize", "X", "float64")
    x = np.ones(4, np.float32)
    model = ops.make_op_model("FP8Quantize", {"X": x, "scale": np.float32(0.0)})
    _fails(model, {"X": x}, library, "FP8Quantize", "scale", "> 0")
    model = ops.make_op_model("FP8Quantize", {"X": x, "scale": np.float32(1.0)}, output_dtype=TensorProto.FLOAT)
    _fails(model, {"X": x}, library, "FP8Quantize", "output_dtype")


def test_declared_output_type_must_match_output_dtype(rng, library):
    inputs = _conv_inputs(rng)
    model = ops.make_op_model("FP8Conv", inputs)
    model.graph.output[0].type.tensor_type.elem_type = TensorProto.FLOAT16
    with pytest.raises(Exception, match="float16|float"):
        ops.run(ops.session(model, library), {"X": inputs["X"]})


def test_errors_leave_the_process_usable(rng, library):
    """After many failing runs the library still computes correctly."""
    inputs = _conv_inputs(rng)
    bad = dict(inputs, x_scale=np.float32(-1.0))
    for _ in range(20):
        with pytest.raises(ort.capi.onnxruntime_pybind11_state.InvalidArgument):
            ops.run(ops.session(ops.make_op_model("FP8Conv", bad), library), {"X": bad["X"]})
    good = ops.run(ops.session(ops.make_op_model("FP8Conv", inputs), library), {"X": inputs["X"]})[0]
    assert good.shape == (1, 8, 4, 4) and np.isfinite(good).all()


@pytest.mark.parametrize(
    "attrs, x, patterns",
    [
        ({"kernel_shape": [3, 3]}, np.zeros((1, 4, 4), np.float32), ["FP8MaxPool", "4-D"]),
        ({"kernel_shape": [0, 3]}, None, ["FP8MaxPool", "kernel_shape"]),
        ({}, None, ["FP8MaxPool", "kernel_shape", "required"]),
        ({"kernel_shape": [2, 2], "strides": [0, 1]}, None, ["FP8MaxPool", "strides"]),
        ({"kernel_shape": [2, 2], "dilations": [1, -1]}, None, ["FP8MaxPool", "dilations"]),
        ({"kernel_shape": [2, 2], "pads": [0, -1, 0, 0]}, None, ["FP8MaxPool", "pads"]),
        ({"kernel_shape": [9, 2]}, None, ["FP8MaxPool", "larger than the padded input"]),
        ({"kernel_shape": [2, 2], "layout": "NCHW"}, None, ["FP8MaxPool", "layout", "NHWC"]),
        ({"kernel_shape": [2, 2], "auto_pad": "SAME_UPPER"}, None, ["FP8MaxPool", "auto_pad"]),
        ({"kernel_shape": [2, 2], "pads": [3, 0, 0, 0]}, None, ["FP8MaxPool", "padding"]),
        ({"kernel_shape": [2, 2]}, np.zeros((1, 4, 4, 2), np.float64), ["FP8MaxPool", "X", "float64"]),
    ],
)
def test_fp8_max_pool_errors(attrs, x, patterns, library):
    x = np.zeros((1, 5, 5, 3), np.float32) if x is None else x
    model = ops.make_op_model("FP8MaxPool", {"X": x}, **attrs)  # Y declared with X's type, as inference gives it
    _fails(model, {"X": x}, library, *patterns)


QKV_TYPES = "float32 or float16 (all three the same type)"


def _attention_inputs(**changes):
    rng = np.random.default_rng(0)
    inputs = {
        "Q": rng.standard_normal((2, 3, 8)).astype(np.float32),
        "K": rng.standard_normal((2, 5, 8)).astype(np.float32),
        "V": rng.standard_normal((2, 5, 8)).astype(np.float32),
    }
    inputs.update(changes)
    return {k: v for k, v in inputs.items() if v is not None}


@pytest.mark.parametrize(
    "inputs, attrs, out_type, patterns",
    [
        (_attention_inputs(), {}, 1, ["FP8Attention", "num_heads", "required"]),
        (_attention_inputs(), {"num_heads": 3}, 1, ["FP8Attention", "num_heads=3", "divide"]),
        (_attention_inputs(Q=np.zeros((2, 3, 2, 4), np.float32)), {"num_heads": 2}, 1, ["FP8Attention", "Q", "3-D"]),
        (_attention_inputs(K=np.zeros((1, 5, 8), np.float32)), {"num_heads": 2}, 1, ["FP8Attention", "batch size"]),
        (_attention_inputs(V=np.zeros((2, 4, 8), np.float32)), {"num_heads": 2}, 1, ["FP8Attention", "length T"]),
        (_attention_inputs(K=np.zeros((2, 5, 6), np.float32)), {"num_heads": 2}, 1, ["FP8Attention", "last dimension"]),
        (
            _attention_inputs(attn_bias=np.zeros((2, 1, 3, 4), np.float32)),
            {"num_heads": 2},
            1,
            ["FP8Attention", "attn_bias", "broadcast"],
        ),
        (
            _attention_inputs(attn_bias=np.zeros((5,), np.float64)),
            {"num_heads": 2},
            1,
            ["FP8Attention", "attn_bias", "float64"],
        ),
        (
            _attention_inputs(Q=np.zeros((2, 3, 8), np.float16)),
            {"num_heads": 2},
            1,
            ["FP8Attention", "input K has element type float32 but Q has float16", QKV_TYPES],
        ),
        (
            _attention_inputs(V=np.zeros((2, 5, 8), np.float16)),
            {"num_heads": 2},
            1,
            ["FP8Attention", "input V has element type float16 but Q has float32", QKV_TYPES],
        ),
        (
            _attention_inputs(Q=np.zeros((2, 3, 8), np.int32)),
            {"num_heads": 2},
            1,
            ["FP8Attention", "input Q has element type int32", QKV_TYPES],
        ),
        (
            _attention_inputs(Q=np.zeros((2, 3, 8), np.float64), K=None, V=None),
            {"num_heads": 2},
            1,
            ["FP8Attention", "input Q has element type float64", QKV_TYPES],
        ),
        (_attention_inputs(), {"num_heads": 2}, 17, ["FP8Attention", "y_scale"]),
        (_attention_inputs(y_scale=np.float32(0.0)), {"num_heads": 2}, 17, ["FP8Attention", "y_scale", "> 0"]),
        (_attention_inputs(y_scale=np.float32(np.nan)), {"num_heads": 2}, 17, ["FP8Attention", "y_scale", "finite"]),
        (_attention_inputs(), {"num_heads": 2}, 10, ["FP8Attention", "output_dtype"]),
        (_attention_inputs(), {"num_heads": 2, "nan_to_zero": 2}, 1, ["FP8Attention", "nan_to_zero"]),
        (_attention_inputs(), {"num_heads": 2, "scale": float("inf")}, 1, ["FP8Attention", "scale", "finite"]),
    ],
)
def test_fp8_attention_errors(inputs, attrs, out_type, patterns, library):
    model = ops.make_op_model("FP8Attention", inputs, graph_inputs=["Q", "K", "V"], output_dtype=out_type, **attrs)
    _fails(model, {n: inputs[n] for n in ("Q", "K", "V") if n in inputs}, library, *patterns)
