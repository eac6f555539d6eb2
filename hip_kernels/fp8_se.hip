// FP8GlobalAveragePool and FP8ChannelMul (docs/operators.md): the squeeze and the excitation of
// squeeze-excitation, and the pooling before a classifier, on FP8 activations. Both are bound by memory: FP8 bytes
// are read 4 or 16 at a time and decoded through a 256-entry table in shared memory (one kernel serves every input
// format); the gate is read per image and channel from L2.
#include <algorithm>
#include <type_traits>
#include <utility>

#include "fp8_epilogue.h"  // quantize4: the hardware conversion where it gives the exact codes
#include "fp8_numerics.h"
#include "fp8_status.h"

namespace fp8ort {
namespace {

constexpr int kThreads = 256;  // also the decode table's size: thread t decodes byte t

__device__ __forceinline__ void fill_table(float* table, fp8ort_dtype t) {
    table[threadIdx.x] = decode_any(static_cast<uint8_t>(threadIdx.x), t);  // fp8_epilogue.h
    __syncthreads();
}

// Loads V consecutive bytes (V = 1, 4 or 16; the address aligned to V).
template <int V>
struct alignas(V) Bytes {
    uint8_t b[V];
};
template <int V>
__device__ __forceinline__ Bytes<V> load_bytes(const uint8_t* p) {
    Bytes<V> r;
    if constexpr (V == 16) {
        *reinterpret_cast<uint4*>(r.b) = *reinterpret_cast<const uint4*>(p);
    } else if constexpr (V == 4) {
        *reinterpret_cast<uint32_t*>(r.b) = *reinterpret_cast<const uint32_t*>(p);
    } else {
        r.b[0] = *p;
    }
    return r;
}

// ---- FP8GlobalAveragePool, NHWC: a block per (image, groups * V channels, slice of the H x W positions); groups
// channel groups of V bytes times kThreads / groups pixel lanes. With one slice the block writes the mean; with
// several it writes its partial sum to partial[slice][image][channel] for gap_finish_kernel.
struct GapPlan {
    int v = 1, groups = 1, lanes = kThreads;
    int64_t chunks = 1, slices = 1;
};

// The same plan on the host (workspace size, launch) and in the kernels' arguments.
GapPlan gap_plan(int64_t n, int64_t hw, int64_t c, bool vec16, bool vec4) {
    GapPlan p;
    p.v = vec16 ? 16 : (vec4 ? 4 : 1);
    while (p.groups < 64 && p.groups * p.v < c) p.groups *= 2;
    p.lanes = kThreads / p.groups;
    p.chunks = (c + p.groups * p.v - 1) / (p.groups * p.v);
    constexpr int64_t kTargetBlocks = 1024;  // a few waves over ~132 multiprocessors
    constexpr int64_t kMinRowsPerLane = 4;  // below this a slice is mostly launch and reduction overhead
    const int64_t blocks = std::max<int64_t>(1, n * p.chunks);
    const int64_t by_work = std::max<int64_t>(1, hw / (static_cast<int64_t>(p.lanes) * kMinRowsPerLane));
    p.slices = std::min<int64_t>(std::min<int64_t>((kTargetBlocks + blocks - 1) / blocks, by_work), 65535);
    return p;
}

template <int V>
__global__ void __launch_bounds__(kThreads) gap_nhwc_kernel(const uint8_t* __restrict__ x, fp8ort_dtype type,
                                                            const float* __restrict__ x_scale, float* __restrict__ y,
                                                            float* __restrict__ partial_out, int64_t n_images,
                                                            int64_t hw, int64_t c, int groups) {
    __shared__ float table[256];
    __shared__ float partial[kThreads * V];
    fill_table(table, type);
    fp8ort_pdl_wait();  // launched with pdl: the kernel that wrote X may still run (the table is shared memory only)
    fp8ort_pdl_release();
    const int lanes = kThreads / groups;
    const int g = static_cast<int>(threadIdx.x) % groups, lane = static_cast<int>(threadIdx.x) / groups;
    const int64_t n = blockIdx.x;
    const int64_t c0 = (static_cast<int64_t>(blockIdx.y) * groups + g) * V;
    const int64_t slices = gridDim.z, per_slice = (hw + slices - 1) / slices;
    const int64_t p0 = blockIdx.z * per_slice, p1 = p0 + per_slice < hw ? p0 + per_slice : hw;
    float acc[V];
#pragma unroll
    for (int e = 0; e < V; ++e) acc[e] = 0.0f;
    if (c0 < c) {
        const uint8_t* xn = x + n * hw * c + c0;
        constexpr int kUnroll = 4;  // independent loads in flight per lane
        int64_t p = p0 + lane;
        for (; p + (kUnroll - 1) * lanes < p1; p += kUnroll * lanes) {
            Bytes<V> v[kUnroll];
#pragma unroll
            for (int u = 0; u < kUnroll; ++u) v[u] = load_bytes<V>(xn + (p + u * lanes) * c);
#pragma unroll
            for (int u = 0; u < kUnroll; ++u) {
#pragma unroll
                for (int e = 0; e < V; ++e) acc[e] += table[v[u].b[e]];
            }
        }
        for (; p < p1; p += lanes) {
            const Bytes<V> v = load_bytes<V>(xn + p * c);
#pragma unroll
            for (int e = 0; e < V; ++e) acc[e] += table[v.b[e]];
        }
    }
#pragma unroll
    for (int e = 0; e < V; ++e) partial[(lane * groups + g) * V + e] = acc[e];
    __syncthreads();
    // Channel t of the block (groups * V of them, up to 1,024: more than the threads) summed over the lanes, in
    // lane order.
    for (int t = static_cast<int>(threadIdx.x); t < groups * V; t += kThreads) {
        const int gi = t / V, e = t % V;
        const int64_t ch = (static_cast<int64_t>(blockIdx.y) * groups + gi) * V + e;
        if (ch < c) {
            float s = 0.0f;
            for (int l = 0; l < lanes; ++l) s += partial[(l * groups + gi) * V + e];
            if (slices > 1) {
                partial_out[(blockIdx.z * n_images + n) * c + ch] = s;
            } else {
                const float mean = fp8ort_div_rn(s, static_cast<float>(hw));  // hw = 0: 0 / 0 = NaN
                y[n * c + ch] = fp8ort_mul_rn(mean, *x_scale);
            }
        }
    }
}

// The slices' partial sums of every (image, channel), added in slice order.
__global__ void __launch_bounds__(kThreads) gap_finish_kernel(const float* __restrict__ partial,
                                                              const float* __restrict__ x_scale, float* __restrict__ y,
                                                              int64_t outputs, int64_t slices, int64_t hw) {
    fp8ort_pdl_wait();  // launched with pdl: gap_nhwc_kernel may still be writing the partial sums
    fp8ort_pdl_release();
    const int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
    if (i >= outputs) return;
    float s = 0.0f;
    for (int64_t k = 0; k < slices; ++k) s += partial[k * outputs + i];
    y[i] = fp8ort_mul_rn(fp8ort_div_rn(s, static_cast<float>(hw)), *x_scale);
}

// ---- FP8GlobalAveragePool, NCHW: a warp per (image, channel) row of hw contiguous bytes ----
__global__ void __launch_bounds__(kThreads) gap_nchw_kernel(const uint8_t* __restrict__ x, fp8ort_dtype type,
                                                            const float* __restrict__ x_scale, float* __restrict__ y,
                                                            int64_t rows, int64_t hw) {
    __shared__ float table[256];
    __shared__ float partial[kThreads];
    fill_table(table, type);
    const int64_t row = static_cast<int64_t>(blockIdx.x) * (kThreads / 32) + threadIdx.x / 32;
    const int lane = static_cast<int>(threadIdx.x) % 32;
    float s = 0.0f;
    if (row < rows) {
        for (int64_t p = lane; p < hw; p += 32) s += table[x[row * hw + p]];
    }
    partial[threadIdx.x] = s;
    __syncthreads();
    if (lane == 0 && row < rows) {
        float t = 0.0f;
        for (int l = 0; l < 32; ++l) t += partial[threadIdx.x + l];
        y[row] = fp8ort_mul_rn(fp8ort_div_rn(t, static_cast<float>(hw)), *x_scale);
    }
}

// ---- FP8ChannelMul: t = dec(x) * x_scale, t = t * G[n, c], then the output; V bytes per thread ----
struct OutF32 {
    __device__ __forceinline__ static void put(void* y, int64_t i, float v, const fp8_divisor&) {
        static_cast<float*>(y)[i] = v;
    }
};
struct OutF16 {
    __device__ __forceinline__ static void put(void* y, int64_t i, float v, const fp8_divisor&) {
        static_cast<uint16_t*>(y)[i] = fp8ort_float_to_half_bits(v);
    }
};
template <fp8ort_fp8_format F>
struct OutFp8 {
    static constexpr fp8ort_fp8_format kFormat = F;
};
template <class Out>
struct is_fp8_out : std::false_type {};
template <fp8ort_fp8_format F>
struct is_fp8_out<OutFp8<F>> : std::true_type {};

// X viewed as [n, hw, c] (nhwc) or [n, c, hw]; thread i handles V consecutive bytes of one image (V divides c for
// NHWC and hw for NCHW, so the V values share a pixel or a channel).
template <class Out, int V>
__global__ void __launch_bounds__(kThreads) channel_mul_kernel(const uint8_t* __restrict__ x, fp8ort_dtype type,
                                                               const float* __restrict__ x_scale,
                                                               const float* __restrict__ g, void* __restrict__ y,
                                                               const float* __restrict__ y_scale, int64_t hw,
                                                               int64_t c, int nhwc) {
    __shared__ float table[256];
    fill_table(table, type);
    const float xs = *x_scale;
    fp8_divisor ys{};
    if constexpr (is_fp8_out<Out>::value) ys = make_fp8_divisor(*y_scale);
    const int64_t n = blockIdx.y;
    const int64_t per_image = hw * c;
    const float* gn = g + n * c;
    for (int64_t j = (static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x) * V; j < per_image;
         j += static_cast<int64_t>(gridDim.x) * kThreads * V) {
        const int64_t i = n * per_image + j;
        const Bytes<V> v = load_bytes<V>(x + i);
        float t[V];
        if (nhwc) {
            // 32-bit remainder where the image fits (always in practice): a 64-bit one costs ~60 instructions
            const int64_t ch = per_image <= 0xffffffffll ? static_cast<int64_t>(static_cast<uint32_t>(j) % static_cast<uint32_t>(c))
                                                         : j % c;
#pragma unroll
            for (int e = 0; e < V; ++e) t[e] = fp8ort_mul_rn(fp8ort_mul_rn(table[v.b[e]], xs), gn[ch + e]);
        } else {
            const float gate = gn[j / hw];
#pragma unroll
            for (int e = 0; e < V; ++e) t[e] = fp8ort_mul_rn(fp8ort_mul_rn(table[v.b[e]], xs), gate);
        }
        if constexpr (is_fp8_out<Out>::value && V >= 4) {  // four codes per word
            uint32_t w[V / 4];
#pragma unroll
            for (int k = 0; k < V / 4; ++k) {
                const float quad[4] = {t[4 * k], t[4 * k + 1], t[4 * k + 2], t[4 * k + 3]};
                w[k] = quantize4<Out::kFormat>(quad, ys);
            }
            if constexpr (V == 16) {
                *reinterpret_cast<uint4*>(static_cast<uint8_t*>(y) + i) = make_uint4(w[0], w[1], w[2], w[3]);
            } else {
                *reinterpret_cast<uint32_t*>(static_cast<uint8_t*>(y) + i) = w[0];
            }
        } else if constexpr (is_fp8_out<Out>::value) {
            static_cast<uint8_t*>(y)[i] = quantize_fp8<Out::kFormat>(t[0], ys, true);
        } else {
#pragma unroll
            for (int e = 0; e < V; ++e) Out::put(y, i + e, t[e], ys);
        }
    }
}

template <class Out>
fp8ort_status launch_channel_mul(const uint8_t* x, fp8ort_dtype type, const float* x_scale, const float* g, void* y,
                                 const float* y_scale, int64_t n, int64_t hw, int64_t c, int nhwc, hipStream_t s) {
    const int64_t run = nhwc ? c : hw;  // the V values of a thread stay inside one run
    const auto aligned = [](const void* p, uintptr_t a) { return reinterpret_cast<uintptr_t>(p) % a == 0; };
    const bool fp8 = is_fp8_out<Out>::value;
    const int v = (run % 16 == 0 && aligned(x, 16) && (!fp8 || aligned(y, 16))) ? 16
                  : (run % 4 == 0 && aligned(x, 4) && (!fp8 || aligned(y, 4)))  ? 4
                                                                                 : 1;
    const int64_t per_image = hw * c;
    const int64_t blocks = std::min<int64_t>((per_image / v + kThreads - 1) / kThreads, 1 << 16);
    const dim3 grid(static_cast<unsigned>(std::max<int64_t>(blocks, 1)), static_cast<unsigned>(n));
    if (v == 16) {
        channel_mul_kernel<Out, 16><<<grid, kThreads, 0, s>>>(x, type, x_scale, g, y, y_scale, hw, c, nhwc);
    } else if (v == 4) {
        channel_mul_kernel<Out, 4><<<grid, kThreads, 0, s>>>(x, type, x_scale, g, y, y_scale, hw, c, nhwc);
    } else {
        channel_mul_kernel<Out, 1><<<grid, kThreads, 0, s>>>(x, type, x_scale, g, y, y_scale, hw, c, nhwc);
    }
    return check_launch("fp8ort_channel_mul");
}

}  // namespace
}  // namespace fp8ort

