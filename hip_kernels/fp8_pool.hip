// FP8MaxPool on the GPU: 2-D max pooling of NHWC data (FP8, float32 or float16). One thread per (output pixel,
// group of V channels); FP8 with C % 4 == 0 and 4-byte aligned pointers loads and stores 4 channels as 32 bits
// (E4M3FN on NVIDIA: 16 channels as 128 bits where C % 16 == 0, compared as order keys, max_pool_e4m3_kernel).
// The rules of docs/operators.md: padding never wins, a NaN tap wins for good, ties go to the first tap.
#include "fp8_conv_source.h"  // fast_div
#include "fp8_numerics.h"
#include "fp8_status.h"

namespace fp8ort {
namespace {

constexpr int kPoolThreads = 256;
constexpr int kMaxPoolBlocks = 1 << 16;

// Element decoders: storage type and its exact float32 value.
template <fp8ort_fp8_format F>
struct Fp8Elem {
    using T = uint8_t;
    static constexpr bool kFp8 = true;
    static constexpr fp8ort_fp8_format kFormat = F;
    static __device__ __forceinline__ float decode(T v) { return decode_fp8<F>(v); }
};
struct F16Elem {
    using T = uint16_t;
    static constexpr bool kFp8 = false;
    static constexpr fp8ort_fp8_format kFormat = FP8ORT_E4M3FN;  // unused
    static __device__ __forceinline__ float decode(T v) { return fp8ort_half_bits_to_float(v); }
};
struct F32Elem {
    using T = float;
    static constexpr bool kFp8 = false;
    static constexpr fp8ort_fp8_format kFormat = FP8ORT_E4M3FN;  // unused
    static __device__ __forceinline__ float decode(T v) { return v; }
};

// V channels of one pixel; V == 4 over bytes is one 32-bit access.
template <class T, int V>
struct Lanes {
    T v[V];
};
template <class T, int V>
__device__ __forceinline__ Lanes<T, V> load_lanes(const T* p) {
    Lanes<T, V> r;
    if constexpr (V == 4 && sizeof(T) == 1) {
        const uint32_t w = *reinterpret_cast<const uint32_t*>(p);
        for (int j = 0; j < 4; ++j) r.v[j] = static_cast<T>((w >> (8 * j)) & 0xffu);
    } else {
        for (int j = 0; j < V; ++j) r.v[j] = p[j];
    }
    return r;
}
template <class T, int V>
__device__ __forceinline__ void store_lanes(T* p, const Lanes<T, V>& r) {
    if constexpr (V == 4 && sizeof(T) == 1) {
        uint32_t w = 0;
        for (int j = 0; j < 4; ++j) w |= static_cast<uint32_t>(r.v[j]) << (8 * j);
        *reinterpret_cast<uint32_t*>(p) = w;
    } else {
        for (int j = 0; j < V; ++j) p[j] = r.v[j];
    }
}

// The V lanes decoded: four FP8 codes at once through decode4_fp8 (the hardware conversion on sm_89+).
template <class E, int V>
__device__ __forceinline__ void decode_lanes(const Lanes<typename E::T, V>& in, float (&v)[V]) {
    if constexpr (V == 4 && sizeof(typename E::T) == 1 && E::kFp8) {
        const uint32_t w = static_cast<uint32_t>(in.v[0]) | (static_cast<uint32_t>(in.v[1]) << 8) |
                           (static_cast<uint32_t>(in.v[2]) << 16) | (static_cast<uint32_t>(in.v[3]) << 24);
        decode4_fp8<E::kFormat>(w, v);
    } else {
        for (int j = 0; j < V; ++j) v[j] = E::decode(in.v[j]);
    }
}

// The running maximum of V lanes over a window, by the rules above: the first tap starts it, a larger value or a
// NaN replaces it, a NaN is final; `out` holds the winning input elements.
template <class E, int V>
struct window_max {
    using T = typename E::T;
    float best[V];
    int state[V];  // 0: no tap yet, 1: a value, 2: NaN (final)
    Lanes<T, V> out;

