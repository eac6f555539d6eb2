// FP8 conversions with a per-tensor scale: quantize (q), dequantize (deq) and the amax reduction.
#include "fp8_epilogue.h"  // quantize4
#include "fp8_numerics.h"
#include "fp8_status.h"

namespace fp8ort {
namespace {

constexpr int kConvertThreads = 256;
constexpr int kMaxConvertBlocks = 8192;

int convert_blocks(int64_t count) {
    const int64_t blocks = (count + kConvertThreads - 1) / kConvertThreads;
    return static_cast<int>(blocks < kMaxConvertBlocks ? (blocks > 0 ? blocks : 1) : kMaxConvertBlocks);
}

template <fp8ort_fp8_format F, fp8ort_dtype X>
__global__ void __launch_bounds__(kConvertThreads)
    quantize_kernel(const void* __restrict__ x, const float* __restrict__ scale, uint8_t* __restrict__ y,
                    int64_t count, bool saturate) {
    const fp8_divisor d = make_fp8_divisor(*scale);
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
        y[i] = quantize_fp8<F>(load_hp(x, i, X), d, saturate);
    }
}

// The same, 4 elements per thread (x 4-element aligned, y 4-byte aligned): one 16- or 8-byte load and one 4-byte
// store, and quantize4's shared checks, per 4 codes; thread 0 also takes the count % 4 elements at the end.
template <fp8ort_fp8_format F, fp8ort_dtype X>
__global__ void __launch_bounds__(kConvertThreads)
    quantize_quads_kernel(const void* __restrict__ x, const float* __restrict__ scale, uint8_t* __restrict__ y,
                          int64_t count, bool saturate) {
    fp8ort_pdl_wait();  // launched with pdl: the kernel before it may still run
    fp8ort_pdl_release();
    const fp8_divisor d = make_fp8_divisor(*scale);
    const int64_t quads = count / 4;
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    const int64_t first = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    for (int64_t q = first; q < quads; q += stride) {
        float v[4];
        if constexpr (X == FP8ORT_FLOAT) {
            const float4 w = static_cast<const float4*>(x)[q];
            v[0] = w.x, v[1] = w.y, v[2] = w.z, v[3] = w.w;
        } else {
            const uint2 w = static_cast<const uint2*>(x)[q];
            const uint16_t h[4] = {static_cast<uint16_t>(w.x & 0xffffu), static_cast<uint16_t>(w.x >> 16),
                                   static_cast<uint16_t>(w.y & 0xffffu), static_cast<uint16_t>(w.y >> 16)};
#pragma unroll
            for (int e = 0; e < 4; ++e)
                v[e] = X == FP8ORT_FLOAT16 ? fp8ort_half_bits_to_float(h[e]) : fp8ort_bf16_bits_to_float(h[e]);
        }
        uint32_t codes = 0;
        if (saturate) {
            codes = quantize4<F>(v, d);
        } else {
#pragma unroll
            for (int e = 0; e < 4; ++e) codes |= static_cast<uint32_t>(quantize_fp8<F>(v[e], d, false)) << (8 * e);
        }
        reinterpret_cast<uint32_t*>(y)[q] = codes;
    }
    if (first == 0)
        for (int64_t i = quads * 4; i < count; ++i) y[i] = quantize_fp8<F>(load_hp(x, i, X), d, saturate);
}

// Channels-last activations padded with zero channels: y[p, j] = q(x[p, j]) for j < c, 0 for c <= j < c_out.
// X == F copies FP8 codes of the same format unchanged.
// The same with one thread per pixel and 4-byte stores, for c_out % 4 == 0 and a 4-byte aligned y (the usual case: an
// RGB input padded to 16 channels). The byte-per-thread kernel below needed a 64-bit division and a 1-byte store per
// output byte.
template <fp8ort_fp8_format F, fp8ort_dtype X>
__global__ void __launch_bounds__(kConvertThreads)
    quantize_padded_words_kernel(const void* __restrict__ x, const float* __restrict__ scale, uint32_t* __restrict__ y,
                                 int64_t pixels, int c, int c_out) {
    const fp8_divisor d = make_fp8_divisor(X == static_cast<fp8ort_dtype>(F) ? 1.0f : *scale);
    const int words = c_out / 4;
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t p = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; p < pixels; p += stride) {
        const int64_t in0 = p * c;
        uint32_t* out = y + p * words;
        for (int w = 0; w < words; ++w) {
            uint32_t word = 0;
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const int j = w * 4 + e;
                uint8_t v = 0;
                if (j < c) {
                    if constexpr (X == static_cast<fp8ort_dtype>(F))
                        v = static_cast<const uint8_t*>(x)[in0 + j];
                    else
                        v = quantize_fp8<F>(load_hp(x, in0 + j, X), d, true);
                }
                word |= static_cast<uint32_t>(v) << (8 * e);
            }
            out[w] = word;
        }
    }
}

