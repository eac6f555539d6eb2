"""Per-layer GPU time of a quantized export's convolutions: fp8ort_conv_nhwc (FP8 NHWC, with the fused activation,
residual and output type the quantizer chose for that layer) against cuDNN FP16 channels_last through PyTorch (the
convolution alone), and every sm90a variant of the layer's kernel (GEMM variants for 1x1 stride-1 layers, one or
two blocks for the implicit-GEMM convolutions, SiLU called out of line in the tile epilogue for SiLU layers, the
per-pixel and tile kernels for depthwise layers, the small-K kernel for 1x1 layers with K <= 32, the few-channel
kernel for RGB stems), plus the same call
without its activation where the layer has a transcendental one (SiLU, Sigmoid, ...). fp8ort's calls get split-K
scratch where they ask for it, as the EP gives it.

Layers come from the model as users export it (torchvision ResNet-50, timm EfficientNet-B0: bench/pytorch_side.py)
and from fp8ort.quantize's output for it (bench/model_convs.py); each unique layer is timed once and weighted by how
often the model runs it. Median of CUDA-event timings over rotated input buffers.

    python3 bench/conv_layers.py [--model resnet50|efficientnet_b0] [--batch 256 32] \
        [--lib build-gpu/libfp8ort_kernels.so] [--json out.json]
"""

from __future__ import annotations

import argparse
import collections
import ctypes
import datetime
import json
import sys
from pathlib import Path

import onnx
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "gpu"))
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))
from gpu_lib import ACTIVATION_CODES, ConvShape, Epilogue, conv_shape, load_kernels  # noqa: E402
from model_convs import ConvLayer, model_convs  # noqa: E402
from pytorch_side import export_and_quantize  # noqa: E402

E4M3, F32 = 17, 1
NBUF = 4  # input buffers rotated so that repeated runs do not all hit L2
SILU_CALL = 1  # fp8ort_epilogue_set_silu_variant (the default inlines SiLU)
DEPTHWISE_PIXEL, DEPTHWISE_TILE = 1, 2  # fp8ort_depthwise_variant
SMALL_K = 7  # fp8ort_gemm_set_kernel_override: the small-K kernel on the vector units
FEW_CHANNELS_ON = 2  # fp8ort_conv_set_few_channels: the few-channel kernel for stems


_WORKSPACE: list = []


def workspace(nbytes: int) -> int:
    """Device pointer to at least nbytes of scratch (kept and grown across layers, as an arena would), or 0."""
    if nbytes == 0:
        return 0
    if not _WORKSPACE or _WORKSPACE[0].numel() < nbytes:
        _WORKSPACE[:] = [torch.empty(nbytes, dtype=torch.uint8, device="cuda")]
    return _WORKSPACE[0].data_ptr()


