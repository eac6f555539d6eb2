// Compile-time check of hip_kernels/fp8_blaslt_api.h (fp8ort's own declarations of the cuBLASLt ABI) against the
// real cublasLt.h: every enum value, the struct layouts and each function's parameter list (count, and per
// parameter its size and kind: pointer, integer/enum or floating point). Built by check_blaslt_abi.sh; compiling
// is the test, the program prints only the cuBLASLt version the header declares.
#include <cublasLt.h>

#include <cstddef>
#include <cstdio>

#include "abi_compare.h"
#include "fp8_blaslt_api.h"

namespace lt = fp8ort::lt;

// ---- values ----
static_assert(lt::kStatusSuccess == CUBLAS_STATUS_SUCCESS);
static_assert(lt::kStatusNotInitialized == CUBLAS_STATUS_NOT_INITIALIZED);
static_assert(lt::kStatusAllocFailed == CUBLAS_STATUS_ALLOC_FAILED);
static_assert(lt::kStatusInvalidValue == CUBLAS_STATUS_INVALID_VALUE);
static_assert(lt::kStatusArchMismatch == CUBLAS_STATUS_ARCH_MISMATCH);
static_assert(lt::kStatusMappingError == CUBLAS_STATUS_MAPPING_ERROR);
static_assert(lt::kStatusExecutionFailed == CUBLAS_STATUS_EXECUTION_FAILED);
static_assert(lt::kStatusInternalError == CUBLAS_STATUS_INTERNAL_ERROR);
static_assert(lt::kStatusNotSupported == CUBLAS_STATUS_NOT_SUPPORTED);
static_assert(lt::kStatusLicenseError == CUBLAS_STATUS_LICENSE_ERROR);
static_assert(lt::kOpN == CUBLAS_OP_N && lt::kOpT == CUBLAS_OP_T);
static_assert(lt::kCompute32F == CUBLAS_COMPUTE_32F);
static_assert(lt::kR16F == CUDA_R_16F);
static_assert(lt::kLayoutBatchCount == CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT);
static_assert(lt::kLayoutStridedBatchOffset == CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET);
static_assert(lt::kR32F == CUDA_R_32F && lt::kR8F_E4M3 == CUDA_R_8F_E4M3 && lt::kR8F_E5M2 == CUDA_R_8F_E5M2);
static_assert(lt::kDescTransA == CUBLASLT_MATMUL_DESC_TRANSA && lt::kDescTransB == CUBLASLT_MATMUL_DESC_TRANSB);
static_assert(lt::kDescEpilogue == CUBLASLT_MATMUL_DESC_EPILOGUE && lt::kEpilogueDefault == CUBLASLT_EPILOGUE_DEFAULT);
static_assert(lt::kDescFastAccum == CUBLASLT_MATMUL_DESC_FAST_ACCUM);
static_assert(lt::kPrefMaxWorkspaceBytes == CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES);
static_assert(lt::kPrefMinAlignmentA == CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES);
static_assert(lt::kPrefMinAlignmentB == CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES);
static_assert(lt::kPrefMinAlignmentC == CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES);
static_assert(lt::kPrefMinAlignmentD == CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES);
// enums travel as int
static_assert(sizeof(cublasStatus_t) == sizeof(lt::status_t) && sizeof(cublasComputeType_t) == sizeof(lt::compute_type_t));
static_assert(sizeof(cudaDataType) == sizeof(lt::data_type_t) && sizeof(cublasOperation_t) == sizeof(int32_t));
static_assert(sizeof(cublasLtMatmulDescAttributes_t) == sizeof(lt::desc_attr_t));
static_assert(sizeof(cublasLtMatmulPreferenceAttributes_t) == sizeof(lt::pref_attr_t));
static_assert(sizeof(cublasLtMatrixLayoutAttribute_t) == sizeof(lt::layout_attr_t));

// ---- structs ----
static_assert(sizeof(lt::matmul_algo) == sizeof(cublasLtMatmulAlgo_t));
static_assert(alignof(lt::matmul_algo) == alignof(cublasLtMatmulAlgo_t));
static_assert(sizeof(lt::heuristic_result) == sizeof(cublasLtMatmulHeuristicResult_t));
static_assert(offsetof(lt::heuristic_result, algo) == offsetof(cublasLtMatmulHeuristicResult_t, algo));
static_assert(offsetof(lt::heuristic_result, workspace_size) == offsetof(cublasLtMatmulHeuristicResult_t, workspaceSize));
static_assert(offsetof(lt::heuristic_result, state) == offsetof(cublasLtMatmulHeuristicResult_t, state));
static_assert(offsetof(lt::heuristic_result, waves_count) == offsetof(cublasLtMatmulHeuristicResult_t, wavesCount));
static_assert(offsetof(lt::heuristic_result, reserved) == offsetof(cublasLtMatmulHeuristicResult_t, reserved));

// ---- functions: same return and parameter ABI classes ----
FP8ORT_SAME_FUNCTION(abi::create, cublasLtCreate);
FP8ORT_SAME_FUNCTION(pfn_get_version, cublasLtGetVersion);
FP8ORT_SAME_FUNCTION(abi::matmul_desc_create, cublasLtMatmulDescCreate);
FP8ORT_SAME_FUNCTION(abi::matmul_desc_destroy, cublasLtMatmulDescDestroy);
FP8ORT_SAME_FUNCTION(abi::matmul_desc_set_attribute, cublasLtMatmulDescSetAttribute);
FP8ORT_SAME_FUNCTION(abi::matrix_layout_create, cublasLtMatrixLayoutCreate);
FP8ORT_SAME_FUNCTION(abi::matrix_layout_destroy, cublasLtMatrixLayoutDestroy);
FP8ORT_SAME_FUNCTION(abi::matrix_layout_set_attribute, cublasLtMatrixLayoutSetAttribute);
FP8ORT_SAME_FUNCTION(abi::preference_create, cublasLtMatmulPreferenceCreate);
FP8ORT_SAME_FUNCTION(abi::preference_destroy, cublasLtMatmulPreferenceDestroy);
FP8ORT_SAME_FUNCTION(abi::preference_set_attribute, cublasLtMatmulPreferenceSetAttribute);
FP8ORT_SAME_FUNCTION(abi::algo_get_heuristic, cublasLtMatmulAlgoGetHeuristic);
FP8ORT_SAME_FUNCTION(abi::matmul, cublasLtMatmul);

int main() {
    std::printf("fp8_blaslt_api.h matches cublasLt.h %d.%d.%d\n", CUBLAS_VER_MAJOR, CUBLAS_VER_MINOR, CUBLAS_VER_PATCH);
    return 0;
}
