// FP8Attention on the GPU: multi-head attention over [B, S, H*D] projections in one pass (docs/operators.md).
// One block per (64, 32 or 16 query rows, head, batch); key/value tiles stream through shared memory and the softmax is
// kept online (running maximum and sum per row), so the [S, T] scores never reach memory and no head transposes are
// needed. float32 arithmetic on the vector units: the same rounding class as the unfused float32 graph it replaces
// (FP8ORT_ATTENTION=tc: the same arithmetic on NVIDIA tensor cores for head sizes <= 64, attention_tc_kernel below).
// Logical warps of 32 lanes (two per wavefront on wave64 AMD GPUs; xor shuffles below 32).
//
// Per tile each lane scores KPL keys for the 8 rows of its warp (Q rows broadcast from shared memory as float4, K
// transposed into rows of kBk + 1 floats so that the transposing stores and the lane-wise reads are free of bank
// conflicts), updates the 8 running maxima, writes exp(s - m) to shared memory in place of K^T and accumulates P @ V
// for DMAX / 32 output columns per lane. Tiles are loaded 16 bytes per thread where D % 4 == 0.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <type_traits>

#include "fp8_attention_common.h"
#include "fp8_epilogue_apply.h"  // multiprocessors()
#include "fp8_numerics.h"
#include "fp8_status.h"
#include "onnx_nn_device.h"  // nn::shfl_xor: xor masks below 32 stay inside a logical warp on wave64 too

namespace fp8ort {
namespace {

using attention::finish_row;
using attention::row_finish;
using attention::StoreF32;
using attention::StoreFp8;

constexpr int kLanes = 32;  // logical warp
constexpr int kRows = 8;    // query rows per logical warp

template <int DMAX, int WARPS, int KPL>
struct AttentionTile {
    static constexpr int kBq = WARPS * kRows;     // query rows per block
    static constexpr int kBk = kLanes * KPL;      // keys per tile
    static constexpr int kCols = DMAX / kLanes;   // output columns per lane
    static constexpr int kThreads = WARPS * kLanes;
    static constexpr int kKt = kBk + 1;  // row stride of the transposed K tile: conflict-free stores and reads
    // K^T, then the tile's probabilities in the same place (K is read before P is written)
    static constexpr size_t kKtFloats = size_t(DMAX) * kKt > size_t(kBq) * kBk ? size_t(DMAX) * kKt : size_t(kBq) * kBk;
    static constexpr size_t kSmemFloats = size_t(kBq) * DMAX + kKtFloats + size_t(kBk) * DMAX;
    static_assert(kThreads % (DMAX / 4) == 0 && kKtFloats % 4 == 0, "whole rows of float4 per pass, aligned V");
    static constexpr size_t kSmemBytes = kSmemFloats * sizeof(float);
};

// Four floats of row `row` of a [rows, ld] matrix from column c (zeros past `cols` or `rows`); `vec`: one 16-byte
// load (cols % 4 == 0, aligned rows).
__device__ __forceinline__ float4 load_quad(const float* base, int64_t ld, int64_t row, int64_t rows, int c, int cols,
                                            bool vec) {
    if (row >= rows || c >= cols) return make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    const float* src = base + row * ld + c;
    if (vec) return *reinterpret_cast<const float4*>(src);
    return make_float4(src[0], c + 1 < cols ? src[1] : 0.0f, c + 2 < cols ? src[2] : 0.0f, c + 3 < cols ? src[3] : 0.0f);
}

// A split of the keys (attention_split_plan): the blocks of one query-row block each take `keys` keys (whole tiles)
// and write their rows' running maximum, sum and unnormalized outputs to `part` (part_stats, part_values) instead
// of Y; attention_combine_kernel merges them. splits 1 (part null): every key in one block, Y written directly.
struct key_split {
    int splits = 1;
    int64_t keys = 0;
    float* part = nullptr;
};

// Where the split blocks leave their rows: for split r and row R = (b * H + h) * S + i of `rows` rows, the float4
// (m, l, bad, 0) at part + 4 * (r * rows + R), then the Dv unnormalized outputs at part + 4 * splits * rows +
// (r * rows + R) * Dv.
// F: float (the split blocks write) or const float (the combine kernel reads).
template <class F>
__device__ __forceinline__ auto part_stats(F* part, int64_t rows, int r, int64_t row) {
    using F4 = std::conditional_t<std::is_const_v<F>, const float4, float4>;
    return reinterpret_cast<F4*>(part) + (r * rows + row);
}
template <class F>
__device__ __forceinline__ F* part_values(F* part, int splits, int64_t rows, int64_t dv, int r, int64_t row) {
    return part + 4 * splits * rows + (r * rows + row) * dv;
}

template <int DMAX, int WARPS, int KPL, class Out, bool kSplit = false>
__global__ void __launch_bounds__(WARPS * kLanes) attention_kernel(const float* __restrict__ q,
                                                                   const float* __restrict__ k,
                                                                   const float* __restrict__ v,
                                                                   const float* __restrict__ bias,
                                                                   fp8ort_attention_params p, void* __restrict__ y,
                                                                   const float* __restrict__ y_scale,
                                                                   key_split split) {
    using Tile = AttentionTile<DMAX, WARPS, KPL>;
    constexpr int kBq = Tile::kBq, kBk = Tile::kBk, kCols = Tile::kCols, kThreads = Tile::kThreads;
    extern __shared__ float4 smem_words[];  // float4: the float4 reads below need 16-byte alignment
    float* smem = reinterpret_cast<float*>(smem_words);
    float* qs = smem;                       // [kBq][DMAX]
    float* kt = qs + kBq * DMAX;            // [DMAX][kKt]: key j of column d at d * kKt + j
    float* ps = kt;                         // [kBq][kBk]: exp(s - m) of the current tile, once K^T is read
    float* vs = kt + Tile::kKtFloats;       // [kBk][DMAX]
    constexpr int kKt = Tile::kKt, kQuads = DMAX / 4, kRowsPerPass = kThreads / kQuads;

    const int tid = static_cast<int>(threadIdx.x);
    const int warp = tid / kLanes, lane = tid % kLanes;
    const int64_t b = blockIdx.z, h = blockIdx.y;
    // kSplit: a compile-time switch, so that the one-block kernels compile as they did without splits
    const int split_r = kSplit ? static_cast<int>(blockIdx.x % static_cast<unsigned>(split.splits)) : 0;
    const unsigned row_block = kSplit ? blockIdx.x / static_cast<unsigned>(split.splits) : blockIdx.x;
    const int64_t i0 = static_cast<int64_t>(row_block) * kBq;
    const int64_t j_begin = kSplit ? split_r * split.keys : 0;  // this block's keys: [j_begin, j_end)
    const int64_t j_end = kSplit ? (p.t - j_begin < split.keys ? p.t : j_begin + split.keys) : p.t;
    const int64_t y_row = p.h * p.dv;
    const int d4 = static_cast<int>((p.d + 3) & ~int64_t{3});  // columns read from Q/K: D rounded up to 4, zeros past D
    const int d = static_cast<int>(p.d), dv = static_cast<int>(p.dv);
    // tile loads: each thread moves 4 columns (cq .. cq+3) of every kRowsPerPass-th row
    const int cq = (tid % kQuads) * 4, r_first = tid / kQuads;
    const bool vec_qk = d % 4 == 0 && p.q_row % 4 == 0 && p.k_row % 4 == 0 &&
                        reinterpret_cast<uintptr_t>(q) % 16 == 0 && reinterpret_cast<uintptr_t>(k) % 16 == 0;
    const bool vec_v = dv % 4 == 0 && p.v_row % 4 == 0 && reinterpret_cast<uintptr_t>(v) % 16 == 0;

    const float* qb = q + b * p.s * p.q_row + h * p.d;
    for (int r = r_first; r < kBq; r += kRowsPerPass) {
        *reinterpret_cast<float4*>(&qs[r * DMAX + cq]) = load_quad(qb, p.q_row, i0 + r, p.s, cq, d, vec_qk);
    }

    float o[kRows][kCols];
    float m[kRows], l[kRows];
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
        m[r] = -INFINITY;
        l[r] = 0.0f;
#pragma unroll
        for (int c = 0; c < kCols; ++c) o[r][c] = 0.0f;
    }
    unsigned bad = 0;  // bit r: row r met a NaN or +inf score (its probabilities are NaN)
    const int row0 = warp * kRows;
    const float* kb = k + b * p.t * p.k_row + h * p.d;
    const float* vb = v + b * p.t * p.v_row + h * p.dv;
    const float* bias_bh = bias ? bias + b * p.bias_stride[0] + h * p.bias_stride[1] : nullptr;

