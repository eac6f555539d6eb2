// Reductions (ReduceSum/Mean/Max/Min, global pooling), Softmax/LogSoftmax, LayerNormalization and
// BatchNormalization (inference: one thread per element).
// A row of contiguous values is reduced by one block (warp shuffles, then shared memory); strided reductions
// ([outer, r, inner] with inner > 1, short rows) by one thread per output, adjacent threads on adjacent columns.
#include "fp8_numerics.h"
#include "onnx_nn_device.h"

#include <type_traits>

namespace fp8ort {
namespace {

using nn::kElementwiseThreads;

constexpr int kRowThreads = 256;       // block per row for rows of more than kShortRow values
constexpr int kSmallRowThreads = 64;   // block per row for rows of up to kShortRow values
constexpr int64_t kShortRow = 256;
constexpr int64_t kThreadPerRowMax = 32;  // reductions of at most this many values: one thread per output

__device__ __forceinline__ float reduce_init(fp8ort_nn_reduce_op op) {
    return op == FP8ORT_NN_REDUCE_MAX ? -INFINITY : (op == FP8ORT_NN_REDUCE_MIN ? INFINITY : 0.0f);
}

__device__ __forceinline__ float reduce_step(fp8ort_nn_reduce_op op, float acc, float v) {
    switch (op) {
        case FP8ORT_NN_REDUCE_MAX: return nn::max_nan(acc, v);
        case FP8ORT_NN_REDUCE_MIN: return nn::min_nan(acc, v);
        default: return acc + v;
    }
}

__device__ __forceinline__ float reduce_finish(fp8ort_nn_reduce_op op, float acc, int64_t count) {
    return op == FP8ORT_NN_REDUCE_MEAN ? acc / static_cast<float>(count) : acc;
}

// One block per row of [rows, reduce].
template <class T>
__global__ void reduce_rows_kernel(const T* __restrict__ x, T* __restrict__ y, fp8ort_nn_reduce_op op, int64_t rows,
                                   int64_t reduce) {
    __shared__ float smem[nn::kMaxBlockWarps];
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        const T* xr = x + row * reduce;
        float acc = reduce_init(op);
        for (int64_t j = threadIdx.x; j < reduce; j += blockDim.x) acc = reduce_step(op, acc, nn::load(xr, j));
        float r;
        if (op == FP8ORT_NN_REDUCE_MAX)
            r = nn::block_reduce(acc, nn::max_op{}, smem);
        else if (op == FP8ORT_NN_REDUCE_MIN)
            r = nn::block_reduce(acc, nn::min_op{}, smem);
        else
            r = nn::block_reduce(acc, nn::sum_op{}, smem);
        if (threadIdx.x == 0) nn::store(y, row, reduce_finish(op, r, reduce));
    }
}

// One thread per output of [outer, reduce, inner].
template <class T>
__global__ void __launch_bounds__(kElementwiseThreads)
    reduce_strided_kernel(const T* __restrict__ x, T* __restrict__ y, fp8ort_nn_reduce_op op, int64_t outer,
                          int64_t reduce, int64_t inner) {
    const int64_t count = outer * inner;
    const int64_t grid_stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += grid_stride) {
        const int64_t o = i / inner, in = i - o * inner;
        const T* xp = x + o * reduce * inner + in;
        float acc = reduce_init(op);
        for (int64_t r = 0; r < reduce; ++r) acc = reduce_step(op, acc, nn::load(xp, r * inner));
        nn::store(y, i, reduce_finish(op, acc, reduce));
    }
}

// Columns of [outer, reduce, inner] (NHWC pooling: reduce = H*W, inner = C): a block takes kColumnTile adjacent
// outputs (coalesced loads along inner) and kColumnRows thread rows split the reduced axis; the rows' partials meet in
// shared memory in a fixed order, so the result does not depend on timing.
constexpr int kColumnTile = 32;
constexpr int kColumnRows = 32;
constexpr int64_t kColumnMinReduce = 64;  // shorter reductions: one thread per output is as fast

