// The standard ONNX ops the plugin EP's GPU device runs (host side; device code in hip_kernels/onnx_*.hip), one row
// per ONNX schema version (ops/schema_versions.h says why).
#include "gpu/onnx/tables.h"
#include "ops/schema_versions.h"

namespace fp8ort {

const std::vector<KernelDef>& gpu_onnx_kernels() {
  static const std::vector<KernelDef> table = [] {
    std::vector<KernelDef> all;
    for (const auto* part : {&gpu_tensor_kernels(), &gpu_nn_kernels()}) all.insert(all.end(), part->begin(), part->end());
    return split_at_schema_versions(all);
  }();
  return table;
}

}  // namespace fp8ort
