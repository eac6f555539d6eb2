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

}  // namespace gpu_nn
}  // namespace fp8ort
