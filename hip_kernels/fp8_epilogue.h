// The fused float32 epilogue shared by the GEMM and convolution kernels, step for step as reference.py's
// _epilogue: y = acc * (x_scale * w_scale[n]); y += bias[n]; y += float(Z) * z_scale; activation; cast or
// q(y, y_scale). Relu and the piecewise-linear activations round as the reference does; the transcendental ones use
// float32 device math (expf, erfcf), a few float32 ulps from the reference's float64 evaluation.
#pragma once

#include <cmath>

#include "fp8_numerics.h"
#include "fp8_status.h"

namespace fp8ort {

struct epilogue_args {
    const float* x_scale;  // null only in the raw split-K epilogue (scale 1; make_epilogue_args refuses null)
    const float* w_scale;
    bool per_channel;
    const float* bias;
    const void* z;
    fp8ort_dtype z_type;
    const float* z_scale;
    const float* y_scale;
    bool relu;
    fp8ort_dtype y_type;
    void* y;
    int64_t ld;          // row stride of Y and Z in elements
    int64_t col_offset;  // first output column of this launch (convolution groups)
    // Last, so that shorter positional initializers stay valid (the rest is zero: no activation). Relu is `relu`.
    int act;  // an fp8ort_activation other than RELU (FP8ORT_ACT_NONE = 0)
    float act_alpha;
    float act_beta;
    bool silu_inline;  // the tile epilogues evaluate SiLU inline instead of calling apply_activation4 (tile_silu_inline)
    bool z_ahead;      // the sm90a tile epilogues load an E4M3FN residual rows ahead (epilogue_rows_z_ahead, tile_z_ahead)
    bool rows_fast;    // E4M3FN outputs as fast quads where they apply (fast_quads_apply, tile_rows_fast): the sm90a
                       // tile epilogues (epilogue_rows_fast) and the depthwise tile kernel
};

// Host: whether make_epilogue_args asks the sm90a tile epilogues to inline SiLU (fp8ort_epilogue_set_silu_variant, or
// FP8ORT_TILE_SILU=call|inline read once; the default is inline, measured faster on EfficientNet-B0). Both give the
// same bits.
bool tile_silu_inline();

// Host: whether make_epilogue_args asks the sm90a tile epilogues to load an E4M3FN residual rows ahead
// (fp8ort_epilogue_set_z_ahead, or FP8ORT_Z_AHEAD=on|off read once; on when unset). Both give the same bits.
bool tile_z_ahead();

// Host: whether make_epilogue_args asks for fast quads (epilogue_quads_fast) where they apply
// (fp8ort_epilogue_set_fast_rows, or FP8ORT_FAST_ROWS=on|off read once; on when unset). Both give the same bits.
bool tile_rows_fast();

constexpr float kHardSwishAlpha = 1.0f / 6.0f;  // ONNX HardSwish: HardSigmoid(y) with alpha 1/6, beta 0.5
constexpr float kHardSwishBeta = 0.5f;
constexpr float kInvSqrt2 = 0.70710678118654752f;
constexpr float kSqrt2OverPi = 0.79788456080286536f;
constexpr float kGeluTanhCoeff = 0.044715f;

// t = alpha * y + beta as two rounded steps (never one fused multiply-add), clamped to [0, 1]; NaN stays NaN.
__device__ __forceinline__ float hard_sigmoid_rn(float y, float alpha, float beta) {
    const float t = fp8ort_add_rn(fp8ort_mul_rn(y, alpha), beta);
    return t < 0.0f ? 0.0f : (t > 1.0f ? 1.0f : t);
}

// The activations other than Relu (reference.py defines them; the piecewise-linear ones are bit-exact here).
// 1 / (1 + exp(-t)) in float32 without a branch (a warp's values have both signs): e = exp(-|t|) lies in [0, 1] and
// never overflows, r = 1 / (1 + e) by the hardware reciprocal (1 + e lies in [1, 2]: no special case to check), and
// the sigmoid is r for t >= 0 and e * r = e / (1 + e) for t < 0, which reaches the float32 subnormals as the
// reference's float64 evaluation does (expf scales by 2^k without flushing). NaN stays NaN. Within a few float32 ulps
// of the reference: expf's, the reciprocal's and one product's rounding (the tests allow 8).
__device__ __forceinline__ float sigmoid_f32(float t) {
    const float e = expf(-fabsf(t));
    const float r = __fdividef(1.0f, 1.0f + e);
    return t >= 0.0f ? r : e * r;
}

// The activation's value, inlined where it is called: the standalone epilogue pass (fp8_epilogue_apply.hip), where a
// call per element costs more than the registers it saves.
__device__ __forceinline__ float activation_value(int act, float alpha, float beta, float y) {
    switch (act) {
        case FP8ORT_ACT_CLIP: return y < alpha ? alpha : (y > beta ? beta : y);
        case FP8ORT_ACT_HARD_SIGMOID: return hard_sigmoid_rn(y, alpha, beta);
        case FP8ORT_ACT_HARD_SWISH: return fp8ort_mul_rn(y, hard_sigmoid_rn(y, kHardSwishAlpha, kHardSwishBeta));
        case FP8ORT_ACT_SIGMOID: return sigmoid_f32(y);
        case FP8ORT_ACT_SILU: return y * sigmoid_f32(y);
        // as the reference, without the cancellation of 1 + erf / 1 + tanh for large negative y
        case FP8ORT_ACT_GELU: return 0.5f * y * erfcf(-y * kInvSqrt2);
        case FP8ORT_ACT_GELU_TANH: return y * sigmoid_f32(2.0f * kSqrt2OverPi * (y + kGeluTanhCoeff * y * y * y));
        default: return y;
    }
}

// Out of line: the tile epilogues' register budget stays that of Relu.
__device__ inline __noinline__ float apply_activation(int act, float alpha, float beta, float y) {
    return activation_value(act, alpha, beta, y);
}

// Four values per call (the tile epilogues' quads): a quarter of the calls, and four independent evaluations the
// compiler interleaves (the transcendental activations are latency chains: ex2/rcp, erfc). Each value is
// activation_value's, so the bits are those of the call per element.
__device__ inline __noinline__ float4 apply_activation4(int act, float alpha, float beta, float4 v) {
    return make_float4(activation_value(act, alpha, beta, v.x), activation_value(act, alpha, beta, v.y),
                       activation_value(act, alpha, beta, v.z), activation_value(act, alpha, beta, v.w));
}

__device__ __forceinline__ float decode_any(uint8_t v, fp8ort_dtype t) {
    switch (t) {
        case FP8ORT_E4M3FN: return decode_fp8<FP8ORT_E4M3FN>(v);
        case FP8ORT_E5M2: return decode_fp8<FP8ORT_E5M2>(v);
        case FP8ORT_E4M3FNUZ: return decode_fp8<FP8ORT_E4M3FNUZ>(v);
        default: return decode_fp8<FP8ORT_E5M2FNUZ>(v);
    }
}

__device__ __forceinline__ uint8_t quantize_any(float y, float s, fp8ort_dtype t) {
    switch (t) {
        case FP8ORT_E4M3FN: return quantize_fp8<FP8ORT_E4M3FN>(y, s, true);
        case FP8ORT_E5M2: return quantize_fp8<FP8ORT_E5M2>(y, s, true);
        case FP8ORT_E4M3FNUZ: return quantize_fp8<FP8ORT_E4M3FNUZ>(y, s, true);
        default: return quantize_fp8<FP8ORT_E5M2FNUZ>(y, s, true);
    }
}

// Per-column constants of the epilogue, loaded once per column a thread owns.
struct column_consts {
    float scale;  // x_scale * w_scale[n], rounded to float32 as the reference does
    float bias;
};

__device__ __forceinline__ column_consts load_column(const epilogue_args& p, int64_t col) {
    column_consts c;
    if (!p.x_scale) {  // the raw epilogue of a split-K partial sum (fp8_gemm_sm90.hip): scale 1, no bias
        c.scale = 1.0f;
        c.bias = 0.0f;
        return c;
    }
    const float ws = p.per_channel ? p.w_scale[col] : p.w_scale[0];
    c.scale = fp8ort_mul_rn(*p.x_scale, ws);
    c.bias = p.bias ? p.bias[col] : 0.0f;
    return c;
}

// The float32 value of one output before its activation: z is Z's element already scaled by z_scale (unused
// without Z).
__device__ __forceinline__ float epilogue_linear(const epilogue_args& p, const column_consts& c, float acc, float z) {
    float y = fp8ort_add_rn(acc, 0.0f);  // an all-(-0) sum is +0, as in the reference
    y = fp8ort_mul_rn(y, c.scale);
    if (p.bias) y = fp8ort_add_rn(y, c.bias);
    if (p.z) y = fp8ort_add_rn(y, z);
    return y;
}

// The float32 value of one output before its cast.
__device__ __forceinline__ float epilogue_value(const epilogue_args& p, const column_consts& c, float acc, float z) {
    const float y = epilogue_linear(p, c, acc, z);
    if (p.relu) return y < 0.0f ? 0.0f : y;
    return p.act != FP8ORT_ACT_NONE ? apply_activation(p.act, p.act_alpha, p.act_beta, y) : y;
}

// Apply the epilogue to one accumulator and store it at (row, col) (col is the global output column).
__device__ __forceinline__ void epilogue_store(const epilogue_args& p, const column_consts& c, float acc, int64_t row,
                                               int64_t col) {
    const int64_t idx = row * p.ld + col;
    float z = 0.0f;
    if (p.z) {
        z = is_fp8_type(p.z_type) ? decode_any(static_cast<const uint8_t*>(p.z)[idx], p.z_type)
                                  : load_hp(p.z, idx, p.z_type);
        if (p.z_scale) z = fp8ort_mul_rn(z, *p.z_scale);
    }
    const float y = epilogue_value(p, c, acc, z);
    switch (p.y_type) {
        case FP8ORT_FLOAT: static_cast<float*>(p.y)[idx] = y; break;
        case FP8ORT_FLOAT16: static_cast<uint16_t*>(p.y)[idx] = fp8ort_float_to_half_bits(y); break;
        case FP8ORT_BFLOAT16: static_cast<uint16_t*>(p.y)[idx] = fp8ort_float_to_bf16_bits(y); break;
        default: static_cast<uint8_t*>(p.y)[idx] = quantize_any(y, *p.y_scale, p.y_type); break;
    }
}

// ---- Tile epilogue: accumulators staged in shared memory, written back in coalesced row segments ----
// The matrix kernels write their float32 accumulators for a tile (or half a tile) to shared memory, then every
// thread of the block takes 4 consecutive columns of one row at a time: the per-column constants are read once
// per thread, the scalars once per block, Z is read and Y written 4 elements per access where alignment allows.
// Each element goes through epilogue_linear and then the activation as epilogue_value applies it (epilogue_store), so
// both give the same bits.

struct epilogue_scalars {
    float z_scale;       // used only when p.z_scale is set
    fp8_divisor y_scale;  // used only for FP8 outputs
};

__device__ __forceinline__ epilogue_scalars load_scalars(const epilogue_args& p) {
    epilogue_scalars s;
    s.z_scale = p.z_scale ? *p.z_scale : 1.0f;
    s.y_scale = make_fp8_divisor(is_fp8_type(p.y_type) ? *p.y_scale : 1.0f);
    return s;
}

// Z[idx + e] for e < 4 (vectorized when `vec`), decoded to float32 and scaled as the reference does.
__device__ __forceinline__ void load_z4(const epilogue_args& p, const epilogue_scalars& s, int64_t idx, int count,
                                        bool vec, float (&z)[4]) {
    if (vec && is_fp8_type(p.z_type)) {
        const uint32_t w = *reinterpret_cast<const uint32_t*>(static_cast<const uint8_t*>(p.z) + idx);
#pragma unroll
        for (int e = 0; e < 4; ++e) z[e] = decode_any(static_cast<uint8_t>(w >> (8 * e)), p.z_type);
    } else if (vec && p.z_type == FP8ORT_FLOAT) {
        const float4 w = *reinterpret_cast<const float4*>(static_cast<const float*>(p.z) + idx);
        z[0] = w.x, z[1] = w.y, z[2] = w.z, z[3] = w.w;
    } else if (vec) {  // float16 / bfloat16
        const uint2 w = *reinterpret_cast<const uint2*>(static_cast<const uint16_t*>(p.z) + idx);
        const uint32_t h[4] = {w.x & 0xffffu, w.x >> 16, w.y & 0xffffu, w.y >> 16};
#pragma unroll
        for (int e = 0; e < 4; ++e)
            z[e] = p.z_type == FP8ORT_FLOAT16 ? fp8ort_half_bits_to_float(static_cast<uint16_t>(h[e]))
                                             : fp8ort_bf16_bits_to_float(static_cast<uint16_t>(h[e]));
    } else {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            if (e >= count) break;
            z[e] = is_fp8_type(p.z_type) ? decode_any(static_cast<const uint8_t*>(p.z)[idx + e], p.z_type)
                                         : load_hp(p.z, idx + e, p.z_type);
        }
    }
    if (p.z_scale) {
#pragma unroll
        for (int e = 0; e < 4; ++e) z[e] = fp8ort_mul_rn(z[e], s.z_scale);
    }
}

