// FP8 formats on the device: bit-exact encode (round to nearest even, optional saturation) and decode.
// Written with integer and exact float operations only, so every vendor gives ml_dtypes' bits.
#pragma once

#include "fp8_compat.h"
#include "fp8_kernels.h"

namespace fp8ort {

// Largest finite values and exponent biases of the four formats (DESIGN.md, numerics.py).
constexpr float kE4M3FnMax = 448.0f;
constexpr float kE5M2Max = 57344.0f;
constexpr float kE4M3FnuzMax = 240.0f;
constexpr float kE5M2FnuzMax = 57344.0f;

struct fp8_traits {
    int mantissa_bits;
    int bias;
    float max_finite;
    bool fnuz;      // no negative zero, one NaN (0x80), no infinities
    bool has_inf;   // E5M2 (OCP) only
};

__host__ __device__ constexpr fp8_traits traits_of(fp8ort_fp8_format f) {
    return f == FP8ORT_E4M3FN     ? fp8_traits{3, 7, kE4M3FnMax, false, false}
           : f == FP8ORT_E5M2     ? fp8_traits{2, 15, kE5M2Max, false, true}
           : f == FP8ORT_E4M3FNUZ ? fp8_traits{3, 8, kE4M3FnuzMax, true, false}
                                  : fp8_traits{2, 16, kE5M2FnuzMax, true, false};
}

// NaN code of a format with the given sign (FNUZ has a single NaN).
template <fp8ort_fp8_format F>
__device__ __forceinline__ uint8_t fp8_nan(bool negative) {
    constexpr fp8_traits t = traits_of(F);
    if (t.fnuz) return 0x80;
    const uint8_t sign = negative ? 0x80 : 0x00;
    return static_cast<uint8_t>(sign | (t.mantissa_bits == 3 ? 0x7f : 0x7e));
}

// Round a float32 to format F (ties to even). With `saturate`, values past ±max (and ±Inf) become ±max.
// Without it, overflow gives Inf (E5M2) or NaN (the other formats), as ml_dtypes does.
template <fp8ort_fp8_format F>
__device__ __forceinline__ uint8_t encode_fp8(float x, bool saturate) {
    constexpr fp8_traits t = traits_of(F);
    const uint32_t bits = __float_as_uint(x);
    const bool negative = (bits >> 31) != 0;
    if (x != x) return fp8_nan<F>(negative);
    if (saturate) x = fminf(fmaxf(x, -t.max_finite), t.max_finite);
    const uint32_t abs_bits = __float_as_uint(x) & 0x7fffffffu;
    const float abs_x = __uint_as_float(abs_bits);
    const uint32_t sign = negative ? 0x80u : 0x00u;
    constexpr int shift = 23 - t.mantissa_bits;
    uint32_t code;
    // smallest normal of the format: 2^(1 - bias)
    const float min_normal = __uint_as_float(static_cast<uint32_t>(128 - t.bias) << 23);
    if (abs_bits >= 0x7f800000u) {  // Inf (only without saturation)
        code = t.has_inf ? 0x7cu : 0x100u;  // 0x100 marks overflow
    } else if (abs_x < min_normal) {
        // subnormal range: count units of 2^(1 - bias - m); the scaling by a power of two is exact
        const float units_scale = __uint_as_float(static_cast<uint32_t>(127 + t.bias - 1 + t.mantissa_bits) << 23);
        code = static_cast<uint32_t>(rintf(abs_x * units_scale));  // rintf rounds half to even
    } else {
        uint32_t rounded = abs_bits + ((1u << (shift - 1)) - 1u) + ((abs_bits >> shift) & 1u);
        code = (rounded >> shift) - (static_cast<uint32_t>(127 - t.bias) << t.mantissa_bits);
    }
    // overflow past the largest finite code (only reachable without saturation)
    const uint32_t max_code = t.has_inf ? 0x7bu : (t.fnuz ? 0x7fu : 0x7eu);
    if (code > max_code) {
        if (t.has_inf) return static_cast<uint8_t>(sign | 0x7cu);
        return fp8_nan<F>(negative);
    }
    if (code == 0 && t.fnuz) return 0;  // FNUZ has no -0 (0x80 is its NaN)
    return static_cast<uint8_t>(sign | code);
}

// Exact FP8 -> float32.
template <fp8ort_fp8_format F>
__device__ __forceinline__ float decode_fp8(uint8_t v) {
    constexpr fp8_traits t = traits_of(F);
    const uint32_t sign = static_cast<uint32_t>(v & 0x80u) << 24;
    const uint32_t mag = v & 0x7fu;
    if (t.fnuz) {
        if (v == 0x80) return __uint_as_float(0x7fc00000u);
    } else if (t.has_inf) {
        if (mag >= 0x7cu) return __uint_as_float(sign | (mag == 0x7cu ? 0x7f800000u : 0x7fc00000u));
    } else if (mag == 0x7fu) {
        return __uint_as_float(sign | 0x7fc00000u);
    }
    const uint32_t exp_field = mag >> t.mantissa_bits;
    const uint32_t mant = mag & ((1u << t.mantissa_bits) - 1u);
    if (exp_field == 0) {  // subnormal: mant * 2^(1 - bias - m), exact in float32
        const float unit = __uint_as_float(static_cast<uint32_t>(127 + 1 - t.bias - t.mantissa_bits) << 23);
        return __uint_as_float(sign | __float_as_uint(static_cast<float>(mant) * unit));
    }
    const uint32_t f32 = ((exp_field + 127u - t.bias) << 23) | (mant << (23 - t.mantissa_bits));
    return __uint_as_float(sign | f32);
}

#if defined(FP8ORT_CUDA) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
// Four E4M3FN or E5M2 codes (byte e -> out[e]) by the hardware conversion to float16 and then to float32: exactly
// decode_fp8's values for every code but the NaN codes, which give a NaN without their sign and payload.
template <fp8ort_fp8_format F>
__device__ __forceinline__ void decode4_fp8_hw(uint32_t w, float (&out)[4]) {
    static_assert(F == FP8ORT_E4M3FN || F == FP8ORT_E5M2, "the hardware converts the OCP formats");
    constexpr __nv_fp8_interpretation_t kind = F == FP8ORT_E4M3FN ? __NV_E4M3 : __NV_E5M2;
    const float2 lo =
        __half22float2(__half2(__nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(w & 0xffffu), kind)));
    const float2 hi =
        __half22float2(__half2(__nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(w >> 16), kind)));
    out[0] = lo.x, out[1] = lo.y, out[2] = hi.x, out[3] = hi.y;
}
#endif