    __device__ __forceinline__ window_max() {
        for (int j = 0; j < V; ++j) {
            best[j] = 0.0f;
            state[j] = 0;
            out.v[j] = T{};
        }
    }
    __device__ __forceinline__ void take(const Lanes<T, V>& in) {
        float v[V];
        decode_lanes<E, V>(in, v);
        for (int j = 0; j < V; ++j) {
            if (state[j] == 2) continue;
            if (state[j] == 0 || v[j] != v[j] || v[j] > best[j]) {
                best[j] = v[j];
                out.v[j] = in.v[j];
                state[j] = v[j] != v[j] ? 2 : 1;
            }
        }
    }
};

// Sizes below 2^31: 32-bit offsets and magic-number divisions (an int64 division per index cost most of the
// stem pool's time: 1.03 ms at batch 256 on the H200).
struct pool_geometry {
    int c, in_h, in_w, out_h, out_w, kernel_h, kernel_w, stride_h, stride_w, dilation_h, dilation_w, pad_top, pad_left;
    uint32_t count;
    fast_div by_groups, by_out_w, by_out_h;
};

template <class E, int V>
__global__ void __launch_bounds__(kPoolThreads)
    max_pool_nhwc_small_kernel(const typename E::T* __restrict__ x, typename E::T* __restrict__ y, pool_geometry g) {
    using T = typename E::T;
    const uint32_t step = gridDim.x * blockDim.x;  // count + step < 2^32
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < g.count; i += step) {
        const uint32_t pix = g.by_groups.div(i);
        const int c0 = static_cast<int>(i - pix * g.by_groups.d) * V;
        const uint32_t image_row = g.by_out_w.div(pix);
        const int ox = static_cast<int>(pix - image_row * g.out_w);
        const uint32_t n = g.by_out_h.div(image_row);
        const int oy = static_cast<int>(image_row - n * g.out_h);
        const int y0 = oy * g.stride_h - g.pad_top, x0 = ox * g.stride_w - g.pad_left;
        window_max<E, V> m;
        for (int ky = 0; ky < g.kernel_h; ++ky) {
            const int iy = y0 + ky * g.dilation_h;
            if (iy < 0 || iy >= g.in_h) continue;
            const T* row = x + (n * g.in_h + iy) * static_cast<uint32_t>(g.in_w) * g.c + c0;
            for (int kx = 0; kx < g.kernel_w; ++kx) {
                const int ix = x0 + kx * g.dilation_w;
                if (ix < 0 || ix >= g.in_w) continue;
                m.take(load_lanes<T, V>(row + static_cast<uint32_t>(ix) * g.c));
            }
        }
        store_lanes<T, V>(y + pix * static_cast<uint32_t>(g.c) + c0, m.out);
    }
}

#if defined(FP8ORT_CUDA)
// E4M3FN through order keys (NVIDIA): a code's key is monotone in its value (key = code ^ 0x80 for a clear sign bit,
// ~code for a set one; +0's key 0x80 lies above -0's 0x7f), and equal finite values are equal codes apart from +-0,
// so the largest key over a window names the winning element by the rules above, except where the window holds a
// NaN (it wins for good, the first in window order) or a -0 (which a later +0 must not overtake): a word of four
// lanes whose window holds either is taken again by window_max. Per tap and four lanes: the key, two byte moves and
// two 16-bit-lane maxima, against four decodes and four compare-and-select chains.
__device__ __forceinline__ uint32_t sign_bytes(uint32_t w) {  // 0xff in the bytes whose bit 7 is set, else 0
    uint32_t r;
    asm("prmt.b32 %0, %1, 0, 0xba98;" : "=r"(r) : "r"(w));
    return r;
}

struct e4m3_max4 {
    uint32_t lo = 0, hi = 0;  // the largest keys of lanes 0, 1 and of lanes 2, 3, as 16-bit lanes
    uint32_t special = 0;     // nonzero once a NaN or -0 code was seen in any lane

