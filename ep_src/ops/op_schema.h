// The com.fp8ort op contract in one table: each op's name, inputs (names, how many are required), outputs, the
// kernels that implement it per device, and its type/shape inference. The custom-op library (custom_op/) and the
// plugin EP (plugin_ep/) both register the ops from this table.
#pragma once

#include <onnxruntime_c_api.h>

#include <cstddef>
#include <vector>

#include "ort/kernel.h"

namespace fp8ort {

constexpr const char* kOpDomain = "com.fp8ort";
constexpr int kOpSinceVersion = 1;

enum class OpKind {
  kConv,
  kMatMul,
  kQuantize,
  kDequantize,
  kMaxPool,
  kAttention,
  kLayerNorm,
  kGlobalAveragePool,
  kChannelMul
};

struct OpSchema {
  OpKind kind;
  const char* name;   // "FP8Conv"
  int since_version;  // version of the op in the com.fp8ort domain
  std::vector<const char*> inputs;
  size_t required_inputs;  // the first `required_inputs` inputs must be given
  size_t output_count;
  ONNXTensorElementDataType default_output_type;  // when output_dtype is absent (UNDEFINED: X's type)
  // (FP8LayerNormalization: of its second output, Y_fp8; its first has X's type)
  KernelFactory create_cpu;
  KernelFactory create_gpu;  // nullptr in a build without a GPU backend
};

const std::vector<OpSchema>& op_schemas();

// Checks the input element types and sets the output's element type (from output_dtype) and shape. Problems
// found here leave the shape open instead of failing (ORT ignores a status from shape inference): the kernel
// reports them, with the input's name, when the session is created or run. Throws only on C API failures.
void infer_type_and_shape(const OpSchema& op, OrtShapeInferContext* ctx);

}  // namespace fp8ort
