"""FP8LayerNormalization, FP8GlobalAveragePool and FP8ChannelMul on the CPU route against the NumPy reference
(docs/operators.md): fresh random inputs with values past the FP8 range (saturating outputs), NaN inputs, every FP8
format, both layouts, outputs bound to poisoned buffers; and the contract's errors, each naming the input or
attribute. The case generators serve the plugin-EP and GPU tests too."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto

from fp8ort import numerics as nx
from fp8ort import ops, reference

from ._util import HP_TYPES, poisoned, run_poisoned
from .test_errors import _fails

FP8_TYPES = [TensorProto.FLOAT8E4M3FN, TensorProto.FLOAT8E5M2, TensorProto.FLOAT8E4M3FNUZ, TensorProto.FLOAT8E5M2FNUZ]


# ------------------------------------------------------------------------------------------ FP8LayerNormalization


def layer_norm_case(rng: np.random.Generator, dtype, cols: int | None = None) -> tuple[dict, dict]:
    """Random X (rank 2-4, a few rows with a large offset and spread so that Y_fp8 saturates with y_scale 0.01),
    Scale and B of the normalized axes, random axis; returns (inputs, attributes)."""
    rank = int(rng.integers(2, 5))
    shape = [int(rng.integers(1, 6)) for _ in range(rank)]
    axis = int(rng.integers(1, rank)) if cols is None else rank - 1
    if cols is not None:
        shape[-1] = cols
    else:
        shape[-1] = int(rng.integers(1, 200))
    x = rng.standard_normal(shape).astype(np.float32) * 3 + rng.standard_normal(shape[:1] + [1] * (rank - 1)) * 10
    norm = shape[axis:]
    inputs = {
        "X": x.astype(dtype),
        "Scale": (rng.standard_normal(norm) * 4).astype(dtype),
        "B": rng.standard_normal(norm).astype(dtype) if rng.random() < 0.8 else None,
        "y_scale": np.float32(0.01),
    }
    attrs = {"axis": axis - rank if rng.random() < 0.5 else axis}
    if rng.random() < 0.5:
        attrs["epsilon"] = float(rng.choice([1e-12, 1e-3]))
    return inputs, attrs


def run_two_poisoned(sess, feeds: dict, shape, y_type: int, q_type: int) -> tuple[np.ndarray, np.ndarray]:
    """Runs an FP8LayerNormalization session with both outputs bound to poisoned buffers."""
    binding = sess.io_binding()
    keep = [np.ascontiguousarray(v) for v in feeds.values()]
    for name, value in zip(feeds, keep):
        binding.bind_ortvalue_input(name, ops.to_ort_value(value))
    y_raw, y_val = poisoned(list(shape), y_type)
    q_raw, q_val = poisoned(list(shape), q_type)
    binding.bind_ortvalue_output("Y", y_val)
    binding.bind_ortvalue_output("Y_fp8", q_val)
    sess.run_with_iobinding(binding)
    return y_raw.view(HP_TYPES[y_type]), q_raw.view(nx.get_format(q_type).dtype)


def check_layer_norm(y: np.ndarray, q: np.ndarray, inputs: dict, attrs: dict, q_type: int, exact: bool) -> None:
    """Y within float32 rounding of the reference (bit-exact when ``exact``); Y_fp8 always q of the Y written."""
    want_y, want_q = reference.fp8_layer_normalization(
        inputs["X"], inputs["Scale"], inputs.get("B"), inputs["y_scale"], output_dtype=q_type, **attrs
    )
    assert y.dtype == want_y.dtype and y.shape == want_y.shape and q.shape == want_q.shape
    own_q = reference.fp8_quantize(y.astype(np.float32), inputs["y_scale"], output_dtype=q_type)
    assert q.view(np.uint8).tobytes() == own_q.view(np.uint8).tobytes(), "Y_fp8 is not q(Y) of the Y written"
    if exact:
        assert y.tobytes() == want_y.tobytes()
        assert q.view(np.uint8).tobytes() == want_q.view(np.uint8).tobytes()
    else:
        w, g = want_y.astype(np.float64), y.astype(np.float64)
        tol = (1e-5 if y.dtype == np.float32 else 2e-3) * np.abs(w).max(initial=1.0)
        assert np.abs(g - w).max(initial=0.0) <= tol


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("dtype", [np.float32, np.float16], ids=str)
@pytest.mark.parametrize("q_type", FP8_TYPES[:2])
def test_fp8_layer_normalization(q_type, dtype, seed, library):
    """Bit-exact with the reference on the CPU (same roundings; the double sums differ only in order), both
    outputs written in full (poisoned first), saturating FP8 values."""
    rng = np.random.default_rng(7000 + seed)
    inputs, attrs = layer_norm_case(rng, dtype)
    model = ops.make_op_model("FP8LayerNormalization", inputs, output_dtype=q_type, **attrs)
    x_type = ops.onnx_type_of(inputs["X"])
    y, q = run_two_poisoned(
        ops.session(model, library, threads=2), {"X": inputs["X"]}, inputs["X"].shape, x_type, q_type
    )
    check_layer_norm(y, q, inputs, attrs, q_type, exact=True)
    if q_type == TensorProto.FLOAT8E4M3FN:
        assert (np.abs(y.astype(np.float32)) / 0.01 > nx.E4M3FN.max).any(), "the case should saturate"


def test_fp8_layer_normalization_nan_row(library):
    """A NaN in a row makes that row's Y NaN (and Y_fp8 the format's NaN); other rows are untouched."""
    x = np.random.default_rng(1).standard_normal((3, 64)).astype(np.float32)
    x[1, 5] = np.nan
    inputs = {"X": x, "Scale": np.ones(64, np.float32), "B": np.zeros(64, np.float32), "y_scale": np.float32(0.05)}
    y, q = ops.run(ops.make_op_model("FP8LayerNormalization", inputs), {"X": x}, library)
    assert np.isnan(y[1]).all() and not np.isnan(y[[0, 2]]).any()
    assert np.isnan(q[1].astype(np.float32)).all()


# ---------------------------------------------------------------------------------- FP8GlobalAveragePool / ChannelMul


def channel_case(rng: np.random.Generator, fmt: nx.FP8Format, layout: str, channels: int | None = None) -> dict:
    """X: FP8 codes of random activations (some past the range, so saturated codes, and a few NaN codes where the
    format has them), x_scale, the gate G of the layout's shape, y_scale; returns the inputs."""
    n, h, w = int(rng.integers(1, 4)), int(rng.integers(1, 12)), int(rng.integers(1, 12))
    c = channels or int(rng.integers(1, 40))
    v = rng.standard_normal((n, h, w, c)).astype(np.float32) * 200
    v[rng.random(v.shape) < 0.02] = 1e6
    x = nx.encode(v, fmt, saturate=True)
    if rng.random() < 0.5:  # a few NaN codes (every format here has one)
        mask = rng.random(x.shape) < 0.01
        x[mask] = nx.encode(np.full(int(mask.sum()), np.nan, np.float32), fmt)
    if layout == "NCHW":
        x = np.ascontiguousarray(x.transpose(0, 3, 1, 2))
    g_shape = (n, 1, 1, c) if layout == "NHWC" else (n, c, 1, 1)
    g = (rng.random(g_shape) * 1.5).astype(np.float32)
    return {"X": x, "x_scale": np.float32(0.02), "G": g, "y_scale": np.float32(0.01)}


