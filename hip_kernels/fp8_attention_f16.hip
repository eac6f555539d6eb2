// FP8Attention on float16 Q, K, V (docs/operators.md): the query/key/value projection writes float16, and on NVIDIA
// GPUs of compute capability 8.0+ the attention runs on the tensor cores in the way fused FP16 attention kernels do:
// S = Q K^T by mma.sync m16n8k16 (float16 operands, exact products, float32 sums), scale, bias and the online softmax
// in float32 on the accumulators, the unnormalized probabilities rounded to float16 as the A operand of P V (the
// contract's allowance for float16 inputs), float32 sums of P V, the row sum of the unrounded probabilities.
//
// Block: WARPS warps of 16 query rows (kF16Warps = 4); key/value tiles of 64 keys, double-buffered in shared memory
// (cp.async where rows are 16-byte aligned) with rows padded by 16 bytes so that ldmatrix reads them without bank
// conflicts. Q's A fragments stay in registers; S stays in the accumulators, which are
// P's A fragments as they are (the m16n8 accumulator layout of two 8-key atoms is the m16n8k16 A layout of 16 keys);
// V's B fragments come from ldmatrix.trans.
//
// Elsewhere (AMD, NVIDIA before sm_80, head sizes past 128, FP8ORT_ATTENTION_F16=widen) Q, K and V are widened to
// float32 in the workspace and the float32 kernels run: exact float32 arithmetic on the same values, which the contract
// allows too.
#include <stdlib.h>
#include <string.h>

#include "fp8_attention_common.h"
#include "fp8_epilogue_apply.h"  // multiprocessors()
#include "fp8_gemm_core.h"        // copy16_async, async_commit, async_wait
#include "fp8_numerics.h"
#include "fp8_status.h"

namespace fp8ort {
namespace {

using attention::finish_row;
using attention::row_finish;
using attention::StoreF32;
using attention::StoreFp8;

// Widened copies for the float32 route: a [rows, width] float32 matrix from rows of `ld` float16 elements.
__global__ void widen_rows_kernel(const uint16_t* __restrict__ src, int64_t ld, int64_t rows, int64_t width,
                                  float* __restrict__ dst) {
    const int64_t total = rows * width;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
         i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
        const int64_t r = i / width, c = i - r * width;
        dst[i] = fp8ort_half_bits_to_float(src[r * ld + c]);
    }
}

fp8ort_status widen_rows(const uint16_t* src, int64_t ld, int64_t rows, int64_t width, float* dst,
                         hipStream_t stream) {
    const int64_t total = rows * width;
    if (total == 0) return FP8ORT_OK;
    int64_t blocks = (total + 255) / 256;
    const int64_t cap = static_cast<int64_t>(multiprocessors()) * 8;
    if (blocks > cap) blocks = cap;
    widen_rows_kernel<<<static_cast<unsigned>(blocks), 256, 0, stream>>>(src, ld, rows, width, dst);
    return check_launch("fp8ort_attention_f16 (widening Q, K, V to float32)");
}

// Parameters of the float32 run on the widened copies: compact rows.
fp8ort_attention_params widened_params(const fp8ort_attention_params& p) {
    fp8ort_attention_params w = p;
    w.q_row = p.h * p.d;
    w.k_row = p.h * p.d;
    w.v_row = p.h * p.dv;
    return w;
}

constexpr size_t kWsAlign = 256;  // offsets of the widened copies inside the workspace
size_t align_up(size_t n) { return (n + kWsAlign - 1) / kWsAlign * kWsAlign; }

// Bytes of the widened Q, K, V (each aligned), then the float32 kernel's own workspace.
struct widen_layout {
    size_t q_bytes = 0, k_bytes = 0, v_bytes = 0, inner = 0;
    size_t total() const { return q_bytes + k_bytes + v_bytes + inner; }
};
widen_layout widen_plan(const fp8ort_attention_params& p) {
    widen_layout w;
    w.q_bytes = align_up(static_cast<size_t>(p.b * p.s * p.h * p.d) * sizeof(float));
    w.k_bytes = align_up(static_cast<size_t>(p.b * p.t * p.h * p.d) * sizeof(float));
    w.v_bytes = align_up(static_cast<size_t>(p.b * p.t * p.h * p.dv) * sizeof(float));
    const fp8ort_attention_params wp = widened_params(p);
    w.inner = fp8ort_attention_workspace_bytes(&wp);
    return w;
}

#if defined(FP8ORT_CUDA)
constexpr int kF16Keys = 64;  // keys per tile

__device__ __forceinline__ int64_t p_min(int64_t a, int64_t b) { return a < b ? a : b; }

template <int DMAX>
struct F16Tile {
    static constexpr int kLd = DMAX + 8;  // halves per shared row: 16 bytes of padding, conflict-free ldmatrix rows
    static constexpr int kBufHalves = kF16Keys * kLd;  // one K or V tile
    static constexpr size_t kSmemBytes = 4 * size_t(kBufHalves) * sizeof(uint16_t);  // K and V, two buffers each
};

__device__ __forceinline__ void ldsm_x4(const uint16_t* p, uint32_t (&r)[4]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    const uint32_t a = static_cast<uint32_t>(__cvta_generic_to_shared(p));
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(a));
#else
    (void)p, r[0] = r[1] = r[2] = r[3] = 0u;
#endif
}
__device__ __forceinline__ void ldsm_x4_trans(const uint16_t* p, uint32_t (&r)[4]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    const uint32_t a = static_cast<uint32_t>(__cvta_generic_to_shared(p));
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(a));
#else
    (void)p, r[0] = r[1] = r[2] = r[3] = 0u;
