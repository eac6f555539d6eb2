// Normalization ONNX ops on the CPU device: Softmax (opset 13 semantics: one axis), LayerNormalization (17) and
// BatchNormalization in inference form (9, 14, 15).
#include <algorithm>
#include <cmath>

#include "cpu/onnx/common.h"

namespace fp8ort {
namespace cpu_onnx {
namespace {

constexpr int64_t kGrainElements = 1 << 14;  // elements per thread-pool task, at least

class SoftmaxKernel : public Kernel {
 public:
  explicit SoftmaxKernel(const OrtKernelInfo* info) {
    oc_ = {"Softmax", node_name(info)};
    axis_ = attr_int(info, "axis", -1);
  }

  void compute(OrtKernelContext* ctx) override {
    const Tensor x = input(ctx, 0);
    const int64_t rank = static_cast<int64_t>(x.shape.size());
    const int64_t axis = norm_axis(axis_, rank);
    Tensor y = output(ctx, 0, x.shape);
    if (x.size == 0) return;
    const int64_t n = x.shape[axis];
    int64_t inner = inner_size(x.shape, axis);
    const int64_t outer = x.size / (n * inner);
    FloatIn xin(x);
    FloatOut yout(y);
    const float* xp = xin.data();
    float* yp = yout.data();
    auto one = [&](int64_t t) {
      const int64_t o = t / inner;
      const int64_t i = t % inner;
      const float* src = xp + o * n * inner + i;
      float* dst = yp + o * n * inner + i;
      float mx = -INFINITY;
      for (int64_t k = 0; k < n; ++k) mx = std::fmax(mx, src[k * inner]);
      double sum = 0.0;
      for (int64_t k = 0; k < n; ++k) {
        const float e = std::exp(src[k * inner] - mx);
        dst[k * inner] = e;
        sum += e;
      }
      const float inv = static_cast<float>(1.0 / sum);
      for (int64_t k = 0; k < n; ++k) dst[k * inner] *= inv;
    };
    parallel_ranges(ctx, outer * inner, std::max<int64_t>(1, kGrainElements / n), [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t) one(t);
    });
    yout.finish();
  }

 private:
  int64_t axis_ = -1;
};

// Y = (X - mean) / sqrt(var + epsilon) * Scale + B over dimensions [axis, rank); optional Mean, InvStdDev outputs.
class LayerNormKernel : public Kernel {
 public:
  explicit LayerNormKernel(const OrtKernelInfo* info) {
    oc_ = {"LayerNormalization", node_name(info)};
    axis_ = attr_int(info, "axis", -1);
    epsilon_ = attr_float(info, "epsilon", kDefaultEpsilon);
  }

  void compute(OrtKernelContext* ctx) override {
    const Tensor x = input(ctx, 0);
    const Tensor scale = input(ctx, 1);
    const Tensor bias = input(ctx, 2);
    const int64_t rank = static_cast<int64_t>(x.shape.size());
    const int64_t axis = norm_axis(axis_, rank);
    const std::vector<int64_t> norm_shape(x.shape.begin() + axis, x.shape.end());
    int64_t n = 1;
    for (int64_t d : norm_shape) n *= d;
    const int64_t rows = n == 0 ? 0 : x.size / n;
    const bool has_bias = bias.present() && bias.data != nullptr;
    // Scale and B broadcast to the normalized shape.
    for (const Tensor* t : {&scale, has_bias ? &bias : nullptr}) {
      if (t == nullptr) continue;
      if (t->type != x.type) fail(std::string("Scale and B must have X's type ") + type_name(x.type));
      check_norm_param(t->shape, norm_shape);
    }
    std::vector<int64_t> stat_shape = x.shape;
    for (int64_t d = axis; d < rank; ++d) stat_shape[d] = 1;
    size_t n_out = 0;
    check(g_ort->KernelContext_GetOutputCount(ctx, &n_out), "KernelContext_GetOutputCount");
    Tensor y = output(ctx, 0, x.shape);
    float* mean_out = n_out > 1 ? static_cast<float*>(output(ctx, 1, stat_shape).mutable_data) : nullptr;
    float* inv_out = n_out > 2 ? static_cast<float*>(output(ctx, 2, stat_shape).mutable_data) : nullptr;
    if (x.size == 0) return;
    std::vector<float> s_full(n), b_full(n, 0.0f);
    expand(scale, norm_shape, s_full.data());
    if (has_bias) expand(bias, norm_shape, b_full.data());
    FloatIn xin(x);
    FloatOut yout(y);
    const float* xp = xin.data();
    float* yp = yout.data();
    auto one = [&](int64_t r) {
      const float* src = xp + r * n;
      float* dst = yp + r * n;
      double sum = 0.0;
      for (int64_t i = 0; i < n; ++i) sum += src[i];
      const float mean = static_cast<float>(sum / static_cast<double>(n));
      double sq = 0.0;
      for (int64_t i = 0; i < n; ++i) {
        const double dv = static_cast<double>(src[i]) - mean;
        sq += dv * dv;
      }
      const float var = static_cast<float>(sq / static_cast<double>(n));
      const float inv = 1.0f / std::sqrt(var + epsilon_);
      for (int64_t i = 0; i < n; ++i) dst[i] = (src[i] - mean) * inv * s_full[i] + b_full[i];
      if (mean_out) mean_out[r] = mean;
      if (inv_out) inv_out[r] = inv;
    };
    parallel_ranges(ctx, rows, std::max<int64_t>(1, kGrainElements / n), [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) one(r);
    });
    yout.finish();
  }