FORMATS = [nx.E4M3FN, nx.E5M2, nx.E4M3FNUZ, nx.E5M2FNUZ]


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("layout", ["NHWC", "NCHW"])
@pytest.mark.parametrize("fmt", FORMATS, ids=str)
def test_fp8_global_average_pool(fmt, layout, seed, library):
    """Bit-exact with the reference: exact sums, one division and one product rounded to float32; NaN where a
    window holds an FP8 NaN."""
    inputs = channel_case(np.random.default_rng(8000 + seed), fmt, layout)
    x = inputs["X"]
    want = reference.fp8_global_average_pool(x, inputs["x_scale"], layout=layout)
    model = ops.make_op_model("FP8GlobalAveragePool", {"X": x, "x_scale": inputs["x_scale"]}, layout=layout)
    got = run_poisoned(model, {"X": x}, want.shape, TensorProto.FLOAT, library)
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan)  # NaN's sign bit is not part of the contract
    assert got[~nan].tobytes() == want[~nan].tobytes()


CHANNEL_MUL_OUTPUTS = [TensorProto.FLOAT8E4M3FN, TensorProto.FLOAT8E5M2FNUZ, TensorProto.FLOAT, TensorProto.FLOAT16]


@pytest.mark.parametrize("seed", range(4))  # every input format once
@pytest.mark.parametrize("layout", ["NHWC", "NCHW"])
@pytest.mark.parametrize("out_type", CHANNEL_MUL_OUTPUTS)
def test_fp8_channel_mul(out_type, layout, seed, library):
    """Bit-exact with the reference on every output type, saturating FP8 outputs, NaN inputs."""
    rng = np.random.default_rng(9000 + seed)
    inputs = channel_case(rng, FORMATS[seed % len(FORMATS)], layout)
    want = reference.fp8_channel_mul(**inputs, layout=layout, output_dtype=out_type)
    model = ops.make_op_model("FP8ChannelMul", inputs, layout=layout, output_dtype=out_type)
    got = run_poisoned(model, {"X": inputs["X"]}, want.shape, out_type, library)
    assert got.view(np.uint8).tobytes() == want.view(np.uint8).tobytes()  # the CPU decodes NaN as the reference