#endif
}

// c += a * b: m16n8k16, float16 operands, float32 accumulators
__device__ __forceinline__ void mma_f16(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#else
    (void)c, (void)a, (void)b0, (void)b1;
    FP8ORT_TRAP();  // never launched below sm_80 (attention_f16_tc_runs)
#endif
}

// Two float32 values rounded to float16, lo in the low half (the lower key / column index of a fragment pair)
__device__ __forceinline__ uint32_t pack_half2(float lo, float hi) {
    uint32_t r = 0u;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm("cvt.rn.f16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
#else
    (void)lo, (void)hi;
#endif
    return r;
}

// One K or V tile: rows j0 .. j0 + 63 of a [T, ld] float16 matrix (columns from the head's first), zeros past T and
// past `cols` (so that padded columns and keys add nothing). Each thread copies one 16-byte column chunk of every
// kThreads / (DMAX / 8)-th row: its column and source pointer are set once. `vec`: by cp.async (cols % 8 == 0,
// aligned rows); else element by element.
template <int DMAX, int kThreads>
__device__ __forceinline__ void load_tile_f16(uint16_t* dst, const uint16_t* src, int64_t ld, int64_t j0, int64_t t,
                                              int cols, bool vec, int tid) {
    constexpr int kChunks = DMAX / 8, kLd = F16Tile<DMAX>::kLd, kStep = kThreads / kChunks;
    static_assert(kThreads % kChunks == 0 && kF16Keys % kStep == 0, "whole rows per pass");
    const int r0 = tid / kChunks, col = (tid % kChunks) * 8;
    const int64_t left = p_min(t - j0, int64_t{kF16Keys});
    const uint16_t* from = src + (j0 + r0) * ld + col;
    const int64_t step = kStep * ld;
#pragma unroll 4
    for (int i = 0; i < kF16Keys / kStep; ++i) {
        const int r = r0 + i * kStep;
        uint16_t* to = dst + r * kLd + col;
        if (vec) {
            const bool inside = r < left && col < cols;
            const uint16_t* at = inside ? from + i * step : src;
            copy16_async(reinterpret_cast<uint8_t*>(to), reinterpret_cast<const uint8_t*>(at), inside);
        } else {
#pragma unroll
            for (int e = 0; e < 8; ++e) to[e] = r < left && col + e < cols ? from[i * step + e] : uint16_t{0};
        }
    }
}

// Blocks per multiprocessor the register budget is set for: 128 registers per thread for D <= 64 (unbounded, the
// compiler takes 170-255, which halves the warps per multiprocessor)
template <int DMAX, int WARPS>
constexpr int kF16MinBlocks = (DMAX <= 64 ? 16 : 8) / WARPS;

template <int DMAX, int WARPS, bool kBias, class Out>
__global__ void __launch_bounds__(WARPS * 32, (kF16MinBlocks<DMAX, WARPS>)) attention_f16_kernel(const uint16_t* __restrict__ q,
                                                                   const uint16_t* __restrict__ k,
                                                                   const uint16_t* __restrict__ v,
                                                                   const float* __restrict__ bias,
                                                                   fp8ort_attention_params p, void* __restrict__ y,
                                                                   const float* __restrict__ y_scale, bool vec,
                                                                   bool vec_y) {
    using Tile = F16Tile<DMAX>;
    constexpr int kLd = Tile::kLd, kKsteps = DMAX / 16, kAtoms = DMAX / 8, kThreads = WARPS * 32;
    extern __shared__ uint4 smem_f16[];
    uint16_t* smem = reinterpret_cast<uint16_t*>(smem_f16);  // K0, V0, K1, V1
    const int tid = static_cast<int>(threadIdx.x), warp = tid / 32, lane = tid % 32;
    const int g = lane / 4, t4 = lane % 4;  // fragment coordinates: group (row) and thread in group
    const int64_t b = blockIdx.z, h = blockIdx.y, i0 = static_cast<int64_t>(blockIdx.x) * (16 * WARPS) + warp * 16;
    const int d = static_cast<int>(p.d), dv = static_cast<int>(p.dv);

    // Q's A fragments: a0 (row g, columns 16 kk + 2 t4, + 1), a1 (row g + 8), a2 (row g, columns + 8), a3 (row g + 8,
    // columns + 8); zeros past S and D. Columns past D of K and V are zeros in shared memory too, so every k-step and
    // column atom up to DMAX runs without a test (a head size below DMAX multiplies zeros).
    uint32_t qa[kKsteps][4];
    {
        bool row_in[2];
        const uint16_t* qrow[2];
#pragma unroll
        for (int r = 0; r < 2; ++r) {
            const int64_t i = i0 + g + 8 * r;
            row_in[r] = i < p.s;
            qrow[r] = q + (b * p.s + (row_in[r] ? i : 0)) * p.q_row + h * p.d + 2 * t4;
        }
#pragma unroll
        for (int kk = 0; kk < kKsteps; ++kk)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const int r = e & 1, col = 16 * kk + 2 * t4 + 8 * (e >> 1);
                const uint16_t* src = qrow[r] + 16 * kk + 8 * (e >> 1);
                const uint32_t lo = row_in[r] && col < d ? src[0] : 0u;  // (32-bit loads where aligned: more
                const uint32_t hi = row_in[r] && col + 1 < d ? src[1] : 0u;  // registers, and spills)
                qa[kk][e] = lo | (hi << 16);
            }
    }

    float o[kAtoms][4];
#pragma unroll
    for (int n = 0; n < kAtoms; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) o[n][e] = 0.0f;
    float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
    unsigned bad = 0;  // bit r (0: row g, 1: row g + 8): a NaN or +inf score
    const uint16_t* kb = k + b * p.t * p.k_row + h * p.d;
    const uint16_t* vb = v + b * p.t * p.v_row + h * p.dv;
    // attn_bias rows of rows g and g + 8 (row S - 1 for rows past S, never stored); its last stride is 0 or 1 (a
    // broadcast of a contiguous tensor)
    const float* brow[2] = {nullptr, nullptr};
    const int bias_step = static_cast<int>(p.bias_stride[3]);
    if constexpr (kBias) {
        const float* bias_bh = bias + b * p.bias_stride[0] + h * p.bias_stride[1];
#pragma unroll
        for (int r = 0; r < 2; ++r) {
            const int64_t i = i0 + g + 8 * r;
            brow[r] = bias_bh + (i < p.s ? i : p.s - 1) * p.bias_stride[2] + 2 * t4 * bias_step;
        }
    }

    const int64_t tiles = (p.t + kF16Keys - 1) / kF16Keys;
    if (tiles > 0) {
        load_tile_f16<DMAX, kThreads>(smem, kb, p.k_row, 0, p.t, d, vec, tid);
        load_tile_f16<DMAX, kThreads>(smem + Tile::kBufHalves, vb, p.v_row, 0, p.t, dv, vec, tid);
        async_commit();
    }
    for (int64_t it = 0; it < tiles; ++it) {
        const int64_t j0 = it * kF16Keys;
        const uint16_t* ks = smem + (it & 1) * 2 * Tile::kBufHalves;
        const uint16_t* vs = ks + Tile::kBufHalves;
        if (it + 1 < tiles) {  // the other buffers: their readers finished at the end of the previous tile
            uint16_t* kn = smem + ((it + 1) & 1) * 2 * Tile::kBufHalves;
            load_tile_f16<DMAX, kThreads>(kn, kb, p.k_row, j0 + kF16Keys, p.t, d, vec, tid);
            load_tile_f16<DMAX, kThreads>(kn + Tile::kBufHalves, vb, p.v_row, j0 + kF16Keys, p.t, dv, vec, tid);
            async_commit();
            async_wait<1>();
        } else {
            async_wait<0>();
        }
        __syncthreads();

        // S = Q K^T for 8 atoms of 8 keys: atom jn holds rows g, g + 8 at keys 8 jn + 2 t4, + 1. ldmatrix x4 gives
        // the B fragments of two k-steps: matrices of keys 8 jn .. + 7 and columns 32 pp + 8 i, i = 0..3
        float sc[8][4];
#pragma unroll
        for (int jn = 0; jn < 8; ++jn) {
#pragma unroll
            for (int e = 0; e < 4; ++e) sc[jn][e] = 0.0f;
#pragma unroll
            for (int pp = 0; pp < kKsteps / 2; ++pp) {
                uint32_t r[4];
                ldsm_x4(ks + (8 * jn + (lane & 7)) * kLd + 32 * pp + 8 * (lane >> 3), r);
                mma_f16(sc[jn], qa[2 * pp], r[0], r[1]);
                mma_f16(sc[jn], qa[2 * pp + 1], r[2], r[3]);
            }
        }

        // scale, bias, keys past T masked (-inf); the online softmax of rows g (r = 0) and g + 8 (r = 1). Without a
        // branch: the bias is read at the last key for keys past T.
        const int left = static_cast<int>(p.t - j0 < kF16Keys ? p.t - j0 : kF16Keys);
        const float* btile[2] = {nullptr, nullptr};
        if constexpr (kBias) btile[0] = brow[0] + j0 * bias_step, btile[1] = brow[1] + j0 * bias_step;
        float tmax[2] = {-INFINITY, -INFINITY};
#pragma unroll
        for (int jn = 0; jn < 8; ++jn)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const int r = e >> 1, kj = 8 * jn + 2 * t4 + (e & 1);
                float s = sc[jn][e] * p.scale;
                if constexpr (kBias) {
                    const int at = kj < left ? 8 * jn + (e & 1) : left - 1 - 2 * t4;  // relative to key 2 t4
                    s += btile[r][at * bias_step];
                }
                s = kj < left ? s : -INFINITY;
                bad |= !(s < INFINITY) ? 1u << r : 0u;  // NaN or +inf
                sc[jn][e] = s;
                tmax[r] = fmaxf(tmax[r], s);
            }
        float corr[2], mu[2];
#pragma unroll
        for (int r = 0; r < 2; ++r) {
            tmax[r] = fmaxf(tmax[r], __shfl_xor_sync(0xffffffffu, tmax[r], 1));
            tmax[r] = fmaxf(tmax[r], __shfl_xor_sync(0xffffffffu, tmax[r], 2));
            const float m_new = fmaxf(m[r], tmax[r]);
            mu[r] = m_new == -INFINITY ? 0.0f : m_new;  // all -inf so far: nothing accumulated yet
            corr[r] = __expf(m[r] - mu[r]);
            m[r] = m_new;
        }
        float sum[2][2] = {{0.0f, 0.0f}, {0.0f, 0.0f}};  // two partial sums per row: shorter chains
#pragma unroll
        for (int jn = 0; jn < 8; ++jn)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                sc[jn][e] = __expf(sc[jn][e] - mu[e >> 1]);
                sum[e >> 1][jn & 1] += sc[jn][e];
            }
