#include "cpu/onnx/common.h"

#include <limits>

namespace fp8ort {
namespace cpu_onnx {

TypeList float_types() { return {kF32, kF16}; }
TypeList numeric_types() { return {kF32, kF16, kI64, kI32}; }
TypeList index_types() { return {kI32, kI64}; }

TypeList data_types() {
  return {kF32,
          kF16,
          kI64,
          kI32,
          kBool,
          kU8,
          ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8,
          ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16,
          ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E4M3FN,
          ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E4M3FNUZ,
          ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E5M2,
          ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E5M2FNUZ};
}

size_t element_size(ONNXTensorElementDataType t) {
  switch (t) {
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32: return 4;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE: return 8;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16: return 2;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E4M3FN:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E4M3FNUZ:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E5M2:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E5M2FNUZ: return 1;
    default:
      fail(std::string("element type ") + std::to_string(static_cast<int>(t)) +
           " is not supported by fp8ort's CPU kernels; cast the tensor to float32, float16, int64, int32, bool, "
           "uint8 or an FP8 type");
  }
}


FloatIn::FloatIn(const Tensor& t) {
  if (t.type == kF32) {
    ptr_ = static_cast<const float*>(t.data);
    return;
  }
  buf_.resize(static_cast<size_t>(t.size));
  const uint16_t* p = static_cast<const uint16_t*>(t.data);
  for (int64_t i = 0; i < t.size; ++i) buf_[i] = f16_to_f32(p[i]);
  ptr_ = buf_.data();
}

FloatOut::FloatOut(const Tensor& t) : t_(t) {
  if (t.type == kF32) {
    ptr_ = static_cast<float*>(t.mutable_data);
    return;
  }
  buf_.resize(static_cast<size_t>(t.size));
  ptr_ = buf_.data();
}

void FloatOut::finish() {
  if (t_.type == kF32) return;
  uint16_t* p = static_cast<uint16_t*>(t_.mutable_data);
  for (int64_t i = 0; i < t_.size; ++i) p[i] = f32_to_f16(buf_[i]);
}

}  // namespace cpu_onnx
}  // namespace fp8ort

namespace fp8ort {
namespace cpu_onnx {

Window make_window(const std::vector<WindowAxis>& axes) {
  Window w;
  w.rank = static_cast<int>(axes.size());
  const size_t off = kMaxSpatial - axes.size();  // right-align: unused leading dimensions have size 1
  for (size_t d = 0; d < axes.size(); ++d) {
    const WindowAxis& a = axes[d];
    w.in[off + d] = a.in;
    w.out[off + d] = a.out;
    w.kernel[off + d] = a.kernel;
    w.stride[off + d] = a.stride;
    w.dilation[off + d] = a.dilation;
    w.pad_begin[off + d] = a.pad_begin;
    w.pad_end[off + d] = a.pad_end;
  }
  return w;
}

}  // namespace cpu_onnx
}  // namespace fp8ort
