// FP8 convolution, NHWC: an implicit GEMM over the portable main loop (fp8_gemm_core.h) with rows =
// batch * out_h * out_w, columns = output channels of one group, K = kernel_h * kernel_w * (in_c / group) in
// (tap, channel) order, and direct kernels for depthwise convolution (one input and one output channel per group)
// and for stems with few input channels (an RGB image).
#include "fp8_conv_source.h"
#include "fp8_epilogue_apply.h"
#include "fp8_gemm_core.h"
#include "fp8_gemm_sm90.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

namespace fp8ort {
namespace {

constexpr int kDepthwiseThreads = 256;
constexpr int64_t kMaxDepthwiseBlocks = 65536;  // grid-stride loops beyond

using conv_source = conv_source_t<kChunksPerThread>;

// ONNX [M, C/g, kH, kW] -> [M, kH, kW, cg_out] with channels cg <= c < cg_out zero (cg_out == cg: no padding)
__global__ void pack_conv_weight_kernel(const uint8_t* __restrict__ w, int64_t m, int64_t cg, int64_t kh, int64_t kw,
                                        int64_t cg_out, uint8_t* __restrict__ out) {
    const int64_t total = m * cg_out * kh * kw;
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += stride) {
        int64_t r = i;  // i indexes the packed weight
        const int64_t c = r % cg_out; r /= cg_out;
        const int64_t x = r % kw; r /= kw;
        const int64_t y = r % kh;
        const int64_t o = r / kh;
        out[i] = c < cg ? w[((o * cg + c) * kh + y) * kw + x] : 0;
    }
}

// Depthwise (in_c == out_c == group): ONNX [C, 1, kH, kW] -> [kH, kW, C], channel-contiguous for depthwise_kernel.
__global__ void pack_depthwise_weight_kernel(const uint8_t* __restrict__ w, int64_t c, int64_t taps,
                                             uint8_t* __restrict__ out) {
    const int64_t total = c * taps;
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += stride) {
        const int64_t ch = i % c;
        out[i] = w[ch * taps + i / c];
    }
}

// ---- Depthwise (in_c == out_c == group) ----
// Each output sums its exact products in float32 in (ky, kx) order, skipping taps outside the input.
// One thread owns V consecutive channels of one output pixel (V = 8 or 4 when C % V == 0 and X, W are V-byte
// aligned, else 1): per tap one V-byte load each of X and of the [kH, kW, C] weight (a warp reads consecutive
// bytes of both) and V decodes (decode4_fp8), 32-bit offsets and three magic-number divisions per V outputs, where
// one thread per output spent four int64 divisions per output and int64 math, two byte loads and two
// branchy decodes per tap. Shapes whose X, Y or W reach 2^31 elements take depthwise_wide_kernel.
struct depthwise_geometry {
    int in_h, in_w, in_c, kernel_h, kernel_w;
    int stride_h, stride_w, pad_top, pad_left, dilation_h, dilation_w;
    int out_h, out_w;
    uint32_t items;                         // batch * out_h * out_w * (in_c / V) work items, < 2^31
    fast_div by_groups, by_out_w, by_out_h;  // channel groups of V per pixel, out_w, out_h
};

// V consecutive FP8 codes at p (V-byte aligned for V > 1), decoded.
template <fp8ort_fp8_format F, int V>
__device__ __forceinline__ void load_decode(const uint8_t* p, float (&out)[V]) {
    if constexpr (V == 1) {
        out[0] = decode_fp8<F>(*p);
    } else {
        uint32_t words[V / 4];
        if constexpr (V == 8) {
            const uint2 u = *reinterpret_cast<const uint2*>(p);
            words[0] = u.x, words[1] = u.y;
        } else {
            words[0] = *reinterpret_cast<const uint32_t*>(p);
        }
#pragma unroll
        for (int q = 0; q < V / 4; ++q) {
            float d[4];
            decode4_fp8<F>(words[q], d);
#pragma unroll
            for (int e = 0; e < 4; ++e) out[4 * q + e] = d[e];
        }
    }
}

// The epilogue of V (a multiple of 4) consecutive channels starting at col of output row `row`, 4 at a time. The
// activation is inlined (kInlineAct) for the 8-channel kernels' float32, float16 and E4M3FN outputs, what models
// run: a thread holds few accumulators, and an out-of-line call per element costs its call sequence. The other
// copies keep the call: inlined everywhere, the file's build time doubled. A call on AMD, as epilogue_rows: one copy
// per (Y, V) instead of one per kernel and output type.
template <int Y, int V, bool kInlineAct = false>
__device__ FP8ORT_INLINE_ON_NVIDIA void depthwise_store(const epilogue_args& p, const epilogue_scalars& sc,
                                                const float (&acc)[V], int64_t row, int col, bool vec_y, bool vec_z) {
#pragma unroll
    for (int q = 0; q < V / 4; ++q) {
        column_consts cc[4];
        float v[4];
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            cc[e] = load_column(p, col + 4 * q + e);
            v[e] = acc[4 * q + e];
        }
        epilogue_quad<Y, kInlineAct>(p, sc, cc, v, row * p.ld + col + 4 * q, 4, vec_y, vec_z);
    }
}

template <fp8ort_fp8_format F, int V>
__global__ void __launch_bounds__(kDepthwiseThreads)
    depthwise_kernel(const uint8_t* __restrict__ x, const uint8_t* __restrict__ w, depthwise_geometry g,
                     epilogue_args ep) {
    epilogue_scalars sc{};
    bool vec_y = false, vec_z = false;
    if constexpr (V > 1) {
        sc = load_scalars(ep);
        vec_y = reinterpret_cast<uintptr_t>(ep.y) % 16 == 0;  // ld = C and col are multiples of 4
        vec_z = ep.z && reinterpret_cast<uintptr_t>(ep.z) % 16 == 0;
    }
    const uint32_t step = gridDim.x * blockDim.x;  // items + step < 2^32
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < g.items; i += step) {
        const uint32_t pixel = g.by_groups.div(i);  // image * out_h * out_w + oy * out_w + ox
        const int c = static_cast<int>(i - pixel * g.by_groups.d) * V;
        const uint32_t image_row = g.by_out_w.div(pixel);
        const int ox = static_cast<int>(pixel - image_row * g.out_w);
        const uint32_t image = g.by_out_h.div(image_row);
        const int oy = static_cast<int>(image_row - image * g.out_h);
        const int iy0 = oy * g.stride_h - g.pad_top, ix0 = ox * g.stride_w - g.pad_left;
        float acc[V];
#pragma unroll
        for (int e = 0; e < V; ++e) acc[e] = 0.0f;
        for (int ky = 0; ky < g.kernel_h; ++ky) {
            const int iy = iy0 + ky * g.dilation_h;
            if (iy < 0 || iy >= g.in_h) continue;
            // X has < 2^31 elements: 32-bit offsets
            const uint8_t* x_row = x + (image * g.in_h + iy) * static_cast<uint32_t>(g.in_w) * g.in_c + c;
            const uint8_t* w_row = w + static_cast<uint32_t>(ky * g.kernel_w) * g.in_c + c;
            for (int kx = 0; kx < g.kernel_w; ++kx) {
                const int ix = ix0 + kx * g.dilation_w;
                if (ix < 0 || ix >= g.in_w) continue;
                float a[V], b[V];
                load_decode<F, V>(x_row + static_cast<uint32_t>(ix) * g.in_c, a);
                load_decode<F, V>(w_row + static_cast<uint32_t>(kx) * g.in_c, b);
#pragma unroll
                for (int e = 0; e < V; ++e) acc[e] = fp8ort_fma_exact_product(a[e], b[e], acc[e]);
            }
        }
        if constexpr (V == 1) {
            epilogue_store(ep, load_column(ep, c), acc[0], pixel, c);
        } else {
            switch (ep.y_type) {
                case FP8ORT_FLOAT: depthwise_store<FP8ORT_FLOAT, V, V == 8>(ep, sc, acc, pixel, c, vec_y, vec_z); break;
                case FP8ORT_FLOAT16: depthwise_store<FP8ORT_FLOAT16, V, V == 8>(ep, sc, acc, pixel, c, vec_y, vec_z); break;
                case FP8ORT_BFLOAT16: depthwise_store<FP8ORT_BFLOAT16, V>(ep, sc, acc, pixel, c, vec_y, vec_z); break;
                case FP8ORT_E4M3FN: depthwise_store<FP8ORT_E4M3FN, V, V == 8>(ep, sc, acc, pixel, c, vec_y, vec_z); break;
                case FP8ORT_E5M2: depthwise_store<FP8ORT_E5M2, V>(ep, sc, acc, pixel, c, vec_y, vec_z); break;
                case FP8ORT_E4M3FNUZ: depthwise_store<FP8ORT_E4M3FNUZ, V>(ep, sc, acc, pixel, c, vec_y, vec_z); break;
                default: depthwise_store<FP8ORT_E5M2FNUZ, V>(ep, sc, acc, pixel, c, vec_y, vec_z); break;
            }
        }
    }
}

// Depthwise for X, Y or W of 2^31 elements or more: one thread per output element, 64-bit indices.
template <fp8ort_fp8_format F>
__global__ void __launch_bounds__(kDepthwiseThreads)
    depthwise_wide_kernel(const uint8_t* __restrict__ x, const uint8_t* __restrict__ w, fp8ort_conv_shape s,
                          int64_t out_h, int64_t out_w, epilogue_args ep) {
    const int64_t total = s.batch * out_h * out_w * s.out_c;
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += stride) {
        const int64_t ch = i % s.out_c;
        const int64_t row = i / s.out_c;
        const int64_t ox = row % out_w;
        const int64_t oy = (row / out_w) % out_h;
        const int64_t img = row / (out_w * out_h);
        float acc = 0.0f;
        for (int64_t ky = 0; ky < s.kernel_h; ++ky) {
            const int64_t iy = oy * s.stride_h - s.pad_top + ky * s.dilation_h;
            if (iy < 0 || iy >= s.in_h) continue;
            for (int64_t kx = 0; kx < s.kernel_w; ++kx) {
                const int64_t ix = ox * s.stride_w - s.pad_left + kx * s.dilation_w;
                if (ix < 0 || ix >= s.in_w) continue;
                const float a = decode_fp8<F>(x[((img * s.in_h + iy) * s.in_w + ix) * s.in_c + ch]);
                const float b = decode_fp8<F>(w[(ky * s.kernel_w + kx) * s.in_c + ch]);
                acc = fp8ort_fma_exact_product(a, b, acc);
            }
        }
        epilogue_store(ep, load_column(ep, ch), acc, row, ch);
    }
}

