// The fused float32 epilogue shared by the GEMM and convolution kernels, step for step as reference.py's
// _epilogue: y = acc * (x_scale * w_scale[n]); y += bias[n]; y += float(Z) * z_scale; relu; cast or q(y, y_scale).
#pragma once

#include "fp8_numerics.h"
#include "fp8_status.h"

namespace fp8ort {

struct epilogue_args {
    const float* x_scale;
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
};

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
    const float ws = p.per_channel ? p.w_scale[col] : p.w_scale[0];
    column_consts c;
    c.scale = fp8ort_mul_rn(*p.x_scale, ws);
    c.bias = p.bias ? p.bias[col] : 0.0f;
    return c;
}

// Apply the epilogue to one accumulator and store it at (row, col) (col is the global output column).
__device__ __forceinline__ void epilogue_store(const epilogue_args& p, const column_consts& c, float acc, int64_t row,
                                               int64_t col) {
    float y = fp8ort_add_rn(acc, 0.0f);  // an all-(-0) sum is +0, as in the reference
    y = fp8ort_mul_rn(y, c.scale);
    if (p.bias) y = fp8ort_add_rn(y, c.bias);
    const int64_t idx = row * p.ld + col;
    if (p.z) {
        float z = is_fp8_type(p.z_type) ? decode_any(static_cast<const uint8_t*>(p.z)[idx], p.z_type)
                                        : load_hp(p.z, idx, p.z_type);
        if (p.z_scale) z = fp8ort_mul_rn(z, *p.z_scale);
        y = fp8ort_add_rn(y, z);
    }
    if (p.relu) y = y < 0.0f ? 0.0f : y;
    switch (p.y_type) {
        case FP8ORT_FLOAT: static_cast<float*>(p.y)[idx] = y; break;
        case FP8ORT_FLOAT16: static_cast<uint16_t*>(p.y)[idx] = fp8ort_float_to_half_bits(y); break;
        case FP8ORT_BFLOAT16: static_cast<uint16_t*>(p.y)[idx] = fp8ort_float_to_bf16_bits(y); break;
        default: static_cast<uint8_t*>(p.y)[idx] = quantize_any(y, *p.y_scale, p.y_type); break;
    }
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
    if (!y) return fail(FP8ORT_INVALID_ARGUMENT, "%s: output pointer is NULL", op);
    *out = epilogue_args{e->x_scale, e->w_scale, e->w_scale_count != 1, e->bias, e->z, e->z_type, e->z_scale,
                         e->y_scale, e->relu != 0, e->y_type, y, ld, 0};
    return FP8ORT_OK;
}

}  // namespace fp8ort
