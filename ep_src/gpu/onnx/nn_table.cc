#include "gpu/onnx/tables.h"

namespace fp8ort {

const std::vector<KernelDef>& gpu_nn_kernels() {
  static const std::vector<KernelDef> table = {};
  return table;
}

}  // namespace fp8ort