// q(v[e], scale) with saturation for 4 values, as quantize_fp8, packed little-endian (v[0] in the low byte). On
// NVIDIA sm_89+ the OCP formats take one uniform test per 4 values: unless one of them is NaN (their sum is NaN
// then, or when +inf meets -inf: those also take the exact path) and when the scale is in the prepared range,
// fp8_quotient_fast gives each quotient without a branch and the hardware conversion encodes them
// (cvt.rn.satfinite: round to nearest even, saturating, the same codes as the exact encoder for every non-NaN
// input, infinities included). NaN keeps its sign through quantize_fp8.
template <fp8ort_fp8_format F>
__device__ __forceinline__ uint32_t quantize4(const float (&v)[4], const fp8_divisor& scale) {
#if defined(FP8ORT_CUDA) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
    if constexpr (F == FP8ORT_E4M3FN || F == FP8ORT_E5M2) {
        const float sum = (v[0] + v[1]) + (v[2] + v[3]);
        if (scale.fast && sum == sum) {
            constexpr __nv_fp8_interpretation_t kind = F == FP8ORT_E4M3FN ? __NV_E4M3 : __NV_E5M2;
            float d[4];
#pragma unroll
            for (int e = 0; e < 4; ++e) d[e] = fp8_quotient_fast(v[e], scale);
            const uint32_t lo = __nv_cvt_float2_to_fp8x2(make_float2(d[0], d[1]), __NV_SATFINITE, kind);
            const uint32_t hi = __nv_cvt_float2_to_fp8x2(make_float2(d[2], d[3]), __NV_SATFINITE, kind);
            return (lo & 0xffffu) | (hi << 16);
        }
    }
#endif
    uint32_t q = 0;
#pragma unroll
    for (int e = 0; e < 4; ++e) q |= static_cast<uint32_t>(quantize_fp8<F>(v[e], scale, true)) << (8 * e);
    return q;
}

