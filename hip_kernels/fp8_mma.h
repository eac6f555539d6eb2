// Warp-level FP8 matrix multiply-accumulate on each vendor, behind one interface used by fp8_gemm_core.h.
//
// Shared-memory tiles hold 16-byte chunks of K (kTileK bytes per row), chunk c of row r stored at chunk
// c ^ ((r >> 1) & 3): eight consecutive rows of one chunk column then hit eight distinct bank groups.
// Each variant computes a warp's sub-tile of a kTileM x kTileN block tile from one kTileK slice:
//   mma_sync_fp8   NVIDIA sm_89+: mma.sync m16n8k32 e4m3/e5m2, ldmatrix fragments, 8 warps of 64x32
//   mfma_fp8       gfx942/gfx950: v_mfma_f32_16x16x32_{fp8,bf8}, 4 wave64 of 64x64
//   wmma_fp8       gfx12: v_wmma_f32_16x16x16_{fp8,bf8}, 8 wave32 of 64x32
//   wmma_f16       gfx11: FP8 decoded to f16, v_wmma_f32_16x16x16_f16, 8 wave32 of 64x32
#pragma once

#include "fp8_numerics.h"

namespace fp8ort {

constexpr int kTileM = 128;
constexpr int kTileN = 128;
constexpr int kTileK = 64;  // bytes = FP8 elements
constexpr int kCoreThreads = 256;
constexpr int kChunksPerRow = kTileK / 16;

__device__ __forceinline__ int swizzled_offset(int row, int chunk) {
    return row * kTileK + ((chunk ^ ((row >> 1) & 3)) << 4);
}

#if defined(FP8ORT_HAS_MMA_SYNC_FP8)
template <fp8ort_fp8_format F>
struct warp_mma {
    static constexpr int kWarpsN = 4, kWarpM = 64, kWarpN = 32, kAtomsM = 4, kAtomsN = 4, kAccPerAtom = 4;
    float acc[kAtomsM][kAtomsN][kAccPerAtom];

