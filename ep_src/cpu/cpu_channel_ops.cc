// FP8LayerNormalization, FP8GlobalAveragePool and FP8ChannelMul on the CPU, with the reference's arithmetic
// (docs/operators.md): sums in double, every other step one float32 operation where the reference has one (this
// file is compiled without floating-point contraction, so no multiply-add is fused).
#include <algorithm>
#include <cmath>
#include <vector>

#include "cpu/cpu_kernels.h"

namespace fp8ort {
namespace {

constexpr int64_t kGrainValues = 1 << 15;  // values per thread-pool task, at least

// Runs body(begin, end) over [0, count) in tasks of at least `grain` items.
template <class Body>
void in_tasks(OrtKernelContext* ctx, int64_t count, int64_t grain, Body&& body) {
  if (count <= 0) return;
  const int64_t per_task = std::max<int64_t>(1, grain);
  const size_t tasks = static_cast<size_t>((count + per_task - 1) / per_task);
  auto task = [&](size_t t) {
    const int64_t b = static_cast<int64_t>(t) * per_task;
    body(b, std::min(count, b + per_task));
  };
  parallel_for(ctx, tasks, task);
}

class CpuLayerNorm final : public Kernel {
 public:
  explicit CpuLayerNorm(const OrtKernelInfo* info) {
    oc_ = {"FP8LayerNormalization", node_name(info)};
    attrs_ = parse_layer_norm_attrs(info);
  }

  void compute(OrtKernelContext* ctx) override {
    const LayerNormRun run = begin_layer_norm(ctx, attrs_);
    OutputSpec q;
    q.type = attrs_.q_type;
    q.y_scale = read_scalar_scale(run.y_scale, "y_scale");
    q.rounder = Fp8Rounder(fp8_format_of(q.type));
    if (run.rows == 0) return;
    const int64_t n = run.cols;
    const bool half = run.x.type == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16;
    std::vector<float> gamma(static_cast<size_t>(n)), beta(static_cast<size_t>(n), 0.0f);
    for (int64_t i = 0; i < n; ++i) {
      gamma[i] = load_float(run.scale.data, run.scale.type, i);
      if (run.bias.present()) beta[i] = load_float(run.bias.data, run.bias.type, i);
    }
    const bool has_bias = run.bias.present();
    in_tasks(ctx, run.rows, std::max<int64_t>(1, kGrainValues / n), [&](int64_t r0, int64_t r1) {
      std::vector<float> d(static_cast<size_t>(n));
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t base = r * n;
        double sum = 0.0;
        for (int64_t i = 0; i < n; ++i) {
          d[i] = load_float(run.x.data, run.x.type, base + i);
          sum += d[i];
        }
        const float mean = static_cast<float>(sum / static_cast<double>(n));
        double sq = 0.0;
        for (int64_t i = 0; i < n; ++i) {
          d[i] = d[i] - mean;
          sq += static_cast<double>(d[i]) * d[i];
        }
        const float var = static_cast<float>(sq / static_cast<double>(n));
        const float inv = static_cast<float>(1.0 / std::sqrt(static_cast<double>(var) + static_cast<double>(attrs_.epsilon)));
        for (int64_t i = 0; i < n; ++i) {
          float y = d[i] * inv;
          y = y * gamma[i];
          if (has_bias) y = y + beta[i];
          if (half) {
            const uint16_t h = f32_to_f16(y);
            static_cast<uint16_t*>(run.y.mutable_data)[base + i] = h;
            y = f16_to_f32(h);  // Y_fp8 quantizes the Y that was written
          } else {
            static_cast<float*>(run.y.mutable_data)[base + i] = y;
          }
          q.store(run.y_fp8.mutable_data, base + i, y);
        }
      }
    });
  }

 private:
  LayerNormAttrs attrs_;
};

class CpuGlobalAveragePool final : public Kernel {
 public:
  explicit CpuGlobalAveragePool(const OrtKernelInfo* info) {
    oc_ = {"FP8GlobalAveragePool", node_name(info)};
    attrs_ = parse_channel_op_attrs(info, false);
  }

  void compute(OrtKernelContext* ctx) override {
    const ChannelOpRun run = begin_global_average_pool(ctx, attrs_);
    const float x_scale = read_scalar_scale(run.x_scale, "x_scale");
    const float* decode = fp8_decode_table(fp8_format_of(run.x.type));
    const uint8_t* x = static_cast<const uint8_t*>(run.x.data);
    float* y = static_cast<float*>(run.y.mutable_data);
    const int64_t hw = run.hw, c = run.c;
    const bool nhwc = attrs_.nhwc;
    in_tasks(ctx, run.n, std::max<int64_t>(1, kGrainValues / std::max<int64_t>(1, hw * c)), [&](int64_t n0, int64_t n1) {
      std::vector<double> sum(static_cast<size_t>(c));
      for (int64_t n = n0; n < n1; ++n) {
        const uint8_t* xn = x + n * hw * c;
        std::fill(sum.begin(), sum.end(), 0.0);
        for (int64_t p = 0; p < hw; ++p) {
          for (int64_t ch = 0; ch < c; ++ch) sum[ch] += decode[xn[nhwc ? p * c + ch : ch * hw + p]];
        }
        for (int64_t ch = 0; ch < c; ++ch) {
          const float mean = static_cast<float>(sum[ch] / static_cast<double>(hw));  // hw = 0: 0 / 0 = NaN
          y[n * c + ch] = mean * x_scale;
        }
      }
    });
  }

 private:
  ChannelOpAttrs attrs_;
};

class CpuChannelMul final : public Kernel {
 public:
  explicit CpuChannelMul(const OrtKernelInfo* info) {
    oc_ = {"FP8ChannelMul", node_name(info)};
    attrs_ = parse_channel_op_attrs(info, true);
  }

  void compute(OrtKernelContext* ctx) override {
    const ChannelOpRun run = begin_channel_mul(ctx, attrs_);
    const float x_scale = read_scalar_scale(run.x_scale, "x_scale");
    OutputSpec out;
    out.type = attrs_.output_type;
    if (is_fp8_type(out.type)) {
      out.y_scale = read_scalar_scale(run.y_scale, "y_scale");
      out.rounder = Fp8Rounder(fp8_format_of(out.type));
    }
    const float* decode = fp8_decode_table(fp8_format_of(run.x.type));
    const uint8_t* x = static_cast<const uint8_t*>(run.x.data);
    const float* g = static_cast<const float*>(run.g.data);
    const int64_t hw = run.hw, c = run.c, total = run.x.size;
    const bool nhwc = attrs_.nhwc;
    in_tasks(ctx, total, kGrainValues, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) {
        const int64_t n = i / (hw * c);
        const int64_t ch = nhwc ? i % c : (i / hw) % c;
        float t = decode[x[i]] * x_scale;
        t = t * g[n * c + ch];
        out.store(run.y.mutable_data, i, t);
      }
    });
  }

 private:
  ChannelOpAttrs attrs_;
};

}  // namespace

std::unique_ptr<Kernel> create_cpu_layer_norm(const OrtKernelInfo* info) { return std::make_unique<CpuLayerNorm>(info); }
std::unique_ptr<Kernel> create_cpu_global_average_pool(const OrtKernelInfo* info) {
  return std::make_unique<CpuGlobalAveragePool>(info);
}
std::unique_ptr<Kernel> create_cpu_channel_mul(const OrtKernelInfo* info) { return std::make_unique<CpuChannelMul>(info); }

}  // namespace fp8ort