// epilogue_quad (below) with Z's four values already loaded and scaled by load_z4 (zeros without Z).
template <int Y, bool kInlineAct = false, bool kActQuad = false>
__device__ __forceinline__ void epilogue_quad_z(const epilogue_args& p, const epilogue_scalars& sc,
                                                const column_consts (&cc)[4], float (&v)[4], const float (&z)[4],
                                                int64_t idx, int count, bool vec_y) {
    // the activation as epilogue_value applies it: a call per value (the portable GEMM: its 128-register budget
    // spills more around a four-value call), inlined (kInlineAct), or one call for the four values (kActQuad: where
    // the caller's registers are free, after a tile's accumulators went to shared memory)
    if constexpr (!kInlineAct && !kActQuad) {
#pragma unroll
        for (int e = 0; e < 4; ++e) v[e] = epilogue_value(p, cc[e], v[e], z[e]);
    } else {
#pragma unroll
        for (int e = 0; e < 4; ++e) v[e] = epilogue_linear(p, cc[e], v[e], z[e]);
        if (p.relu) {
#pragma unroll
            for (int e = 0; e < 4; ++e) v[e] = v[e] < 0.0f ? 0.0f : v[e];
        } else if (p.act != FP8ORT_ACT_NONE) {
            if constexpr (kInlineAct) {
#pragma unroll
                for (int e = 0; e < 4; ++e) v[e] = activation_value(p.act, p.act_alpha, p.act_beta, v[e]);
            } else if (p.act == FP8ORT_ACT_SILU && p.silu_inline) {
                // activation_value's SiLU expression, inlined: the callers unroll four rows, so sixteen independent
                // evaluations the compiler can interleave (the call leaves each one's latency exposed)
#pragma unroll
                for (int e = 0; e < 4; ++e) v[e] = v[e] * sigmoid_f32(v[e]);
            } else {
                const float4 a =
                    apply_activation4(p.act, p.act_alpha, p.act_beta, make_float4(v[0], v[1], v[2], v[3]));
                v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w;
            }
        }
    }
    if constexpr (Y == FP8ORT_FLOAT) {
        float* out = static_cast<float*>(p.y) + idx;
        if (vec_y) {
            *reinterpret_cast<float4*>(out) = make_float4(v[0], v[1], v[2], v[3]);
        } else {
#pragma unroll
            for (int e = 0; e < 4; ++e)
                if (e < count) out[e] = v[e];
        }
    } else if constexpr (Y == FP8ORT_FLOAT16 || Y == FP8ORT_BFLOAT16) {
        uint16_t h[4];
#pragma unroll
        for (int e = 0; e < 4; ++e)
            h[e] = Y == FP8ORT_FLOAT16 ? fp8ort_float_to_half_bits(v[e]) : fp8ort_float_to_bf16_bits(v[e]);
        uint16_t* out = static_cast<uint16_t*>(p.y) + idx;
        if (vec_y) {
            *reinterpret_cast<uint2*>(out) = make_uint2(h[0] | (static_cast<uint32_t>(h[1]) << 16),
                                                        h[2] | (static_cast<uint32_t>(h[3]) << 16));
        } else {
#pragma unroll
            for (int e = 0; e < 4; ++e)
                if (e < count) out[e] = h[e];
        }
    } else {
        const uint32_t q = quantize4<static_cast<fp8ort_fp8_format>(Y)>(v, sc.y_scale);
        uint8_t* out = static_cast<uint8_t*>(p.y) + idx;
        if (vec_y) {
            *reinterpret_cast<uint32_t*>(out) = q;
        } else {
#pragma unroll
            for (int e = 0; e < 4; ++e)
                if (e < count) out[e] = static_cast<uint8_t>(q >> (8 * e));
        }
    }
}