    __device__ static void ldmatrix_x4(const uint8_t* p, uint32_t (&r)[4]) {
        const uint32_t addr = static_cast<uint32_t>(__cvta_generic_to_shared(p));
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                     : "r"(addr));
    }
    __device__ static void mma(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
        if constexpr (F == FP8ORT_E5M2) {
            asm volatile("mma.sync.aligned.m16n8k32.row.col.f32.e5m2.e5m2.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
                         "{%8,%9}, {%0,%1,%2,%3};\n"
                         : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                         : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
        } else {
            asm volatile("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
                         "{%8,%9}, {%0,%1,%2,%3};\n"
                         : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                         : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
        }
    }
    __device__ void zero() {
#pragma unroll
        for (int i = 0; i < kAtomsM; ++i)
#pragma unroll
            for (int j = 0; j < kAtomsN; ++j)
#pragma unroll
                for (int e = 0; e < kAccPerAtom; ++e) acc[i][j][e] = 0.0f;
    }
    // One kTileK slice: two k32 steps.
    __device__ void compute(const uint8_t* sa, const uint8_t* sb, int warp_m, int warp_n, int lane) {
#pragma unroll
        for (int ks = 0; ks < kTileK / 32; ++ks) {
            uint32_t a[kAtomsM][4];
            uint32_t b[kAtomsN / 2][4];
#pragma unroll
            for (int i = 0; i < kAtomsM; ++i) {
                const int row = warp_m * kWarpM + i * 16 + (lane & 15);
                ldmatrix_x4(sa + swizzled_offset(row, ks * 2 + (lane >> 4)), a[i]);
            }
#pragma unroll
            for (int j = 0; j < kAtomsN / 2; ++j) {
                const int row = warp_n * kWarpN + j * 16 + ((lane >> 4) << 3) + (lane & 7);
                ldmatrix_x4(sb + swizzled_offset(row, ks * 2 + ((lane >> 3) & 1)), b[j]);
            }
#pragma unroll
            for (int i = 0; i < kAtomsM; ++i)
#pragma unroll
                for (int j = 0; j < kAtomsN; ++j) mma(acc[i][j], a[i], b[j / 2][(j & 1) * 2], b[j / 2][(j & 1) * 2 + 1]);
        }
    }
    // Calls f(row, col, value) for every accumulator this lane holds (block-tile coordinates).
    template <typename Fn>
    __device__ void for_each(int warp_m, int warp_n, int lane, Fn&& f) const {
#pragma unroll
        for (int i = 0; i < kAtomsM; ++i)
#pragma unroll
            for (int j = 0; j < kAtomsN; ++j)
#pragma unroll
                for (int e = 0; e < 4; ++e)
                    f(warp_m * kWarpM + i * 16 + (lane >> 2) + (e >> 1) * 8,
                      warp_n * kWarpN + j * 8 + (lane & 3) * 2 + (e & 1), acc[i][j][e]);
    }
};

#elif defined(FP8ORT_HAS_MFMA_FP8) || defined(FP8ORT_HAS_WMMA_FP8) || defined(FP8ORT_HAS_WMMA_F16)
typedef float fp8ort_f32x4 __attribute__((ext_vector_type(4)));
typedef float fp8ort_f32x8 __attribute__((ext_vector_type(8)));
typedef int fp8ort_i32x2 __attribute__((ext_vector_type(2)));
typedef _Float16 fp8ort_f16x16 __attribute__((ext_vector_type(16)));

template <fp8ort_fp8_format F>
struct warp_mma {
#if defined(FP8ORT_HAS_MFMA_FP8)
    static constexpr int kWarpsN = 2, kWarpM = 64, kWarpN = 64, kAtomK = 32;
    using acc_t = fp8ort_f32x4;
#else
    static constexpr int kWarpsN = 4, kWarpM = 64, kWarpN = 32, kAtomK = 16;
    using acc_t = fp8ort_f32x8;
#endif
    static constexpr int kAtomsM = kWarpM / 16, kAtomsN = kWarpN / 16;
    acc_t acc[kAtomsM][kAtomsN];

    __device__ void zero() {
        for (int i = 0; i < kAtomsM; ++i)
            for (int j = 0; j < kAtomsN; ++j) acc[i][j] = acc_t{};
    }
    // 8 bytes of row `row`, K bytes [k, k + 8) of a swizzled tile.
    __device__ static long load8(const uint8_t* s, int row, int k) {
        return *reinterpret_cast<const long*>(s + swizzled_offset(row, k >> 4) + (k & 15));
    }
#if defined(FP8ORT_HAS_WMMA_F16)
    __device__ static fp8ort_f16x16 load16_as_f16(const uint8_t* s, int row, int k) {
        const uint8_t* p = s + swizzled_offset(row, k >> 4);
        fp8ort_f16x16 v;
#pragma unroll
        for (int e = 0; e < 16; ++e) v[e] = static_cast<_Float16>(decode_fp8<F>(p[e]));  // exact in f16
        return v;
    }
#endif
    __device__ void compute(const uint8_t* sa, const uint8_t* sb, int warp_m, int warp_n, int lane) {
        const int r = lane & 15;
        [[maybe_unused]] const int half = lane >> 4;  // K half (wave32) or quarter (wave64) of this lane
#pragma unroll
        for (int ks = 0; ks < kTileK / kAtomK; ++ks) {
#pragma unroll
            for (int i = 0; i < kAtomsM; ++i) {
                const int arow = warp_m * kWarpM + i * 16 + r;
#pragma unroll
                for (int j = 0; j < kAtomsN; ++j) {
                    const int brow = warp_n * kWarpN + j * 16 + r;
#if defined(FP8ORT_HAS_MFMA_FP8)
                    const long a = load8(sa, arow, ks * 32 + half * 8);
                    const long b = load8(sb, brow, ks * 32 + half * 8);
                    if constexpr (F == FP8ORT_E5M2FNUZ || F == FP8ORT_E5M2)
                        acc[i][j] = __builtin_amdgcn_mfma_f32_16x16x32_bf8_bf8(a, b, acc[i][j], 0, 0, 0);
                    else
                        acc[i][j] = __builtin_amdgcn_mfma_f32_16x16x32_fp8_fp8(a, b, acc[i][j], 0, 0, 0);
#elif defined(FP8ORT_HAS_WMMA_FP8)
                    const long a8 = load8(sa, arow, ks * 16 + half * 8);
                    const long b8 = load8(sb, brow, ks * 16 + half * 8);
                    const fp8ort_i32x2 a = __builtin_bit_cast(fp8ort_i32x2, a8);
                    const fp8ort_i32x2 b = __builtin_bit_cast(fp8ort_i32x2, b8);
                    if constexpr (F == FP8ORT_E5M2)
                        acc[i][j] = __builtin_amdgcn_wmma_f32_16x16x16_bf8_bf8_w32_gfx12(a, b, acc[i][j]);
                    else
                        acc[i][j] = __builtin_amdgcn_wmma_f32_16x16x16_fp8_fp8_w32_gfx12(a, b, acc[i][j]);
#else
                    const fp8ort_f16x16 a = load16_as_f16(sa, arow, ks * 16);
                    const fp8ort_f16x16 b = load16_as_f16(sb, brow, ks * 16);
                    acc[i][j] = __builtin_amdgcn_wmma_f32_16x16x16_f16_w32(a, b, acc[i][j]);
#endif
                }
            }
        }
    }
    template <typename Fn>
    __device__ void for_each(int warp_m, int warp_n, int lane, Fn&& f) const {
        const int col = lane & 15;
        const int half = lane >> 4;
        for (int i = 0; i < kAtomsM; ++i)
            for (int j = 0; j < kAtomsN; ++j)
                for (int e = 0; e < static_cast<int>(sizeof(acc_t) / sizeof(float)); ++e) {
#if defined(FP8ORT_HAS_MFMA_FP8)
                    const int row = half * 4 + e;  // D[4 * (lane / 16) + e][lane % 16]
#elif defined(FP8ORT_HAS_WMMA_FP8)
                    const int row = half * 8 + e;  // gfx12: D[8 * (lane / 16) + e][lane % 16]
#else
                    const int row = 2 * e + half;  // gfx11: D[2 * e + lane / 16][lane % 16]
#endif
                    f(warp_m * kWarpM + i * 16 + row, warp_n * kWarpN + j * 16 + col, acc[i][j][e]);
                }
    }
};

#else
// Host pass, or a device without FP8-capable matrix units: the launcher refuses before launch.
template <fp8ort_fp8_format F>
struct warp_mma {
    static constexpr int kWarpsN = 4;
    __device__ void zero() {}
    __device__ void compute(const uint8_t*, const uint8_t*, int, int, int) { FP8ORT_TRAP(); }
    template <typename Fn>
    __device__ void for_each(int, int, int, Fn&&) const {}
};
#endif

}  // namespace fp8ort
