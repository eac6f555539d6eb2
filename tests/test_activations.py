"""Fused activations of FP8Conv and FP8MatMul (CPU kernels) against the NumPy reference.

Piecewise-linear activations (Relu, Clip, HardSigmoid, HardSwish) must be bit-exact. The transcendental ones
(Sigmoid, Silu, Gelu, GeluTanh) are evaluated in float64 by both sides but through different exp/erf/tanh
implementations (libm vs NumPy), so after rounding to float32 an output may be one ulp away: the check allows at most
one step in the output type, and still requires nearly every element to be bit-identical.
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto

from fp8ort import numerics as nx
from fp8ort import ops, reference

from ._util import activations, assert_matches, fp8_weights, run_poisoned

F32, F16, E4M3 = TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.FLOAT8E4M3FN
TRANSCENDENTAL = ("Sigmoid", "Silu", "Gelu", "GeluTanh")
# Fraction of outputs of a transcendental activation that must be bit-identical (seen: 100% with glibc's libm and
# NumPy 2 on the Zen1 CPU machines; other libm or SIMD builds may move a few by one ulp).
MIN_EXACT_FRACTION = 0.97

# (activation, activation_alpha, activation_beta): every activation, the parametrized ones also off their defaults
ACTIVATION_SPECS = [
    ("", None, None),
    ("Relu", None, None),
    ("Clip", None, None),
    ("Clip", -1.5, 2.25),
    ("Clip", float("-inf"), 0.75),
    ("Sigmoid", None, None),
    ("Silu", None, None),
    ("HardSigmoid", None, None),
    ("HardSigmoid", 0.3, 0.45),
    ("HardSwish", None, None),
    ("Gelu", None, None),
    ("GeluTanh", None, None),
]


def _spec_id(spec) -> str:
    name, alpha, beta = spec
    return (name or "none") + ("" if alpha is None else f"({alpha},{beta})")


def _attrs(spec) -> dict:
    name, alpha, beta = spec
    attrs = {"activation": name}
    if alpha is not None:
        attrs["activation_alpha"] = float(alpha)
    if beta is not None:
        attrs["activation_beta"] = float(beta)
    return attrs


def _kinks(spec) -> np.ndarray:
    """Pre-activation values where the activation bends or saturates (float32)."""
    name, alpha, beta = spec
    a, b = reference.activation_params(name, alpha, beta)
    if name == "HardSigmoid":
        return np.float32([-b / a, (1 - b) / a])
    points = {
        "": [0.0],
        "Relu": [0.0],
        "Clip": [a, b],
        "HardSwish": [-3.0, 0.0, 3.0],
        "Sigmoid": [0.0, -17.0, 17.0],
        "Silu": [0.0, -1.28, -20.0],
        "Gelu": [0.0, -0.75, -6.0],
        "GeluTanh": [0.0, -0.75, -6.0],
    }[name]
    return np.float32([p for p in points if np.isfinite(p)])


def _ordinal(a: np.ndarray) -> np.ndarray:
    """Integers that step by one between neighbouring values of a's type (float32, float16 or FP8)."""
    if nx.is_fp8(a.dtype):
        c = a.view(np.uint8).astype(np.int64)
        return np.where(c & 0x80, -(c & 0x7F), c & 0x7F)
    bits = a.view(np.int32 if a.dtype.itemsize == 4 else np.int16).astype(np.int64)
    sign = np.int64(1) << (8 * a.dtype.itemsize - 1)
    return np.where(bits < 0, -(bits & (sign - 1)), bits)