template <fp8ort_fp8_format F, int V>
fp8ort_status launch_depthwise_vec(const uint8_t* x, const uint8_t* w, const fp8ort_conv_shape& s, int64_t oh,
                                   int64_t ow, const epilogue_args& ep, hipStream_t stream) {
    depthwise_geometry g;
    g.in_h = static_cast<int>(s.in_h), g.in_w = static_cast<int>(s.in_w), g.in_c = static_cast<int>(s.in_c);
    g.kernel_h = static_cast<int>(s.kernel_h), g.kernel_w = static_cast<int>(s.kernel_w);
    g.stride_h = static_cast<int>(s.stride_h), g.stride_w = static_cast<int>(s.stride_w);
    g.pad_top = static_cast<int>(s.pad_top), g.pad_left = static_cast<int>(s.pad_left);
    g.dilation_h = static_cast<int>(s.dilation_h), g.dilation_w = static_cast<int>(s.dilation_w);
    g.out_h = static_cast<int>(oh), g.out_w = static_cast<int>(ow);
    const int64_t items = s.batch * oh * ow * (s.in_c / V);
    g.items = static_cast<uint32_t>(items);
    g.by_groups = fast_div::make(static_cast<uint32_t>(s.in_c / V));
    g.by_out_w = fast_div::make(static_cast<uint32_t>(ow));
    g.by_out_h = fast_div::make(static_cast<uint32_t>(oh));
    const int64_t blocks = (items + kDepthwiseThreads - 1) / kDepthwiseThreads;
    depthwise_kernel<F, V><<<static_cast<unsigned>(blocks < kMaxDepthwiseBlocks ? blocks : kMaxDepthwiseBlocks),
                             kDepthwiseThreads, 0, stream>>>(x, w, g, ep);
    return check_launch("fp8ort_conv_nhwc (depthwise)");
}

// ---- Depthwise, a shared-memory tile per block ----
// The per-pixel kernel decodes every input value once per tap that reads it (K * K times for a K x K stride-1
// kernel) and its weights once per output, and is bound by instruction issue (Nsight Compute on the H100: 72-78% of
// issue slots busy, DRAM at 3-16%; ~2.5 TFLOPS where cuDNN FP16 reaches ~11, bench/NOTES.md). Here a block decodes
// its input window once into shared memory as float32 (32 channels, kTileRows output rows, kStrips * kTileP output
// columns, zeros outside the image) and the weights of those channels once; a thread then owns four channels of
// kTileP consecutive outputs along W and reads each input column of a kernel row once per strip. Every output adds
// its exact products in (ky, kx) order and, in blocks whose window crosses the image border, skips the taps outside
// the image (0 * w is NaN for a NaN or infinite weight), so the sums are the per-pixel kernel's bit for bit; the
// epilogue is the same four-channel epilogue_quad. E4M3FN weights, float32 / float16 / E4M3FN outputs, kernels 3x3
// and 5x5 with stride 1 or 2 and no dilation, channels a multiple of 4: what EfficientNet and MobileNet run.
constexpr int kTileC = 32;              // channels per block
constexpr int kTileQ = kTileC / 4;      // channel quads per block
constexpr int kTileRows = 8;            // output rows per block
constexpr int kTileP = 4;               // outputs along W per thread

template <int K, int S>
struct dw_tile {
    static constexpr int kStrips = S == 1 ? 4 : 2;                    // strips of kTileP outputs per row
    static constexpr int kCols = kStrips * kTileP;                    // output columns per block
    static constexpr int kThreads = kTileQ * kTileRows * kStrips;     // 256 (stride 1), 128 (stride 2)
    static constexpr int kInRows = (kTileRows - 1) * S + K;
    static constexpr int kInCols = (kCols - 1) * S + K;
    static constexpr int kSpan = (kTileP - 1) * S + K;                // input columns one strip reads per kernel row
    static constexpr int kSmemBytes = (kInRows * kInCols + K * K) * kTileQ * 16;
};

struct dw_tile_geometry {
    int in_h, in_w, in_c, pad_top, pad_left, out_h, out_w, tiles_x;
};

// One kernel row's products for the strip: acc[p] += x[p * S + kx] * w[kx] in kx order, where kCheck skips columns
// outside the image (bit i of col_ok: the strip's input column i is inside).
template <int K, int S, bool kCheck>
__device__ __forceinline__ void dw_tile_row(const float4* __restrict__ xs, const float4* __restrict__ ws,
                                            uint32_t col_ok, float (&acc)[kTileP][4]) {
    constexpr int kSpan = dw_tile<K, S>::kSpan;
    float4 xv[kSpan], wv[K];
#pragma unroll
    for (int i = 0; i < kSpan; ++i) xv[i] = xs[i * kTileQ];
#pragma unroll
    for (int kx = 0; kx < K; ++kx) wv[kx] = ws[kx * kTileQ];
#pragma unroll
    for (int p = 0; p < kTileP; ++p) {
#pragma unroll
        for (int kx = 0; kx < K; ++kx) {
            const int i = p * S + kx;
            if (kCheck && !((col_ok >> i) & 1u)) continue;
            acc[p][0] = fp8ort_fma_exact_product(xv[i].x, wv[kx].x, acc[p][0]);
            acc[p][1] = fp8ort_fma_exact_product(xv[i].y, wv[kx].y, acc[p][1]);
            acc[p][2] = fp8ort_fma_exact_product(xv[i].z, wv[kx].z, acc[p][2]);
            acc[p][3] = fp8ort_fma_exact_product(xv[i].w, wv[kx].w, acc[p][3]);
        }
    }
}

