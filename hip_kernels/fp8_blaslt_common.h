// What cuBLASLt's and hipBLASLt's C ABIs have in common, for fp8_blaslt_api.h and fp8_hipblaslt_api.h (each adds
// its library's values, handle, algorithm structs and version call): int-sized enums, opaque descriptors and the
// signatures of the functions fp8_blaslt.cc resolves. Plain C++17, no vendor header needed.
#pragma once

#include <stddef.h>
#include <stdint.h>

namespace fp8ort {
namespace lt {

// C enums are int-sized.
using status_t = int;        // cublasStatus_t, hipblasStatus_t
using compute_type_t = int;  // cublasComputeType_t, hipblasComputeType_t
using data_type_t = int;     // cudaDataType, hipDataType
using desc_attr_t = int;     // cublasLtMatmulDescAttributes_t, hipblasLtMatmulDescAttributes_t
using pref_attr_t = int;     // cublasLtMatmulPreferenceAttributes_t, hipblasLtMatmulPreferenceAttributes_t
using layout_attr_t = int;   // cublasLtMatrixLayoutAttribute_t, hipblasLtMatrixLayoutAttribute_t

// cudaDataType and hipDataType give these the same values
constexpr data_type_t kR32F = 0;
constexpr data_type_t kR16F = 2;
constexpr data_type_t kR8F_E4M3 = 28;  // OCP FP8
constexpr data_type_t kR8F_E5M2 = 29;

// Opaque descriptors: the library hands out pointers to them.
struct matmul_desc_obj;    // cublasLtMatmulDescOpaque_t, hipblasLtMatmulDescOpaque_t
struct matrix_layout_obj;  // ...MatrixLayoutOpaque_t
struct preference_obj;     // ...MatmulPreferenceOpaque_t
using matmul_desc_t = matmul_desc_obj*;
using matrix_layout_t = matrix_layout_obj*;
using preference_t = preference_obj*;

struct status_name {
    status_t value;
    const char* name;
};

// cublasLtMatmulHeuristicResult_t, hipblasLtMatmulHeuristicResult_t: the same fields after each library's
// algorithm struct.
template <typename Algo>
struct heuristic_result_of {
    Algo algo;
    size_t workspace_size;
    status_t state;
    float waves_count;
    int reserved[4];
};

// The functions as pointer types over a library's handle, algorithm and heuristic-result types; each is resolved
// from the library's prefix and the name in the comment ("cublasLt" + "MatmulDescCreate").
template <typename Handle, typename Algo, typename Result>
struct functions {
    using create = status_t (*)(Handle* handle);                                                  // Create
    using matmul_desc_create = status_t (*)(matmul_desc_t* desc, compute_type_t compute,         // MatmulDescCreate
                                            data_type_t scale_type);
    using matmul_desc_destroy = status_t (*)(matmul_desc_t desc);                                // MatmulDescDestroy
    using matmul_desc_set_attribute = status_t (*)(matmul_desc_t desc, desc_attr_t attr,         // MatmulDescSetAttribute
                                                   const void* buf, size_t bytes);
    using matrix_layout_create = status_t (*)(matrix_layout_t* layout, data_type_t type,         // MatrixLayoutCreate
                                              uint64_t rows, uint64_t cols, int64_t ld);
    using matrix_layout_destroy = status_t (*)(matrix_layout_t layout);                          // MatrixLayoutDestroy
    using matrix_layout_set_attribute = status_t (*)(matrix_layout_t layout, layout_attr_t attr, // MatrixLayoutSetAttribute
                                                     const void* buf, size_t bytes);
    using preference_create = status_t (*)(preference_t* pref);                                  // MatmulPreferenceCreate
    using preference_destroy = status_t (*)(preference_t pref);                                  // MatmulPreferenceDestroy
    using preference_set_attribute = status_t (*)(preference_t pref, pref_attr_t attr,           // MatmulPreferenceSetAttribute
                                                  const void* buf, size_t bytes);
    using algo_get_heuristic = status_t (*)(Handle handle, matmul_desc_t desc, matrix_layout_t a,  // MatmulAlgoGetHeuristic
                                            matrix_layout_t b, matrix_layout_t c, matrix_layout_t d,
                                            preference_t pref, int requested, Result* results, int* returned);
    using matmul = status_t (*)(Handle handle, matmul_desc_t desc, const void* alpha, const void* a,  // Matmul
                                matrix_layout_t a_layout, const void* b, matrix_layout_t b_layout,
                                const void* beta, const void* c, matrix_layout_t c_layout, void* d,
                                matrix_layout_t d_layout, const Algo* algo, void* workspace,
                                size_t workspace_bytes, void* stream);
};

}  // namespace lt
}  // namespace fp8ort