def assert_close_transcendental(got: np.ndarray, want: np.ndarray, what: str = "") -> None:
    """NaN where the reference has NaN, at most one step apart elsewhere, nearly all bit-identical."""
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, want.shape, got.dtype, want.dtype)
    gf, wf = got.astype(np.float64), want.astype(np.float64)
    assert np.array_equal(np.isnan(gf), np.isnan(wf)), f"{what}: NaN positions differ"
    fin = ~np.isnan(wf)
    steps = np.abs(_ordinal(got)[fin] - _ordinal(want)[fin])
    worst = int(steps.max(initial=0))
    if worst > 1:
        i = np.flatnonzero(fin)[np.argmax(steps)]
        raise AssertionError(f"{what}: {worst} steps apart at {i}: got {gf.ravel()[i]} want {wf.ravel()[i]}")
    bits = np.uint8 if want.dtype.itemsize == 1 else np.uint16 if want.dtype.itemsize == 2 else np.uint32
    exact = float(np.mean(got.view(bits) == want.view(bits))) if want.size else 1.0
    assert exact >= MIN_EXACT_FRACTION, f"{what}: only {exact:.2%} of outputs bit-identical"


def _check(spec, got: np.ndarray, want: np.ndarray, what: str = "") -> None:
    if spec[0] in TRANSCENDENTAL:
        assert_close_transcendental(got, want, what)
    else:
        assert_matches(got, want)


def _spread_inputs(rng, inputs: dict, scale_name: str, probe: np.ndarray, spec, channel_axis: int):
    """Rescale the weight scales so the pre-activation spans the activation's interesting range, and put each
    channel's bias on one of its kinks; probe is the pre-activation without bias."""
    spread = {"Sigmoid": 12.0, "Clip": 4.0}.get(spec[0], 3.0)
    sigma = float(np.std(probe[np.isfinite(probe)])) or 1.0
    inputs[scale_name] = (inputs[scale_name] * np.float32(spread / sigma)).astype(np.float32)
    channels = probe.shape[channel_axis]
    kinks = _kinks(spec)
    return (kinks[rng.integers(0, kinks.size, channels)] + rng.standard_normal(channels) * 0.05).astype(np.float32)


def _add_residual(rng, inputs: dict, y_pre: np.ndarray, spec, z_kind) -> None:
    """z_kind "f32": a float32 Z that lands a third of the outputs on (or one rounding from) the kinks, plus a few
    ±Inf and NaN; "e4m3": a random FP8 Z with z_scale."""
    if z_kind == "f32":
        kinks = _kinks(spec)
        target = kinks[rng.integers(0, kinks.size, y_pre.shape)]
        target = target + (rng.integers(-2, 3, y_pre.shape) * np.float32(1e-6) * rng.integers(0, 2, y_pre.shape))
        z = (rng.standard_normal(y_pre.shape) * 0.5).astype(np.float32)
        on_kink = rng.random(y_pre.shape) < 0.33
        z[on_kink] = (target[on_kink].astype(np.float32) - y_pre[on_kink]).astype(np.float32)
        flat = z.reshape(-1)
        flat[rng.choice(flat.size, size=min(3, flat.size), replace=False)] = [np.inf, -np.inf, np.nan][
            : min(3, flat.size)
        ]
        inputs["Z"] = z
    elif z_kind == "e4m3":
        z_scale = np.float32(rng.uniform(0.01, 0.05))
        inputs["Z"] = nx.quantize(rng.standard_normal(y_pre.shape).astype(np.float32) * 2, z_scale, nx.E4M3FN)
        inputs["z_scale"] = z_scale


def _add_y_scale(inputs: dict, out_type: int, post: np.ndarray) -> None:
    if nx.is_fp8(out_type):
        fin = np.abs(post[np.isfinite(post)])
        inputs["y_scale"] = np.float32((fin.max() if fin.size else 1.0) / 300 + 1e-3)