    for (int64_t j0 = j_begin; j0 < j_end; j0 += kBk) {
        __syncthreads();  // the previous tile's readers are done (and the Q tile is written)
        for (int j = r_first; j < kBk; j += kRowsPerPass) {
            const float4 kq = load_quad(kb, p.k_row, j0 + j, j_end, cq, d, vec_qk);
            kt[(cq + 0) * kKt + j] = kq.x;
            kt[(cq + 1) * kKt + j] = kq.y;
            kt[(cq + 2) * kKt + j] = kq.z;
            kt[(cq + 3) * kKt + j] = kq.w;
            *reinterpret_cast<float4*>(&vs[j * DMAX + cq]) = load_quad(vb, p.v_row, j0 + j, j_end, cq, dv, vec_v);
        }
        __syncthreads();

        float sc[kRows][KPL];
#pragma unroll
        for (int r = 0; r < kRows; ++r)
#pragma unroll
            for (int u = 0; u < KPL; ++u) sc[r][u] = 0.0f;
        for (int c = 0; c < d4; c += 4) {
            float kv[4][KPL];
#pragma unroll
            for (int e = 0; e < 4; ++e)
#pragma unroll
                for (int u = 0; u < KPL; ++u) kv[e][u] = kt[(c + e) * kKt + lane + kLanes * u];
#pragma unroll
            for (int r = 0; r < kRows; ++r) {
                const float4 qv = *reinterpret_cast<const float4*>(&qs[(row0 + r) * DMAX + c]);
#pragma unroll
                for (int u = 0; u < KPL; ++u) {
                    float s = sc[r][u];
                    s = fmaf(qv.x, kv[0][u], s);
                    s = fmaf(qv.y, kv[1][u], s);
                    s = fmaf(qv.z, kv[2][u], s);
                    s = fmaf(qv.w, kv[3][u], s);
                    sc[r][u] = s;
                }
            }
        }

#pragma unroll
        for (int r = 0; r < kRows; ++r) {
            const int64_t i = i0 + row0 + r;
            const float* br = bias_bh ? bias_bh + (i < p.s ? i : p.s - 1) * p.bias_stride[2] : nullptr;
            float tmax = -INFINITY;
#pragma unroll
            for (int u = 0; u < KPL; ++u) {
                const int64_t jj = j0 + lane + kLanes * u;
                float s = -INFINITY;
                if (jj < j_end) {
                    s = sc[r][u] * p.scale;
                    if (br) s += br[jj * p.bias_stride[3]];
                    if (!(s < INFINITY)) bad |= 1u << r;  // NaN or +inf
                }
                sc[r][u] = s;
                tmax = fmaxf(tmax, s);
            }
#pragma unroll
            for (int off = kLanes / 2; off > 0; off >>= 1) tmax = fmaxf(tmax, nn::shfl_xor(tmax, off));
            const float m_new = fmaxf(m[r], tmax);
            const float mu = m_new == -INFINITY ? 0.0f : m_new;  // all -inf so far: nothing accumulated yet
            const float corr = expf(m[r] - mu);
            m[r] = m_new;
            float sum = 0.0f;
#pragma unroll
            for (int u = 0; u < KPL; ++u) {
                sc[r][u] = expf(sc[r][u] - mu);
                sum += sc[r][u];
            }
            l[r] = l[r] * corr + sum;
#pragma unroll
            for (int c = 0; c < kCols; ++c) o[r][c] *= corr;
        }
        __syncthreads();  // every warp is done reading K^T: P takes its place
#pragma unroll
        for (int r = 0; r < kRows; ++r)
#pragma unroll
            for (int u = 0; u < KPL; ++u) ps[(row0 + r) * kBk + lane + kLanes * u] = sc[r][u];
        __syncthreads();  // P of this tile written (each row by its own warp; the barrier also orders AMD waves)

        for (int j = 0; j < kBk; j += 4) {
            float vv[4][kCols];
#pragma unroll
            for (int e = 0; e < 4; ++e)
#pragma unroll
                for (int c = 0; c < kCols; ++c) vv[e][c] = vs[(j + e) * DMAX + lane + kLanes * c];
#pragma unroll
            for (int r = 0; r < kRows; ++r) {
                const float4 pv = *reinterpret_cast<const float4*>(&ps[(row0 + r) * kBk + j]);
#pragma unroll
                for (int c = 0; c < kCols; ++c) {
                    float a = o[r][c];
                    a = fmaf(pv.x, vv[0][c], a);
                    a = fmaf(pv.y, vv[1][c], a);
                    a = fmaf(pv.z, vv[2][c], a);
                    a = fmaf(pv.w, vv[3][c], a);
                    o[r][c] = a;
                }
            }
        }
    }

