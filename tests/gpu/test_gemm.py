"""FP8 GEMM kernels (portable mma.sync/MFMA/WMMA, sm90a wgmma, the cuBLASLt route) against fp8ort.reference."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from gpu_helpers import (
    ACTIVATION_SPECS,
    EpilogueCase,
    activation_id,
    activation_kinks,
    activation_max_slope,
    check_output,
    np_dtype,
    random_activation,
    random_weight,
    spread_for_activation,
)
from gpu_lib import ACTIVATION_CODES
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
    (4100, 1000, 272),  # 528 tiles of 128 x 64: the streaming kernel's blocks walk two or more each
    (8200, 1000, 96),  # K <= 128 over 520 tiles of 128 x 128, N not a multiple of 64
    (8200, 60, 64),  # one partial tile column
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


OK, INVALID_ARGUMENT, UNSUPPORTED = 0, 1, 2


def run_gemm(
    gpu,
    fmt,
    m,
    n,
    k,
    epi_cfg,
    trans_b,
    kernel,
    seed=None,
    blaslt=False,
    skip_unsupported=False,
    activation=None,
    edit_a=None,
    y_scale=0.11,
):
    """One GEMM on random operands: (got, want, kernel name, abs_sum or None).

    ``blaslt``: through fp8ort_gemm_blaslt instead of fp8ort_gemm (``kernel`` unused); ``skip_unsupported``: skip
    the test when it answers FP8ORT_UNSUPPORTED; ``activation``: an (activation, alpha, beta) spec in place of the
    config's relu, with scales and bias chosen so that the pre-activation lies around the activation's kinks;
    ``edit_a``: a function that edits the float32 A before it is quantized (on the device and in the reference);
    ``y_scale``: Y's scale when Y is FP8.
    """
    lib, rt = gpu
    rng = np.random.default_rng(seed)
    x_scale = 0.02
    a = random_activation(rng, (m, k), fmt, x_scale)
    if edit_a is not None:
        a = edit_a(a)
    w_nk, w_scale = random_weight(rng, n, (n, k), fmt)
    w = w_nk if trans_b else np.ascontiguousarray(w_nk.T)
    per_channel, bias, z_type, z_scaled, relu, y_type = epi_cfg
    bias_values = None
    if activation is not None:
        probe = ref.fp8_matmul(a, w, np.float32(x_scale), w_scale, transB=trans_b)
        w_scale, bias_values = spread_for_activation(rng, probe, w_scale, activation, 1)
        bias_values = bias_values if bias else None
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
        activation=activation,
        bias_values=bias_values,
        y_scale=y_scale,
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
    if blaslt:
        name = "blaslt"
        ws = lib.fp8ort_gemm_blaslt_workspace_bytes(m, n, k)
        d_ws = rt.poisoned(ws)  # NaN float32 where cuBLASLt would leave D unwritten
        st = lib.fp8ort_gemm_blaslt(d_a8, d_packed, fmt.onnx_type, m, n, k, epi.struct, d_y, d_ws, ws, None)
        if st == UNSUPPORTED and skip_unsupported:
            pytest.skip(f"fp8ort_gemm_blaslt: {lib.fp8ort_gpu_last_error().decode()}")
        assert st == OK, lib.fp8ort_gpu_last_error()
        got = rt.from_device(d_y, (m, n), out_t)
    else:
        lib.fp8ort_gemm_set_kernel_override(kernel)
        try:
            name = lib.fp8ort_gemm_kernel_name(fmt.onnx_type, m, n, k).decode()
            ws = lib.fp8ort_gemm_workspace_bytes(fmt.onnx_type, m, n, k)
            if ws:  # split K: partial sums in poisoned scratch, then the epilogue kernel
                name += "+split_k"
                st = lib.fp8ort_gemm_ws(
                    d_a8, d_packed, fmt.onnx_type, m, n, k, epi.struct, d_y, rt.poisoned(ws), ws, None
                )
            else:
                st = lib.fp8ort_gemm(d_a8, d_packed, fmt.onnx_type, m, n, k, epi.struct, d_y, None)
            assert st == OK, lib.fp8ort_gpu_last_error()
            got = rt.from_device(d_y, (m, n), out_t)
        finally:
            lib.fp8ort_gemm_set_kernel_override(0)
    abs_sum = None
    if name.startswith("wgmma") or name == "blaslt":  # cuBLASLt's kernels are wgmma too on Hopper
        abs_sum = wgmma_abs_sum(nx.quantize(a, np.float32(x_scale), fmt), w_nk, epi)
    return got, want, name, abs_sum


def kernel_plan(lib, kernel: int, m: int, n: int, k: int) -> tuple[str, int]:
    """The kernel fp8ort_gemm takes for an E4M3FN problem under a kernel override, and its workspace bytes (split K)."""
    lib.fp8ort_gemm_set_kernel_override(kernel)
    try:
        name = lib.fp8ort_gemm_kernel_name(nx.E4M3FN.onnx_type, m, n, k).decode()
        return name, lib.fp8ort_gemm_workspace_bytes(nx.E4M3FN.onnx_type, m, n, k)
    finally:
        lib.fp8ort_gemm_set_kernel_override(0)


def wgmma_abs_sum(qa: np.ndarray, w_nk: np.ndarray, epi: EpilogueCase) -> np.ndarray:
    """Error model of a tensor-core accumulator that keeps fewer bits than float32 (wgmma): sum_k |a_k b_k| per
    output in Y's units, from A's FP8 codes ``qa`` [M, K] and the weight's ``w_nk`` [N, K], times the activation's
    largest slope (it can stretch the error this much)."""
    n = w_nk.shape[0]
    abs_sum = (np.abs(qa.astype(np.float64)) @ np.abs(w_nk.astype(np.float64)).T) * epi.x_scale
    abs_sum = abs_sum * np.broadcast_to(epi.w_scale, (n,))
    if epi.y_scale is not None:
        abs_sum = abs_sum / epi.y_scale
    return abs_sum * activation_max_slope(epi.activation)


@pytest.mark.parametrize(
    "kernel",
    [0, 1, 3, 4, 5, 6, 8],
    ids=["auto", "portable", "fast_accum", "sm90a_1block", "sm90a_2blocks", "sm90a_stream", "sm90a_stream_long"],
)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_gemm_shapes(gpu, shape, kernel):
    m, n, k = shape
    lib, _ = gpu
    if kernel >= 3 and not lib.fp8ort_gemm_kernel_name(nx.E4M3FN.onnx_type, m, n, k).startswith(b"wgmma"):
        pytest.skip("no sm90a kernel for this device or shape")
    for i, cfg in enumerate(EPILOGUES[:2] if m * n * k > 1e8 else EPILOGUES):
        got, want, name, abs_sum = run_gemm(gpu, nx.E4M3FN, m, n, k, cfg, trans_b=(i % 2 == 1), kernel=kernel)
        print(shape, name, cfg, check_output(got, want, cfg[-1], f"{name} {shape} {cfg}", abs_sum=abs_sum))


# The streaming kernel with one block per multiprocessor and 128 x 128 tiles (override 8) on shapes with enough
# tiles that K is not split, so that blocks walk several tiles: N past a multiple of the tile, K of 1 to 24 k-tiles.
@pytest.mark.parametrize(
    "shape",
    [(2048, 768, 1024), (2304, 520, 384), (8704, 136, 160), (4096, 256, 128), (4096, 768, 3072)],
    ids=lambda s: "x".join(map(str, s)),
)
def test_gemm_stream_long(gpu, shape):
    m, n, k = shape
    name, ws = kernel_plan(gpu[0], 8, m, n, k)
    if name != "wgmma_sm90a_stream_long":
        pytest.skip("no sm90a kernel for this device or shape")
    assert ws == 0, "these shapes have enough tiles that K is not split"
    for i, cfg in enumerate(EPILOGUES[:3]):
        got, want, name, abs_sum = run_gemm(gpu, nx.E4M3FN, m, n, k, cfg, trans_b=(i % 2 == 1), kernel=8)
        print(shape, name, cfg, check_output(got, want, cfg[-1], f"{name} {shape} {cfg}", abs_sum=abs_sum))


# Small M, long K: the sm90a kernel splits K over blocks (fp8ort_gemm_ws), float32 partial sums in scratch.
@pytest.mark.parametrize("kernel", [0, 3, 5, 6], ids=["auto", "fast_accum", "sm90a_2blocks", "sm90a_stream"])
@pytest.mark.parametrize(
    "shape", [(64, 64, 4096), (17, 256, 2048), (49, 512, 4608)], ids=lambda s: "x".join(map(str, s))
)
def test_gemm_split_k(gpu, shape, kernel):
    """Split K: the partial sums added in order by the epilogue pass (one row per thread and step, or four)."""
    m, n, k = shape
    name, ws = kernel_plan(gpu[0], kernel, m, n, k)
    if not name.startswith("wgmma"):
        pytest.skip("no sm90a kernel for this device or shape")
    assert ws >= 2 * m * n * 4, "these shapes leave most multiprocessors idle: the sm90a kernel should split K"
    for i, cfg in enumerate(EPILOGUES):
        got, want, name, abs_sum = run_gemm(gpu, nx.E4M3FN, m, n, k, cfg, trans_b=(i % 2 == 1), kernel=kernel)
        assert name.endswith("+split_k")
        check_output(got, want, cfg[-1], f"{name} {shape} {cfg}", abs_sum=abs_sum)


# FP8ORT_GEMM_KERNEL: the override for a library loaded by ORT (read once per process, hence a subprocess). It
# picks the variant where the sm90a kernel can run and falls back where it cannot (K % 16 != 0), where the explicit
# call fails instead; the results stay those of the reference either way.
ENV_OVERRIDE_SCRIPT = """
import sys
sys.path[:0] = [{gpu_dir!r}, {root!r}]
import numpy as np
from gpu_lib import Runtime, load_kernels
from test_gemm import EPILOGUES, run_gemm
from gpu_helpers import check_output
from fp8ort import numerics as nx
lib, rt = load_kernels({lib!r}), Runtime()
for m, n, k in [(8200, 1000, 96), (300, 50, 24)]:
    got, want, name, abs_sum = run_gemm((lib, rt), nx.E4M3FN, m, n, k, EPILOGUES[2], trans_b=False, kernel=0)
    check_output(got, want, EPILOGUES[2][-1], name, abs_sum=abs_sum)
    print(m, n, k, name)