@pytest.mark.parametrize("z_kind", [None, "f32", "e4m3"], ids=["noz", "zf32", "ze4m3"])
@pytest.mark.parametrize("out_type", [F32, E4M3], ids=["yf32", "ye4m3"])
@pytest.mark.parametrize("spec", ACTIVATION_SPECS, ids=_spec_id)
def test_conv_activation(spec, out_type, z_kind, rng, library):
    x_scale = np.float32(rng.uniform(0.01, 0.1))
    x = activations(rng, (2, 6, 9, 8), x_scale, np.float32)  # a few far past the FP8 range: they saturate
    w, w_scale = fp8_weights(rng, (12, 6, 3, 3))
    inputs = {"X": x, "W": w, "x_scale": x_scale, "w_scale": w_scale}
    geo = dict(pads=(1, 1, 1, 1), strides=(1, 1))
    probe = reference.fp8_conv(x, w, x_scale, w_scale, **geo)
    inputs["B"] = _spread_inputs(rng, inputs, "w_scale", probe, spec, 1)
    y_pre = reference.fp8_conv(**inputs, **geo)
    _add_residual(rng, inputs, y_pre, spec, z_kind)
    _add_y_scale(inputs, out_type, reference.fp8_conv(**inputs, **geo, **_attrs(spec)))
    attrs = dict(pads=list(geo["pads"]), strides=list(geo["strides"]), **_attrs(spec))
    expected = reference.fp8_conv(**inputs, **attrs, output_dtype=out_type)
    model = ops.make_op_model("FP8Conv", inputs, output_dtype=out_type, **attrs)
    got = run_poisoned(model, {"X": x}, expected.shape, out_type, library)
    _check(spec, got, expected, f"FP8Conv {spec}")


@pytest.mark.parametrize("z_kind", [None, "f32", "e4m3"], ids=["noz", "zf32", "ze4m3"])
@pytest.mark.parametrize("out_type", [F32, E4M3], ids=["yf32", "ye4m3"])
@pytest.mark.parametrize("spec", ACTIVATION_SPECS, ids=_spec_id)
def test_matmul_activation(spec, out_type, z_kind, rng, library):
    a_scale = np.float32(rng.uniform(0.01, 0.1))
    a = activations(rng, (3, 21, 40), a_scale, np.float32)
    b, b_scale = fp8_weights(rng, (40, 24), axis=1)
    inputs = {"A": a, "B": b, "a_scale": a_scale, "b_scale": b_scale}
    probe = reference.fp8_matmul(a, b, a_scale, b_scale)
    inputs["C"] = _spread_inputs(rng, inputs, "b_scale", probe, spec, 2)
    y_pre = reference.fp8_matmul(**inputs)
    _add_residual(rng, inputs, y_pre, spec, z_kind)
    _add_y_scale(inputs, out_type, reference.fp8_matmul(**inputs, **_attrs(spec)))
    expected = reference.fp8_matmul(**inputs, **_attrs(spec), output_dtype=out_type)
    model = ops.make_op_model("FP8MatMul", inputs, graph_inputs=["A"], output_dtype=out_type, **_attrs(spec))
    got = run_poisoned(model, {"A": a}, expected.shape, out_type, library)
    _check(spec, got, expected, f"FP8MatMul {spec}")


def _swept_values(rng, spec) -> np.ndarray:
    """float32 pre-activations: every neighbour within 64 ulps of each kink, random values over the activation's
    range and far past it, and the special values."""
    sweeps = []
    for k in _kinks(spec):
        up = np.full(64, k, np.float32)
        down = np.full(64, k, np.float32)
        for i in range(1, 64):
            up[i] = np.nextafter(up[i - 1], np.float32(np.inf))
            down[i] = np.nextafter(down[i - 1], np.float32(-np.inf))
        sweeps += [up, down, k + rng.standard_normal(500).astype(np.float32) * np.float32(0.01)]
    specials = np.float32([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 1e-38, -1e-38, 3.4e38, -3.4e38])
    wide = (rng.standard_normal(4000) * 10).astype(np.float32)
    far = (rng.standard_normal(500) * 1e4).astype(np.float32)
    return np.concatenate(sweeps + [specials, wide, far]).astype(np.float32)