// Four FP8 codes packed little-endian (byte e -> out[e]), each exactly as decode_fp8. On NVIDIA sm_89+ the OCP
// formats take the hardware conversion to float16 (exact: every FP8 value is a float16 normal or zero) and then to
// float32, about 2 instructions per value instead of ~12; a word holding a NaN code takes decode_fp8, whose NaN bits
// the hardware would not reproduce (mag + 1, or + 3 for E5M2, carries into bit 7 exactly for the NaN codes).
template <fp8ort_fp8_format F>
__device__ __forceinline__ void decode4_fp8(uint32_t w, float (&out)[4]) {
#if defined(FP8ORT_CUDA) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
    if constexpr (F == FP8ORT_E4M3FN || F == FP8ORT_E5M2) {
        const uint32_t nan_probe = (w & 0x7f7f7f7fu) + (F == FP8ORT_E4M3FN ? 0x01010101u : 0x03030303u);
        if ((nan_probe & 0x80808080u) == 0) {
            decode4_fp8_hw<F>(w, out);
            return;
        }
    }
#endif
#pragma unroll
    for (int e = 0; e < 4; ++e) out[e] = decode_fp8<F>(static_cast<uint8_t>(w >> (8 * e)));
}

// x / s rounded to nearest even, the quotient q() encodes. A zero x (half of all outputs after a ReLU) gets its
// quotient without dividing: the correctly rounded division sends a zero numerator down its slow path, which made
// the epilogue of a small-K GEMM twice as slow on an H200. Same values: +-0 with the sign of x xor s; a scale of
// 0 or NaN (never a valid scale) still divides, so that its NaN is the platform's as before.
__device__ __forceinline__ float fp8ort_quotient_rn(float x, float s) {
    const bool zero = x == 0.0f;
    if (zero && (s == 0.0f || s != s)) return fp8ort_div_rn(x, s);
    const float q = fp8ort_div_rn(zero ? 1.0f : x, s);
    return zero ? __uint_as_float((__float_as_uint(x) ^ __float_as_uint(s)) & 0x80000000u) : q;
}

