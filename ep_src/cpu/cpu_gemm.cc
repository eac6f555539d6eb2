#include "cpu/cpu_gemm.h"

namespace fp8ort {

void micro_kernel_generic(int64_t k, const double* a, const double* b, double* c, int64_t ldc, bool accumulate) {
  double acc[kMR][kNR] = {};
  for (int64_t t = 0; t < k; ++t) {
    const double* at = a + t * kMR;
    const double* bt = b + t * kNR;
    for (int i = 0; i < kMR; ++i) {
      for (int j = 0; j < kNR; ++j) acc[i][j] += at[i] * bt[j];
    }
  }
  for (int i = 0; i < kMR; ++i) {
    for (int j = 0; j < kNR; ++j) c[i * ldc + j] = accumulate ? c[i * ldc + j] + acc[i][j] : acc[i][j];
  }
}

MicroKernel select_micro_kernel() {
#if defined(FP8ORT_HAVE_AVX2_KERNEL)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return micro_kernel_avx2;
#endif
  return micro_kernel_generic;
}

}  // namespace fp8ort
