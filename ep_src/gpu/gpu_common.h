// What every GPU kernel's host side shares: the stream ORT gives the kernel, and turning a kernel library status
// into an OpError with the library's message.
#pragma once

#include "fp8_kernels.h"
#include "ort/ort_api.h"

namespace fp8ort {

// The GPU stream of this kernel call (the EP's stream on the plugin EP, the CUDA/ROCm EP's on the custom-op route).
void* compute_stream(OrtKernelContext* ctx);
// Throws OpError naming `kernel` with the kernel library's message when st is not FP8ORT_OK.
void gpu_check(fp8ort_status st, const char* kernel);

}  // namespace fp8ort