def median_ms(fn, iters: int) -> float:
    for _ in range(3):
        fn(0)
    times = []
    for i in range(iters):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn(i)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return sorted(times)[len(times) // 2]


def layer_shape(layer: ConvLayer, batch: int, in_c: int | None = None) -> ConvShape:
    return conv_shape(
        batch,
        layer.h,
        layer.w,
        in_c or layer.c,
        layer.m,
        (layer.kh, layer.kw),
        layer.stride,
        layer.pads,
        layer.dilation,
        layer.group,
    )


def time_layer(lib, layer: ConvLayer, batch: int, iters: int, stream: ctypes.c_void_p) -> dict:
    """One layer's row: fp8ort's automatic choice, its variants, cuDNN FP16."""
    dev = "cuda"
    c, h, w, m, kh, kw, g = layer.c, layer.h, layer.w, layer.m, layer.kh, layer.kw, layer.group
    s = layer_shape(layer, batch)
    oh, ow = lib.fp8ort_conv_out_h(s), lib.fp8ort_conv_out_w(s)
    xs = [(torch.randn(batch, h, w, c, device=dev) * 2).to(torch.float8_e4m3fn) for _ in range(NBUF)]
    wt = (torch.randn(m, c // g, kh, kw, device=dev) * 2).to(torch.float8_e4m3fn)
    packed = torch.empty(lib.fp8ort_conv_packed_bytes(s), dtype=torch.uint8, device=dev)
    assert lib.fp8ort_conv_pack_weight(wt.data_ptr(), s, packed.data_ptr(), stream) == 0, lib.fp8ort_gpu_last_error()
    y = torch.empty(batch, oh, ow, m, dtype=torch.uint8 if layer.fp8_out else torch.float32, device=dev)
    z = (torch.randn(batch, oh, ow, m, device=dev) * 2).to(torch.float8_e4m3fn) if layer.residual else None
    one = torch.ones(1, device=dev)
    wsc = torch.full((m,), 0.01, device=dev)
    bias = torch.randn(m, device=dev)
    act = ACTIVATION_CODES[layer.activation]

    def epilogue(activation: int) -> Epilogue:
        return Epilogue(
            x_scale=one.data_ptr(),
            w_scale=wsc.data_ptr(),
            w_scale_count=m,
            bias=bias.data_ptr(),
            z=z.data_ptr() if z is not None else None,
            z_type=E4M3,
            z_scale=one.data_ptr() if z is not None else None,
            y_scale=one.data_ptr(),
            relu=0,
            y_type=E4M3 if layer.fp8_out else F32,
            activation=activation,
        )

    def conv_call(shape, weights, inputs, ep):
        def run(i):
            # split-K scratch as the EP passes it (0 bytes: one pass), sized under the current override
            nbytes = lib.fp8ort_conv_workspace_bytes(E4M3, shape)
            st = lib.fp8ort_conv_nhwc_ws(
                inputs[i % NBUF].data_ptr(),
                weights.data_ptr(),
                E4M3,
                shape,
                ep,
                y.data_ptr(),
                workspace(nbytes),
                nbytes,
                stream,
            )
            assert st == 0, lib.fp8ort_gpu_last_error()

        return run

    # The EP pads in_c to a multiple of 16 with zero channels (activations and weight) where the kernel library asks
    # for it (fp8ort_conv_padded_in_c: the wgmma kernel on 7x7 RGB stems, 40-channel inputs, the squeeze-excitation
    # expands): that padded call is the one timed as `ours_ms` then, without the EP's copy of X into the padded
    # layout (fp8ort_quantize_padded).
    shape, weights, inputs, padded = s, packed, xs, {}
    pc = lib.fp8ort_conv_padded_in_c(E4M3, s)
    if pc:
        sp = layer_shape(layer, batch, in_c=pc)
        inputs = [torch.nn.functional.pad(x.view(torch.uint8), (0, pc - c)) for x in xs]
        wp = torch.nn.functional.pad(wt.view(torch.uint8).permute(0, 2, 3, 1), (0, pc - c))
        weights = torch.empty(lib.fp8ort_conv_packed_bytes(sp), dtype=torch.uint8, device=dev)
        wp = wp.permute(0, 3, 1, 2).contiguous()
        assert lib.fp8ort_conv_pack_weight(wp.data_ptr(), sp, weights.data_ptr(), stream) == 0
        shape, padded = sp, dict(padded_c=pc, unpadded_ms=median_ms(conv_call(s, packed, xs, epilogue(act)), iters))

    ours = conv_call(shape, weights, inputs, epilogue(act))
    x16 = [x.to(torch.float16).permute(0, 3, 1, 2) for x in xs]  # NCHW view of NHWC memory: channels_last
    w16 = wt.to(torch.float16).contiguous(memory_format=torch.channels_last)
    sym = layer.pads[0] == layer.pads[2] and layer.pads[1] == layer.pads[3]

    def cudnn(i):
        torch.nn.functional.conv2d(
            x16[i % NBUF], w16, None, layer.stride, layer.pads[:2] if sym else 0, layer.dilation, g
        )

    flop = 2.0 * layer.macs(batch)
    mbytes = (
        batch * h * w * c + m * (c // g) * kh * kw + batch * oh * ow * m * (y.element_size() + (z is not None))
    ) / 1e6
    row = dict(
        batch=batch,
        c=c,
        h=h,
        w=w,
        m=m,
        k=f"{kh}x{kw}",
        stride=list(layer.stride),
        group=g,
        activation=layer.activation,
        residual=layer.residual,
        fp8_out=layer.fp8_out,
        gflop=round(flop / 1e9, 3),
        mbytes=round(mbytes, 1),
        kernel=lib.fp8ort_conv_kernel_name(E4M3, shape).decode(),
        ours_ms=median_ms(ours, iters),
        **padded,
    )
    if sym:
        row["cudnn_fp16_ms"] = median_ms(cudnn, iters)
    if act > 1:  # the same call without its activation: what the activation costs inside the epilogue
        row["ours_noact_ms"] = median_ms(conv_call(shape, weights, inputs, epilogue(0)), iters)
    overrides = []
    if row["kernel"].startswith("wgmma") and layer.activation == "Silu":
        lib.fp8ort_epilogue_set_silu_variant(SILU_CALL)  # read by every fp8ort_conv_nhwc call
        row["ours_silu_call_ms"] = median_ms(ours, iters)
        lib.fp8ort_epilogue_set_silu_variant(0)
    if layer.depthwise:  # each depthwise kernel forced (fp8ort_conv_set_depthwise_variant; auto picks per shape)
        for key, variant in (("dw_pixel", DEPTHWISE_PIXEL), ("dw_tile", DEPTHWISE_TILE)):
            lib.fp8ort_conv_set_depthwise_variant(variant)
            row[f"{key}_kernel"] = lib.fp8ort_conv_kernel_name(E4M3, shape).decode()
            row[f"{key}_ms"] = median_ms(ours, iters)
        lib.fp8ort_conv_set_depthwise_variant(0)
    if row["kernel"].startswith("wgmma") and not layer.depthwise:
        if layer.pointwise:  # every sm90a GEMM variant, whichever auto picks
            overrides = [("gemm_1block_ms", 4), ("gemm_2blocks_ms", 5), ("gemm_stream_ms", 6)]
        else:
            overrides = [("conv_1block_ms", 4), ("conv_2blocks_ms", 5)]
    if c <= 4 and g == 1:  # the few-channel kernel forced on (the default takes it for 3x3 stems only), unpadded
        lib.fp8ort_conv_set_few_channels(FEW_CHANNELS_ON)
        if lib.fp8ort_conv_kernel_name(E4M3, s).decode() == "few_channels":
            row["few_channels_ms"] = median_ms(conv_call(s, packed, xs, epilogue(act)), iters)
        lib.fp8ort_conv_set_few_channels(0)
    if layer.pointwise:  # the small-K kernel on the vector units (override 7) where it takes the layer
        lib.fp8ort_gemm_set_kernel_override(SMALL_K)
        if lib.fp8ort_conv_kernel_name(E4M3, shape).decode() == "small_k":
            overrides.append(("gemm_small_k_ms", SMALL_K))
    for key, override in overrides:
        lib.fp8ort_gemm_set_kernel_override(override)
        row[key] = median_ms(ours, iters)
    lib.fp8ort_gemm_set_kernel_override(0)
    for key in list(row):
        if key.endswith("_ms"):
            row[key] = round(row[key], 4)
    row["ours_tflops"] = round(flop / row["ours_ms"] / 1e9, 1)
    row["ours_tbps"] = round(mbytes / row["ours_ms"] / 1e6, 2)  # bytes moved at least once, per second
    if "cudnn_fp16_ms" in row:
        row["cudnn_tflops"] = round(flop / row["cudnn_fp16_ms"] / 1e9, 1)
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="resnet50", choices=["resnet50", "efficientnet_b0"])
    ap.add_argument("--lib", default=str(ROOT / "build" / "libfp8ort_kernels.so"))
    ap.add_argument("--batch", type=int, nargs="+", default=[256, 32])
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--work", default="/tmp/fp8ort_conv_layers", help="where the export and its quantized model go")
    ap.add_argument("--json")
    args = ap.parse_args()
    torch.backends.cudnn.benchmark = True
    fp32, fp8 = (onnx.load(str(p)) for p in export_and_quantize(args.model, Path(args.work)))
    layers, left_float = model_convs(fp32, fp8)
    if left_float:
        print(f"left in float by the quantizer, not timed: {', '.join(left_float)}", flush=True)
    lib = load_kernels(Path(args.lib))
    stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    rows = []
    for batch in args.batch:
        totals = collections.Counter()
        by_kind = collections.Counter()
        for layer, count in layers:
            row = time_layer(lib, layer, batch, args.iters, stream)
            row["count"] = count
            for key, value in row.items():
                if key.endswith("_ms") and key != "unpadded_ms":
                    totals[key] += value * count
            best = min(v for k, v in row.items() if k.endswith("_ms") and k not in ("cudnn_fp16_ms", "ours_noact_ms"))
            totals["best_ours_ms"] += best * count
            kind = "depthwise" if layer.depthwise else ("pointwise" if layer.pointwise else "conv")
            by_kind[f"{kind}_ours_ms"] += row["ours_ms"] * count
            rows.append(row)
            print(json.dumps(row), flush=True)
            torch.cuda.empty_cache()
        totals.update(by_kind)
        summary = ", ".join(f"{k}={v:.3f}" for k, v in totals.items())
        print(f"batch {batch}: sum over the model's convs (ms): {summary}", flush=True)
        rows.append(dict(batch=batch, totals={k: round(v, 3) for k, v in totals.items()}))
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                dict(
                    benchmark=f"{args.model} conv layers (export + fp8ort.quantize defaults): fp8ort_conv_nhwc with "
                    "each layer's epilogue vs cuDNN FP16 channels_last (convolution alone)",
                    command=" ".join(["python3", *sys.argv]),
                    gpu=torch.cuda.get_device_name(),
                    torch=torch.__version__,
                    date=datetime.datetime.now(datetime.timezone.utc).isoformat(),
                    left_in_float=left_float,
                    results=rows,
                ),
                indent=1,
            )
            + "\n"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
