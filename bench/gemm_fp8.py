"""FP8 GEMM TFLOP/s: fp8ort_gemm (ctypes) against torch._scaled_mm (cuBLASLt FP8, TN) on the same operands.

Y[M, N] bf16 = A[M, K] (E4M3) . W[N, K]^T * a_scale * w_scale. Median of CUDA-event timings after warm-up.
Rows (--variants picks them): our kernel (auto: float32 promotion), the same with one block per multiprocessor
walking tiles (stream_long), our kernel with fast accumulation (fast), and fp8ort_gemm_blaslt (cuBLASLt accumulating
into float32 scratch, then our epilogue pass) when the library has cuBLASLt available (blaslt).
Usage: python3 bench/gemm_fp8.py [--lib build/libfp8ort_kernels.so] [--sizes 4096,8192] [--json out.json]
[--variants auto,fast]
(--iters 1 --warmup 0 launches each kernel about three times, for Nsight Compute)
The C++ harness bench/gemm_fp8.cu calls cuBLASLt directly; this one cross-checks it through PyTorch.
"""

from __future__ import annotations

import argparse
import ctypes
import datetime
import functools
import json
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "gpu"))
from gpu_lib import Epilogue, load_kernels  # noqa: E402

E4M3, BF16 = 17, 16


def median_ms(fn, iters: int = 30, warmup: int = 5) -> float:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(iters):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return sorted(times)[len(times) // 2]


def run_ours(lib, a, w, m: int, n: int, k: int, ep: Epilogue, y, stream) -> None:
    st = lib.fp8ort_gemm(a.data_ptr(), w.data_ptr(), E4M3, m, n, k, ep, y.data_ptr(), stream)
    assert st == 0, lib.fp8ort_gpu_last_error()


def run_blaslt(lib, a, w, m: int, n: int, k: int, ep: Epilogue, y, workspace, stream) -> None:
    st = lib.fp8ort_gemm_blaslt(
        a.data_ptr(), w.data_ptr(), E4M3, m, n, k, ep, y.data_ptr(), workspace.data_ptr(), workspace.numel(), stream
    )
    assert st == 0, lib.fp8ort_gpu_last_error()


def blaslt_available(lib) -> bool:
    if not hasattr(lib, "fp8ort_blaslt_available"):
        print("fp8ort_gemm_blaslt: not in this kernel library (rebuild it)", flush=True)
        return False
    if not lib.fp8ort_blaslt_available():
        print(f"fp8ort_gemm_blaslt: unavailable: {lib.fp8ort_gpu_last_error().decode()}", flush=True)
        return False
    return True


# name: (fast accumulation, kernel override; None = the cuBLASLt route, which never runs our GEMM)
VARIANTS = {
    "auto": (False, 0),
    "stream_long": (False, 8),
    "fast": (True, 3),
    "blaslt": (False, None),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lib", default=str(ROOT / "build" / "libfp8ort_kernels.so"))
    ap.add_argument("--sizes", default="4096,8192")
    ap.add_argument("--json")
    ap.add_argument("--iters", type=int, default=30, help="timed runs per row (1 with --warmup 0 for a profiler)")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--variants", default=",".join(VARIANTS), help=f"rows to run, of {','.join(VARIANTS)}")
    args = ap.parse_args()
    wanted = args.variants.split(",")
    unknown = sorted(set(wanted) - set(VARIANTS))
    if unknown:
        ap.error(f"unknown variants {unknown}: choose from {','.join(VARIANTS)}")
    lib = load_kernels(Path(args.lib))
    stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    with_blaslt = blaslt_available(lib)
    rows = []
    for size in map(int, args.sizes.split(",")):
        m = n = k = size
        a = (torch.randn(m, k, device="cuda") * 64).to(torch.float8_e4m3fn)
        w = (torch.randn(n, k, device="cuda") * 32).to(torch.float8_e4m3fn)
        sa = torch.tensor([1 / 64], device="cuda")
        sw = torch.tensor([1 / 32], device="cuda")
        y = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
        ep = Epilogue(x_scale=sa.data_ptr(), w_scale=sw.data_ptr(), w_scale_count=1, y_type=BF16)
        flop = 2.0 * m * n * k
        variants = [VARIANTS[v] for v in wanted if v != "blaslt" or with_blaslt]
        for fast, override in variants:
            if override is None:  # the cuBLASLt route (no kernel override: it never runs our GEMM)
                name = "fp8ort_gemm_blaslt"
                ws = torch.empty(lib.fp8ort_gemm_blaslt_workspace_bytes(m, n, k), device="cuda", dtype=torch.uint8)
                ours = functools.partial(run_blaslt, lib, a, w, m, n, k, ep, y, ws, stream)
            else:
                lib.fp8ort_gemm_set_kernel_override(override)
                name = lib.fp8ort_gemm_kernel_name(E4M3, m, n, k).decode()
                ours = functools.partial(run_ours, lib, a, w, m, n, k, ep, y, stream)
            theirs = functools.partial(
                torch._scaled_mm, a, w.t(), scale_a=sa, scale_b=sw, out_dtype=torch.bfloat16, use_fast_accum=fast
            )
            ms_ours = median_ms(ours, args.iters, args.warmup)
            ms_lt = median_ms(theirs, args.iters, args.warmup)
            ref = theirs()
            ours()
            rel = float((y.float() - ref.float()).norm() / ref.float().norm())
            row = dict(
                m=m,
                n=n,
                k=k,
                fast_accum=fast,
                ours_kernel=name,
                ours_ms=round(ms_ours, 4),
                ours_tflops=round(flop / ms_ours / 1e9, 1),
                torch_scaled_mm_ms=round(ms_lt, 4),
                torch_scaled_mm_tflops=round(flop / ms_lt / 1e9, 1),
                ratio=round(ms_lt / ms_ours, 3),
                relative_l2_diff=rel,
            )
            rows.append(row)
            print(json.dumps(row), flush=True)
        lib.fp8ort_gemm_set_kernel_override(0)
    if args.json:
        doc = dict(
            benchmark="fp8 gemm E4M3 -> bf16, per-tensor scales; ours (and our cuBLASLt route) vs torch._scaled_mm",
            command=" ".join(sys.argv),
            gpu=torch.cuda.get_device_name(),
            torch=torch.__version__,
            cuda=torch.version.cuda,
            date=datetime.datetime.now(datetime.timezone.utc).isoformat(),
            results=rows,
        )
        Path(args.json).write_text(json.dumps(doc, indent=2) + "\n")


if __name__ == "__main__":
    main()
