#include "ops/schema_versions.h"

#include <algorithm>
#include <map>
#include <string>

namespace fp8ort {
namespace {

// Schema versions (ONNX since_version) of every op in a device table, up to opset 21, as onnx.defs lists them
// (`onnx.defs.get_schema(op, max_inclusive_version=v).since_version` for v = 1..21).
const std::map<std::string, std::vector<int>>& schema_versions() {
  static const std::map<std::string, std::vector<int>> v = {
      {"Abs", {1, 6, 13}},
      {"Add", {1, 6, 7, 13, 14}},
      {"And", {1, 7}},
      {"AveragePool", {1, 7, 10, 11, 19}},
      {"BatchNormalization", {1, 6, 7, 9, 14, 15}},
      {"Cast", {1, 6, 9, 13, 19, 21}},
      {"Ceil", {1, 6, 13}},
      {"Clip", {1, 6, 11, 12, 13}},
      {"Concat", {1, 4, 11, 13}},
      {"ConstantOfShape", {9, 20, 21}},
      {"Conv", {1, 11}},
      {"CumSum", {11, 14}},
      {"Div", {1, 6, 7, 13, 14}},
      {"Equal", {1, 7, 11, 13, 19}},
      {"Erf", {9, 13}},
      {"Exp", {1, 6, 13}},
      {"Expand", {8, 13}},
      {"Flatten", {1, 9, 11, 13, 21}},
      {"Floor", {1, 6, 13}},
      {"Gather", {1, 11, 13}},
      {"GatherElements", {11, 13}},
      {"GatherND", {11, 12, 13}},
      {"Gelu", {20}},
      {"Gemm", {1, 6, 7, 9, 11, 13}},
      {"GlobalAveragePool", {1}},
      {"GlobalMaxPool", {1}},
      {"Greater", {1, 7, 9, 13}},
      {"GreaterOrEqual", {12, 16}},
      {"HardSigmoid", {1, 6}},
      {"HardSwish", {14}},
      {"Identity", {1, 13, 14, 16, 19, 21}},
      {"IsNaN", {9, 13, 20}},
      {"LayerNormalization", {17}},
      {"Less", {1, 7, 9, 13}},
      {"LessOrEqual", {12, 16}},
      {"LogSoftmax", {1, 11, 13}},
      {"MatMul", {1, 9, 13}},
      {"Max", {1, 6, 8, 12, 13}},
      {"MaxPool", {1, 8, 10, 11, 12}},
      {"Min", {1, 6, 8, 12, 13}},
      {"Mod", {10, 13}},
      {"Mul", {1, 6, 7, 13, 14}},
      {"Neg", {1, 6, 13}},
      {"Not", {1}},
      {"Or", {1, 7}},
      {"Pad", {1, 2, 11, 13, 18, 19, 21}},
      {"Pow", {1, 7, 12, 13, 15}},
      {"Range", {11}},
      {"Reciprocal", {1, 6, 13}},
      {"ReduceMax", {1, 11, 12, 13, 18, 20}},
      {"ReduceMean", {1, 11, 13, 18}},
      {"ReduceMin", {1, 11, 12, 13, 18, 20}},
      {"ReduceSum", {1, 11, 13}},
      {"Relu", {1, 6, 13, 14}},
      {"Reshape", {1, 5, 13, 14, 19, 21}},
      {"ScatterND", {11, 13, 16, 18}},
      {"Shape", {1, 13, 15, 19, 21}},
      {"Sigmoid", {1, 6, 13}},
      {"Slice", {1, 10, 11, 13}},
      {"Softmax", {1, 11, 13}},
      {"Split", {1, 2, 11, 13, 18}},
      {"Sqrt", {1, 6, 13}},
      {"Squeeze", {1, 11, 13, 21}},
      {"Sub", {1, 6, 7, 13, 14}},
      {"Tanh", {1, 6, 13}},
      {"Transpose", {1, 13, 21}},
      {"Unsqueeze", {1, 11, 13, 21}},
      {"Where", {9, 16}},
      {"Xor", {1, 7}},
  };
  return v;
}

void add_split(const KernelDef& row, std::vector<KernelDef>* out) {
  const auto& table = schema_versions();
  const auto it = table.find(row.op_type);
  if (it == table.end()) {  // one schema version over the opsets covered
    out->push_back(row);
    return;
  }
  const std::vector<int>& versions = it->second;
  for (size_t i = 0; i < versions.size(); ++i) {
    const int v = versions[i];
    if (v < row.since_version || v > row.end_version) continue;
    KernelDef r = row;
    r.since_version = v;
    r.end_version = i + 1 < versions.size() ? std::min(row.end_version, versions[i + 1] - 1) : row.end_version;
    out->push_back(r);
  }
}

}  // namespace

std::vector<KernelDef> split_at_schema_versions(const std::vector<KernelDef>& rows) {
  std::vector<KernelDef> out;
  for (const KernelDef& row : rows) add_split(row, &out);
  return out;
}

}  // namespace fp8ort
