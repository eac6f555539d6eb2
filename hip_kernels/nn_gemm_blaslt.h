// The cuBLASLt route of the float MatMul/Gemm (fp8ort_nn_gemm_run_ws in onnx_linalg.hip), implemented in
// fp8_blaslt.cc beside the FP8 route that shares its library handling. NVIDIA only: on AMD both calls answer
// "not taken" and the SIMT kernel runs.
#pragma once

#include "fp8_compat.h"
#include "onnx_nn_kernels.h"

namespace fp8ort {

// How fp8ort_nn_gemm_run picks: FP8ORT_FLOAT_GEMM=ours (always the SIMT kernel), blaslt (cuBLASLt, and an error
// where it cannot run), auto (default: cuBLASLt where it takes the problem, else the SIMT kernel).
enum class float_gemm_backend { kAuto, kOurs, kBlasLt, kInvalid };
float_gemm_backend nn_gemm_backend();

// Workspace bytes the route may use for this problem: 0 where it would not be tried.
size_t nn_gemm_blaslt_workspace_bytes(fp8ort_dtype type, const fp8ort_nn_gemm& g, int64_t batch);

// Enqueues Y = alpha A.B (+ beta C) through cuBLASLt. FP8ORT_OK: done. FP8ORT_UNSUPPORTED: not taken (too small,
// strides or batch walk it cannot express, library absent or without an algorithm), nothing enqueued except,
// when g.c is set, `c_into_y` (the broadcast copy of C into Y, harmless before the SIMT kernel). Anything else:
// a failure. `c_into_y` copies C (broadcast) into Y on the stream; cuBLASLt then reads it as its C, in place.
using c_into_y_fn = fp8ort_status (*)(const void* c, void* y, fp8ort_dtype type, const fp8ort_nn_gemm& g,
                                      hipStream_t stream);
fp8ort_status nn_gemm_blaslt(const void* a, const void* b, void* y, fp8ort_dtype type, const fp8ort_nn_gemm& g,
                             int64_t batch, c_into_y_fn c_into_y, void* workspace, size_t workspace_bytes,
                             hipStream_t stream);

}  // namespace fp8ort