template <class T>
__global__ void __launch_bounds__(kColumnTile* kColumnRows)
    reduce_columns_kernel(const T* __restrict__ x, T* __restrict__ y, fp8ort_nn_reduce_op op, int64_t outer,
                          int64_t reduce, int64_t inner) {
    __shared__ float part[kColumnRows][kColumnTile + 1];
    const int64_t tiles = (inner + kColumnTile - 1) / kColumnTile;
    const int tx = static_cast<int>(threadIdx.x), ty = static_cast<int>(threadIdx.y);
    for (int64_t b = blockIdx.x; b < outer * tiles; b += gridDim.x) {
        const int64_t o = b / tiles, col = (b - o * tiles) * kColumnTile + tx;
        float acc = reduce_init(op);
        if (col < inner) {
            const T* xp = x + o * reduce * inner + col;
            for (int64_t r = ty; r < reduce; r += kColumnRows) acc = reduce_step(op, acc, nn::load(xp, r * inner));
        }
        part[ty][tx] = acc;
        __syncthreads();
        if (ty == 0 && col < inner) {
            float r = part[0][tx];
            for (int k = 1; k < kColumnRows; ++k) r = reduce_step(op, r, part[k][tx]);
            nn::store(y, o * inner + col, reduce_finish(op, r, reduce));
        }
        __syncthreads();
    }
}

struct reduce_shape {
    int rank;
    int64_t dims[FP8ORT_NN_MAX_RANK];
    int reduced[FP8ORT_NN_MAX_RANK];
    int64_t strides[FP8ORT_NN_MAX_RANK];  // of X
};

// Any axes: one thread per output; the reduced coordinates are decoded per element.
template <class T>
__global__ void __launch_bounds__(kElementwiseThreads)
    reduce_axes_kernel(const T* __restrict__ x, T* __restrict__ y, fp8ort_nn_reduce_op op, reduce_shape s,
                       int64_t out_count, int64_t reduce_count) {
    const int64_t grid_stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < out_count; i += grid_stride) {
        int64_t base = 0, rest = i;
        for (int a = s.rank - 1; a >= 0; --a) {
            if (s.reduced[a]) continue;
            base += (rest % s.dims[a]) * s.strides[a];
            rest /= s.dims[a];
        }
        float acc = reduce_init(op);
        for (int64_t r = 0; r < reduce_count; ++r) {
            int64_t off = base, q = r;
            for (int a = s.rank - 1; a >= 0; --a) {
                if (!s.reduced[a]) continue;
                off += (q % s.dims[a]) * s.strides[a];
                q /= s.dims[a];
            }
            acc = reduce_step(op, acc, nn::load(x, off));
        }
        nn::store(y, i, reduce_finish(op, acc, reduce_count));
    }
}

template <class T>
fp8ort_status launch_reduce(const void* x, void* y, fp8ort_nn_reduce_op op, int64_t outer, int64_t reduce,
                            int64_t inner, hipStream_t stream) {
    const T* xt = static_cast<const T*>(x);
    T* yt = static_cast<T*>(y);
    if (inner == 1 && reduce > kThreadPerRowMax) {
        const int threads = reduce > kShortRow ? kRowThreads : kSmallRowThreads;
        reduce_rows_kernel<T><<<nn::clamp_grid(outer, nn::kMaxGridX), threads, 0, stream>>>(xt, yt, op, outer, reduce);
    } else if (inner > 1 && reduce >= kColumnMinReduce) {
        const int64_t blocks = outer * ((inner + kColumnTile - 1) / kColumnTile);
        reduce_columns_kernel<T><<<nn::clamp_grid(blocks, nn::kMaxGridX), dim3(kColumnTile, kColumnRows), 0, stream>>>(
            xt, yt, op, outer, reduce, inner);
    } else {
        reduce_strided_kernel<T><<<nn::elementwise_blocks(outer * inner), kElementwiseThreads, 0, stream>>>(
            xt, yt, op, outer, reduce, inner);
    }
    return check_launch("fp8ort_nn_reduce");
}

