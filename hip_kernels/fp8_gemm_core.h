// The portable FP8 GEMM main loop (every vendor), templated on how A's tile is gathered, so that the plain
// GEMM and the implicit-GEMM convolution share it. C[rows, cols] = A[rows, K] . B[cols, K]^T, then the epilogue.
// Tiles of A and B stream through kStages shared-memory buffers (cp.async on NVIDIA, plain copies elsewhere);
// rows past the end and K past the end read as zero, so any size works.
#pragma once

#include "fp8_epilogue.h"
#include "fp8_mma.h"

namespace fp8ort {

constexpr int kStages = 3;
constexpr int kStageBytes = (kTileM + kTileN) * kTileK;
constexpr int kChunksPerThread = kTileM * kChunksPerRow / kCoreThreads;  // 16-byte chunks per operand per stage
static_assert(kTileM == kTileN, "A and B tiles are loaded by the same thread mapping");

// Copy 16 bytes global -> shared, or zeros when `valid` is false.
__device__ __forceinline__ void copy16_async(uint8_t* dst, const uint8_t* src, bool valid) {
#if defined(FP8ORT_CUDA) && defined(__CUDA_ARCH__)
    const uint32_t d = static_cast<uint32_t>(__cvta_generic_to_shared(dst));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src), "r"(valid ? 16 : 0));
#else
    *reinterpret_cast<uint4*>(dst) = valid ? *reinterpret_cast<const uint4*>(src) : make_uint4(0, 0, 0, 0);
#endif
}
__device__ __forceinline__ void async_commit() {
#if defined(FP8ORT_CUDA) && defined(__CUDA_ARCH__)
    asm volatile("cp.async.commit_group;\n" ::);
#endif
}
template <int N>
__device__ __forceinline__ void async_wait() {
#if defined(FP8ORT_CUDA) && defined(__CUDA_ARCH__)
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
#endif
}

// A plain row-major [rows, k] FP8 matrix (A of the GEMM, and every packed weight).
struct matrix_source {
    const uint8_t* base;
    int64_t rows;
    int64_t k;
    int64_t ld;
    // vectorized: k % 16 == 0 and 16-byte aligned rows, so a chunk is either all inside or all outside.
    __device__ void prepare(int, int64_t) {}
    __device__ const uint8_t* chunk(int, int64_t row, int64_t kk, bool vectorized, bool& valid) const {
        valid = row < rows && kk < k;
        (void)vectorized;
        return valid ? base + row * ld + kk : base;
    }
    // bytes [kk, kk + 16) of `row`, zero past the ends (any alignment)
    __device__ void bytes16(int, int64_t row, int64_t kk, uint8_t (&out)[16]) const {
#pragma unroll
        for (int e = 0; e < 16; ++e) out[e] = (row < rows && kk + e < k) ? base[row * ld + kk + e] : 0;
    }
};

template <typename Source, bool Vectorized>
__device__ __forceinline__ void load_operand(uint8_t* tile, const Source& src, int64_t row0, int64_t k0) {
#pragma unroll
    for (int c = 0; c < kChunksPerThread; ++c) {
        const int idx = static_cast<int>(threadIdx.x) + c * kCoreThreads;
        const int row = idx / kChunksPerRow;
        const int chunk = idx % kChunksPerRow;
        uint8_t* dst = tile + swizzled_offset(row, chunk);
        const int64_t kk = k0 + chunk * 16;
        if constexpr (Vectorized) {
            bool valid;
            const uint8_t* p = src.chunk(c, row0 + row, kk, true, valid);
            copy16_async(dst, p, valid);
        } else {
            alignas(16) uint8_t bytes[16];
            src.bytes16(c, row0 + row, kk, bytes);
            *reinterpret_cast<uint4*>(dst) = *reinterpret_cast<const uint4*>(bytes);
        }
    }
}

