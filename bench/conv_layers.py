"""Per-layer GPU time of ResNet-50's convolutions: fp8ort_conv_nhwc (FP8 NHWC, the epilogue ResNet uses) against
cuDNN FP16 channels_last through PyTorch, and fp8ort_gemm for the 1x1 stride-1 layers (the same product as a GEMM).
fp8ort's calls get split-K scratch where they ask for it, as the CUDA EP gives it.

Shapes come from fp8ort.zoo.resnet50; each unique shape is timed once and weighted by how often the
model uses it. Median of CUDA-event timings over rotated input buffers.

    python3 bench/conv_layers.py [--batch 256] [--lib build/libfp8ort_kernels.so] [--json out.json]
"""

from __future__ import annotations

import argparse
import collections
import ctypes
import datetime
import json
import sys
from pathlib import Path

import torch
from onnx import helper, shape_inference

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "gpu"))
sys.path.insert(0, str(ROOT))
from gpu_lib import ConvShape, Epilogue, load_kernels  # noqa: E402

from fp8ort import zoo  # noqa: E402

E4M3, F16 = 17, 10
NBUF = 4  # input buffers rotated so that repeated runs do not all hit L2


def resnet50_convs() -> list[tuple[tuple, int]]:
    """[(c, h, w, m, kh, kw, stride, pad), count] of every Conv in ResNet-50 at batch 1."""
    model = shape_inference.infer_shapes(zoo.resnet50(batch=1))
    shapes = {
        vi.name: [d.dim_value for d in vi.type.tensor_type.shape.dim]
        for vi in list(model.graph.value_info) + list(model.graph.input)
    }
    inits = {i.name: list(i.dims) for i in model.graph.initializer}
    counts: collections.Counter = collections.Counter()
    for node in model.graph.node:
        if node.op_type != "Conv":
            continue
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        _, c, h, w = shapes[node.input[0]]
        m, _, kh, kw = inits[node.input[1]]
        counts[(c, h, w, m, kh, kw, attrs.get("strides", [1, 1])[0], attrs.get("pads", [0] * 4)[0])] += 1
    return sorted(counts.items(), key=lambda kv: -kv[1])


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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lib", default=str(ROOT / "build" / "libfp8ort_kernels.so"))
    ap.add_argument("--batch", type=int, nargs="+", default=[256, 32])
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--json")
    args = ap.parse_args()
    torch.backends.cudnn.benchmark = True
    lib = load_kernels(Path(args.lib))
    stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    dev = "cuda"
    rows = []
    for batch in args.batch:
        totals = collections.Counter()
        for (c, h, w, m, kh, kw, stride, pad), count in resnet50_convs():
            s = ConvShape(
                batch=batch,
                in_h=h,
                in_w=w,
                in_c=c,
                out_c=m,
                kernel_h=kh,
                kernel_w=kw,
                stride_h=stride,
                stride_w=stride,
                pad_top=pad,
                pad_left=pad,
                pad_bottom=pad,
                pad_right=pad,
                dilation_h=1,
                dilation_w=1,
                group=1,
            )
            oh, ow = lib.fp8ort_conv_out_h(s), lib.fp8ort_conv_out_w(s)
            xs = [(torch.randn(batch, h, w, c, device=dev) * 2).to(torch.float8_e4m3fn) for _ in range(NBUF)]
            wt = (torch.randn(m, c, kh, kw, device=dev) * 2).to(torch.float8_e4m3fn)
            packed = torch.empty(lib.fp8ort_conv_packed_bytes(s), dtype=torch.uint8, device=dev)
            assert lib.fp8ort_conv_pack_weight(wt.data_ptr(), s, packed.data_ptr(), stream) == 0
            y = torch.empty(batch, oh, ow, m, dtype=torch.uint8, device=dev)
            one = torch.ones(1, device=dev)
            wsc = torch.full((m,), 0.01, device=dev)
            bias = torch.randn(m, device=dev)
            ep = Epilogue(
                x_scale=one.data_ptr(),
                w_scale=wsc.data_ptr(),
                w_scale_count=m,
                bias=bias.data_ptr(),
                y_scale=one.data_ptr(),
                relu=1,
                y_type=E4M3,
            )

            def ours(i, xs=xs, packed=packed, s=s, ep=ep, y=y):
                # split-K scratch as the CUDA EP passes it (0 bytes: one pass); sized under the current override
                nbytes = lib.fp8ort_conv_workspace_bytes(E4M3, s)
                ws = workspace(nbytes)
                st = lib.fp8ort_conv_nhwc_ws(
                    xs[i % NBUF].data_ptr(), packed.data_ptr(), E4M3, s, ep, y.data_ptr(), ws, nbytes, stream
                )
                assert st == 0, lib.fp8ort_gpu_last_error()

            x16 = [x.to(torch.float16).permute(0, 3, 1, 2) for x in xs]  # NCHW view of NHWC memory: channels_last
            w16 = wt.to(torch.float16).contiguous(memory_format=torch.channels_last)

            def cudnn(i, x16=x16, w16=w16, stride=stride, pad=pad):
                torch.nn.functional.conv2d(x16[i % NBUF], w16, None, stride, pad)

            # The CUDA-EP kernel pads in_c to a multiple of 16 with zero channels (activations and weight) when
            # that gives the wgmma kernel (the RGB stem); time that too, without the padding quantize itself.
            padded = {}
            if c % 16:
                pc = (c + 15) // 16 * 16
                sp = ConvShape(**{f: getattr(s, f) for f, _ in ConvShape._fields_})
                sp.in_c = pc
                if lib.fp8ort_conv_kernel_name(E4M3, sp).decode().startswith("wgmma"):
                    xps = [torch.nn.functional.pad(x.view(torch.uint8), (0, pc - c)) for x in xs]
                    wp = torch.nn.functional.pad(wt.view(torch.uint8).permute(0, 2, 3, 1), (0, pc - c))
                    packed_p = torch.empty(lib.fp8ort_conv_packed_bytes(sp), dtype=torch.uint8, device=dev)
                    wp = wp.permute(0, 3, 1, 2).contiguous()
                    assert lib.fp8ort_conv_pack_weight(wp.data_ptr(), sp, packed_p.data_ptr(), stream) == 0

                    def ours_padded(i, xps=xps, packed_p=packed_p, sp=sp, ep=ep, y=y):
                        nbytes = lib.fp8ort_conv_workspace_bytes(E4M3, sp)
                        st = lib.fp8ort_conv_nhwc_ws(
                            xps[i % NBUF].data_ptr(),
                            packed_p.data_ptr(),
                            E4M3,
                            sp,
                            ep,
                            y.data_ptr(),
                            workspace(nbytes),
                            nbytes,
                            stream,
                        )
                        assert st == 0, lib.fp8ort_gpu_last_error()

                    padded = dict(
                        padded_c=pc,
                        padded_kernel=lib.fp8ort_conv_kernel_name(E4M3, sp).decode(),
                        ours_padded_ms=median_ms(ours_padded, args.iters),
                    )

            flop = 2.0 * batch * oh * ow * m * c * kh * kw
            row = dict(
                batch=batch,
                c=c,
                h=h,
                w=w,
                m=m,
                k=f"{kh}x{kw}",
                stride=stride,
                count=count,
                gflop=round(flop / 1e9, 2),
                kernel=lib.fp8ort_conv_kernel_name(E4M3, s).decode(),
                ours_ms=median_ms(ours, args.iters),
                cudnn_fp16_ms=median_ms(cudnn, args.iters),
                **padded,
            )
            if row["kernel"].startswith("wgmma") and not (kh == kw == 1 and stride == 1):
                for key, override in (("conv_1block_ms", 4), ("conv_2blocks_ms", 5)):
                    lib.fp8ort_gemm_set_kernel_override(override)
                    row[key] = median_ms(ours, args.iters)
                lib.fp8ort_gemm_set_kernel_override(0)
            if kh == kw == 1 and stride == 1:
                mm = batch * h * w

                def gemm(i, xs=xs, packed=packed, mm=mm, m=m, c=c, ep=ep, y=y):
                    nbytes = lib.fp8ort_gemm_workspace_bytes(E4M3, mm, m, c)
                    st = lib.fp8ort_gemm_ws(
                        xs[i % NBUF].data_ptr(),
                        packed.data_ptr(),
                        E4M3,
                        mm,
                        m,
                        c,
                        ep,
                        y.data_ptr(),
                        workspace(nbytes),
                        nbytes,
                        stream,
                    )
                    assert st == 0, lib.fp8ort_gpu_last_error()

                row["ours_gemm_ms"] = median_ms(gemm, args.iters)
                row["gemm_kernel"] = lib.fp8ort_gemm_kernel_name(E4M3, mm, m, c).decode()
                if row["gemm_kernel"].startswith("wgmma"):  # every sm90a variant, whichever auto picks
                    for key, override in (("gemm_1block_ms", 4), ("gemm_2blocks_ms", 5), ("gemm_stream_ms", 6)):
                        lib.fp8ort_gemm_set_kernel_override(override)
                        row[key] = median_ms(gemm, args.iters)
                    lib.fp8ort_gemm_set_kernel_override(0)
            for key in (
                "ours_ms",
                "cudnn_fp16_ms",
                "ours_gemm_ms",
                "gemm_1block_ms",
                "gemm_2blocks_ms",
                "gemm_stream_ms",
                "conv_1block_ms",
                "conv_2blocks_ms",
                "ours_padded_ms",
            ):
                if key in row:
                    row[key] = round(row[key], 4)
                    totals[key] += row[key] * count
            totals["best_ours_ms"] += (
                min(row["ours_ms"], row.get("ours_gemm_ms", 1e9), row.get("ours_padded_ms", 1e9)) * count
            )
            row["ours_tflops"] = round(flop / row["ours_ms"] / 1e9, 1)
            row["cudnn_tflops"] = round(flop / row["cudnn_fp16_ms"] / 1e9, 1)
            rows.append(row)
            print(json.dumps(row), flush=True)
            del xs, x16
        summary = ", ".join(f"{k}={v:.3f}" for k, v in totals.items())
        print(f"batch {batch}: sum over the model's convs (ms): {summary}", flush=True)
        rows.append(dict(batch=batch, totals={k: round(v, 3) for k, v in totals.items()}))
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                dict(
                    benchmark="ResNet-50 conv layers: fp8ort_conv_nhwc (E4M3 in/out, bias, relu) "
                    "vs cuDNN FP16 channels_last",
                    command=" ".join(["python3", *sys.argv]),
                    gpu=torch.cuda.get_device_name(),
                    torch=torch.__version__,
                    date=datetime.datetime.now(datetime.timezone.utc).isoformat(),
                    results=rows,
                ),
                indent=1,
            )
            + "\n"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
