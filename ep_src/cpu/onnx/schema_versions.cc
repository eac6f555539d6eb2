#include "cpu/onnx/schema_versions.h"

#include <algorithm>
#include <map>
#include <string>

namespace fp8ort {
namespace {

// Schema versions (ONNX since_version) of each op, from onnx.defs, up to opset 21.
const std::map<std::string, std::vector<int>>& schema_versions() {
  static const std::map<std::string, std::vector<int>> v = {
      {"Add", {13, 14}}, {"Sub", {13, 14}}, {"Mul", {13, 14}}, {"Div", {13, 14}}, {"Relu", {13, 14}},
      {"Pow", {13, 15}}, {"Equal", {13, 19}}, {"Where", {9, 16}}, {"Flatten", {13, 21}},
      {"Reshape", {13, 14, 19, 21}}, {"Transpose", {13, 21}}, {"Squeeze", {13, 21}}, {"Unsqueeze", {13, 21}},
      {"Identity", {13, 14, 16, 19, 21}}, {"Shape", {13, 15, 19, 21}}, {"ConstantOfShape", {9, 20, 21}},
      {"Cast", {13, 19, 21}}, {"ReduceMean", {13, 18}}, {"AveragePool", {11, 19}},
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
