// A blocked float32 GEMM for the standard-op CPU kernels (MatMul, Gemm, Conv): B packed into panels of kNR columns,
// A into tiles of kMR rows, a kMR x kNR register-tile micro-kernel compiled for AVX2+FMA and a portable fallback
// (picked at load time by the compiler's target_clones). Accumulates in float32 like ORT's own CPU kernels.
#pragma once

#include <cstdint>

#include "ort/ort_api.h"

namespace fp8ort {
namespace cpu_onnx {

// Element (i, j) of a strided matrix: p[i * rs + j * cs].
struct MatrixView {
  const float* p;
  int64_t rs;
  int64_t cs;
};

// c[i * ldc + j] = sum_k A(i, k) * B(k, j) for i < m, j < n (overwrites c). Runs tiles on ORT's thread pool when
// ctx is given.
void gemm_f32(OrtKernelContext* ctx, int64_t m, int64_t n, int64_t k, MatrixView a, MatrixView b, float* c,
              int64_t ldc);

}  // namespace cpu_onnx
}  // namespace fp8ort