#pragma unroll
        for (int r = 0; r < 2; ++r) l[r] = l[r] * corr[r] + (sum[r][0] + sum[r][1]);  // this thread's part
#pragma unroll
        for (int n = 0; n < kAtoms; ++n)
#pragma unroll
            for (int e = 0; e < 4; ++e) o[n][e] *= corr[e >> 1];

        // O += P V, 16 keys per k-step: A from atoms 2 kk and 2 kk + 1 as they are; ldmatrix.trans gives V's B
        // fragments of two column atoms: matrices (keys 16 kk + 8 i, columns 8 n), i = 0, 1, then columns 8 n + 8
#pragma unroll
        for (int kk = 0; kk < 4; ++kk) {
            const uint32_t a[4] = {pack_half2(sc[2 * kk][0], sc[2 * kk][1]), pack_half2(sc[2 * kk][2], sc[2 * kk][3]),
                                   pack_half2(sc[2 * kk + 1][0], sc[2 * kk + 1][1]),
                                   pack_half2(sc[2 * kk + 1][2], sc[2 * kk + 1][3])};
#pragma unroll
            for (int np = 0; np < kAtoms / 2; ++np) {
                uint32_t r[4];
                ldsm_x4_trans(vs + (16 * kk + (lane & 7) + 8 * ((lane >> 3) & 1)) * kLd + 16 * np + 8 * (lane >> 4),
                              r);
                mma_f16(o[2 * np], a, r[0], r[1]);
                mma_f16(o[2 * np + 1], a, r[2], r[3]);
            }
        }
        __syncthreads();  // this tile's buffers are loaded again two tiles on
    }

    // the rows' outputs, two columns per store (Out::put2; quantize4's hardware conversion for E4M3FN and E5M2)
    const fp8_divisor ys = make_fp8_divisor(y_scale ? *y_scale : 1.0f);