    __device__ __forceinline__ void take(uint32_t w) {
        const uint32_t key = w ^ (sign_bytes(w) | 0x80808080u);
        lo = __vmaxu2(lo, __byte_perm(key, 0u, 0x4140));
        hi = __vmaxu2(hi, __byte_perm(key, 0u, 0x4342));
        const uint32_t t = w ^ 0x80808080u;  // a zero byte where w holds -0
        special |= (((w & 0x7f7f7f7fu) + 0x01010101u) | ((t - 0x01010101u) & ~t)) & 0x80808080u;
    }
    __device__ __forceinline__ uint32_t codes() const {
        const uint32_t key = __byte_perm(lo, hi, 0x6420);
        return key ^ (~sign_bytes(key) | 0x80808080u);
    }
};

// C % 4 == 0 E4M3FN pooling with 32-bit offsets: NW words (4 channels each) of one output pixel per thread, NW = 4
// where C % 16 == 0 and X, Y are 16-byte aligned (one 16-byte load per tap), else 1.
template <int NW>
__global__ void __launch_bounds__(kPoolThreads)
    max_pool_e4m3_kernel(const uint8_t* __restrict__ x, uint8_t* __restrict__ y, pool_geometry g) {
    using E = Fp8Elem<FP8ORT_E4M3FN>;
    fp8ort_pdl_wait();  // launched with pdl: the convolution that wrote X may still run
    fp8ort_pdl_release();
    const uint32_t step = gridDim.x * blockDim.x;  // count + step < 2^32
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < g.count; i += step) {
        const uint32_t pix = g.by_groups.div(i);
        const int c0 = static_cast<int>(i - pix * g.by_groups.d) * (4 * NW);
        const uint32_t image_row = g.by_out_w.div(pix);
        const int ox = static_cast<int>(pix - image_row * g.out_w);
        const uint32_t n = g.by_out_h.div(image_row);
        const int oy = static_cast<int>(image_row - n * g.out_h);
        const int y0 = oy * g.stride_h - g.pad_top, x0 = ox * g.stride_w - g.pad_left;
        e4m3_max4 m[NW];
        bool any = false;
        for (int ky = 0; ky < g.kernel_h; ++ky) {
            const int iy = y0 + ky * g.dilation_h;
            if (iy < 0 || iy >= g.in_h) continue;
            const uint8_t* row = x + (n * g.in_h + iy) * static_cast<uint32_t>(g.in_w) * g.c + c0;
            for (int kx = 0; kx < g.kernel_w; ++kx) {
                const int ix = x0 + kx * g.dilation_w;
                if (ix < 0 || ix >= g.in_w) continue;
                const uint8_t* p = row + static_cast<uint32_t>(ix) * g.c;
                if constexpr (NW == 4) {
                    const uint4 q = *reinterpret_cast<const uint4*>(p);
                    m[0].take(q.x), m[1].take(q.y), m[2].take(q.z), m[3].take(q.w);
                } else {
                    m[0].take(*reinterpret_cast<const uint32_t*>(p));
                }
                any = true;
            }
        }
        uint32_t out[NW];
#pragma unroll
        for (int j = 0; j < NW; ++j) {
            out[j] = m[j].codes();
            if (any && m[j].special == 0) continue;
            window_max<E, 4> exact;  // a NaN or -0 in the window (or no tap at all): the rules tap by tap
            for (int ky = 0; ky < g.kernel_h; ++ky) {
                const int iy = y0 + ky * g.dilation_h;
                if (iy < 0 || iy >= g.in_h) continue;
                const uint8_t* row = x + (n * g.in_h + iy) * static_cast<uint32_t>(g.in_w) * g.c + c0 + 4 * j;
                for (int kx = 0; kx < g.kernel_w; ++kx) {
                    const int ix = x0 + kx * g.dilation_w;
                    if (ix < 0 || ix >= g.in_w) continue;
                    exact.take(load_lanes<uint8_t, 4>(row + static_cast<uint32_t>(ix) * g.c));
                }
            }
            out[j] = 0;
#pragma unroll
            for (int e = 0; e < 4; ++e) out[j] |= static_cast<uint32_t>(exact.out.v[e]) << (8 * e);
        }
        uint8_t* dst = y + pix * static_cast<uint32_t>(g.c) + c0;
        if constexpr (NW == 4)
            *reinterpret_cast<uint4*>(dst) = make_uint4(out[0], out[1], out[2], out[3]);
        else
            *reinterpret_cast<uint32_t*>(dst) = out[0];
    }
}
#endif