template <int K, int S, int Y>
__global__ void __launch_bounds__((dw_tile<K, S>::kThreads))
    depthwise_tile_kernel(const uint8_t* __restrict__ x, const uint8_t* __restrict__ w, dw_tile_geometry g,
                          epilogue_args ep) {
    using T = dw_tile<K, S>;
    extern __shared__ float4 dw_smem[];
    float4* xs = dw_smem;                               // [kInRows][kInCols][kTileQ]
    float4* ws = dw_smem + T::kInRows * T::kInCols * kTileQ;  // [K * K][kTileQ]
    const int tile_y = static_cast<int>(blockIdx.x) / g.tiles_x, tile_x = static_cast<int>(blockIdx.x) % g.tiles_x;
    const int c0 = static_cast<int>(blockIdx.y) * kTileC;
    const uint32_t image = blockIdx.z;
    const int oy0 = tile_y * kTileRows, ox0 = tile_x * T::kCols;
    const int iy0 = oy0 * S - g.pad_top, ix0 = ox0 * S - g.pad_left;
    // the window and the weights, decoded once (X has < 2^31 elements: 32-bit offsets)
    const uint8_t* x_image = x + image * static_cast<uint32_t>(g.in_h) * g.in_w * g.in_c;
    constexpr int kWindow = T::kInRows * T::kInCols * kTileQ;
#pragma unroll 4
    for (int e = threadIdx.x; e < kWindow; e += T::kThreads) {
        const int q = e % kTileQ, pixel = e / kTileQ;
        const int iy = iy0 + pixel / T::kInCols, ix = ix0 + pixel % T::kInCols;
        const int c = c0 + 4 * q;
        float d[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        if (iy >= 0 && iy < g.in_h && ix >= 0 && ix < g.in_w && c < g.in_c)
            decode4_fp8<FP8ORT_E4M3FN>(
                *reinterpret_cast<const uint32_t*>(x_image + (static_cast<uint32_t>(iy) * g.in_w + ix) * g.in_c + c), d);
        xs[e] = make_float4(d[0], d[1], d[2], d[3]);
    }
    for (int e = threadIdx.x; e < K * K * kTileQ; e += T::kThreads) {
        const int q = e % kTileQ, tap = e / kTileQ;
        const int c = c0 + 4 * q;
        float d[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        if (c < g.in_c) decode4_fp8<FP8ORT_E4M3FN>(*reinterpret_cast<const uint32_t*>(w + tap * g.in_c + c), d);
        ws[e] = make_float4(d[0], d[1], d[2], d[3]);
    }
    __syncthreads();

    const int q = threadIdx.x % kTileQ, strip = threadIdx.x / kTileQ;
    const int row = strip / T::kStrips, col = (strip % T::kStrips) * kTileP;  // within the block's outputs
    float acc[kTileP][4];
#pragma unroll
    for (int p = 0; p < kTileP; ++p)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[p][e] = 0.0f;
    const float4* x_strip = xs + (row * S * T::kInCols + col * S) * kTileQ + q;
    const bool inside = iy0 >= 0 && ix0 >= 0 && iy0 + T::kInRows <= g.in_h && ix0 + T::kInCols <= g.in_w;
    if (inside) {  // the whole window inside the image: no tap to skip
#pragma unroll
        for (int ky = 0; ky < K; ++ky)
            dw_tile_row<K, S, false>(x_strip + ky * T::kInCols * kTileQ, ws + ky * K * kTileQ + q, 0u, acc);
    } else {
        uint32_t col_ok = 0;
#pragma unroll
        for (int i = 0; i < T::kSpan; ++i) {
            const int ix = ix0 + col * S + i;
            col_ok |= (ix >= 0 && ix < g.in_w ? 1u : 0u) << i;
        }
#pragma unroll
        for (int ky = 0; ky < K; ++ky) {
            const int iy = iy0 + row * S + ky;
            if (iy < 0 || iy >= g.in_h) continue;
            dw_tile_row<K, S, true>(x_strip + ky * T::kInCols * kTileQ, ws + ky * K * kTileQ + q, col_ok, acc);
        }
    }

    const int oy = oy0 + row, c = c0 + 4 * q;
    if (oy >= g.out_h || c >= g.in_c) return;
    const epilogue_scalars sc = load_scalars(ep);
    const bool vec_y = reinterpret_cast<uintptr_t>(ep.y) % 16 == 0;  // ld = C and c are multiples of 4
    const bool vec_z = ep.z && reinterpret_cast<uintptr_t>(ep.z) % 16 == 0;
    column_consts cc[4];
#pragma unroll
    for (int e = 0; e < 4; ++e) cc[e] = load_column(ep, c + e);
    const uint32_t pixel_row = (image * g.out_h + oy) * static_cast<uint32_t>(g.out_w);
#if defined(FP8ORT_HAS_FAST_ROWS)
    if constexpr (Y == FP8ORT_E4M3FN) {
        // the strip's kTileP outputs as fast quads (the same bits as epilogue_quad below)
        if (fast_quads_apply(ep, sc, vec_y, vec_z)) {
            int64_t off[kTileP];
            uint32_t zw[kTileP] = {}, valid = 0;
#pragma unroll
            for (int p = 0; p < kTileP; ++p) {
                const int ox = ox0 + col + p;
                off[p] = static_cast<int64_t>(pixel_row + ox) * ep.ld + c;
                valid |= (ox < g.out_w ? 1u : 0u) << p;
                if (ep.z && ox < g.out_w)
                    zw[p] = __ldcg(reinterpret_cast<const unsigned int*>(static_cast<const uint8_t*>(ep.z) + off[p]));
            }
            const fast_quad_consts k = make_fast_quad_consts(ep, sc, cc);
            if (ep.z)
                epilogue_quads_fast<kTileP, true, false>(ep, sc, k, acc, zw, off, valid);
            else if (ep.act == FP8ORT_ACT_SILU)
                epilogue_quads_fast<kTileP, false, true>(ep, sc, k, acc, zw, off, valid);
            else
                epilogue_quads_fast<kTileP, false, false>(ep, sc, k, acc, zw, off, valid);
            return;
        }
    }
#endif
#pragma unroll
    for (int p = 0; p < kTileP; ++p) {
        const int ox = ox0 + col + p;
        if (ox < g.out_w)
            epilogue_quad<Y, true>(ep, sc, cc, acc[p], static_cast<int64_t>(pixel_row + ox) * ep.ld + c, 4, vec_y,
                                   vec_z);
    }
}

std::atomic<int> g_depthwise_variant{FP8ORT_DEPTHWISE_AUTO};

// fp8ort_conv_set_depthwise_variant's choice, or else FP8ORT_DEPTHWISE=pixel|tile|auto from the environment (read
// once); AUTO picks per shape (depthwise_tile_auto).
fp8ort_depthwise_variant depthwise_variant() {
    static const int from_env = [] {
        const char* v = getenv("FP8ORT_DEPTHWISE");
        if (v && strcmp(v, "tile") == 0) return static_cast<int>(FP8ORT_DEPTHWISE_TILE);
        if (v && strcmp(v, "pixel") == 0) return static_cast<int>(FP8ORT_DEPTHWISE_PIXEL);
        return static_cast<int>(FP8ORT_DEPTHWISE_AUTO);
    }();
    const int which = g_depthwise_variant.load();
    return static_cast<fp8ort_depthwise_variant>(which != FP8ORT_DEPTHWISE_AUTO ? which : from_env);
}

// The automatic choice: the tile kernel at stride 1 on outputs of 14 columns and more, from EfficientNet-B0's layers
// at batch 256 on the H100 (bench/NOTES.md, layers_efficientnet_b0.json): 0.74 -> 0.45 ms (32 channels, 112x112,
// 3x3), 0.66 -> 0.38 ms (240 channels, 28x28, 5x5), 0.44 -> 0.25 ms (672 channels, 14x14, 5x5), 0.32 -> 0.18 and
// 0.18 -> 0.14 ms (480 channels, 14x14, 5x5 and 3x3). Slower at 7x7 (0.18 -> 0.19 and 0.11 -> 0.15 ms, 1,152
// channels: 38% of a block's outputs exist) and at stride 2 (0.61 -> 0.81 ms, 96 channels, 112x112: the window
// decoded per output is four times larger).
bool depthwise_tile_auto(const fp8ort_conv_shape& s, int64_t ow) { return s.stride_w == 1 && ow >= 14; }

// Whether the tile kernel takes a problem (pointers and the output type unchecked when null / kAnyOutput).
constexpr int kAnyOutput = 0;
bool tile_supported(fp8ort_fp8_format f, const fp8ort_conv_shape& s, int64_t oh, int64_t ow, const void* x,
                    const void* w, int y_type) {
    const fp8ort_depthwise_variant v = depthwise_variant();
    if (f != FP8ORT_E4M3FN || v == FP8ORT_DEPTHWISE_PIXEL || (v == FP8ORT_DEPTHWISE_AUTO && !depthwise_tile_auto(s, ow)))
        return false;
    if (y_type != kAnyOutput && y_type != FP8ORT_FLOAT && y_type != FP8ORT_FLOAT16 && y_type != FP8ORT_E4M3FN)
        return false;
    if (s.in_c % 4 || s.kernel_h != s.kernel_w || (s.kernel_h != 3 && s.kernel_h != 5) || s.stride_h != s.stride_w ||
        (s.stride_h != 1 && s.stride_h != 2) || s.dilation_h != 1 || s.dilation_w != 1)
        return false;
    if ((x && reinterpret_cast<uintptr_t>(x) % 4) || (w && reinterpret_cast<uintptr_t>(w) % 4)) return false;
    constexpr int64_t kLimit = int64_t{1} << 31;
    return s.batch <= 65535 && s.batch * s.in_h * s.in_w * s.in_c < kLimit && s.batch * oh * ow * s.out_c < kLimit &&
           (s.in_c + kTileC - 1) / kTileC <= 65535;
}

template <int K, int S, int Y>
fp8ort_status launch_tile_kernel(const uint8_t* x, const uint8_t* w, const dw_tile_geometry& g, int64_t batch,
                                 const epilogue_args& ep, hipStream_t stream) {
    using T = dw_tile<K, S>;
    auto kernel = depthwise_tile_kernel<K, S, Y>;
    if constexpr (T::kSmemBytes > 48 * 1024) {
        static const hipError_t attr = hipFuncSetAttribute(reinterpret_cast<const void*>(kernel),
                                                           hipFuncAttributeMaxDynamicSharedMemorySize, T::kSmemBytes);
        if (attr != hipSuccess) return fail(FP8ORT_DEVICE_ERROR, "fp8ort_conv_nhwc (depthwise tile): %s",
                                            hipGetErrorString(attr));
    }
    const int64_t tiles_y = (g.out_h + kTileRows - 1) / kTileRows;
    const dim3 grid(static_cast<unsigned>(tiles_y * g.tiles_x), static_cast<unsigned>((g.in_c + kTileC - 1) / kTileC),
                    static_cast<unsigned>(batch));
    kernel<<<grid, T::kThreads, T::kSmemBytes, stream>>>(x, w, g, ep);
    return check_launch("fp8ort_conv_nhwc (depthwise tile)");
}

template <int K, int S>
fp8ort_status launch_tile_ks(const uint8_t* x, const uint8_t* w, const fp8ort_conv_shape& s, int64_t oh, int64_t ow,
                             const epilogue_args& ep, hipStream_t stream) {
    dw_tile_geometry g;
    g.in_h = static_cast<int>(s.in_h), g.in_w = static_cast<int>(s.in_w), g.in_c = static_cast<int>(s.in_c);
    g.pad_top = static_cast<int>(s.pad_top), g.pad_left = static_cast<int>(s.pad_left);
    g.out_h = static_cast<int>(oh), g.out_w = static_cast<int>(ow);
    g.tiles_x = static_cast<int>((ow + dw_tile<K, S>::kCols - 1) / dw_tile<K, S>::kCols);
    switch (ep.y_type) {  // the output types tile_supported takes
        case FP8ORT_FLOAT: return launch_tile_kernel<K, S, FP8ORT_FLOAT>(x, w, g, s.batch, ep, stream);
        case FP8ORT_FLOAT16: return launch_tile_kernel<K, S, FP8ORT_FLOAT16>(x, w, g, s.batch, ep, stream);
        default: return launch_tile_kernel<K, S, FP8ORT_E4M3FN>(x, w, g, s.batch, ep, stream);
    }
}

fp8ort_status launch_depthwise_tile(const uint8_t* x, const uint8_t* w, const fp8ort_conv_shape& s, int64_t oh,
                                    int64_t ow, const epilogue_args& ep, hipStream_t stream) {
    if (s.kernel_h == 3) return s.stride_h == 1 ? launch_tile_ks<3, 1>(x, w, s, oh, ow, ep, stream)
                                                : launch_tile_ks<3, 2>(x, w, s, oh, ow, ep, stream);
    return s.stride_h == 1 ? launch_tile_ks<5, 1>(x, w, s, oh, ow, ep, stream)
                           : launch_tile_ks<5, 2>(x, w, s, oh, ow, ep, stream);
}

// ---- Few input channels (the stem: an RGB image, C <= 4), a shared-memory tile per block ----
// The implicit GEMM needs C padded to 16 for the tensor cores (TMA rows of 16 bytes): an RGB stem then multiplies
// 13 zero channels of every tap, and gathers its A operand by threads (Nsight Compute on the H200: EfficientNet-B0's
// 3 -> 32 3x3 stride-2 stem 2.66 ms and ResNet-50's 3 -> 64 7x7 stride-2 stem 2.62 ms at batch 256, 10-16% of the
// whole models' kernels). Here, on the vector units, a block decodes the input window of its output tile (kFcRows
// or 2 * kFcRows rows of kFcCols columns) and all the weights once into shared memory as float32; a thread owns four
// output channels of kTileP consecutive outputs along W and adds the exact products in (ky, kx, c) order, skipping
// taps outside the image as the depthwise kernels do. C = 3 is its own copy; 1, 2 and 4 take the 4-channel one
// with zero channels (a product of two zeros leaves a sum unchanged but for the sign of a zero sum, which the
// epilogue's acc + 0 makes +0 either way). E4M3FN, group 1, K x K kernels of 3 or 7 at stride 2 (what stems use),
// out_c a multiple of 4 up to 64; float32 / float16 / E4M3FN outputs. Taken for 3x3 stems by default (few_c_wanted).
constexpr int kFcRows = 8;            // output rows per block for out_c > 16 (twice as many for fewer channels)
constexpr int kFcCols = 16;           // output columns per block: 4 strips of kTileP
constexpr int kFcThreads = 256;
constexpr int kFcMaxOutC = 64;

struct few_c_geometry {
    int in_h, in_w, pad_top, pad_left, out_h, out_w, out_c, tiles_x, tile_rows, win_rows, win_cols;
};

template <int K, int S>
__host__ __device__ constexpr int few_c_span() { return (kTileP - 1) * S + K; }  // input columns a strip reads

// One kernel row's products for the strip: acc[p] += x[p * S + kx][c] * w[kx][c] in (kx, c) order, where kCheck
// skips input columns outside the image (bit i of col_ok: the strip's input column i is inside).
template <int K, int S, int C, bool kCheck>
__device__ __forceinline__ void few_c_row(const float* __restrict__ xs, const float4* __restrict__ ws, int quads,
                                          uint32_t col_ok, float (&acc)[kTileP][4]) {
#pragma unroll
    for (int kx = 0; kx < K; ++kx) {
#pragma unroll
        for (int c = 0; c < C; ++c) {
            const float4 w = ws[(kx * C + c) * quads];
#pragma unroll
            for (int p = 0; p < kTileP; ++p) {
                const int i = p * S + kx;
                if (kCheck && !((col_ok >> i) & 1u)) continue;
                const float xv = xs[i * C + c];
                acc[p][0] = fp8ort_fma_exact_product(xv, w.x, acc[p][0]);
                acc[p][1] = fp8ort_fma_exact_product(xv, w.y, acc[p][1]);
                acc[p][2] = fp8ort_fma_exact_product(xv, w.z, acc[p][2]);
                acc[p][3] = fp8ort_fma_exact_product(xv, w.w, acc[p][3]);
            }
        }
    }
}

// X [batch, in_h, in_w, in_c] with in_c == C (or fewer for C = 4: cin channels, the rest zero), W packed
// [out_c, K, K, cin]; shared memory: the window [win_rows][win_cols][C] then the weights [K * K * C][out_c / 4].
template <int K, int S, int C, int Y>
__global__ void __launch_bounds__(kFcThreads)
    few_c_conv_kernel(const uint8_t* __restrict__ x, const uint8_t* __restrict__ w, int cin, few_c_geometry g,
                      epilogue_args ep) {
    extern __shared__ float4 fc_smem[];
    const int quads = g.out_c / 4;
    float4* ws = fc_smem;                                                // [K * K * C][quads]
    float* xs = reinterpret_cast<float*>(fc_smem + K * K * C * quads);  // [win_rows][win_cols][C]
    const int tile_y = static_cast<int>(blockIdx.x) / g.tiles_x, tile_x = static_cast<int>(blockIdx.x) % g.tiles_x;
    const uint32_t image = blockIdx.y;
    const int oy0 = tile_y * g.tile_rows, ox0 = tile_x * kFcCols;
    const int iy0 = oy0 * S - g.pad_top, ix0 = ox0 * S - g.pad_left;
    for (int e = threadIdx.x; e < K * K * C * g.out_c; e += kFcThreads) {  // e = (tap * C + c) * out_c + o
        const int o = e % g.out_c, tc = e / g.out_c;
        const int c = tc % C, tap = tc / C;
        reinterpret_cast<float*>(ws)[e] =
            c < cin ? decode_fp8<FP8ORT_E4M3FN>(w[(static_cast<uint32_t>(o) * (K * K) + tap) * cin + c]) : 0.0f;
    }
    // X has < 2^31 elements: 32-bit offsets; a window row is win_cols * C consecutive values of one input row
    const uint8_t* x_image = x + image * static_cast<uint32_t>(g.in_h) * g.in_w * cin;
    const int row_len = g.win_cols * C;
    for (int e = threadIdx.x; e < g.win_rows * row_len; e += kFcThreads) {
        const int r = e / row_len, rc = e - r * row_len;
        const int col = rc / C, c = rc - col * C;
        const int iy = iy0 + r, ix = ix0 + col;
        float v = 0.0f;
        if (c < cin && iy >= 0 && iy < g.in_h && ix >= 0 && ix < g.in_w)
            v = decode_fp8<FP8ORT_E4M3FN>(x_image[(static_cast<uint32_t>(iy) * g.in_w + ix) * cin + c]);
        xs[e] = v;
    }
    __syncthreads();

    const epilogue_scalars sc = load_scalars(ep);
    const bool vec_y = reinterpret_cast<uintptr_t>(ep.y) % 16 == 0;  // ld = out_c and c are multiples of 4
    const bool vec_z = ep.z && reinterpret_cast<uintptr_t>(ep.z) % 16 == 0;
    constexpr int kSpan = few_c_span<K, S>();
    const bool inside = iy0 >= 0 && ix0 >= 0 && iy0 + g.win_rows <= g.in_h && ix0 + g.win_cols <= g.in_w;
    const int items = g.tile_rows * (kFcCols / kTileP) * quads;
    for (int item = threadIdx.x; item < items; item += kFcThreads) {
        const int q = item % quads, strip = item / quads;
        const int row = strip / (kFcCols / kTileP), col = (strip % (kFcCols / kTileP)) * kTileP;
        const int oy = oy0 + row;
        if (oy >= g.out_h) continue;
        float acc[kTileP][4];
#pragma unroll
        for (int p = 0; p < kTileP; ++p)
#pragma unroll
            for (int e = 0; e < 4; ++e) acc[p][e] = 0.0f;
        const float* x_strip = xs + (row * S * g.win_cols + col * S) * C;
        if (inside) {  // the whole window inside the image: no tap to skip
            for (int ky = 0; ky < K; ++ky)
                few_c_row<K, S, C, false>(x_strip + ky * row_len, ws + ky * K * C * quads + q, quads, 0u, acc);
        } else {
            uint32_t col_ok = 0;
#pragma unroll
            for (int i = 0; i < kSpan; ++i) {
                const int ix = ix0 + col * S + i;
                col_ok |= (ix >= 0 && ix < g.in_w ? 1u : 0u) << i;
            }
            for (int ky = 0; ky < K; ++ky) {
                const int iy = iy0 + row * S + ky;
                if (iy < 0 || iy >= g.in_h) continue;
                few_c_row<K, S, C, true>(x_strip + ky * row_len, ws + ky * K * C * quads + q, quads, col_ok, acc);
            }
        }
        const int c = 4 * q;
        column_consts cc[4];
#pragma unroll
        for (int e = 0; e < 4; ++e) cc[e] = load_column(ep, c + e);
        const uint32_t pixel_row = (image * g.out_h + oy) * static_cast<uint32_t>(g.out_w);
#pragma unroll
        for (int p = 0; p < kTileP; ++p) {
            const int ox = ox0 + col + p;
            if (ox < g.out_w)
                epilogue_quad<Y, true>(ep, sc, cc, acc[p], static_cast<int64_t>(pixel_row + ox) * ep.ld + c, 4, vec_y,
                                       vec_z);
        }
    }
}

std::atomic<int> g_few_channels{0};  // fp8ort_conv_set_few_channels: 0 automatic, 1 off, 2 on


// Whether the few-channel kernel takes a stem it supports: fp8ort_conv_set_few_channels's choice, or else
// FP8ORT_FEW_CHANNELS=on|off from the environment (read once); automatic: 3x3 stems only. Measured on the H100 at
// batch 256 (bench/NOTES.md): EfficientNet-B0's 3 -> 32 3x3 stem 1.25 -> 0.59 ms (+6% img/s for the model), but
// ResNet-50's 3 -> 64 7x7 stem 2.12 -> 2.68 ms (slower: 147 FMAs per output on the vector units against the tensor
// cores' padded 784).
bool few_c_wanted(const fp8ort_conv_shape& s) {
    static const int from_env = on_off_from_env("FP8ORT_FEW_CHANNELS");
    const int set = g_few_channels.load();
    const int which = set != 0 ? set : from_env;
    return which == 2 || (which == 0 && s.kernel_h == 3);
}

// A block's tile and input window: tile rows twice kFcRows for out_c <= 16, so that a block's 256 threads have work.
// Only for shapes whose sizes few_c_supported bounds (a stem's window fits an int).
void few_c_window(const fp8ort_conv_shape& s, few_c_geometry& g) {
    g.tile_rows = s.out_c <= 16 ? 2 * kFcRows : kFcRows;
    g.win_rows = static_cast<int>((g.tile_rows - 1) * s.stride_h + s.kernel_h);
    g.win_cols = static_cast<int>((kFcCols - 1) * s.stride_w + s.kernel_w);
}

// Shared memory of a block: the weights [K * K * C][out_c] and the window [win_rows][win_cols][C], float32.
size_t few_c_smem_bytes(const fp8ort_conv_shape& s) {
    few_c_geometry g;
    few_c_window(s, g);
    const int64_t c = s.in_c == 3 ? 3 : 4;
    return static_cast<size_t>(s.kernel_h * s.kernel_w * c * s.out_c + int64_t{g.win_rows} * g.win_cols * c) *
           sizeof(float);
}

// Whether the few-channel kernel takes a problem (pointers and the output type unchecked when null / kAnyOutput).
bool few_c_supported(fp8ort_fp8_format f, const fp8ort_conv_shape& s, int64_t oh, int64_t ow, int y_type) {
    if (f != FP8ORT_E4M3FN || !few_c_wanted(s) || gemm_kernel_override() != 0 || conv_kernel_override() != 0)
        return false;
    if (y_type != kAnyOutput && y_type != FP8ORT_FLOAT && y_type != FP8ORT_FLOAT16 && y_type != FP8ORT_E4M3FN)
        return false;
    if (s.group != 1 || s.in_c > 4 || s.out_c % 4 || s.out_c > kFcMaxOutC || s.kernel_h != s.kernel_w ||
        (s.kernel_h != 3 && s.kernel_h != 7) || s.stride_h != 2 || s.stride_w != 2 || s.dilation_h != 1 ||
        s.dilation_w != 1)
        return false;
    constexpr int64_t kLimit = int64_t{1} << 31;
    return s.batch <= 65535 && s.batch * s.in_h * s.in_w * s.in_c < kLimit && s.batch * oh * ow * s.out_c < kLimit &&
           few_c_smem_bytes(s) <= 96 * 1024;
}

template <int K, int C, int Y>
fp8ort_status launch_few_c_kernel(const uint8_t* x, const uint8_t* w, const fp8ort_conv_shape& s,
                                  const few_c_geometry& g, const epilogue_args& ep, hipStream_t stream) {
    auto kernel = few_c_conv_kernel<K, 2, C, Y>;
    const size_t smem = few_c_smem_bytes(s);
    if (smem > 48 * 1024) {
        static const hipError_t attr = hipFuncSetAttribute(reinterpret_cast<const void*>(kernel),
                                                           hipFuncAttributeMaxDynamicSharedMemorySize, 96 * 1024);
        if (attr != hipSuccess) return fail(FP8ORT_DEVICE_ERROR, "fp8ort_conv_nhwc (few channels): %s",
                                            hipGetErrorString(attr));
    }
    const int64_t tiles_y = (g.out_h + g.tile_rows - 1) / g.tile_rows;
    const dim3 grid(static_cast<unsigned>(tiles_y * g.tiles_x), static_cast<unsigned>(s.batch));
    kernel<<<grid, kFcThreads, smem, stream>>>(x, w, static_cast<int>(s.in_c), g, ep);
    return check_launch("fp8ort_conv_nhwc (few channels)");
}

template <int K, int C>
fp8ort_status launch_few_c_kc(const uint8_t* x, const uint8_t* w, const fp8ort_conv_shape& s, const few_c_geometry& g,
                              const epilogue_args& ep, hipStream_t stream) {
    switch (ep.y_type) {  // the output types few_c_supported takes
        case FP8ORT_FLOAT: return launch_few_c_kernel<K, C, FP8ORT_FLOAT>(x, w, s, g, ep, stream);
        case FP8ORT_FLOAT16: return launch_few_c_kernel<K, C, FP8ORT_FLOAT16>(x, w, s, g, ep, stream);
        default: return launch_few_c_kernel<K, C, FP8ORT_E4M3FN>(x, w, s, g, ep, stream);
    }
}

fp8ort_status launch_few_c(const uint8_t* x, const uint8_t* w, const fp8ort_conv_shape& s, int64_t oh, int64_t ow,
                           const epilogue_args& ep, hipStream_t stream) {
    few_c_geometry g;
    g.in_h = static_cast<int>(s.in_h), g.in_w = static_cast<int>(s.in_w);
    g.pad_top = static_cast<int>(s.pad_top), g.pad_left = static_cast<int>(s.pad_left);
    g.out_h = static_cast<int>(oh), g.out_w = static_cast<int>(ow), g.out_c = static_cast<int>(s.out_c);
    g.tiles_x = static_cast<int>((ow + kFcCols - 1) / kFcCols);
    few_c_window(s, g);
    const bool c3 = s.in_c == 3;
    if (s.kernel_h == 3) return c3 ? launch_few_c_kc<3, 3>(x, w, s, g, ep, stream) : launch_few_c_kc<3, 4>(x, w, s, g, ep, stream);
    return c3 ? launch_few_c_kc<7, 3>(x, w, s, g, ep, stream) : launch_few_c_kc<7, 4>(x, w, s, g, ep, stream);
}

// ---- Stems through an explicit im2col: few input channels, a kernel larger than 3x3 (ResNet's 7x7) ----
// The sm90a implicit GEMM reads 16 channels per tap, so an RGB stem padded 3 -> 16 channels sums K = 7 * 7 * 16 = 784
// products per output, 81% of them zeros (ResNet-50's stem: 2.12 ms at batch 256 on an H100, cuDNN FP16 0.63; on
// the vector units, 2.68). Here the rows of A are written out in (ky, kx, c) order with K = kh * kw * in_c rounded up
// to 16 (147 -> 160), a chunk of rows at a time into the caller's workspace, and the wgmma GEMM runs on each chunk.
// The packed weight [out_c, kh, kw, in_c] is [N, K] already; its copy with rows padded to the same K goes first into
// the workspace. Without that workspace (fp8ort_conv_nhwc) such a stem runs unpadded on the portable kernel.
// Measured on an H100 (bench/NOTES.md): with im2col_kernel (a byte gather with 64-bit index arithmetic per 16 bytes,
// still the one for other shapes) ResNet-50's stem took 2.39 ms at batch 256 against 2.08 padded; with
// im2col_pixel_kernel (7x7 stems: a row per thread, compile-time byte positions, 32-bit indices) 1.65 ms, and
// ResNet-50 +4.4% img/s at batch 256, +3.7% at 32 (both A/B runs). So the route is on by default (FP8ORT_IM2COL=off
// or fp8ort_conv_set_im2col(1) keep the padded form).
constexpr int64_t kI2cChunkRows = int64_t{1} << 17;  // A chunk of 21 MB at K = 160: written and read back in L2
constexpr int kI2cThreads = 256;

struct im2col_geometry {
    int64_t in_h, in_w, out_h, out_w, stride_h, stride_w, pad_top, pad_left, dilation_h, dilation_w;
    int in_c, kernel_w, k, kp;  // K = kernel_h * kernel_w * in_c, kp: K rounded up to 16
    int64_t x_bytes;            // X's size: im2col_pixel_kernel's word loads stay inside it
};

// A[r][0..kp) for rows row0 + r, r < rows: one thread per 16 bytes of a row, taps outside the input and the columns
// past K are +0 (code 0 in every FP8 format).
__global__ void __launch_bounds__(kI2cThreads)
    im2col_kernel(const uint8_t* __restrict__ x, im2col_geometry g, int64_t row0, int64_t rows, uint8_t* __restrict__ a) {
    fp8ort_pdl_wait();  // launched with pdl: the kernel before it may still run
    fp8ort_pdl_release();
    const int chunks = g.kp / 16;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < rows * chunks;
         i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
        const int64_t r = i / chunks, row = row0 + r;
        const int j = static_cast<int>(i - r * chunks);
        const int64_t ox = row % g.out_w, t = row / g.out_w;
        const int64_t oy = t % g.out_h, b = t / g.out_h;
        int k = 16 * j;
        int tap = k / g.in_c, c = k - tap * g.in_c;
        int ky = tap / g.kernel_w, kx = tap - ky * g.kernel_w;
        uint32_t w[4] = {0u, 0u, 0u, 0u};
#pragma unroll
        for (int e = 0; e < 16; ++e, ++k) {
            if (k >= g.k) break;
            const int64_t iy = oy * g.stride_h - g.pad_top + ky * g.dilation_h;
            const int64_t ix = ox * g.stride_w - g.pad_left + kx * g.dilation_w;
            if (iy >= 0 && iy < g.in_h && ix >= 0 && ix < g.in_w)
                w[e / 4] |= static_cast<uint32_t>(x[((b * g.in_h + iy) * g.in_w + ix) * g.in_c + c]) << (8 * (e % 4));
            if (++c == g.in_c) {
                c = 0;
                if (++kx == g.kernel_w) kx = 0, ++ky;
            }
        }
        *reinterpret_cast<uint4*>(a + r * g.kp + 16 * j) = make_uint4(w[0], w[1], w[2], w[3]);
    }
}

// The stems seen in exports (7x7 over 3 or 4 channels): one thread per output pixel assembles its row of A in
// registers (the tap order and the byte positions known at compile time); 32-bit indices (im2col_pixel_applies bounds
// the sizes). Where a pixel's window lies inside the image along W (dilation 1), each kernel row's KW * C contiguous
// bytes of X come in as aligned 32-bit words, shifted into place (was one byte load per tap and channel: 147 per
// row); the others, at the left and right borders, gather bytes. The block's rows, contiguous in A, go out through
// shared memory as coalesced 16-byte stores (a row per thread stored 16 bytes at a 160-byte stride).
constexpr int kI2cPixelThreads = 128;

template <int KH, int KW, int C>
__global__ void __launch_bounds__(kI2cPixelThreads)
    im2col_pixel_kernel(const uint8_t* __restrict__ x, im2col_geometry g, int64_t row0, int rows, uint8_t* __restrict__ a) {
    fp8ort_pdl_wait();  // launched with pdl: the kernel before it may still run
    fp8ort_pdl_release();
    constexpr int kK = KH * KW * C, kWords = (kK + 15) / 16 * 4;
    constexpr int kRowBytes = KW * C;                 // one kernel row's bytes of X, contiguous at dilation 1
    constexpr int kNorm = (kRowBytes + 3) / 4;        // words holding them once shifted to a word boundary
    constexpr int kLoad = kNorm + 1;                  // aligned words read to cover them at any misalignment
    constexpr int kLastBytes = kRowBytes - 4 * (kNorm - 1);
    __shared__ uint4 staged[kI2cPixelThreads * kWords / 4];
    const int first = static_cast<int>(blockIdx.x) * kI2cPixelThreads;
    const int r = first + static_cast<int>(threadIdx.x);
    uint32_t w[kWords];
#pragma unroll
    for (int i = 0; i < kWords; ++i) w[i] = 0u;
    if (r < rows) {
        const int in_h = static_cast<int>(g.in_h), in_w = static_cast<int>(g.in_w);
        const uint32_t row = static_cast<uint32_t>(row0 + r), out_w = static_cast<uint32_t>(g.out_w);
        const uint32_t t = row / out_w, ox = row - t * out_w;
        const uint32_t b = t / static_cast<uint32_t>(g.out_h), oy = t - b * static_cast<uint32_t>(g.out_h);
        const int iy0 = static_cast<int>(oy) * static_cast<int>(g.stride_h) - static_cast<int>(g.pad_top);
        const int ix0 = static_cast<int>(ox) * static_cast<int>(g.stride_w) - static_cast<int>(g.pad_left);
        const int dh = static_cast<int>(g.dilation_h), dw = static_cast<int>(g.dilation_w);
        const bool inside_w = dw == 1 && ix0 >= 0 && ix0 + KW - 1 < in_w;
        const uintptr_t x_begin = reinterpret_cast<uintptr_t>(x), x_end = x_begin + static_cast<uintptr_t>(g.x_bytes);
#pragma unroll
        for (int ky = 0; ky < KH; ++ky) {
            const int iy = iy0 + ky * dh;
            if (iy < 0 || iy >= in_h) continue;
            const uint8_t* xr = x + (static_cast<uint32_t>(b) * static_cast<uint32_t>(in_h) + static_cast<uint32_t>(iy)) *
                                        static_cast<uint32_t>(in_w) * C;
            const uintptr_t start = reinterpret_cast<uintptr_t>(xr) + static_cast<uintptr_t>(inside_w ? ix0 * C : 0);
            const uintptr_t base = start & ~uintptr_t{3};
            if (inside_w && base >= x_begin && base + 4 * kLoad <= x_end) {
                // the row's bytes as words from a word boundary, then into A at byte ky * kRowBytes (compile time)
                const uint32_t* src = reinterpret_cast<const uint32_t*>(base);
                uint32_t ld[kLoad];
#pragma unroll
                for (int j = 0; j < kLoad; ++j) ld[j] = src[j];
                const uint32_t shift = static_cast<uint32_t>(start - base) * 8;
#pragma unroll
                for (int j = 0; j < kNorm; ++j) {
                    uint32_t v = __funnelshift_r(ld[j], ld[j + 1], shift);
                    if constexpr (kLastBytes < 4) {  // (a shift by 32 is undefined, even where never run)
                        if (j == kNorm - 1) v &= (1u << (8 * kLastBytes)) - 1u;
                    }
                    const int pos = ky * kRowBytes + 4 * j, d = pos % 4;  // compile-time once unrolled
                    w[pos / 4] |= v << (8 * d);
                    if (d != 0 && pos / 4 + 1 < kWords) w[pos / 4 + 1] |= v >> (32 - 8 * d);
                }
                continue;
            }
#pragma unroll
            for (int kx = 0; kx < KW; ++kx) {
                const int ix = ix0 + kx * dw;
                if (ix < 0 || ix >= in_w) continue;
#pragma unroll
                for (int c = 0; c < C; ++c) {
                    const int k = (ky * KW + kx) * C + c;
                    w[k / 4] |= static_cast<uint32_t>(xr[ix * C + c]) << (8 * (k % 4));
                }
            }
        }
    }
    // the block's rows are contiguous in A: staged in shared memory, then stored 16 bytes per thread and step
#pragma unroll
    for (int q = 0; q < kWords / 4; ++q)
        staged[threadIdx.x * (kWords / 4) + q] = make_uint4(w[4 * q], w[4 * q + 1], w[4 * q + 2], w[4 * q + 3]);
    __syncthreads();
    const int block_rows = rows - first < kI2cPixelThreads ? rows - first : kI2cPixelThreads;
    uint4* dst = reinterpret_cast<uint4*>(a + static_cast<size_t>(first) * (kWords * 4));
    for (int i = static_cast<int>(threadIdx.x); i < block_rows * (kWords / 4); i += kI2cPixelThreads) dst[i] = staged[i];
}

// The packed weight's rows [n][k] (k < K) padded with +0 to kp bytes.
__global__ void pad_rows_kernel(const uint8_t* __restrict__ w, int64_t n, int k, int kp, uint8_t* __restrict__ out) {
    fp8ort_pdl_wait();  // launched with pdl: the kernel before it may still read the workspace this one writes
    fp8ort_pdl_release();
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n * kp;
         i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
        const int64_t row = i / kp;
        const int col = static_cast<int>(i - row * kp);
        out[i] = col < k ? w[row * k + col] : 0;
    }
}