template <class T>
fp8ort_status launch_reduce_axes(const void* x, void* y, fp8ort_nn_reduce_op op, const reduce_shape& s,
                                 int64_t out_count, int64_t reduce_count, hipStream_t stream) {
    reduce_axes_kernel<T><<<nn::elementwise_blocks(out_count), kElementwiseThreads, 0, stream>>>(
        static_cast<const T*>(x), static_cast<T*>(y), op, s, out_count, reduce_count);
    return check_launch("fp8ort_nn_reduce_axes");
}

// ---- Softmax ----

// One block per row (inner == 1).
template <class T>
__global__ void softmax_rows_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t rows, int64_t d, int log) {
    __shared__ float smem[nn::kMaxBlockWarps];
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        const T* xr = x + row * d;
        T* yr = y + row * d;
        float m = -INFINITY;
        for (int64_t j = threadIdx.x; j < d; j += blockDim.x) m = nn::max_nan(m, nn::load(xr, j));
        m = nn::block_reduce(m, nn::max_op{}, smem);
        float s = 0.0f;
        for (int64_t j = threadIdx.x; j < d; j += blockDim.x) s += expf(nn::load(xr, j) - m);
        s = nn::block_reduce(s, nn::sum_op{}, smem);
        if (log) {
            const float shift = m + logf(s);
            for (int64_t j = threadIdx.x; j < d; j += blockDim.x) nn::store(yr, j, nn::load(xr, j) - shift);
        } else {
            const float inv = 1.0f / s;
            for (int64_t j = threadIdx.x; j < d; j += blockDim.x) nn::store(yr, j, expf(nn::load(xr, j) - m) * inv);
        }
    }
}

// One thread per (outer, inner) column of [outer, d, inner].
template <class T>
__global__ void __launch_bounds__(kElementwiseThreads)
    softmax_strided_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t outer, int64_t d, int64_t inner,
                           int log) {
    const int64_t count = outer * inner;
    const int64_t grid_stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += grid_stride) {
        const int64_t o = i / inner, in = i - o * inner;
        const int64_t base = o * d * inner + in;
        float m = -INFINITY;
        for (int64_t j = 0; j < d; ++j) m = nn::max_nan(m, nn::load(x, base + j * inner));
        float s = 0.0f;
        for (int64_t j = 0; j < d; ++j) s += expf(nn::load(x, base + j * inner) - m);
        if (log) {
            const float shift = m + logf(s);
            for (int64_t j = 0; j < d; ++j) nn::store(y, base + j * inner, nn::load(x, base + j * inner) - shift);
        } else {
            const float inv = 1.0f / s;
            for (int64_t j = 0; j < d; ++j)
                nn::store(y, base + j * inner, expf(nn::load(x, base + j * inner) - m) * inv);
        }
    }
}

template <class T>
fp8ort_status launch_softmax(const void* x, void* y, int64_t outer, int64_t d, int64_t inner, int log,
                             hipStream_t stream) {
    const T* xt = static_cast<const T*>(x);
    T* yt = static_cast<T*>(y);
    if (inner == 1) {
        const int threads = d > kShortRow ? kRowThreads : kSmallRowThreads;
        softmax_rows_kernel<T><<<nn::clamp_grid(outer, nn::kMaxGridX), threads, 0, stream>>>(xt, yt, outer, d, log);
    } else {
        softmax_strided_kernel<T><<<nn::elementwise_blocks(outer * inner), kElementwiseThreads, 0, stream>>>(
            xt, yt, outer, d, inner, log);
    }
    return check_launch("fp8ort_nn_softmax");
}

// ---- LayerNormalization: one block per row, mean then variance then the output (the row stays in cache) ----

// The optional FP8 copy of Y (FP8LayerNormalization): none, or q(Y as written, *y_scale) into format F.
struct NoFp8Copy {
    static constexpr bool kOn = false;
};
template <fp8ort_fp8_format F>
struct Fp8Copy {
    static constexpr bool kOn = true;
    __device__ __forceinline__ static uint8_t code(float v, const fp8_divisor& d) { return quantize_fp8<F>(v, d, true); }
};