template <class E, int V>
__global__ void __launch_bounds__(kPoolThreads)
    max_pool_nhwc_kernel(const typename E::T* __restrict__ x, typename E::T* __restrict__ y, fp8ort_max_pool_params p,
                         int64_t count) {
    using T = typename E::T;
    const int64_t groups = p.c / V;
    const int64_t grid_stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += grid_stride) {
        const int64_t c0 = (i % groups) * V;
        const int64_t pix = i / groups;
        const int64_t ox = pix % p.out_w;
        const int64_t oy = (pix / p.out_w) % p.out_h;
        const int64_t n = pix / (p.out_w * p.out_h);
        const int64_t y0 = oy * p.stride_h - p.pad_top;
        const int64_t x0 = ox * p.stride_w - p.pad_left;
        window_max<E, V> m;
        for (int64_t ky = 0; ky < p.kernel_h; ++ky) {
            const int64_t iy = y0 + ky * p.dilation_h;
            if (iy < 0 || iy >= p.in_h) continue;
            for (int64_t kx = 0; kx < p.kernel_w; ++kx) {
                const int64_t ix = x0 + kx * p.dilation_w;
                if (ix < 0 || ix >= p.in_w) continue;
                m.take(load_lanes<T, V>(x + ((n * p.in_h + iy) * p.in_w + ix) * p.c + c0));
            }
        }
        store_lanes<T, V>(y + pix * p.c + c0, m.out);
    }
}

template <class E>
fp8ort_status launch_max_pool(const void* x, void* y, const fp8ort_max_pool_params* p, hipStream_t stream) {
    using T = typename E::T;
    const int64_t pixels = p->n * p->out_h * p->out_w;
    const bool vec = sizeof(T) == 1 && p->c % 4 == 0 && reinterpret_cast<uintptr_t>(x) % 4 == 0 &&
                     reinterpret_cast<uintptr_t>(y) % 4 == 0;
    const int64_t count = pixels * (vec ? p->c / 4 : p->c);
    const int64_t blocks64 = (count + kPoolThreads - 1) / kPoolThreads;
    const int blocks = static_cast<int>(blocks64 < kMaxPoolBlocks ? blocks64 : kMaxPoolBlocks);
    const T* xs = static_cast<const T*>(x);
    T* ys = static_cast<T*>(y);
    constexpr int64_t kLimit = int64_t{1} << 31;
    if (p->n * p->in_h * p->in_w * p->c < kLimit && pixels * p->c < kLimit && p->in_h < kLimit / 2 &&
        p->in_w < kLimit / 2 && p->kernel_h * p->dilation_h < kLimit / 2 && p->kernel_w * p->dilation_w < kLimit / 2 &&
        p->out_h * p->stride_h < kLimit / 2 && p->out_w * p->stride_w < kLimit / 2 && p->pad_top < kLimit / 2 &&
        p->pad_left < kLimit / 2) {
        const int v = vec ? 4 : 1;
        pool_geometry g;
        g.c = static_cast<int>(p->c), g.in_h = static_cast<int>(p->in_h), g.in_w = static_cast<int>(p->in_w);
        g.out_h = static_cast<int>(p->out_h), g.out_w = static_cast<int>(p->out_w);
        g.kernel_h = static_cast<int>(p->kernel_h), g.kernel_w = static_cast<int>(p->kernel_w);
        g.stride_h = static_cast<int>(p->stride_h), g.stride_w = static_cast<int>(p->stride_w);
        g.dilation_h = static_cast<int>(p->dilation_h), g.dilation_w = static_cast<int>(p->dilation_w);
        g.pad_top = static_cast<int>(p->pad_top), g.pad_left = static_cast<int>(p->pad_left);
        g.count = static_cast<uint32_t>(count);
        g.by_groups = fast_div::make(static_cast<uint32_t>(p->c / v));
        g.by_out_w = fast_div::make(static_cast<uint32_t>(p->out_w));
        g.by_out_h = fast_div::make(static_cast<uint32_t>(p->out_h));
#if defined(FP8ORT_CUDA)
        if constexpr (E::kFp8 && E::kFormat == FP8ORT_E4M3FN) {
            if (vec) {
                const bool wide = p->c % 16 == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0 &&
                                  reinterpret_cast<uintptr_t>(y) % 16 == 0;
                const int64_t words = wide ? p->c / 16 : p->c / 4;
                g.count = static_cast<uint32_t>(pixels * words);
                g.by_groups = fast_div::make(static_cast<uint32_t>(words));
                const int64_t nb = (pixels * words + kPoolThreads - 1) / kPoolThreads;
                const int grid = static_cast<int>(nb < kMaxPoolBlocks ? nb : kMaxPoolBlocks);
                const uint8_t* xb = reinterpret_cast<const uint8_t*>(xs);
                uint8_t* yb = reinterpret_cast<uint8_t*>(ys);
                launch_kernel(pdl_wanted(), wide ? max_pool_e4m3_kernel<4> : max_pool_e4m3_kernel<1>, dim3(grid),
                              dim3(kPoolThreads), 0, stream, xb, yb, g);
                return check_launch("fp8ort_max_pool_nhwc");
            }
        }
#endif
        if (vec)
            max_pool_nhwc_small_kernel<E, 4><<<blocks, kPoolThreads, 0, stream>>>(xs, ys, g);
        else
            max_pool_nhwc_small_kernel<E, 1><<<blocks, kPoolThreads, 0, stream>>>(xs, ys, g);
        return check_launch("fp8ort_max_pool_nhwc");
    }
    if (vec) {
        max_pool_nhwc_kernel<E, 4><<<blocks, kPoolThreads, 0, stream>>>(xs, ys, *p, count);
    } else {
        max_pool_nhwc_kernel<E, 1><<<blocks, kPoolThreads, 0, stream>>>(xs, ys, *p, count);
    }
    return check_launch("fp8ort_max_pool_nhwc");
}

}  // namespace
}  // namespace fp8ort