@pytest.mark.parametrize("out_type", [F32, F16, E4M3], ids=["yf32", "yf16", "ye4m3"])
@pytest.mark.parametrize("spec", ACTIVATION_SPECS, ids=_spec_id)
def test_activation_on_exact_values(spec, out_type, rng, library):
    """A = 0 makes y = 0 + Z = Z exactly, so the activation sees chosen float32 values: dense sweeps around every
    kink, ±0, subnormals, ±max, ±Inf, NaN."""
    yv = _swept_values(rng, spec)
    n = 8
    rows = -(-yv.size // n)
    z = np.resize(yv, rows * n).reshape(rows, n)
    inputs = {
        "A": np.zeros((rows, 4), np.float32),
        "B": np.zeros((4, n), np.float32).astype(nx.E4M3FN.dtype),
        "a_scale": np.float32(1.0),
        "b_scale": np.float32(1.0),
        "Z": z,
    }
    if nx.is_fp8(out_type):
        inputs["y_scale"] = np.float32(0.02)
    expected = reference.fp8_matmul(**inputs, **_attrs(spec), output_dtype=out_type)
    # the reference's y is Z itself: the activation alone decides the result
    with np.errstate(over="ignore"):
        direct = (
            reference.apply_activation(z, *spec).astype(nx.onnx_to_numpy_dtype(out_type))
            if not nx.is_fp8(out_type)
            else None
        )
    if direct is not None:
        np.testing.assert_array_equal(expected, direct)
    model = ops.make_op_model("FP8MatMul", inputs, graph_inputs=["A"], output_dtype=out_type, **_attrs(spec))
    got = run_poisoned(model, {"A": inputs["A"]}, expected.shape, out_type, library)
    _check(spec, got, expected, f"values {spec}")


def test_hard_sigmoid_is_not_fused_multiply_add(rng, library):
    """Values where alpha*y + beta rounded once (an FMA) differs from the contract's two roundings: the kernel must
    give the two-rounding result."""
    y = (rng.standard_normal(200_000) * 4).astype(np.float32)
    alpha, beta = 0.2, 0.5
    two = (np.float32(y * np.float32(alpha)) + np.float32(beta)).astype(np.float32)
    fused = (y.astype(np.float64) * np.float64(np.float32(alpha)) + np.float64(beta)).astype(np.float32)
    pick = y[(two != fused) & (two > 0) & (two < 1)][:4000]
    assert pick.size > 100, "no values tell an FMA from two roundings: the test would prove nothing"
    z = pick.reshape(-1, 1)
    inputs = {
        "A": np.zeros((z.shape[0], 1), np.float32),
        "B": np.zeros((1, 1), np.float32).astype(nx.E4M3FN.dtype),
        "a_scale": np.float32(1.0),
        "b_scale": np.float32(1.0),
        "Z": z,
    }
    attrs = {"activation": "HardSigmoid", "activation_alpha": alpha, "activation_beta": beta}
    model = ops.make_op_model("FP8MatMul", inputs, graph_inputs=["A"], **attrs)
    got = run_poisoned(model, {"A": inputs["A"]}, z.shape, F32, library)
    expected = reference.fp8_matmul(**inputs, **attrs)
    np.testing.assert_array_equal(got.view(np.uint32), expected.view(np.uint32))


def test_transcendental_check_catches_real_errors():
    """The ≤ 1-step comparison is not vacuous: two steps, many one-step errors or a lost NaN all fail."""
    want = np.linspace(-3, 3, 1000, dtype=np.float32)
    assert_close_transcendental(want.copy(), want)
    one = want.copy()
    one[::100] = np.nextafter(one[::100], np.float32(np.inf))
    assert_close_transcendental(one, want)
    two = want.copy()
    two[5] = np.nextafter(np.nextafter(two[5], np.float32(9)), np.float32(9))
    with pytest.raises(AssertionError, match="2 steps"):
        assert_close_transcendental(two, want)
    many = np.nextafter(want, np.float32(np.inf))
    with pytest.raises(AssertionError, match="bit-identical"):
        assert_close_transcendental(many, want)
    nan = want.copy()
    nan[3] = np.nan
    with pytest.raises(AssertionError, match="NaN"):
        assert_close_transcendental(nan, want)
    codes = nx.quantize(want, np.float32(0.01), nx.E4M3FN)
    off = codes.view(np.uint8).copy()
    off[10] += 2
    with pytest.raises(AssertionError, match="2 steps"):
        assert_close_transcendental(off.view(codes.dtype), codes)
