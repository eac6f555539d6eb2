// The Hopper (sm_90a) FP8 GEMM: TMA loads into 128-byte-swizzled shared memory, wgmma m64n128k32 / m64n256k32,
// a producer warpgroup and two consumer warpgroups. Only NVIDIA sm90a builds contain it.
#pragma once

#include "fp8_epilogue.h"

namespace fp8ort {

// Whether launch_gemm_sm90 takes this problem (format and alignment; the device is checked separately).
bool sm90_can_run(fp8ort_fp8_format format, int64_t m, int64_t n, int64_t k);
bool device_is_sm90();
// fast_accumulation: accumulate all of K inside wgmma (about 14 bits kept, cuBLASLt's FAST_ACCUM) instead of
// adding each 128-deep partial sum into float32 registers.
fp8ort_status launch_gemm_sm90(const uint8_t* a, const uint8_t* b, fp8ort_fp8_format format, int64_t m, int64_t n,
                               int64_t k, bool fast_accumulation, const epilogue_args& ep, hipStream_t stream);

// The sm90a implicit-GEMM convolution: one group, in_c % 16 == 0, OCP formats, 16-byte aligned X and weight.
bool sm90_conv_can_run(fp8ort_fp8_format format, const fp8ort_conv_shape& s, const void* x, const void* w);
fp8ort_status launch_conv_sm90(const uint8_t* x, const uint8_t* w, fp8ort_fp8_format format, const fp8ort_conv_shape& s,
                               int64_t out_h, int64_t out_w, const epilogue_args& ep, hipStream_t stream);
// fp8ort_gemm_set_kernel_override's value (0 automatic, 1 portable, 2 sm90a, 3 sm90a fast accumulation).
int gemm_kernel_override();

}  // namespace fp8ort
