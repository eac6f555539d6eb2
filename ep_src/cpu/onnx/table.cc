// The standard ONNX ops the plugin EP's CPU device runs (float kernels beside the exact com.fp8ort ones).
#include "ort/kernel.h"

namespace fp8ort {

const std::vector<KernelDef>& cpu_onnx_kernels() {
  static const std::vector<KernelDef> table = {};
  return table;
}

}  // namespace fp8ort