#pragma unroll
    for (int r = 0; r < 2; ++r) {
        float total = l[r];
        float flag = (bad >> r) & 1u ? 1.0f : 0.0f;
#pragma unroll
        for (int off = 1; off <= 2; off <<= 1) {
            total += __shfl_xor_sync(0xffffffffu, total, off);
            flag = fmaxf(flag, __shfl_xor_sync(0xffffffffu, flag, off));
        }
        const int64_t i = i0 + g + 8 * r;
        if (i >= p.s) continue;
        const row_finish fin = finish_row(p, total, flag > 0.0f, m[r]);
        const int64_t y0 = (b * p.s + i) * (p.h * p.dv) + h * p.dv;
#pragma unroll
        for (int n = 0; n < kAtoms; ++n) {
            const int col = 8 * n + 2 * t4;
            const float a = fin.value(o[n][2 * r], p.nan_to_zero), c = fin.value(o[n][2 * r + 1], p.nan_to_zero);
            if (col + 1 < dv) {
                Out::put2(y, y0 + col, a, c, ys, vec_y);
            } else if (col < dv) {
                Out::put(y, y0 + col, a, ys);
            }
        }
    }
}

// Whether the tensor-core kernel takes this problem: D = Dv <= 128 on a GPU of compute capability 8.0+, unless
// FP8ORT_ATTENTION_F16=widen (read at each call, so that tests can run both routes in one process).
bool attention_f16_tc_runs(const fp8ort_attention_params& p) {
    const char* env = getenv("FP8ORT_ATTENTION_F16");
    if ((env && strcmp(env, "widen") == 0) || p.d > 128 || p.dv != p.d) return false;
    int arch = 0;
    return current_gpu_arch(&arch) == FP8ORT_OK && arch >= 80;
}

