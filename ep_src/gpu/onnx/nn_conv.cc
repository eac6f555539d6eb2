// Conv (float32/float16, NCHW, 1-D and 2-D, group, pads or auto_pad, strides, dilations) on the GPU.
#include "gpu/onnx/nn_common.h"

namespace fp8ort {
namespace gpu_nn {
namespace {

class ConvKernel : public Kernel {
 public:
  explicit ConvKernel(const OrtKernelInfo* info) : attrs_(parse_window_attrs(info)) {
    oc_ = {"Conv", node_name(info)};
    group_ = attr_int(info, "group", 1);
    if (group_ < 1) fail("attribute group must be >= 1; got " + std::to_string(group_));
  }

  void compute(OrtKernelContext* ctx) override {
    const Tensor x = input(ctx, 0), w = input(ctx, 1), bias = input(ctx, 2);
    const fp8ort_dtype type = float_type(x, "X");
    require_same_type(w, "W", x.type);
    const size_t rank = x.shape.size();
    if (rank != 3 && rank != 4) {
      fail("input X has shape " + shape_str(x.shape) + "; the GPU device runs 1-D and 2-D convolutions ([N, C, W] or "
           "[N, C, H, W]); run this node on the CPU device");
    }
    if (w.shape.size() != rank) {
      fail("input W has shape " + shape_str(w.shape) + "; it needs rank " + std::to_string(rank) + " like X " +
           shape_str(x.shape));
    }
    const int64_t c = x.shape[1], m = w.shape[0];
    if (c % group_ != 0 || m % group_ != 0 || w.shape[1] * group_ != c) {
      fail("X has " + std::to_string(c) + " channels and W shape " + shape_str(w.shape) + " with group " +
           std::to_string(group_) + "; W must be [M, C / group, k...] with C and M divisible by group");
    }
    const std::vector<int64_t> kernel(w.shape.begin() + 2, w.shape.end());
    if (!attrs_.kernel_shape.empty() && attrs_.kernel_shape != kernel) {
      fail("attribute kernel_shape " + shape_str(attrs_.kernel_shape) + " does not match W's shape " + shape_str(w.shape));
    }
    if (bias.present()) {
      require_same_type(bias, "B", x.type);
      if (bias.shape.size() != 1 || bias.shape[0] != m) {
        fail("input B has shape " + shape_str(bias.shape) + "; it must be [" + std::to_string(m) + "]");
      }
    }
    const std::vector<int64_t> in_spatial(x.shape.begin() + 2, x.shape.end());
    const std::vector<WindowAxis> ax = window_geometry(attrs_, in_spatial, kernel, false);
    std::vector<int64_t> y_shape = {x.shape[0], m};
    for (const WindowAxis& a : ax) y_shape.push_back(a.out);
    Tensor y = output(ctx, 0, y_shape);
    const WindowAxis unit{1, 1, 1, 1, 1, 0, 0};
    const WindowAxis& h = rank == 4 ? ax[0] : unit;
    const WindowAxis& wa = rank == 4 ? ax[1] : ax[0];
    fp8ort_nn_conv2d p{};
    p.batch = x.shape[0];
    p.in_c = c;
    p.in_h = h.in;
    p.in_w = wa.in;
    p.out_c = m;
    p.out_h = h.out;
    p.out_w = wa.out;
    p.group = group_;
    p.kernel_h = h.kernel;
    p.kernel_w = wa.kernel;
    p.stride_h = h.stride;
    p.stride_w = wa.stride;
    p.dilation_h = h.dilation;
    p.dilation_w = wa.dilation;
    p.pad_top = h.pad_begin;
    p.pad_left = wa.pad_begin;
    gpu_check(fp8ort_nn_conv2d_run(x.data, w.data, bias.present() ? bias.data : nullptr, y.mutable_data, type, &p,
                                      compute_stream(ctx)),
                 "fp8ort_nn_conv2d_run");
  }

 private:
  WindowAttrs attrs_;
  int64_t group_ = 1;
};

}  // namespace

std::unique_ptr<Kernel> create_conv(const OrtKernelInfo* info) { return std::make_unique<ConvKernel>(info); }

}  // namespace gpu_nn
}  // namespace fp8ort
