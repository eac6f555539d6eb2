// ONNX ops on the GPU device that change only the shape (Reshape, Flatten, Squeeze, Unsqueeze, Identity: one
// device-to-device copy into ORT's separate output buffer), read only the shape (Shape, output in CPU memory), or
// create a tensor from a shape (ConstantOfShape, shape in CPU memory).
#include <cstring>
#include <string>

#include "gpu/onnx/tensor_ops.h"

namespace fp8ort {
namespace gpu_onnx {
namespace {

// The Reshape family: the output shape comes from the input's shape (and attributes / CPU-resident inputs).
class CopyKernel : public Kernel {
 public:
  using ShapeFn = std::vector<int64_t> (*)(const CopyKernel& k, OrtKernelContext* ctx, const std::vector<int64_t>& in);
  CopyKernel(const OrtKernelInfo* info, const char* op, ShapeFn fn) : fn_(fn) {
    oc_ = {op, node_name(info)};
    allowzero_ = attr_int(info, "allowzero", 0) != 0;
    axis_ = attr_int(info, "axis", 1);
  }
  void compute(OrtKernelContext* ctx) override {
    const Tensor x = input(ctx, 0);
    const int64_t elem = require_element_size(x, "data");
    const std::vector<int64_t> out = fn_(*this, ctx, x.shape);
    if (element_count(out) != x.size) {
      fail("output shape " + shape_str(out) + " holds " + std::to_string(element_count(out)) + " elements but the input " +
           shape_str(x.shape) + " has " + std::to_string(x.size));
    }
    Tensor y = output(ctx, 0, out);
    if (x.size == 0) return;
    gpu_check(fp8ort_onnx_copy(x.data, y.mutable_data, x.size * elem, compute_stream(ctx)), "fp8ort_onnx_copy");
  }
  bool allowzero_ = false;
  int64_t axis_ = 1;

 private:
  ShapeFn fn_;
};

std::vector<int64_t> reshape_out(const CopyKernel& k, OrtKernelContext* ctx, const std::vector<int64_t>& in) {
  return reshape_shape(in, read_ints(input(ctx, 1), "shape"), k.allowzero_);
}

std::vector<int64_t> flatten_out(const CopyKernel& k, OrtKernelContext*, const std::vector<int64_t>& in) {
  return flatten_shape(in, k.axis_);
}

std::vector<int64_t> squeeze_out(const CopyKernel&, OrtKernelContext* ctx, const std::vector<int64_t>& in) {
  const Tensor axes_t = input(ctx, 1);
  if (!axes_t.present()) return squeeze_shape(in, nullptr);
  const std::vector<int64_t> axes = read_ints(axes_t, "axes");
  return squeeze_shape(in, &axes);
}

std::vector<int64_t> unsqueeze_out(const CopyKernel&, OrtKernelContext* ctx, const std::vector<int64_t>& in) {
  const Tensor axes_t = input(ctx, 1);
  if (!axes_t.present()) fail("input 'axes' is required from opset 13");
  return unsqueeze_shape(in, read_ints(axes_t, "axes"));
}

std::vector<int64_t> same_shape(const CopyKernel&, OrtKernelContext*, const std::vector<int64_t>& in) { return in; }

// Shape: dims [start, end) of the input, written to device memory; start/end from opset 15.
class ShapeKernel : public Kernel {
 public:
  explicit ShapeKernel(const OrtKernelInfo* info) {
    oc_ = {"Shape", node_name(info)};
    start_ = attr_int(info, "start", 0);
    has_end_ = has_attr(info, "end");
    end_ = attr_int(info, "end", 0);
  }
  void compute(OrtKernelContext* ctx) override {
    const Tensor x = input(ctx, 0);
    const int64_t rank = static_cast<int64_t>(x.shape.size());
    auto clamp_dim = [rank](int64_t v) {
      if (v < 0) v += rank;
      return v < 0 ? 0 : (v > rank ? rank : v);
    };
    const int64_t b = clamp_dim(start_), e = has_end_ ? clamp_dim(end_) : rank;
    const int64_t n = e > b ? e - b : 0;
    if (n > FP8ORT_ONNX_MAX_VALUES) {
      fail("input has rank " + std::to_string(rank) + "; the GPU Shape writes at most " +
               std::to_string(FP8ORT_ONNX_MAX_VALUES) + " dimensions",
           ORT_NOT_IMPLEMENTED);
    }
    Tensor y = output(ctx, 0, {n});
    // On the device, like every other output of this device's kernels: the consumers (Gather, Unsqueeze, Concat...)
    // are device kernels; onnxruntime copies to the host where a consumer reads a CPU-memory input.
    gpu_check(fp8ort_onnx_write_int64s(static_cast<int64_t*>(y.mutable_data), x.shape.data() + b,
                                       static_cast<int32_t>(n), compute_stream(ctx)),
              "fp8ort_onnx_write_int64s");
  }

