// What the FP8Attention kernels share (fp8_attention.hip: float32 Q/K/V; fp8_attention_f16.hip: float16): how a
// finished query row is written.
#pragma once

#include <math.h>

#include "fp8_epilogue.h"  // quantize4
#include "fp8_numerics.h"
#include "fp8_status.h"

namespace fp8ort {
namespace attention {

// Y row store: float32 or q(y, y_scale) into FP8 format F.
// put2: two consecutive elements (vec: i even and Y aligned for one store of both).
struct StoreF32 {
    __device__ __forceinline__ static void put(void* y, int64_t i, float v, const fp8_divisor&) {
        static_cast<float*>(y)[i] = v;
    }
    __device__ __forceinline__ static void put2(void* y, int64_t i, float a, float b, const fp8_divisor&, bool vec) {
        float* out = static_cast<float*>(y) + i;
        if (vec) {
            *reinterpret_cast<float2*>(out) = make_float2(a, b);
        } else {
            out[0] = a;
            out[1] = b;
        }
    }
};
template <fp8ort_fp8_format F>
struct StoreFp8 {
    __device__ __forceinline__ static void put(void* y, int64_t i, float v, const fp8_divisor& d) {
        static_cast<uint8_t*>(y)[i] = quantize_fp8<F>(v, d, true);
    }
    // quantize4's codes (quantize_fp8's, by the hardware conversion where it applies) of a and b
    __device__ __forceinline__ static void put2(void* y, int64_t i, float a, float b, const fp8_divisor& d, bool vec) {
        const float v[4] = {a, b, 0.0f, 0.0f};
        const uint32_t w = quantize4<F>(v, d);
        uint8_t* out = static_cast<uint8_t*>(y) + i;
        if (vec) {
            *reinterpret_cast<uint16_t*>(out) = static_cast<uint16_t>(w & 0xffffu);
        } else {
            out[0] = static_cast<uint8_t>(w & 0xffu);
            out[1] = static_cast<uint8_t>((w >> 8) & 0xffu);
        }
    }
};

// How a finished query row is written (every attention kernel): o / sum, or NaN (zeros with nan_to_zero) where the row's
// probabilities are NaN (a NaN or +inf score: `bad`; or every score -inf: running maximum m still -inf); no keys
// (T = 0) give zeros, as the unfused MatMul over an empty axis does.
struct row_finish {
    bool nan_row;
    float inv;
    __device__ __forceinline__ float value(float o, int nan_to_zero) const {
        return nan_row ? (nan_to_zero ? 0.0f : NAN) : o * inv;
    }
};
__device__ __forceinline__ row_finish finish_row(const fp8ort_attention_params& p, float sum, bool bad, float m) {
    const bool empty = p.t == 0;
    return row_finish{!empty && (bad || m == -INFINITY), empty ? 0.0f : 1.0f / sum};
}

// The arguments every FP8Attention entry point checks (`me` names it in the messages): FP8ORT_OK with *empty set
// where there is nothing to compute, else the error.
inline fp8ort_status check_args(const char* me, const void* q, const void* k, const void* v,
                                const fp8ort_attention_params* p, const void* y, fp8ort_dtype y_type,
                                const float* y_scale, bool* empty) {
    *empty = false;
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
    if (p->b * p->s * p->h * p->dv == 0) {
        *empty = true;
        return FP8ORT_OK;
    }
    if (!q || !y || (p->t > 0 && (!k || !v)))  // no keys (T = 0): K and V are empty and may be NULL
        return fail(FP8ORT_INVALID_ARGUMENT, "%s: tensors must be device pointers, got NULL", me);
    if (is_fp8_type(y_type) && !y_scale) return fail(FP8ORT_INVALID_ARGUMENT, "%s: an FP8 output needs y_scale", me);
    return FP8ORT_OK;
}

}  // namespace attention
}  // namespace fp8ort
