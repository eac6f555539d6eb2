// AVX2/FMA micro-kernel (this file alone is compiled with -mavx2 -mfma; chosen at run time).
#include <immintrin.h>

#include "cpu/cpu_gemm.h"

namespace fp8ort {

void micro_kernel_avx2(int64_t k, const double* a, const double* b, double* c, int64_t ldc, bool accumulate) {
  static_assert(kMR == 6 && kNR == 8, "the AVX2 kernel is written for 6x8 tiles");
  __m256d c00 = _mm256_setzero_pd(), c01 = _mm256_setzero_pd();
  __m256d c10 = _mm256_setzero_pd(), c11 = _mm256_setzero_pd();
  __m256d c20 = _mm256_setzero_pd(), c21 = _mm256_setzero_pd();
  __m256d c30 = _mm256_setzero_pd(), c31 = _mm256_setzero_pd();
  __m256d c40 = _mm256_setzero_pd(), c41 = _mm256_setzero_pd();
  __m256d c50 = _mm256_setzero_pd(), c51 = _mm256_setzero_pd();
  for (int64_t t = 0; t < k; ++t) {
    const __m256d b0 = _mm256_loadu_pd(b + t * kNR);
    const __m256d b1 = _mm256_loadu_pd(b + t * kNR + 4);
    const double* at = a + t * kMR;
    __m256d av = _mm256_broadcast_sd(at + 0);
    c00 = _mm256_fmadd_pd(av, b0, c00);
    c01 = _mm256_fmadd_pd(av, b1, c01);
    av = _mm256_broadcast_sd(at + 1);
    c10 = _mm256_fmadd_pd(av, b0, c10);
    c11 = _mm256_fmadd_pd(av, b1, c11);
    av = _mm256_broadcast_sd(at + 2);
    c20 = _mm256_fmadd_pd(av, b0, c20);
    c21 = _mm256_fmadd_pd(av, b1, c21);
    av = _mm256_broadcast_sd(at + 3);
    c30 = _mm256_fmadd_pd(av, b0, c30);
    c31 = _mm256_fmadd_pd(av, b1, c31);
    av = _mm256_broadcast_sd(at + 4);
    c40 = _mm256_fmadd_pd(av, b0, c40);
    c41 = _mm256_fmadd_pd(av, b1, c41);
    av = _mm256_broadcast_sd(at + 5);
    c50 = _mm256_fmadd_pd(av, b0, c50);
    c51 = _mm256_fmadd_pd(av, b1, c51);
  }
  const __m256d rows[kMR][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31}, {c40, c41}, {c50, c51}};
  for (int i = 0; i < kMR; ++i) {
    double* ci = c + i * ldc;
    __m256d r0 = rows[i][0], r1 = rows[i][1];
    if (accumulate) {
      r0 = _mm256_add_pd(r0, _mm256_loadu_pd(ci));
      r1 = _mm256_add_pd(r1, _mm256_loadu_pd(ci + 4));
    }
    _mm256_storeu_pd(ci, r0);
    _mm256_storeu_pd(ci + 4, r1);
  }
}

}  // namespace fp8ort
