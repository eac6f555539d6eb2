// Conv (float32/float16, NCHW, 1-D and 2-D, group, pads or auto_pad, strides, dilations) on the GPU.
#include "gpu/onnx/nn_common.h"

namespace fp8ort {
namespace gpu_nn {
namespace {

class ConvKernel : public Kernel {
 public:
  explicit ConvKernel(const OrtKernelInfo* info) {
    oc_ = {"Conv", node_name(info)};
    attrs_.read(info);
    group_ = attr_int(info, "group", 1);
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
    if (bias.present()) require_same_type(bias, "B", x.type);
    const ConvGeometry geo = conv_geometry(attrs_, group_, x.shape, w.shape, bias.present() ? &bias.shape : nullptr);
    const std::vector<WindowAxis>& ax = geo.axes;
    const std::vector<int64_t>& y_shape = geo.out;
    const int64_t c = x.shape[1], m = w.shape[0];
    Tensor y = output(ctx, 0, y_shape);
    const WindowAxis unit{};  // a size-1 axis: 1-D runs as 2-D with a height of 1
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