// Warps per block: 4 (64 query rows). Smaller blocks give small batches more blocks but were slower on BERT-base at
// batch 1 (H100, window 26: 1,359 seq/s with 4, 1,333 with 2, 1,241 with 1; graphs): each block's serial chain (tile
// loads, softmax) is then shared by fewer warps. Only the 4-warp block is built (each size tripled the instantiations).
constexpr int kF16Warps = 4;

template <int DMAX, int WARPS, bool kBias, class Out>
fp8ort_status launch_f16(const uint16_t* q, const uint16_t* k, const uint16_t* v, const float* bias,
                         const fp8ort_attention_params& p, void* y, const float* y_scale, hipStream_t stream) {
    using Tile = F16Tile<DMAX>;
    auto kernel = attention_f16_kernel<DMAX, WARPS, kBias, Out>;
    static const hipError_t attr = hipFuncSetAttribute(
        reinterpret_cast<const void*>(kernel), hipFuncAttributeMaxDynamicSharedMemorySize,
        static_cast<int>(Tile::kSmemBytes));
    if (attr != hipSuccess) {
        return fail(FP8ORT_UNSUPPORTED, "fp8ort_attention_f16: the kernel for head size <= %d needs %zu bytes of "
                    "shared memory per block, which this GPU does not give (%s)", DMAX, Tile::kSmemBytes,
                    hipGetErrorString(attr));
    }
    // vec: 16-byte K/V chunks and 4-byte Q pairs (every row offset a multiple of 8 elements from aligned bases);
    // vec_y: two outputs per store (Dv even: every pair's first element at an even index)
    const bool vec = p.d % 8 == 0 && p.dv % 8 == 0 && p.q_row % 8 == 0 && p.k_row % 8 == 0 && p.v_row % 8 == 0 &&
                     reinterpret_cast<uintptr_t>(q) % 16 == 0 && reinterpret_cast<uintptr_t>(k) % 16 == 0 &&
                     reinterpret_cast<uintptr_t>(v) % 16 == 0;
    const bool vec_y = p.dv % 2 == 0 && reinterpret_cast<uintptr_t>(y) % 8 == 0;
    const dim3 grid(static_cast<unsigned>((p.s + 16 * WARPS - 1) / (16 * WARPS)), static_cast<unsigned>(p.h),
                    static_cast<unsigned>(p.b));
    kernel<<<grid, WARPS * 32, Tile::kSmemBytes, stream>>>(q, k, v, bias, p, y, y_scale, vec, vec_y);
    return check_launch("fp8ort_attention_f16");
}

