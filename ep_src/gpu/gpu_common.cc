#include "gpu/gpu_common.h"

#include <string>

namespace fp8ort {

void* compute_stream(OrtKernelContext* ctx) {
  void* stream = nullptr;
  check(g_ort->KernelContext_GetGPUComputeStream(ctx, &stream), "KernelContext_GetGPUComputeStream");
  return stream;
}

void gpu_check(fp8ort_status st, const char* kernel) {
  if (st == FP8ORT_OK) return;
  const OrtErrorCode code = st == FP8ORT_INVALID_ARGUMENT ? ORT_INVALID_ARGUMENT
                            : st == FP8ORT_UNSUPPORTED    ? ORT_NOT_IMPLEMENTED
                                                          : ORT_EP_FAIL;
  fail(std::string(kernel) + ": " + fp8ort_gpu_last_error(), code);
}

}  // namespace fp8ort
