"""FP8 NHWC convolution (implicit GEMM and depthwise) against fp8ort.reference.fp8_conv."""

from __future__ import annotations

import numpy as np
import pytest
from gpu_helpers import (
    ACTIVATION_SPECS,
    EpilogueCase,
    activation_id,
    activation_max_slope,
    check_output,
    np_dtype,
    random_activation,
    random_weight,
    spread_for_activation,
)
from gpu_lib import conv_shape
from onnx import TensorProto

from fp8ort import numerics as nx
from fp8ort import reference as ref

F32, F16, E4M3 = TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.FLOAT8E4M3FN
# (batch, h, w, c, m, kh, kw, strides, pads (t, l, b, r), dilations, group)
CASES = [
    (2, 9, 11, 16, 32, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 1),
    (1, 8, 8, 3, 8, 7, 7, (2, 2), (3, 3, 3, 3), (1, 1), 1),
    (2, 10, 7, 32, 64, 3, 3, (2, 1), (0, 1, 2, 0), (2, 1), 1),
    (1, 6, 6, 32, 32, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 32),
    (2, 15, 15, 48, 48, 5, 5, (2, 2), (2, 2, 2, 2), (1, 1), 48),
    (2, 12, 12, 24, 48, 3, 3, (2, 2), (1, 1, 1, 1), (1, 1), 3),
    (1, 5, 5, 32, 64, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 2),
    (1, 14, 14, 64, 128, 1, 1, (1, 1), (0, 0, 0, 0), (1, 1), 1),
    (4, 28, 28, 128, 128, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 1),
    (1, 7, 9, 20, 6, 2, 4, (3, 2), (0, 2, 1, 0), (1, 2), 2),
    (3, 1, 1, 40, 24, 1, 1, (1, 1), (0, 0, 0, 0), (1, 1), 1),
    (2, 13, 13, 64, 80, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 1),
    (3, 20, 20, 48, 200, 1, 1, (2, 2), (0, 0, 0, 0), (1, 1), 1),
    (4, 30, 30, 64, 64, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 1),
    (1, 12, 12, 272, 136, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 1),
    (1, 7, 7, 512, 512, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 1),  # ResNet-50's last 3x3 at batch 1: split K on sm90a
    # depthwise (group == c == m): 8 channels per thread (c % 8 == 0), 4 (c % 4 == 0), 1 (the rest)
    (2, 10, 9, 24, 24, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 24),
    (1, 11, 9, 40, 40, 5, 5, (2, 2), (2, 1, 1, 2), (1, 1), 40),
    (3, 8, 7, 20, 20, 3, 3, (1, 2), (0, 1, 2, 1), (2, 2), 20),
    (2, 7, 6, 3, 3, 3, 3, (2, 1), (1, 0, 1, 1), (1, 1), 3),
    (1, 9, 10, 96, 96, 3, 3, (2, 2), (0, 0, 1, 1), (1, 1), 96),  # TF "SAME" padding of a stride-2 layer
    (2, 6, 5, 1, 1, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 1),
    (2, 28, 28, 144, 144, 5, 5, (2, 2), (2, 2, 2, 2), (1, 1), 144),
    (2, 9, 13, 32, 32, 5, 5, (1, 1), (2, 2, 2, 2), (1, 1), 32),
    (1, 12, 10, 16, 16, 3, 3, (2, 2), (1, 1, 1, 1), (1, 1), 16),
    # the tile kernel's blocks with windows wholly inside the image (8-row tiles, 16 columns at stride 1, 8 at
    # stride 2), beside border blocks; 40 and 24 channels leave the last 32-channel block part empty
    (2, 40, 37, 40, 40, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 40),
    (1, 50, 45, 24, 24, 5, 5, (2, 2), (2, 2, 2, 2), (1, 1), 24),
]
SILU_CALL = 1  # fp8ort_epilogue_set_silu_variant (the default inlines SiLU)
DEPTHWISE_PIXEL, DEPTHWISE_TILE = 1, 2  # fp8ort_depthwise_variant
FEW_CHANNELS_OFF, FEW_CHANNELS_ON = 1, 2  # fp8ort_conv_set_few_channels
IM2COL_OFF, IM2COL_ON = 1, 2  # fp8ort_conv_set_im2col
STRIDED_1X1_OFF, STRIDED_1X1_ON = 1, 2  # fp8ort_conv_set_strided_1x1
# (per_channel, bias, z_type, z_scaled, relu, y_type)
EPILOGUES = [
    (True, True, None, False, True, F32),
    (True, True, E4M3, True, True, E4M3),
    (False, False, F16, False, False, F16),
]


@pytest.mark.parametrize(
    "case",
    CASES,
    ids=lambda c: "n{}h{}w{}c{}m{}k{}x{}s{}p{}d{}g{}".format(*c[:7], *["".join(map(str, t)) for t in c[7:10]], c[10]),
)
@pytest.mark.parametrize("epi_cfg", EPILOGUES, ids=["f32_relu", "fp8_res_fp8", "f16_res"])
@pytest.mark.parametrize("kernel", [0, 1, 4, 5], ids=["auto", "portable", "sm90a_1block", "sm90a_2blocks"])
def test_conv(gpu, case, epi_cfg, kernel):
    if kernel and is_depthwise(case):
        pytest.skip("the kernel override does not apply to depthwise convolutions")
    result = run_conv(gpu, case, epi_cfg, kernel)
    if result is not None:
        got, want, name, abs_sum = result
        print(
            case, epi_cfg, name, check_output(got, want, epi_cfg[-1], f"conv {case} {epi_cfg} {name}", abs_sum=abs_sum)
        )