std::atomic<int> g_im2col{0};  // fp8ort_conv_set_im2col: 0 automatic, 1 off, 2 on

// fp8ort_conv_set_im2col's choice, or else FP8ORT_IM2COL=on|off from the environment (read once); on when unset.
bool im2col_wanted() {
    static const int from_env = on_off_from_env("FP8ORT_IM2COL");
    const int set = g_im2col.load();
    return (set != 0 ? set : from_env) != 1;
}

int64_t im2col_k(const fp8ort_conv_shape& s) { return s.kernel_h * s.kernel_w * s.in_c; }
int64_t im2col_kp(const fp8ort_conv_shape& s) { return (im2col_k(s) + 15) / 16 * 16; }
int64_t im2col_chunk_rows(const fp8ort_conv_shape& s, int64_t oh, int64_t ow) {
    const int64_t rows = s.batch * oh * ow;
    return rows < kI2cChunkRows ? rows : kI2cChunkRows;
}
size_t im2col_weight_bytes(const fp8ort_conv_shape& s) {
    return static_cast<size_t>((s.out_c * im2col_kp(s) + 15) / 16 * 16);
}
// Workspace of the im2col route: the padded weight, then one chunk of A.
size_t im2col_bytes(const fp8ort_conv_shape& s, int64_t oh, int64_t ow) {
    return im2col_weight_bytes(s) + static_cast<size_t>(im2col_chunk_rows(s, oh, ow) * im2col_kp(s));
}