// The epilogue of 4 consecutive columns of one output row at element offset idx for output type Y (an fp8ort_dtype
// value): v holds the accumulators of the columns, cc their constants; only `count` columns exist, `vec_y` /
// `vec_z`: Y / Z are accessed 4 elements at a time (idx % 4 == 0, 16-byte aligned base pointers).
template <int Y, bool kInlineAct = false, bool kActQuad = false>
__device__ __forceinline__ void epilogue_quad(const epilogue_args& p, const epilogue_scalars& sc,
                                              const column_consts (&cc)[4], float (&v)[4], int64_t idx, int count,
                                              bool vec_y, bool vec_z) {
    float z[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    if (p.z) load_z4(p, sc, idx, count, vec_z, z);
    epilogue_quad_z<Y, kInlineAct, kActQuad>(p, sc, cc, v, z, idx, count, vec_y);
}

// epilogue_rows with an E4M3FN residual read 4 bytes at a time (vec_z): the Z words of kZAhead rows are loaded before
// any of those rows is stored, so a thread has kZAhead loads in flight instead of one load, its wait and its store
// per row (the compiler cannot move a load of Z past a store to Y), and the four codes of a word are decoded
// together (decode4_fp8: the hardware conversion, where decode_any decodes each byte in software after a switch on
// the type). Same values as load_z4: both decodes are exact, then the same product with z_scale. A thread reads and
// writes only its own elements, so Y may even be Z.
template <int Y>
__device__ __forceinline__ void epilogue_rows_z_ahead(const epilogue_args& p, const epilogue_scalars& sc,
                                                      const float* s, int ld_s, int r_begin, int r_end, int r_step,
                                                      int c, int count, int64_t idx, int64_t idx_step,
                                                      const column_consts (&cc)[4], bool vec_y) {
    constexpr int kZAhead = 8;
    const uint8_t* z = static_cast<const uint8_t*>(p.z);
    for (int r = r_begin; r < r_end; r += kZAhead * r_step, idx += kZAhead * idx_step) {
        uint32_t zw[kZAhead];
#pragma unroll
        for (int g = 0; g < kZAhead; ++g)
            zw[g] = r + g * r_step < r_end ? *reinterpret_cast<const uint32_t*>(z + idx + g * idx_step) : 0u;
#pragma unroll
        for (int g = 0; g < kZAhead; ++g) {
            if (r + g * r_step >= r_end) break;
            const float4 a4 = *reinterpret_cast<const float4*>(s + (r + g * r_step) * ld_s + c);
            float v[4] = {a4.x, a4.y, a4.z, a4.w};
            float zv[4];
            decode4_fp8<FP8ORT_E4M3FN>(zw[g], zv);
            if (p.z_scale) {
#pragma unroll
                for (int e = 0; e < 4; ++e) zv[e] = fp8ort_mul_rn(zv[e], sc.z_scale);
            }
            epilogue_quad_z<Y, false, true>(p, sc, cc, v, zv, idx + g * idx_step, count, vec_y);
        }
    }
}

#if defined(FP8ORT_CUDA) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
#define FP8ORT_HAS_FAST_ROWS 1
// Four staged accumulators from shared memory (the tile epilogues' staging buffer) at a shared-window address: LDS
// instead of the generic load a float pointer gets. volatile: never moved above the barrier that publishes them.
__device__ __forceinline__ float4 lds_f32x4(uint32_t addr) {
    float4 v;
    asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];\n" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "r"(addr));
    return v;
}

