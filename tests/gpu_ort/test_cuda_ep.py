"""The custom-op library's GPU kernels inside onnxruntime-gpu's CUDAExecutionProvider (skipped without one).

Sessions refuse CPU fallback, so every com.fp8ort node must run on the GPU; results are checked against the
NumPy reference (the GPU accumulates in float32: high-precision outputs by SQNR, FP8 outputs byte-equal but for
rare one-step differences at rounding boundaries).
"""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto

from fp8ort import numerics as nx
from fp8ort import ops, reference

from .._util import activations, fp8_weights

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(
        "CUDAExecutionProvider" not in ort.get_available_providers(), reason="onnxruntime has no CUDAExecutionProvider"
    ),
]
E4M3 = TensorProto.FLOAT8E4M3FN


def _gpu_session(model, library):
    so = ort.SessionOptions()
    so.register_custom_ops_library(library)
    so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    return ort.InferenceSession(model.SerializeToString(), so, providers=["CUDAExecutionProvider"])


# Hopper's wgmma kernels keep ~14 bits while they accumulate (promoted to float32 every 128 of K), so more FP8 codes
# move by one step than with float32 accumulation, and a sum that nearly cancels can move further; its error stays
# below 2^-10 of sum_k |x_k w_k| (the bound the kernel tests in tests/gpu use, gpu_helpers.py).
WGMMA_OFF_MAX_FRACTION = 0.02
WGMMA_REL_TOL_OF_ABS_SUM = 2.0**-10


def _check(got, expected, fp8_tolerance=1e-3, abs_sum=None):
    """``abs_sum``: sum |x w| per output in Y's units, given when the GPU may accumulate with reduced precision."""
    assert got.shape == expected.shape and got.dtype == expected.dtype
    if nx.is_fp8(expected.dtype):
        a, e = got.view(np.uint8).astype(int).ravel(), expected.view(np.uint8).astype(int).ravel()
        off = np.flatnonzero(a != e)
        limit = WGMMA_OFF_MAX_FRACTION if abs_sum is not None else fp8_tolerance
        assert off.size <= max(1, limit * e.size), f"{off.size} of {e.size} FP8 bytes differ"
        far = off[np.abs(a[off] - e[off]) != 1]
        if abs_sum is None:
            assert far.size == 0, "an FP8 byte is off by more than one step"
        else:
            gv = got.ravel()[far].astype(np.float64)
            ev = expected.ravel()[far].astype(np.float64)
            tol = WGMMA_REL_TOL_OF_ABS_SUM * abs_sum.ravel()[far]
            assert np.all(np.abs(gv - ev) <= tol), f"FP8 bytes off by more than the wgmma error bound at {far[:8]}"
    else:
        assert nx.sqnr_db(expected.astype(np.float64), got.astype(np.float64)) >= 40.0


def _abs_sum_conv(inputs, attrs):
    """sum_k |x_k w_k| * x_scale * w_scale per output of an FP8Conv (float64), for _check's wgmma bound."""
    qx = nx.quantize(inputs["X"], inputs["x_scale"], nx.E4M3FN)
    abs_x = (qx.view(np.uint8) & 0x7F).view(qx.dtype)
    abs_w = (inputs["W"].view(np.uint8) & 0x7F).view(inputs["W"].dtype)
    attrs = {k: v for k, v in attrs.items() if k != "activation"}
    return reference.fp8_conv(abs_x, abs_w, inputs["x_scale"], inputs["w_scale"], **attrs).astype(np.float64)