    const fp8_divisor ys = make_fp8_divisor(y_scale ? *y_scale : 1.0f);
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
        float total = l[r];
        float flag = (bad >> r) & 1u ? 1.0f : 0.0f;
#pragma unroll
        for (int off = kLanes / 2; off > 0; off >>= 1) {
            total += nn::shfl_xor(total, off);
            flag = fmaxf(flag, nn::shfl_xor(flag, off));
        }
        const int64_t i = i0 + row0 + r;
        if (i >= p.s) continue;
        if constexpr (kSplit) {  // this split's share of the row, merged by attention_combine_kernel
            const int64_t rows = p.b * p.h * p.s, row = (b * p.h + h) * p.s + i;
            if (lane == 0) *part_stats(split.part, rows, split_r, row) = make_float4(m[r], total, flag, 0.0f);
            float* out = part_values(split.part, split.splits, rows, p.dv, split_r, row);
#pragma unroll
            for (int c = 0; c < kCols; ++c) {
                const int col = lane + kLanes * c;
                if (col < dv) out[col] = o[r][c];
            }
            continue;
        }
        const row_finish fin = finish_row(p, total, flag > 0.0f, m[r]);
        const int64_t y0 = (b * p.s + i) * y_row + h * p.dv;
#pragma unroll
        for (int c = 0; c < kCols; ++c) {
            const int col = lane + kLanes * c;
            if (col >= dv) continue;
            const float val = fin.value(o[r][c], p.nan_to_zero);
            Out::put(y, y0 + col, val, ys);
        }
    }
}

// The rows of a key split, one logical warp per row (lanes over the output columns): the splits' running maxima
// merged (M, the largest; a split whose keys were all masked has m = -inf and weight 0), each split's sum and
// outputs weighted by exp(m_r - M) and added in split order (the same bits on every run), then the row finished as
// the one-block kernel finishes it (NaN rows where a split met a NaN or +inf score or every key was masked).
template <int DMAX, class Out>
__global__ void __launch_bounds__(256) attention_combine_kernel(const float* __restrict__ part,
                                                                fp8ort_attention_params p, int splits,
                                                                void* __restrict__ y,
                                                                const float* __restrict__ y_scale) {
    constexpr int kCols = DMAX / kLanes;
    const int64_t rows = p.b * p.h * p.s;
    const int64_t row = static_cast<int64_t>(blockIdx.x) * (256 / kLanes) + threadIdx.x / kLanes;
    const int lane = static_cast<int>(threadIdx.x % kLanes);
    if (row >= rows) return;
    float m = -INFINITY;
    bool bad = false;
    for (int r = 0; r < splits; ++r) {
        const float4 st = *part_stats(part, rows, r, row);
        m = fmaxf(m, st.x);
        bad |= st.z > 0.0f;
    }
    const float mu = m == -INFINITY ? 0.0f : m;
    float total = 0.0f, o[kCols];
#pragma unroll
    for (int c = 0; c < kCols; ++c) o[c] = 0.0f;
    for (int r = 0; r < splits; ++r) {
        const float4 st = *part_stats(part, rows, r, row);
        const float w = expf(st.x - mu);
        total += st.y * w;
        const float* in = part_values(part, splits, rows, p.dv, r, row);
#pragma unroll
        for (int c = 0; c < kCols; ++c) {
            const int col = lane + kLanes * c;
            if (col < p.dv) o[c] += in[col] * w;
        }
    }
    const fp8_divisor ys = make_fp8_divisor(y_scale ? *y_scale : 1.0f);
    const row_finish fin = finish_row(p, total, bad, m);
    const int64_t i = row % p.s, bh = row / p.s, h = bh % p.h, b = bh / p.h;
    const int64_t y0 = (b * p.s + i) * (p.h * p.dv) + h * p.dv;
#pragma unroll
    for (int c = 0; c < kCols; ++c) {
        const int col = lane + kLanes * c;
        if (col < p.dv) Out::put(y, y0 + col, fin.value(o[c], p.nan_to_zero), ys);
    }
}