// max(|a|, |b|), NaN if either is NaN (fmaxf would drop it).
__device__ __forceinline__ float max_abs_nan(float a, float b) {
    float m;
    asm("max.NaN.f32 %0, %1, %2;\n" : "=f"(m) : "f"(fabsf(a)), "f"(fabsf(b)));
    return m;
}

// RN(y / d.s) for FP8 encoding where d.fast and |y| < 2^64 (the caller tests a group of values at once; NaN and
// infinities fail that test): fp8_quotient_fast's two corrections without its per-value range test. In range they
// give RN(y / s). Below it (|y| < 2^-64, so |y / s| < 2^-24: a zero of the sign of y / s in every FP8 format) q2 is
// as tiny as y / s but may lose the sign of a zero (y = -0: the correction adds -0 to +0); q0 = y * RN(1 / s) has
// the sign of y / s, zeros included, and gives q2 its sign.
__device__ __forceinline__ float fp8_quotient_group(float y, const fp8_divisor& d) {
    const fp8_quotient_steps q = fp8_quotient_corrected(y, d);
    return __uint_as_float((__float_as_uint(q.q2) & 0x7fffffffu) | (__float_as_uint(q.q0) & 0x80000000u));
}

// The constants of fast quads (epilogue_quads_fast) for one thread's four columns.
struct fast_quad_consts {
    float scale[4];
    float bias[4];  // -0 without a bias: y + -0 is y for every y
    float lo;       // Relu's floor, -inf without Relu
    float zs;       // Z's scale, 1 without one
};

__device__ __forceinline__ fast_quad_consts make_fast_quad_consts(const epilogue_args& p, const epilogue_scalars& sc,
                                                                  const column_consts (&cc)[4]) {
    fast_quad_consts k;
#pragma unroll
    for (int e = 0; e < 4; ++e) k.scale[e] = cc[e].scale, k.bias[e] = p.bias ? cc[e].bias : -0.0f;
    k.lo = p.relu ? 0.0f : -INFINITY;
    k.zs = p.z_scale ? sc.z_scale : 1.0f;
    return k;
}

// Whether fast quads apply to a thread's four columns (a test uniform over its outputs): an E4M3FN output written 4
// bytes at a time (vec_y), no activation, Relu or SiLU, an E4M3FN residual read 4 bytes at a time or none (no
// residual with SiLU), a prepared divisor, and the switch (p.rows_fast).
__device__ __forceinline__ bool fast_quads_apply(const epilogue_args& p, const epilogue_scalars& sc, bool vec_y,
                                                 bool vec_z) {
    const bool z_ok = !p.z || (vec_z && p.z_type == FP8ORT_E4M3FN && p.act == FP8ORT_ACT_NONE);
    return p.rows_fast && p.y_type == FP8ORT_E4M3FN && vec_y && sc.y_scale.fast && z_ok &&
           (p.act == FP8ORT_ACT_NONE || p.act == FP8ORT_ACT_SILU);
}

// kN quads of a thread's four columns (v[i]: their accumulators; the outputs at element offsets off[i], those with
// bit i of `valid`) for an E4M3FN output, with no branch between the accumulators and the stores, so that the
// compiler interleaves 4 * kN independent chains (epilogue_quad branches per four values: on the residual, the
// activation, the quotient's range and the store's alignment, and its latency chains stay exposed with the few
// warps of a tile kernel). Only where fast_quads_apply; step for step as epilogue_quad_z: the same bits. kZ: zw[i]
// holds the quad's four E4M3FN residual codes, decoded by the hardware conversion (exact; a NaN code gives a NaN that
// the sum turns into the canonical NaN, as epilogue_linear's sum does). Relu is y < lo ? lo : y. The quotient's range
// is tested once for all 4 * kN values: a group holding a NaN, an infinity or a magnitude of 2^64 or more goes
// through quantize4 quad by quad.
template <int kN, bool kZ, bool kSilu>
__device__ __forceinline__ void epilogue_quads_fast(const epilogue_args& p, const epilogue_scalars& sc,
                                                    const fast_quad_consts& k, float (&v)[kN][4],
                                                    const uint32_t (&zw)[kN], const int64_t (&off)[kN],
                                                    uint32_t valid) {
    uint8_t* y = static_cast<uint8_t*>(p.y);
#pragma unroll
    for (int i = 0; i < kN; ++i) {
        float zv[4];
        if constexpr (kZ) decode4_fp8_hw<FP8ORT_E4M3FN>(zw[i], zv);
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            float t = fp8ort_add_rn(v[i][e], 0.0f);  // an all-(-0) sum is +0, as in the reference
            t = fp8ort_add_rn(fp8ort_mul_rn(t, k.scale[e]), k.bias[e]);
            if constexpr (kZ) t = fp8ort_add_rn(t, fp8ort_mul_rn(zv[e], k.zs));
            if constexpr (kSilu) t = t * sigmoid_f32(t);
            else t = t < k.lo ? k.lo : t;
            v[i][e] = t;
        }
    }
    float m = max_abs_nan(v[0][0], v[0][1]);
