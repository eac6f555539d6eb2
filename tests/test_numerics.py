"""FP8 conversions in Python and in the C++ kernels (through FP8Quantize/FP8Dequantize), bit-exact with ml_dtypes."""

from __future__ import annotations

import math
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest
from onnx import TensorProto

from fp8ort import numerics as nx
from fp8ort import ops, reference

from ._util import run_poisoned

FORMATS = list(nx.FORMATS.values())


def _ml_dtypes_encode(x: np.ndarray, fmt: nx.FP8Format, saturate: bool) -> np.ndarray:
    """The oracle: ml_dtypes' own cast, after clipping to ±max when saturating (clip keeps NaN)."""
    x = np.asarray(x)
    if saturate:
        with np.errstate(invalid="ignore"):
            x = np.clip(x, -fmt.max, fmt.max)
    with np.errstate(over="ignore", invalid="ignore"):
        return x.astype(fmt.dtype).view(np.uint8)


def _cpp_quantize(x: np.ndarray, fmt: nx.FP8Format, library: str, saturate: int = 1, scale: float = 1.0):
    model = ops.make_op_model(
        "FP8Quantize", {"X": x, "scale": np.float32(scale)}, output_dtype=fmt.onnx_type, saturate=saturate
    )
    return run_poisoned(model, {"X": x}, x.shape, fmt.onnx_type, library).view(np.uint8)


def _special_float32() -> np.ndarray:
    """±0, float32 subnormals, every FP8 value and the midpoints (ties) between neighbours, ±max, overflow, Inf, NaN."""
    vals = [0.0, -0.0, 1e-45, -1e-45, 1.1754942e-38, np.inf, -np.inf, 3.4028235e38, -3.4028235e38]
    for fmt in FORMATS:
        grid = np.arange(256, dtype=np.uint8).view(fmt.dtype).astype(np.float64)
        grid = np.unique(grid[np.isfinite(grid)])
        mids = (grid[:-1] + grid[1:]) / 2
        vals += list(grid) + list(mids) + list(np.nextafter(mids, np.inf)) + list(np.nextafter(mids, -np.inf))
        top = fmt.max
        vals += [top, -top, top * 1.03, top * 1.0625, top * 1.07, top * 2, -top * 1.0625, top * 1e6]
    bits = np.array([0x7FC00000, 0xFFC00000, 0x7F800001, 0xFF800001, 0x7FBFFFFF, 0x7FE00000], dtype=np.uint32)
    return np.concatenate([np.array(vals, dtype=np.float32), bits.view(np.float32)])


@pytest.mark.parametrize("fmt", FORMATS, ids=str)
def test_python_encode_matches_ml_dtypes(fmt, rng):
    x = np.concatenate([_special_float32(), rng.standard_normal(10000).astype(np.float32) * fmt.max])
    got = nx.encode(x, fmt).view(np.uint8)
    np.testing.assert_array_equal(got, _ml_dtypes_encode(x, fmt, True))
    # saturation: nothing finite becomes NaN or Inf
    finite_in = np.isfinite(x) | np.isinf(x)
    assert np.all(np.isfinite(nx.encode(x, fmt)[finite_in].astype(np.float32)))


@pytest.mark.parametrize("saturate", [1, 0])
@pytest.mark.parametrize("fmt", FORMATS, ids=str)
def test_cpp_encode_all_float16(fmt, saturate, library):
    x = np.arange(65536, dtype=np.uint32).astype(np.uint16).view(np.float16)
    got = _cpp_quantize(x, fmt, library, saturate)
    want = _ml_dtypes_encode(x, fmt, bool(saturate))
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, f"{bad.size} float16 inputs differ, e.g. {x[bad[:4]]} -> {got[bad[:4]]} != {want[bad[:4]]}"