// Whether the im2col route takes a shape (given its workspace): group 1, at most 4 input channels, a kernel larger
// than 3x3 (3x3 stems take the few-channel kernel, or the padded implicit GEMM when it is off: K = 27 would be the
// small-K GEMM here), not a shape the few-channel kernel takes, and a GEMM the sm90a kernel runs; no kernel override
// (A/B runs keep the padded form).
bool im2col_takes(fp8ort_fp8_format f, const fp8ort_conv_shape& s, int64_t oh, int64_t ow) {
    if (!im2col_wanted() || gemm_kernel_override() != 0 || conv_kernel_override() != 0) return false;
    if (s.group != 1 || s.in_c > 4 || s.kernel_h * s.kernel_w <= 9 || im2col_k(s) > 1024 || s.batch <= 0) return false;
    if (few_c_supported(f, s, oh, ow, kAnyOutput)) return false;
    if (s.in_h * s.in_w * s.in_c >= (int64_t{1} << 31) || s.out_c * im2col_kp(s) >= (int64_t{1} << 31)) return false;
    return gemm_takes_sm90(f, im2col_chunk_rows(s, oh, ow), s.out_c, im2col_kp(s));
}

// Whether a shape takes im2col_pixel_kernel: a 7x7 kernel over 3 or 4 channels, sizes within 32-bit indices.
bool im2col_pixel_applies(const fp8ort_conv_shape& s, int64_t oh, int64_t ow) {
    constexpr int64_t kLimit = int64_t{1} << 31;
    return s.kernel_h == 7 && s.kernel_w == 7 && (s.in_c == 3 || s.in_c == 4) && s.batch * oh * ow < kLimit &&
           s.batch * s.in_h * s.in_w * s.in_c < kLimit && s.in_h + s.pad_top + s.pad_bottom < kLimit / 2 &&
           s.in_w + s.pad_left + s.pad_right < kLimit / 2 && oh * s.stride_h < kLimit / 2 &&
           ow * s.stride_w < kLimit / 2 && 7 * s.dilation_h < kLimit / 2 && 7 * s.dilation_w < kLimit / 2;
}