 private:
  int64_t start_ = 0, end_ = 0;
  bool has_end_ = false;
};

// ConstantOfShape: the `value` attribute (one element, default float32 0) repeated over the CPU-resident shape.
class ConstantOfShapeKernel : public Kernel {
 public:
  explicit ConstantOfShapeKernel(const OrtKernelInfo* info) {
    oc_ = {"ConstantOfShape", node_name(info)};
    OrtAllocator* alloc = nullptr;
    check(g_ort->GetAllocatorWithDefaultOptions(&alloc), "GetAllocatorWithDefaultOptions");
    OrtValue* value = nullptr;
    OrtStatus* st = g_ort->KernelInfoGetAttribute_tensor(info, "value", alloc, &value);
    if (st != nullptr) {  // no value attribute: float32 zero
      g_ort->ReleaseStatus(st);
      return;
    }
    try {
      const Tensor t = describe(value);
      elem_size_ = element_size(t.type);
      if (elem_size_ == 0) fail(std::string("attribute value has type ") + type_name(t.type) + ", which the GPU kernel does not fill", ORT_NOT_IMPLEMENTED);
      if (t.size != 1) fail("attribute value must hold one element; it has " + std::to_string(t.size));
      type_ = t.type;
      std::memcpy(&bits_, t.data, static_cast<size_t>(elem_size_));
    } catch (...) {
      g_ort->ReleaseValue(value);
      throw;
    }
    g_ort->ReleaseValue(value);
  }

  void compute(OrtKernelContext* ctx) override {
    const Tensor shape_t = input(ctx, 0);
    const std::vector<int64_t> shape = read_ints(shape_t, "input");
    const int64_t count = element_count(shape);
    Tensor y = output(ctx, 0, shape);
    if (y.type != type_) {
      fail(std::string("the output ORT allocated is ") + type_name(y.type) + " but attribute value is " + type_name(type_), ORT_FAIL);
    }
    if (count == 0) return;
    gpu_check(fp8ort_onnx_fill(y.mutable_data, elem_size_, count, bits_, compute_stream(ctx)), "fp8ort_onnx_fill");
  }

 private:
  ONNXTensorElementDataType type_ = ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT;
  int64_t elem_size_ = 4;
  uint64_t bits_ = 0;  // float32 0.0
};

}  // namespace

std::unique_ptr<Kernel> create_reshape(const OrtKernelInfo* info) { return std::make_unique<CopyKernel>(info, "Reshape", reshape_out); }
std::unique_ptr<Kernel> create_flatten(const OrtKernelInfo* info) { return std::make_unique<CopyKernel>(info, "Flatten", flatten_out); }
std::unique_ptr<Kernel> create_squeeze(const OrtKernelInfo* info) { return std::make_unique<CopyKernel>(info, "Squeeze", squeeze_out); }
std::unique_ptr<Kernel> create_unsqueeze(const OrtKernelInfo* info) {
  return std::make_unique<CopyKernel>(info, "Unsqueeze", unsqueeze_out);
}
std::unique_ptr<Kernel> create_identity(const OrtKernelInfo* info) { return std::make_unique<CopyKernel>(info, "Identity", same_shape); }
std::unique_ptr<Kernel> create_shape(const OrtKernelInfo* info) { return std::make_unique<ShapeKernel>(info); }
std::unique_ptr<Kernel> create_constant_of_shape(const OrtKernelInfo* info) { return std::make_unique<ConstantOfShapeKernel>(info); }

}  // namespace gpu_onnx
}  // namespace fp8ort
