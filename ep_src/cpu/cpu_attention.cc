// FP8Attention on the CPU: each query row of each head as the reference computes it (docs/operators.md): the dot
// products and the weighted sum of V in double (float32 products are exact there), each step rounded to float32 where
// the reference rounds, so the result matches the reference up to the order of the double sums. Float16 Q, K and V
// are widened to float32 first (exact) and take the same path: no rounding of the probabilities to float16, which the
// contract allows a GPU kernel but does not require.
#include <algorithm>
#include <cmath>
#include <vector>

#include "cpu/cpu_kernels.h"

namespace fp8ort {
namespace {

constexpr int64_t kGrainFlops = 1 << 16;  // multiply-adds per thread-pool task, at least

class CpuAttention final : public Kernel {
 public:
  explicit CpuAttention(const OrtKernelInfo* info) {
    oc_ = {"FP8Attention", node_name(info)};
    attrs_ = parse_attention_attrs(info);
  }

  void compute(OrtKernelContext* ctx) override {
    const AttentionRun run = begin_attention(ctx, attrs_);
    const AttentionShape& s = run.shape;
    OutputSpec out;
    out.type = attrs_.output_type;
    if (is_fp8_type(out.type)) {
      out.y_scale = read_scalar_scale(run.y_scale, "y_scale");
      out.rounder = Fp8Rounder(fp8_format_of(out.type));
    }
    if (run.y.size == 0) return;
    std::vector<float> wide_q, wide_k, wide_v;  // float16 inputs widened to float32, else unused
    const float *q, *k, *v;
    if (run.qkv_type == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16) {
      q = widen(run.q, wide_q);
      if (s.packed) {  // K and V are the second and third thirds of each packed row
        k = q + s.h * s.d;
        v = q + 2 * s.h * s.d;
      } else {
        k = widen(run.k, wide_k);
        v = widen(run.v, wide_v);
      }
    } else {
      q = static_cast<const float*>(run.q_data);
      k = static_cast<const float*>(run.k_data);
      v = static_cast<const float*>(run.v_data);
    }
    const float* bias = run.bias.present() ? static_cast<const float*>(run.bias.data) : nullptr;
    const int64_t rows = s.b * s.h * s.s;
    const int64_t per_row = std::max<int64_t>(1, s.t * (s.d + s.dv));
    const int64_t per_task = std::max<int64_t>(1, kGrainFlops / per_row);
    const size_t tasks = static_cast<size_t>((rows + per_task - 1) / per_task);
    auto task = [&](size_t t) {
      std::vector<float> p(static_cast<size_t>(s.t));
      std::vector<double> acc(static_cast<size_t>(s.dv));
      const int64_t r0 = static_cast<int64_t>(t) * per_task, r1 = std::min(rows, r0 + per_task);
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t i = r % s.s, h = (r / s.s) % s.h, b = r / (s.s * s.h);
        row(s, q + (b * s.s + i) * s.q_row + h * s.d, k + b * s.t * s.k_row + h * s.d, v + b * s.t * s.v_row + h * s.dv,
            bias == nullptr ? nullptr : bias + b * s.bias_stride[0] + h * s.bias_stride[1] + i * s.bias_stride[2], p,
            acc);
        const int64_t y0 = (b * s.s + i) * s.h * s.dv + h * s.dv;
        for (int64_t e = 0; e < s.dv; ++e) out.store(run.y.mutable_data, y0 + e, static_cast<float>(acc[e]));
      }
    };
    parallel_for(ctx, tasks, task);
  }

 private:
  // A float16 tensor as float32 (exact) in `buf`; its data pointer (only read where the tensor has elements).
  static const float* widen(const Tensor& t, std::vector<float>& buf) {
    buf.resize(static_cast<size_t>(t.size));
    const uint16_t* h = static_cast<const uint16_t*>(t.data);
    for (int64_t i = 0; i < t.size; ++i) buf[static_cast<size_t>(i)] = f16_to_f32(h[i]);
    return buf.data();
  }

  // One query row of one head: acc[e] = sum_j p[j] * V[j, e]; q, k, v point at the head's first column.
  void row(const AttentionShape& s, const float* q, const float* k, const float* v, const float* bias,
           std::vector<float>& p, std::vector<double>& acc) const {
    float m = -INFINITY;
    bool nan = false;
    for (int64_t j = 0; j < s.t; ++j) {
      double dot = 0.0;
      const float* kj = k + j * s.k_row;
      for (int64_t d = 0; d < s.d; ++d) dot += static_cast<double>(q[d]) * kj[d];
      float sc = static_cast<float>(dot) * s.scale;
      if (bias != nullptr) sc += bias[j * s.bias_stride[3]];
      p[j] = sc;
      if (sc != sc) nan = true;
      m = std::max(m, sc);
    }
    if (nan) m = NAN;  // NumPy's max: a NaN wins
    double sum = 0.0;
    for (int64_t j = 0; j < s.t; ++j) {
      p[j] = static_cast<float>(std::exp(static_cast<double>(p[j] - m)));
      sum += p[j];
    }
    const float total = static_cast<float>(sum);
    std::fill(acc.begin(), acc.end(), 0.0);
    for (int64_t j = 0; j < s.t; ++j) {
      float pj = p[j] / total;
      if (attrs_.nan_to_zero && pj != pj) pj = 0.0f;
      const float* vj = v + j * s.v_row;
      for (int64_t e = 0; e < s.dv; ++e) acc[e] += static_cast<double>(pj) * vj[e];
    }
  }

  AttentionAttrs attrs_;
};

}  // namespace

std::unique_ptr<Kernel> create_cpu_attention(const OrtKernelInfo* info) {
  return std::make_unique<CpuAttention>(info);
}

}  // namespace fp8ort
