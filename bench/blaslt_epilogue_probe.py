"""Which epilogues cuBLASLt applies itself to an FP8 GEMM with fp8ort's per-channel weight scales, and at what cost.

fp8ort's BLAS-Lt route lets cuBLASLt write the raw float32 sum D and applies its own epilogue in a second pass
(fp8_epilogue_apply.hip): y = D * (x_scale * w_scale[n]) + bias[n] + Z. On BERT-base that pass runs after 36 of the
48 GEMMs. The 2026-12-07 attempt to hand cuBLASLt the per-channel scale as a scale vector (`OUTER_VEC_32F`) was
refused. This probe asks for another form of the same arithmetic: in the column-major view fp8ort uses (D^T[N, M] =
W . X^T), the weight's output channels are D's rows, and the pointer mode ALPHA_DEVICE_VECTOR_BETA_HOST takes alpha
as a device vector with one value per row, so alpha[n] = x_scale * w_scale[n]; beta = 1 with C = Z adds the residual,
the BIAS epilogue adds bias[n] per row.

For each BERT-base shape and each variant it prints whether the heuristic offered an algorithm, whether the matmul
ran, its error against a float64 reference (in units of float32 rounding of the output's magnitude), and the median
time of the GEMM against the plain GEMM (alpha 1, no epilogue: today's route before its pass).

Usage (any CUDA GPU with FP8, torch installed): python bench/blaslt_epilogue_probe.py [--iters 50]
"""

from __future__ import annotations

import argparse
import ctypes
import glob
import json
import os
import sys

import torch
from gemm_fp8 import median_ms

R_32F, R_16F, R_16BF, R_8F_E4M3 = 0, 2, 14, 28
COMPUTE_32F = 68
DESC_POINTER_MODE, DESC_TRANSA, DESC_TRANSB = 2, 3, 4
DESC_EPILOGUE, DESC_BIAS_POINTER, DESC_BIAS_DATA_TYPE, DESC_B_SCALE_POINTER, DESC_FAST_ACCUM = 7, 8, 26, 18, 25
PREF_MAX_WORKSPACE = 1
EPI_BIAS = 4
PTR_ALPHA_VEC_BETA_ZERO, PTR_ALPHA_VEC_BETA_HOST = 3, 4
OP_N, OP_T = 0, 1
WORKSPACE = 32 << 20


class Algo(ctypes.Structure):
    _fields_ = [("data", ctypes.c_uint64 * 8)]


class Heuristic(ctypes.Structure):
    _fields_ = [
        ("algo", Algo),
        ("workspace", ctypes.c_size_t),
        ("state", ctypes.c_int),
        ("waves", ctypes.c_float),
        ("reserved", ctypes.c_int * 4),
    ]


def open_cublaslt() -> ctypes.CDLL:
    for name in ("libcublasLt.so.13", "libcublasLt.so.12"):
        try:
            return ctypes.CDLL(name)
        except OSError:
            pass
    roots = [os.path.dirname(torch.__file__), *sys.path]
    for root in roots:
        for path in glob.glob(os.path.join(root, "**", "libcublasLt.so*"), recursive=True):
            try:
                return ctypes.CDLL(path)
            except OSError:
                pass
    raise SystemExit("libcublasLt not found")


LT = open_cublaslt()
VP = ctypes.c_void_p


def check(status: int, what: str) -> None:
    if status != 0:
        raise RuntimeError(f"{what}: status {status}")


def set_attr(fn, obj, attr: int, value) -> None:
    check(fn(obj, attr, ctypes.byref(value), ctypes.sizeof(value)), f"set attribute {attr}")


def layout(dtype: int, rows: int, cols: int, ld: int) -> VP:
    h = VP()
    check(
        LT.cublasLtMatrixLayoutCreate(
            ctypes.byref(h), dtype, ctypes.c_uint64(rows), ctypes.c_uint64(cols), ctypes.c_int64(ld)
        ),
        "layout",
    )
    return h


