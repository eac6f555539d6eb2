// Shape-changing ONNX ops that keep the data as it is (Reshape, Flatten, Squeeze, Unsqueeze, Identity), the shape
// producers (Shape, ConstantOfShape) and Cast, on the CPU device.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "cpu/onnx/common.h"
#include "ops/op_common.h"

namespace fp8ort {
namespace cpu_onnx {
namespace {

// Copies the input's bytes into an output of `shape` (same element count).
void copy_to_output(OrtKernelContext* ctx, const Tensor& x, const std::vector<int64_t>& shape) {
  const size_t es = element_size(x.type);
  Tensor y = output(ctx, 0, shape);
  if (x.size > 0 && y.mutable_data != x.data) std::memcpy(y.mutable_data, x.data, static_cast<size_t>(x.size) * es);
}

class ReshapeKernel : public Kernel {
 public:
  explicit ReshapeKernel(const OrtKernelInfo* info) {
    oc_ = {"Reshape", node_name(info)};
    allow_zero_ = attr_int(info, "allowzero", 0) != 0;
  }

  void compute(OrtKernelContext* ctx) override {
    const Tensor x = input(ctx, 0);
    const Tensor s = input(ctx, 1);
    if (s.shape.size() != 1) fail(std::string("'shape' must be 1-D, got shape ") + shape_str(s.shape));
    const std::vector<int64_t> shape = reshape_shape(x.shape, read_ints(s, "shape"), allow_zero_);
    copy_to_output(ctx, x, shape);
  }

 private:
  bool allow_zero_ = false;
};

class FlattenKernel : public Kernel {
 public:
  explicit FlattenKernel(const OrtKernelInfo* info) {
    oc_ = {"Flatten", node_name(info)};
    axis_ = attr_int(info, "axis", 1);
  }

  void compute(OrtKernelContext* ctx) override {
    const Tensor x = input(ctx, 0);
    copy_to_output(ctx, x, flatten_shape(x.shape, axis_));
  }

 private:
  int64_t axis_ = 1;
};

class SqueezeKernel : public Kernel {
 public:
  explicit SqueezeKernel(const OrtKernelInfo* info) { oc_ = {"Squeeze", node_name(info)}; }

  void compute(OrtKernelContext* ctx) override {
    const Tensor x = input(ctx, 0);
    const Tensor a = input(ctx, 1);
    if (a.present() && a.data != nullptr) {
      const std::vector<int64_t> axes = read_ints(a, "axes");
      copy_to_output(ctx, x, squeeze_shape(x.shape, &axes));
    } else {
      copy_to_output(ctx, x, squeeze_shape(x.shape, nullptr));
    }
  }
};

class UnsqueezeKernel : public Kernel {
 public:
  explicit UnsqueezeKernel(const OrtKernelInfo* info) { oc_ = {"Unsqueeze", node_name(info)}; }

  void compute(OrtKernelContext* ctx) override {
    const Tensor x = input(ctx, 0);
    const Tensor a = input(ctx, 1);
    if (!a.present() || a.data == nullptr) fail("input 'axes' is required from opset 13");
    copy_to_output(ctx, x, unsqueeze_shape(x.shape, read_ints(a, "axes")));
  }
};

class IdentityKernel : public Kernel {
 public:
  explicit IdentityKernel(const OrtKernelInfo* info) { oc_ = {"Identity", node_name(info)}; }
  void compute(OrtKernelContext* ctx) override {
    const Tensor x = input(ctx, 0);
    copy_to_output(ctx, x, x.shape);
  }
};

// Shape(data) with the start/end attributes of opset 15 (clamped per ONNX).
class ShapeKernel : public Kernel {
 public:
  explicit ShapeKernel(const OrtKernelInfo* info) {
    oc_ = {"Shape", node_name(info)};
    start_ = attr_int(info, "start", 0);
    end_ = attr_int(info, "end", std::numeric_limits<int64_t>::max());
  }

  void compute(OrtKernelContext* ctx) override {
    const Tensor x = input(ctx, 0);
    const int64_t rank = static_cast<int64_t>(x.shape.size());
    auto clamp = [rank](int64_t v) {
      if (v < 0) v += rank;
      return std::min(std::max<int64_t>(v, 0), rank);
    };
    const int64_t s = clamp(start_);
    const int64_t e = std::max(s, clamp(end_));
    Tensor y = output(ctx, 0, {e - s});
    int64_t* yp = static_cast<int64_t*>(y.mutable_data);
    for (int64_t d = s; d < e; ++d) yp[d - s] = x.shape[d];
  }