#if defined(FP8ORT_CUDA)
// ---- the tensor-core kernel (NVIDIA sm_80+, head sizes D = Dv <= 64; FP8ORT_ATTENTION=tc) ----
// The same float32 arithmetic on the tensor cores by the three-term TF32 split: each float32 operand x is
// big + small, big = x with its low 13 mantissa bits cleared (a TF32 value) and small = x - big (exact in float32)
// rounded to TF32, and a*b is taken as big_a*big_b + big_a*small_b + small_a*big_b (the dropped small*small term and
// small's rounding are ~2^-21 of |a*b|; the products are exact and summed in float32 by mma.sync m16n8k8 TF32).
// Block: 4 warps of 16 query rows; key/value tiles of 64 keys staged in shared memory once split (big and small of
// an element side by side, so one 8-byte load gives both). S = Q K^T stays in the mma accumulators; the online
// softmax runs on them and they become P's A fragments as they are: the k index of P V is permuted within each
// 8-key step (A column c <-> key 2c, c + 4 <-> key 2c + 1), and B reads V's rows in the same permuted order.
constexpr int kTcRows = 64;    // query rows per block (16 per warp)
constexpr int kTcKeys = 64;    // keys per tile
constexpr int kTcThreads = 128;
constexpr int kTcKld = 2 * 64 + 8;  // words per K row (big/small pairs of 64 columns): 8-byte loads conflict-free
constexpr int kTcVld = 2 * 64 + 4;  // words per V row: the permuted row pairs read conflict-free
constexpr size_t kTcSmemBytes = size_t(kTcKeys) * (kTcKld + kTcVld) * sizeof(float);

// x as big + small TF32 values (bit patterns for mma); NaN goes whole into big (small 0; a NaN whose payload lies in
// the cleared bits becomes the canonical NaN), so it reaches the sums as it would in float32. An infinity cannot:
// a cross term inf * 0 (a small part of 0) would be NaN where inf * y is not. It sets `inf_seen`, and the block
// then computes its rows again on the vector units (attention_rows_scalar).
__device__ __forceinline__ void tf32_split(float x, uint32_t& big, uint32_t& small, unsigned& inf_seen) {
    const uint32_t u = __float_as_uint(x);
    if ((u & 0x7f800000u) == 0x7f800000u) {
        const bool nan = (u & 0x007fffffu) != 0;
        big = nan ? 0x7fc00000u : u;
        small = 0u;
        inf_seen |= nan ? 0u : 1u;
        return;
    }
    big = u & 0xffffe000u;
    const float rest = x - __uint_as_float(big);  // exact: the cleared bits
    uint32_t r;
    asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(rest));
    small = r;
}

__device__ __forceinline__ void mma_tf32(float (&c)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, uint32_t b0,
                                         uint32_t b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
#else
    (void)c, (void)a0, (void)a1, (void)a2, (void)a3, (void)b0, (void)b1;
    FP8ORT_TRAP();  // never launched below sm_80 (attention_tc_runs)
#endif
}

// c += a*b as three TF32 products: the two cross terms with a small part first, then big*big
__device__ __forceinline__ void mma_3xtf32(float (&c)[4], const uint32_t (&ab)[4], const uint32_t (&as)[4],
                                           uint2 bb, uint2 bs) {
    mma_tf32(c, as[0], as[1], as[2], as[3], bb.x, bb.y);
    mma_tf32(c, ab[0], ab[1], ab[2], ab[3], bs.x, bs.y);
    mma_tf32(c, ab[0], ab[1], ab[2], ab[3], bb.x, bb.y);
}

// The 16 rows from i0 of one (b, h) by one warp on the vector units, key after key (a warp sum per score, the online
// softmax of the main kernels, lanes over the output columns): the tensor-core kernel's way out for blocks that met
// an infinite input. Slow, and for inputs that are rare.
template <class Out>
__device__ __noinline__ void attention_rows_scalar(const float* q, const float* k, const float* v, const float* bias_bh,
                                                   const fp8ort_attention_params& p, int64_t i0, int lane, void* y,
                                                   const fp8_divisor& ys) {
    const int d = static_cast<int>(p.d), dv = static_cast<int>(p.dv);
    const int64_t b = blockIdx.z, h = blockIdx.y;
    const float* kb = k + b * p.t * p.k_row + h * p.d;
    const float* vb = v + b * p.t * p.v_row + h * p.dv;
    for (int r = 0; r < 16; ++r) {
        const int64_t i = i0 + r;
        if (i >= p.s) break;
        const float* qr = q + (b * p.s + i) * p.q_row + h * p.d;
        const float q0 = lane < d ? qr[lane] : 0.0f, q1 = lane + 32 < d ? qr[lane + 32] : 0.0f;
        const float* br = bias_bh ? bias_bh + i * p.bias_stride[2] : nullptr;
        float m = -INFINITY, l = 0.0f, o0 = 0.0f, o1 = 0.0f;
        bool bad = false;
        for (int64_t j = 0; j < p.t; ++j) {
            const float* kr = kb + j * p.k_row;
            float part = fmaf(q1, lane + 32 < d ? kr[lane + 32] : 0.0f, q0 * (lane < d ? kr[lane] : 0.0f));
#pragma unroll
            for (int off = 16; off > 0; off >>= 1) part += nn::shfl_xor(part, off);
            float s = part * p.scale;
            if (br) s += br[j * p.bias_stride[3]];
            bad |= !(s < INFINITY);
            const float m_new = fmaxf(m, s);
            const float mu = m_new == -INFINITY ? 0.0f : m_new;
            const float corr = expf(m - mu), e = expf(s - mu);
            const float* vr = vb + j * p.v_row;
            l = l * corr + e;
            o0 = o0 * corr + e * (lane < dv ? vr[lane] : 0.0f);
            o1 = o1 * corr + e * (lane + 32 < dv ? vr[lane + 32] : 0.0f);
            m = m_new;
        }
        const row_finish fin = finish_row(p, l, bad, m);
        const int64_t y0 = (b * p.s + i) * (p.h * p.dv) + h * p.dv;
        if (lane < dv) Out::put(y, y0 + lane, fin.value(o0, p.nan_to_zero), ys);
        if (lane + 32 < dv) Out::put(y, y0 + lane + 32, fin.value(o1, p.nan_to_zero), ys);
    }
}