#pragma unroll
    for (int i = 0; i < kN; ++i)
#pragma unroll
        for (int e = (i == 0 ? 2 : 0); e < 4; ++e) m = max_abs_nan(m, v[i][e]);
    if (m < 0x1p64f) {
#pragma unroll
        for (int i = 0; i < kN; ++i) {
            float q[4];
#pragma unroll
            for (int e = 0; e < 4; ++e) q[e] = fp8_quotient_group(v[i][e], sc.y_scale);
            const uint32_t lo2 = __nv_cvt_float2_to_fp8x2(make_float2(q[0], q[1]), __NV_SATFINITE, __NV_E4M3);
            const uint32_t hi2 = __nv_cvt_float2_to_fp8x2(make_float2(q[2], q[3]), __NV_SATFINITE, __NV_E4M3);
            if ((valid >> i) & 1u) __stwb(reinterpret_cast<unsigned int*>(y + off[i]), (lo2 & 0xffffu) | (hi2 << 16));
        }
    } else {  // unrolled: an index into v that is not a constant would put v in local memory
#pragma unroll
        for (int i = 0; i < kN; ++i)
            if ((valid >> i) & 1u)
                *reinterpret_cast<uint32_t*>(y + off[i]) = quantize4<FP8ORT_E4M3FN>(v[i], sc.y_scale);
    }
}

// The rows of one thread of a tile epilogue as fast quads, four rows (sixteen values) per step (epilogue_rows takes
// them where fast_quads_apply and the thread has four whole columns): the staged accumulators by ld.shared (a float
// pointer gets the generic load), the residual's words a step ahead. Rows past the thread's `rows` are computed from
// zeros but neither read from Z nor stored. s_addr: the shared address of the thread's first row at column c; the
// row step (r_step rows) is s_step bytes in shared memory and idx_step elements in Y and Z.
template <bool kZ, bool kSilu>
__device__ __forceinline__ void epilogue_rows_fast(const epilogue_args& p, const epilogue_scalars& sc,
                                                   uint32_t s_addr, uint32_t s_step, int rows, int64_t idx,
                                                   int64_t idx_step, const column_consts (&cc)[4]) {
    const uint8_t* z = static_cast<const uint8_t*>(p.z);
    const fast_quad_consts k = make_fast_quad_consts(p, sc, cc);
    uint32_t zn[4] = {0u, 0u, 0u, 0u};  // the next step's residual words, loaded a step ahead
    if constexpr (kZ) {
#pragma unroll
        for (int i = 0; i < 4; ++i)
            if (i < rows) zn[i] = __ldcg(reinterpret_cast<const unsigned int*>(z + idx + i * idx_step));
    }
#pragma unroll 1
    for (int g = 0; g < rows; g += 4, idx += 4 * idx_step, s_addr += 4 * s_step) {
        uint32_t zw[4] = {0u, 0u, 0u, 0u};
        if constexpr (kZ) {
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                zw[i] = zn[i];
                zn[i] = g + 4 + i < rows
                            ? __ldcg(reinterpret_cast<const unsigned int*>(z + idx + (4 + i) * idx_step))
                            : 0u;
            }
        }
        float v[4][4];
        int64_t off[4];
        uint32_t valid = 0;
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            const float4 a = g + i < rows ? lds_f32x4(s_addr + i * s_step) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            v[i][0] = a.x, v[i][1] = a.y, v[i][2] = a.z, v[i][3] = a.w;
            off[i] = idx + i * idx_step;
            valid |= (g + i < rows ? 1u : 0u) << i;
        }
        epilogue_quads_fast<4, kZ, kSilu>(p, sc, k, v, zw, off, valid);
    }
}
#endif  // NVIDIA sm_89+

