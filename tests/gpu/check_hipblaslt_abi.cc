// Compile-time check of hip_kernels/fp8_hipblaslt_api.h (fp8ort's own declarations of the hipBLASLt ABI) against
// the real hipblaslt.h: every enum value, the struct layouts and each function's parameter list. Built and run by
// tools/hip_check.sh with Debian's libhipblaslt-dev headers (host code, no GPU); compiling is the test, the program
// prints only the hipBLASLt version the header declares.
#include <hipblaslt/hipblaslt.h>

#include <cstddef>
#include <cstdio>

#include "abi_compare.h"
#include "fp8_hipblaslt_api.h"

namespace lt = fp8ort::lt;

// ---- values ----
static_assert(lt::kStatusSuccess == HIPBLAS_STATUS_SUCCESS);
static_assert(lt::kStatusNotInitialized == HIPBLAS_STATUS_NOT_INITIALIZED);
static_assert(lt::kStatusAllocFailed == HIPBLAS_STATUS_ALLOC_FAILED);
static_assert(lt::kStatusInvalidValue == HIPBLAS_STATUS_INVALID_VALUE);
static_assert(lt::kStatusMappingError == HIPBLAS_STATUS_MAPPING_ERROR);
static_assert(lt::kStatusExecutionFailed == HIPBLAS_STATUS_EXECUTION_FAILED);
static_assert(lt::kStatusInternalError == HIPBLAS_STATUS_INTERNAL_ERROR);
static_assert(lt::kStatusNotSupported == HIPBLAS_STATUS_NOT_SUPPORTED);
static_assert(lt::kStatusArchMismatch == HIPBLAS_STATUS_ARCH_MISMATCH);
static_assert(lt::kStatusHandleIsNull == HIPBLAS_STATUS_HANDLE_IS_NULLPTR);
static_assert(lt::kStatusInvalidEnum == HIPBLAS_STATUS_INVALID_ENUM);
static_assert(lt::kStatusUnknown == HIPBLAS_STATUS_UNKNOWN);
static_assert(lt::kOpN == HIPBLAS_OP_N && lt::kOpT == HIPBLAS_OP_T);
static_assert(lt::kCompute32F == HIPBLAS_COMPUTE_32F);
static_assert(lt::kR32F == HIP_R_32F && lt::kR8F_E4M3 == HIP_R_8F_E4M3 && lt::kR8F_E5M2 == HIP_R_8F_E5M2);
static_assert(lt::kR8F_E4M3_FNUZ == HIP_R_8F_E4M3_FNUZ && lt::kR8F_E5M2_FNUZ == HIP_R_8F_E5M2_FNUZ);
static_assert(lt::kDescTransA == HIPBLASLT_MATMUL_DESC_TRANSA && lt::kDescTransB == HIPBLASLT_MATMUL_DESC_TRANSB);
static_assert(lt::kDescEpilogue == HIPBLASLT_MATMUL_DESC_EPILOGUE && lt::kEpilogueDefault == HIPBLASLT_EPILOGUE_DEFAULT);
static_assert(lt::kPrefMaxWorkspaceBytes == HIPBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES);
// enums travel as int, the handle as a pointer
static_assert(sizeof(hipblasStatus_t) == sizeof(lt::status_t) && sizeof(hipblasComputeType_t) == sizeof(lt::compute_type_t));
static_assert(sizeof(hipDataType) == sizeof(lt::data_type_t) && sizeof(hipblasOperation_t) == sizeof(int32_t));
static_assert(sizeof(hipblasLtMatmulDescAttributes_t) == sizeof(lt::desc_attr_t));
static_assert(sizeof(hipblasLtMatmulPreferenceAttributes_t) == sizeof(lt::pref_attr_t));
static_assert(sizeof(hipblasLtHandle_t) == sizeof(lt::handle_t));

// ---- structs ----
static_assert(sizeof(lt::matmul_algo) == sizeof(hipblasLtMatmulAlgo_t));
static_assert(alignof(lt::matmul_algo) == alignof(hipblasLtMatmulAlgo_t));
static_assert(offsetof(lt::matmul_algo, max_workspace_bytes) == offsetof(hipblasLtMatmulAlgo_t, max_workspace_bytes));
static_assert(sizeof(lt::heuristic_result) == sizeof(hipblasLtMatmulHeuristicResult_t));
static_assert(offsetof(lt::heuristic_result, algo) == offsetof(hipblasLtMatmulHeuristicResult_t, algo));
static_assert(offsetof(lt::heuristic_result, workspace_size) == offsetof(hipblasLtMatmulHeuristicResult_t, workspaceSize));
static_assert(offsetof(lt::heuristic_result, state) == offsetof(hipblasLtMatmulHeuristicResult_t, state));
static_assert(offsetof(lt::heuristic_result, waves_count) == offsetof(hipblasLtMatmulHeuristicResult_t, wavesCount));
static_assert(offsetof(lt::heuristic_result, reserved) == offsetof(hipblasLtMatmulHeuristicResult_t, reserved));

// ---- functions: same return and parameter ABI classes ----
FP8ORT_SAME_FUNCTION(abi::create, hipblasLtCreate);
FP8ORT_SAME_FUNCTION(pfn_get_version, hipblasLtGetVersion);
FP8ORT_SAME_FUNCTION(abi::matmul_desc_create, hipblasLtMatmulDescCreate);
FP8ORT_SAME_FUNCTION(abi::matmul_desc_destroy, hipblasLtMatmulDescDestroy);
FP8ORT_SAME_FUNCTION(abi::matmul_desc_set_attribute, hipblasLtMatmulDescSetAttribute);
FP8ORT_SAME_FUNCTION(abi::matrix_layout_create, hipblasLtMatrixLayoutCreate);
FP8ORT_SAME_FUNCTION(abi::matrix_layout_destroy, hipblasLtMatrixLayoutDestroy);
FP8ORT_SAME_FUNCTION(abi::matrix_layout_set_attribute, hipblasLtMatrixLayoutSetAttribute);
FP8ORT_SAME_FUNCTION(abi::preference_create, hipblasLtMatmulPreferenceCreate);
FP8ORT_SAME_FUNCTION(abi::preference_destroy, hipblasLtMatmulPreferenceDestroy);
FP8ORT_SAME_FUNCTION(abi::preference_set_attribute, hipblasLtMatmulPreferenceSetAttribute);
FP8ORT_SAME_FUNCTION(abi::algo_get_heuristic, hipblasLtMatmulAlgoGetHeuristic);
FP8ORT_SAME_FUNCTION(abi::matmul, hipblasLtMatmul);

int main() {
    std::printf("fp8_hipblaslt_api.h matches hipblaslt.h %d.%d.%d\n", HIPBLASLT_VERSION_MAJOR, HIPBLASLT_VERSION_MINOR,
                HIPBLASLT_VERSION_PATCH);
    return 0;
}