template <class Out>
fp8ort_status launch_f16_tc(const uint16_t* q, const uint16_t* k, const uint16_t* v, const float* bias,
                            const fp8ort_attention_params& p, void* y, const float* y_scale, hipStream_t stream) {
    if (p.d <= 64) {
        if (bias) return launch_f16<64, kF16Warps, true, Out>(q, k, v, bias, p, y, y_scale, stream);
        return launch_f16<64, kF16Warps, false, Out>(q, k, v, bias, p, y, y_scale, stream);
    }
    if (bias) return launch_f16<128, kF16Warps, true, Out>(q, k, v, bias, p, y, y_scale, stream);
    return launch_f16<128, kF16Warps, false, Out>(q, k, v, bias, p, y, y_scale, stream);
}

fp8ort_status dispatch_f16_tc(const uint16_t* q, const uint16_t* k, const uint16_t* v, const float* bias,
                              const fp8ort_attention_params& p, void* y, fp8ort_dtype y_type, const float* y_scale,
                              hipStream_t s) {
    switch (y_type) {
        case FP8ORT_FLOAT: return launch_f16_tc<StoreF32>(q, k, v, bias, p, y, nullptr, s);
        case FP8ORT_E4M3FN: return launch_f16_tc<StoreFp8<FP8ORT_E4M3FN>>(q, k, v, bias, p, y, y_scale, s);
        case FP8ORT_E4M3FNUZ: return launch_f16_tc<StoreFp8<FP8ORT_E4M3FNUZ>>(q, k, v, bias, p, y, y_scale, s);
        case FP8ORT_E5M2: return launch_f16_tc<StoreFp8<FP8ORT_E5M2>>(q, k, v, bias, p, y, y_scale, s);
        case FP8ORT_E5M2FNUZ: return launch_f16_tc<StoreFp8<FP8ORT_E5M2FNUZ>>(q, k, v, bias, p, y, y_scale, s);
        default:
            return fail(FP8ORT_INVALID_ARGUMENT, "fp8ort_attention_f16: output type %s is not float32 or FP8",
                        dtype_name(y_type));
    }
}
#endif  // FP8ORT_CUDA

