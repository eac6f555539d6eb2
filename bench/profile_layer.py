"""A few launches of one fp8ort GEMM or convolution shape (E4M3 in and out, per-channel scale, bias, ReLU: the
epilogue ResNet-50 uses), for Nsight Compute:

    ncu --kernel-name regex:sm90 --launch-skip 2 --launch-count 1 --section WarpStateStats ... \
        python3 bench/profile_layer.py gemm 802816 256 64
    ... python3 bench/profile_layer.py conv --batch 256 --c 64 --hw 56 --m 64 --k 3 --stride 1
"""

from __future__ import annotations

import argparse
import ctypes
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "gpu"))
from gpu_lib import Epilogue, conv_shape, load_kernels  # noqa: E402

E4M3 = 17


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=["gemm", "conv"])
    ap.add_argument("mnk", type=int, nargs="*", help="gemm: M N K")
    ap.add_argument("--lib", default=str(ROOT / "build" / "libfp8ort_kernels.so"))
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--c", type=int, default=64)
    ap.add_argument("--hw", type=int, default=56)
    ap.add_argument("--m", type=int, default=64)
    ap.add_argument("--k", type=int, default=3)
    ap.add_argument("--stride", type=int, default=1)
    ap.add_argument("--launches", type=int, default=4)
    args = ap.parse_args()
    lib = load_kernels(Path(args.lib))
    stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    dev = "cuda"
    if args.what == "gemm":
        m, n, k = args.mnk
        a = (torch.randn(m, k, device=dev) * 2).to(torch.float8_e4m3fn)
        w = (torch.randn(n, k, device=dev) * 2).to(torch.float8_e4m3fn)
        y = torch.empty(m, n, dtype=torch.uint8, device=dev)
    else:
        pad = args.k // 2
        s = conv_shape(args.batch, args.hw, args.hw, args.c, args.m, (args.k, args.k), (args.stride,) * 2, (pad,) * 4)
        n = args.m
        a = (torch.randn(args.batch, args.hw, args.hw, args.c, device=dev) * 2).to(torch.float8_e4m3fn)
        wt = (torch.randn(n, args.c, args.k, args.k, device=dev) * 2).to(torch.float8_e4m3fn)
        w = torch.empty(lib.fp8ort_conv_packed_bytes(s), dtype=torch.uint8, device=dev)
        assert lib.fp8ort_conv_pack_weight(wt.data_ptr(), s, w.data_ptr(), stream) == 0
        y = torch.empty(
            args.batch, lib.fp8ort_conv_out_h(s), lib.fp8ort_conv_out_w(s), n, dtype=torch.uint8, device=dev
        )
    one = torch.ones(1, device=dev)
    wsc = torch.full((n,), 0.01, device=dev)
    bias = torch.randn(n, device=dev)
    ep = Epilogue(
        x_scale=one.data_ptr(),
        w_scale=wsc.data_ptr(),
        w_scale_count=n,
        bias=bias.data_ptr(),
        y_scale=one.data_ptr(),
        relu=1,
        y_type=E4M3,
    )
    for _ in range(args.launches):
        if args.what == "gemm":
            st = lib.fp8ort_gemm(a.data_ptr(), w.data_ptr(), E4M3, m, n, k, ep, y.data_ptr(), stream)
        else:
            st = lib.fp8ort_conv_nhwc(a.data_ptr(), w.data_ptr(), E4M3, s, ep, y.data_ptr(), stream)
        assert st == 0, lib.fp8ort_gpu_last_error()
    torch.cuda.synchronize()
    print("done", args.what, flush=True)


if __name__ == "__main__":
    main()
