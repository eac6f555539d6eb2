// The GPU device's elementwise and data-movement ONNX kernels, one row per op and range of op versions with the
// same semantics (models of opsets 13 to 21; versions listed with onnx.defs.get_schema). Rows end before a newer
// op version this table has not been checked against.
#include "gpu/onnx/tables.h"
#include "gpu/onnx/tensor_ops.h"

namespace fp8ort {

namespace {

using gpu_onnx::create_binary;
using gpu_onnx::create_unary;

constexpr ONNXTensorElementDataType kF32 = ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT;
constexpr ONNXTensorElementDataType kF16 = ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16;
constexpr ONNXTensorElementDataType kI64 = ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64;
constexpr ONNXTensorElementDataType kI32 = ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32;
constexpr ONNXTensorElementDataType kBool = ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL;
constexpr ONNXTensorElementDataType kU8 = ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8;

std::vector<ONNXTensorElementDataType> math_types() { return {kF32, kF16}; }
// Arithmetic also on the int64/int32 shape and mask computations of exports.
std::vector<ONNXTensorElementDataType> numeric_types() { return {kF32, kF16, kI64, kI32}; }
std::vector<ONNXTensorElementDataType> cast_types() { return {kF32, kF16, kI64, kI32, kBool, kU8}; }
// From Cast-19 on: the FP8 types too (to and from float32/float16, with saturate).
std::vector<ONNXTensorElementDataType> cast19_types() {
  std::vector<ONNXTensorElementDataType> t = cast_types();
  t.insert(t.end(), {ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E4M3FN, ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E4M3FNUZ,
                     ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E5M2, ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E5M2FNUZ});
  return t;
}
std::vector<ONNXTensorElementDataType> index_types() { return {kI32, kI64}; }
// Every fixed-size type the data-movement kernels move (they copy 1-, 2-, 4- or 8-byte elements), FP8 included.
std::vector<ONNXTensorElementDataType> movable_types() {
  return {kF32,
          kF16,
          ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16,
          ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE,
          kI64,
          kI32,
          ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8,
          kU8,
          kBool,
          ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E4M3FN,
          ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E4M3FNUZ,
          ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E5M2,
          ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E5M2FNUZ};
}

KernelDef unary(const char* op, int since, int end, KernelFactory create) {
  return {"", op, since, end, {{"T", math_types()}}, {}, {}, create};
}
KernelDef binary(const char* op, int since, int end, KernelFactory create) {
  return {"", op, since, end, {{"T", numeric_types()}}, {}, {}, create};
}
KernelDef compare(const char* op, int since, int end, KernelFactory create) {
  return {"", op, since, end, {{"T", numeric_types()}, {"T1", {kBool}}}, {}, {}, create};
}
KernelDef logical(const char* op, KernelFactory create) {
  return {"", op, 7, kLatestOpset, {{"T", {kBool}}, {"T1", {kBool}}}, {}, {}, create};
}
KernelDef movement(const char* op, int since, int end, std::vector<int> cpu_inputs, KernelFactory create) {
  return {"", op, since, end, {{"T", movable_types()}}, std::move(cpu_inputs), {}, create};
}

}  // namespace

const std::vector<KernelDef>& gpu_tensor_kernels() {
  static const std::vector<KernelDef> table = {
      // unary math (versions 13+ differ from 6 only in types; Relu 14 adds integer types)
      unary("Relu", 13, kLatestOpset, create_unary<FP8ORT_UNARY_RELU>),
      unary("Sigmoid", 13, kLatestOpset, create_unary<FP8ORT_UNARY_SIGMOID>),
      unary("Tanh", 13, kLatestOpset, create_unary<FP8ORT_UNARY_TANH>),
      unary("Erf", 13, kLatestOpset, create_unary<FP8ORT_UNARY_ERF>),
      unary("Sqrt", 13, kLatestOpset, create_unary<FP8ORT_UNARY_SQRT>),
      unary("Exp", 13, kLatestOpset, create_unary<FP8ORT_UNARY_EXP>),
      unary("Neg", 13, kLatestOpset, create_unary<FP8ORT_UNARY_NEG>),
      unary("Abs", 13, kLatestOpset, create_unary<FP8ORT_UNARY_ABS>),
      unary("Reciprocal", 13, kLatestOpset, create_unary<FP8ORT_UNARY_RECIPROCAL>),
      unary("HardSigmoid", 6, 21, create_unary<FP8ORT_UNARY_HARD_SIGMOID>),  // 22 adds bfloat16
      unary("HardSwish", 14, 21, create_unary<FP8ORT_UNARY_HARD_SWISH>),
      unary("Gelu", 20, kLatestOpset, gpu_onnx::create_gelu),
      unary("Ceil", 13, kLatestOpset, create_unary<FP8ORT_UNARY_CEIL>),
      unary("Floor", 13, kLatestOpset, create_unary<FP8ORT_UNARY_FLOOR>),
      {"", "Clip", 13, kLatestOpset, {{"T", math_types()}}, {1, 2}, {}, gpu_onnx::create_clip},
      {"", "Cast", 13, 18, {{"T1", cast_types()}, {"T2", cast_types()}}, {}, {}, gpu_onnx::create_cast},
      {"", "Cast", 19, 22, {{"T1", cast19_types()}, {"T2", cast19_types()}}, {}, {}, gpu_onnx::create_cast},
      // broadcasting binary math and comparisons
      binary("Add", 13, kLatestOpset, create_binary<FP8ORT_BINARY_ADD>),
      binary("Sub", 13, kLatestOpset, create_binary<FP8ORT_BINARY_SUB>),
      binary("Mul", 13, kLatestOpset, create_binary<FP8ORT_BINARY_MUL>),
      binary("Div", 13, kLatestOpset, create_binary<FP8ORT_BINARY_DIV>),
      {"", "Pow", 13, kLatestOpset, {{"T", math_types()}, {"T1", math_types()}}, {}, {}, create_binary<FP8ORT_BINARY_POW>},
      {"", "Equal", 13, kLatestOpset, {{"T", {kF32, kF16, kI64, kI32, kBool}}, {"T1", {kBool}}}, {}, {},
       create_binary<FP8ORT_BINARY_EQUAL>},
      compare("Less", 13, kLatestOpset, create_binary<FP8ORT_BINARY_LESS>),
      compare("Greater", 13, kLatestOpset, create_binary<FP8ORT_BINARY_GREATER>),
      compare("LessOrEqual", 12, kLatestOpset, create_binary<FP8ORT_BINARY_LESS_OR_EQUAL>),
      compare("GreaterOrEqual", 12, kLatestOpset, create_binary<FP8ORT_BINARY_GREATER_OR_EQUAL>),
      binary("Max", 13, kLatestOpset, create_binary<FP8ORT_BINARY_MAX>),
      binary("Min", 13, kLatestOpset, create_binary<FP8ORT_BINARY_MIN>),
      binary("Mod", 10, kLatestOpset, gpu_onnx::create_mod),  // 13 adds bfloat16
      logical("And", create_binary<FP8ORT_BINARY_AND>),
      logical("Or", create_binary<FP8ORT_BINARY_OR>),
      logical("Xor", create_binary<FP8ORT_BINARY_XOR>),
      {"", "Not", 1, kLatestOpset, {{"T", {kBool}}}, {}, {}, gpu_onnx::create_not},
      {"", "IsNaN", 13, kLatestOpset, {{"T1", math_types()}, {"T2", {kBool}}}, {}, {}, gpu_onnx::create_isnan},
      // Where 9 is what opsets 13-15 resolve to; 16 adds bfloat16
      {"", "Where", 9, kLatestOpset, {{"B", {kBool}}, {"T", movable_types()}}, {}, {}, gpu_onnx::create_where},
      // index ops of attention-mask subgraphs: Range's scalars are read in CPU memory
      {"", "Range", 11, kLatestOpset, {{"T", {kF32, kI32, kI64}}}, {0, 1, 2}, {}, gpu_onnx::create_range},
      {"", "GatherElements", 13, kLatestOpset, {{"T", movable_types()}, {"Tind", index_types()}}, {}, {},
       gpu_onnx::create_gather_elements},
      {"", "GatherND", 13, kLatestOpset, {{"T", movable_types()}}, {}, {}, gpu_onnx::create_gather_nd},
      // ScatterND 16 adds the reduction attribute, 18 its max/min values ("none" only here)
      {"", "ScatterND", 11, kLatestOpset, {{"T", movable_types()}}, {}, {}, gpu_onnx::create_scatter_nd},
      // CumSum's axis is read in CPU memory; 14 adds float16 and bfloat16 (not taken here)
      {"", "CumSum", 11, kLatestOpset, {{"T", {kF32, kI64, kI32}}, {"T2", index_types()}}, {1}, {},
       gpu_onnx::create_cumsum},
      // data movement
      movement("Transpose", 13, 22, {}, gpu_onnx::create_transpose),
      movement("Reshape", 13, 22, {1}, gpu_onnx::create_reshape),  // 14 adds allowzero (default 0 = version 13)
      movement("Flatten", 13, 22, {}, gpu_onnx::create_flatten),
      movement("Squeeze", 13, 22, {1}, gpu_onnx::create_squeeze),
      movement("Unsqueeze", 13, 22, {1}, gpu_onnx::create_unsqueeze),
      // Identity's type constraint is named T in version 13, V from 14
      {"", "Identity", 13, 13, {{"T", movable_types()}}, {}, {}, gpu_onnx::create_identity},
      {"", "Identity", 14, 22, {{"V", movable_types()}}, {}, {}, gpu_onnx::create_identity},
      movement("Concat", 13, kLatestOpset, {}, gpu_onnx::create_concat),
      movement("Split", 13, kLatestOpset, {1}, gpu_onnx::create_split),  // 18 adds num_outputs
      // Pad 18 adds the axes input (type Tind), 19 the wrap mode (taken from 13 on: one mapping), 21 more types; 23
      // is not checked. pads, constant_value and axes are read in CPU memory.
      movement("Pad", 13, 17, {1, 2}, gpu_onnx::create_pad),
      {"", "Pad", 18, 22, {{"T", movable_types()}, {"Tind", index_types()}}, {1, 2, 3}, {}, gpu_onnx::create_pad},
      {"", "Slice", 13, kLatestOpset, {{"T", movable_types()}, {"Tind", index_types()}}, {1, 2, 3, 4}, {},
       gpu_onnx::create_slice},
      {"", "Gather", 13, kLatestOpset, {{"T", movable_types()}, {"Tind", index_types()}}, {}, {}, gpu_onnx::create_gather},
      movement("Expand", 13, kLatestOpset, {1}, gpu_onnx::create_expand),
      {"", "Shape", 13, 22, {{"T", movable_types()}, {"T1", {kI64}}}, {}, {}, gpu_onnx::create_shape},  // 15: start/end
      // ConstantOfShape 9 is what opsets 13-19 resolve to; 20 and 21 add FP8 and 4-bit value types
      {"", "ConstantOfShape", 9, 22, {{"T1", {kI64}}, {"T2", movable_types()}}, {0}, {}, gpu_onnx::create_constant_of_shape},
  };
  return table;
}

}  // namespace fp8ort