int64_t output_element_bytes(fp8ort_dtype t) {
    return t == FP8ORT_FLOAT ? 4 : (t == FP8ORT_FLOAT16 || t == FP8ORT_BFLOAT16) ? 2 : 1;
}

// The epilogue of the rows from row0 on (the chunked routes below): Y and Z start row0 rows further, the per-column
// constants stay.
epilogue_args epilogue_from_row(const epilogue_args& ep, int64_t row0) {
    epilogue_args e = ep;
    e.y = static_cast<uint8_t*>(ep.y) + row0 * ep.ld * output_element_bytes(ep.y_type);
    if (ep.z) e.z = static_cast<const uint8_t*>(ep.z) + row0 * ep.ld * output_element_bytes(ep.z_type);
    return e;
}

fp8ort_status launch_im2col(const uint8_t* x, const uint8_t* w, fp8ort_fp8_format f, const fp8ort_conv_shape& s,
                            int64_t oh, int64_t ow, const epilogue_args& ep, void* workspace, hipStream_t stream) {
    im2col_geometry g;
    g.in_h = s.in_h, g.in_w = s.in_w, g.out_h = oh, g.out_w = ow, g.stride_h = s.stride_h, g.stride_w = s.stride_w;
    g.pad_top = s.pad_top, g.pad_left = s.pad_left, g.dilation_h = s.dilation_h, g.dilation_w = s.dilation_w;
    g.in_c = static_cast<int>(s.in_c), g.kernel_w = static_cast<int>(s.kernel_w);
    g.k = static_cast<int>(im2col_k(s)), g.kp = static_cast<int>(im2col_kp(s));
    g.x_bytes = s.batch * s.in_h * s.in_w * s.in_c;
    uint8_t* w_rows = static_cast<uint8_t*>(workspace);
    uint8_t* a = w_rows + im2col_weight_bytes(s);
    const auto grid_for = [](int64_t items) {
        const int64_t blocks = (items + kI2cThreads - 1) / kI2cThreads, most = int64_t{multiprocessors()} * 16;
        return static_cast<unsigned>(blocks < most ? blocks : most);
    };
    const bool pdl = pdl_wanted();
    launch_kernel(pdl, pad_rows_kernel, dim3(grid_for(s.out_c * g.kp)), dim3(kI2cThreads), 0, stream, w, s.out_c, g.k,
                  g.kp, w_rows);
    FP8ORT_TRY(check_launch("fp8ort_conv_nhwc (im2col weight)"));
    const int64_t rows = s.batch * oh * ow, chunk = im2col_chunk_rows(s, oh, ow);
    const sm90_variant variant = sm90_default_variant(g.kp, s.out_c);
    const bool pixel = im2col_pixel_applies(s, oh, ow);
    for (int64_t row0 = 0; row0 < rows; row0 += chunk) {
        const int64_t n = rows - row0 < chunk ? rows - row0 : chunk;
        if (!pixel) {
            launch_kernel(pdl, im2col_kernel, dim3(grid_for(n * (g.kp / 16))), dim3(kI2cThreads), 0, stream, x, g,
                          row0, n, a);
        } else {
            const unsigned blocks = static_cast<unsigned>((n + kI2cPixelThreads - 1) / kI2cPixelThreads);
            auto kernel = s.in_c == 3 ? im2col_pixel_kernel<7, 7, 3> : im2col_pixel_kernel<7, 7, 4>;
            launch_kernel(pdl, kernel, dim3(blocks), dim3(kI2cPixelThreads), 0, stream, x, g, row0,
                          static_cast<int>(n), a);
        }
        FP8ORT_TRY(check_launch("fp8ort_conv_nhwc (im2col)"));
        const epilogue_args e = epilogue_from_row(ep, row0);
        FP8ORT_TRY(launch_gemm_sm90(a, w_rows, f, n, s.out_c, g.kp, variant, e, sm90_split{}, stream));
    }
    return FP8ORT_OK;
}

// ---- Strided 1x1 convolutions (ResNet's downsampling shortcuts) through a subsampled copy of X ----
// A 1x1 convolution at stride 2 reads every other pixel of every other row: the implicit GEMM gathered those rows
// with its producer threads for every column tile (ResNet-50's 256 -> 512 shortcut at batch 256: 0.55 ms on an H100
// against cuDNN FP16's 0.13, bench/NOTES.md). Here the rows are copied once into the caller's workspace, 16 MB of
// them at a time (written and read back in L2), and the TMA GEMM runs on each chunk, as a stride-1 1x1 convolution
// does on X itself; the packed weight [out_c, 1, 1, in_c] is its B.
constexpr int64_t kSubChunkBytes = int64_t{1} << 24;

struct subsample_geometry {
    uint32_t in_h, in_w, stride_h, stride_w, out_h, out_w;
    uint32_t vecs;  // 16-byte pieces per pixel: in_c / 16
    fast_div by_vecs, by_out_w, by_out_h;
};

// A[r] = X[b, oy * stride_h, ox * stride_w, :] for rows row0 + r, one 16-byte piece per thread and step; X and the
// rows hold fewer than 2^31 bytes (subsample_takes), so 32-bit indices.
__global__ void __launch_bounds__(kI2cThreads)
    subsample_kernel(const uint4* __restrict__ x, subsample_geometry g, uint32_t row0, uint32_t items,
                     uint4* __restrict__ a) {
    fp8ort_pdl_wait();  // launched with pdl: the GEMM of the chunk before may still read A
    fp8ort_pdl_release();
    const uint32_t step = gridDim.x * blockDim.x;  // items + step < 2^32
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < items; i += step) {
        const uint32_t r = g.by_vecs.div(i), j = i - r * g.vecs;
        const uint32_t row = row0 + r;
        const uint32_t t = g.by_out_w.div(row), ox = row - t * g.out_w;
        const uint32_t b = g.by_out_h.div(t), oy = t - b * g.out_h;
        a[i] = x[((b * g.in_h + oy * g.stride_h) * g.in_w + ox * g.stride_w) * g.vecs + j];
    }
}

std::atomic<int> g_strided_1x1{0};  // fp8ort_conv_set_strided_1x1: 0 automatic, 1 off, 2 on

// fp8ort_conv_set_strided_1x1's choice, or else FP8ORT_STRIDED_1X1=on|off from the environment (read once); on when
// unset.
bool subsample_wanted() {
    static const int from_env = on_off_from_env("FP8ORT_STRIDED_1X1");
    const int set = g_strided_1x1.load();
    return (set != 0 ? set : from_env) != 1;
}

int64_t subsample_chunk_rows(const fp8ort_conv_shape& s, int64_t oh, int64_t ow) {
    const int64_t rows = s.batch * oh * ow, most = kSubChunkBytes / s.in_c / 128 * 128;
    const int64_t chunk = most > 128 ? most : 128;
    return rows < chunk ? rows : chunk;
}
size_t subsample_bytes(const fp8ort_conv_shape& s, int64_t oh, int64_t ow) {
    return static_cast<size_t>(subsample_chunk_rows(s, oh, ow) * s.in_c);
}

