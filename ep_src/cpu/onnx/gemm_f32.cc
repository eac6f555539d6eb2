#include "cpu/onnx/gemm_f32.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace fp8ort {
namespace cpu_onnx {
namespace {

constexpr int64_t kMR = 4;       // rows per register tile
constexpr int64_t kNR = 16;      // columns per register tile (two AVX vectors)
constexpr int64_t kMC = 64;      // rows per task (A block kept in L2)
constexpr int64_t kNC = 256;     // columns per task
constexpr int64_t kMinParallelWork = 1 << 15;  // multiply-adds below which one thread runs it all

// Eight floats as one value (GCC/Clang vector extension): one AVX register in the AVX2 build of the micro-kernel,
// two SSE registers in the portable one. Written out because the auto-vectorizer picks the wrong loop here.
typedef float Vec8 __attribute__((vector_size(32)));
static_assert(kMR == 4 && kNR == 16, "the micro-kernel body is written for 4 x 16 tiles");

// acc[i * kNR + j] = sum_t a[t * kMR + i] * b[t * kNR + j], accumulators in registers.
#define FP8ORT_MICRO_KERNEL_BODY                                                  \
  Vec8 c00 = {}, c01 = {}, c10 = {}, c11 = {}, c20 = {}, c21 = {}, c30 = {}, c31 = {}; \
  for (int64_t t = 0; t < k; ++t) {                                               \
    Vec8 b0, b1;                                                                  \
    std::memcpy(&b0, b + t * kNR, sizeof(b0));                                    \
    std::memcpy(&b1, b + t * kNR + 8, sizeof(b1));                                \
    const float* at = a + t * kMR;                                                \
    c00 += at[0] * b0;                                                            \
    c01 += at[0] * b1;                                                            \
    c10 += at[1] * b0;                                                            \
    c11 += at[1] * b1;                                                            \
    c20 += at[2] * b0;                                                            \
    c21 += at[2] * b1;                                                            \
    c30 += at[3] * b0;                                                            \
    c31 += at[3] * b1;                                                            \
  }                                                                               \
  const Vec8 out[8] = {c00, c01, c10, c11, c20, c21, c30, c31};                   \
  std::memcpy(acc, out, sizeof(out));

void micro_kernel_generic(int64_t k, const float* a, const float* b, float* acc) { FP8ORT_MICRO_KERNEL_BODY }

#if defined(__GNUC__) && defined(__x86_64__)
#define FP8ORT_HAVE_AVX2_GEMM 1
__attribute__((target("avx2,fma"))) void micro_kernel_avx2(int64_t k, const float* a, const float* b, float* acc) {
  FP8ORT_MICRO_KERNEL_BODY
}
#endif
#undef FP8ORT_MICRO_KERNEL_BODY

using MicroKernelF32 = void (*)(int64_t, const float*, const float*, float*);

MicroKernelF32 pick_micro_kernel() {
#if defined(FP8ORT_HAVE_AVX2_GEMM)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return micro_kernel_avx2;
#endif
  return micro_kernel_generic;
}

const MicroKernelF32 micro_kernel = pick_micro_kernel();

}  // namespace

void gemm_f32(OrtKernelContext* ctx, int64_t m, int64_t n, int64_t k, MatrixView a, MatrixView b, float* c,
              int64_t ldc) {
  if (m <= 0 || n <= 0) return;
  if (k <= 0) {
    for (int64_t i = 0; i < m; ++i) std::fill(c + i * ldc, c + i * ldc + n, 0.0f);
    return;
  }
  // B as panels of kNR columns: panel p holds B(t, p * kNR + j) at [p][t][j], zero-padded past n.
  const int64_t panels = (n + kNR - 1) / kNR;
  std::vector<float> bp(static_cast<size_t>(panels * k * kNR), 0.0f);
  for (int64_t p = 0; p < panels; ++p) {
    const int64_t j0 = p * kNR;
    const int64_t nj = std::min(kNR, n - j0);
    float* dst = bp.data() + p * k * kNR;
    for (int64_t t = 0; t < k; ++t) {
      const float* src = b.p + t * b.rs + j0 * b.cs;
      for (int64_t j = 0; j < nj; ++j) dst[t * kNR + j] = src[j * b.cs];
    }
  }
  const int64_t row_blocks = (m + kMC - 1) / kMC;
  const int64_t col_blocks = (n + kNC - 1) / kNC;
  auto task = [&](size_t id) {
    const int64_t i0 = static_cast<int64_t>(id) / col_blocks * kMC;
    const int64_t p0 = static_cast<int64_t>(id) % col_blocks * (kNC / kNR);
    const int64_t mi = std::min(kMC, m - i0);
    const int64_t tiles = (mi + kMR - 1) / kMR;
    // This block's rows of A as tiles of kMR rows: [tile][t][i], zero-padded.
    std::vector<float> ap(static_cast<size_t>(tiles * k * kMR), 0.0f);
    for (int64_t r = 0; r < mi; ++r) {
      float* dst = ap.data() + (r / kMR) * k * kMR + (r % kMR);
      const float* src = a.p + (i0 + r) * a.rs;
      for (int64_t t = 0; t < k; ++t) dst[t * kMR] = src[t * a.cs];
    }
    float acc[kMR * kNR];
    const int64_t p1 = std::min(panels, p0 + kNC / kNR);
    for (int64_t p = p0; p < p1; ++p) {
      const int64_t j0 = p * kNR;
      const int64_t nj = std::min(kNR, n - j0);
      for (int64_t tile = 0; tile < tiles; ++tile) {
        micro_kernel(k, ap.data() + tile * k * kMR, bp.data() + p * k * kNR, acc);
        const int64_t ri = std::min(kMR, mi - tile * kMR);
        for (int64_t i = 0; i < ri; ++i) {
          float* crow = c + (i0 + tile * kMR + i) * ldc + j0;
          for (int64_t j = 0; j < nj; ++j) crow[j] = acc[i * kNR + j];
        }
      }
    }
  };
  const size_t tasks = static_cast<size_t>(row_blocks * col_blocks);
  if (ctx == nullptr || m * n * k < kMinParallelWork) {
    for (size_t t = 0; t < tasks; ++t) task(t);
  } else {
    parallel_for(ctx, tasks, task);
  }
}

}  // namespace cpu_onnx
}  // namespace fp8ort
