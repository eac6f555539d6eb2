// fp8ort_epilogue_apply: the GEMM epilogue (fp8_epilogue.h) over a float32 accumulator matrix, as its own pass.
// The BLAS-Lt route (fp8_blaslt.cc) lets cuBLASLt or hipBLASLt sum and runs this after it, so that the numerics
// stay ours.
// One thread owns kApplyCols columns kApplyThreads apart, so every load and store of a warp is contiguous, and
// walks rows with a grid stride; a column's scale and bias are loaded once.
#include "fp8_epilogue_apply.h"

namespace fp8ort {
namespace {

constexpr int kApplyThreads = 256;
constexpr int kApplyCols = 4;
constexpr int64_t kApplyColsPerBlock = static_cast<int64_t>(kApplyThreads) * kApplyCols;
constexpr int64_t kMaxGridY = 65535;

__global__ void __launch_bounds__(kApplyThreads)
    epilogue_apply_kernel(const float* __restrict__ acc, int64_t ld_acc, int64_t m, int64_t n, epilogue_args ep,
                          int splits, int64_t slice) {
    const int64_t col0 = static_cast<int64_t>(blockIdx.x) * kApplyColsPerBlock + threadIdx.x;
    column_consts cols[kApplyCols];
#pragma unroll
    for (int j = 0; j < kApplyCols; ++j) {
        const int64_t col = col0 + j * kApplyThreads;
        if (col < n) cols[j] = load_column(ep, col);
    }
    for (int64_t row = blockIdx.y; row < m; row += gridDim.y) {
        const float* src = acc + row * ld_acc;
#pragma unroll
        for (int j = 0; j < kApplyCols; ++j) {
            const int64_t col = col0 + j * kApplyThreads;
            if (col >= n) continue;
            float sum = src[col];
            for (int sp = 1; sp < splits; ++sp) sum = fp8ort_add_rn(sum, src[sp * slice + col]);
            epilogue_store(ep, cols[j], sum, row, col);
        }
    }
}

}  // namespace

fp8ort_status launch_epilogue_apply(const float* acc, int64_t ld_acc, int64_t m, int64_t n, const epilogue_args& ep,
                                    hipStream_t stream, const char* op, int splits, int64_t slice) {
    if (m == 0) return FP8ORT_OK;
    const int64_t grid_x = (n + kApplyColsPerBlock - 1) / kApplyColsPerBlock;
    if (grid_x > 2147483647)
        return fail(FP8ORT_INVALID_ARGUMENT, "%s: N=%lld is too large", op, static_cast<long long>(n));
    const dim3 grid(static_cast<unsigned>(grid_x), static_cast<unsigned>(m < kMaxGridY ? m : kMaxGridY));
    epilogue_apply_kernel<<<grid, kApplyThreads, 0, stream>>>(acc, ld_acc, m, n, ep, splits, slice);
    return check_launch(op);
}

}  // namespace fp8ort

using namespace fp8ort;

extern "C" fp8ort_status fp8ort_epilogue_apply(const float* acc, int64_t ld_acc, int64_t m, int64_t n,
                                               const fp8ort_epilogue* epilogue, void* y, void* stream) {
    const char* op = "fp8ort_epilogue_apply";
    if (m < 0 || n <= 0 || ld_acc < n)
        return fail(FP8ORT_INVALID_ARGUMENT, "%s: M=%lld N=%lld ld_acc=%lld: N must be positive and ld_acc >= N", op,
                    static_cast<long long>(m), static_cast<long long>(n), static_cast<long long>(ld_acc));
    if (m > 0 && !acc) return fail(FP8ORT_INVALID_ARGUMENT, "%s: acc must not be NULL", op);
    epilogue_args ep;
    FP8ORT_TRY(make_epilogue_args(op, epilogue, n, y, n, &ep));
    FP8ORT_TRY(launch_epilogue_apply(acc, ld_acc, m, n, ep, as_stream(stream), op));
    return ok();
}