using namespace fp8ort;

extern "C" fp8ort_status fp8ort_max_pool_nhwc(const void* x, void* y, fp8ort_dtype type, const fp8ort_max_pool_params* p,
                                              void* stream) {
    const char* me = "fp8ort_max_pool_nhwc";
    if (!p) return fail(FP8ORT_INVALID_ARGUMENT, "%s: parameters are NULL", me);
    if (p->n < 0 || p->c < 0 || p->in_h < 0 || p->in_w < 0 || p->out_h < 0 || p->out_w < 0)
        return fail(FP8ORT_INVALID_ARGUMENT, "%s: negative size", me);
    if (p->kernel_h < 1 || p->kernel_w < 1 || p->stride_h < 1 || p->stride_w < 1 || p->dilation_h < 1 ||
        p->dilation_w < 1)
        return fail(FP8ORT_INVALID_ARGUMENT, "%s: kernel, strides and dilations must be >= 1", me);
    if (p->pad_top < 0 || p->pad_left < 0) return fail(FP8ORT_INVALID_ARGUMENT, "%s: negative padding", me);
    if (p->n * p->out_h * p->out_w * p->c == 0) return ok();
    if (!x || !y) return fail(FP8ORT_INVALID_ARGUMENT, "%s: x and y must be device pointers, got NULL", me);
    const hipStream_t s = as_stream(stream);
    fp8ort_status st;
    switch (type) {
        case FP8ORT_FLOAT: st = launch_max_pool<F32Elem>(x, y, p, s); break;
        case FP8ORT_FLOAT16: st = launch_max_pool<F16Elem>(x, y, p, s); break;
        case FP8ORT_E4M3FN: st = launch_max_pool<Fp8Elem<FP8ORT_E4M3FN>>(x, y, p, s); break;
        case FP8ORT_E4M3FNUZ: st = launch_max_pool<Fp8Elem<FP8ORT_E4M3FNUZ>>(x, y, p, s); break;
        case FP8ORT_E5M2: st = launch_max_pool<Fp8Elem<FP8ORT_E5M2>>(x, y, p, s); break;
        case FP8ORT_E5M2FNUZ: st = launch_max_pool<Fp8Elem<FP8ORT_E5M2FNUZ>>(x, y, p, s); break;
        default:
            return fail(FP8ORT_INVALID_ARGUMENT, "%s: type %s is not FP8, float32 or float16", me, dtype_name(type));
    }
    return st == FP8ORT_OK ? ok() : st;
}