"""


@pytest.mark.parametrize(
    "value, want", [("6", "wgmma_sm90a_stream"), ("5", "wgmma_sm90a_2blocks"), ("1", "mma_sync")], ids=str
)
def test_gemm_kernel_from_environment(gpu, kernels_path, value, want):
    lib, _ = gpu
    if not lib.fp8ort_gemm_kernel_name(nx.E4M3FN.onnx_type, 8200, 1000, 96).startswith(b"wgmma"):
        pytest.skip("no sm90a kernel on this device")
    here = Path(__file__).resolve().parent
    script = ENV_OVERRIDE_SCRIPT.format(gpu_dir=str(here), root=str(here.parents[1]), lib=str(kernels_path))
    env = dict(os.environ, FP8ORT_GEMM_KERNEL=value)
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.split("\n")
    assert any(line.startswith("8200 1000 96 ") and line.endswith(" " + want) for line in lines), out.stdout
    # K = 24: no TMA rows of 24 bytes, so every value falls back to the portable kernel
    assert any(line == "300 50 24 mma_sync" for line in lines), out.stdout


@pytest.mark.parametrize("fmt", [nx.E4M3FN, nx.E5M2], ids=str)
@pytest.mark.parametrize("y_type", [F32, F16, BF16, E4M3, E5M2], ids=["f32", "f16", "bf16", "e4m3", "e5m2"])
@pytest.mark.parametrize("kernel", [0, 1], ids=["auto", "portable"])
def test_gemm_output_types(gpu, fmt, y_type, kernel):
    for z_type in (None, F16, E5M2):
        cfg = (True, True, z_type, z_type is not None, True, y_type)
        got, want, name, abs_sum = run_gemm(gpu, fmt, 200, 264, 320, cfg, trans_b=False, kernel=kernel)
        check_output(got, want, y_type, f"{name} {fmt} {cfg}", abs_sum=abs_sum)


# ---- fused activations: every one through the tile epilogues (auto: sm90a on the H200; portable: mma.sync) and,
# for the long-K shape, the split-K epilogue kernel ----
ACTIVATION_SHAPES = [(129, 264, 320), (17, 256, 2048)]
ACTIVATION_EPILOGUES = [
    (True, True, None, False, False, F32),
    (True, True, E4M3, True, False, E4M3),
    (False, True, F16, False, False, F16),
]


@pytest.mark.parametrize("kernel", [0, 1], ids=["auto", "portable"])
@pytest.mark.parametrize("spec", ACTIVATION_SPECS, ids=activation_id)
def test_gemm_activations(gpu, spec, kernel):
    for shape in ACTIVATION_SHAPES:
        for i, cfg in enumerate(ACTIVATION_EPILOGUES):
            got, want, name, abs_sum = run_gemm(
                gpu, nx.E4M3FN, *shape, cfg, trans_b=(i % 2 == 1), kernel=kernel, activation=spec
            )
            print(
                shape,
                name,
                spec,
                cfg,
                check_output(got, want, cfg[-1], f"{name} {shape} {spec} {cfg}", abs_sum=abs_sum),
            )


# The small-K kernel on the vector units (override 7): K of 8..32, N not a multiple of 4 and above one 128-column
# block, M not a multiple of its row tiles; the output types it takes (the others fall back, unnamed).
SMALL_K = 7
SMALL_K_SHAPES = [(1000, 96, 16), (37, 16, 32), (300, 144, 24), (257, 200, 8), (64, 6, 16), (5000, 240, 32)]


@pytest.mark.parametrize("shape", SMALL_K_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_gemm_small_k(gpu, shape):
    lib, _ = gpu
    m, n, k = shape
    for i, cfg in enumerate([c for c in EPILOGUES if c[-1] in (F32, F16, E4M3)]):
        got, want, name, abs_sum = run_gemm(gpu, nx.E4M3FN, m, n, k, cfg, trans_b=(i % 2 == 1), kernel=SMALL_K)
        assert name == "small_k", name
        print(shape, name, cfg, check_output(got, want, cfg[-1], f"{name} {shape} {cfg}", abs_sum=abs_sum))


@pytest.mark.parametrize("spec", ACTIVATION_SPECS, ids=activation_id)
def test_gemm_small_k_activations(gpu, spec):
    for i, cfg in enumerate(ACTIVATION_EPILOGUES):
        got, want, name, abs_sum = run_gemm(
            gpu, nx.E4M3FN, 513, 96, 16, cfg, trans_b=(i % 2 == 1), kernel=SMALL_K, activation=spec
        )
        assert name == "small_k", name
        check_output(got, want, cfg[-1], f"{name} {spec} {cfg}", abs_sum=abs_sum)


def test_gemm_small_k_falls_back(gpu):
    """Problems outside the small-K kernel keep the automatic kernel under override 7: K = 48, E5M2."""
    lib, _ = gpu
    lib.fp8ort_gemm_set_kernel_override(SMALL_K)
    try:
        assert lib.fp8ort_gemm_kernel_name(nx.E4M3FN.onnx_type, 1000, 96, 48) != b"small_k"
        assert lib.fp8ort_gemm_kernel_name(nx.E5M2.onnx_type, 1000, 96, 16) != b"small_k"
    finally:
        lib.fp8ort_gemm_set_kernel_override(0)
    got, want, name, abs_sum = run_gemm(gpu, nx.E4M3FN, 300, 96, 48, EPILOGUES[0], trans_b=True, kernel=SMALL_K)
    check_output(got, want, EPILOGUES[0][-1], f"{name} fallback", abs_sum=abs_sum)


def same_bits_both_ways(gpu, switch, what, shape, cfg, sm90_only=True, **gemm_args):
    """One GEMM per value of a library switch that must not change the bits (``switch``: its setter, e.g.
    lib.fp8ort_epilogue_set_z_ahead; 1 then 2, reset to 0 after each), on the same seeded operands: each output
    matches the reference and both are the same bytes. ``sm90_only``: the kernel is a whole-K sm90a tile kernel.
    Returns the kernel names of the two runs."""
    m, n, k = shape
    seed = gemm_args.pop("seed", None)
    seed = int(np.random.default_rng().integers(2**31)) if seed is None else seed
    outs, names = [], []
    for variant in (1, 2):
        switch(variant)
        try:
            got, want, name, abs_sum = run_gemm(gpu, nx.E4M3FN, m, n, k, cfg, seed=seed, **gemm_args)
        finally:
            switch(0)
        if sm90_only:
            assert name.startswith("wgmma") and "split" not in name, name
        check_output(got, want, cfg[-1], f"{name} {what} {variant} {cfg}", abs_sum=abs_sum)
        outs.append(got)
        names.append(name)
    assert outs[0].tobytes() == outs[1].tobytes(), f"{names} {what} {cfg} seed {seed}: the bits changed"
    return names


def skip_without_sm90(lib, m, n, k):
    if not lib.fp8ort_gemm_kernel_name(nx.E4M3FN.onnx_type, m, n, k).startswith(b"wgmma"):
        pytest.skip("no sm90a kernel for this device or shape")


SM90_KERNELS = dict(argvalues=[0, 4, 5, 6], ids=["auto", "sm90a_1block", "sm90a_2blocks", "sm90a_stream"])


@pytest.mark.parametrize("kernel", **SM90_KERNELS)
def test_gemm_silu_inline_gives_the_bits_of_the_call(gpu, kernel):
    """SiLU inlined in the sm90a tile epilogues (fp8ort_epilogue_set_silu_variant 2, the default) writes the bits of
    the out-of-line call (1, FP8ORT_TILE_SILU=call) on every sm90a GEMM variant, and both match the reference."""
    lib, _ = gpu
    shape = (129, 264, 320)  # no split K: the tile epilogue itself
    skip_without_sm90(lib, *shape)
    for i, cfg in enumerate(ACTIVATION_EPILOGUES):
        same_bits_both_ways(
            gpu,
            lib.fp8ort_epilogue_set_silu_variant,
            "silu variant",
            shape,
            cfg,
            trans_b=(i % 2 == 1),
            kernel=kernel,
            activation=("Silu", None, None),
        )


@pytest.mark.parametrize("kernel", **SM90_KERNELS)
def test_gemm_z_ahead_gives_the_same_bits(gpu, kernel):
    """An E4M3FN residual loaded eight rows ahead in the sm90a tile epilogues (fp8ort_epilogue_set_z_ahead 2, the
    default) writes the bits of the row-at-a-time loop (1), and both match the reference: partial row and column
    tiles, Relu and SiLU, fresh random operands."""
    lib, _ = gpu
    shape = (300, 264, 320)  # rows past the last full tile; no split K: the tile epilogue itself
    skip_without_sm90(lib, *shape)
    cfg = (True, True, E4M3, True, True, E4M3)  # per-channel scales, bias, an E4M3FN Z, Relu, E4M3FN out
    for activation in (None, ("Silu", None, None)):
        same_bits_both_ways(
            gpu,
            lib.fp8ort_epilogue_set_z_ahead,
            "z ahead",
            shape,
            cfg,
            trans_b=True,
            kernel=kernel,
            activation=activation,
        )


FAST_ROWS_CASES = [  # (epilogue config, activation): E4M3FN out; the last two never take the fast rows
    ((True, True, None, False, True, E4M3), None),  # bias, Relu
    ((False, False, None, False, False, E4M3), None),  # neither bias nor activation: -0 is added
    ((True, True, E4M3, True, True, E4M3), None),  # an E4M3FN residual, Relu
    ((True, True, E4M3, True, False, E4M3), None),  # an E4M3FN residual, no activation
    ((True, True, None, False, False, E4M3), ("Silu", None, None)),
    ((True, True, F16, False, True, E4M3), None),  # a float16 residual: the general rows
    ((True, True, None, False, False, E4M3), ("HardSwish", None, None)),  # another activation: the general rows
]


def with_nan_rows(a: np.ndarray) -> np.ndarray:
    """NaN in a few rows of A: those rows of the output are NaN, which the fast rows hand to the exact quantizer."""
    a = a.copy()
    a[3::37, 5] = np.nan
    return a


@pytest.mark.parametrize("shape", [(300, 264, 320), (1000, 256, 64)], ids=str)
@pytest.mark.parametrize("kernel", **SM90_KERNELS)
def test_gemm_fast_rows_give_the_same_bits(gpu, kernel, shape):
    """The sm90a tile epilogues' fast rows (fp8ort_epilogue_set_fast_rows 2: four rows at a time without a branch)
    write the bits of the general rows (1) and both match the reference: partial row and column tiles, K <= 128 and
    longer, with and without bias, residual, Relu and SiLU, NaN rows in A, fresh random operands."""
    lib, _ = gpu
    skip_without_sm90(lib, *shape)
    for i, (cfg, activation) in enumerate(FAST_ROWS_CASES):
        for edit_a in (None, with_nan_rows) if i < 2 else (None,):
            same_bits_both_ways(
                gpu,
                lib.fp8ort_epilogue_set_fast_rows,
                f"fast rows {activation}",
                shape,
                cfg,
                trans_b=(i % 2 == 0),
                kernel=kernel,
                activation=activation,
                edit_a=edit_a,
            )


@pytest.mark.parametrize("y_scale", [0.125, 2.0**-126, 2.0**40], ids=["2^-3", "2^-126", "2^40"])
def test_gemm_power_of_two_y_scale(gpu, y_scale):
    """Power-of-two Y scales (the quantizer's power_of_two_scales) through the general epilogue (quantize4) and the
    fast rows: both match the reference, NaN rows included, and give the same bits; 2^-126 (past the prepared
    reciprocal's range: the exact division; everything saturates) and 2^40 (its edge: everything rounds to zero but
    the signs)."""
    lib, _ = gpu
    shape = (300, 264, 320)
    skip_without_sm90(lib, *shape)
    for i, (cfg, activation) in enumerate(FAST_ROWS_CASES[:5]):
        same_bits_both_ways(
            gpu,
            lib.fp8ort_epilogue_set_fast_rows,
            f"power-of-two y_scale {y_scale} {activation}",
            shape,
            cfg,
            trans_b=(i % 2 == 0),
            kernel=0,
            activation=activation,
            edit_a=with_nan_rows if i < 2 else None,
            y_scale=y_scale,
        )


@pytest.mark.parametrize("shape", [(1000, 264, 64), (777, 200, 128), (19300, 264, 96)], ids=str)
def test_gemm_wide_stream_gives_the_bits_of_two_blocks(gpu, shape):
    """K <= 128 problems wider than 64 columns on the persistent 128 x 128 streaming kernel
    (fp8ort_gemm_set_wide_stream 2) write the bits of the two-blocks kernel (1, the default), and both match the
    reference: partial row and column tiles, 453 tiles (more than the resident blocks: each walks several), every
    epilogue configuration, fresh random operands."""
    lib, _ = gpu
    m, n, k = shape
    try:
        lib.fp8ort_gemm_set_wide_stream(2)
        wide = lib.fp8ort_gemm_kernel_name(nx.E4M3FN.onnx_type, m, n, k).decode()
    finally:
        lib.fp8ort_gemm_set_wide_stream(0)
    if not wide.startswith("wgmma"):
        pytest.skip("no sm90a kernel for this device or shape")
    assert wide == "wgmma_sm90a_stream_wide"
    assert lib.fp8ort_gemm_kernel_name(nx.E4M3FN.onnx_type, m, n, k) == b"wgmma_sm90a_2blocks"  # the default
    for i, cfg in enumerate(EPILOGUES):
        names = same_bits_both_ways(
            gpu,
            lib.fp8ort_gemm_set_wide_stream,
            "wide stream",
            shape,
            cfg,
            sm90_only=False,
            trans_b=(i % 2 == 1),
            kernel=0,
        )
        assert names == ["wgmma_sm90a_2blocks", "wgmma_sm90a_stream_wide"], names


# Chains of GEMMs whose E4M3FN output is the next one's A: (rows, widths), widths[0] the first K. Each takes split K
# with its epilogue pass for some layers (few tiles, long K) and not for others; the first also the two-blocks
# (K <= 128), streaming (K <= 512) and one-block kernels.
PDL_CHAINS = [(4000, [128, 128, 256, 1024, 256, 64]), (49, [2048, 2048, 512, 2048])]


def run_chain(gpu, rows, widths, seed, stream, pdl):
    """The chain on one stream with no synchronization between its GEMMs, fp8ort_launch_set_pdl(pdl); returns each
    layer's (input codes, output codes, epilogue case, weight, kernel name), read back after the last launch. Every
    buffer is written and poisoned before the first launch (the stream does not wait for the legacy one)."""
    lib, rt = gpu
    rng = np.random.default_rng(seed)
    fmt = nx.E4M3FN
    x_scale = np.float32(0.02)
    a = nx.quantize(random_activation(rng, (rows, widths[0]), fmt, float(x_scale)), x_scale, fmt)
    d_a = rt.to_device(a.view(np.uint8))
    host_a = a.view(fmt.dtype).astype(np.float32) * x_scale  # float values of the codes, for the scale choice
    layers = []
    for k, n in zip(widths[:-1], widths[1:]):
        w, w_scale = random_weight(rng, n, (n, k), fmt)
        probe = ref.fp8_matmul(host_a, w, x_scale, w_scale, transB=1)
        y_scale = np.float32(max(float(np.abs(probe).max()), 1e-6) / 300)  # codes that span the format
        epi = EpilogueCase(
            rng, rt, fmt, n, (rows, n), per_channel=True, bias=True, z_type=None, z_scaled=False, relu=True,
            y_type=E4M3, x_scale=float(x_scale), w_scale=w_scale, y_scale=float(y_scale),
        )  # fmt: skip
        d_packed = rt.poisoned(lib.fp8ort_gemm_packed_bytes(n, k))
        st = lib.fp8ort_gemm_pack_weight(rt.to_device(w.view(np.uint8)), 1, k, n, d_packed, None)
        assert st == OK, lib.fp8ort_gpu_last_error()
        d_y = rt.poisoned(rows * n)  # NaN codes wherever a GEMM would read before its producer wrote
        ws = lib.fp8ort_gemm_workspace_bytes(fmt.onnx_type, rows, n, k)
        layers.append((d_a, d_packed, d_y, ws, rt.poisoned(ws) if ws else None, epi, w, (rows, n, k)))
        host_a = np.maximum(probe, 0).astype(np.float32)
        d_a, x_scale = d_y, y_scale
    rt.sync()
    names = []
    lib.fp8ort_launch_set_pdl(pdl)
    try:
        for d_in, d_packed, d_y, ws, d_ws, epi, _, (m, n, k) in layers:
            names.append(lib.fp8ort_gemm_kernel_name(fmt.onnx_type, m, n, k).decode() + ("+split_k" if ws else ""))
            if ws:
                st = lib.fp8ort_gemm_ws(d_in, d_packed, fmt.onnx_type, m, n, k, epi.struct, d_y, d_ws, ws, stream)
            else:
                st = lib.fp8ort_gemm(d_in, d_packed, fmt.onnx_type, m, n, k, epi.struct, d_y, stream)
            assert st == OK, lib.fp8ort_gpu_last_error()
    finally:
        lib.fp8ort_launch_set_pdl(0)
    rt.sync()
    return [
        (rt.from_device(d_in, (m, k), np.uint8), rt.from_device(d_y, (m, n), np.uint8), epi, w, name)
        for (d_in, _, d_y, _, _, epi, w, (m, n, k)), name in zip(layers, names)
    ]


@pytest.mark.parametrize("chain", PDL_CHAINS, ids=["tiles", "split_k"])
def test_gemm_chain_with_pdl_gives_the_same_bits(gpu, chain):
    """GEMMs launched back to back on one stream as programmatic dependent launches (fp8ort_launch_set_pdl 2: each
    may start while the one before ends, and must wait for its output) write the bits of ordinary launches (1), and
    every layer matches the reference on the codes it read: the sm90a tile kernels and the split-K epilogue pass, fresh
    random operands, every output buffer poisoned with NaN codes."""
    lib, rt = gpu
    rows, widths = chain
    skip_without_sm90(lib, rows, widths[1], widths[0])
    stream = rt.stream()
    seed = int(np.random.default_rng().integers(2**31))
    plain = run_chain(gpu, rows, widths, seed, stream, 1)
    pdl = run_chain(gpu, rows, widths, seed, stream, 2)
    fmt = nx.E4M3FN
    for i, ((a0, y0, epi, w, name), (a1, y1, _, _, name1)) in enumerate(zip(plain, pdl)):
        assert name == name1, (name, name1)
        what = f"layer {i} {name} seed {seed}"
        assert a0.tobytes() == a1.tobytes() and y0.tobytes() == y1.tobytes(), f"{what}: pdl changed the bits"
        a = a0.view(fmt.dtype).astype(np.float32) * epi.x_scale
        want = ref.fp8_matmul(a, w, epi.x_scale, epi.w_scale, epi.bias, transB=1, **epi.reference_kwargs())
        check_output(y1.view(fmt.dtype), want, E4M3, what, abs_sum=wgmma_abs_sum(a0.view(fmt.dtype), w, epi))
    names = [p[4] for p in plain]
    # the chain mixes split and unsplit layers with the default split sizes; an A/B override of the fewest k-tiles
    # per split (FP8ORT_SPLIT_K_TILES=1 splits every layer of it) leaves only the checks above
    if not os.environ.get("FP8ORT_SPLIT_K_TILES"):
        assert any("split" in n for n in names) and any("split" not in n for n in names), names


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


@pytest.mark.parametrize(
    "fields, message",
    [
        (dict(activation=9), b"activation 9"),
        (dict(activation=-1), b"activation -1"),
        (dict(relu=1, activation=ACTIVATION_CODES["Gelu"]), b"relu = 1"),
        (dict(activation=ACTIVATION_CODES["Clip"], activation_alpha=2.0, activation_beta=1.0), b"Clip"),
        (dict(activation=ACTIVATION_CODES["Clip"], activation_alpha=float("nan"), activation_beta=1.0), b"Clip"),
        (
            dict(activation=ACTIVATION_CODES["HardSigmoid"], activation_alpha=float("inf"), activation_beta=0.5),
            b"HardSigmoid",
        ),
    ],
    ids=["past-last", "negative", "relu-and-gelu", "clip-min-above-max", "clip-nan", "hardsigmoid-inf"],
)
def test_gemm_refuses_bad_activation(gpu, fields, message):
    """A bad activation in the epilogue struct is refused before launch, Y untouched."""
    lib, rt = gpu
    epi = EpilogueCase(
        np.random.default_rng(0),
        rt,
        nx.E4M3FN,
        16,
        (16, 16),
        per_channel=True,
        bias=False,
        z_type=None,
        z_scaled=False,
        relu=False,
        y_type=F32,
        x_scale=1.0,
        w_scale=np.ones(16, np.float32),
    )
    for k, v in fields.items():
        setattr(epi.struct, k, v)
    d = rt.poisoned(16 * 16)
    d_y = rt.poisoned(16 * 16 * 4)
    assert lib.fp8ort_gemm(d, d, nx.E4M3FN.onnx_type, 16, 16, 16, epi.struct, d_y, None) == INVALID_ARGUMENT
    assert message in lib.fp8ort_gpu_last_error(), lib.fp8ort_gpu_last_error()
    assert np.all(rt.from_device(d_y, (16 * 16 * 4,), np.uint8) == 0xFF), "a refused call wrote Y"


# ---- the cuBLASLt route: cuBLASLt accumulates in float32, fp8_epilogue_apply.hip applies our epilogue ----
BLASLT_SHAPES = [(1, 16, 16), (17, 48, 64), (129, 272, 512), (256, 256, 4096)]
BLASLT_EPILOGUES = [
    (True, True, None, False, True, F32),  # float32, relu, per-channel scale and bias
    (False, True, E4M3, True, True, E4M3),  # FP8 output with an FP8 residual
    (True, False, F16, False, False, F16),  # float16 output with a float16 residual
]


@pytest.fixture
def blaslt(gpu):
    lib, _ = gpu
    if not hasattr(lib, "fp8ort_blaslt_available"):
        pytest.skip("kernel library built without the cuBLASLt route; rebuild it (-DFP8ORT_KERNEL_TEST_LIB=ON)")
    if not lib.fp8ort_blaslt_available():
        pytest.skip(f"cuBLASLt route unavailable: {lib.fp8ort_gpu_last_error().decode()}")
    return gpu


@pytest.mark.parametrize(
    "spec", [("Clip", -1.5, 2.25), ("HardSwish", None, None), ("Gelu", None, None)], ids=activation_id
)
def test_gemm_blaslt_activations(blaslt, spec):
    """The BLAS-Lt route applies the same fused activations (its epilogue is fp8_epilogue_apply.hip's)."""
    for cfg in ACTIVATION_EPILOGUES:
        got, want, name, abs_sum = run_gemm(
            blaslt, nx.E4M3FN, 129, 272, 512, cfg, False, 0, blaslt=True, activation=spec
        )
        check_output(got, want, cfg[-1], f"{name} {spec} {cfg}", abs_sum=abs_sum)


@pytest.mark.parametrize("epi_cfg", BLASLT_EPILOGUES, ids=["f32_relu_bias", "e4m3_z_e4m3", "f16_z_f16"])
@pytest.mark.parametrize("shape", BLASLT_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_gemm_blaslt(blaslt, shape, epi_cfg):
    m, n, k = shape
    for trans_b in (False, True):
        got, want, name, abs_sum = run_gemm(blaslt, nx.E4M3FN, m, n, k, epi_cfg, trans_b, kernel=0, blaslt=True)
        print(shape, epi_cfg, check_output(got, want, epi_cfg[-1], f"{name} {shape} {epi_cfg}", abs_sum=abs_sum))


def test_gemm_blaslt_e5m2(blaslt):
    """float8e5m2 x float8e5m2 where cuBLASLt multiplies it; skipped where it answers FP8ORT_UNSUPPORTED."""
    for cfg in BLASLT_EPILOGUES:
        got, want, name, abs_sum = run_gemm(
            blaslt, nx.E5M2, 129, 80, 256, cfg, False, 0, blaslt=True, skip_unsupported=True
        )
        check_output(got, want, cfg[-1], f"{name} e5m2 {cfg}", abs_sum=abs_sum)


def test_gemm_blaslt_refusals(gpu):
    """Problems the route cannot take are FP8ORT_UNSUPPORTED (the caller falls back), bad arguments INVALID_ARGUMENT;
    neither launches anything. Runs without cuBLASLt too: then every valid call is unsupported."""
    lib, rt = gpu
    if not hasattr(lib, "fp8ort_gemm_blaslt"):
        pytest.skip("kernel library built without the cuBLASLt route; rebuild it (-DFP8ORT_KERNEL_TEST_LIB=ON)")
    available = bool(lib.fp8ort_blaslt_available())
    m = n = 16
    epi = EpilogueCase(
        np.random.default_rng(0),
        rt,
        nx.E4M3FN,
        n,
        (m, n),
        per_channel=True,
        bias=False,
        z_type=None,
        z_scaled=False,
        relu=False,
        y_type=F32,
        x_scale=1.0,
        w_scale=np.ones(n, np.float32),
    )
    ws = lib.fp8ort_gemm_blaslt_workspace_bytes(m, n, 64)
    assert ws >= m * n * 4
    d = rt.poisoned(64 * 64)  # device allocations are 256-byte aligned
    d_ws, d_y = rt.poisoned(ws), rt.poisoned(m * n * 4)
    e4m3 = nx.E4M3FN.onnx_type

    def call(a=d, k=64, fmt=e4m3, workspace=d_ws, nbytes=ws, struct=epi.struct):
        return lib.fp8ort_gemm_blaslt(a, d, fmt, m, n, k, struct, d_y, workspace, nbytes, None)

    assert call(k=24) == UNSUPPORTED  # K % 16 != 0
    if available:
        assert b"K % 16" in lib.fp8ort_gpu_last_error(), lib.fp8ort_gpu_last_error()
    assert call(a=d + 8) == UNSUPPORTED  # A only 8-byte aligned
    assert call(fmt=nx.E4M3FNUZ.onnx_type) == UNSUPPORTED  # no FNUZ on NVIDIA
    assert call(fmt=F32) == INVALID_ARGUMENT  # not FP8
    assert call(nbytes=ws - 1) == INVALID_ARGUMENT  # workspace too small
    assert b"workspace" in lib.fp8ort_gpu_last_error()
    assert call(workspace=None) == INVALID_ARGUMENT
    epi.struct.w_scale_count = 5
    assert call() == INVALID_ARGUMENT  # w_scale count 5 is neither 1 nor N
    assert b"w_scale" in lib.fp8ort_gpu_last_error()
    rt.sync()
    assert np.all(rt.from_device(d_y, (m * n * 4,), np.uint8) == 0xFF), "a refused call wrote Y"


@pytest.mark.parametrize("y_type", [F32, F16, BF16, E4M3, E5M2], ids=["f32", "f16", "bf16", "e4m3", "e5m2"])
@pytest.mark.parametrize("size", [(1, 1, 4), (37, 1000, 1004), (300, 2051, 2052)], ids=lambda s: "x".join(map(str, s)))
def test_epilogue_apply_is_exact(gpu, size, y_type):
    """fp8ort_epilogue_apply over given float32 accumulators is bit-identical to the reference epilogue."""
    lib, rt = gpu
    if not hasattr(lib, "fp8ort_epilogue_apply"):
        pytest.skip("kernel library built without fp8ort_epilogue_apply; rebuild it (-DFP8ORT_KERNEL_TEST_LIB=ON)")
    m, n, ld = size
    rng = np.random.default_rng(m * 7 + n)
    acc = (rng.standard_normal((m, ld)) * 3000).astype(np.float32)
    acc.ravel()[rng.random(acc.size) < 0.01] = -0.0
    acc.ravel()[rng.random(acc.size) < 0.01] *= 1e4  # saturates FP8 outputs, overflows float16 ones
    for z_type in (None, F16, E4M3):
        epi = EpilogueCase(
            rng,
            rt,
            nx.E4M3FN,
            n,
            (m, n),
            per_channel=True,
            bias=True,
            z_type=z_type,
            z_scaled=True,
            relu=z_type is not None,
            y_type=y_type,
            x_scale=0.02,
            w_scale=rng.uniform(0.01, 0.1, n).astype(np.float32),
        )
        kw = epi.reference_kwargs()
        scale = ref._channel_scale(epi.x_scale, epi.w_scale, n)
        want = ref._epilogue(
            acc[:, :n].astype(np.float64),
            scale,
            1,
            epi.bias,
            kw["Z"],
            kw["z_scale"],
            kw["y_scale"],
            kw["activation"],
            kw["output_dtype"],
        )
        out_t = np_dtype(y_type)
        d_y = rt.poisoned(m * n * out_t.itemsize)
        st = lib.fp8ort_epilogue_apply(rt.to_device(acc), ld, m, n, epi.struct, d_y, None)
        assert st == OK, lib.fp8ort_gpu_last_error()
        got = rt.from_device(d_y, (m, n), out_t)
        bits = np.uint8 if out_t.itemsize == 1 else np.uint16 if out_t.itemsize == 2 else np.uint32
        diff = np.flatnonzero(got.view(bits) != want.view(bits))
        assert diff.size == 0, f"{size} z={z_type}: {diff.size} outputs differ, first at {diff[:4]}"


def _assert_near_float(got: np.ndarray, want: np.ndarray, what: str, max_steps: int) -> None:
    """Same NaNs; elsewhere at most max_steps apart in the output type, or both below the smallest normal float32."""
    gf, wf = got.astype(np.float64), want.astype(np.float64)
    assert np.array_equal(np.isnan(gf), np.isnan(wf)), f"{what}: NaN positions differ"
    fin = ~np.isnan(wf)
    if nx.is_fp8(want.dtype):
        c = want.view(np.uint8).astype(np.int64), got.view(np.uint8).astype(np.int64)
        ordw, ordg = (np.where(x & 0x80, -(x & 0x7F), x & 0x7F) for x in c)
    else:
        bits = np.int32 if want.dtype.itemsize == 4 else np.int16
        top = np.int64(1) << (8 * want.dtype.itemsize - 1)
        ordw, ordg = (
            np.where(b < 0, -(b & (top - 1)), b) for b in (x.view(bits).astype(np.int64) for x in (want, got))
        )
    steps = np.abs(ordw - ordg)[fin]
    tiny = (np.abs(wf[fin]) < 2.0**-126) & (np.abs(gf[fin]) < 2.0**-126)
    # In the far tails (Gelu/Silu of large negative y) float32 device math is ill-conditioned (erfc's relative
    # condition number grows as 2x^2): there a relative error below 2^-16 is accepted as well.
    rel = np.abs(gf[fin] - wf[fin]) / np.maximum(np.abs(wf[fin]), 2.0**-149)
    bad = (steps > max_steps) & ~tiny & ~((rel < 2.0**-16) & (max_steps > 1))
    if bad.any():
        i = np.flatnonzero(fin)[np.argmax(bad)]
        raise AssertionError(
            f"{what}: {int(bad.sum())} outputs off by > {max_steps} steps; e.g. at {i}: got "
            f"{gf.ravel()[i]} want {wf.ravel()[i]}"
        )


@pytest.mark.parametrize("y_type", [F32, F16, E4M3], ids=["f32", "f16", "e4m3"])
@pytest.mark.parametrize("spec", ACTIVATION_SPECS, ids=activation_id)
def test_epilogue_apply_activations(gpu, spec, y_type):
    """fp8ort_epilogue_apply with each activation on accumulators that put y on and around the kinks, far past them,
    and at ±Inf/NaN. Piecewise-linear activations are bit-exact; the transcendental ones (float32 device math against
    the float64 reference) within 8 float32 ulps, one step in narrower outputs."""
    lib, rt = gpu
    if not hasattr(lib, "fp8ort_epilogue_apply"):
        pytest.skip("kernel library built without fp8ort_epilogue_apply; rebuild it (-DFP8ORT_KERNEL_TEST_LIB=ON)")
    rng = np.random.default_rng()
    m, n = 300, 260
    kinks = activation_kinks(spec)
    y = kinks[rng.integers(0, kinks.size, (m, n))] + rng.standard_normal((m, n)).astype(np.float32) * 2
    y.ravel()[rng.random(y.size) < 0.2] *= 40  # tails: saturated sigmoids, subnormal Silu/Gelu outputs
    y.ravel()[:4] = [np.inf, -np.inf, np.nan, -0.0]
    acc = y.astype(np.float32)  # scale 1, no bias: y is the accumulator itself
    epi = EpilogueCase(
        rng,
        rt,
        nx.E4M3FN,
        n,
        (m, n),
        per_channel=False,
        bias=False,
        z_type=None,
        z_scaled=False,
        relu=False,
        y_type=y_type,
        x_scale=1.0,
        w_scale=np.ones(1, np.float32),
        activation=spec,
    )
    kw = epi.reference_kwargs()
    want = ref._epilogue(
        acc.astype(np.float64),
        np.ones(n, np.float32),
        1,
        None,
        None,
        None,
        kw["y_scale"],
        kw["activation"],
        kw["output_dtype"],
        kw["activation_alpha"],
        kw["activation_beta"],
    )
    out_t = np_dtype(y_type)
    d_y = rt.poisoned(m * n * out_t.itemsize)
    st = lib.fp8ort_epilogue_apply(rt.to_device(acc), n, m, n, epi.struct, d_y, None)
    assert st == OK, lib.fp8ort_gpu_last_error()
    got = rt.from_device(d_y, (m, n), out_t)
    if spec[0] in ("Sigmoid", "Silu", "Gelu", "GeluTanh"):
        _assert_near_float(got, want, f"{spec} {y_type}", 8 if y_type == F32 else 1)
    else:
        # bit-exact, except that a NaN may come out with another sign or payload (the GPU's canonical NaN)
        bits = np.uint8 if out_t.itemsize == 1 else np.uint16 if out_t.itemsize == 2 else np.uint32
        both_nan = np.isnan(got.astype(np.float32)) & np.isnan(want.astype(np.float32))
        diff = np.flatnonzero((got.view(bits) != want.view(bits)) & ~both_nan)
        assert diff.size == 0, f"{spec}: {diff.size} outputs differ, first at {diff[:4]}"