template <fp8ort_fp8_format F, fp8ort_dtype X>
__global__ void __launch_bounds__(kConvertThreads)
    quantize_padded_kernel(const void* __restrict__ x, const float* __restrict__ scale, uint8_t* __restrict__ y,
                           int64_t pixels, int c, int c_out) {
    const fp8_divisor d = make_fp8_divisor(X == static_cast<fp8ort_dtype>(F) ? 1.0f : *scale);
    const int64_t count = pixels * c_out;
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
        const int64_t p = i / c_out;
        const int j = static_cast<int>(i - p * c_out);
        uint8_t v = 0;
        if (j < c) {
            if constexpr (X == static_cast<fp8ort_dtype>(F))
                v = static_cast<const uint8_t*>(x)[p * c + j];
            else
                v = quantize_fp8<F>(load_hp(x, p * c + j, X), d, true);
        }
        y[i] = v;
    }
}

template <fp8ort_fp8_format F>
__global__ void __launch_bounds__(kConvertThreads)
    dequantize_kernel(const uint8_t* __restrict__ x, const float* __restrict__ scale, void* __restrict__ y,
                      fp8ort_dtype y_type, int64_t count) {
    const float s = scale ? *scale : 1.0f;
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
        const float v = fp8ort_mul_rn(decode_fp8<F>(x[i]), s);
        switch (y_type) {
            case FP8ORT_FLOAT16: static_cast<uint16_t*>(y)[i] = fp8ort_float_to_half_bits(v); break;
            case FP8ORT_BFLOAT16: static_cast<uint16_t*>(y)[i] = fp8ort_float_to_bf16_bits(v); break;
            default: static_cast<float*>(y)[i] = v; break;
        }
    }
}

// max |x| as the largest magnitude bit pattern: for non-negative floats the integer order is the float order,
// and every NaN pattern sorts above +Inf, so one NaN makes the result NaN (as np.max(np.abs(x)) does).
template <fp8ort_dtype X>
__global__ void __launch_bounds__(kConvertThreads)
    amax_kernel(const void* __restrict__ x, int64_t count, unsigned int* __restrict__ amax_bits) {
    __shared__ unsigned int partial[kConvertThreads];
    unsigned int best = 0;
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
        const unsigned int m = __float_as_uint(load_hp(x, i, X)) & 0x7fffffffu;
        best = m > best ? m : best;
    }
    partial[threadIdx.x] = best;
    __syncthreads();
    for (int half = kConvertThreads / 2; half > 0; half /= 2) {
        if (static_cast<int>(threadIdx.x) < half) {
            const unsigned int other = partial[threadIdx.x + half];
            partial[threadIdx.x] = other > partial[threadIdx.x] ? other : partial[threadIdx.x];
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) atomicMax(amax_bits, partial[0]);
}