def is_depthwise(case) -> bool:
    """One input and one output channel per group: the depthwise kernel."""
    c, m, group = case[3], case[4], case[10]
    return c == m == group


def depthwise_sum_f32(xq: np.ndarray, wq: np.ndarray, strides, pads, dil) -> np.ndarray:
    """The depthwise kernel's sums, NHWC float32: per output the exact FP8 products added in float32 in (ky, kx)
    order, taps outside the input skipped (the reference sums in float64 instead)."""
    n, h, w, c = xq.shape
    kh, kw = wq.shape[2:]
    oh = ref.conv_output_size(h, kh, strides[0], pads[0], pads[2], dil[0])
    ow = ref.conv_output_size(w, kw, strides[1], pads[1], pads[3], dil[1])
    xf, wf = xq.astype(np.float32), wq.astype(np.float32).reshape(c, kh, kw)
    oy, ox = np.arange(oh) * strides[0] - pads[0], np.arange(ow) * strides[1] - pads[1]
    acc = np.zeros((n, oh, ow, c), np.float32)
    for ky in range(kh):
        iy = oy + ky * dil[0]
        for kx in range(kw):
            ix = ox + kx * dil[1]
            inside = ((iy >= 0) & (iy < h))[:, None] & ((ix >= 0) & (ix < w))[None, :]
            taps = xf[:, np.clip(iy, 0, h - 1)][:, :, np.clip(ix, 0, w - 1)]
            acc = np.where(inside[None, :, :, None], acc + taps * wf[:, ky, kx], acc)
    return acc


def conv_sum_f32(xq: np.ndarray, wq: np.ndarray, strides, pads) -> np.ndarray:
    """The few-channel kernel's sums (group 1, no dilation), NHWC float32: per output the exact FP8 products added
    in float32 in (ky, kx, c) order, taps outside the input skipped."""
    n, h, w, c = xq.shape
    m, _, kh, kw = wq.shape
    oh = ref.conv_output_size(h, kh, strides[0], pads[0], pads[2], 1)
    ow = ref.conv_output_size(w, kw, strides[1], pads[1], pads[3], 1)
    xf, wf = xq.astype(np.float32), wq.astype(np.float32)
    oy, ox = np.arange(oh) * strides[0] - pads[0], np.arange(ow) * strides[1] - pads[1]
    acc = np.zeros((n, oh, ow, m), np.float32)
    for ky in range(kh):
        iy = oy + ky
        for kx in range(kw):
            ix = ox + kx
            inside = (((iy >= 0) & (iy < h))[:, None] & ((ix >= 0) & (ix < w))[None, :])[None, :, :, None]
            taps = xf[:, np.clip(iy, 0, h - 1)][:, :, np.clip(ix, 0, w - 1)]
            for ch in range(c):
                acc = np.where(inside, acc + taps[..., ch : ch + 1] * wf[:, ch, ky, kx], acc)
    return acc