def test_channel_cases_cover_the_contract():
    """The cases above reach saturated FP8 outputs and NaN inputs."""
    seen = set()
    for seed in range(3):
        for fmt in FORMATS:
            inputs = channel_case(np.random.default_rng(9000 + seed), fmt, "NHWC")
            t = inputs["X"].astype(np.float32) * inputs["x_scale"] * inputs["G"]
            if (np.abs(t) / inputs["y_scale"] > nx.E4M3FN.max).any():
                seen.add("saturated")
            if np.isnan(inputs["X"].astype(np.float32)).any():
                seen.add("nan")
    assert seen == {"saturated", "nan"}, seen


# ------------------------------------------------------------------------------------------------------- errors


def _ln_inputs(**changes):
    inputs = {
        "X": np.zeros((2, 8), np.float32),
        "Scale": np.ones(8, np.float32),
        "B": np.zeros(8, np.float32),
        "y_scale": np.float32(0.1),
    }
    inputs.update(changes)
    return {k: v for k, v in inputs.items() if v is not None}


@pytest.mark.parametrize(
    "inputs, attrs, patterns",
    [
        (_ln_inputs(Scale=np.ones(4, np.float32)), {}, ["FP8LayerNormalization", "Scale", "[8]"]),
        (_ln_inputs(B=np.ones(8, np.float16)), {}, ["FP8LayerNormalization", "B", "float16"]),
        (_ln_inputs(), {"axis": 2}, ["FP8LayerNormalization", "axis=2"]),
        (_ln_inputs(), {"epsilon": -1.0}, ["FP8LayerNormalization", "epsilon"]),
        (_ln_inputs(y_scale=np.float32(0.0)), {}, ["FP8LayerNormalization", "y_scale", "> 0"]),
        (_ln_inputs(y_scale=np.float32(np.inf)), {}, ["FP8LayerNormalization", "y_scale", "finite"]),
        (_ln_inputs(y_scale=np.ones(2, np.float32)), {}, ["FP8LayerNormalization", "y_scale", "scalar"]),
        (_ln_inputs(X=np.zeros((2, 8), np.float64), Scale=None, B=None), {}, ["FP8LayerNormalization", "X", "float64"]),
        (_ln_inputs(), {"output_dtype": 1}, ["FP8LayerNormalization", "output_dtype"]),
    ],
)
def test_fp8_layer_normalization_errors(inputs, attrs, patterns, library):
    if "Scale" not in inputs:
        inputs["Scale"] = np.ones(8, np.float64)
    model = ops.make_op_model("FP8LayerNormalization", inputs, **attrs)
    _fails(model, {"X": inputs["X"]}, library, *patterns)