template <fp8ort_fp8_format F>
fp8ort_status launch_quantize(const void* x, fp8ort_dtype x_type, const float* scale, void* y, int64_t count,
                              bool saturate, hipStream_t stream) {
    uint8_t* out = static_cast<uint8_t*>(y);
    const uintptr_t x_align = x_type == FP8ORT_FLOAT ? 16 : 8;
    if (count >= 4 && reinterpret_cast<uintptr_t>(x) % x_align == 0 && reinterpret_cast<uintptr_t>(y) % 4 == 0) {
        const int quad_blocks = convert_blocks(count / 4);
        const bool pdl = pdl_wanted();
        auto kernel = x_type == FP8ORT_FLOAT     ? quantize_quads_kernel<F, FP8ORT_FLOAT>
                      : x_type == FP8ORT_FLOAT16 ? quantize_quads_kernel<F, FP8ORT_FLOAT16>
                                                 : quantize_quads_kernel<F, FP8ORT_BFLOAT16>;
        launch_kernel(pdl, kernel, dim3(quad_blocks), dim3(kConvertThreads), 0, stream, x, scale, out, count, saturate);
        return check_launch("fp8ort_quantize");
    }
    const int blocks = convert_blocks(count);
    switch (x_type) {
        case FP8ORT_FLOAT:
            quantize_kernel<F, FP8ORT_FLOAT><<<blocks, kConvertThreads, 0, stream>>>(x, scale, out, count, saturate);
            break;
        case FP8ORT_FLOAT16:
            quantize_kernel<F, FP8ORT_FLOAT16><<<blocks, kConvertThreads, 0, stream>>>(x, scale, out, count, saturate);
            break;
        default:
            quantize_kernel<F, FP8ORT_BFLOAT16><<<blocks, kConvertThreads, 0, stream>>>(x, scale, out, count, saturate);
            break;
    }
    return check_launch("fp8ort_quantize");
}

template <fp8ort_fp8_format F>
fp8ort_status launch_dequantize(const void* x, const float* scale, void* y, fp8ort_dtype y_type, int64_t count,
                                hipStream_t stream) {
    dequantize_kernel<F><<<convert_blocks(count), kConvertThreads, 0, stream>>>(static_cast<const uint8_t*>(x),
                                                                                 scale, y, y_type, count);
    return check_launch("fp8ort_dequantize");
}

template <fp8ort_fp8_format F>
fp8ort_status launch_quantize_padded(const void* x, fp8ort_dtype x_type, const float* scale, void* y, int64_t pixels,
                                     int c, int c_out, hipStream_t stream) {
    if (c_out % 4 == 0 && reinterpret_cast<uintptr_t>(y) % 4 == 0) {
        const int blocks = convert_blocks(pixels);
        uint32_t* words = static_cast<uint32_t*>(y);
        switch (x_type) {
            case FP8ORT_FLOAT:
                quantize_padded_words_kernel<F, FP8ORT_FLOAT><<<blocks, kConvertThreads, 0, stream>>>(x, scale, words,
                                                                                                      pixels, c, c_out);
                break;
            case FP8ORT_FLOAT16:
                quantize_padded_words_kernel<F, FP8ORT_FLOAT16><<<blocks, kConvertThreads, 0, stream>>>(x, scale, words,
                                                                                                        pixels, c, c_out);
                break;
            case FP8ORT_BFLOAT16:
                quantize_padded_words_kernel<F, FP8ORT_BFLOAT16><<<blocks, kConvertThreads, 0, stream>>>(
                    x, scale, words, pixels, c, c_out);
                break;
            default:
                quantize_padded_words_kernel<F, static_cast<fp8ort_dtype>(F)><<<blocks, kConvertThreads, 0, stream>>>(
                    x, scale, words, pixels, c, c_out);
                break;
        }
        return check_launch("fp8ort_quantize_padded");
    }
    const int blocks = convert_blocks(pixels * c_out);
    uint8_t* out = static_cast<uint8_t*>(y);
    switch (x_type) {
        case FP8ORT_FLOAT:
            quantize_padded_kernel<F, FP8ORT_FLOAT><<<blocks, kConvertThreads, 0, stream>>>(x, scale, out, pixels, c, c_out);
            break;
        case FP8ORT_FLOAT16:
            quantize_padded_kernel<F, FP8ORT_FLOAT16><<<blocks, kConvertThreads, 0, stream>>>(x, scale, out, pixels, c, c_out);
            break;
        case FP8ORT_BFLOAT16:
            quantize_padded_kernel<F, FP8ORT_BFLOAT16><<<blocks, kConvertThreads, 0, stream>>>(x, scale, out, pixels, c, c_out);
            break;
        default:
            quantize_padded_kernel<F, static_cast<fp8ort_dtype>(F)><<<blocks, kConvertThreads, 0, stream>>>(x, scale, out,
                                                                                                           pixels, c, c_out);
            break;
    }
    return check_launch("fp8ort_quantize_padded");
}

}  // namespace
}  // namespace fp8ort