// One block computes a kTileM x kTileN tile of one group (blockIdx.z); B rows and output columns of group g
// start at g * cols. A's source knows how to find group g's K slice itself (blockIdx.z).
template <fp8ort_fp8_format F, typename ASource, bool VecA, bool VecB>
__global__ void __launch_bounds__(kCoreThreads, 2)
    fp8_gemm_core_kernel(ASource a_src, const uint8_t* __restrict__ b, int64_t rows, int64_t cols, int64_t k,
                         epilogue_args ep) {
    __shared__ __align__(128) uint8_t smem[kStages * kStageBytes];
    const int64_t group = blockIdx.z;
    const int64_t row0 = static_cast<int64_t>(blockIdx.y) * kTileM;
    const int64_t col0 = static_cast<int64_t>(blockIdx.x) * kTileN;
    matrix_source b_src{b + group * cols * k, cols, k, k};

    // each thread gathers the same A rows for every K tile: let the source decode them once
#pragma unroll
    for (int c = 0; c < kChunksPerThread; ++c)
        a_src.prepare(c, row0 + (static_cast<int>(threadIdx.x) + c * kCoreThreads) / kChunksPerRow);

    using mma_t = warp_mma<F>;
    mma_t mma;
    mma.zero();
    const int warp = static_cast<int>(threadIdx.x) / FP8ORT_WARP_SIZE;
    const int lane = static_cast<int>(threadIdx.x) % FP8ORT_WARP_SIZE;
    const int warp_m = warp / mma_t::kWarpsN;
    const int warp_n = warp % mma_t::kWarpsN;

    const int k_tiles = static_cast<int>((k + kTileK - 1) / kTileK);
    auto load_stage = [&](int stage, int kt) {
        uint8_t* s = smem + stage * kStageBytes;
        load_operand<ASource, VecA>(s, a_src, row0, static_cast<int64_t>(kt) * kTileK);
        load_operand<matrix_source, VecB>(s + kTileM * kTileK, b_src, col0, static_cast<int64_t>(kt) * kTileK);
    };
#pragma unroll
    for (int s = 0; s < kStages - 1; ++s) {
        if (s < k_tiles) load_stage(s, s);
        async_commit();
    }
    for (int kt = 0; kt < k_tiles; ++kt) {
        async_wait<kStages - 2>();
        __syncthreads();
        const int next = kt + kStages - 1;
        if (next < k_tiles) load_stage(next % kStages, next);
        async_commit();
        const uint8_t* s = smem + (kt % kStages) * kStageBytes;
        mma.compute(s, s + kTileM * kTileK, warp_m, warp_n, lane);
    }
    async_wait<0>();
    __syncthreads();  // every warp is done with the stages: they now hold the accumulators, half a tile at a time

    // warps with warp_m == h own tile rows [64 h, 64 h + 64) in every variant (kWarpM = 64)
    constexpr int kLd = kTileN + 4;  // floats per staged row: 16-byte rows, fewer bank conflicts
    static_assert(kTileM / 2 * kLd * sizeof(float) <= sizeof(smem), "half a tile of accumulators fits the stages");
    float* staged = reinterpret_cast<float*>(smem);
    const int64_t col_base = ep.col_offset + group * cols;
#pragma unroll 1
    for (int h = 0; h < 2; ++h) {
        if (warp_m == h)
            mma.for_each(warp_m, warp_n, lane, [&](int r, int c, float v) { staged[(r - 64 * h) * kLd + c] = v; });
        __syncthreads();
        epilogue_tile<kTileN, kCoreThreads>(ep, staged, kLd, kTileM / 2, row0 + 64 * h, col_base + col0,
                                            rows - row0 - 64 * h, cols - col0, static_cast<int>(threadIdx.x));
        __syncthreads();
    }
}

// Host: can the portable kernel run on the current device for this format? (NVIDIA sm_89+ OCP formats;
// gfx942 FNUZ; gfx950/gfx12 OCP; gfx11 any format through f16.)
fp8ort_status core_supports(const char* op, fp8ort_fp8_format format);

// Formats this build instantiates the main loop for: NVIDIA's tensor cores take the OCP formats only.
constexpr bool core_has_format(fp8ort_fp8_format f) {
#if defined(FP8ORT_CUDA)
    return f == FP8ORT_E4M3FN || f == FP8ORT_E5M2;
#else
    (void)f;
    return true;
#endif
}

// Host: pick the vectorization variants and launch fp8_gemm_core_kernel.
template <fp8ort_fp8_format F, typename ASource>
fp8ort_status launch_core(const ASource& a_src, bool vec_a, const uint8_t* b, int64_t rows, int64_t cols,
                          int64_t k, int64_t groups, const epilogue_args& ep, hipStream_t stream, const char* op) {
    if constexpr (!core_has_format(F)) {
        (void)a_src, (void)vec_a, (void)b, (void)rows, (void)cols, (void)k, (void)groups, (void)ep, (void)stream;
        return fail(FP8ORT_UNSUPPORTED, "%s: no %s matrix kernel in this build", op, dtype_name(F));
    } else {
        const int64_t grid_x = (cols + kTileN - 1) / kTileN;
        const int64_t grid_y = (rows + kTileM - 1) / kTileM;
        if (grid_y > 65535 || groups > 65535 || grid_x > 2147483647)
            return fail(FP8ORT_INVALID_ARGUMENT, "%s: %lld rows need %lld row tiles, more than the 65535 one launch takes",
                        op, static_cast<long long>(rows), static_cast<long long>(grid_y));
        const dim3 grid(static_cast<unsigned>(grid_x), static_cast<unsigned>(grid_y), static_cast<unsigned>(groups));
        const bool vec_b = (k % 16 == 0) && (reinterpret_cast<uintptr_t>(b) % 16 == 0);
        if (vec_a && vec_b)
            fp8_gemm_core_kernel<F, ASource, true, true><<<grid, kCoreThreads, 0, stream>>>(a_src, b, rows, cols, k, ep);
        else if (vec_b)
            fp8_gemm_core_kernel<F, ASource, false, true><<<grid, kCoreThreads, 0, stream>>>(a_src, b, rows, cols, k, ep);
        else
            fp8_gemm_core_kernel<F, ASource, false, false><<<grid, kCoreThreads, 0, stream>>>(a_src, b, rows, cols, k, ep);
        return check_launch(op);
    }
}

}  // namespace fp8ort
