"""Helpers shared by the kernel tests: runs with poisoned outputs, random inputs past the FP8 range."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
from onnx import TensorProto

from fp8ort import numerics as nx
from fp8ort import ops

HP_TYPES = {TensorProto.FLOAT: np.float32, TensorProto.FLOAT16: np.float16, TensorProto.BFLOAT16: nx.HIGH_PRECISION[16]}


def poisoned(shape, onnx_type: int) -> tuple[np.ndarray, ort.OrtValue]:
    """An output buffer full of NaN bytes (0xFF) and an OrtValue over it: any element the kernel skips is caught.

    The caller keeps the NumPy buffer alive and reads the result from it.
    """
    if nx.is_fp8(onnx_type):
        raw = np.full(shape, 0xFF, dtype=np.uint8)
    elif onnx_type == TensorProto.BFLOAT16:
        raw = np.full(shape, 0xFFFF, dtype=np.uint16)
    else:
        raw = np.full(shape, np.nan, dtype=HP_TYPES[onnx_type])
    return raw, ort.OrtValue.ortvalue_from_numpy_with_onnx_type(raw, onnx_type)


def run_poisoned(model, feeds: dict, out_shape, out_type: int, library: str, threads: int = 2) -> np.ndarray:
    """Runs a one-output model with its output bound to a poisoned buffer; returns what the kernel wrote there."""
    sess = ops.session(model, library, threads=threads)
    binding = sess.io_binding()
    keep = []
    for name, value in feeds.items():
        value = np.ascontiguousarray(value)
        keep.append(value)
        binding.bind_ortvalue_input(name, ops.to_ort_value(value))
    raw, out = poisoned(list(out_shape), out_type)
    binding.bind_ortvalue_output("Y", out)
    sess.run_with_iobinding(binding)
    if nx.is_fp8(out_type):
        return raw.view(nx.get_format(out_type).dtype)
    return raw.view(HP_TYPES[out_type])


def activations(rng: np.random.Generator, shape, scale: float, dtype, outliers: bool = True) -> np.ndarray:
    """Random activations; a few lie far past the FP8 range of ``scale`` (they must saturate)."""
    x = rng.standard_normal(shape).astype(np.float32) * np.float32(scale * 60)
    if outliers:
        mask = rng.random(shape) < 0.03
        x[mask] *= 100.0
    return x.astype(dtype)


def fp8_weights(rng: np.random.Generator, shape, fmt=nx.E4M3FN, axis: int = 0):
    """Random FP8 weights with per-channel scales along ``axis`` (one channel all zero, as real models have)."""
    w = rng.standard_normal(shape).astype(np.float32)
    index = [slice(None)] * len(shape)
    index[axis] = 0
    w[tuple(index)] = 0.0
    reduce_axes = tuple(i for i in range(len(shape)) if i != axis)
    amax = np.abs(w).max(axis=reduce_axes)
    scale = nx.compute_scale(amax, fmt)
    bshape = [1] * len(shape)
    bshape[axis] = -1
    return nx.quantize(w, scale.reshape(bshape), fmt), scale


def assert_matches(actual: np.ndarray, expected: np.ndarray, min_sqnr: float = 40.0) -> None:
    """FP8 outputs: identical bytes. High precision: SQNR >= min_sqnr dB and, the CPU sums being exact, equality."""
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    if nx.is_fp8(expected.dtype):
        diff = np.flatnonzero(actual.view(np.uint8) != expected.view(np.uint8))
        assert diff.size == 0, f"{diff.size} of {expected.size} FP8 bytes differ, first at {diff[:5]}"
        return
    a = actual.astype(np.float64)
    e = expected.astype(np.float64)
    finite = np.isfinite(e)
    assert np.array_equal(np.isnan(a), np.isnan(e)), "NaN positions differ"
    sqnr = nx.sqnr_db(e[finite], a[finite])
    assert sqnr >= min_sqnr, f"SQNR {sqnr:.1f} dB < {min_sqnr} dB"
    np.testing.assert_array_equal(a, e)