 private:
  static constexpr float kDefaultEpsilon = 1e-5f;

  static void expand(const Tensor& t, const std::vector<int64_t>& shape, float* out) {
    FloatIn in(t);
    const std::vector<int64_t> strides = broadcast_strides(t.shape, shape);
    for_each_broadcast_row(nullptr, shape, {strides}, [&](int64_t o, const int64_t* off, int64_t cnt, const int64_t* st) {
      for (int64_t i = 0; i < cnt; ++i) out[o + i] = in.data()[off[0] + i * st[0]];
    });
  }

  int64_t axis_ = -1;
  float epsilon_ = kDefaultEpsilon;
};

// BatchNormalization, inference form (training_mode = 0): Y = (X - mean) / sqrt(var + epsilon) * scale + B per
// channel (axis 1), in float32; scale/B and mean/var may each be float32 or float16 (T1 and T2 of version 15).
class BatchNormKernel : public Kernel {
 public:
  explicit BatchNormKernel(const OrtKernelInfo* info) {
    oc_ = {"BatchNormalization", node_name(info)};
    epsilon_ = attr_float(info, "epsilon", kDefaultEpsilon);
    check_batch_norm_inference(info);
  }

  void compute(OrtKernelContext* ctx) override {
    const Tensor x = input(ctx, 0);
    Tensor params[4] = {input(ctx, 1), input(ctx, 2), input(ctx, 3), input(ctx, 4)};
    const char* names[4] = {"scale", "B", "mean", "var"};
    for (int k = 0; k < 4; ++k) {
      if (params[k].type != kF32 && params[k].type != kF16) {
        fail(std::string("input ") + names[k] + " must be float32 or float16, got " + type_name(params[k].type));
      }
    }
    const int64_t c = batch_norm_channels(x.shape, params[0].shape, params[1].shape, params[2].shape, params[3].shape);
    Tensor y = output(ctx, 0, x.shape);
    if (x.size == 0) return;
    const FloatIn scale(params[0]), bias(params[1]), mean(params[2]), var(params[3]);
    std::vector<float> mul(static_cast<size_t>(c));
    for (int64_t k = 0; k < c; ++k) mul[k] = scale.data()[k] / std::sqrt(var.data()[k] + epsilon_);
    const int64_t inner = x.size / (x.shape[0] * c);
    FloatIn xin(x);
    FloatOut yout(y);
    const float* xp = xin.data();
    float* yp = yout.data();
    parallel_ranges(ctx, x.shape[0] * c, std::max<int64_t>(1, kGrainElements / std::max<int64_t>(1, inner)),
                    [&](int64_t b, int64_t e) {
                      for (int64_t p = b; p < e; ++p) {
                        const int64_t k = p % c;
                        const float m = mean.data()[k], s = mul[k], t = bias.data()[k];
                        const float* src = xp + p * inner;
                        float* dst = yp + p * inner;
                        for (int64_t i = 0; i < inner; ++i) dst[i] = (src[i] - m) * s + t;
                      }
                    });
    yout.finish();
  }

 private:
  static constexpr float kDefaultEpsilon = 1e-5f;
  float epsilon_ = kDefaultEpsilon;
};

}  // namespace

std::vector<KernelDef> norm_kernels() {
  const TypeList f = float_types();
  return {
      {"", "Softmax", 13, kLatestOpset, {{"T", f}}, {}, {}, make_kernel<SoftmaxKernel>},
      {"", "LayerNormalization", 17, kLatestOpset, {{"T", f}, {"U", {kF32}}}, {}, {}, make_kernel<LayerNormKernel>},
      // BatchNormalization 14 adds training_mode and types U for mean/var, 15 splits them into T1 (scale, B) and T2
      {"", "BatchNormalization", 9, 13, {{"T", f}}, {}, {}, make_kernel<BatchNormKernel>},
      {"", "BatchNormalization", 14, 14, {{"T", f}, {"U", f}}, {}, {}, make_kernel<BatchNormKernel>},
      {"", "BatchNormalization", 15, kLatestOpset, {{"T", f}, {"T1", f}, {"T2", f}}, {}, {},
       make_kernel<BatchNormKernel>},
  };
}

}  // namespace cpu_onnx
}  // namespace fp8ort
