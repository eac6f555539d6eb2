// fp8ort_epilogue_apply: the GEMM epilogue (fp8_epilogue.h) over a float32 accumulator matrix, as its own pass.
// The BLAS-Lt route (fp8_blaslt.cc) lets cuBLASLt or hipBLASLt sum and runs this after it, so that the numerics
// stay ours.
// One thread owns 4 consecutive columns (a quad, through the tile epilogue's epilogue_quad: float4 loads of the
// accumulators, vector loads of Z and stores of Y where the row length allows) and walks rows with a grid stride;
// the columns' scales and bias are loaded once. The grid covers the multiprocessors a few times over instead of
// launching a block per row (BERT-base at batch 32: 72 launches of 4,096 rows of 768 to 3,072 columns). A thread
// takes one row per step (four rows with all their loads issued first measured 13% slower on BERT-base, H100,
// bench/NOTES.md).
#include "fp8_epilogue_apply.h"

#include <atomic>
#include <type_traits>

namespace fp8ort {
namespace {

constexpr int kApplyThreads = 256;
constexpr int64_t kApplyColsPerBlock = static_cast<int64_t>(kApplyThreads) * 4;
constexpr int64_t kMaxGridY = 65535;
constexpr int64_t kBlocksPerSm = 8;  // resident blocks of 256 threads per multiprocessor the grid aims at

// The accumulators of 4 columns (count of them exist) of one row, the split-K partial sums added in order.
__device__ __forceinline__ void load_acc4(const float* src, int splits, int64_t slice, bool vec_acc, int count,
                                          float (&v)[4]) {
    if (vec_acc) {
        const float4 a = *reinterpret_cast<const float4*>(src);
        v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w;
        for (int sp = 1; sp < splits; ++sp) {
            const float4 b = *reinterpret_cast<const float4*>(src + sp * slice);
            v[0] = fp8ort_add_rn(v[0], b.x), v[1] = fp8ort_add_rn(v[1], b.y);
            v[2] = fp8ort_add_rn(v[2], b.z), v[3] = fp8ort_add_rn(v[3], b.w);
        }
    } else {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            if (e >= count) break;
            v[e] = src[e];
            for (int sp = 1; sp < splits; ++sp) v[e] = fp8ort_add_rn(v[e], src[sp * slice + e]);
        }
    }
}

template <int Y>
__global__ void __launch_bounds__(kApplyThreads)
    epilogue_apply_kernel(const float* __restrict__ acc, int64_t ld_acc, int64_t m, int64_t n, epilogue_args ep,
                          int splits, int64_t slice, bool vec_acc, bool vec_y, bool vec_z) {
    fp8ort_pdl_wait();  // launched with pdl: the GEMM that wrote acc may still be ending
    fp8ort_pdl_release();
    const int64_t col = (static_cast<int64_t>(blockIdx.x) * kApplyThreads + threadIdx.x) * 4;
    if (col >= n) return;
    const int count = n - col >= 4 ? 4 : static_cast<int>(n - col);
    column_consts cc[4];
#pragma unroll
    for (int e = 0; e < 4; ++e) cc[e] = e < count ? load_column(ep, col + e) : column_consts{0.0f, 0.0f};
    const epilogue_scalars sc = load_scalars(ep);
    for (int64_t row = blockIdx.y; row < m; row += gridDim.y) {
        float v[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        load_acc4(acc + row * ld_acc + col, splits, slice, vec_acc, count, v);
        epilogue_quad<Y, true>(ep, sc, cc, v, row * ep.ld + col, count, vec_y, vec_z);
    }
}

template <int Y>
void launch_typed(const float* acc, int64_t ld_acc, int64_t m, int64_t n, const epilogue_args& ep, dim3 grid,
                  hipStream_t stream, int splits, int64_t slice, bool vec_acc, bool vec_y, bool vec_z) {
    launch_kernel(pdl_wanted(), epilogue_apply_kernel<Y>, grid, dim3(kApplyThreads), 0, stream, acc, ld_acc, m, n, ep,
                  splits, slice, vec_acc, vec_y, vec_z);
}

}  // namespace

int multiprocessors() {
    constexpr int kMaxDevices = 64;
    static std::atomic<int> cache[kMaxDevices];
    int dev = 0;
    if (hipGetDevice(&dev) != hipSuccess || dev < 0 || dev >= kMaxDevices) return 128;
    int sms = cache[dev].load();
    if (sms <= 0) {
        if (hipDeviceGetAttribute(&sms, hipDeviceAttributeMultiprocessorCount, dev) != hipSuccess || sms < 1) {
            return 128;
        }
        cache[dev].store(sms);
    }
    return sms;
}

fp8ort_status launch_epilogue_apply(const float* acc, int64_t ld_acc, int64_t m, int64_t n, const epilogue_args& ep,
                                    hipStream_t stream, const char* op, int splits, int64_t slice) {
    if (m == 0) return FP8ORT_OK;
    const int64_t grid_x = (n + kApplyColsPerBlock - 1) / kApplyColsPerBlock;
    if (grid_x > 2147483647)
        return fail(FP8ORT_INVALID_ARGUMENT, "%s: N=%lld is too large", op, static_cast<long long>(n));
    const int64_t want_y = (multiprocessors() * kBlocksPerSm + grid_x - 1) / grid_x;
    const int64_t grid_y = m < want_y ? m : (want_y < kMaxGridY ? want_y : kMaxGridY);
    const dim3 grid(static_cast<unsigned>(grid_x), static_cast<unsigned>(grid_y));
    const bool rows4 = n % 4 == 0;  // every quad full and 16-byte aligned when the bases are
    const bool vec_acc = rows4 && ld_acc % 4 == 0 && (splits <= 1 || slice % 4 == 0) &&
                         reinterpret_cast<uintptr_t>(acc) % 16 == 0;
    const bool vec_y = rows4 && ep.ld % 4 == 0 && reinterpret_cast<uintptr_t>(ep.y) % 16 == 0;
    const bool vec_z = rows4 && ep.z && ep.ld % 4 == 0 && reinterpret_cast<uintptr_t>(ep.z) % 16 == 0;
    auto go = [&](auto y_type) {
        launch_typed<decltype(y_type)::value>(acc, ld_acc, m, n, ep, grid, stream, splits, slice, vec_acc, vec_y,
                                              vec_z);
    };
    switch (ep.y_type) {
        case FP8ORT_FLOAT: go(std::integral_constant<int, FP8ORT_FLOAT>{}); break;
        case FP8ORT_FLOAT16: go(std::integral_constant<int, FP8ORT_FLOAT16>{}); break;
        case FP8ORT_BFLOAT16: go(std::integral_constant<int, FP8ORT_BFLOAT16>{}); break;
        case FP8ORT_E4M3FN: go(std::integral_constant<int, FP8ORT_E4M3FN>{}); break;
        case FP8ORT_E5M2: go(std::integral_constant<int, FP8ORT_E5M2>{}); break;
        case FP8ORT_E4M3FNUZ: go(std::integral_constant<int, FP8ORT_E4M3FNUZ>{}); break;
        case FP8ORT_E5M2FNUZ: go(std::integral_constant<int, FP8ORT_E5M2FNUZ>{}); break;
        default: return fail(FP8ORT_INVALID_ARGUMENT, "%s: output type %s is not supported", op, dtype_name(ep.y_type));
    }
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