// Whether the subsampling route takes a shape (given its workspace and 16-byte aligned X and weight): a 1x1
// kernel, group 1, a stride above 1, no padding, in_c % 16 == 0, X and the rows of A under 2^31 bytes, and a GEMM
// the sm90a kernel runs; no kernel override (A/B runs of the convolution variants keep the implicit GEMM).
bool subsample_takes(fp8ort_fp8_format f, const fp8ort_conv_shape& s, int64_t oh, int64_t ow) {
    if (!subsample_wanted() || gemm_kernel_override() != 0 || conv_kernel_override() != 0) return false;
    if (s.kernel_h != 1 || s.kernel_w != 1 || s.group != 1 || (s.stride_h == 1 && s.stride_w == 1)) return false;
    if (s.pad_top != 0 || s.pad_left != 0 || s.pad_bottom != 0 || s.pad_right != 0) return false;
    if (s.in_c % 16 != 0 || s.batch <= 0 || oh <= 0 || ow <= 0) return false;
    constexpr int64_t kLimit = int64_t{1} << 31;
    if (s.batch * s.in_h * s.in_w * s.in_c >= kLimit || s.batch * oh * ow * s.in_c >= kLimit) return false;
    return gemm_takes_sm90(f, subsample_chunk_rows(s, oh, ow), s.out_c, s.in_c);
}

fp8ort_status launch_subsample(const uint8_t* x, const uint8_t* w, fp8ort_fp8_format f, const fp8ort_conv_shape& s,
                               int64_t oh, int64_t ow, const epilogue_args& ep, void* workspace, hipStream_t stream) {
    subsample_geometry g;
    g.in_h = static_cast<uint32_t>(s.in_h), g.in_w = static_cast<uint32_t>(s.in_w);
    g.stride_h = static_cast<uint32_t>(s.stride_h), g.stride_w = static_cast<uint32_t>(s.stride_w);
    g.out_h = static_cast<uint32_t>(oh), g.out_w = static_cast<uint32_t>(ow);
    g.vecs = static_cast<uint32_t>(s.in_c / 16);
    g.by_vecs = fast_div::make(g.vecs), g.by_out_w = fast_div::make(g.out_w), g.by_out_h = fast_div::make(g.out_h);
    uint4* a = static_cast<uint4*>(workspace);
    const int64_t rows = s.batch * oh * ow, chunk = subsample_chunk_rows(s, oh, ow);
    const sm90_variant variant = sm90_default_variant(s.in_c, s.out_c);
    const int64_t most_blocks = int64_t{multiprocessors()} * 16;
    const bool pdl = pdl_wanted();
    for (int64_t row0 = 0; row0 < rows; row0 += chunk) {
        const int64_t n = rows - row0 < chunk ? rows - row0 : chunk;
        const int64_t items = n * g.vecs, blocks = (items + kI2cThreads - 1) / kI2cThreads;
        launch_kernel(pdl, subsample_kernel, dim3(static_cast<unsigned>(blocks < most_blocks ? blocks : most_blocks)),
                      dim3(kI2cThreads), 0, stream, reinterpret_cast<const uint4*>(x), g, static_cast<uint32_t>(row0),
                      static_cast<uint32_t>(items), a);
        FP8ORT_TRY(check_launch("fp8ort_conv_nhwc (subsample)"));
        const epilogue_args e = epilogue_from_row(ep, row0);
        FP8ORT_TRY(launch_gemm_sm90(reinterpret_cast<const uint8_t*>(a), w, f, n, s.out_c, s.in_c, variant, e,
                                    sm90_split{}, stream));
    }
    return FP8ORT_OK;
}

// Depthwise: the vectorized kernel where the sizes allow 32-bit indices, else the 64-bit one.
template <fp8ort_fp8_format F>
fp8ort_status launch_depthwise(const uint8_t* x, const uint8_t* w, const fp8ort_conv_shape& s, int64_t oh,
                               int64_t ow, const epilogue_args& ep, hipStream_t stream) {
    if constexpr (F == FP8ORT_E4M3FN)
        if (tile_supported(F, s, oh, ow, x, w, ep.y_type)) return launch_depthwise_tile(x, w, s, oh, ow, ep, stream);
    constexpr int64_t kLimit = int64_t{1} << 31;
    if (s.batch * s.in_h * s.in_w * s.in_c < kLimit && s.batch * oh * ow * s.out_c < kLimit &&
        s.kernel_h * s.kernel_w * s.in_c < kLimit) {
        const auto aligned = [&](int v) {
            return s.in_c % v == 0 && reinterpret_cast<uintptr_t>(x) % v == 0 && reinterpret_cast<uintptr_t>(w) % v == 0;
        };
        if (aligned(8)) return launch_depthwise_vec<F, 8>(x, w, s, oh, ow, ep, stream);
        if (aligned(4)) return launch_depthwise_vec<F, 4>(x, w, s, oh, ow, ep, stream);
        return launch_depthwise_vec<F, 1>(x, w, s, oh, ow, ep, stream);
    }
    const int64_t total = s.batch * oh * ow * s.out_c;
    const int64_t blocks = (total + kDepthwiseThreads - 1) / kDepthwiseThreads;
    depthwise_wide_kernel<F><<<static_cast<unsigned>(blocks < kMaxDepthwiseBlocks ? blocks : kMaxDepthwiseBlocks),
                               kDepthwiseThreads, 0, stream>>>(x, w, s, oh, ow, ep);
    return check_launch("fp8ort_conv_nhwc (depthwise)");
}

fp8ort_status check_shape(const char* op, const fp8ort_conv_shape* s) {
    if (!s) return fail(FP8ORT_INVALID_ARGUMENT, "%s: shape is NULL", op);
    if (s->batch < 0 || s->in_h <= 0 || s->in_w <= 0 || s->in_c <= 0 || s->out_c <= 0 || s->kernel_h <= 0 ||
        s->kernel_w <= 0)
        return fail(FP8ORT_INVALID_ARGUMENT, "%s: sizes must be positive (batch may be 0)", op);
    if (s->stride_h <= 0 || s->stride_w <= 0 || s->dilation_h <= 0 || s->dilation_w <= 0)
        return fail(FP8ORT_INVALID_ARGUMENT, "%s: strides and dilations must be positive", op);
    if (s->pad_top < 0 || s->pad_left < 0 || s->pad_bottom < 0 || s->pad_right < 0)
        return fail(FP8ORT_INVALID_ARGUMENT, "%s: pads must not be negative", op);
    if (s->group <= 0 || s->in_c % s->group || s->out_c % s->group)
        return fail(FP8ORT_INVALID_ARGUMENT, "%s: group=%lld must divide in_c=%lld and out_c=%lld", op,
                    static_cast<long long>(s->group), static_cast<long long>(s->in_c), static_cast<long long>(s->out_c));
    if (fp8ort_conv_out_h(s) <= 0 || fp8ort_conv_out_w(s) <= 0)
        return fail(FP8ORT_INVALID_ARGUMENT, "%s: the kernel does not fit the padded input (output would be %lldx%lld)",
                    op, static_cast<long long>(fp8ort_conv_out_h(s)), static_cast<long long>(fp8ort_conv_out_w(s)));
    if (s->in_h > (1 << 30) || s->in_w > (1 << 30) || s->stride_h > (1 << 20) || s->stride_w > (1 << 20) ||
        s->dilation_h > (1 << 20) || s->dilation_w > (1 << 20) || s->pad_top > (1 << 20) || s->pad_left > (1 << 20))
        return fail(FP8ORT_INVALID_ARGUMENT, "%s: spatial sizes, strides, dilations or pads too large", op);
    if (s->in_h * s->in_w >= (int64_t{1} << 31) || s->in_c >= (int64_t{1} << 24) ||
        s->kernel_h * s->kernel_w * (s->in_c / s->group) >= (int64_t{1} << 30) || s->kernel_h > (1 << 20) ||
        s->kernel_w > (1 << 20))
        return fail(FP8ORT_INVALID_ARGUMENT, "%s: image (%lldx%lld), channels (%lld) or kernel too large for the GPU kernel",
                    op, static_cast<long long>(s->in_h), static_cast<long long>(s->in_w), static_cast<long long>(s->in_c));
    return FP8ORT_OK;
}

// Whether the sm90a implicit-GEMM convolution takes a group-1 shape (pointers unchecked when null).
bool conv_takes_sm90(fp8ort_fp8_format format, const fp8ort_conv_shape& s, const void* x, const void* w) {
    return gemm_kernel_override() != 1 && device_is_sm90() && sm90_conv_can_run(format, s, x, w);
}

template <fp8ort_fp8_format F>
fp8ort_status launch_conv(const uint8_t* x, const uint8_t* w, const fp8ort_conv_shape& s, const epilogue_args& ep,
                          const sm90_split& split, hipStream_t stream) {
    const int64_t oh = fp8ort_conv_out_h(&s), ow = fp8ort_conv_out_w(&s);
    const int64_t cg = s.in_c / s.group, mg = s.out_c / s.group;
    if (cg == 1 && mg == 1) return launch_depthwise<F>(x, w, s, oh, ow, ep, stream);
    if constexpr (F == FP8ORT_E4M3FN)
        if (few_c_supported(F, s, oh, ow, ep.y_type)) return launch_few_c(x, w, s, oh, ow, ep, stream);
    if (conv_takes_sm90(F, s, x, w))
        return launch_conv_sm90(x, w, F, s, oh, ow, sm90_conv_variant(conv_kernel_override(), s), ep, split, stream);
    FP8ORT_TRY(core_supports("fp8ort_conv_nhwc", F));
    const conv_source src = make_conv_source<kChunksPerThread>(x, s, oh, ow);
    const bool vec_a = cg % 16 == 0 && s.in_c % 16 == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0;
    return launch_core<F>(src, vec_a, w, src.rows, mg, src.k, s.group, ep, stream, "fp8ort_conv_nhwc");
}

}  // namespace
}  // namespace fp8ort

using namespace fp8ort;

extern "C" void fp8ort_conv_set_few_channels(int which) { g_few_channels.store(which == 1 || which == 2 ? which : 0); }

extern "C" void fp8ort_conv_set_im2col(int which) { g_im2col.store(which == 1 || which == 2 ? which : 0); }
extern "C" void fp8ort_conv_set_strided_1x1(int which) { g_strided_1x1.store(which == 1 || which == 2 ? which : 0); }

extern "C" void fp8ort_conv_set_depthwise_variant(fp8ort_depthwise_variant which) {
    g_depthwise_variant.store(which == FP8ORT_DEPTHWISE_PIXEL || which == FP8ORT_DEPTHWISE_TILE ? which
                                                                                               : FP8ORT_DEPTHWISE_AUTO);
}

extern "C" int64_t fp8ort_conv_out_h(const fp8ort_conv_shape* s) {
    return (s->in_h + s->pad_top + s->pad_bottom - s->dilation_h * (s->kernel_h - 1) - 1) / s->stride_h + 1;
}
extern "C" int64_t fp8ort_conv_out_w(const fp8ort_conv_shape* s) {
    return (s->in_w + s->pad_left + s->pad_right - s->dilation_w * (s->kernel_w - 1) - 1) / s->stride_w + 1;
}
extern "C" size_t fp8ort_conv_packed_bytes(const fp8ort_conv_shape* s) {
    if (!s || s->group <= 0) return 0;
    return static_cast<size_t>(s->out_c * (s->in_c / s->group) * s->kernel_h * s->kernel_w);
}