using namespace fp8ort;

namespace {
bool gap_vec(const void* x, int64_t c, int bytes) { return c % bytes == 0 && reinterpret_cast<uintptr_t>(x) % bytes == 0; }
}  // namespace

extern "C" size_t fp8ort_global_average_pool_workspace_bytes(int64_t n, int64_t hw, int64_t c, int nhwc) {
    if (!nhwc || n <= 0 || hw <= 0 || c <= 0) return 0;
    // the most slices of any plan the launch may take (the load width depends on the pointer's alignment too)
    int64_t slices = 1;
    for (const auto& [v16, v4] : {std::pair{true, false}, std::pair{false, true}, std::pair{false, false}}) {
        slices = std::max(slices, gap_plan(n, hw, c, v16, v4).slices);
    }
    return slices > 1 ? static_cast<size_t>(slices * n * c) * sizeof(float) : 0;
}

extern "C" fp8ort_status fp8ort_global_average_pool(const void* x, fp8ort_dtype x_type, const float* x_scale, float* y,
                                                    int64_t n, int64_t hw, int64_t c, int nhwc, void* workspace,
                                                    size_t workspace_bytes, void* stream) {
    const char* me = "fp8ort_global_average_pool";
    if (!is_fp8_type(x_type)) return fail(FP8ORT_INVALID_ARGUMENT, "%s: X type %s is not FP8", me, dtype_name(x_type));
    if (n < 0 || hw < 0 || c < 0) return fail(FP8ORT_INVALID_ARGUMENT, "%s: negative size", me);
    if (n > 0x7fffffff) return fail(FP8ORT_UNSUPPORTED, "%s: batch %lld is past the grid", me, static_cast<long long>(n));
    if (n * c == 0) return ok();
    if (!y || !x_scale || (hw > 0 && !x))
        return fail(FP8ORT_INVALID_ARGUMENT, "%s: x, x_scale and y must be device pointers, got NULL", me);
    const hipStream_t s = as_stream(stream);
    const uint8_t* xb = static_cast<const uint8_t*>(x);
    if (!nhwc) {
        const int64_t rows = n * c, blocks = (rows + kThreads / 32 - 1) / (kThreads / 32);
        if (blocks > 0x7fffffff) return fail(FP8ORT_UNSUPPORTED, "%s: %lld rows are past the grid", me, static_cast<long long>(rows));
        gap_nchw_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, s>>>(xb, x_type, x_scale, y, rows, hw);
        return check_launch(me);
    }
    const GapPlan p = gap_plan(n, hw, c, gap_vec(x, c, 16), gap_vec(x, c, 4));
    if (p.chunks > 65535) return fail(FP8ORT_UNSUPPORTED, "%s: %lld channels are past the grid", me, static_cast<long long>(c));
    const size_t need = p.slices > 1 ? static_cast<size_t>(p.slices * n * c) * sizeof(float) : 0;
    if (workspace_bytes < need || (need > 0 && !workspace))
        return fail(FP8ORT_INVALID_ARGUMENT, "%s: the workspace holds %zu bytes, %zu needed", me, workspace_bytes, need);
    float* partial = static_cast<float*>(workspace);
    const dim3 grid(static_cast<unsigned>(n), static_cast<unsigned>(p.chunks), static_cast<unsigned>(p.slices));
    const bool pdl = pdl_wanted();
    auto kernel = p.v == 16 ? gap_nhwc_kernel<16> : p.v == 4 ? gap_nhwc_kernel<4> : gap_nhwc_kernel<1>;
    launch_kernel(pdl, kernel, grid, dim3(kThreads), 0, s, xb, x_type, x_scale, y, partial, n, hw, c, p.groups);
    if (p.slices > 1) {
        const int64_t outputs = n * c;
        launch_kernel(pdl, gap_finish_kernel, dim3(static_cast<unsigned>((outputs + kThreads - 1) / kThreads)),
                      dim3(kThreads), 0, s, partial, x_scale, y, outputs, p.slices, hw);
    }
    return check_launch(me);
}