// The rows of one tile for output type Y (an fp8ort_dtype value). Four rows at a time for instruction-level
// parallelism: the epilogue runs with few warps per multiprocessor.
template <int Y, bool kActQuad>
__device__ FP8ORT_INLINE_ON_NVIDIA void epilogue_rows(const epilogue_args& p, const epilogue_scalars& sc, const float* s, int ld_s,
                                              int r_begin, int r_end, int r_step, int c, int count, int64_t row0,
                                              int64_t gcol, const column_consts (&cc)[4], bool vec_y, bool vec_z) {
    // element offsets advance by a stride instead of a 64-bit multiply per row
    int64_t idx = (row0 + r_begin) * p.ld + gcol;
    const int64_t idx_step = static_cast<int64_t>(r_step) * p.ld;
    // the residual layers of the models (an E4M3FN Z into an E4M3FN Y) in the sm90a tile epilogues (kActQuad: the
    // callers whose registers are free here); other types and the portable GEMM keep the row loop below
    if constexpr (kActQuad && Y == FP8ORT_E4M3FN) {
#if defined(FP8ORT_HAS_FAST_ROWS)
        if (count == 4 && fast_quads_apply(p, sc, vec_y, vec_z)) {
            const bool silu = p.act == FP8ORT_ACT_SILU;
            const int rows = r_begin < r_end ? (r_end - r_begin + r_step - 1) / r_step : 0;
            const uint32_t s_addr = static_cast<uint32_t>(__cvta_generic_to_shared(s + r_begin * ld_s + c));
            const uint32_t s_step = static_cast<uint32_t>(r_step * ld_s * sizeof(float));
            if (p.z) epilogue_rows_fast<true, false>(p, sc, s_addr, s_step, rows, idx, idx_step, cc);
            else if (silu) epilogue_rows_fast<false, true>(p, sc, s_addr, s_step, rows, idx, idx_step, cc);
            else epilogue_rows_fast<false, false>(p, sc, s_addr, s_step, rows, idx, idx_step, cc);
            return;
        }
#endif
        if (p.z && vec_z && p.z_type == FP8ORT_E4M3FN && p.z_ahead) {
            epilogue_rows_z_ahead<Y>(p, sc, s, ld_s, r_begin, r_end, r_step, c, count, idx, idx_step, cc, vec_y);
            return;
        }
    }
#pragma unroll 4
    for (int r = r_begin; r < r_end; r += r_step, idx += idx_step) {
        const float4 a4 = *reinterpret_cast<const float4*>(s + r * ld_s + c);
        float v[4] = {a4.x, a4.y, a4.z, a4.w};
        epilogue_quad<Y, false, kActQuad>(p, sc, cc, v, idx, count, vec_y, vec_z);
    }
}

// The constants of a thread's four columns in a tile epilogue (epilogue_tile), loaded on their own so that a kernel
// can issue these loads before it waits for its operands (the sm90a tiles: their latency then hides behind the
// tile's loads and multiplies instead of following them).
struct tile_columns {
    column_consts cc[4];
    epilogue_scalars sc;
};

template <int kCols>
__device__ __forceinline__ tile_columns load_tile_columns(const epilogue_args& p, int64_t gcol0, int64_t cols_left,
                                                          int tid) {
    tile_columns t;
    const int c = (tid % (kCols / 4)) * 4;
#pragma unroll
    for (int e = 0; e < 4; ++e)
        t.cc[e] = c + e < cols_left ? load_column(p, gcol0 + c + e) : column_consts{0.0f, 0.0f};
    t.sc = load_scalars(p);
    return t;
}

// Apply the epilogue to a tile_rows x kCols float tile in shared memory (row stride ld_s floats, 16-byte aligned
// rows) and store it at output rows row0.. and global columns gcol0..; only rows_left rows and cols_left columns
// of the tile exist. Called by all kThreads threads of the block (tid = 0 .. kThreads-1), no barrier inside.
// kActQuad: a transcendental activation as one call per four values (epilogue_quad), for callers with free registers.
// cols: the thread's column constants (load_tile_columns with the same gcol0, cols_left and tid).
template <int kCols, int kThreads, bool kActQuad = false>
__device__ __forceinline__ void epilogue_tile(const epilogue_args& p, const float* s, int ld_s, int tile_rows,
                                              int64_t row0, int64_t gcol0, int64_t rows_left, int64_t cols_left,
                                              int tid, const tile_columns& cols) {
    constexpr int kThreadsPerRow = kCols / 4;
    static_assert(kThreads % kThreadsPerRow == 0, "whole rows per pass");
    const int c = (tid % kThreadsPerRow) * 4;
    if (c >= cols_left) return;
    const int count = cols_left - c >= 4 ? 4 : static_cast<int>(cols_left - c);
    const int64_t gcol = gcol0 + c;
    const column_consts(&cc)[4] = cols.cc;
    const epilogue_scalars& sc = cols.sc;
    const int r_end = rows_left < tile_rows ? static_cast<int>(rows_left) : tile_rows;
    const bool aligned = count == 4 && p.ld % 4 == 0 && gcol % 4 == 0;
    const bool vec_y = aligned && reinterpret_cast<uintptr_t>(p.y) % 16 == 0;
    const bool vec_z = aligned && p.z && reinterpret_cast<uintptr_t>(p.z) % 16 == 0;
    const int r_begin = tid / kThreadsPerRow;
    constexpr int r_step = kThreads / kThreadsPerRow;
    switch (p.y_type) {
        case FP8ORT_FLOAT:
            epilogue_rows<FP8ORT_FLOAT, kActQuad>(p, sc, s, ld_s, r_begin, r_end, r_step, c, count, row0, gcol, cc, vec_y, vec_z);
            break;
        case FP8ORT_FLOAT16:
            epilogue_rows<FP8ORT_FLOAT16, kActQuad>(p, sc, s, ld_s, r_begin, r_end, r_step, c, count, row0, gcol, cc, vec_y, vec_z);
            break;
        case FP8ORT_BFLOAT16:
            epilogue_rows<FP8ORT_BFLOAT16, kActQuad>(p, sc, s, ld_s, r_begin, r_end, r_step, c, count, row0, gcol, cc, vec_y, vec_z);
            break;
        case FP8ORT_E4M3FN:
            epilogue_rows<FP8ORT_E4M3FN, kActQuad>(p, sc, s, ld_s, r_begin, r_end, r_step, c, count, row0, gcol, cc, vec_y, vec_z);
            break;
        case FP8ORT_E5M2:
            epilogue_rows<FP8ORT_E5M2, kActQuad>(p, sc, s, ld_s, r_begin, r_end, r_step, c, count, row0, gcol, cc, vec_y, vec_z);
            break;
        case FP8ORT_E4M3FNUZ:
            epilogue_rows<FP8ORT_E4M3FNUZ, kActQuad>(p, sc, s, ld_s, r_begin, r_end, r_step, c, count, row0, gcol, cc, vec_y, vec_z);
            break;
        default:
            epilogue_rows<FP8ORT_E5M2FNUZ, kActQuad>(p, sc, s, ld_s, r_begin, r_end, r_step, c, count, row0, gcol, cc, vec_y, vec_z);
            break;
    }
}