template <class Out>
__global__ void __launch_bounds__(kTcThreads, 3) attention_tc_kernel(const float* __restrict__ q,
                                                                      const float* __restrict__ k,
                                                                      const float* __restrict__ v,
                                                                      const float* __restrict__ bias,
                                                                      fp8ort_attention_params p, void* __restrict__ y,
                                                                      const float* __restrict__ y_scale) {
    extern __shared__ float4 smem_words[];
    uint32_t* ks = reinterpret_cast<uint32_t*>(smem_words);  // [kTcKeys][kTcKld]: (big, small) of K[j][c] at 2c
    uint32_t* vs = ks + kTcKeys * kTcKld;                     // [kTcKeys][kTcVld]: (big, small) of V[j][c] at 2c
    const int tid = static_cast<int>(threadIdx.x), warp = tid / 32, lane = tid % 32;
    const int g = lane / 4, t4 = lane % 4;  // mma fragment coordinates: group (row) and thread in group
    const int64_t b = blockIdx.z, h = blockIdx.y, i0 = static_cast<int64_t>(blockIdx.x) * kTcRows + warp * 16;
    const int d = static_cast<int>(p.d), dv = static_cast<int>(p.dv);
    const int ksteps = (d + 7) / 8;

    // Q fragments of this warp's rows i0 + g and i0 + g + 8, columns 8 kk + t4 and + 4 (zeros past D or S), held
    // as float32 and split again in each tile: 32 registers instead of 64 for the split parts, which brings the
    // kernel to 168 registers (218 before) and 3 blocks per multiprocessor (2 before; H100: 2 blocks, 12.5% of the
    // warps, 6.7 cycles per issued instruction)
    unsigned inf_seen = 0;  // an infinite Q, K or V element met by this thread
    float qf[8][4];
    const float* qbase = q + b * p.s * p.q_row + h * p.d;
#pragma unroll
    for (int kk = 0; kk < 8; ++kk)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            const int64_t row = i0 + g + 8 * (e & 1);
            const int col = 8 * kk + t4 + 4 * (e >> 1);
            qf[kk][e] = row < p.s && col < d ? qbase[row * p.q_row + col] : 0.0f;
            inf_seen |= (__float_as_uint(qf[kk][e]) & 0x7fffffffu) == 0x7f800000u ? 1u : 0u;
        }

    float o[8][4];
    float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
#pragma unroll
    for (int n = 0; n < 8; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) o[n][e] = 0.0f;
    unsigned bad = 0;  // bit r (0: row g, 1: row g + 8): a NaN or +inf score
    const float* kb = k + b * p.t * p.k_row + h * p.d;
    const float* vb = v + b * p.t * p.v_row + h * p.dv;
    const float* bias_bh = bias ? bias + b * p.bias_stride[0] + h * p.bias_stride[1] : nullptr;
    const float* brow[2] = {nullptr, nullptr};
    if (bias_bh) {
#pragma unroll
        for (int r = 0; r < 2; ++r) {
            const int64_t i = i0 + g + 8 * r;
            brow[r] = bias_bh + (i < p.s ? i : p.s - 1) * p.bias_stride[2];
        }
    }
    const bool vec_k = d % 4 == 0 && p.k_row % 4 == 0 && reinterpret_cast<uintptr_t>(k) % 16 == 0;
    const bool vec_v = dv % 4 == 0 && p.v_row % 4 == 0 && reinterpret_cast<uintptr_t>(v) % 16 == 0;
    const int cq = (tid % 16) * 4, r_first = tid / 16;  // tile loads: 4 columns of every 8th row
    const bool swap = (tid >> 2) & 1;
    const int first = swap ? 4 : 0;  // word offset of the half stored first

    for (int64_t j0 = 0; j0 < p.t; j0 += kTcKeys) {
        __syncthreads();  // the previous tile's readers are done
        for (int j = r_first; j < kTcKeys; j += kTcThreads / 16) {
            const float4 kq = load_quad(kb, p.k_row, j0 + j, p.t, cq, d, vec_k);
            const float4 vq = load_quad(vb, p.v_row, j0 + j, p.t, cq, dv, vec_v);
            uint4 k01, k23, v01, v23;
            tf32_split(kq.x, k01.x, k01.y, inf_seen);
            tf32_split(kq.y, k01.z, k01.w, inf_seen);
            tf32_split(kq.z, k23.x, k23.y, inf_seen);
            tf32_split(kq.w, k23.z, k23.w, inf_seen);
            tf32_split(vq.x, v01.x, v01.y, inf_seen);
            tf32_split(vq.y, v01.z, v01.w, inf_seen);
            tf32_split(vq.z, v23.x, v23.y, inf_seen);
            tf32_split(vq.w, v23.z, v23.w, inf_seen);
            // 16-byte stores go 8 threads at a time: threads 4-7 of each 8 store their second half first, so that
            // the 8 chunks of a step cover the 32 banks once (in order, threads t and t + 4 collide)
            const uint4 k_first = swap ? k23 : k01, k_second = swap ? k01 : k23;
            const uint4 v_first = swap ? v23 : v01, v_second = swap ? v01 : v23;
            *reinterpret_cast<uint4*>(&ks[j * kTcKld + 2 * cq + first]) = k_first;
            *reinterpret_cast<uint4*>(&ks[j * kTcKld + 2 * cq + 4 - first]) = k_second;
            *reinterpret_cast<uint4*>(&vs[j * kTcVld + 2 * cq + first]) = v_first;
            *reinterpret_cast<uint4*>(&vs[j * kTcVld + 2 * cq + 4 - first]) = v_second;
        }
        __syncthreads();

        // S = Q K^T for 8 atoms of 8 keys: atom jn holds rows g, g + 8 at keys 8 jn + 2 t4, + 1
        float sc[8][4];
#pragma unroll
        for (int jn = 0; jn < 8; ++jn)
#pragma unroll
            for (int e = 0; e < 4; ++e) sc[jn][e] = 0.0f;
#pragma unroll
        for (int kk = 0; kk < 8; ++kk) {
            if (kk >= ksteps) break;
            uint32_t qb[4], qsm[4];
            unsigned q_inf = 0;  // an infinite Q element was flagged in the prologue
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                float x = qf[kk][e];
                asm volatile("" : "+f"(x));  // split here, in every tile: hoisted, the parts would take 64 registers
                tf32_split(x, qb[e], qsm[e], q_inf);
            }
#pragma unroll
            for (int jn = 0; jn < 8; ++jn) {
                const uint32_t* kr = ks + (8 * jn + g) * kTcKld + 2 * (8 * kk + t4);
                const uint2 lo = *reinterpret_cast<const uint2*>(kr);      // K[key][8 kk + t4]: (big, small)
                const uint2 hi = *reinterpret_cast<const uint2*>(kr + 8);  // K[key][8 kk + t4 + 4]
                mma_3xtf32(sc[jn], qb, qsm, make_uint2(lo.x, hi.x), make_uint2(lo.y, hi.y));
            }
        }

        // scale, bias, masking past T; the online softmax of rows g (r = 0) and g + 8 (r = 1)
        float tmax[2] = {-INFINITY, -INFINITY};
