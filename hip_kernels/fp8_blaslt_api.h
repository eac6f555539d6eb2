// The part of cuBLASLt's C ABI that fp8_blaslt.cc uses, declared here because no cuBLASLt header exists where
// fp8ort is built: libcublasLt is opened at run time (dlopen), never linked. The values are those of
// cublasLt.h / cublas_api.h / library_types.h (CUDA 12 and 13 agree on all of them);
// tests/gpu/check_blaslt_abi.sh checks every one against the real headers where they are installed.
// Plain C++17, no CUDA header needed: a stream is passed as the pointer that cudaStream_t is.
#pragma once

#include "fp8_blaslt_common.h"

namespace fp8ort {
namespace lt {

constexpr const char* kVendor = "cuBLASLt";
constexpr const char* kSymbolPrefix = "cublasLt";
// Tried in order: CUDA 13, then CUDA 12.
constexpr const char* kLibraryNames[] = {"libcublasLt.so.13", "libcublasLt.so.12"};
constexpr const char* kInstallHint =
    "install cuBLAS (the CUDA toolkit, or pip install nvidia-cublas) where the dynamic loader finds it (ld.so.conf "
    "or LD_LIBRARY_PATH)";

struct context;  // cublasLtContext: cuBLASLt hands out pointers to it
using handle_t = context*;

// cublasStatus_t
constexpr status_t kStatusSuccess = 0;
constexpr status_t kStatusNotInitialized = 1;
constexpr status_t kStatusAllocFailed = 3;
constexpr status_t kStatusInvalidValue = 7;
constexpr status_t kStatusArchMismatch = 8;
constexpr status_t kStatusMappingError = 11;
constexpr status_t kStatusExecutionFailed = 13;
constexpr status_t kStatusInternalError = 14;
constexpr status_t kStatusNotSupported = 15;
constexpr status_t kStatusLicenseError = 16;
constexpr status_name kStatusNames[] = {
    {kStatusSuccess, "CUBLAS_STATUS_SUCCESS"},
    {kStatusNotInitialized, "CUBLAS_STATUS_NOT_INITIALIZED"},
    {kStatusAllocFailed, "CUBLAS_STATUS_ALLOC_FAILED"},
    {kStatusInvalidValue, "CUBLAS_STATUS_INVALID_VALUE"},
    {kStatusArchMismatch, "CUBLAS_STATUS_ARCH_MISMATCH"},
    {kStatusMappingError, "CUBLAS_STATUS_MAPPING_ERROR"},
    {kStatusExecutionFailed, "CUBLAS_STATUS_EXECUTION_FAILED"},
    {kStatusInternalError, "CUBLAS_STATUS_INTERNAL_ERROR"},
    {kStatusNotSupported, "CUBLAS_STATUS_NOT_SUPPORTED"},
    {kStatusLicenseError, "CUBLAS_STATUS_LICENSE_ERROR"},
};

// cublasOperation_t (stored in the descriptor as int32_t)
constexpr int32_t kOpN = 0;
constexpr int32_t kOpT = 1;

// cublasComputeType_t: float32 accumulation
constexpr compute_type_t kCompute32F = 68;

// cublasLtMatmulDescAttributes_t
constexpr desc_attr_t kDescTransA = 3;      // int32_t cublasOperation_t
constexpr desc_attr_t kDescTransB = 4;      // int32_t cublasOperation_t
constexpr desc_attr_t kDescEpilogue = 7;    // uint32_t cublasLtEpilogue_t
constexpr desc_attr_t kDescFastAccum = 25;  // int8_t, 0 = promote partial sums to float32 (the default)

// cublasLtMatrixLayoutAttribute_t: strided batches (the float GEMM route)
constexpr layout_attr_t kLayoutBatchCount = 5;          // int32_t, default 1
constexpr layout_attr_t kLayoutStridedBatchOffset = 6;  // int64_t elements between matrices, default 0

// cublasLtEpilogue_t: no epilogue
constexpr uint32_t kEpilogueDefault = 1;

// cublasLtMatmulPreferenceAttributes_t
constexpr pref_attr_t kPrefMaxWorkspaceBytes = 1;  // uint64_t
constexpr pref_attr_t kPrefMinAlignmentA = 5;      // uint32_t bytes (default 256)
constexpr pref_attr_t kPrefMinAlignmentB = 6;
constexpr pref_attr_t kPrefMinAlignmentC = 7;
constexpr pref_attr_t kPrefMinAlignmentD = 8;

// cublasLtMatmulAlgo_t: a plain 64-byte value, copied freely.
struct matmul_algo {
    uint64_t data[8];
};

using heuristic_result = heuristic_result_of<matmul_algo>;  // cublasLtMatmulHeuristicResult_t
static_assert(sizeof(matmul_algo) == 64, "cublasLtMatmulAlgo_t is 8 x uint64_t");
static_assert(sizeof(heuristic_result) == 96, "cublasLtMatmulHeuristicResult_t layout");
static_assert(offsetof(heuristic_result, workspace_size) == 64 && offsetof(heuristic_result, state) == 72 &&
                  offsetof(heuristic_result, waves_count) == 76 && offsetof(heuristic_result, reserved) == 80,
              "cublasLtMatmulHeuristicResult_t field offsets");

// The functions; get_version is cuBLASLt's own (hipBLASLt's takes a handle).
using abi = functions<handle_t, matmul_algo, heuristic_result>;
using pfn_get_version = size_t (*)(void);  // GetVersion

}  // namespace lt
}  // namespace fp8ort
