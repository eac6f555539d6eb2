// The standard ONNX ops the plugin EP's GPU device runs (host side; device code in hip_kernels/onnx_*.hip), one row
// per ONNX schema version (ops/schema_versions.h says why).
//
// Integer arithmetic of exporters' shape subgraphs (Equal/Add/Mul on int64 shapes and masks) has no GPU row yet and
// runs on ORT's CPU EP. Serving those ops on the host from this device (CPU-memory kernel rows) was tried: on the
// H200 the next device kernel then hit an illegal access (bench/results/logs_h200_plugin_ep_2026-12-03/HOW.md).
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