// One input and one output channel per group: the depthwise kernel and its [kH, kW, C] packed weight.
static bool is_depthwise(const fp8ort_conv_shape* s) { return s->in_c == s->group && s->out_c == s->group; }

static bool is_pointwise(const fp8ort_conv_shape* s) {
    return s->kernel_h == 1 && s->kernel_w == 1 && s->stride_h == 1 && s->stride_w == 1 && s->group == 1 &&
           s->pad_top == 0 && s->pad_left == 0 && s->pad_bottom == 0 && s->pad_right == 0;
}

extern "C" const char* fp8ort_conv_kernel_name(fp8ort_fp8_format format, const fp8ort_conv_shape* s) {
    if (check_shape("fp8ort_conv_kernel_name", s) != FP8ORT_OK) return "invalid";
    if (is_depthwise(s))
        return tile_supported(format, *s, fp8ort_conv_out_h(s), fp8ort_conv_out_w(s), nullptr, nullptr, kAnyOutput)
                   ? "depthwise_tile"
                   : "depthwise";
    if (is_pointwise(s)) return fp8ort_gemm_kernel_name(format, s->batch * s->in_h * s->in_w, s->out_c, s->in_c);
    if (few_c_supported(format, *s, fp8ort_conv_out_h(s), fp8ort_conv_out_w(s), kAnyOutput)) return "few_channels";
    if (im2col_takes(format, *s, fp8ort_conv_out_h(s), fp8ort_conv_out_w(s))) return "im2col_wgmma_sm90a";
    if (subsample_takes(format, *s, fp8ort_conv_out_h(s), fp8ort_conv_out_w(s))) return "subsample_wgmma_sm90a";
    if (conv_takes_sm90(format, *s, nullptr, nullptr))
        return sm90_conv_variant(conv_kernel_override(), *s) == sm90_variant::two_blocks ? "wgmma_sm90a_2blocks"
                                                                                      : "wgmma_sm90a";
#if defined(FP8ORT_CUDA)
    return "mma_sync";
#else
    return "amd_matrix_core";
#endif
}

extern "C" int64_t fp8ort_conv_padded_in_c(fp8ort_fp8_format format, const fp8ort_conv_shape* s) {
    if (check_shape("fp8ort_conv_padded_in_c", s) != FP8ORT_OK || s->group != 1 || s->in_c % 16 == 0) return 0;
    if (few_c_supported(format, *s, fp8ort_conv_out_h(s), fp8ort_conv_out_w(s), kAnyOutput)) return 0;
    if (im2col_takes(format, *s, fp8ort_conv_out_h(s), fp8ort_conv_out_w(s))) return 0;
    fp8ort_conv_shape p = *s;
    p.in_c = (s->in_c + 15) / 16 * 16;
    if (is_pointwise(&p)) return gemm_takes_sm90(format, p.batch * p.in_h * p.in_w, p.out_c, p.in_c) ? p.in_c : 0;
    return conv_takes_sm90(format, p, nullptr, nullptr) ? p.in_c : 0;
}

static fp8ort_status pack_weight(const char* op, const void* w, const fp8ort_conv_shape* s, int64_t w_in_c,
                                 void* packed, void* stream) {
    FP8ORT_TRY(check_shape(op, s));
    if (!w || !packed) return fail(FP8ORT_INVALID_ARGUMENT, "%s: NULL pointer", op);
    const int64_t cg_out = s->in_c / s->group;
    const int64_t total = static_cast<int64_t>(fp8ort_conv_packed_bytes(s));
    const int64_t blocks = (total + 255) / 256;
    const unsigned grid = static_cast<unsigned>(blocks < 65536 ? blocks : 65536);
    if (is_depthwise(s)) {  // w_in_c == in_c here: the padded packing needs group 1, so in_c == 1
        pack_depthwise_weight_kernel<<<grid, 256, 0, as_stream(stream)>>>(
            static_cast<const uint8_t*>(w), s->out_c, s->kernel_h * s->kernel_w, static_cast<uint8_t*>(packed));
    } else {
        pack_conv_weight_kernel<<<grid, 256, 0, as_stream(stream)>>>(static_cast<const uint8_t*>(w), s->out_c,
                                                                    w_in_c / s->group, s->kernel_h, s->kernel_w,
                                                                    cg_out, static_cast<uint8_t*>(packed));
    }
    FP8ORT_TRY(check_launch(op));
    return ok();
}

extern "C" fp8ort_status fp8ort_conv_pack_weight(const void* w, const fp8ort_conv_shape* s, void* packed, void* stream) {
    return pack_weight("fp8ort_conv_pack_weight", w, s, s ? s->in_c : 0, packed, stream);
}

extern "C" fp8ort_status fp8ort_conv_pack_weight_padded(const void* w, const fp8ort_conv_shape* s, int64_t w_in_c,
                                                        void* packed, void* stream) {
    const char* op = "fp8ort_conv_pack_weight_padded";
    if (s && (s->group != 1 || w_in_c <= 0 || w_in_c > s->in_c))
        return fail(FP8ORT_INVALID_ARGUMENT, "%s: needs group 1 and 0 < w_in_c <= in_c; got group %lld, w_in_c %lld, "
                    "in_c %lld", op, static_cast<long long>(s->group), static_cast<long long>(w_in_c),
                    static_cast<long long>(s->in_c));
    return pack_weight(op, w, s, w_in_c, packed, stream);
}

// Values of Y: batch * out_h * out_w * out_c.
static int64_t conv_outputs(const fp8ort_conv_shape* s) {
    return s->batch * fp8ort_conv_out_h(s) * fp8ort_conv_out_w(s) * s->out_c;
}

// K splits of the sm90a convolution for this shape (1: it does not take that kernel, or does not split); x and w
// null: alignment not checked.
static int conv_splits(fp8ort_fp8_format format, const fp8ort_conv_shape& s, const void* x, const void* w) {
    if (!conv_takes_sm90(format, s, x, w) || s.batch <= 0)
        return 1;
    return sm90_conv_splits(s, fp8ort_conv_out_h(&s), fp8ort_conv_out_w(&s),
                            sm90_conv_variant(conv_kernel_override(), s));
}

extern "C" size_t fp8ort_conv_workspace_bytes(fp8ort_fp8_format format, const fp8ort_conv_shape* s) {
    if (check_shape("fp8ort_conv_workspace_bytes", s) != FP8ORT_OK || !is_fp8_type(format)) return 0;
    if (is_pointwise(s)) return fp8ort_gemm_workspace_bytes(format, s->batch * s->in_h * s->in_w, s->out_c, s->in_c);
    const int64_t oh = fp8ort_conv_out_h(s), ow = fp8ort_conv_out_w(s);
    if (im2col_takes(format, *s, oh, ow)) return im2col_bytes(*s, oh, ow);
    if (subsample_takes(format, *s, oh, ow)) return subsample_bytes(*s, oh, ow);
    return sm90_split_bytes(conv_splits(format, *s, nullptr, nullptr), conv_outputs(s));
}

extern "C" fp8ort_status fp8ort_conv_nhwc(const void* x, const void* w_packed, fp8ort_fp8_format format,
                                          const fp8ort_conv_shape* s, const fp8ort_epilogue* epilogue, void* y,
                                          void* stream) {
    return fp8ort_conv_nhwc_ws(x, w_packed, format, s, epilogue, y, nullptr, 0, stream);
}

extern "C" fp8ort_status fp8ort_conv_nhwc_ws(const void* x, const void* w_packed, fp8ort_fp8_format format,
                                             const fp8ort_conv_shape* s, const fp8ort_epilogue* epilogue, void* y,
                                             void* workspace, size_t workspace_bytes, void* stream) {
    const char* op = "fp8ort_conv_nhwc";
    FP8ORT_TRY(check_shape(op, s));
    if (!is_fp8_type(format)) return fail(FP8ORT_INVALID_ARGUMENT, "%s: format %s is not FP8", op, dtype_name(format));
    epilogue_args ep;
    FP8ORT_TRY(make_epilogue_args(op, epilogue, s->out_c, y, s->out_c, &ep));
    if (s->batch == 0) return ok();
    if (!x || !w_packed) return fail(FP8ORT_INVALID_ARGUMENT, "%s: X and the packed weight must not be NULL", op);
    // A 1x1, stride-1, unpadded, ungrouped convolution is the GEMM [batch*h*w, in_c] . [out_c, in_c]^T on NHWC
    // memory (the packed weight is already [N, K]): it takes the GEMM kernels (wgmma on sm90a).
    if (is_pointwise(s))
        return fp8ort_gemm_ws(x, w_packed, format, s->batch * s->in_h * s->in_w, s->out_c, s->in_c, epilogue, y,
                              workspace, workspace_bytes, stream);
    const uint8_t* x8 = static_cast<const uint8_t*>(x);
    const uint8_t* w8 = static_cast<const uint8_t*>(w_packed);
    const hipStream_t st = as_stream(stream);
    const int64_t oh = fp8ort_conv_out_h(s), ow = fp8ort_conv_out_w(s);
    // a stem with few channels and a large kernel: im2col into the workspace, then the GEMM (16-byte aligned pieces)
    if (im2col_takes(format, *s, oh, ow) && workspace && workspace_bytes >= im2col_bytes(*s, oh, ow) &&
        reinterpret_cast<uintptr_t>(workspace) % 16 == 0) {
        const fp8ort_status r = launch_im2col(x8, w8, format, *s, oh, ow, ep, workspace, st);
        return r == FP8ORT_OK ? ok() : r;
    }
    // a strided 1x1 convolution: its rows of X copied into the workspace, then the GEMM (16-byte aligned pieces)
    if (subsample_takes(format, *s, oh, ow) && workspace && workspace_bytes >= subsample_bytes(*s, oh, ow) &&
        reinterpret_cast<uintptr_t>(workspace) % 16 == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0 &&
        reinterpret_cast<uintptr_t>(w_packed) % 16 == 0) {
        const fp8ort_status r = launch_subsample(x8, w8, format, *s, oh, ow, ep, workspace, st);
        return r == FP8ORT_OK ? ok() : r;
    }
    const sm90_split split =
        sm90_split_for(conv_splits(format, *s, x, w_packed), conv_outputs(s), workspace, workspace_bytes);
    fp8ort_status r;
    switch (format) {
        case FP8ORT_E4M3FN: r = launch_conv<FP8ORT_E4M3FN>(x8, w8, *s, ep, split, st); break;
        case FP8ORT_E5M2: r = launch_conv<FP8ORT_E5M2>(x8, w8, *s, ep, split, st); break;
        case FP8ORT_E4M3FNUZ: r = launch_conv<FP8ORT_E4M3FNUZ>(x8, w8, *s, ep, split, st); break;
        default: r = launch_conv<FP8ORT_E5M2FNUZ>(x8, w8, *s, ep, split, st); break;
    }
    return r == FP8ORT_OK ? ok() : r;
}
