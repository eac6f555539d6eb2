"""FP8 formats and the quantize/dequantize semantics shared by every fp8ort op.

``q(x, s) = saturate(round_to_nearest_even(x / s))`` into the FP8 format, ``deq(v, s) = float(v) * s``.
The division is done in float32 (like the kernels), rounding and saturation follow ``ml_dtypes``
after clipping to the format's largest finite value, so NaN stays NaN and ±Inf becomes ±max.
"""

from __future__ import annotations

import dataclasses

import ml_dtypes
import numpy as np
from onnx import TensorProto

ArrayLike = np.ndarray | float


@dataclasses.dataclass(frozen=True)
class FP8Format:
    """One FP8 encoding: its name, NumPy dtype, ONNX element type and largest finite value."""

    name: str
    dtype: np.dtype
    onnx_type: int
    max: float
    exponent_bits: int
    mantissa_bits: int

    def __str__(self) -> str:
        return self.name


E4M3FN = FP8Format("e4m3fn", np.dtype(ml_dtypes.float8_e4m3fn), TensorProto.FLOAT8E4M3FN, 448.0, 4, 3)
E5M2 = FP8Format("e5m2", np.dtype(ml_dtypes.float8_e5m2), TensorProto.FLOAT8E5M2, 57344.0, 5, 2)
E4M3FNUZ = FP8Format("e4m3fnuz", np.dtype(ml_dtypes.float8_e4m3fnuz), TensorProto.FLOAT8E4M3FNUZ, 240.0, 4, 3)
E5M2FNUZ = FP8Format("e5m2fnuz", np.dtype(ml_dtypes.float8_e5m2fnuz), TensorProto.FLOAT8E5M2FNUZ, 57344.0, 5, 2)

FORMATS: dict[str, FP8Format] = {f.name: f for f in (E4M3FN, E5M2, E4M3FNUZ, E5M2FNUZ)}
_BY_ONNX = {f.onnx_type: f for f in FORMATS.values()}
_BY_DTYPE = {f.dtype: f for f in FORMATS.values()}

# High-precision ONNX element types the ops accept, and their NumPy dtypes.
HIGH_PRECISION = {
    TensorProto.FLOAT: np.dtype(np.float32),
    TensorProto.FLOAT16: np.dtype(np.float16),
    TensorProto.BFLOAT16: np.dtype(ml_dtypes.bfloat16),
}


def get_format(fmt: str | int | np.dtype | FP8Format) -> FP8Format:
    """Look a format up by name ("e4m3fn"), ONNX element type, NumPy dtype or the format itself."""
    if isinstance(fmt, FP8Format):
        return fmt
    if isinstance(fmt, str):
        key = fmt.lower().replace("float8", "").replace("_", "")
        if key in FORMATS:
            return FORMATS[key]
        raise ValueError(f"unknown FP8 format {fmt!r}; use one of {sorted(FORMATS)}")
    if isinstance(fmt, (int, np.integer)) and int(fmt) in _BY_ONNX:
        return _BY_ONNX[int(fmt)]
    try:
        dt = np.dtype(fmt)
    except TypeError:
        dt = None
    if dt is not None and dt in _BY_DTYPE:
        return _BY_DTYPE[dt]
    raise ValueError(f"{fmt!r} is not an FP8 format; use one of {sorted(FORMATS)}")


def is_fp8(dtype_or_onnx: np.dtype | int) -> bool:
    """True for an FP8 NumPy dtype or ONNX element type."""
    if isinstance(dtype_or_onnx, (int, np.integer)) and not isinstance(dtype_or_onnx, bool):
        return int(dtype_or_onnx) in _BY_ONNX
    try:
        return np.dtype(dtype_or_onnx) in _BY_DTYPE
    except TypeError:
        return False