// A per-tensor scale prepared for many q() divisions: x / s becomes one multiply and two residual corrections
// with r = RN(1/s) (about 5 instructions instead of ~20 with the division's branches). For |s| in [2^-40, 2^40]
// and |x| in [2^-64, 2^64]: q0 = RN(x r) is within 1.5 ulp, q1 (one correction) is faithful, and q2 (the second)
// is RN(x / s) by Markstein's theorem (r within half an ulp of 1/s, q1 within one ulp, no underflow or
// overflow in between). Outside that x range q0 is returned: it has the quotient's sign, and its magnitude is
// below 2^-24 (every FP8 format rounds it to zero) or above 2^24 (every FP8 format saturates or overflows), so
// the FP8 code is the same as from RN(x / s); NaN stays NaN. Other scales take the exact division.
// Only for quotients that are encoded to FP8 next.
struct fp8_divisor {
    float s;
    float r;    // RN(1 / s) when fast
    bool fast;  // |s| in [2^-40, 2^40]
};

__device__ __forceinline__ fp8_divisor make_fp8_divisor(float s) {
    const float a = fabsf(s);
    fp8_divisor d;
    d.s = s;
    d.fast = a >= 0x1p-40f && a <= 0x1p40f;
    d.r = d.fast ? fp8ort_div_rn(1.0f, s) : 0.0f;
    return d;
}

// |x| in [2^-64, 2^64], where the two corrections give RN(x / s) when d.fast; tested on the magnitude's bit
// pattern (2^-64 is 0x1f800000, 2^64 is 0x5f800000), one subtraction and one unsigned compare.
__device__ __forceinline__ bool fp8_quotient_in_range(float x) {
    return (__float_as_uint(x) & 0x7fffffffu) - 0x1f800000u <= 0x40000000u;
}

// x / d.s for FP8 encoding when d.fast, without a branch: RN(x / s) in range; outside it x * RN(1 / s), which has
// the same FP8 code as RN(x / s): |x| < 2^-64 gives |x / s| < 2^-24, a zero of the sign of x / s in every FP8
// format (zeros included: 0 * r is the correctly signed zero); |x| > 2^64 gives |x / s| > 2^24, past every
// format's largest finite value, saturated or infinite alike; infinities stay infinities; NaN stays NaN.
// q0 = x * RN(1 / s) and q2, q0 after two corrections (RN(x / s) where d.fast and x is in range): the steps of
// fp8_quotient_fast and of the tile epilogues' grouped quotient (fp8_quotient_group).
struct fp8_quotient_steps {
    float q0, q2;
};

__device__ __forceinline__ fp8_quotient_steps fp8_quotient_corrected(float x, const fp8_divisor& d) {
    const float q0 = fp8ort_mul_rn(x, d.r);
    const float q1 = fmaf(fmaf(-d.s, q0, x), d.r, q0);
    return {q0, fmaf(fmaf(-d.s, q1, x), d.r, q1)};
}

__device__ __forceinline__ float fp8_quotient_fast(float x, const fp8_divisor& d) {
    const fp8_quotient_steps q = fp8_quotient_corrected(x, d);
    return fp8_quotient_in_range(x) ? q.q2 : q.q0;
}

__device__ __forceinline__ float fp8ort_quotient_for_fp8(float x, const fp8_divisor& d) {
    return d.fast ? fp8_quotient_fast(x, d) : fp8ort_quotient_rn(x, d.s);
}

// q(x, s): float32 division, NaN keeps its sign (as on the CPU, where x / s returns the NaN operand).
template <fp8ort_fp8_format F>
__device__ __forceinline__ uint8_t quantize_fp8(float x, float scale, bool saturate) {
    if (x != x) return fp8_nan<F>((__float_as_uint(x) >> 31) != 0);
    return encode_fp8<F>(fp8ort_quotient_rn(x, scale), saturate);
}

// q(x, d.s) through a prepared divisor: the same codes as quantize_fp8.
template <fp8ort_fp8_format F>
__device__ __forceinline__ uint8_t quantize_fp8(float x, const fp8_divisor& d, bool saturate) {
    if (x != x) return fp8_nan<F>((__float_as_uint(x) >> 31) != 0);
    return encode_fp8<F>(fp8ort_quotient_for_fp8(x, d), saturate);
}

// High-precision element loads/stores by ONNX dtype.
__device__ __forceinline__ float load_hp(const void* p, size_t i, fp8ort_dtype dt) {
    switch (dt) {
        case FP8ORT_FLOAT16: return fp8ort_half_bits_to_float(static_cast<const uint16_t*>(p)[i]);
        case FP8ORT_BFLOAT16: return fp8ort_bf16_bits_to_float(static_cast<const uint16_t*>(p)[i]);
        default: return static_cast<const float*>(p)[i];
    }
}

}  // namespace fp8ort