template <class T, class Q>
__global__ void layer_norm_kernel(const T* __restrict__ x, const T* __restrict__ scale, const T* __restrict__ bias,
                                  T* __restrict__ y, float* __restrict__ mean_out, float* __restrict__ inv_std_out,
                                  int64_t rows, int64_t cols, float epsilon, uint8_t* __restrict__ yq,
                                  const float* __restrict__ q_scale) {
    __shared__ float smem[nn::kMaxBlockWarps];
    const float inv_cols = 1.0f / static_cast<float>(cols);
    const fp8_divisor qd = make_fp8_divisor(Q::kOn ? *q_scale : 1.0f);
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        const T* xr = x + row * cols;
        T* yr = y + row * cols;
        float s = 0.0f;
        for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) s += nn::load(xr, j);
        const float mean = nn::block_reduce(s, nn::sum_op{}, smem) * inv_cols;
        float v = 0.0f;
        for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
            const float dlt = nn::load(xr, j) - mean;
            v += dlt * dlt;
        }
        const float var = nn::block_reduce(v, nn::sum_op{}, smem) * inv_cols;
        const float inv_std = 1.0f / sqrtf(var + epsilon);
        for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
            float o = (nn::load(xr, j) - mean) * inv_std * nn::load(scale, j);
            if (bias) o += nn::load(bias, j);
            nn::store(yr, j, o);
            if constexpr (Q::kOn) yq[row * cols + j] = Q::code(nn::load(yr, j), qd);  // the Y just written
        }
        if (threadIdx.x == 0) {
            if (mean_out) mean_out[row] = mean;
            if (inv_std_out) inv_std_out[row] = inv_std;
        }
    }
}

// float32 rows of up to kWarpRowQuads * 128 values with cols % 4 == 0 (BERT's 768): one logical warp of 32 lanes
// per row, the row in registers as float4s (one read of X instead of three), shuffle reductions only; the same
// two passes (mean, then the mean of squared deviations) as layer_norm_kernel.
constexpr int kWarpRowQuads = 8;  // float4s per lane: rows of up to 1,024 values
constexpr int kWarpRowThreads = 256;

// The sum over a group of 32 lanes (xor masks below 32 stay inside the group on wave64 GPUs too).
__device__ __forceinline__ float row_sum32(float v) {
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) v += nn::shfl_xor(v, off);
    return v;
}

template <class Q>
__global__ void __launch_bounds__(kWarpRowThreads)
    layer_norm_rows_kernel(const float* __restrict__ x, const float* __restrict__ scale, const float* __restrict__ bias,
                           float* __restrict__ y, float* __restrict__ mean_out, float* __restrict__ inv_std_out,
                           int64_t rows, int64_t cols, float epsilon, uint8_t* __restrict__ yq,
                           const float* __restrict__ q_scale) {
    const fp8_divisor qd = make_fp8_divisor(Q::kOn ? *q_scale : 1.0f);
    const int lane = static_cast<int>(threadIdx.x) % 32;
    const int64_t rows_per_block = kWarpRowThreads / 32;
    const int quads = static_cast<int>(cols / 4);
    const float inv_cols = 1.0f / static_cast<float>(cols);
    for (int64_t row = blockIdx.x * rows_per_block + threadIdx.x / 32; row < rows; row += gridDim.x * rows_per_block) {
        const float4* xr = reinterpret_cast<const float4*>(x + row * cols);
        float4 v[kWarpRowQuads];
        float s = 0.0f;
#pragma unroll
        for (int i = 0; i < kWarpRowQuads; ++i) {
            const int qi = lane + 32 * i;
            v[i] = qi < quads ? xr[qi] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            s += (v[i].x + v[i].y) + (v[i].z + v[i].w);
        }
        const float mean = row_sum32(s) * inv_cols;
        float d2 = 0.0f;
#pragma unroll
        for (int i = 0; i < kWarpRowQuads; ++i) {
            if (lane + 32 * i >= quads) continue;
            const float a = v[i].x - mean, b = v[i].y - mean, c = v[i].z - mean, d = v[i].w - mean;
            d2 += (a * a + b * b) + (c * c + d * d);
        }
        const float var = row_sum32(d2) * inv_cols;
        const float inv_std = 1.0f / sqrtf(var + epsilon);
        float4* yr = reinterpret_cast<float4*>(y + row * cols);
        const float4* g = reinterpret_cast<const float4*>(scale);
        const float4* bb = reinterpret_cast<const float4*>(bias);
#pragma unroll
        for (int i = 0; i < kWarpRowQuads; ++i) {
            const int qi = lane + 32 * i;
            if (qi >= quads) continue;
            const float4 gs = g[qi];
            float4 o = make_float4((v[i].x - mean) * inv_std * gs.x, (v[i].y - mean) * inv_std * gs.y,
                                   (v[i].z - mean) * inv_std * gs.z, (v[i].w - mean) * inv_std * gs.w);
            if (bias) {
                const float4 bs = bb[qi];
                o.x += bs.x, o.y += bs.y, o.z += bs.z, o.w += bs.w;
            }
            yr[qi] = o;
            if constexpr (Q::kOn) {  // four codes in one 4-byte store (cols % 4 == 0, yq 4-byte aligned)
                const uint32_t w = uint32_t{Q::code(o.x, qd)} | (uint32_t{Q::code(o.y, qd)} << 8) |
                                   (uint32_t{Q::code(o.z, qd)} << 16) | (uint32_t{Q::code(o.w, qd)} << 24);
                reinterpret_cast<uint32_t*>(yq + row * cols)[qi] = w;
            }
        }
        if (lane == 0) {
            if (mean_out) mean_out[row] = mean;
            if (inv_std_out) inv_std_out[row] = inv_std;
        }
    }
}

