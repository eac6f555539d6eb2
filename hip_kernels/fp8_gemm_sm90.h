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

}  // namespace fp8ort