@pytest.mark.parametrize("saturate", [1, 0])
@pytest.mark.parametrize("fmt", FORMATS, ids=str)
def test_cpp_encode_float32_samples(fmt, saturate, library, rng):
    random_bits = rng.integers(0, 2**32, size=1_000_000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    near_range = (rng.standard_normal(200_000) * fmt.max / 4).astype(np.float32)
    tiny = (rng.standard_normal(50_000) * 2.0**-12).astype(np.float32)
    x = np.concatenate([_special_float32(), random_bits, near_range, tiny])
    got = _cpp_quantize(x, fmt, library, saturate)
    want = _ml_dtypes_encode(x, fmt, bool(saturate))
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, f"{bad.size} float32 inputs differ, e.g. {x[bad[:4]]!r} -> {got[bad[:4]]} != {want[bad[:4]]}"


@pytest.mark.parametrize("fmt", FORMATS, ids=str)
def test_cpp_encode_bfloat16(fmt, library):
    x = np.arange(65536, dtype=np.uint32).astype(np.uint16).view(ml_dtypes.bfloat16)
    got = _cpp_quantize(x, fmt, library)
    want = _ml_dtypes_encode(x.astype(np.float32), fmt, True)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("fmt", FORMATS, ids=str)
def test_cpp_quantize_with_scale(fmt, library, rng):
    x = (rng.standard_normal(100_000) * 300).astype(np.float32)
    scale = np.float32(rng.uniform(0.01, 3.0))
    got = _cpp_quantize(x, fmt, library, scale=float(scale))
    want = reference.fp8_quantize(x, scale, output_dtype=fmt.onnx_type).view(np.uint8)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("out_type", [TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.BFLOAT16])
@pytest.mark.parametrize("fmt", FORMATS, ids=str)
def test_cpp_decode_every_code(fmt, out_type, library, rng):
    codes = np.arange(256, dtype=np.uint8).view(fmt.dtype)
    scale = np.float32(rng.uniform(0.01, 4.0))
    model = ops.make_op_model("FP8Dequantize", {"X": codes, "scale": scale}, output_dtype=out_type)
    got = run_poisoned(model, {"X": codes}, codes.shape, out_type, library)
    want = reference.fp8_dequantize(codes, scale, output_dtype=out_type)
    np.testing.assert_array_equal(got.astype(np.float64), want.astype(np.float64))


def test_quantize_dequantize_helpers():
    x = np.array([0.0, 1.0, -3.0, 1e6, np.nan], dtype=np.float32)
    q = nx.quantize(x, 0.5)
    assert q.dtype == nx.E4M3FN.dtype
    np.testing.assert_array_equal(nx.dequantize(q, 0.5)[:4], [0.0, 1.0, -3.0, 224.0])
    assert np.isnan(nx.dequantize(q, 0.5)[4])
    assert nx.compute_scale(np.float32(0.0)) == 1.0
    assert nx.compute_scale(np.float32(896.0)) == 2.0
    assert nx.get_format("float8_e4m3fnuz") is nx.E4M3FNUZ
    with pytest.raises(ValueError, match="unknown FP8 format"):
        nx.get_format("e3m4")


def _pow2_ceil(amax: float, fp8_max: float) -> float:
    """The oracle: the smallest power of two >= amax / fp8_max in exact rational arithmetic, clamped to the normal
    float32 exponents [-126, 126]."""
    q = Fraction(amax) / Fraction(fp8_max)
    e = q.numerator.bit_length() - q.denominator.bit_length()  # 2^(e-1) < q < 2^(e+1)
    while Fraction(2) ** e < q:
        e += 1
    while Fraction(2) ** (e - 1) >= q:
        e -= 1
    return math.ldexp(1.0, min(max(e, -126), 126))


@pytest.mark.parametrize("fmt", FORMATS, ids=str)
def test_power_of_two_scale_exact_powers_and_neighbours(fmt):
    for k in range(-40, 41):
        at = np.float32(fmt.max * 2.0**k)  # exact: the quotient is 2^k, which stays
        assert nx.compute_scale(at, fmt, power_of_two=True) == np.float32(2.0**k)
        above, below = np.nextafter(at, np.float32(np.inf)), np.nextafter(at, np.float32(0))
        assert nx.compute_scale(above, fmt, power_of_two=True) == np.float32(2.0 ** (k + 1))
        assert nx.compute_scale(below, fmt, power_of_two=True) == np.float32(2.0**k)
    assert nx.compute_scale(np.float32(fmt.max * 1.5), fmt, power_of_two=True) == 2.0


@pytest.mark.parametrize("fmt", FORMATS, ids=str)
def test_power_of_two_scale_against_exact_oracle(fmt, rng):
    bits = rng.integers(1, 0x7F800000, 4000, dtype=np.uint32)  # every positive finite float32, subnormals included
    amax = np.concatenate([bits.view(np.float32), np.float32([1e-45, 1e-40, 1.1754944e-38, 3.4028235e38])])
    got = nx.compute_scale(amax, fmt, power_of_two=True)
    assert got.dtype == np.float32 and got.shape == amax.shape
    want = np.array([_pow2_ceil(float(a), fmt.max) for a in amax], dtype=np.float32)
    np.testing.assert_array_equal(got, want)
    assert np.all(np.frexp(got)[0] == 0.5) and np.all(got >= np.finfo(np.float32).tiny)  # normal powers of two
    big = amax >= fmt.max * 2.0**-126  # above the clamp, amax / scale fills the format's range without passing it
    ratio = amax[big].astype(np.float64) / got[big]
    assert np.all(ratio <= fmt.max) and np.all(ratio > fmt.max / 2)


def test_scale_of_a_tiny_amax_is_normal_and_its_values_still_fit():
    # amax / 448 underflows to a subnormal or zero below 448 * 2^-126; the scale stays at 2^-126 there
    tiny = np.float32(2.0**-126)
    amax = np.array([1e-45, 6e-43, 1e-40, 1e-38, 448 * 2.0**-126, 449 * 2.0**-126, 1.0], np.float32)
    for fmt in (nx.E4M3FN, nx.E4M3FNUZ, nx.E5M2):
        s = nx.compute_scale(amax, fmt)
        assert np.all(s >= tiny) and np.all(np.isfinite(np.float32(1.0) / s))
        above = amax.astype(np.float64) >= fmt.max * 2.0**-126
        np.testing.assert_array_equal(s[above], amax[above] / np.float32(fmt.max))
        np.testing.assert_array_equal(s[~above], np.full((~above).sum(), tiny))
        x = np.concatenate([amax, -amax])  # every value within its amax quantizes to a finite code, no NaN
        q = nx.dequantize(nx.quantize(x, np.concatenate([s, s]), fmt), np.concatenate([s, s]))
        assert np.all(np.isfinite(q)) and np.all(np.abs(q) <= np.abs(x) * 1.07 + float(tiny))


def test_power_of_two_scale_tiny_huge_and_degenerate():
    assert nx.compute_scale(np.float32(1e-45), power_of_two=True) == np.float32(2.0**-126)  # clamped to normal
    assert nx.compute_scale(np.float32(448 * 2.0**-126), power_of_two=True) == np.float32(2.0**-126)
    assert nx.compute_scale(np.float32(448 * 2.0**-125), power_of_two=True) == np.float32(2.0**-125)
    huge = np.finfo(np.float32).max
    assert nx.compute_scale(huge, power_of_two=True) == np.float32(2.0**120)  # 3.4e38 / 448 = 1.16 * 2^119
    assert nx.compute_scale(huge, nx.E5M2, power_of_two=True) == np.float32(2.0**113)
    for bad in (0.0, -0.0, -3.0, np.inf, -np.inf, np.nan):
        assert nx.compute_scale(np.float32(bad), power_of_two=True) == 1.0
    a = np.array([[0.0, 448.0, 449.0], [np.nan, 1.0, 896.0]], np.float32)
    got = nx.compute_scale(a, power_of_two=True)
    np.testing.assert_array_equal(got, np.float32([[1.0, 1.0, 2.0], [1.0, 2.0**-8, 2.0]]))
    assert got.shape == (2, 3) and got.dtype == np.float32
    np.testing.assert_array_equal(nx.compute_scale(a), np.where(a > 0, a / np.float32(448), 1).astype(np.float32))
    with pytest.raises(TypeError, match="power_of_two must be a bool"):
        nx.compute_scale(np.float32(1.0), nx.E4M3FN, "yes")


def test_power_of_two_scale_division_is_a_multiplication(rng):
    # why the option exists: x / s and x * (1 / s) are the same float32 for every x when s is a power of two
    bits = rng.integers(0, 2**32, 200_000, dtype=np.uint64).astype(np.uint32)
    x = bits.view(np.float32)
    for amax in (1e-38, 0.37, 3.0, 448.0, 5000.0, 3e38):
        s = nx.compute_scale(np.float32(amax), power_of_two=True)
        with np.errstate(over="ignore", invalid="ignore"):
            np.testing.assert_array_equal(x / s, x * (np.float32(1.0) / s))