template <class T, class Q = NoFp8Copy>
fp8ort_status launch_layer_norm(const void* x, const void* scale, const void* bias, void* y, float* mean,
                                float* inv_std, int64_t rows, int64_t cols, float epsilon, hipStream_t stream,
                                void* yq = nullptr, const float* q_scale = nullptr) {
    uint8_t* q = static_cast<uint8_t*>(yq);
    if constexpr (std::is_same_v<T, float>) {
        const auto aligned = [](const void* ptr, uintptr_t a) { return reinterpret_cast<uintptr_t>(ptr) % a == 0; };
        if (cols % 4 == 0 && cols >= 128 && cols <= kWarpRowQuads * 128 && aligned(x, 16) && aligned(y, 16) &&
            aligned(scale, 16) && (!bias || aligned(bias, 16)) && (!Q::kOn || aligned(q, 4))) {
            const int64_t blocks = (rows + kWarpRowThreads / 32 - 1) / (kWarpRowThreads / 32);
            layer_norm_rows_kernel<Q><<<nn::clamp_grid(blocks, nn::kMaxGridX), kWarpRowThreads, 0, stream>>>(
                static_cast<const float*>(x), static_cast<const float*>(scale), static_cast<const float*>(bias),
                static_cast<float*>(y), mean, inv_std, rows, cols, epsilon, q, q_scale);
            return check_launch("fp8ort_nn_layer_norm");
        }
    }
    const int threads = cols > kShortRow ? kRowThreads : kSmallRowThreads;
    layer_norm_kernel<T, Q><<<nn::clamp_grid(rows, nn::kMaxGridX), threads, 0, stream>>>(
        static_cast<const T*>(x), static_cast<const T*>(scale), static_cast<const T*>(bias), static_cast<T*>(y), mean,
        inv_std, rows, cols, epsilon, q, q_scale);
    return check_launch("fp8ort_nn_layer_norm");
}

