// The plugin EP's kernel registry: every KernelDef row of a device (the com.fp8ort ops and the standard-op
// table) becomes an OrtKernelDef whose create function builds a fp8ort::Kernel behind one OrtKernelImpl adapter.
#pragma once

#include <onnxruntime_c_api.h>  // includes onnxruntime_ep_c_api.h

#include <vector>

#include "ort/kernel.h"

namespace fp8ort {

enum class EpDeviceKind { kCpu, kGpu };

const char* device_kind_name(EpDeviceKind kind);

// The rows registered for a device: com.fp8ort ops first, then the standard ONNX ops.
std::vector<const KernelDef*> kernel_rows(EpDeviceKind kind);

// Builds a registry for `ep_name` from kernel_rows(kind). Throws OpError. The caller releases it with
// OrtEpApi::ReleaseKernelRegistry.
OrtKernelRegistry* build_kernel_registry(const OrtEpApi& ep_api, const char* ep_name, EpDeviceKind kind);

}  // namespace fp8ort
