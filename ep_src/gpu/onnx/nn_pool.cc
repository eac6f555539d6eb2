// MaxPool, AveragePool (1-D and 2-D, NCHW) and GlobalAveragePool/GlobalMaxPool (any spatial rank) on the GPU.
#include "gpu/onnx/nn_common.h"

namespace fp8ort {
namespace gpu_nn {
namespace {

class PoolKernel : public Kernel {
 public:
  PoolKernel(const OrtKernelInfo* info, bool max_pool) : max_pool_(max_pool) {
    oc_ = {max_pool ? "MaxPool" : "AveragePool", node_name(info)};
    attrs_.read(info);
    count_include_pad_ = attr_int(info, "count_include_pad", 0) != 0;
    if (attrs_.kernel_shape.size() > 2) {
      fail(std::to_string(attrs_.kernel_shape.size()) + "-D pooling is not implemented on the GPU device (1-D and 2-D "
           "only); run this node on the CPU device");
    }
  }

  void compute(OrtKernelContext* ctx) override {
    const Tensor x = input(ctx, 0);
    const fp8ort_dtype type = float_type(x, "X");
    const std::vector<WindowAxis> ax = window_geometry(attrs_, x.shape, attrs_.kernel_shape);
    const size_t spatial = ax.size();  // 1 or 2: the constructor refused longer kernel_shapes
    std::vector<int64_t> y_shape = {x.shape[0], x.shape[1]};
    for (const WindowAxis& a : ax) y_shape.push_back(a.out);
    if (max_pool_) {
      const Tensor indices = optional_output(ctx, 1, y_shape);
      if (indices.present()) {
        fail("output Indices is not implemented on the GPU device; drop the output or run this node on the CPU device");
      }
    }
    Tensor y = output(ctx, 0, y_shape);
    // 1-D pooling runs as 2-D with a height of 1.
    const WindowAxis unit{};  // a size-1 axis
    const WindowAxis& h = spatial == 2 ? ax[0] : unit;
    const WindowAxis& w = spatial == 2 ? ax[1] : ax[0];
    fp8ort_nn_pool2d p{};
    p.planes = x.shape[0] * x.shape[1];
    p.in_h = h.in;
    p.in_w = w.in;
    p.out_h = h.out;
    p.out_w = w.out;
    p.kernel_h = h.kernel;
    p.kernel_w = w.kernel;
    p.stride_h = h.stride;
    p.stride_w = w.stride;
    p.dilation_h = h.dilation;
    p.dilation_w = w.dilation;
    p.pad_top = h.pad_begin;
    p.pad_left = w.pad_begin;
    p.pad_bottom = h.pad_end;
    p.pad_right = w.pad_end;
    p.max_pool = max_pool_ ? 1 : 0;
    p.count_include_pad = count_include_pad_ ? 1 : 0;
    gpu_check(fp8ort_nn_pool2d_run(x.data, y.mutable_data, type, &p, compute_stream(ctx)), "fp8ort_nn_pool2d_run");
  }

 private:
  bool max_pool_;
  bool count_include_pad_ = false;
  WindowAttrs attrs_;
};

class GlobalPoolKernel : public Kernel {
 public:
  GlobalPoolKernel(const OrtKernelInfo* info, bool max_pool) : max_pool_(max_pool) {
    oc_ = {max_pool ? "GlobalMaxPool" : "GlobalAveragePool", node_name(info)};
  }

  void compute(OrtKernelContext* ctx) override {
    const Tensor x = input(ctx, 0);
    const fp8ort_dtype type = float_type(x, "X");
    if (x.shape.size() < 3) fail("input X has shape " + shape_str(x.shape) + "; it needs rank >= 3 [N, C, spatial...]");
    std::vector<int64_t> y_shape(x.shape.size(), 1);
    y_shape[0] = x.shape[0];
    y_shape[1] = x.shape[1];
    Tensor y = output(ctx, 0, y_shape);
    const int64_t planes = x.shape[0] * x.shape[1];
    const int64_t spatial = product(x.shape, 2, x.shape.size());
    if (planes > 0 && spatial == 0) fail("input X has shape " + shape_str(x.shape) + ": a spatial axis is empty");
    gpu_check(fp8ort_nn_reduce(x.data, y.mutable_data, type, max_pool_ ? FP8ORT_NN_REDUCE_MAX : FP8ORT_NN_REDUCE_MEAN,
                                  planes, spatial, 1, compute_stream(ctx)),
                 "fp8ort_nn_reduce");
  }

 private:
  bool max_pool_;
};

}  // namespace

std::unique_ptr<Kernel> create_max_pool(const OrtKernelInfo* info) { return std::make_unique<PoolKernel>(info, true); }
std::unique_ptr<Kernel> create_average_pool(const OrtKernelInfo* info) {
  return std::make_unique<PoolKernel>(info, false);
}
std::unique_ptr<Kernel> create_global_average_pool(const OrtKernelInfo* info) {
  return std::make_unique<GlobalPoolKernel>(info, false);
}
std::unique_ptr<Kernel> create_global_max_pool(const OrtKernelInfo* info) {
  return std::make_unique<GlobalPoolKernel>(info, true);
}

}  // namespace gpu_nn
}  // namespace fp8ort