#pragma unroll
        for (int jn = 0; jn < 8; ++jn)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const int r = e >> 1;
                const int64_t jj = j0 + 8 * jn + 2 * t4 + (e & 1);
                float s = -INFINITY;
                if (jj < p.t) {
                    s = sc[jn][e] * p.scale;
                    if (brow[r]) s += brow[r][jj * p.bias_stride[3]];
                    if (!(s < INFINITY)) bad |= 1u << r;  // NaN or +inf
                }
                sc[jn][e] = s;
                tmax[r] = fmaxf(tmax[r], s);
            }
        float corr[2], mu[2];
#pragma unroll
        for (int r = 0; r < 2; ++r) {
            tmax[r] = fmaxf(tmax[r], nn::shfl_xor(tmax[r], 1));
            tmax[r] = fmaxf(tmax[r], nn::shfl_xor(tmax[r], 2));
            const float m_new = fmaxf(m[r], tmax[r]);
            mu[r] = m_new == -INFINITY ? 0.0f : m_new;  // all -inf so far: nothing accumulated yet
            corr[r] = expf(m[r] - mu[r]);
            m[r] = m_new;
        }
        float sum[2] = {0.0f, 0.0f};
#pragma unroll
        for (int jn = 0; jn < 8; ++jn)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                sc[jn][e] = expf(sc[jn][e] - mu[e >> 1]);
                sum[e >> 1] += sc[jn][e];
            }
#pragma unroll
        for (int r = 0; r < 2; ++r) l[r] = l[r] * corr[r] + sum[r];  // this thread's part of the row sum
#pragma unroll
        for (int n = 0; n < 8; ++n)
#pragma unroll
            for (int e = 0; e < 4; ++e) o[n][e] *= corr[e >> 1];

        // O += P V: 8-key step jn; A = (P[g][2c], P[g+8][2c], P[g][2c+1], P[g+8][2c+1]) of atom jn, B = V rows
        // 8 jn + 2 t4 and + 1 (the same permutation of the keys)
#pragma unroll
        for (int jn = 0; jn < 8; ++jn) {
            uint32_t pb[4], psm[4];
            unsigned p_inf = 0;  // probabilities are never infinite
            tf32_split(sc[jn][0], pb[0], psm[0], p_inf);
            tf32_split(sc[jn][2], pb[1], psm[1], p_inf);
            tf32_split(sc[jn][1], pb[2], psm[2], p_inf);
            tf32_split(sc[jn][3], pb[3], psm[3], p_inf);
            const uint32_t* v0 = vs + (8 * jn + 2 * t4) * kTcVld + 2 * g;
#pragma unroll
            for (int n = 0; n < 8; ++n) {
                if (8 * n >= dv) break;
                const uint2 lo = *reinterpret_cast<const uint2*>(v0 + 16 * n);           // V[2 t4][8 n + g]
                const uint2 hi = *reinterpret_cast<const uint2*>(v0 + kTcVld + 16 * n);  // V[2 t4 + 1][8 n + g]
                mma_3xtf32(o[n], pb, psm, make_uint2(lo.x, hi.x), make_uint2(lo.y, hi.y));
            }
        }
    }

    const fp8_divisor ys = make_fp8_divisor(y_scale ? *y_scale : 1.0f);
    if (__syncthreads_or(static_cast<int>(inf_seen))) {  // block-uniform
        attention_rows_scalar<Out>(q, k, v, bias_bh, p, i0, lane, y, ys);
        return;
    }
