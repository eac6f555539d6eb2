"""One FP8 convolution (NHWC, E4M3FN in and out, per-channel scale, bias, optional SiLU; depthwise unless --m and
--group say otherwise) called a few times through the kernel test library, for Nsight Compute to profile, and timed
with CUDA events beside cuDNN FP16 channels_last.

    ncu --kernel-name regex:"depthwise|gemm|conv" --launch-skip 2 --launch-count 1 --section SpeedOfLight \
        --section WarpStateStats --section Occupancy python3 bench/profile_conv.py --c 32 --hw 112 --k 3 --s 1
"""

from __future__ import annotations

import argparse
import ctypes
import os
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "gpu"))
from gpu_lib import ACTIVATION_CODES, Epilogue, conv_shape, load_kernels  # noqa: E402

E4M3 = 17


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--c", type=int, default=32)
    ap.add_argument("--hw", type=int, default=112)
    ap.add_argument("--k", type=int, default=3)
    ap.add_argument("--s", type=int, default=1)
    ap.add_argument("--m", type=int, default=0, help="output channels (default: --c)")
    ap.add_argument("--group", type=int, default=0, help="groups (default: --c, depthwise)")
    ap.add_argument("--act", default="Silu", help='activation (gpu_lib.ACTIVATION_CODES; "" for none)')
    ap.add_argument("--z", action="store_true", help="an E4M3FN residual Z of the output's shape")
    ap.add_argument("--calls", type=int, default=5)
    ap.add_argument("--lib", default=os.environ.get("FP8ORT_KERNELS_LIB", str(ROOT / "build-gpu/libfp8ort_kernels.so")))
    a = ap.parse_args()
    lib = load_kernels(Path(a.lib))
    dev = "cuda"
    pad = a.k // 2
    m, g = a.m or a.c, a.group or a.c
    s = conv_shape(a.batch, a.hw, a.hw, a.c, m, (a.k, a.k), (a.s, a.s), (pad, pad, pad, pad), (1, 1), g)
    oh, ow = lib.fp8ort_conv_out_h(s), lib.fp8ort_conv_out_w(s)
    x = (torch.randn(a.batch, a.hw, a.hw, a.c, device=dev) * 2).to(torch.float8_e4m3fn)
    w = (torch.randn(m, a.c // g, a.k, a.k, device=dev) * 2).to(torch.float8_e4m3fn)
    packed = torch.empty(lib.fp8ort_conv_packed_bytes(s), dtype=torch.uint8, device=dev)
    stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    assert lib.fp8ort_conv_pack_weight(w.data_ptr(), s, packed.data_ptr(), stream) == 0
    y = torch.empty(a.batch, oh, ow, m, dtype=torch.uint8, device=dev)
    one, wsc, bias = torch.ones(1, device=dev), torch.full((m,), 0.01, device=dev), torch.randn(m, device=dev)
    z = (torch.randn(a.batch, oh, ow, m, device=dev) * 2).to(torch.float8_e4m3fn) if a.z else None
    ep = Epilogue(
        x_scale=one.data_ptr(),
        w_scale=wsc.data_ptr(),
        w_scale_count=m,
        bias=bias.data_ptr(),
        z=z.data_ptr() if a.z else None,
        z_type=E4M3,
        z_scale=one.data_ptr() if a.z else None,
        y_scale=one.data_ptr(),
        relu=0,
        y_type=E4M3,
        activation=ACTIVATION_CODES[a.act],
    )
    print("kernel:", lib.fp8ort_conv_kernel_name(E4M3, s).decode())
    # the workspace the EP gives the call (split K, the im2col route's rows)
    ws_bytes = lib.fp8ort_conv_workspace_bytes(E4M3, s)
    ws = torch.empty(max(ws_bytes, 1), dtype=torch.uint8, device=dev)
    times = []
    for _ in range(a.calls):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        st = lib.fp8ort_conv_nhwc_ws(
            x.data_ptr(), packed.data_ptr(), E4M3, s, ep, y.data_ptr(), ws.data_ptr(), ws_bytes, stream
        )
        assert st == 0, lib.fp8ort_gpu_last_error()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    x16 = x.to(torch.float16).permute(0, 3, 1, 2)
    w16 = w.to(torch.float16).contiguous(memory_format=torch.channels_last)
    t16 = []
    for _ in range(a.calls):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        torch.nn.functional.conv2d(x16, w16, None, a.s, pad, 1, g)
        end.record()
        end.synchronize()
        t16.append(start.elapsed_time(end))
    print(
        f"c={a.c} hw={a.hw} k={a.k} s={a.s} batch={a.batch}: fp8ort {sorted(times)[len(times) // 2]:.4f} ms, "
        f"cuDNN FP16 {sorted(t16)[len(t16) // 2]:.4f} ms"
    )


if __name__ == "__main__":
    main()