template <class T>
fp8ort_status launch_layer_norm_fp8(const void* x, const void* scale, const void* bias, void* y, void* yq,
                                    fp8ort_dtype q_type, const float* q_scale, int64_t rows, int64_t cols,
                                    float epsilon, hipStream_t s) {
    switch (q_type) {
        case FP8ORT_E4M3FN:
            return launch_layer_norm<T, Fp8Copy<FP8ORT_E4M3FN>>(x, scale, bias, y, nullptr, nullptr, rows, cols, epsilon, s, yq, q_scale);
        case FP8ORT_E4M3FNUZ:
            return launch_layer_norm<T, Fp8Copy<FP8ORT_E4M3FNUZ>>(x, scale, bias, y, nullptr, nullptr, rows, cols, epsilon, s, yq, q_scale);
        case FP8ORT_E5M2:
            return launch_layer_norm<T, Fp8Copy<FP8ORT_E5M2>>(x, scale, bias, y, nullptr, nullptr, rows, cols, epsilon, s, yq, q_scale);
        default:
            return launch_layer_norm<T, Fp8Copy<FP8ORT_E5M2FNUZ>>(x, scale, bias, y, nullptr, nullptr, rows, cols, epsilon, s, yq, q_scale);
    }
}

// BatchNormalization (inference): T is X's and Y's storage, P scale's and bias's, S mean's and var's.
template <class T, class P, class S>
__global__ void __launch_bounds__(kElementwiseThreads)
    batch_norm_kernel(const T* __restrict__ x, const P* __restrict__ scale, const P* __restrict__ bias,
                      const S* __restrict__ mean, const S* __restrict__ var, T* __restrict__ y, int64_t count,
                      int64_t channels, int64_t inner, float epsilon) {
    const int64_t grid_stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += grid_stride) {
        const int64_t c = (i / inner) % channels;
        const float mul = nn::load(scale, c) / sqrtf(nn::load(var, c) + epsilon);
        nn::store(y, i, (nn::load(x, i) - nn::load(mean, c)) * mul + nn::load(bias, c));
    }
}

template <class T, class P, class S>
fp8ort_status launch_batch_norm(const void* x, const void* scale, const void* bias, const void* mean, const void* var,
                                void* y, int64_t count, int64_t channels, int64_t inner, float epsilon, hipStream_t s) {
    batch_norm_kernel<T, P, S><<<nn::elementwise_blocks(count), kElementwiseThreads, 0, s>>>(
        static_cast<const T*>(x), static_cast<const P*>(scale), static_cast<const P*>(bias), static_cast<const S*>(mean),
        static_cast<const S*>(var), static_cast<T*>(y), count, channels, inner, epsilon);
    return check_launch("fp8ort_nn_batch_norm");
}

template <class T, class P>
fp8ort_status batch_norm_for_stats(fp8ort_dtype stat_type, const void* x, const void* scale, const void* bias,
                                   const void* mean, const void* var, void* y, int64_t count, int64_t channels,
                                   int64_t inner, float epsilon, hipStream_t s) {
    return stat_type == FP8ORT_FLOAT
               ? launch_batch_norm<T, P, float>(x, scale, bias, mean, var, y, count, channels, inner, epsilon, s)
               : launch_batch_norm<T, P, uint16_t>(x, scale, bias, mean, var, y, count, channels, inner, epsilon, s);
}

template <class T>
fp8ort_status batch_norm_for_params(fp8ort_dtype param_type, fp8ort_dtype stat_type, const void* x, const void* scale,
                                    const void* bias, const void* mean, const void* var, void* y, int64_t count,
                                    int64_t channels, int64_t inner, float epsilon, hipStream_t s) {
    return param_type == FP8ORT_FLOAT
               ? batch_norm_for_stats<T, float>(stat_type, x, scale, bias, mean, var, y, count, channels, inner, epsilon, s)
               : batch_norm_for_stats<T, uint16_t>(stat_type, x, scale, bias, mean, var, y, count, channels, inner,
                                                   epsilon, s);
}

bool valid_op(fp8ort_nn_reduce_op op) { return op >= FP8ORT_NN_REDUCE_SUM && op <= FP8ORT_NN_REDUCE_MIN; }

}  // namespace
}  // namespace fp8ort

using namespace fp8ort;

