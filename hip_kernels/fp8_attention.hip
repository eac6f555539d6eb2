// FP8Attention on the GPU: multi-head attention over [B, S, H*D] projections in one pass (docs/operators.md).
// One block per (64, 32 or 16 query rows, head, batch); key/value tiles stream through shared memory and the softmax is
// kept online (running maximum and sum per row), so the [S, T] scores never reach memory and no head transposes are
// needed. float32 arithmetic on the vector units (no tensor cores): the same rounding class as the unfused float32
// graph it replaces. Logical warps of 32 lanes (two per wavefront on wave64 AMD GPUs; xor shuffles below 32).
//
// Per tile each lane scores KPL keys for the 8 rows of its warp (Q rows broadcast from shared memory as float4, K
// transposed into rows of kBk + 1 floats so that the transposing stores and the lane-wise reads are free of bank
// conflicts), updates the 8 running maxima, writes exp(s - m) to shared memory in place of K^T and accumulates P @ V
// for DMAX / 32 output columns per lane. Tiles are loaded 16 bytes per thread where D % 4 == 0.
#include <math.h>

#include "fp8_numerics.h"
#include "fp8_status.h"
#include "onnx_nn_device.h"  // nn::shfl_xor: xor masks below 32 stay inside a logical warp on wave64 too