def _ch_inputs(**changes):
    inputs = {
        "X": nx.encode(np.ones((2, 3, 3, 4), np.float32), nx.E4M3FN),
        "x_scale": np.float32(0.1),
        "G": np.ones((2, 1, 1, 4), np.float32),
        "y_scale": np.float32(0.1),
    }
    inputs.update(changes)
    return {k: v for k, v in inputs.items() if v is not None}


@pytest.mark.parametrize(
    "op, inputs, attrs, patterns",
    [
        ("FP8GlobalAveragePool", {"X": np.ones((2, 3, 3, 4), np.float32)}, {}, ["FP8GlobalAveragePool", "X", "FP8"]),
        ("FP8GlobalAveragePool", {"X": nx.encode(np.ones((2, 3, 4), np.float32), nx.E4M3FN)}, {}, ["X", "4-D"]),
        ("FP8GlobalAveragePool", {"x_scale": np.float32(-1)}, {}, ["FP8GlobalAveragePool", "x_scale", "> 0"]),
        ("FP8GlobalAveragePool", {}, {"layout": "NCWH"}, ["FP8GlobalAveragePool", "layout"]),
        ("FP8ChannelMul", {"G": np.ones((2, 1, 1, 3), np.float32)}, {}, ["FP8ChannelMul", "G", "[2, 1, 1, 4]"]),
        ("FP8ChannelMul", {"G": np.ones((2, 4, 1, 1), np.float32)}, {}, ["FP8ChannelMul", "G", "[2, 1, 1, 4]"]),
        ("FP8ChannelMul", {"G": np.ones((2, 1, 1, 4), np.float16)}, {}, ["FP8ChannelMul", "G", "float16"]),
        ("FP8ChannelMul", {"y_scale": None}, {}, ["FP8ChannelMul", "y_scale"]),
        ("FP8ChannelMul", {"y_scale": np.float32(np.nan)}, {}, ["FP8ChannelMul", "y_scale", "finite"]),
        ("FP8ChannelMul", {}, {"output_dtype": 6}, ["FP8ChannelMul", "output_dtype"]),
        ("FP8ChannelMul", {"x_scale": np.float32(0)}, {"layout": "NCHW"}, ["FP8ChannelMul", "G"]),
    ],
)
def test_channel_op_errors(op, inputs, attrs, patterns, library):
    full = _ch_inputs(**inputs)
    if op == "FP8GlobalAveragePool":
        full = {k: full[k] for k in ("X", "x_scale")}
    model = ops.make_op_model(op, full, **attrs)
    _fails(model, {"X": full["X"]}, library, *patterns)


def test_channel_mul_zero_size_and_empty_spatial(library):
    """Zero-size X gives an empty Y; pooling H * W = 0 positions is refused (the mean of nothing)."""
    x = np.zeros((2, 0, 3, 4), nx.E4M3FN.dtype)
    model = ops.make_op_model("FP8GlobalAveragePool", {"X": x, "x_scale": np.float32(1)})
    _fails(model, {"X": x}, library, "FP8GlobalAveragePool", "H * W = 0")
    empty = np.zeros((0, 3, 3, 4), nx.E4M3FN.dtype)
    model = ops.make_op_model("FP8GlobalAveragePool", {"X": empty, "x_scale": np.float32(1)})
    assert ops.run(model, {"X": empty}, library)[0].shape == (0, 1, 1, 4)
    m = ops.make_op_model("FP8ChannelMul", _ch_inputs(X=x))
    assert ops.run(m, {"X": x}, library)[0].shape == (2, 0, 3, 4)


def test_errors_are_exceptions_not_crashes(library):
    """After every error above the process still runs a good model."""
    bad = _ch_inputs(x_scale=np.float32(-1))
    for _ in range(3):
        _fails(ops.make_op_model("FP8ChannelMul", bad), {"X": bad["X"]}, library, "x_scale")
    good = _ch_inputs()
    got = ops.run(ops.session(ops.make_op_model("FP8ChannelMul", good), library), {"X": good["X"]})[0]
    assert got.shape == good["X"].shape
