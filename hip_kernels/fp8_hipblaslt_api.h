// The part of hipBLASLt's C ABI that fp8_blaslt.cc uses on AMD, declared here for the same reason as
// fp8_blaslt_api.h on NVIDIA: libhipblaslt is opened at run time (dlopen), never linked, so libfp8ort loads where
// hipBLASLt is absent and builds where its headers are. The names in namespace lt are the ones fp8_blaslt_api.h
// gives cuBLASLt's; the values are those of hipblaslt.h / hipblas-common.h / hip/library_types.h (hipBLASLt 1.1,
// ROCm 7.1, and the 0.x line of ROCm 6 agree on all of them). tools/hip_check.sh compiles
// tests/gpu/check_hipblaslt_abi.cc, which checks every one against the real headers.
// Plain C++17, no HIP header needed: a stream is passed as the pointer that hipStream_t is.
#pragma once

#include "fp8_blaslt_common.h"

namespace fp8ort {
namespace lt {

constexpr const char* kVendor = "hipBLASLt";
constexpr const char* kSymbolPrefix = "hipblasLt";
// Tried in order: ROCm 7 (hipBLASLt 1.x), then ROCm 6 (0.x).
constexpr const char* kLibraryNames[] = {"libhipblaslt.so.1", "libhipblaslt.so.0"};
constexpr const char* kInstallHint =
    "install hipBLASLt (ROCm's hipblaslt package, or Debian's libhipblaslt1) where the dynamic loader finds it "
    "(ld.so.conf or LD_LIBRARY_PATH)";

using handle_t = void*;  // hipblasLtHandle_t

// hipblasStatus_t
constexpr status_t kStatusSuccess = 0;
constexpr status_t kStatusNotInitialized = 1;
constexpr status_t kStatusAllocFailed = 2;
constexpr status_t kStatusInvalidValue = 3;
constexpr status_t kStatusMappingError = 4;
constexpr status_t kStatusExecutionFailed = 5;
constexpr status_t kStatusInternalError = 6;
constexpr status_t kStatusNotSupported = 7;
constexpr status_t kStatusArchMismatch = 8;
constexpr status_t kStatusHandleIsNull = 9;
constexpr status_t kStatusInvalidEnum = 10;
constexpr status_t kStatusUnknown = 11;
constexpr status_name kStatusNames[] = {
    {kStatusSuccess, "HIPBLAS_STATUS_SUCCESS"},
    {kStatusNotInitialized, "HIPBLAS_STATUS_NOT_INITIALIZED"},
    {kStatusAllocFailed, "HIPBLAS_STATUS_ALLOC_FAILED"},
    {kStatusInvalidValue, "HIPBLAS_STATUS_INVALID_VALUE"},
    {kStatusMappingError, "HIPBLAS_STATUS_MAPPING_ERROR"},
    {kStatusExecutionFailed, "HIPBLAS_STATUS_EXECUTION_FAILED"},
    {kStatusInternalError, "HIPBLAS_STATUS_INTERNAL_ERROR"},
    {kStatusNotSupported, "HIPBLAS_STATUS_NOT_SUPPORTED"},
    {kStatusArchMismatch, "HIPBLAS_STATUS_ARCH_MISMATCH"},
    {kStatusHandleIsNull, "HIPBLAS_STATUS_HANDLE_IS_NULLPTR"},
    {kStatusInvalidEnum, "HIPBLAS_STATUS_INVALID_ENUM"},
    {kStatusUnknown, "HIPBLAS_STATUS_UNKNOWN"},
};

// hipblasOperation_t (stored in the descriptor as int32_t)
constexpr int32_t kOpN = 111;
constexpr int32_t kOpT = 112;

// hipblasComputeType_t: float32 accumulation
constexpr compute_type_t kCompute32F = 2;

// hipDataType: the FNUZ formats of gfx942 (the OCP ones are in fp8_blaslt_common.h)
constexpr data_type_t kR8F_E4M3_FNUZ = 1000;
constexpr data_type_t kR8F_E5M2_FNUZ = 1001;

// hipblasLtMatmulDescAttributes_t
constexpr desc_attr_t kDescTransA = 0;    // int32_t hipblasOperation_t
constexpr desc_attr_t kDescTransB = 1;    // int32_t hipblasOperation_t
constexpr desc_attr_t kDescEpilogue = 2;  // uint32_t hipblasLtEpilogue_t

// hipblasLtEpilogue_t: no epilogue
constexpr uint32_t kEpilogueDefault = 1;

// hipblasLtMatmulPreferenceAttributes_t (hipBLASLt has no alignment preferences)
constexpr pref_attr_t kPrefMaxWorkspaceBytes = 1;  // uint64_t

// hipblasLtMatmulAlgo_t: 16 bytes of algorithm index and the workspace it may use; copied freely.
struct matmul_algo {
    uint8_t data[16];
    size_t max_workspace_bytes;
};

using heuristic_result = heuristic_result_of<matmul_algo>;  // hipblasLtMatmulHeuristicResult_t
static_assert(sizeof(matmul_algo) == 24, "hipblasLtMatmulAlgo_t is 16 bytes and a size_t");
static_assert(sizeof(heuristic_result) == 56, "hipblasLtMatmulHeuristicResult_t layout");
static_assert(offsetof(heuristic_result, workspace_size) == 24 && offsetof(heuristic_result, state) == 32 &&
                  offsetof(heuristic_result, waves_count) == 36 && offsetof(heuristic_result, reserved) == 40,
              "hipblasLtMatmulHeuristicResult_t field offsets");

// The functions; get_version is hipBLASLt's own (it needs a handle, unlike cuBLASLt's).
using abi = functions<handle_t, matmul_algo, heuristic_result>;
using pfn_get_version = status_t (*)(handle_t handle, int* version);  // GetVersion

}  // namespace lt
}  // namespace fp8ort
