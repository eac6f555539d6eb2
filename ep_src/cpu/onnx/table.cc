// The standard ONNX ops the plugin EP's CPU device runs (float kernels beside the exact com.fp8ort ones): the
// family tables of elementwise.cc, shape_ops.cc, movement.cc, pool.cc, norm.cc and linalg.cc, joined, one row per
// ONNX schema version (schema_versions.h says why).
#include "cpu/onnx/common.h"
#include "ops/schema_versions.h"

namespace fp8ort {

const std::vector<KernelDef>& cpu_onnx_kernels() {
  static const std::vector<KernelDef> table = [] {
    std::vector<KernelDef> all;
    for (auto part : {cpu_onnx::elementwise_kernels, cpu_onnx::shape_kernels, cpu_onnx::movement_kernels,
                      cpu_onnx::pool_kernels, cpu_onnx::norm_kernels, cpu_onnx::linalg_kernels}) {
      std::vector<KernelDef> rows = part();
      all.insert(all.end(), rows.begin(), rows.end());
    }
    return split_at_schema_versions(all);
  }();
  return table;
}

}  // namespace fp8ort
