// The standard ONNX ops the plugin EP's GPU device runs (host side; device code in hip_kernels/onnx_*.hip), one row
// per ONNX schema version (ops/schema_versions.h says why).
//
// Integer tensors of the ops below are shapes, indices and masks computed by the exporter's shape subgraphs
// (Shape -> Gather -> Unsqueeze -> Concat -> Reshape): on the GPU device they run on the host, through the CPU
// device's kernels with every input and output in CPU memory, so a shape never makes a round trip through the GPU
// and no copy synchronises the stream. Their device rows keep the other element types.
#include <algorithm>
#include <cstring>

#include "gpu/onnx/tables.h"
#include "ops/schema_versions.h"

namespace fp8ort {

namespace {

struct HostShapeOp {
  const char* op_type;
  int inputs;  // inputs of the op (Concat: the most the host kernel is registered for)
};

constexpr HostShapeOp kHostShapeOps[] = {
    {"Add", 2},     {"Sub", 2},       {"Mul", 2},     {"Div", 2},       {"Equal", 2},          {"Where", 3},
    {"Concat", 64}, {"Gather", 2},    {"Slice", 5},   {"Unsqueeze", 2}, {"Squeeze", 2},        {"Reshape", 2},
    {"Expand", 2},  {"Identity", 1},  {"Flatten", 1}, {"Transpose", 1}, {"ConstantOfShape", 1},
};

bool is_shape_int(ONNXTensorElementDataType t) {
  return t == ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64 || t == ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32;
}

const HostShapeOp* host_shape_op(const char* op_type) {
  for (const HostShapeOp& h : kHostShapeOps) {
    if (std::strcmp(h.op_type, op_type) == 0) return &h;
  }
  return nullptr;
}

// The constraint that carries the op's data (output) type: T, or T2 for ConstantOfShape.
bool is_data_constraint(const KernelDef& row, const TypeConstraint& c) {
  return std::strcmp(c.name, std::strcmp(row.op_type, "ConstantOfShape") == 0 ? "T2" : "T") == 0;
}

// Device rows without the integer data types the host rows take.
std::vector<KernelDef> without_shape_ints(const std::vector<KernelDef>& rows) {
  std::vector<KernelDef> out;
  for (KernelDef r : rows) {
    if (host_shape_op(r.op_type) != nullptr) {
      for (TypeConstraint& c : r.constraints) {
        if (is_data_constraint(r, c)) c.types.erase(std::remove_if(c.types.begin(), c.types.end(), is_shape_int),
                                                    c.types.end());
      }
      const bool empty = std::any_of(r.constraints.begin(), r.constraints.end(),
                                     [](const TypeConstraint& c) { return c.types.empty(); });
      if (empty) continue;
    }
    out.push_back(std::move(r));
  }
  return out;
}

// The CPU device's rows of those ops, restricted to integer data and with every input and output in CPU memory.
std::vector<KernelDef> host_shape_kernels() {
  std::vector<KernelDef> out;
  for (KernelDef r : cpu_onnx_kernels()) {
    const HostShapeOp* h = host_shape_op(r.op_type);
    if (h == nullptr) continue;
    bool any = true;
    for (TypeConstraint& c : r.constraints) {
      if (!is_data_constraint(r, c)) continue;
      c.types.erase(std::remove_if(c.types.begin(), c.types.end(), [](auto t) { return !is_shape_int(t); }),
                    c.types.end());
      any = !c.types.empty();
    }
    if (!any) continue;
    r.cpu_inputs.clear();
    for (int i = 0; i < h->inputs; ++i) r.cpu_inputs.push_back(i);
    r.cpu_outputs = {0};
    out.push_back(std::move(r));
  }
  return out;  // already one row per schema version (the CPU table is split)
}

}  // namespace

const std::vector<KernelDef>& gpu_onnx_kernels() {
  static const std::vector<KernelDef> table = [] {
    std::vector<KernelDef> all;
    for (const auto* part : {&gpu_tensor_kernels(), &gpu_nn_kernels()}) all.insert(all.end(), part->begin(), part->end());
    std::vector<KernelDef> device = split_at_schema_versions(without_shape_ints(all));
    std::vector<KernelDef> host = host_shape_kernels();
    device.insert(device.end(), host.begin(), host.end());
    return device;
  }();
  return table;
}

}  // namespace fp8ort