using namespace fp8ort;

extern "C" const char* fp8ort_gpu_last_error(void) { return g_last_error; }

extern "C" fp8ort_status fp8ort_quantize(const void* x, fp8ort_dtype x_type, const float* scale, void* y,
                                         fp8ort_dtype y_type, int64_t count, int saturate, void* stream) {
    if (!is_hp_type(x_type)) return fail(FP8ORT_INVALID_ARGUMENT, "fp8ort_quantize: input type %s is not float32/float16/bfloat16", dtype_name(x_type));
    if (!is_fp8_type(y_type)) return fail(FP8ORT_INVALID_ARGUMENT, "fp8ort_quantize: output type %s is not an FP8 type", dtype_name(y_type));
    if (count < 0) return fail(FP8ORT_INVALID_ARGUMENT, "fp8ort_quantize: negative count %lld", static_cast<long long>(count));
    if (count == 0) return ok();
    if (!x || !y || !scale) return fail(FP8ORT_INVALID_ARGUMENT, "fp8ort_quantize: x, y and scale must be device pointers, got NULL");
    const hipStream_t s = as_stream(stream);
    const bool sat = saturate != 0;
    fp8ort_status st;
    switch (y_type) {
        case FP8ORT_E4M3FN: st = launch_quantize<FP8ORT_E4M3FN>(x, x_type, scale, y, count, sat, s); break;
        case FP8ORT_E5M2: st = launch_quantize<FP8ORT_E5M2>(x, x_type, scale, y, count, sat, s); break;
        case FP8ORT_E4M3FNUZ: st = launch_quantize<FP8ORT_E4M3FNUZ>(x, x_type, scale, y, count, sat, s); break;
        default: st = launch_quantize<FP8ORT_E5M2FNUZ>(x, x_type, scale, y, count, sat, s); break;
    }
    return st == FP8ORT_OK ? ok() : st;
}

extern "C" fp8ort_status fp8ort_dequantize(const void* x, fp8ort_dtype x_type, const float* scale, void* y,
                                           fp8ort_dtype y_type, int64_t count, void* stream) {
    if (!is_fp8_type(x_type)) return fail(FP8ORT_INVALID_ARGUMENT, "fp8ort_dequantize: input type %s is not an FP8 type", dtype_name(x_type));
    if (!is_hp_type(y_type)) return fail(FP8ORT_INVALID_ARGUMENT, "fp8ort_dequantize: output type %s is not float32/float16/bfloat16", dtype_name(y_type));
    if (count < 0) return fail(FP8ORT_INVALID_ARGUMENT, "fp8ort_dequantize: negative count %lld", static_cast<long long>(count));
    if (count == 0) return ok();
    if (!x || !y) return fail(FP8ORT_INVALID_ARGUMENT, "fp8ort_dequantize: x and y must be device pointers, got NULL");
    const hipStream_t s = as_stream(stream);
    fp8ort_status st;
    switch (x_type) {
        case FP8ORT_E4M3FN: st = launch_dequantize<FP8ORT_E4M3FN>(x, scale, y, y_type, count, s); break;
        case FP8ORT_E5M2: st = launch_dequantize<FP8ORT_E5M2>(x, scale, y, y_type, count, s); break;
        case FP8ORT_E4M3FNUZ: st = launch_dequantize<FP8ORT_E4M3FNUZ>(x, scale, y, y_type, count, s); break;
        default: st = launch_dequantize<FP8ORT_E5M2FNUZ>(x, scale, y, y_type, count, s); break;
    }
    return st == FP8ORT_OK ? ok() : st;
}