extern "C" fp8ort_status fp8ort_nn_reduce(const void* x, void* y, fp8ort_dtype type, fp8ort_nn_reduce_op op,
                                          int64_t outer, int64_t reduce, int64_t inner, void* stream) {
    const char* me = "fp8ort_nn_reduce";
    if (!nn::is_nn_type(type)) return fail(FP8ORT_INVALID_ARGUMENT, "%s: type %s is not float32/float16", me, dtype_name(type));
    if (!valid_op(op)) return fail(FP8ORT_INVALID_ARGUMENT, "%s: unknown reduction %d", me, static_cast<int>(op));
    if (outer < 0 || reduce < 0 || inner < 0) return fail(FP8ORT_INVALID_ARGUMENT, "%s: negative size", me);
    if (outer == 0 || inner == 0) return ok();
    if (!y || (reduce > 0 && !x)) return fail(FP8ORT_INVALID_ARGUMENT, "%s: x and y must be device pointers, got NULL", me);
    FP8ORT_TRY(FP8ORT_NN_DISPATCH(type, launch_reduce, x, y, op, outer, reduce, inner, as_stream(stream)));
    return ok();
}

extern "C" fp8ort_status fp8ort_nn_reduce_axes(const void* x, void* y, fp8ort_dtype type, fp8ort_nn_reduce_op op,
                                               int rank, const int64_t* dims, const int* reduced, void* stream) {
    const char* me = "fp8ort_nn_reduce_axes";
    if (!nn::is_nn_type(type)) return fail(FP8ORT_INVALID_ARGUMENT, "%s: type %s is not float32/float16", me, dtype_name(type));
    if (!valid_op(op)) return fail(FP8ORT_INVALID_ARGUMENT, "%s: unknown reduction %d", me, static_cast<int>(op));
    if (rank < 0 || rank > FP8ORT_NN_MAX_RANK || (rank > 0 && (!dims || !reduced)))
        return fail(FP8ORT_INVALID_ARGUMENT, "%s: rank %d is not in [0, %d] or dims are NULL", me, rank, FP8ORT_NN_MAX_RANK);
    reduce_shape s{};
    s.rank = rank;
    int64_t out_count = 1, reduce_count = 1, stride = 1;
    for (int a = rank - 1; a >= 0; --a) {
        if (dims[a] < 0) return fail(FP8ORT_INVALID_ARGUMENT, "%s: negative dimension", me);
        s.dims[a] = dims[a];
        s.reduced[a] = reduced[a] != 0;
        s.strides[a] = stride;
        stride *= dims[a];
        (s.reduced[a] ? reduce_count : out_count) *= dims[a];
    }
    if (out_count == 0) return ok();
    if (!y || (reduce_count > 0 && !x)) return fail(FP8ORT_INVALID_ARGUMENT, "%s: x and y must be device pointers, got NULL", me);
    FP8ORT_TRY(FP8ORT_NN_DISPATCH(type, launch_reduce_axes, x, y, op, s, out_count, reduce_count, as_stream(stream)));
    return ok();
}

extern "C" fp8ort_status fp8ort_nn_softmax(const void* x, void* y, fp8ort_dtype type, int64_t outer, int64_t axis_dim,
                                           int64_t inner, int log, void* stream) {
    const char* me = "fp8ort_nn_softmax";
    if (!nn::is_nn_type(type)) return fail(FP8ORT_INVALID_ARGUMENT, "%s: type %s is not float32/float16", me, dtype_name(type));
    if (outer < 0 || axis_dim < 0 || inner < 0) return fail(FP8ORT_INVALID_ARGUMENT, "%s: negative size", me);
    if (outer == 0 || axis_dim == 0 || inner == 0) return ok();
    if (!x || !y) return fail(FP8ORT_INVALID_ARGUMENT, "%s: x and y must be device pointers, got NULL", me);
    FP8ORT_TRY(FP8ORT_NN_DISPATCH(type, launch_softmax, x, y, outer, axis_dim, inner, log, as_stream(stream)));
    return ok();
}