 private:
  int64_t start_ = 0;
  int64_t end_ = 0;
};

// Range: scalars in CPU memory, element i = start + i * delta.
class RangeKernel : public Kernel {
 public:
  explicit RangeKernel(const OrtKernelInfo* info) { oc_ = {"Range", node_name(info)}; }

  void compute(OrtKernelContext* ctx) override {
    const RangeArgs r = range_args(input(ctx, 0), input(ctx, 1), input(ctx, 2));
    Tensor y = output(ctx, 0, {r.count});
    for (int64_t i = 0; i < r.count; ++i) {
      switch (r.type) {
        case kF32: static_cast<float*>(y.mutable_data)[i] = static_cast<float>(r.start + static_cast<double>(i) * r.delta); break;
        case kI32: static_cast<int32_t*>(y.mutable_data)[i] = static_cast<int32_t>(r.istart + i * r.idelta); break;
        default: static_cast<int64_t*>(y.mutable_data)[i] = r.istart + i * r.idelta; break;
      }
    }
  }
};

class ConstantOfShapeKernel : public Kernel {
 public:
  explicit ConstantOfShapeKernel(const OrtKernelInfo* info) {
    oc_ = {"ConstantOfShape", node_name(info)};
    value_.assign(sizeof(float), 0);  // default: float32 0
    OrtAllocator* alloc = nullptr;
    check(g_ort->GetAllocatorWithDefaultOptions(&alloc), "GetAllocatorWithDefaultOptions");
    OrtValue* v = nullptr;
    OrtStatus* st = g_ort->KernelInfoGetAttribute_tensor(info, "value", alloc, &v);
    if (st != nullptr) {  // no value attribute
      g_ort->ReleaseStatus(st);
      return;
    }
    Tensor t;
    try {
      t = describe(v);
    } catch (...) {
      g_ort->ReleaseValue(v);
      throw;
    }
    if (t.size != 1) {
      g_ort->ReleaseValue(v);
      fail(std::string("attribute 'value' must hold one element, got shape ") + shape_str(t.shape));
    }
    type_ = t.type;
    size_t es = 0;
    try {
      es = element_size(t.type);
    } catch (...) {
      g_ort->ReleaseValue(v);
      throw;
    }
    value_.assign(static_cast<const uint8_t*>(t.data), static_cast<const uint8_t*>(t.data) + es);
    g_ort->ReleaseValue(v);
  }

  void compute(OrtKernelContext* ctx) override {
    const Tensor s = input(ctx, 0);
    if (s.shape.size() != 1) fail(std::string("input must be a 1-D int64 shape, got shape ") + shape_str(s.shape));
    const std::vector<int64_t> shape = read_ints(s, "input");
    element_count(shape);
    Tensor y = output(ctx, 0, shape);
    if (y.type != type_) fail("output type differs from the 'value' attribute's type");
    uint8_t* yp = static_cast<uint8_t*>(y.mutable_data);
    const size_t es = value_.size();
    for (int64_t i = 0; i < y.size; ++i) std::memcpy(yp + i * es, value_.data(), es);
  }

 private:
  ONNXTensorElementDataType type_ = kF32;
  std::vector<uint8_t> value_;
};

// Cast(input) to `to`; FP8 targets honour `saturate` (opset 19). Values go through double.
class CastKernel : public Kernel {
 public:
  explicit CastKernel(const OrtKernelInfo* info) {
    oc_ = {"Cast", node_name(info)};
    to_ = attr_elem_type(info, "to", ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED);
    saturate_ = attr_int(info, "saturate", 1) != 0;
  }

  void compute(OrtKernelContext* ctx) override {
    const Tensor x = input(ctx, 0);
    Tensor y = output(ctx, 0, x.shape);
    if (y.type != to_) fail("the output's type does not match attribute 'to'");
    if (x.type == y.type) {
      copy_to_output(ctx, x, x.shape);
      return;
    }
    element_size(x.type);
    element_size(y.type);
    for (int64_t i = 0; i < x.size; ++i) store(y, i, load(x, i));
  }

 private:
  static double load(const Tensor& t, int64_t i) {
    switch (t.type) {
      case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT: return static_cast<const float*>(t.data)[i];
      case ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE: return static_cast<const double*>(t.data)[i];
      case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64: return static_cast<double>(static_cast<const int64_t*>(t.data)[i]);
      case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32: return static_cast<const int32_t*>(t.data)[i];
      case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8: return static_cast<const int8_t*>(t.data)[i];
      case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8: return static_cast<const uint8_t*>(t.data)[i];
      case ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL: return static_cast<const bool*>(t.data)[i] ? 1.0 : 0.0;
      default: return load_float(t.data, t.type, i);  // float16, bfloat16, FP8
    }
  }