def variant_run(
    handle,
    n: int,
    m: int,
    k: int,
    w8,
    x8,
    d,
    d_type: int,
    *,
    alpha_vec=None,
    z=None,
    bias=None,
    bias_type: int = R_32F,
    b_scale=None,
):
    """One matmul D^T[n, m] = alpha (W[n, k] . X[m, k]^T) (+ Z) (+ bias): returns a callable or a reason."""
    desc = VP()
    check(LT.cublasLtMatmulDescCreate(ctypes.byref(desc), COMPUTE_32F, R_32F), "desc")
    set_attr(LT.cublasLtMatmulDescSetAttribute, desc, DESC_TRANSA, ctypes.c_int32(OP_T))
    set_attr(LT.cublasLtMatmulDescSetAttribute, desc, DESC_TRANSB, ctypes.c_int32(OP_N))
    # partial sums promoted to float32, as fp8ort's route asks (the default accumulates inside the tensor cores)
    set_attr(LT.cublasLtMatmulDescSetAttribute, desc, DESC_FAST_ACCUM, ctypes.c_int8(0))
    if alpha_vec is not None:
        mode = PTR_ALPHA_VEC_BETA_HOST if z is not None else PTR_ALPHA_VEC_BETA_ZERO
        set_attr(LT.cublasLtMatmulDescSetAttribute, desc, DESC_POINTER_MODE, ctypes.c_int32(mode))
    if b_scale is not None:  # cuBLASLt's B is fp8ort's activation: x_scale, a device scalar
        set_attr(LT.cublasLtMatmulDescSetAttribute, desc, DESC_B_SCALE_POINTER, VP(b_scale.data_ptr()))
    if bias is not None:
        set_attr(LT.cublasLtMatmulDescSetAttribute, desc, DESC_EPILOGUE, ctypes.c_uint32(EPI_BIAS))
        set_attr(LT.cublasLtMatmulDescSetAttribute, desc, DESC_BIAS_POINTER, VP(bias.data_ptr()))
        set_attr(LT.cublasLtMatmulDescSetAttribute, desc, DESC_BIAS_DATA_TYPE, ctypes.c_int32(bias_type))
    a = layout(R_8F_E4M3, k, n, k)  # W stored K x N column-major (row-major [n, k]), transposed
    b = layout(R_8F_E4M3, k, m, k)
    c = layout(d_type, n, m, n)
    pref = VP()
    check(LT.cublasLtMatmulPreferenceCreate(ctypes.byref(pref)), "pref")
    set_attr(LT.cublasLtMatmulPreferenceSetAttribute, pref, PREF_MAX_WORKSPACE, ctypes.c_uint64(WORKSPACE))
    results = (Heuristic * 4)()
    count = ctypes.c_int(0)
    st = LT.cublasLtMatmulAlgoGetHeuristic(handle, desc, a, b, c, c, pref, 4, results, ctypes.byref(count))
    if st != 0:
        return f"heuristic status {st}"
    if count.value == 0:
        return "heuristic: no algorithm"
    ws = torch.empty(WORKSPACE, dtype=torch.uint8, device="cuda")
    one, zero = ctypes.c_float(1.0), ctypes.c_float(0.0)
    alpha_ptr = VP(alpha_vec.data_ptr()) if alpha_vec is not None else ctypes.cast(ctypes.byref(one), VP)
    beta_ptr = ctypes.cast(ctypes.byref(one if z is not None else zero), VP)
    c_ptr = VP(z.data_ptr()) if z is not None else VP(d.data_ptr())
    stream = VP(torch.cuda.current_stream().cuda_stream)
    keep = (desc, a, b, c, pref, results, ws, one, zero)

    def run() -> int:
        _ = keep
        return LT.cublasLtMatmul(
            handle,
            desc,
            alpha_ptr,
            VP(w8.data_ptr()),
            a,
            VP(x8.data_ptr()),
            b,
            beta_ptr,
            c_ptr,
            c,
            VP(d.data_ptr()),
            c,
            ctypes.byref(results[0].algo),
            VP(ws.data_ptr()),
            ctypes.c_size_t(WORKSPACE),
            stream,
        )

    return run


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    handle = VP()
    check(LT.cublasLtCreate(ctypes.byref(handle)), "create")
    torch.manual_seed(0)
    rows = []
    # BERT-base seq 128: Q/K/V packed (N 2304, float16 out, no residual), attention output and FFN2 (N 768, float32
    # out, residual), FFN1 (N 3072); M = 128 (batch 1) and 4096 (batch 32)
    shapes = [(2304, 768, "qkv"), (768, 768, "attn_out"), (3072, 768, "ffn1"), (768, 3072, "ffn2")]
    for m in (128, 4096):
        for n, k, name in shapes:
            w = (torch.randn(n, k, device="cuda") * 100).clamp(-448, 448).to(torch.float8_e4m3fn)
            x = (torch.randn(m, k, device="cuda") * 100).clamp(-448, 448).to(torch.float8_e4m3fn)
            acc = x.double() @ w.double().t()  # [m, n], exact in float64 for these sizes
            w_scale = (torch.rand(n, device="cuda") * 1e-2 + 1e-3).float()
            x_scale = torch.full((1,), 0.0123, device="cuda")
            alpha = w_scale * x_scale  # float32 products, as fp8ort's epilogue rounds x_scale * w_scale[n]
            bias = torch.randn(n, device="cuda").float()
            z = torch.randn(m, n, device="cuda").float() * 10
            d32 = torch.empty(m, n, device="cuda")
            d16 = torch.empty(m, n, device="cuda", dtype=torch.float16)
            variants = {
                "plain f32 (today)": dict(d=d32, d_type=R_32F),
                "alpha_vec f32": dict(d=d32, d_type=R_32F, alpha_vec=alpha),
                "alpha_vec+bias32 f32": dict(d=d32, d_type=R_32F, alpha_vec=alpha, bias=bias),
                "alpha_vec+bias16bf f32": dict(
                    d=d32, d_type=R_32F, alpha_vec=alpha, bias=bias.bfloat16(), bias_type=R_16BF
                ),
                "alpha_vec+z f32": dict(d=d32, d_type=R_32F, alpha_vec=alpha, z=z),
                "alpha_vec+z+bias32 f32": dict(d=d32, d_type=R_32F, alpha_vec=alpha, z=z, bias=bias),
                "alpha_vec+bias32 f16": dict(d=d16, d_type=R_16F, alpha_vec=alpha, bias=bias),
                "alpha_vec+bias16 f16": dict(d=d16, d_type=R_16F, alpha_vec=alpha, bias=bias.half(), bias_type=R_16F),
                "alpha_vec f16": dict(d=d16, d_type=R_16F, alpha_vec=alpha),
                "alpha_vec(w)+bscale(x)+z+bias32 f32": dict(
                    d=d32, d_type=R_32F, alpha_vec=w_scale, b_scale=x_scale, z=z, bias=bias
                ),
                "alpha_vec(w)+bscale(x)+bias32 f16": dict(
                    d=d16, d_type=R_16F, alpha_vec=w_scale, b_scale=x_scale, bias=bias
                ),
            }
            for vname, kw in variants.items():
                row = {"m": m, "n": n, "k": k, "layer": name, "variant": vname}
                rows.append(row)
                try:
                    run = variant_run(handle, n, m, k, w, x, **kw)
                except RuntimeError as e:
                    run = str(e)
                if isinstance(run, str):
                    row["result"] = run
                    print(json.dumps(row), flush=True)
                    continue
                st = run()
                torch.cuda.synchronize()
                if st != 0:
                    row["result"] = f"matmul status {st}"
                    print(json.dumps(row), flush=True)
                    continue
                want = acc.clone()
                if "alpha_vec" in kw:
                    want = want * kw["alpha_vec"].double()[None, :]
                if "b_scale" in kw:
                    want = want * kw["b_scale"].double()
                if "z" in kw:
                    want = want + z.double()
                if "bias" in kw:
                    want = want + kw["bias"].double()[None, :]
                got = kw["d"].double()
                eps = 2.0**-24 if kw["d_type"] == R_32F else 2.0**-11
                err = ((got - want).abs() / (want.abs() * eps + 1e-30)).max().item()
                err_abs = ((got - want).abs().max() / (want.abs().max() * eps)).item()
                row.update(
                    result="ran",
                    max_err_rel_ulps=round(err, 2),
                    max_err_of_max_ulps=round(err_abs, 2),
                    us=round(median_ms(lambda run=run: check(run(), "matmul"), args.iters) * 1000.0, 2),
                )
                print(json.dumps(row), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