extern "C" fp8ort_status fp8ort_nn_layer_norm(const void* x, const void* scale, const void* bias, void* y, float* mean,
                                              float* inv_std, fp8ort_dtype type, int64_t rows, int64_t cols,
                                              float epsilon, void* stream) {
    const char* me = "fp8ort_nn_layer_norm";
    if (!nn::is_nn_type(type)) return fail(FP8ORT_INVALID_ARGUMENT, "%s: type %s is not float32/float16", me, dtype_name(type));
    if (rows < 0 || cols < 0) return fail(FP8ORT_INVALID_ARGUMENT, "%s: negative size", me);
    if (rows == 0) return ok();
    if (cols == 0) return fail(FP8ORT_INVALID_ARGUMENT, "%s: the normalized axes hold no values", me);
    if (!x || !y || !scale) return fail(FP8ORT_INVALID_ARGUMENT, "%s: x, scale and y must be device pointers, got NULL", me);
    FP8ORT_TRY(FP8ORT_NN_DISPATCH(type, launch_layer_norm, x, scale, bias, y, mean, inv_std, rows, cols, epsilon,
                                  as_stream(stream)));
    return ok();
}

extern "C" fp8ort_status fp8ort_nn_layer_norm_fp8(const void* x, const void* scale, const void* bias, void* y, void* y_fp8,
                                                  fp8ort_dtype type, fp8ort_dtype q_type, const float* q_scale,
                                                  int64_t rows, int64_t cols, float epsilon, void* stream) {
    const char* me = "fp8ort_nn_layer_norm_fp8";
    if (!nn::is_nn_type(type)) return fail(FP8ORT_INVALID_ARGUMENT, "%s: type %s is not float32/float16", me, dtype_name(type));
    if (!is_fp8_type(q_type)) return fail(FP8ORT_INVALID_ARGUMENT, "%s: Y_fp8 type %s is not FP8", me, dtype_name(q_type));
    if (rows < 0 || cols < 0) return fail(FP8ORT_INVALID_ARGUMENT, "%s: negative size", me);
    if (rows == 0) return ok();
    if (cols == 0) return fail(FP8ORT_INVALID_ARGUMENT, "%s: the normalized axes hold no values", me);
    if (!x || !y || !scale || !y_fp8 || !q_scale)
        return fail(FP8ORT_INVALID_ARGUMENT, "%s: x, scale, y, y_fp8 and y_scale must be device pointers, got NULL", me);
    FP8ORT_TRY(FP8ORT_NN_DISPATCH(type, launch_layer_norm_fp8, x, scale, bias, y, y_fp8, q_type, q_scale, rows, cols,
                                  epsilon, as_stream(stream)));
    return ok();
}

extern "C" fp8ort_status fp8ort_nn_batch_norm(const void* x, const void* scale, const void* bias, const void* mean,
                                              const void* var, void* y, fp8ort_dtype type, fp8ort_dtype param_type,
                                              fp8ort_dtype stat_type, int64_t n, int64_t channels, int64_t inner,
                                              float epsilon, void* stream) {
    const char* me = "fp8ort_nn_batch_norm";
    if (!nn::is_nn_type(type) || !nn::is_nn_type(param_type) || !nn::is_nn_type(stat_type))
        return fail(FP8ORT_INVALID_ARGUMENT, "%s: types %s, %s, %s are not float32/float16", me, dtype_name(type),
                    dtype_name(param_type), dtype_name(stat_type));
    if (n < 0 || channels < 0 || inner < 0) return fail(FP8ORT_INVALID_ARGUMENT, "%s: negative size", me);
    if (n == 0 || channels == 0 || inner == 0) return ok();
    if (n > INT64_MAX / channels || n * channels > INT64_MAX / inner)
        return fail(FP8ORT_INVALID_ARGUMENT, "%s: more than 2^63 elements", me);
    if (!x || !y || !scale || !bias || !mean || !var)
        return fail(FP8ORT_INVALID_ARGUMENT, "%s: x, scale, bias, mean, var and y must be device pointers, got NULL", me);
    const int64_t count = n * channels * inner;
    FP8ORT_TRY(FP8ORT_NN_DISPATCH(type, batch_norm_for_params, param_type, stat_type, x, scale, bias, mean, var, y, count,
                                  channels, inner, epsilon, as_stream(stream)));
    return ok();
}
