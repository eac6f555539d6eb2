// The standard ONNX ops the plugin EP's GPU device runs (host side; device code in hip_kernels/).
#include "ort/kernel.h"

namespace fp8ort {

const std::vector<KernelDef>& gpu_onnx_kernels() {
  static const std::vector<KernelDef> table = {};
  return table;
}

}  // namespace fp8ort
