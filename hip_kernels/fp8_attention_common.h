// What the FP8Attention kernels share (fp8_attention.hip: float32 Q/K/V; fp8_attention_f16.hip: float16): how a
// finished query row is written.
#pragma once

#include <math.h>

#include "fp8_numerics.h"
#include "fp8_status.h"

namespace fp8ort {
namespace attention {

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

}  // namespace attention
}  // namespace fp8ort