  template <class I>
  static I to_int(double v) {  // truncation toward zero, saturated so the conversion is defined
    if (std::isnan(v)) return 0;
    const double lo = static_cast<double>(std::numeric_limits<I>::min());
    const double hi = static_cast<double>(std::numeric_limits<I>::max());
    if (v <= lo) return std::numeric_limits<I>::min();
    if (v >= hi) return std::numeric_limits<I>::max();
    return static_cast<I>(v);
  }

  void store(Tensor& t, int64_t i, double v) const {
    switch (t.type) {
      case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT: static_cast<float*>(t.mutable_data)[i] = static_cast<float>(v); break;
      case ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE: static_cast<double*>(t.mutable_data)[i] = v; break;
      case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16:
        static_cast<uint16_t*>(t.mutable_data)[i] = f32_to_f16(static_cast<float>(v));
        break;
      case ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16:
        static_cast<uint16_t*>(t.mutable_data)[i] = f32_to_bf16(static_cast<float>(v));
        break;
      case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64: static_cast<int64_t*>(t.mutable_data)[i] = to_int<int64_t>(v); break;
      case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32: static_cast<int32_t*>(t.mutable_data)[i] = to_int<int32_t>(v); break;
      case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8: static_cast<int8_t*>(t.mutable_data)[i] = to_int<int8_t>(v); break;
      case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8: static_cast<uint8_t*>(t.mutable_data)[i] = to_int<uint8_t>(v); break;
      case ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL: static_cast<bool*>(t.mutable_data)[i] = v != 0.0; break;
      default:  // FP8 (element_size checked the type)
        static_cast<uint8_t*>(t.mutable_data)[i] =
            encode_fp8(static_cast<float>(v), fp8_format_of(t.type), saturate_);
        break;
    }
  }

  ONNXTensorElementDataType to_;
  bool saturate_ = true;
};

TypeList cast_types(bool with_fp8) {
  TypeList t = {kF32, kF16, kI64, kI32, kBool, kU8, ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8,
                ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE, ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16};
  if (with_fp8) {
    for (auto f : {ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E4M3FN, ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E4M3FNUZ,
                   ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E5M2, ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E5M2FNUZ}) {
      t.push_back(f);
    }
  }
  return t;
}

}  // namespace

std::vector<KernelDef> shape_kernels() {
  const TypeList d = data_types();
  const TypeList c18 = cast_types(false);
  const TypeList c19 = cast_types(true);
  return {
      {"", "Reshape", 13, 13, {{"T", d}}, {}, {}, make_kernel<ReshapeKernel>},
      {"", "Reshape", 14, kLatestOpset, {{"T", d}}, {}, {}, make_kernel<ReshapeKernel>},  // allowzero
      {"", "Flatten", 13, kLatestOpset, {{"T", d}}, {}, {}, make_kernel<FlattenKernel>},
      {"", "Squeeze", 13, kLatestOpset, {{"T", d}}, {}, {}, make_kernel<SqueezeKernel>},
      {"", "Unsqueeze", 13, kLatestOpset, {{"T", d}}, {}, {}, make_kernel<UnsqueezeKernel>},
      {"", "Identity", 13, 13, {{"T", d}}, {}, {}, make_kernel<IdentityKernel>},
      {"", "Identity", 14, kLatestOpset, {{"V", d}}, {}, {}, make_kernel<IdentityKernel>},  // constraint renamed
      {"", "Shape", 13, 14, {{"T", d}, {"T1", {kI64}}}, {}, {}, make_kernel<ShapeKernel>},
      {"", "Shape", 15, kLatestOpset, {{"T", d}, {"T1", {kI64}}}, {}, {}, make_kernel<ShapeKernel>},  // start/end
      {"", "Range", 11, kLatestOpset, {{"T", {kF32, kI32, kI64}}}, {}, {}, make_kernel<RangeKernel>},
      {"", "ConstantOfShape", 9, kLatestOpset, {{"T1", {kI64}}, {"T2", d}}, {}, {}, make_kernel<ConstantOfShapeKernel>},
      {"", "Cast", 13, 18, {{"T1", c18}, {"T2", c18}}, {}, {}, make_kernel<CastKernel>},
      {"", "Cast", 19, kLatestOpset, {{"T1", c19}, {"T2", c19}}, {}, {}, make_kernel<CastKernel>},  // saturate
  };
}

}  // namespace cpu_onnx
}  // namespace fp8ort