def run_conv(
    gpu,
    case,
    epi_cfg,
    kernel,
    activation=None,
    fmt=nx.E4M3FN,
    x_offset=0,
    y_offset=0,
    f32_sums=False,
    silu=0,
    depthwise=0,
    weight=None,
    few_channels=0,
    im2col=0,
    strided_1x1=0,
    fast_rows=0,
    seed=None,
    y_scale=0.11,
):
    """One convolution on random operands: (got, want, kernel name, abs_sum or None), or None where a forced kernel
    refuses the shape as it should. ``activation``: an (activation, alpha, beta) spec in place of the config's relu,
    with scales and bias that put the pre-activation around its kinks. ``x_offset`` / ``y_offset``: X and Y start
    that many elements past an aligned address. ``f32_sums`` (depthwise, few channels): ``want`` from
    depthwise_sum_f32 / conv_sum_f32, the kernel's own order of float32 additions, so that got must equal it bit for
    bit. ``silu``: how the sm90a tile
    epilogues evaluate SiLU (fp8ort_epilogue_set_silu_variant), 0 for the default. ``depthwise``: the depthwise
    kernel to force (fp8ort_conv_set_depthwise_variant), 0 for the automatic choice. ``weight``: a function that
    edits the FP8 weight before use. ``few_channels``: fp8ort_conv_set_few_channels (2 takes the few-channel kernel
    for stems, 0 the default). ``im2col``: fp8ort_conv_set_im2col (2 takes the im2col route for large-kernel stems,
    0 the default: on). ``strided_1x1``: fp8ort_conv_set_strided_1x1 (2 takes the subsampling route for strided 1x1
    convolutions, 0 the default: on). ``fast_rows``: fp8ort_epilogue_set_fast_rows (2 takes the fast quads where they
    apply, 1 never, 0 the default). ``seed``: the operands' random seed (fresh when None)."""
    lib, rt = gpu
    rng = np.random.default_rng(seed)
    batch, h, w, c, m, kh, kw, strides, pads, dil, group = case
    shape = conv_shape(batch, h, w, c, m, (kh, kw), strides, pads, dil, group)
    oh, ow = lib.fp8ort_conv_out_h(shape), lib.fp8ort_conv_out_w(shape)
    assert (oh, ow) == (
        ref.conv_output_size(h, kh, strides[0], pads[0], pads[2], dil[0]),
        ref.conv_output_size(w, kw, strides[1], pads[1], pads[3], dil[1]),
    )
    x_scale = 0.03
    x = random_activation(rng, (batch, h, w, c), fmt, x_scale)
    wq, w_scale = random_weight(rng, m, (m, c // group, kh, kw), fmt)
    if weight is not None:
        wq = weight(wq)
    per_channel, bias, z_type, z_scaled, relu, y_type = epi_cfg
    bias_values = None
    if activation is not None:
        probe = ref.fp8_conv(
            x, wq, np.float32(x_scale), w_scale, strides=strides, pads=pads, dilations=dil, group=group, layout="NHWC"
        )
        w_scale, bias_values = spread_for_activation(rng, probe, w_scale, activation, 3)
        bias_values = bias_values if bias else None
    epi = EpilogueCase(
        rng,
        rt,
        fmt,
        m,
        (batch, oh, ow, m),
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
    if f32_sums:
        assert is_depthwise(case) or (group == 1 and dil == (1, 1))
        xq = nx.quantize(x, np.float32(x_scale), fmt)
        acc = (
            depthwise_sum_f32(xq, wq, strides, pads, dil) if is_depthwise(case) else conv_sum_f32(xq, wq, strides, pads)
        )
        kw = epi.reference_kwargs()
        z = kw.pop("Z")
        want = ref._epilogue(  # the reference's epilogue on the kernel's float32 sums
            acc.transpose(0, 3, 1, 2).astype(np.float64),
            ref._channel_scale(np.float32(x_scale), epi.w_scale, m),
            1,
            epi.bias,
            None if z is None else z.transpose(0, 3, 1, 2),
            **kw,
        ).transpose(0, 2, 3, 1)
    else:
        want = ref.fp8_conv(
            x,
            wq,
            np.float32(x_scale),
            epi.w_scale,
            epi.bias,
            strides=strides,
            pads=pads,
            dilations=dil,
            group=group,
            layout="NHWC",
            **epi.reference_kwargs(),
        )

    d_x32 = rt.to_device(x)
    d_x8 = rt.poisoned(x.size + x_offset) + x_offset
    assert lib.fp8ort_quantize(d_x32, F32, epi.struct.x_scale, d_x8, fmt.onnx_type, x.size, 1, None) == 0
    d_packed = rt.poisoned(lib.fp8ort_conv_packed_bytes(shape))
    st = lib.fp8ort_conv_pack_weight(rt.to_device(wq.view(np.uint8)), shape, d_packed, None)
    assert st == 0, lib.fp8ort_gpu_last_error()
    out_t = np_dtype(y_type)
    d_y = rt.poisoned((batch * oh * ow * m + y_offset) * out_t.itemsize) + y_offset * out_t.itemsize
    lib.fp8ort_gemm_set_kernel_override(kernel)
    lib.fp8ort_epilogue_set_silu_variant(silu)
    lib.fp8ort_conv_set_depthwise_variant(depthwise)
    lib.fp8ort_conv_set_few_channels(few_channels)
    lib.fp8ort_conv_set_im2col(im2col)
    lib.fp8ort_conv_set_strided_1x1(strided_1x1)
    lib.fp8ort_epilogue_set_fast_rows(fast_rows)
    try:
        name = lib.fp8ort_conv_kernel_name(fmt.onnx_type, shape).decode()
        ws = lib.fp8ort_conv_workspace_bytes(fmt.onnx_type, shape)
        if case[:5] == (1, 7, 7, 512, 512) and name.startswith("wgmma"):
            assert ws > 0, "4 tiles of 36 k-tiles on a whole GPU: the sm90a kernel should split K"
        if ws:  # split K (small outputs, long K): partial sums in poisoned scratch, then the epilogue kernel; or the
            # im2col route's rows of A, or the subsampling route's
            name += "" if name.startswith(("im2col", "subsample")) else "+split_k"
            st = lib.fp8ort_conv_nhwc_ws(
                d_x8, d_packed, fmt.onnx_type, shape, epi.struct, d_y, rt.poisoned(ws), ws, None
            )
        else:
            st = lib.fp8ort_conv_nhwc(d_x8, d_packed, fmt.onnx_type, shape, epi.struct, d_y, None)
        pointwise = kh == kw == 1 and strides == (1, 1) and pads == (0, 0, 0, 0) and group == 1
        if kernel in (4, 5) and pointwise and c % 16:  # a forced sm90a GEMM refuses K % 16 != 0 before launch
            assert st == 2 and b"K % 16 == 0" in lib.fp8ort_gpu_last_error()
            return None
        assert st == 0, lib.fp8ort_gpu_last_error()
    finally:
        lib.fp8ort_gemm_set_kernel_override(0)
        lib.fp8ort_epilogue_set_silu_variant(0)
        lib.fp8ort_conv_set_depthwise_variant(0)
        lib.fp8ort_conv_set_few_channels(0)
        lib.fp8ort_conv_set_im2col(0)
        lib.fp8ort_conv_set_strided_1x1(0)
        lib.fp8ort_epilogue_set_fast_rows(0)
    got = rt.from_device(d_y, (batch, oh, ow, m), out_t)
    abs_sum = None
    if "wgmma" in name:  # reduced-precision accumulation: sum_k |a_k w_k| in Y's units bounds the error
        qx = nx.quantize(x, np.float32(x_scale), fmt)
        abs_x = (qx.view(np.uint8) & 0x7F).view(qx.dtype)
        abs_w = (wq.view(np.uint8) & 0x7F).view(wq.dtype)
        abs_sum = ref.fp8_conv(
            abs_x,
            abs_w,
            np.float32(x_scale),
            epi.w_scale,
            strides=strides,
            pads=pads,
            dilations=dil,
            group=group,
            layout="NHWC",
        ).astype(np.float64)
        if epi.y_scale is not None:
            abs_sum = abs_sum / epi.y_scale
        abs_sum = abs_sum * activation_max_slope(epi.activation)  # the activation can stretch the error this much
    return got, want, name, abs_sum


# Depthwise bit for bit: (format, X offset, Y offset) in elements; offsets make the kernel take 4 channels per thread
# (X 4 bytes past 8-byte alignment) or 1 (X 1 byte past), and Y scalar stores.
DEPTHWISE_VARIANTS = [
    (nx.E4M3FN, 0, 0),
    (nx.E4M3FN, 4, 0),
    (nx.E4M3FN, 1, 1),
    (nx.E5M2, 0, 0),
    (nx.E4M3FNUZ, 0, 1),
    (nx.E5M2FNUZ, 4, 0),
]


def tile_applies(case, fmt) -> bool:
    """Whether the depthwise tile kernel takes the shape (its name says so; X alignment is checked only at launch,
    where X 1 byte past alignment takes the per-pixel kernel)."""
    c, kh, kw, strides, dil = case[3], case[5], case[6], case[7], case[9]
    return (
        fmt == nx.E4M3FN
        and c % 4 == 0
        and kh == kw
        and kh in (3, 5)
        and strides[0] == strides[1]
        and strides[0] in (1, 2)
        and dil == (1, 1)
    )


@pytest.mark.parametrize("variant", DEPTHWISE_VARIANTS, ids=lambda v: f"{v[0].name}_x{v[1]}_y{v[2]}")
@pytest.mark.parametrize("epi_cfg", EPILOGUES, ids=["f32_relu", "fp8_res_fp8", "f16_res"])
@pytest.mark.parametrize("kernel", [DEPTHWISE_PIXEL, DEPTHWISE_TILE], ids=["pixel", "tile"])
def test_depthwise_bits(gpu, epi_cfg, variant, kernel):
    fmt, x_offset, y_offset = variant
    for case in [c for c in CASES if is_depthwise(c)]:
        got, want, name, _ = run_conv(
            gpu, case, epi_cfg, 0, fmt=fmt, x_offset=x_offset, y_offset=y_offset, f32_sums=True, depthwise=kernel
        )
        tile = kernel == DEPTHWISE_TILE and tile_applies(case, fmt)
        assert name == ("depthwise_tile" if tile else "depthwise"), (case, fmt.name)
        bad = np.flatnonzero(got.view(np.uint8).ravel() != np.ascontiguousarray(want).view(np.uint8).ravel())
        assert bad.size == 0, f"{case} {fmt.name} {epi_cfg} {name}: {bad.size} bytes differ, first at byte {bad[0]}"


FAST_ROWS_OFF, FAST_ROWS_ON = 1, 2  # fp8ort_epilogue_set_fast_rows
FAST_QUAD_EPILOGUES = [EPILOGUES[1], (True, True, None, False, True, E4M3), (False, False, None, False, False, E4M3)]


@pytest.mark.parametrize("y_scale", [0.11, 0.125], ids=["y_scale", "y_scale_2^-3"])
@pytest.mark.parametrize("fast_rows", [FAST_ROWS_OFF, FAST_ROWS_ON], ids=["general", "fast"])
@pytest.mark.parametrize("epi_cfg", FAST_QUAD_EPILOGUES, ids=["fp8_res_fp8", "bias_relu_fp8", "plain_fp8"])
def test_depthwise_fast_quads_bits(gpu, epi_cfg, fast_rows, y_scale):
    """The depthwise tile kernel's fast quads (fp8ort_epilogue_set_fast_rows 2: a strip's four pixels without a
    branch) and its general epilogue (1) write the reference epilogue of the kernel's own float32 sums bit for bit: an
    E4M3FN residual and Relu, bias and Relu, neither; partial strips at the right border; a Y scale of 0.11 (the
    corrected reciprocal) and of 2^-3 (a power of two, as power_of_two_scales makes)."""
    for case in [c for c in CASES if is_depthwise(c) and tile_applies(c, nx.E4M3FN)]:
        got, want, name, _ = run_conv(
            gpu, case, epi_cfg, 0, f32_sums=True, depthwise=DEPTHWISE_TILE, fast_rows=fast_rows, y_scale=y_scale
        )
        assert name == "depthwise_tile", case
        bad = np.flatnonzero(got.view(np.uint8).ravel() != np.ascontiguousarray(want).view(np.uint8).ravel())
        assert bad.size == 0, f"{case} {epi_cfg}: {bad.size} bytes differ, first at byte {bad[0]}"


def test_conv_silu_fast_quads_keep_the_bits(gpu):
    """SiLU into an E4M3FN output through the fast quads (fp8ort_epilogue_set_fast_rows 2) writes the bits of the
    general epilogue (1), on the same operands, in the sm90a tile epilogues (a 3x3 convolution) and the depthwise tile
    kernel, and a split-K shape (whose epilogue pass never takes them) keeps its bits too; both match the reference
    within the activation's tolerance."""
    cfg = (True, True, None, False, False, E4M3)
    for case in ACTIVATION_CASES[:3]:
        seed = int(np.random.default_rng().integers(2**31))
        outs = []
        for fast in (FAST_ROWS_OFF, FAST_ROWS_ON):
            dw = DEPTHWISE_TILE if is_depthwise(case) else 0
            got, want, name, abs_sum = run_conv(
                gpu, case, cfg, 0, activation=("Silu", None, None), depthwise=dw, fast_rows=fast, seed=seed
            )
            check_output(got, want, cfg[-1], f"conv {case} silu fast {fast} {name}", abs_sum=abs_sum)
            outs.append(got)
        assert outs[0].tobytes() == outs[1].tobytes(), f"{case} {name} seed {seed}: the fast quads changed the bits"


@pytest.mark.parametrize("kernel", [DEPTHWISE_PIXEL, DEPTHWISE_TILE], ids=["pixel", "tile"])
def test_depthwise_nan_weight_at_border(gpu, kernel):
    """A NaN weight code on the kernel's first row and column: outputs whose tap there falls in the padding skip it
    (finite), the others are NaN, as in the per-output sums (the tile kernel's shared window holds zeros there, and
    0 * NaN would be NaN)."""

    def poison(wq):
        wq = wq.copy()
        wq.view(np.uint8)[:, 0, 0, 0] = 0x7F  # E4M3FN NaN
        return wq

    for case in [
        (2, 40, 37, 40, 40, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 40),
        (1, 11, 9, 40, 40, 5, 5, (2, 2), (2, 2, 2, 2), (1, 1), 40),
    ]:
        cfg = (True, True, None, False, False, F32)
        got, want, name, _ = run_conv(gpu, case, cfg, 0, f32_sums=True, depthwise=kernel, weight=poison)
        assert name == ("depthwise_tile" if kernel == DEPTHWISE_TILE else "depthwise")
        nan_got, nan_want = np.isnan(got), np.isnan(want)
        assert nan_want.any() and (~nan_want).any()
        assert np.array_equal(nan_got, nan_want), f"{case} {name}: NaN at {np.argwhere(nan_got != nan_want)[:3]}"
        assert np.array_equal(got[~nan_got].view(np.uint32), want[~nan_want].astype(np.float32).view(np.uint32))


# The few-channel kernel (stems: group 1, in_c <= 4, 3x3 or 7x7 at stride 2, out_c % 4 == 0 up to 64): C = 3 and
# the 4-channel copy with 1, 2 and 4 channels; 16 output channels (16-row tiles), 48 (12 channel quads), 64 (two
# items per thread); shapes with blocks whose window lies inside the image beside border blocks; a C = 4, 7x7, 64
# channel case above 48 KB of shared memory
FEW_CHANNEL_CASES = [
    (2, 17, 23, 3, 32, 3, 3, (2, 2), (1, 1, 1, 1), (1, 1), 1),
    (1, 40, 90, 3, 64, 7, 7, (2, 2), (3, 3, 3, 3), (1, 1), 1),
    (2, 35, 33, 1, 16, 3, 3, (2, 2), (0, 1, 1, 0), (1, 1), 1),
    (1, 20, 40, 4, 8, 7, 7, (2, 2), (3, 3, 3, 3), (1, 1), 1),
    (2, 30, 70, 2, 64, 3, 3, (2, 2), (1, 1, 1, 1), (1, 1), 1),
    (1, 24, 40, 3, 48, 3, 3, (2, 2), (1, 1, 1, 1), (1, 1), 1),
    (1, 30, 40, 4, 64, 7, 7, (2, 2), (3, 3, 3, 3), (1, 1), 1),
]


@pytest.mark.parametrize("offsets", [(0, 0), (1, 1)], ids=["aligned", "x1_y1"])
@pytest.mark.parametrize("epi_cfg", EPILOGUES, ids=["f32_relu", "fp8_res_fp8", "f16_res"])
def test_few_channels_bits(gpu, epi_cfg, offsets):
    """Bit for bit against the float32 sums in the kernel's order; Y one element past alignment takes scalar
    stores."""
    for case in FEW_CHANNEL_CASES:
        got, want, name, _ = run_conv(
            gpu, case, epi_cfg, 0, x_offset=offsets[0], y_offset=offsets[1], f32_sums=True, few_channels=FEW_CHANNELS_ON
        )
        assert name == "few_channels", case
        bad = np.flatnonzero(got.view(np.uint8).ravel() != np.ascontiguousarray(want).view(np.uint8).ravel())
        assert bad.size == 0, f"{case} {epi_cfg} {offsets}: {bad.size} bytes differ, first at byte {bad[0]}"


def test_few_channels_nan_weight_at_border(gpu):
    """A NaN weight code on the kernel's first row and column of channel 0: outputs whose tap there falls in the
    padding skip it (finite), the others are NaN (the shared window holds zeros there, and 0 * NaN would be NaN)."""

    def poison(wq):
        wq = wq.copy()
        wq.view(np.uint8)[:, 0, 0, 0] = 0x7F  # E4M3FN NaN
        return wq

    for case in FEW_CHANNEL_CASES[:2]:
        cfg = (True, True, None, False, False, F32)
        got, want, name, _ = run_conv(gpu, case, cfg, 0, f32_sums=True, weight=poison, few_channels=FEW_CHANNELS_ON)
        assert name == "few_channels"
        nan_got, nan_want = np.isnan(got), np.isnan(want)
        assert nan_want.any() and (~nan_want).any()
        assert np.array_equal(nan_got, nan_want), f"{case}: NaN at {np.argwhere(nan_got != nan_want)[:3]}"
        assert np.array_equal(got[~nan_got].view(np.uint32), want[~nan_want].astype(np.float32).view(np.uint32))


def test_few_channels_only_where_it_applies(gpu):
    """By default 3x3 stems take the few-channel kernel and 7x7 ones keep the implicit GEMM (measured slower there);
    forced on, both take it; other formats, strides, kernel sizes, channel counts and a forced GEMM kernel never do."""
    lib, _ = gpu
    stem = conv_shape(2, 64, 64, 3, 32, (3, 3), (2, 2), (1, 1, 1, 1))
    stem7 = conv_shape(2, 64, 64, 3, 64, (7, 7), (2, 2), (3, 3, 3, 3))
    others = [
        (nx.E5M2, (2, 64, 64, 3, 32, (3, 3), (2, 2), (1, 1, 1, 1))),
        (nx.E4M3FN, (2, 64, 64, 3, 32, (3, 3), (1, 1), (1, 1, 1, 1))),
        (nx.E4M3FN, (2, 64, 64, 3, 32, (5, 5), (2, 2), (2, 2, 2, 2))),
        (nx.E4M3FN, (2, 64, 64, 5, 32, (3, 3), (2, 2), (1, 1, 1, 1))),
        (nx.E4M3FN, (2, 64, 64, 3, 30, (3, 3), (2, 2), (1, 1, 1, 1))),
        (nx.E4M3FN, (2, 64, 64, 3, 128, (3, 3), (2, 2), (1, 1, 1, 1))),
    ]
    e4m3 = nx.E4M3FN.onnx_type

    def name(shape) -> str:
        return lib.fp8ort_conv_kernel_name(e4m3, shape).decode()

    assert name(stem) == "few_channels" and name(stem7) != "few_channels"  # FP8ORT_FEW_CHANNELS unset here
    try:
        lib.fp8ort_conv_set_few_channels(FEW_CHANNELS_OFF)
        assert name(stem) != "few_channels"
        lib.fp8ort_conv_set_few_channels(FEW_CHANNELS_ON)
        assert name(stem) == "few_channels" and name(stem7) == "few_channels"
        for fmt, args in others:
            assert lib.fp8ort_conv_kernel_name(fmt.onnx_type, conv_shape(*args)).decode() != "few_channels", args
        lib.fp8ort_gemm_set_kernel_override(1)
        assert name(stem) != "few_channels"
    finally:
        lib.fp8ort_gemm_set_kernel_override(0)
        lib.fp8ort_conv_set_few_channels(0)


def test_conv_padded_in_c(gpu):
    """The channels the EP pads X and W to: 16k for group-1 shapes the sm90a kernels take, none for the few-channel
    kernel's stems, the im2col route's (the default for 7x7 stems), channel counts already a multiple of 16 and
    grouped convolutions."""
    lib, _ = gpu
    e4m3 = nx.E4M3FN.onnx_type
    stem = conv_shape(2, 64, 64, 3, 32, (3, 3), (2, 2), (1, 1, 1, 1))
    stem7 = conv_shape(2, 64, 64, 3, 64, (7, 7), (2, 2), (3, 3, 3, 3))
    sm90 = lib.fp8ort_conv_kernel_name(e4m3, conv_shape(2, 64, 64, 16, 32, (3, 3), (2, 2), (1, 1, 1, 1)))
    pad16 = 16 if sm90.decode().startswith("wgmma") else 0
    assert lib.fp8ort_conv_padded_in_c(e4m3, stem) == 0  # the few-channel kernel (default for 3x3 stems)
    assert lib.fp8ort_conv_padded_in_c(e4m3, stem7) == 0  # the im2col route on sm90a, the portable kernel elsewhere
    assert lib.fp8ort_conv_padded_in_c(e4m3, conv_shape(2, 9, 9, 40, 64, (3, 3), (1, 1), (1, 1, 1, 1))) == 3 * pad16
    assert lib.fp8ort_conv_padded_in_c(e4m3, conv_shape(2, 9, 9, 32, 64, (3, 3))) == 0
    assert lib.fp8ort_conv_padded_in_c(e4m3, conv_shape(2, 9, 9, 24, 48, (3, 3), group=3)) == 0
    try:
        lib.fp8ort_conv_set_few_channels(FEW_CHANNELS_OFF)
        assert lib.fp8ort_conv_padded_in_c(e4m3, stem) == pad16
        lib.fp8ort_conv_set_few_channels(FEW_CHANNELS_ON)
        assert lib.fp8ort_conv_padded_in_c(e4m3, stem7) == 0
        lib.fp8ort_conv_set_few_channels(0)
        lib.fp8ort_conv_set_im2col(IM2COL_OFF)  # the padded implicit GEMM on sm90a
        assert lib.fp8ort_conv_padded_in_c(e4m3, stem7) == pad16
    finally:
        lib.fp8ort_conv_set_few_channels(0)
        lib.fp8ort_conv_set_im2col(0)


# Stems through the im2col route (sm90a): ResNet's 7x7 stem, 4 and 2 input channels, a 5x5 with dilation, a 5x3 with
# asymmetric strides and pads (K = 160, 208, 64, 48 after rounding up to 16; K of 8..32 would take the small-K GEMM
# and keep the padded form); the last has 2 * 260 * 260 = 135,200 output rows, more than one 131,072-row chunk.
IM2COL_CASES = [
    (2, 33, 29, 3, 64, 7, 7, (2, 2), (3, 3, 3, 3), (1, 1), 1),
    (1, 21, 17, 4, 32, 7, 7, (2, 2), (3, 2, 3, 4), (1, 1), 1),
    (2, 12, 15, 2, 16, 5, 5, (1, 1), (2, 2, 2, 2), (2, 1), 1),
    (1, 16, 16, 3, 24, 5, 3, (1, 2), (0, 1, 2, 1), (1, 1), 1),
    (2, 520, 520, 3, 64, 7, 7, (2, 2), (3, 3, 3, 3), (1, 1), 1),
]


@pytest.mark.parametrize("offsets", [(0, 0), (1, 1)], ids=["aligned", "x1_y1"])
@pytest.mark.parametrize("epi_cfg", EPILOGUES, ids=["f32_relu", "fp8_res_fp8", "f16_res"])
def test_im2col_stems(gpu, epi_cfg, offsets):
    """The im2col route against the reference (the error bound of the wgmma sums), X and Y also one element past
    alignment (A's rows are the workspace's, always aligned); where the device has no sm90a kernel the same shapes
    run on the portable kernel and are checked the same way."""
    check_route(gpu, IM2COL_CASES, epi_cfg, offsets, "im2col_wgmma_sm90a", im2col=IM2COL_ON)


def check_route(gpu, cases, epi_cfg, offsets, route_name, **route):
    """Each case through a route of fp8ort_conv_nhwc_ws (``route``: run_conv's switch for it) against the reference,
    with the error bound of the wgmma sums; the route's kernel name wherever the device has sm90a kernels. The last
    case (the one of more than one workspace chunk) runs once, with a residual input (Z is offset per chunk too)."""
    lib, _ = gpu
    sm90 = lib.fp8ort_conv_kernel_name(E4M3, conv_shape(2, 64, 64, 16, 32, (3, 3), (2, 2), (1, 1, 1, 1))).decode()
    for case in cases:
        if case == cases[-1] and epi_cfg != EPILOGUES[1]:
            continue
        got, want, name, abs_sum = run_conv(gpu, case, epi_cfg, 0, x_offset=offsets[0], y_offset=offsets[1], **route)
        assert name == route_name or not sm90.startswith("wgmma"), (case, name)
        check_output(got, want, epi_cfg[-1], f"{route_name} {case} {epi_cfg} {name}", abs_sum=abs_sum)


def test_im2col_only_where_it_applies(gpu):
    """Large-kernel stems take the im2col route on sm90a, by default and when asked for; turned off, and for 3x3 stems
    (the few-channel kernel, or K = 27 as a small-K GEMM when that is off), 5 or more channels, groups and a kernel
    override, never."""
    lib, _ = gpu
    e4m3 = nx.E4M3FN.onnx_type
    stem7 = conv_shape(2, 64, 64, 3, 64, (7, 7), (2, 2), (3, 3, 3, 3))

    def name(shape, fmt=e4m3) -> str:
        return lib.fp8ort_conv_kernel_name(fmt, shape).decode()

    sm90 = name(conv_shape(2, 64, 64, 16, 32, (3, 3), (2, 2), (1, 1, 1, 1))).startswith("wgmma")
    # on by default (FP8ORT_IM2COL unset here) where the sm90a GEMM runs
    assert name(stem7).startswith("im2col") == sm90, name(stem7)
    try:
        lib.fp8ort_conv_set_im2col(IM2COL_ON)
        if not sm90:
            assert not any(name(conv_shape(*c[:5], c[5:7], *c[7:])).startswith("im2col") for c in IM2COL_CASES)
            pytest.skip("no sm90a kernel on this device: the im2col route does not apply")
        assert name(stem7) == "im2col_wgmma_sm90a"
        assert name(stem7, nx.E5M2.onnx_type) == "im2col_wgmma_sm90a"
        assert lib.fp8ort_conv_workspace_bytes(e4m3, stem7) == 64 * 160 + 2 * 32 * 32 * 160
        for args in [
            (2, 64, 64, 3, 32, (3, 3), (2, 2), (1, 1, 1, 1)),
            (2, 64, 64, 5, 64, (7, 7), (2, 2), (3, 3, 3, 3)),
            (2, 64, 64, 4, 64, (7, 7), (2, 2), (3, 3, 3, 3), (1, 1), 2),
        ]:
            assert not name(conv_shape(*args)).startswith("im2col"), args
        lib.fp8ort_conv_set_few_channels(FEW_CHANNELS_OFF)
        assert not name(conv_shape(2, 64, 64, 3, 32, (3, 3), (2, 2), (1, 1, 1, 1))).startswith("im2col")
        lib.fp8ort_conv_set_few_channels(FEW_CHANNELS_ON)
        assert name(stem7) == "few_channels"
        lib.fp8ort_conv_set_few_channels(0)
        lib.fp8ort_gemm_set_kernel_override(4)
        assert name(stem7) != "im2col_wgmma_sm90a"
        lib.fp8ort_gemm_set_kernel_override(0)
        lib.fp8ort_conv_set_im2col(IM2COL_OFF)
        assert name(stem7) == "mma_sync"  # as given, unpadded (the EP pads it to 16 channels for wgmma)
    finally:
        lib.fp8ort_gemm_set_kernel_override(0)
        lib.fp8ort_conv_set_few_channels(0)
        lib.fp8ort_conv_set_im2col(0)


# Strided 1x1 convolutions through the subsampling route (sm90a): ResNet's shortcut shape, odd sizes, asymmetric
# strides, and 2 * 91 * 91 = 16,562 output rows of 1,024 channels, more than one 16 MB chunk (16,384 rows).
STRIDED_1X1_CASES = [
    (2, 14, 14, 64, 128, 1, 1, (2, 2), (0, 0, 0, 0), (1, 1), 1),
    (3, 9, 11, 48, 40, 1, 1, (2, 2), (0, 0, 0, 0), (1, 1), 1),
    (1, 10, 13, 64, 24, 1, 1, (3, 2), (0, 0, 0, 0), (1, 1), 1),
    (2, 182, 91, 1024, 32, 1, 1, (2, 1), (0, 0, 0, 0), (1, 1), 1),
]


@pytest.mark.parametrize("offsets", [(0, 0), (1, 1)], ids=["aligned", "x1_y1"])
@pytest.mark.parametrize("epi_cfg", EPILOGUES, ids=["f32_relu", "fp8_res_fp8", "f16_res"])
def test_strided_1x1(gpu, epi_cfg, offsets):
    """The subsampling route against the reference (the error bound of the wgmma sums); X one element past alignment
    makes it fall back to the implicit GEMM (16-byte pieces), Y off alignment it keeps. Where the device has no
    sm90a kernel the same shapes run on the portable kernel and are checked the same way."""
    check_route(gpu, STRIDED_1X1_CASES, epi_cfg, offsets, "subsample_wgmma_sm90a", strided_1x1=STRIDED_1X1_ON)


def test_strided_1x1_only_where_it_applies(gpu):
    """Strided 1x1 convolutions take the subsampling route on sm90a by default; stride 1, padding, groups, in_c % 16
    != 0, a kernel override or the route turned off keep them off it."""
    lib, _ = gpu
    e4m3 = nx.E4M3FN.onnx_type
    shortcut = conv_shape(2, 56, 56, 256, 512, (1, 1), (2, 2), (0, 0, 0, 0))

    def name(shape) -> str:
        return lib.fp8ort_conv_kernel_name(e4m3, shape).decode()

    sm90 = name(conv_shape(2, 64, 64, 16, 32, (3, 3), (2, 2), (1, 1, 1, 1))).startswith("wgmma")
    assert (name(shortcut) == "subsample_wgmma_sm90a") == sm90, name(shortcut)
    if not sm90:
        pytest.skip("no sm90a kernel on this device: the subsampling route does not apply")
    assert lib.fp8ort_conv_workspace_bytes(e4m3, shortcut) == 2 * 28 * 28 * 256  # one chunk: every row
    for args in [
        (2, 56, 56, 256, 512, (1, 1), (1, 1), (0, 0, 0, 0)),
        (2, 56, 56, 256, 512, (1, 1), (2, 2), (1, 1, 1, 1)),
        (2, 56, 56, 256, 512, (1, 1), (2, 2), (0, 0, 0, 0), (1, 1), 2),
        (2, 56, 56, 40, 64, (1, 1), (2, 2), (0, 0, 0, 0)),
        (2, 56, 56, 256, 512, (3, 3), (2, 2), (1, 1, 1, 1)),
    ]:
        assert not name(conv_shape(*args)).startswith("subsample"), args
    try:
        lib.fp8ort_gemm_set_kernel_override(4)
        assert not name(shortcut).startswith("subsample")
        lib.fp8ort_gemm_set_kernel_override(0)
        lib.fp8ort_conv_set_strided_1x1(STRIDED_1X1_OFF)
        assert name(shortcut).startswith("wgmma")
    finally:
        lib.fp8ort_gemm_set_kernel_override(0)
        lib.fp8ort_conv_set_strided_1x1(0)


# Fused activations through the convolution kernels: a 3x3, a depthwise, a split-K shape (on sm90a) and a stem.
SPLIT_K_CASE = next(c for c in CASES if c[:5] == (1, 7, 7, 512, 512))
ACTIVATION_CASES = [CASES[0], CASES[3], SPLIT_K_CASE, FEW_CHANNEL_CASES[0]]
ACTIVATION_EPILOGUES = [
    (True, True, None, False, False, F32),
    (True, True, E4M3, True, False, E4M3),
]


# (GEMM kernel override, SiLU variant, depthwise variant, few-channel kernel) per activation: the automatic and
# portable kernels, for SiLU the automatic kernels again with the sm90a tile epilogues' out-of-line call (the default
# inlines it), the depthwise tile kernel on the depthwise case and the few-channel kernel on two stems
ACTIVATION_ROWS = [
    pytest.param(spec, kernel, silu, dw, few, id=f"{activation_id(spec)}-{row}")
    for spec in ACTIVATION_SPECS
    for kernel, silu, dw, few, row in [
        (0, 0, 0, 0, "auto"),
        (1, 0, 0, 0, "portable"),
        (0, SILU_CALL, 0, 0, "auto_silu_call"),
        (0, 0, DEPTHWISE_TILE, 0, "depthwise_tile"),
        (0, 0, 0, FEW_CHANNELS_ON, "few_channels"),
    ]
    if silu == 0 or spec[0] == "Silu"
]


@pytest.mark.parametrize("spec, kernel, silu, dw, few", ACTIVATION_ROWS)
def test_conv_activations(gpu, spec, kernel, silu, dw, few):
    cases = ACTIVATION_CASES
    if dw:
        cases = [c for c in ACTIVATION_CASES if is_depthwise(c)]
    if few:
        cases = FEW_CHANNEL_CASES[:2]
    for case in cases:
        for cfg in ACTIVATION_EPILOGUES:
            result = run_conv(gpu, case, cfg, kernel, activation=spec, silu=silu, depthwise=dw, few_channels=few)
            assert result is not None
            got, want, name, abs_sum = result
            assert not few or name == "few_channels"
            print(
                case,
                spec,
                cfg,
                name,
                check_output(got, want, cfg[-1], f"conv {case} {spec} {cfg} {name}", abs_sum=abs_sum),
            )


def test_conv_refuses_bad_shapes(gpu):
    lib, rt = gpu
    d = rt.alloc(4096)
    epi = EpilogueCase(
        np.random.default_rng(0),
        rt,
        nx.E4M3FN,
        8,
        (1, 4, 4, 8),
        per_channel=False,
        bias=False,
        z_type=None,
        z_scaled=False,
        relu=False,
        y_type=F32,
        x_scale=1.0,
        w_scale=np.ones(1, np.float32),
    )
    bad_group = conv_shape(1, 4, 4, 6, 8, (1, 1), group=4)
    assert lib.fp8ort_conv_nhwc(d, d, nx.E4M3FN.onnx_type, bad_group, epi.struct, d, None) == 1
    assert b"group" in lib.fp8ort_gpu_last_error()
    too_big = conv_shape(1, 2, 2, 8, 8, (5, 5))
    assert lib.fp8ort_conv_nhwc(d, d, nx.E4M3FN.onnx_type, too_big, epi.struct, d, None) == 1
    assert b"does not fit" in lib.fp8ort_gpu_last_error()
