// Softmax, LogSoftmax, LayerNormalization and BatchNormalization (inference form) on the GPU.
#include "gpu/onnx/nn_common.h"

namespace fp8ort {
namespace gpu_nn {
namespace {

// Opset 13 normalizes the one axis `axis` (default -1); opsets 11-12 the flattened axes [axis, rank) (default 1).
class SoftmaxKernel : public Kernel {
 public:
  SoftmaxKernel(const OrtKernelInfo* info, bool log, bool single_axis) : log_(log), single_axis_(single_axis) {
    oc_ = {log ? "LogSoftmax" : "Softmax", node_name(info)};
    axis_ = attr_int(info, "axis", single_axis ? -1 : 1);
  }

  void compute(OrtKernelContext* ctx) override {
    const Tensor x = input(ctx, 0);
    const fp8ort_dtype type = float_type(x, "input");
    const int64_t rank = static_cast<int64_t>(x.shape.size());
    const size_t axis = static_cast<size_t>(norm_axis(axis_, rank));
    Tensor y = output(ctx, 0, x.shape);
    const int64_t outer = product(x.shape, 0, axis);
    const int64_t d = single_axis_ ? x.shape[axis] : product(x.shape, axis, x.shape.size());
    const int64_t inner = single_axis_ ? product(x.shape, axis + 1, x.shape.size()) : 1;
    gpu_check(fp8ort_nn_softmax(x.data, y.mutable_data, type, outer, d, inner, log_ ? 1 : 0, compute_stream(ctx)),
                 "fp8ort_nn_softmax");
  }

 private:
  bool log_;
  bool single_axis_;
  int64_t axis_;
};

// LayerNormalization (opset 17): Y = (X - mean) / sqrt(var + epsilon) * Scale + B over the axes [axis, rank);
// Mean and InvStdDev (float32, shape X.shape[:axis] + [1] * (rank - axis)) when the graph uses them.
class LayerNormKernel : public Kernel {
 public:
  explicit LayerNormKernel(const OrtKernelInfo* info) {
    oc_ = {"LayerNormalization", node_name(info)};
    axis_ = attr_int(info, "axis", -1);
    epsilon_ = attr_float(info, "epsilon", 1e-5f);
    const int64_t stash = attr_int(info, "stash_type", 1);
    if (stash != 1) fail("attribute stash_type=" + std::to_string(stash) + " is not implemented; the GPU device computes in float32 (stash_type=1)");
  }

  void compute(OrtKernelContext* ctx) override {
    const Tensor x = input(ctx, 0);
    const fp8ort_dtype type = float_type(x, "X");
    const int64_t rank = static_cast<int64_t>(x.shape.size());
    const size_t axis = static_cast<size_t>(norm_axis(axis_, rank));
    const int64_t rows = product(x.shape, 0, axis);
    const int64_t cols = product(x.shape, axis, x.shape.size());
    const Tensor scale = input(ctx, 1);
    if (!scale.present()) fail("input Scale is missing");
    require_same_type(scale, "Scale", x.type);
    const std::vector<int64_t> norm_shape(x.shape.begin() + static_cast<std::ptrdiff_t>(axis), x.shape.end());
    check_norm_param(scale.shape, norm_shape);
    if (scale.size != cols) {
      fail("input Scale has shape " + shape_str(scale.shape) + " (" + std::to_string(scale.size) + " values); it must hold " +
           std::to_string(cols) + " values, X's shape from axis " + std::to_string(axis) +
           " (broadcast Scale is not implemented on the GPU device)");
    }
    const Tensor bias = input(ctx, 2);
    if (bias.present()) {
      require_same_type(bias, "B", x.type);
      check_norm_param(bias.shape, norm_shape);
      if (bias.size != cols) {
        fail("input B has shape " + shape_str(bias.shape) + "; it must hold " + std::to_string(cols) +
             " values like Scale (broadcast B is not implemented on the GPU device)");
      }
    }
    Tensor y = output(ctx, 0, x.shape);
    std::vector<int64_t> stat_shape(x.shape.begin(), x.shape.begin() + static_cast<std::ptrdiff_t>(axis));
    stat_shape.resize(x.shape.size(), 1);
    Tensor mean = optional_output(ctx, 1, stat_shape);
    Tensor inv_std = optional_output(ctx, 2, stat_shape);
    for (const Tensor* t : {&mean, &inv_std}) {
      if (t->present() && t->type != ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT) {
        fail("outputs Mean and InvStdDev must be float32 on the GPU device; got " + std::string(type_name(t->type)));
      }
    }
    gpu_check(fp8ort_nn_layer_norm(x.data, scale.data, bias.present() ? bias.data : nullptr, y.mutable_data,
                                      static_cast<float*>(mean.mutable_data), static_cast<float*>(inv_std.mutable_data),
                                      type, rows, cols, epsilon_, compute_stream(ctx)),
                 "fp8ort_nn_layer_norm");
  }

 private:
  int64_t axis_;
  float epsilon_;
};

// BatchNormalization, inference form (training_mode = 0): Y = (X - mean) / sqrt(var + epsilon) * scale + B per
// channel (axis 1), in float32; scale/B and mean/var may each be float32 or float16 (T1 and T2 of version 15).
class BatchNormKernel : public Kernel {
 public:
  explicit BatchNormKernel(const OrtKernelInfo* info) {
    oc_ = {"BatchNormalization", node_name(info)};
    epsilon_ = attr_float(info, "epsilon", 1e-5f);
    check_batch_norm_inference(info);
  }

  void compute(OrtKernelContext* ctx) override {
    const Tensor x = input(ctx, 0);
    const Tensor scale = input(ctx, 1), bias = input(ctx, 2), mean = input(ctx, 3), var = input(ctx, 4);
    const fp8ort_dtype type = float_type(x, "X");
    const fp8ort_dtype param_type = float_type(scale, "scale");
    const fp8ort_dtype stat_type = float_type(mean, "mean");
    require_same_type(bias, "B", scale.type);
    require_same_type(var, "var", mean.type);
    const int64_t c = batch_norm_channels(x.shape, scale.shape, bias.shape, mean.shape, var.shape);
    Tensor y = output(ctx, 0, x.shape);
    if (x.size == 0) return;
    gpu_check(fp8ort_nn_batch_norm(x.data, scale.data, bias.data, mean.data, var.data, y.mutable_data, type, param_type,
                                   stat_type, x.shape[0], c, x.size / (x.shape[0] * c), epsilon_, compute_stream(ctx)),
              "fp8ort_nn_batch_norm");
  }

 private:
  float epsilon_;
};

}  // namespace

std::unique_ptr<Kernel> create_softmax_v13(const OrtKernelInfo* info) {
  return std::make_unique<SoftmaxKernel>(info, false, true);
}
std::unique_ptr<Kernel> create_softmax_v11(const OrtKernelInfo* info) {
  return std::make_unique<SoftmaxKernel>(info, false, false);
}
std::unique_ptr<Kernel> create_log_softmax_v13(const OrtKernelInfo* info) {
  return std::make_unique<SoftmaxKernel>(info, true, true);
}
std::unique_ptr<Kernel> create_log_softmax_v11(const OrtKernelInfo* info) {
  return std::make_unique<SoftmaxKernel>(info, true, false);
}
std::unique_ptr<Kernel> create_layer_norm(const OrtKernelInfo* info) { return std::make_unique<LayerNormKernel>(info); }
std::unique_ptr<Kernel> create_batch_norm(const OrtKernelInfo* info) { return std::make_unique<BatchNormKernel>(info); }

}  // namespace gpu_nn
}  // namespace fp8ort
