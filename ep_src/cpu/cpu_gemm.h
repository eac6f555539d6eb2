// The CPU engine behind FP8Conv and FP8MatMul: C[m, p] = sum_k A[m, k] * B[k, p] in float64.
// Operands are FP8 values, so every product and partial sum is exact (E4M3 operands, K <= 2^17) and the
// result does not depend on summation order: the kernels are bit-identical to the NumPy reference.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace fp8ort {

constexpr int kMR = 6;   // rows (output channels) per micro-tile
constexpr int kNR = 8;   // columns (output positions) per micro-tile
constexpr int64_t kKC = 256;  // reduction block kept hot in cache

// c[i * ldc + j] (+)= sum_{t < k} a[t * kMR + i] * b[t * kNR + j] for i < kMR, j < kNR.
using MicroKernel = void (*)(int64_t k, const double* a, const double* b, double* c, int64_t ldc, bool accumulate);
MicroKernel select_micro_kernel();
void micro_kernel_generic(int64_t k, const double* a, const double* b, double* c, int64_t ldc, bool accumulate);
#if defined(FP8ORT_HAVE_AVX2_KERNEL)
void micro_kernel_avx2(int64_t k, const double* a, const double* b, double* c, int64_t ldc, bool accumulate);
#endif

// Weights packed once: for each group, ceil(rows / kMR) panels of [k][kMR] doubles, zero-padded.
struct PackedWeights {
  int64_t groups = 0, rows = 0, k = 0, panels = 0;
  std::vector<double> data;
  const double* panel(int64_t g, int64_t p) const { return data.data() + ((g * panels + p) * k) * kMR; }
  // value(g, r, t) gives weight row r of group g at reduction index t.
  template <class Fn>
  void pack(int64_t groups_, int64_t rows_, int64_t k_, Fn value) {
    groups = groups_;
    rows = rows_;
    k = k_;
    panels = (rows + kMR - 1) / kMR;
    data.assign(static_cast<size_t>(groups * panels * k * kMR), 0.0);
    for (int64_t g = 0; g < groups; ++g) {
      for (int64_t r = 0; r < rows; ++r) {
        double* dst = data.data() + ((g * panels + r / kMR) * k) * kMR + (r % kMR);
        for (int64_t t = 0; t < k; ++t) dst[t * kMR] = value(g, r, t);
      }
    }
  }
};

}  // namespace fp8ort