namespace fp8ort {
namespace {

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

// Y row store: float32 or q(y, y_scale) into FP8 format F.
struct StoreF32 {
    __device__ __forceinline__ static void put(void* y, int64_t i, float v, const fp8_divisor&) {
        static_cast<float*>(y)[i] = v;
    }
};
template <fp8ort_fp8_format F>
struct StoreFp8 {
    __device__ __forceinline__ static void put(void* y, int64_t i, float v, const fp8_divisor& d) {
        static_cast<uint8_t*>(y)[i] = quantize_fp8<F>(v, d, true);
    }
};

template <int DMAX, int WARPS, int KPL, class Out>
__global__ void __launch_bounds__(WARPS * kLanes) attention_kernel(const float* __restrict__ q,
                                                                   const float* __restrict__ k,
                                                                   const float* __restrict__ v,
                                                                   const float* __restrict__ bias,
                                                                   fp8ort_attention_params p, void* __restrict__ y,
                                                                   const float* __restrict__ y_scale) {
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
    const int64_t b = blockIdx.z, h = blockIdx.y, i0 = static_cast<int64_t>(blockIdx.x) * kBq;
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

    for (int64_t j0 = 0; j0 < p.t; j0 += kBk) {
        __syncthreads();  // the previous tile's readers are done (and the Q tile is written)
        for (int j = r_first; j < kBk; j += kRowsPerPass) {
            const float4 kq = load_quad(kb, p.k_row, j0 + j, p.t, cq, d, vec_qk);
            kt[(cq + 0) * kKt + j] = kq.x;
            kt[(cq + 1) * kKt + j] = kq.y;
            kt[(cq + 2) * kKt + j] = kq.z;
            kt[(cq + 3) * kKt + j] = kq.w;
            *reinterpret_cast<float4*>(&vs[j * DMAX + cq]) = load_quad(vb, p.v_row, j0 + j, p.t, cq, dv, vec_v);
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
                if (jj < p.t) {
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
        // No keys (T = 0): zeros, as the unfused MatMul over an empty axis gives.
        const bool empty = p.t == 0;
        const bool nan_row = !empty && (flag > 0.0f || m[r] == -INFINITY);
        const float inv = empty ? 0.0f : 1.0f / total;
        const int64_t y0 = (b * p.s + i) * y_row + h * p.dv;
#pragma unroll
        for (int c = 0; c < kCols; ++c) {
            const int col = lane + kLanes * c;
            if (col >= dv) continue;
            const float val = nan_row ? (p.nan_to_zero ? 0.0f : NAN) : o[r][c] * inv;
            Out::put(y, y0 + col, val, ys);
        }
    }
}

template <int DMAX, int WARPS, int KPL, class Out>
fp8ort_status launch_attention(const float* q, const float* k, const float* v, const float* bias,
                               const fp8ort_attention_params& p, void* y, const float* y_scale, hipStream_t stream) {
    using Tile = AttentionTile<DMAX, WARPS, KPL>;
    auto kernel = attention_kernel<DMAX, WARPS, KPL, Out>;
    static const hipError_t attr =
        hipFuncSetAttribute(reinterpret_cast<const void*>(kernel), hipFuncAttributeMaxDynamicSharedMemorySize,
                            static_cast<int>(Tile::kSmemBytes));
    if (attr != hipSuccess) {
        return fail(FP8ORT_UNSUPPORTED, "fp8ort_attention: the kernel for head size <= %d needs %zu bytes of shared "
                    "memory per block, which this GPU does not give (%s)", DMAX, Tile::kSmemBytes,
                    hipGetErrorString(attr));
    }
    const dim3 grid(static_cast<unsigned>((p.s + Tile::kBq - 1) / Tile::kBq), static_cast<unsigned>(p.h),
                    static_cast<unsigned>(p.b));
    kernel<<<grid, Tile::kThreads, Tile::kSmemBytes, stream>>>(q, k, v, bias, p, y, y_scale);
    return check_launch("fp8ort_attention");
}

template <class Out>
fp8ort_status dispatch_head_size(const float* q, const float* k, const float* v, const float* bias,
                                 const fp8ort_attention_params& p, void* y, const float* y_scale, hipStream_t stream) {
    // 16-row blocks for small batches (four times the blocks) were slower at BERT-base batch 1 and 8 (bench/NOTES.md)
    if (p.d <= 64) return launch_attention<64, 8, 2, Out>(q, k, v, bias, p, y, y_scale, stream);  // 49 KB smem
    return launch_attention<128, 4, 1, Out>(q, k, v, bias, p, y, y_scale, stream);  // 49 KB smem
}

}  // namespace
}  // namespace fp8ort

using namespace fp8ort;

extern "C" fp8ort_status fp8ort_attention(const float* q, const float* k, const float* v, const float* attn_bias,
                                          const fp8ort_attention_params* p, void* y, fp8ort_dtype y_type,
                                          const float* y_scale, void* stream) {
    const char* me = "fp8ort_attention";
    if (!p) return fail(FP8ORT_INVALID_ARGUMENT, "%s: parameters are NULL", me);
    if (p->b < 0 || p->s < 0 || p->t < 0 || p->h < 1 || p->d < 0 || p->dv < 0)
        return fail(FP8ORT_INVALID_ARGUMENT, "%s: negative size or no head", me);
    if (p->d > 128 || p->dv > 128 || p->d != p->dv)
        return fail(FP8ORT_UNSUPPORTED, "%s: head sizes D=%lld, Dv=%lld; the GPU kernel takes D = Dv <= 128", me,
                    static_cast<long long>(p->d), static_cast<long long>(p->dv));
    if (p->h > 65535 || p->b > 65535 || p->s > (int64_t{1} << 35))
        return fail(FP8ORT_UNSUPPORTED, "%s: %lld heads, batch %lld or sequence %lld is past the grid's limits "
                    "(65535 heads, 65535 batch)", me, static_cast<long long>(p->h), static_cast<long long>(p->b),
                    static_cast<long long>(p->s));
    if (p->q_row < p->h * p->d || p->k_row < p->h * p->d || p->v_row < p->h * p->dv)
        return fail(FP8ORT_INVALID_ARGUMENT, "%s: row strides %lld, %lld, %lld are shorter than the rows of Q, K, V", me,
                    static_cast<long long>(p->q_row), static_cast<long long>(p->k_row),
                    static_cast<long long>(p->v_row));
    if (p->b * p->s * p->h * p->dv == 0) return ok();
    if (!q || !y || (p->t > 0 && (!k || !v)))  // no keys (T = 0): K and V are empty and may be NULL
        return fail(FP8ORT_INVALID_ARGUMENT, "%s: tensors must be device pointers, got NULL", me);
    if (is_fp8_type(y_type) && !y_scale) return fail(FP8ORT_INVALID_ARGUMENT, "%s: an FP8 output needs y_scale", me);
    const hipStream_t s = as_stream(stream);
    fp8ort_status st;
    switch (y_type) {
        case FP8ORT_FLOAT: st = dispatch_head_size<StoreF32>(q, k, v, attn_bias, *p, y, nullptr, s); break;
        case FP8ORT_E4M3FN: st = dispatch_head_size<StoreFp8<FP8ORT_E4M3FN>>(q, k, v, attn_bias, *p, y, y_scale, s); break;
        case FP8ORT_E4M3FNUZ:
            st = dispatch_head_size<StoreFp8<FP8ORT_E4M3FNUZ>>(q, k, v, attn_bias, *p, y, y_scale, s);
            break;
        case FP8ORT_E5M2: st = dispatch_head_size<StoreFp8<FP8ORT_E5M2>>(q, k, v, attn_bias, *p, y, y_scale, s); break;
        case FP8ORT_E5M2FNUZ:
            st = dispatch_head_size<StoreFp8<FP8ORT_E5M2FNUZ>>(q, k, v, attn_bias, *p, y, y_scale, s);
            break;
        default: return fail(FP8ORT_INVALID_ARGUMENT, "%s: output type %s is not float32 or FP8", me, dtype_name(y_type));
    }
    return st == FP8ORT_OK ? ok() : st;
}