@pytest.mark.parametrize("out_type", [TensorProto.FLOAT, TensorProto.FLOAT16, E4M3])
@pytest.mark.parametrize("shape", [(1, 56, 56, 64, 64, 3, 1), (2, 17, 13, 3, 10, 7, 2), (4, 14, 14, 32, 32, 3, 1)])
def test_conv_nhwc_on_cuda_ep(shape, out_type, rng, library):
    n, h, w, c, m, k, stride = shape
    x = activations(rng, (n, h, w, c), 0.05, np.float32)
    wq, ws = fp8_weights(rng, (m, c, k, k))
    pad = k // 2
    inputs = {
        "X": x,
        "W": wq,
        "x_scale": np.float32(0.05),
        "w_scale": ws,
        "B": rng.standard_normal(m).astype(np.float32),
    }
    attrs = dict(strides=[stride, stride], pads=[pad] * 4, layout="NHWC", activation="Relu")
    probe = reference.fp8_conv(**inputs, **attrs)
    if nx.is_fp8(out_type):
        inputs["y_scale"] = np.float32(np.abs(probe).max() / 300 + 1e-3)
    model = ops.make_op_model("FP8Conv", inputs, output_dtype=out_type, **attrs)
    got = ops.run(_gpu_session(model, library), {"X": x})[0]
    abs_sum = _abs_sum_conv(inputs, attrs)  # the CUDA EP may pick the sm90a wgmma kernel
    if nx.is_fp8(out_type):
        abs_sum = abs_sum / inputs["y_scale"]
    _check(got, reference.fp8_conv(**inputs, output_dtype=out_type, **attrs), abs_sum=abs_sum)


@pytest.mark.parametrize("rows", [1, 7, 256])
def test_matmul_on_cuda_ep(rows, rng, library):
    a = activations(rng, (rows, 320), 0.05, np.float16)
    b, bs = fp8_weights(rng, (100, 320), axis=0)
    inputs = {
        "A": a,
        "B": b,
        "a_scale": np.float32(0.05),
        "b_scale": bs,
        "Z": rng.standard_normal((rows, 100)).astype(np.float16),
    }
    model = ops.make_op_model("FP8MatMul", inputs, graph_inputs=["A"], output_dtype=TensorProto.FLOAT16, transB=1)
    got = ops.run(_gpu_session(model, library), {"A": a})[0]
    _check(got, reference.fp8_matmul(**inputs, output_dtype=TensorProto.FLOAT16, transB=1))


@pytest.mark.parametrize("k", [512, 520], ids=["k512_blaslt", "k520_fallback"])
def test_large_matmul_on_cuda_ep(k, rng, library):
    """M*N*K >= 2^26: under FP8ORT_GEMM_BACKEND=auto (the CUDA build's default) K=512 takes the cuBLASLt route where
    it is available, and K=520 (not a multiple of 16) is refused by it and falls back to fp8ort's own GEMM without an
    error; with FP8ORT_GEMM_BACKEND=ours both run fp8ort's GEMM. Both must match the reference."""
    rows, n = 512, 512
    a = activations(rng, (rows, k), 0.05, np.float16)
    b, bs = fp8_weights(rng, (n, k), axis=0)
    inputs = {
        "A": a,
        "B": b,
        "a_scale": np.float32(0.05),
        "b_scale": bs,
        "C": rng.standard_normal(n).astype(np.float32),
    }
    attrs = dict(output_dtype=TensorProto.FLOAT16, transB=1, activation="Relu")
    model = ops.make_op_model("FP8MatMul", inputs, graph_inputs=["A"], **attrs)
    got = ops.run(_gpu_session(model, library), {"A": a})[0]
    _check(got, reference.fp8_matmul(**inputs, **attrs))


def test_quantize_dequantize_on_cuda_ep(rng, library):
    x = (rng.standard_normal(100_003) * 500).astype(np.float32)
    scale = np.float32(0.7)
    q = ops.run(_gpu_session(ops.make_op_model("FP8Quantize", {"X": x, "scale": scale}), library), {"X": x})[0]
    np.testing.assert_array_equal(q.view(np.uint8), reference.fp8_quantize(x, scale).view(np.uint8))
    d = ops.run(_gpu_session(ops.make_op_model("FP8Dequantize", {"X": q, "scale": scale}), library), {"X": q})[0]
    np.testing.assert_array_equal(d, reference.fp8_dequantize(q, scale))


def test_nchw_is_refused_with_a_clear_error(rng, library):
    x = activations(rng, (1, 8, 6, 6), 0.05, np.float32)
    wq, ws = fp8_weights(rng, (8, 8, 3, 3))
    model = ops.make_op_model("FP8Conv", {"X": x, "W": wq, "x_scale": np.float32(0.05), "w_scale": ws})
    with pytest.raises(Exception, match="NHWC"):
        ops.run(_gpu_session(model, library), {"X": x})
