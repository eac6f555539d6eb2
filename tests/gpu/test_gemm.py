"""FP8 GEMM kernels (portable mma.sync/MFMA/WMMA and the sm90a wgmma kernel) against fp8ort.reference."""

from __future__ import annotations

import numpy as np
import pytest
from gpu_helpers import EpilogueCase, check_output, np_dtype, random_activation, random_weight
from onnx import TensorProto

from fp8ort import numerics as nx
from fp8ort import reference as ref

F32, F16, BF16, E4M3, E5M2 = (
    TensorProto.FLOAT,
    TensorProto.FLOAT16,
    TensorProto.BFLOAT16,
    TensorProto.FLOAT8E4M3FN,
    TensorProto.FLOAT8E5M2,
)
SHAPES = [
    (1, 1, 1),
    (1, 8, 16),
    (3, 5, 7),
    (17, 33, 64),
    (128, 256, 128),
    (129, 257, 160),
    (256, 512, 1024),
    (300, 1000, 520),
    (1000, 96, 33),
    (64, 64, 4096),
    (2, 3000, 1536),
    (777, 1500, 2048),
]
# (per_channel, bias, z_type, z_scaled, relu, y_type)
EPILOGUES = [
    (True, True, None, False, False, F32),
    (True, False, F16, False, True, F16),
    (False, True, E4M3, True, True, E4M3),
    (True, True, F32, True, False, BF16),
    (True, True, None, False, True, E4M3),
    (False, False, None, False, False, F32),
]


def run_gemm(gpu, fmt, m, n, k, epi_cfg, trans_b, kernel, seed=None):
    lib, rt = gpu
    rng = np.random.default_rng(seed)
    x_scale = 0.02
    a = random_activation(rng, (m, k), fmt, x_scale)
    w_nk, w_scale = random_weight(rng, n, (n, k), fmt)
    w = w_nk if trans_b else np.ascontiguousarray(w_nk.T)
    per_channel, bias, z_type, z_scaled, relu, y_type = epi_cfg
    epi = EpilogueCase(
        rng,
        rt,
        fmt,
        n,
        (m, n),
        per_channel=per_channel,
        bias=bias,
        z_type=z_type,
        z_scaled=z_scaled,
        relu=relu,
        y_type=y_type,
        x_scale=x_scale,
        w_scale=w_scale,
    )
    want = ref.fp8_matmul(a, w, np.float32(x_scale), epi.w_scale, epi.bias, transB=trans_b, **epi.reference_kwargs())

    # A: quantized on the GPU (the op's high-precision input path), weight packed once
    d_a32 = rt.to_device(a)
    d_a8 = rt.poisoned(m * k)
    assert lib.fp8ort_quantize(d_a32, F32, epi.struct.x_scale, d_a8, fmt.onnx_type, m * k, 1, None) == 0
    d_w = rt.to_device(w.view(np.uint8))
    d_packed = rt.poisoned(lib.fp8ort_gemm_packed_bytes(n, k))
    st = lib.fp8ort_gemm_pack_weight(d_w, int(trans_b), k, n, d_packed, None)
    assert st == 0, lib.fp8ort_gpu_last_error()
    out_t = np_dtype(y_type)
    d_y = rt.poisoned(m * n * out_t.itemsize)
    lib.fp8ort_gemm_set_kernel_override(kernel)
    try:
        name = lib.fp8ort_gemm_kernel_name(fmt.onnx_type, m, n, k).decode()
        st = lib.fp8ort_gemm(d_a8, d_packed, fmt.onnx_type, m, n, k, epi.struct, d_y, None)
        assert st == 0, lib.fp8ort_gpu_last_error()
        got = rt.from_device(d_y, (m, n), out_t)
    finally:
        lib.fp8ort_gemm_set_kernel_override(0)
    abs_sum = None
    if name.startswith("wgmma"):  # error model of the reduced-precision accumulator: sum_k |a_k b_k| in Y's units
        qa = np.abs(nx.quantize(a, np.float32(x_scale), fmt).astype(np.float64))
        abs_sum = (qa @ np.abs(w_nk.astype(np.float64)).T) * x_scale * np.broadcast_to(epi.w_scale, (n,))
        if epi.y_scale is not None:
            abs_sum = abs_sum / epi.y_scale
    return got, want, name, abs_sum


@pytest.mark.parametrize("kernel", [0, 1, 3], ids=["auto", "portable", "fast_accum"])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_gemm_shapes(gpu, shape, kernel):
    m, n, k = shape
    lib, _ = gpu
    if kernel == 3 and not lib.fp8ort_gemm_kernel_name(nx.E4M3FN.onnx_type, m, n, k).startswith(b"wgmma"):
        pytest.skip("no sm90a kernel for this device or shape")
    for i, cfg in enumerate(EPILOGUES[:2] if m * n * k > 1e8 else EPILOGUES):
        got, want, name, abs_sum = run_gemm(gpu, nx.E4M3FN, m, n, k, cfg, trans_b=(i % 2 == 1), kernel=kernel)
        print(shape, name, cfg, check_output(got, want, cfg[-1], f"{name} {shape} {cfg}", abs_sum=abs_sum))


@pytest.mark.parametrize("fmt", [nx.E4M3FN, nx.E5M2], ids=str)
@pytest.mark.parametrize("y_type", [F32, F16, BF16, E4M3, E5M2], ids=["f32", "f16", "bf16", "e4m3", "e5m2"])
@pytest.mark.parametrize("kernel", [0, 1], ids=["auto", "portable"])
def test_gemm_output_types(gpu, fmt, y_type, kernel):
    for z_type in (None, F16, E5M2):
        cfg = (True, True, z_type, z_type is not None, True, y_type)
        got, want, name, abs_sum = run_gemm(gpu, fmt, 200, 264, 320, cfg, trans_b=False, kernel=kernel)
        check_output(got, want, y_type, f"{name} {fmt} {cfg}", abs_sum=abs_sum)


def test_gemm_refuses_bad_arguments(gpu):
    lib, rt = gpu
    d = rt.alloc(1024)
    epi = EpilogueCase(
        np.random.default_rng(0),
        rt,
        nx.E4M3FN,
        4,
        (4, 4),
        per_channel=True,
        bias=False,
        z_type=None,
        z_scaled=False,
        relu=False,
        y_type=E4M3,
        x_scale=1.0,
        w_scale=np.ones(4, np.float32),
    )
    assert lib.fp8ort_gemm(d, d, F32, 4, 4, 4, epi.struct, d, None) == 1  # A format not FP8
    assert lib.fp8ort_gemm(d, d, nx.E4M3FN.onnx_type, 4, 0, 4, epi.struct, d, None) == 1
    assert lib.fp8ort_gemm(d, d, nx.E4M3FN.onnx_type, 4, 5, 4, epi.struct, d, None) == 1  # w_scale count 4 != 5
    assert b"w_scale" in lib.fp8ort_gpu_last_error()
    epi.struct.y_scale = None
    assert lib.fp8ort_gemm(d, d, nx.E4M3FN.onnx_type, 4, 4, 4, epi.struct, d, None) == 1
    assert b"y_scale" in lib.fp8ort_gpu_last_error()