#pragma unroll
    for (int r = 0; r < 2; ++r) {
        float total = l[r];
        float flag = (bad >> r) & 1u ? 1.0f : 0.0f;
#pragma unroll
        for (int off = 1; off <= 2; off <<= 1) {
            total += nn::shfl_xor(total, off);
            flag = fmaxf(flag, nn::shfl_xor(flag, off));
        }
        const int64_t i = i0 + g + 8 * r;
        if (i >= p.s) continue;
        const row_finish fin = finish_row(p, total, flag > 0.0f, m[r]);
        const int64_t y0 = (b * p.s + i) * (p.h * p.dv) + h * p.dv;
#pragma unroll
        for (int n = 0; n < 8; ++n)
#pragma unroll
            for (int e = 0; e < 2; ++e) {
                const int col = 8 * n + 2 * t4 + e;
                if (col >= dv) continue;
                const float val = fin.value(o[n][2 * r + e], p.nan_to_zero);
                Out::put(y, y0 + col, val, ys);
            }
    }
}

// Whether the tensor-core kernel takes this problem: FP8ORT_ATTENTION=tc (read at each call, so that tests can run
// both kernels in one process; the vector-unit kernel otherwise until the tensor cores are measured on a GPU),
// head sizes D = Dv <= 64 and a GPU of compute capability 8.0 or higher.
bool attention_tc_runs(const fp8ort_attention_params& p) {
    const char* env = getenv("FP8ORT_ATTENTION");
    if (!(env && strcmp(env, "tc") == 0) || p.d > 64 || p.dv != p.d) return false;
    int arch = 0;
    return current_gpu_arch(&arch) == FP8ORT_OK && arch >= 80;
}

template <class Out>
fp8ort_status launch_attention_tc(const float* q, const float* k, const float* v, const float* bias,
                                  const fp8ort_attention_params& p, void* y, const float* y_scale, hipStream_t stream) {
    static const hipError_t attr =
        hipFuncSetAttribute(reinterpret_cast<const void*>(attention_tc_kernel<Out>),
                            hipFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(kTcSmemBytes));
    if (attr != hipSuccess) {
        return fail(FP8ORT_UNSUPPORTED, "fp8ort_attention: the tensor-core kernel needs %zu bytes of shared memory per "
                    "block, which this GPU does not give (%s)", kTcSmemBytes, hipGetErrorString(attr));
    }
    const dim3 grid(static_cast<unsigned>((p.s + kTcRows - 1) / kTcRows), static_cast<unsigned>(p.h),
                    static_cast<unsigned>(p.b));
    attention_tc_kernel<Out><<<grid, kTcThreads, kTcSmemBytes, stream>>>(q, k, v, bias, p, y, y_scale);
    return check_launch("fp8ort_attention");
}
#endif  // FP8ORT_CUDA

template <int DMAX, int WARPS, int KPL, class Out, bool kSplit = false>
fp8ort_status launch_attention(const float* q, const float* k, const float* v, const float* bias,
                               const fp8ort_attention_params& p, void* y, const float* y_scale, hipStream_t stream,
                               const key_split& split = key_split{}) {
    using Tile = AttentionTile<DMAX, WARPS, KPL>;
    auto kernel = attention_kernel<DMAX, WARPS, KPL, Out, kSplit>;
    static const hipError_t attr =
        hipFuncSetAttribute(reinterpret_cast<const void*>(kernel), hipFuncAttributeMaxDynamicSharedMemorySize,
                            static_cast<int>(Tile::kSmemBytes));
    if (attr != hipSuccess) {
        return fail(FP8ORT_UNSUPPORTED, "fp8ort_attention: the kernel for head size <= %d needs %zu bytes of shared "
                    "memory per block, which this GPU does not give (%s)", DMAX, Tile::kSmemBytes,
                    hipGetErrorString(attr));
    }
    const int64_t row_blocks = (p.s + Tile::kBq - 1) / Tile::kBq;
    const dim3 grid(static_cast<unsigned>(row_blocks * split.splits), static_cast<unsigned>(p.h),
                    static_cast<unsigned>(p.b));
    kernel<<<grid, Tile::kThreads, Tile::kSmemBytes, stream>>>(q, k, v, bias, p, y, y_scale, split);
    FP8ORT_TRY(check_launch("fp8ort_attention"));
    if (!kSplit) return FP8ORT_OK;
    const int64_t rows = p.b * p.h * p.s;
    attention_combine_kernel<DMAX, Out><<<static_cast<unsigned>((rows + 7) / 8), 256, 0, stream>>>(
        split.part, p, split.splits, y, y_scale);
    return check_launch("fp8ort_attention (combining the key splits)");
}

