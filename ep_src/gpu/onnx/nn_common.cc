#include "gpu/onnx/nn_common.h"

namespace fp8ort {
namespace gpu_nn {




fp8ort_dtype float_type(const Tensor& t, const char* name) {
  if (t.type == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT) return FP8ORT_FLOAT;
  if (t.type == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16) return FP8ORT_FLOAT16;
  fail(std::string("input ") + name + " has element type " + type_name(t.type) +
       "; the GPU device runs this op in float32 or float16 only");
}

void require_same_type(const Tensor& t, const char* name, ONNXTensorElementDataType type) {
  if (t.type != type) {
    fail(std::string("input ") + name + " has element type " + type_name(t.type) + " but X has " + type_name(type) +
         "; give both the same type");
  }
}

int64_t normalize_axis(int64_t axis, int64_t rank, const char* what) {
  if (axis < -rank || axis >= rank) {
    fail(std::string(what) + " " + std::to_string(axis) + " is out of range for a tensor of rank " +
         std::to_string(rank) + "; use a value in [" + std::to_string(-rank) + ", " + std::to_string(rank - 1) + "]");
  }
  return axis < 0 ? axis + rank : axis;
}

int64_t product(const std::vector<int64_t>& shape, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end && i < shape.size(); ++i) p *= shape[i];
  return p;
}

Tensor optional_output(OrtKernelContext* ctx, size_t index, const std::vector<int64_t>& shape) {
  size_t count = 0;
  check(g_ort->KernelContext_GetOutputCount(ctx, &count), "KernelContext_GetOutputCount");
  if (index >= count) return Tensor{};
  OrtValue* value = nullptr;
  check(g_ort->KernelContext_GetOutput(ctx, index, shape.data(), shape.size(), &value), "KernelContext_GetOutput");
  if (value == nullptr) return Tensor{};
  return describe(value);
}

WindowAttrs parse_window_attrs(const OrtKernelInfo* info) {
  WindowAttrs a;
  a.auto_pad = attr_string(info, "auto_pad", "NOTSET");
  if (a.auto_pad != "NOTSET" && a.auto_pad != "SAME_UPPER" && a.auto_pad != "SAME_LOWER" && a.auto_pad != "VALID") {
    fail("attribute auto_pad must be NOTSET, SAME_UPPER, SAME_LOWER or VALID; got \"" + a.auto_pad + "\"");
  }
  a.kernel_shape = attr_ints(info, "kernel_shape");
  a.strides = attr_ints(info, "strides");
  a.pads = attr_ints(info, "pads");
  a.dilations = attr_ints(info, "dilations");
  a.ceil_mode = attr_int(info, "ceil_mode", 0) != 0;
  return a;
}

namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

void check_count(const std::vector<int64_t>& v, size_t wanted, const char* name) {
  if (!v.empty() && v.size() != wanted) {
    fail(std::string("attribute ") + name + " has " + std::to_string(v.size()) + " values; this input needs " +
         std::to_string(wanted));
  }
}

}  // namespace

std::vector<WindowAxis> window_geometry(const WindowAttrs& a, const std::vector<int64_t>& in_spatial,
                                        const std::vector<int64_t>& kernel, bool pooling) {
  const size_t s = in_spatial.size();
  if (kernel.size() != s) {
    fail("the kernel has " + std::to_string(kernel.size()) + " spatial axes but the input " + std::to_string(s));
  }
  check_count(a.strides, s, "strides");
  check_count(a.dilations, s, "dilations");
  check_count(a.pads, 2 * s, "pads");
  std::vector<WindowAxis> axes(s);
  for (size_t i = 0; i < s; ++i) {
    WindowAxis& x = axes[i];
    x.in = in_spatial[i];
    x.kernel = kernel[i];
    x.stride = a.strides.empty() ? 1 : a.strides[i];
    x.dilation = a.dilations.empty() ? 1 : a.dilations[i];
    if (x.kernel < 1 || x.stride < 1 || x.dilation < 1) {
      fail("kernel_shape, strides and dilations must be >= 1; got kernel " + shape_str(kernel) + ", strides " +
           shape_str(a.strides) + ", dilations " + shape_str(a.dilations));
    }
    const int64_t extent = x.dilation * (x.kernel - 1) + 1;
    const bool round_up = pooling && a.ceil_mode;
    if (a.auto_pad == "SAME_UPPER" || a.auto_pad == "SAME_LOWER") {
      x.out = ceil_div(x.in, x.stride);
      int64_t need = (x.out - 1) * x.stride + extent - x.in;
      if (need < 0) need = 0;
      x.pad_begin = a.auto_pad == "SAME_UPPER" ? need / 2 : (need + 1) / 2;
      x.pad_end = need - x.pad_begin;
      continue;
    }
    if (a.auto_pad == "VALID") {
      x.pad_begin = x.pad_end = 0;
    } else {
      x.pad_begin = a.pads.empty() ? 0 : a.pads[i];
      x.pad_end = a.pads.empty() ? 0 : a.pads[i + s];
      if (x.pad_begin < 0 || x.pad_end < 0) fail("attribute pads must be >= 0; got " + shape_str(a.pads));
    }
    const int64_t span = x.in + x.pad_begin + x.pad_end - extent;
    if (span < 0) {
      fail("the window (extent " + std::to_string(extent) + " with dilation) is larger than the padded input (" +
           std::to_string(x.in + x.pad_begin + x.pad_end) + ") along spatial axis " + std::to_string(i) +
           "; check kernel_shape, pads and dilations");
    }
    x.out = (round_up ? ceil_div(span, x.stride) : span / x.stride) + 1;
  }
  return axes;
}

}  // namespace gpu_nn
}  // namespace fp8ort