// epilogue_tile with the column constants loaded here.
template <int kCols, int kThreads, bool kActQuad = false>
__device__ __forceinline__ void epilogue_tile(const epilogue_args& p, const float* s, int ld_s, int tile_rows,
                                              int64_t row0, int64_t gcol0, int64_t rows_left, int64_t cols_left,
                                              int tid) {
    if ((tid % (kCols / 4)) * 4 >= cols_left) return;
    epilogue_tile<kCols, kThreads, kActQuad>(p, s, ld_s, tile_rows, row0, gcol0, rows_left, cols_left, tid,
                                             load_tile_columns<kCols>(p, gcol0, cols_left, tid));
}

// Host: check an fp8ort_epilogue for N output channels and turn it into kernel arguments.
inline fp8ort_status make_epilogue_args(const char* op, const fp8ort_epilogue* e, int64_t n, void* y, int64_t ld,
                                        epilogue_args* out) {
    if (!e) return fail(FP8ORT_INVALID_ARGUMENT, "%s: epilogue is NULL", op);
    if (!e->x_scale || !e->w_scale) return fail(FP8ORT_INVALID_ARGUMENT, "%s: x_scale and w_scale are required", op);
    if (e->w_scale_count != 1 && e->w_scale_count != n)
        return fail(FP8ORT_INVALID_ARGUMENT, "%s: w_scale has %lld values, expected 1 or %lld", op,
                    static_cast<long long>(e->w_scale_count), static_cast<long long>(n));
    if (!is_hp_type(e->y_type) && !is_fp8_type(e->y_type))
        return fail(FP8ORT_INVALID_ARGUMENT, "%s: output type %d is not supported", op, static_cast<int>(e->y_type));
    if (is_fp8_type(e->y_type) && !e->y_scale)
        return fail(FP8ORT_INVALID_ARGUMENT, "%s: an FP8 output (%s) needs y_scale", op, dtype_name(e->y_type));
    if (e->z) {
        if (!is_hp_type(e->z_type) && !is_fp8_type(e->z_type))
            return fail(FP8ORT_INVALID_ARGUMENT, "%s: residual type %d is not supported", op, static_cast<int>(e->z_type));
        if (is_fp8_type(e->z_type) && !e->z_scale)
            return fail(FP8ORT_INVALID_ARGUMENT, "%s: an FP8 residual Z (%s) needs z_scale", op, dtype_name(e->z_type));
    }
    if (e->relu != 0 && e->relu != 1) return fail(FP8ORT_INVALID_ARGUMENT, "%s: relu must be 0 or 1", op);
    const int act = static_cast<int>(e->activation);
    if (act < FP8ORT_ACT_NONE || act > FP8ORT_ACT_GELU_TANH)
        return fail(FP8ORT_INVALID_ARGUMENT, "%s: activation %d is not an fp8ort_activation (0..%d)", op, act,
                    static_cast<int>(FP8ORT_ACT_GELU_TANH));
    if (e->relu == 1 && act != FP8ORT_ACT_NONE && act != FP8ORT_ACT_RELU)
        return fail(FP8ORT_INVALID_ARGUMENT, "%s: relu = 1 with activation %d: set relu = 0 or activation = RELU", op,
                    act);
    const float lo = e->activation_alpha, hi = e->activation_beta;
    if (act == FP8ORT_ACT_CLIP && !(lo <= hi))
        return fail(FP8ORT_INVALID_ARGUMENT, "%s: Clip needs activation_alpha (min) <= activation_beta (max), not NaN; "
                    "got %g, %g", op, static_cast<double>(lo), static_cast<double>(hi));
    if (act == FP8ORT_ACT_HARD_SIGMOID && !(std::isfinite(lo) && std::isfinite(hi)))
        return fail(FP8ORT_INVALID_ARGUMENT, "%s: HardSigmoid needs finite activation_alpha and activation_beta; got "
                    "%g, %g", op, static_cast<double>(lo), static_cast<double>(hi));
    if (!y) return fail(FP8ORT_INVALID_ARGUMENT, "%s: output pointer is NULL", op);
    const bool relu = e->relu == 1 || act == FP8ORT_ACT_RELU;
    *out = epilogue_args{e->x_scale, e->w_scale, e->w_scale_count != 1, e->bias, e->z, e->z_type, e->z_scale,
                         e->y_scale, relu, e->y_type, y, ld, 0,
                         relu ? static_cast<int>(FP8ORT_ACT_NONE) : act, lo, hi, tile_silu_inline(), tile_z_ahead(),
                         tile_rows_fast()};
    return FP8ORT_OK;
}

}  // namespace fp8ort