// Key splits for small grids (on unless FP8ORT_ATTENTION_SPLIT=off, read at each call; BERT-base at batch 1 +16% with
// graph capture on an H100, bench/NOTES.md 2026-12-07 fourteenth session): where the
// query-row blocks of the split kernels (32-key tiles: <64, 8, 1> for D <= 64, <128, 4, 1> above) are fewer than
// two per multiprocessor, the keys are cut into whole tiles over up to 8 blocks per row block, enough for about two
// blocks per multiprocessor (BERT-base at batch 1: 24 row blocks of 64 rows -> 96 blocks of 32 keys each); then
// attention_combine_kernel. splits 1: no split (a large grid, few keys, or off).
struct split_plan {
    int splits = 1;
    int64_t keys = 0;
    size_t bytes = 0;  // scratch the split needs
};
split_plan attention_split_plan(const fp8ort_attention_params& p) {
    split_plan plan;
    const char* env = getenv("FP8ORT_ATTENTION_SPLIT");
    if ((env && strcmp(env, "off") == 0) || p.t <= 0 || p.d > 128 || p.b * p.h * p.s == 0) return plan;
    constexpr int kKeys = kLanes;  // keys per tile of the split kernels (KPL 1)
    const int64_t rows_per_block = p.d <= 64 ? AttentionTile<64, 8, 1>::kBq : AttentionTile<128, 4, 1>::kBq;
    const int64_t blocks = (p.s + rows_per_block - 1) / rows_per_block * p.h * p.b;
    const int64_t tiles = (p.t + kKeys - 1) / kKeys;
    int64_t splits = 2 * static_cast<int64_t>(multiprocessors()) / blocks;
    if (splits > tiles) splits = tiles;
    if (splits > 8) splits = 8;
    if (splits < 2) return plan;
    plan.keys = (tiles + splits - 1) / splits * kKeys;
    plan.splits = static_cast<int>((p.t + plan.keys - 1) / plan.keys);
    if (plan.splits < 2) return split_plan{};
    plan.bytes = static_cast<size_t>(plan.splits) * static_cast<size_t>(p.b * p.h * p.s) *
                 static_cast<size_t>(4 + p.dv) * sizeof(float);
    return plan;
}

template <class Out>
fp8ort_status dispatch_head_size(const float* q, const float* k, const float* v, const float* bias,
                                 const fp8ort_attention_params& p, void* y, const float* y_scale, hipStream_t stream,
                                 void* workspace, size_t workspace_bytes) {
#if defined(FP8ORT_CUDA)
    if (attention_tc_runs(p)) return launch_attention_tc<Out>(q, k, v, bias, p, y, y_scale, stream);
#endif
    const split_plan plan = attention_split_plan(p);
    if (plan.splits > 1 && workspace && workspace_bytes >= plan.bytes &&
        reinterpret_cast<uintptr_t>(workspace) % 16 == 0) {
        const key_split split{plan.splits, plan.keys, static_cast<float*>(workspace)};
        if (p.d <= 64) return launch_attention<64, 8, 1, Out, true>(q, k, v, bias, p, y, y_scale, stream, split);
        return launch_attention<128, 4, 1, Out, true>(q, k, v, bias, p, y, y_scale, stream, split);
    }
    // 16-row blocks for small batches (four times the blocks) were slower at BERT-base batch 1 and 8 (bench/NOTES.md)
    if (p.d <= 64) return launch_attention<64, 8, 2, Out>(q, k, v, bias, p, y, y_scale, stream);  // 49 KB smem
    return launch_attention<128, 4, 1, Out>(q, k, v, bias, p, y, y_scale, stream);  // 49 KB smem
}

}  // namespace
}  // namespace fp8ort

using namespace fp8ort;

extern "C" size_t fp8ort_attention_workspace_bytes(const fp8ort_attention_params* p) {
    if (!p || p->b < 0 || p->s < 0 || p->t < 0 || p->h < 1 || p->d < 0 || p->dv < 0 || p->d != p->dv) return 0;
#if defined(FP8ORT_CUDA)
    if (attention_tc_runs(*p)) return 0;  // the tensor-core kernel takes it (dispatch_head_size): it never splits
#endif
    return attention_split_plan(*p).bytes;
}

extern "C" fp8ort_status fp8ort_attention(const float* q, const float* k, const float* v, const float* attn_bias,
                                          const fp8ort_attention_params* p, void* y, fp8ort_dtype y_type,
                                          const float* y_scale, void* stream) {
    return fp8ort_attention_ws(q, k, v, attn_bias, p, y, y_type, y_scale, nullptr, 0, stream);
}

extern "C" fp8ort_status fp8ort_attention_ws(const float* q, const float* k, const float* v, const float* attn_bias,
                                             const fp8ort_attention_params* p, void* y, fp8ort_dtype y_type,
                                             const float* y_scale, void* workspace, size_t workspace_bytes,
                                             void* stream) {
    bool empty = false;
    FP8ORT_TRY(attention::check_args("fp8ort_attention", q, k, v, p, y, y_type, y_scale, &empty));
    if (empty) return ok();
    const hipStream_t s = as_stream(stream);
    void* ws = workspace;
    const size_t ws_bytes = workspace_bytes;
    fp8ort_status st;
    switch (y_type) {
        case FP8ORT_FLOAT:
            st = dispatch_head_size<StoreF32>(q, k, v, attn_bias, *p, y, nullptr, s, ws, ws_bytes);
            break;
        case FP8ORT_E4M3FN:
            st = dispatch_head_size<StoreFp8<FP8ORT_E4M3FN>>(q, k, v, attn_bias, *p, y, y_scale, s, ws, ws_bytes);
            break;
        case FP8ORT_E4M3FNUZ:
            st = dispatch_head_size<StoreFp8<FP8ORT_E4M3FNUZ>>(q, k, v, attn_bias, *p, y, y_scale, s, ws, ws_bytes);
            break;
        case FP8ORT_E5M2:
            st = dispatch_head_size<StoreFp8<FP8ORT_E5M2>>(q, k, v, attn_bias, *p, y, y_scale, s, ws, ws_bytes);
            break;
        case FP8ORT_E5M2FNUZ:
            st = dispatch_head_size<StoreFp8<FP8ORT_E5M2FNUZ>>(q, k, v, attn_bias, *p, y, y_scale, s, ws, ws_bytes);
            break;
        default:
            return fail(FP8ORT_INVALID_ARGUMENT, "fp8ort_attention: output type %s is not float32 or FP8",
                        dtype_name(y_type));
    }
    return st == FP8ORT_OK ? ok() : st;
}
