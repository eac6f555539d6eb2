"""One launch each of fp8ort's FP8 GEMM kernels and of torch._scaled_mm (cuBLASLt) at one size, for Nsight Compute:

    ncu --clock-control none --kernel-name regex:'gemm|xmma|cutlass|sm90' --section SpeedOfLight ... \
        python3 bench/profile_gemm.py --size 8192
"""

from __future__ import annotations

import argparse
import ctypes
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "gpu"))
from gpu_lib import Epilogue, load_kernels  # noqa: E402

E4M3, BF16 = 17, 16


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lib", default=str(ROOT / "build" / "libfp8ort_kernels.so"))
    ap.add_argument("--size", type=int, default=8192)
    ap.add_argument("--overrides", default="0,3")
    args = ap.parse_args()
    lib = load_kernels(Path(args.lib))
    stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    m = n = k = args.size
    a = (torch.randn(m, k, device="cuda") * 64).to(torch.float8_e4m3fn)
    w = (torch.randn(n, k, device="cuda") * 32).to(torch.float8_e4m3fn)
    sa, sw = torch.tensor([1 / 64], device="cuda"), torch.tensor([1 / 32], device="cuda")
    y = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    ep = Epilogue(x_scale=sa.data_ptr(), w_scale=sw.data_ptr(), w_scale_count=1, y_type=BF16)
    for override in map(int, args.overrides.split(",")):
        lib.fp8ort_gemm_set_kernel_override(override)
        print("ours:", lib.fp8ort_gemm_kernel_name(E4M3, m, n, k).decode(), flush=True)
        assert lib.fp8ort_gemm(a.data_ptr(), w.data_ptr(), E4M3, m, n, k, ep, y.data_ptr(), stream) == 0
    torch._scaled_mm(a, w.t(), scale_a=sa, scale_b=sw, out_dtype=torch.bfloat16, use_fast_accum=False)
    torch.cuda.synchronize()


if __name__ == "__main__":
    main()
