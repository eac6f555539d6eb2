"""FP8 quantize/dequantize/amax kernels against fp8ort.numerics, bit for bit."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from onnx import TensorProto

from fp8ort import numerics as nx
from fp8ort import reference as ref

FORMATS = [nx.E4M3FN, nx.E5M2, nx.E4M3FNUZ, nx.E5M2FNUZ]
HP = {
    np.dtype(np.float32): TensorProto.FLOAT,
    np.dtype(np.float16): TensorProto.FLOAT16,
    np.dtype(ml_dtypes.bfloat16): TensorProto.BFLOAT16,
}


def run_quantize(gpu, x: np.ndarray, scale: float, fmt: nx.FP8Format, saturate: int = 1) -> np.ndarray:
    lib, rt = gpu
    dx = rt.to_device(x)
    ds = rt.to_device(np.array([scale], np.float32))
    dy = rt.poisoned(x.size, 0x55)
    st = lib.fp8ort_quantize(dx, HP[x.dtype], ds, dy, fmt.onnx_type, x.size, saturate, None)
    assert st == 0, lib.fp8ort_gpu_last_error()
    return rt.from_device(dy, x.shape, np.uint8)


def expected_bits(x: np.ndarray, scale: float, fmt: nx.FP8Format, saturate: int = 1) -> np.ndarray:
    return ref.fp8_quantize(x, np.float32(scale), output_dtype=fmt.onnx_type, saturate=saturate).view(np.uint8)


def assert_bits_equal(got: np.ndarray, want: np.ndarray, x: np.ndarray) -> None:
    bad = np.flatnonzero(got != want)
    if bad.size:
        i = bad[:8]
        raise AssertionError(
            f"{bad.size} of {got.size} codes differ; inputs {x.ravel()[i]!r} "
            f"(bits {x.ravel()[i].view(np.uint16 if x.itemsize == 2 else np.uint32)}) "
            f"got {got.ravel()[i]} want {want.ravel()[i]}"
        )


def midpoints(fmt: nx.FP8Format) -> np.ndarray:
    """Every tie between neighbouring finite codes, and one float32 step either side of it."""
    codes = np.arange(256, dtype=np.uint8).view(fmt.dtype).astype(np.float64)
    vals = np.unique(codes[np.isfinite(codes)])
    mids = ((vals[1:] + vals[:-1]) / 2).astype(np.float32)
    ups = np.nextafter(mids, np.float32(np.inf))
    downs = np.nextafter(mids, np.float32(-np.inf))
    return np.concatenate([mids, ups, downs, vals.astype(np.float32)])


@pytest.mark.parametrize("fmt", FORMATS, ids=str)
@pytest.mark.parametrize("scale", [1.0, 0.3711])
def test_quantize_all_float16(gpu, fmt, scale):
    x = np.arange(65536, dtype=np.uint16).view(np.float16)
    assert_bits_equal(run_quantize(gpu, x, scale, fmt), expected_bits(x, scale, fmt), x)


@pytest.mark.parametrize("fmt", FORMATS, ids=str)
def test_quantize_all_bfloat16(gpu, fmt):
    x = np.arange(65536, dtype=np.uint16).view(ml_dtypes.bfloat16)
    assert_bits_equal(run_quantize(gpu, x, 2.5, fmt), expected_bits(x, 2.5, fmt), x)


@pytest.mark.parametrize("fmt", FORMATS, ids=str)
# 1e-12 and 1e12 divide through the prepared reciprocal (|scale| in [2^-40, 2^40]), 5e-13 and 2e12 exactly; powers
# of two (power_of_two_scales) on either side of that range and at the edges of float32's normal range (2^-127 and
# 2^127: themselves or their reciprocal subnormal)
@pytest.mark.parametrize(
    "scale", [1.0, 0.0173, 3.0, 1e-12, 5e-13, 1e12, 2e12, 0.125, 2.0**-60, 2.0**-126, 2.0**126, 2.0**-127, 2.0**127]
)
def test_quantize_float32_samples(gpu, fmt, scale):
    rng = np.random.default_rng()
    random_bits = rng.integers(0, 2**32, size=600_000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    in_range = rng.standard_normal(300_000) * fmt.max * scale * rng.choice([1e-6, 1e-3, 0.1, 1, 3], 300_000)
    with np.errstate(all="ignore"):  # past float32 for the largest scales: infinities, which are inputs too
        in_range = in_range.astype(np.float32)
        ties = midpoints(fmt) * np.float32(scale)
    special = np.array(
        [
            0.0,
            -0.0,
            np.inf,
            -np.inf,
            np.nan,
            -np.nan,
            fmt.max,
            -fmt.max,
            fmt.max * 1.0625,
            np.finfo(np.float32).max,
            np.finfo(np.float32).tiny,
            1e-45,
            -1e-45,
        ],
        np.float32,
    )
    nan_payloads = np.array([0x7F800001, 0xFF800001, 0x7FBFFFFF, 0x7FC00001], np.uint32).view(np.float32)
    with np.errstate(all="ignore"):
        x = np.concatenate(
            [random_bits, in_range, ties, -ties, special, special * np.float32(scale), nan_payloads]
        ).astype(np.float32)
        assert_bits_equal(run_quantize(gpu, x, scale, fmt), expected_bits(x, scale, fmt), x)


@pytest.mark.parametrize("fmt", FORMATS, ids=str)
def test_quantize_without_saturation(gpu, fmt):
    x = np.arange(65536, dtype=np.uint16).view(np.float16)
    with np.errstate(all="ignore"):
        assert_bits_equal(run_quantize(gpu, x, 1.0, fmt, 0), expected_bits(x, 1.0, fmt, 0), x)


@pytest.mark.parametrize("fmt", FORMATS, ids=str)
@pytest.mark.parametrize("out", [np.float32, np.float16, ml_dtypes.bfloat16], ids=["f32", "f16", "bf16"])
def test_dequantize_all_codes(gpu, fmt, out):
    lib, rt = gpu
    codes = np.tile(np.arange(256, dtype=np.uint8), 3)
    scale = np.float32(0.7)
    want = ref.fp8_dequantize(codes.view(fmt.dtype), scale, output_dtype=HP[np.dtype(out)])
    dx, ds = rt.to_device(codes), rt.to_device(np.array([scale], np.float32))
    dy = rt.poisoned(codes.size * np.dtype(out).itemsize)
    st = lib.fp8ort_dequantize(dx, fmt.onnx_type, ds, dy, HP[np.dtype(out)], codes.size, None)
    assert st == 0, lib.fp8ort_gpu_last_error()
    got = rt.from_device(dy, codes.shape, out)
    g, w = got.astype(np.float32), want.astype(np.float32)
    assert np.array_equal(np.isnan(g), np.isnan(w))
    ok = ~np.isnan(w)
    assert np.array_equal(g[ok].view(np.uint32), w[ok].view(np.uint32))


@pytest.mark.parametrize("dtype", [np.float32, np.float16, ml_dtypes.bfloat16], ids=["f32", "f16", "bf16"])
@pytest.mark.parametrize("n", [1, 1000, 3_000_001])
def test_amax(gpu, dtype, n):
    lib, rt = gpu
    rng = np.random.default_rng()
    x = (rng.standard_normal(n) * 100).astype(dtype)
    x[rng.integers(0, n)] = -700
    out = rt.poisoned(4)
    assert lib.fp8ort_amax(rt.to_device(x), HP[np.dtype(dtype)], n, out, None) == 0
    assert rt.from_device(out, (1,), np.float32)[0] == np.max(np.abs(x.astype(np.float32)))
    x[n // 2] = np.nan
    assert lib.fp8ort_amax(rt.to_device(x), HP[np.dtype(dtype)], n, out, None) == 0
    assert np.isnan(rt.from_device(out, (1,), np.float32)[0])


def test_bad_arguments_are_refused(gpu):
    lib, rt = gpu
    d = rt.alloc(16)
    assert lib.fp8ort_quantize(d, TensorProto.INT8, d, d, nx.E4M3FN.onnx_type, 4, 1, None) == 1
    assert b"int" in lib.fp8ort_gpu_last_error() or b"float32" in lib.fp8ort_gpu_last_error()
    assert lib.fp8ort_quantize(d, TensorProto.FLOAT, d, d, TensorProto.FLOAT, 4, 1, None) == 1
    assert lib.fp8ort_dequantize(d, TensorProto.FLOAT, d, d, TensorProto.FLOAT, 4, None) == 1
    assert lib.fp8ort_quantize(None, TensorProto.FLOAT, d, d, nx.E4M3FN.onnx_type, 4, 1, None) == 1
    assert lib.fp8ort_quantize(d, TensorProto.FLOAT, d, d, nx.E4M3FN.onnx_type, 0, 1, None) == 0
    assert lib.fp8ort_gpu_last_error() == b""


@pytest.mark.parametrize("fmt", [nx.E4M3FN, nx.E5M2FNUZ], ids=str)
@pytest.mark.parametrize(
    "c, c_out, src",
    [(3, 16, np.float32), (3, 16, np.float16), (5, 8, "fp8"), (20, 32, np.float32), (3, 6, np.float32)],
    ids=["rgb_f32", "rgb_f16", "fp8_copy", "c20", "bytes_path"],
)
def test_quantize_padded(gpu, fmt, c, c_out, src):
    """Channels-last input padded with zero channels (the word-store path for c_out % 4 == 0, else bytes)."""
    lib, rt = gpu
    rng = np.random.default_rng()
    pixels = 1037
    x = (rng.standard_normal((pixels, c)) * 300).astype(np.float32)  # values past the FP8 range too
    x.ravel()[:3] = [np.nan, np.inf, -0.0]
    scale = 0.75
    if src == "fp8":
        codes = rng.integers(0, 256, (pixels, c), dtype=np.uint8)
        want_rows, x_dev, x_type = codes, rt.to_device(codes), fmt.onnx_type
    else:
        x = x.astype(src)
        want_rows = expected_bits(x, scale, fmt)
        x_dev, x_type = rt.to_device(x), HP[x.dtype]
    want = np.zeros((pixels, c_out), np.uint8)
    want[:, :c] = want_rows
    dy = rt.poisoned(pixels * c_out, 0x55)
    ds = rt.to_device(np.array([scale], np.float32))
    st = lib.fp8ort_quantize_padded(x_dev, x_type, ds, dy, fmt.onnx_type, pixels, c, c_out, None)
    assert st == 0, lib.fp8ort_gpu_last_error()
    got = rt.from_device(dy, (pixels, c_out), np.uint8)
    assert_bits_equal(got, want, want)


@pytest.mark.parametrize("fmt", FORMATS, ids=str)
@pytest.mark.parametrize("saturate", [1, 0])
@pytest.mark.parametrize("dtype", [np.float32, np.float16, ml_dtypes.bfloat16], ids=["f32", "f16", "bf16"])
def test_quantize_quads_and_tail(gpu, fmt, saturate, dtype):
    """4 codes per thread plus a tail of count % 4 (1031 values: past the range, NaN, infinities, signed zeros)."""
    rng = np.random.default_rng()
    x = (rng.standard_normal(1031) * rng.choice([1e-3, 1.0, 500.0, 7e4], 1031)).astype(np.float32)
    x[[0, 5, 1029, 1030]] = [np.nan, -np.inf, -0.0, np.inf]
    x = x.astype(dtype)
    scale = 0.61
    assert_bits_equal(run_quantize(gpu, x, scale, fmt, saturate), expected_bits(x, scale, fmt, saturate), x)
