// The com.fp8ort domain as OrtCustomOps (schemas for model loading, kernels for ORT's CPU/CUDA/ROCm EPs).
#pragma once

#include <onnxruntime_c_api.h>

namespace fp8ort {

// A new domain holding every op registration; the caller keeps it alive while sessions use it, and releases
// it with ReleaseCustomOpDomain. Requires init_api.
OrtStatus* create_custom_op_domain(OrtCustomOpDomain** out);

}  // namespace fp8ort