extern "C" fp8ort_status fp8ort_amax(const void* x, fp8ort_dtype x_type, int64_t count, float* amax, void* stream) {
    if (!is_hp_type(x_type)) return fail(FP8ORT_INVALID_ARGUMENT, "fp8ort_amax: input type %s is not float32/float16/bfloat16", dtype_name(x_type));
    if (count < 0) return fail(FP8ORT_INVALID_ARGUMENT, "fp8ort_amax: negative count %lld", static_cast<long long>(count));
    if (!amax || (count > 0 && !x)) return fail(FP8ORT_INVALID_ARGUMENT, "fp8ort_amax: x and amax must be device pointers, got NULL");
    const hipStream_t s = as_stream(stream);
    FP8ORT_TRY(check_runtime(hipMemsetAsync(amax, 0, sizeof(float), s), "fp8ort_amax: clearing the result"));
    if (count == 0) return ok();
    unsigned int* bits = reinterpret_cast<unsigned int*>(amax);
    const int blocks = convert_blocks(count);
    switch (x_type) {
        case FP8ORT_FLOAT: amax_kernel<FP8ORT_FLOAT><<<blocks, kConvertThreads, 0, s>>>(x, count, bits); break;
        case FP8ORT_FLOAT16: amax_kernel<FP8ORT_FLOAT16><<<blocks, kConvertThreads, 0, s>>>(x, count, bits); break;
        default: amax_kernel<FP8ORT_BFLOAT16><<<blocks, kConvertThreads, 0, s>>>(x, count, bits); break;
    }
    FP8ORT_TRY(check_launch("fp8ort_amax"));
    return ok();
}

extern "C" fp8ort_status fp8ort_quantize_padded(const void* x, fp8ort_dtype x_type, const float* scale, void* y,
                                                fp8ort_dtype y_type, int64_t pixels, int64_t c, int64_t c_out,
                                                void* stream) {
    const char* op = "fp8ort_quantize_padded";
    if (!is_fp8_type(y_type)) return fail(FP8ORT_INVALID_ARGUMENT, "%s: output type %s is not an FP8 type", op, dtype_name(y_type));
    if (!is_hp_type(x_type) && x_type != y_type)
        return fail(FP8ORT_INVALID_ARGUMENT, "%s: input type %s is neither high precision nor the output's FP8 type %s", op,
                    dtype_name(x_type), dtype_name(y_type));
    if (pixels < 0 || c <= 0 || c_out < c || c_out >= (int64_t{1} << 30))
        return fail(FP8ORT_INVALID_ARGUMENT, "%s: need pixels >= 0 and 0 < c <= c_out < 2^30; got %lld, %lld, %lld", op,
                    static_cast<long long>(pixels), static_cast<long long>(c), static_cast<long long>(c_out));
    if (pixels == 0) return ok();
    if (!x || !y || (is_hp_type(x_type) && !scale))
        return fail(FP8ORT_INVALID_ARGUMENT, "%s: x, y (and scale for a high-precision x) must be device pointers", op);
    const hipStream_t s = as_stream(stream);
    const int ci = static_cast<int>(c), co = static_cast<int>(c_out);
    fp8ort_status st;
    switch (y_type) {
        case FP8ORT_E4M3FN: st = launch_quantize_padded<FP8ORT_E4M3FN>(x, x_type, scale, y, pixels, ci, co, s); break;
        case FP8ORT_E5M2: st = launch_quantize_padded<FP8ORT_E5M2>(x, x_type, scale, y, pixels, ci, co, s); break;
        case FP8ORT_E4M3FNUZ: st = launch_quantize_padded<FP8ORT_E4M3FNUZ>(x, x_type, scale, y, pixels, ci, co, s); break;
        default: st = launch_quantize_padded<FP8ORT_E5M2FNUZ>(x, x_type, scale, y, pixels, ci, co, s); break;
    }
    return st == FP8ORT_OK ? ok() : st;
}