def onnx_to_numpy_dtype(onnx_type: int) -> np.dtype:
    """NumPy dtype of an ONNX element type that the ops use."""
    if onnx_type in HIGH_PRECISION:
        return HIGH_PRECISION[onnx_type]
    if onnx_type in _BY_ONNX:
        return _BY_ONNX[onnx_type].dtype
    raise ValueError(f"ONNX element type {onnx_type} is not used by fp8ort ops")


def encode(x: ArrayLike, fmt: str | FP8Format = E4M3FN, *, saturate: bool = True) -> np.ndarray:
    """Round float values to the FP8 format (nearest, ties to even); saturate to ±max unless told not to."""
    f = get_format(fmt)
    a = np.asarray(x)
    if a.dtype not in (np.float32, np.float16, np.float64):
        a = a.astype(np.float32)
    if saturate:
        a = np.clip(a, -f.max, f.max)  # NaN passes through clip unchanged
    return a.astype(f.dtype)


def decode(v: np.ndarray) -> np.ndarray:
    """FP8 values to float32 (exact)."""
    return np.asarray(v).astype(np.float32)


def quantize(x: ArrayLike, scale: ArrayLike, fmt: str | FP8Format = E4M3FN) -> np.ndarray:
    """``q(x, s)``: float32 division by the scale, then round-to-nearest-even with saturation."""
    xs = np.asarray(x).astype(np.float32) / np.asarray(scale, dtype=np.float32)
    return encode(xs.astype(np.float32), fmt, saturate=True)


def dequantize(v: np.ndarray, scale: ArrayLike) -> np.ndarray:
    """``deq(v, s) = float(v) * s`` in float32."""
    return decode(v) * np.asarray(scale, dtype=np.float32)


def compute_scale(amax: ArrayLike, fmt: str | FP8Format = E4M3FN, power_of_two: bool = False) -> np.ndarray:
    """Scale mapping ``amax`` onto the format's largest finite value (``amax / max``); 1 where amax is 0, not
    finite or negative, and never below ``2^-126``, the smallest normal float32 (an amax under ``max * 2^-126``
    would give a subnormal or zero scale, which a division by it or a GPU's flush-to-zero turns into an infinity;
    its values still fit the format under the clamped scale, they only lose resolution).

    ``power_of_two``: the smallest power of two ``>= amax / max`` instead (a quotient that is one stays), kept
    within the normal float32 range ``[2^-126, 2^126]``: dividing by such a scale is exactly a multiplication by its
    reciprocal.
    """
    if not isinstance(power_of_two, (bool, np.bool_)):
        raise TypeError(f"power_of_two must be a bool, got {type(power_of_two).__name__}")
    f = get_format(fmt)
    a = np.asarray(amax, dtype=np.float32)
    ok = (a > 0) & np.isfinite(a)
    if not power_of_two:
        s = np.maximum(a / np.float32(f.max), np.float32(2.0**-126))
        return np.where(ok, s, np.float32(1.0)).astype(np.float32)
    # float64 quotient of a float32 amax: it rounds to a power of two only when the exact quotient is one
    mant, exp = np.frexp(np.where(ok, a, np.float32(1.0)).astype(np.float64) / f.max)  # q = mant * 2^exp
    exp = np.clip(np.where(mant == 0.5, exp - 1, exp), -126, 126)
    s = np.ldexp(np.float32(1.0), exp.astype(np.int32)).astype(np.float32)
    return np.where(ok, s, np.float32(1.0)).astype(np.float32)


def sqnr_db(reference: np.ndarray, actual: np.ndarray) -> float:
    """Signal-to-quantization-noise ratio of ``actual`` against ``reference`` in dB (inf when equal)."""
    ref = np.asarray(reference, dtype=np.float64)
    err = ref - np.asarray(actual, dtype=np.float64)
    noise = float(np.sum(err * err))
    signal = float(np.sum(ref * ref))
    if noise == 0.0:
        return float("inf")
    if signal == 0.0:
        return float("-inf")
    return 10.0 * np.log10(signal / noise)