extern "C" fp8ort_status fp8ort_channel_mul(const void* x, fp8ort_dtype x_type, const float* x_scale, const float* g,
                                            void* y, fp8ort_dtype y_type, const float* y_scale, int64_t n, int64_t hw,
                                            int64_t c, int nhwc, void* stream) {
    const char* me = "fp8ort_channel_mul";
    if (!is_fp8_type(x_type)) return fail(FP8ORT_INVALID_ARGUMENT, "%s: X type %s is not FP8", me, dtype_name(x_type));
    if (n < 0 || hw < 0 || c < 0) return fail(FP8ORT_INVALID_ARGUMENT, "%s: negative size", me);
    if (n > 65535) return fail(FP8ORT_UNSUPPORTED, "%s: batch %lld is past the grid's 65,535", me, static_cast<long long>(n));
    if (n * hw * c == 0) return ok();
    if (!x || !x_scale || !g || !y) return fail(FP8ORT_INVALID_ARGUMENT, "%s: tensors must be device pointers, got NULL", me);
    if (is_fp8_type(y_type) && !y_scale) return fail(FP8ORT_INVALID_ARGUMENT, "%s: an FP8 output needs y_scale", me);
    const uint8_t* xb = static_cast<const uint8_t*>(x);
    const hipStream_t s = as_stream(stream);
    switch (y_type) {
        case FP8ORT_FLOAT: return launch_channel_mul<OutF32>(xb, x_type, x_scale, g, y, y_scale, n, hw, c, nhwc, s);
        case FP8ORT_FLOAT16: return launch_channel_mul<OutF16>(xb, x_type, x_scale, g, y, y_scale, n, hw, c, nhwc, s);
        case FP8ORT_E4M3FN:
            return launch_channel_mul<OutFp8<FP8ORT_E4M3FN>>(xb, x_type, x_scale, g, y, y_scale, n, hw, c, nhwc, s);
        case FP8ORT_E4M3FNUZ:
            return launch_channel_mul<OutFp8<FP8ORT_E4M3FNUZ>>(xb, x_type, x_scale, g, y, y_scale, n, hw, c, nhwc, s);
        case FP8ORT_E5M2:
            return launch_channel_mul<OutFp8<FP8ORT_E5M2>>(xb, x_type, x_scale, g, y, y_scale, n, hw, c, nhwc, s);
        case FP8ORT_E5M2FNUZ:
            return launch_channel_mul<OutFp8<FP8ORT_E5M2FNUZ>>(xb, x_type, x_scale, g, y, y_scale, n, hw, c, nhwc, s);
        default:
            return fail(FP8ORT_INVALID_ARGUMENT, "%s: output type %s is not FP8, float32 or float16", me, dtype_name(y_type));
    }
}