bool tc_takes(const fp8ort_attention_params& p) {
#if defined(FP8ORT_CUDA)
    return attention_f16_tc_runs(p);
#else
    (void)p;
    return false;
#endif
}

}  // namespace
}  // namespace fp8ort

using namespace fp8ort;

extern "C" size_t fp8ort_attention_f16_workspace_bytes(const fp8ort_attention_params* p) {
    if (!p || p->b < 0 || p->s < 0 || p->t < 0 || p->h < 1 || p->d < 0 || p->dv < 0 || p->d != p->dv) return 0;
    if (tc_takes(*p)) return 0;
    return widen_plan(*p).total();
}

extern "C" fp8ort_status fp8ort_attention_f16(const void* q, const void* k, const void* v, const float* attn_bias,
                                              const fp8ort_attention_params* p, void* y, fp8ort_dtype y_type,
                                              const float* y_scale, void* workspace, size_t workspace_bytes,
                                              void* stream) {
    const char* me = "fp8ort_attention_f16";
    bool empty = false;
    FP8ORT_TRY(attention::check_args(me, q, k, v, p, y, y_type, y_scale, &empty));
    if (empty) return ok();
    const hipStream_t s = as_stream(stream);
    const auto* q16 = static_cast<const uint16_t*>(q);
    const auto* k16 = static_cast<const uint16_t*>(k);
    const auto* v16 = static_cast<const uint16_t*>(v);
#if defined(FP8ORT_CUDA)
    if (attention_f16_tc_runs(*p)) {
        const fp8ort_status st = dispatch_f16_tc(q16, k16, v16, attn_bias, *p, y, y_type, y_scale, s);
        return st == FP8ORT_OK ? ok() : st;
    }
#endif
    const widen_layout w = widen_plan(*p);
    if (!workspace || workspace_bytes < w.total() || reinterpret_cast<uintptr_t>(workspace) % 16 != 0)
        return fail(FP8ORT_INVALID_ARGUMENT, "%s: the float32 route needs %zu bytes of 16-byte aligned workspace "
                    "(fp8ort_attention_f16_workspace_bytes), got %zu", me, w.total(), workspace_bytes);
    auto* base = static_cast<uint8_t*>(workspace);
    float* qf = reinterpret_cast<float*>(base);
    float* kf = reinterpret_cast<float*>(base + w.q_bytes);
    float* vf = reinterpret_cast<float*>(base + w.q_bytes + w.k_bytes);
    void* inner = w.inner ? base + w.q_bytes + w.k_bytes + w.v_bytes : nullptr;
    FP8ORT_TRY(widen_rows(q16, p->q_row, p->b * p->s, p->h * p->d, qf, s));
    FP8ORT_TRY(widen_rows(k16, p->k_row, p->b * p->t, p->h * p->d, kf, s));
    FP8ORT_TRY(widen_rows(v16, p->v_row, p->b * p->t, p->h * p->dv, vf, s));
    const fp8ort_attention_params wp = widened_params(*p);
    return fp8ort_attention_ws(qf, kf, vf, attn_bias, &wp, y, y_type, y_scale, inner, w.inner, stream);
}
