// Device and launch helpers shared by onnx_elementwise.hip and onnx_tensor.hip: the launch grid, the N-d walk
// of fp8ort_nd (onnx_kernels.h) and the check that picks 32-bit index arithmetic when every offset fits.
#pragma once

#include "fp8_status.h"
#include "onnx_kernels.h"

namespace fp8ort {
namespace onnx {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 8192;  // grid-stride loops cover the rest

inline int blocks_for(int64_t count) {
    const int64_t blocks = (count + kThreads - 1) / kThreads;
    return static_cast<int>(blocks < 1 ? 1 : (blocks < kMaxBlocks ? blocks : kMaxBlocks));
}

inline int64_t nd_count(const fp8ort_nd& nd) {
    int64_t n = 1;
    for (int d = 0; d < nd.rank; ++d) n *= nd.dims[d];
    return n;
}

// Checks rank and dims; *count gets the number of output elements.
inline fp8ort_status check_nd(const fp8ort_nd* nd, const char* op, int64_t* count) {
    if (nd == nullptr) return fail(FP8ORT_INVALID_ARGUMENT, "%s: the shape descriptor is NULL", op);
    if (nd->rank < 0 || nd->rank > FP8ORT_ONNX_MAX_RANK)
        return fail(FP8ORT_INVALID_ARGUMENT, "%s: rank %d is outside [0, %d]", op, nd->rank, FP8ORT_ONNX_MAX_RANK);
    int64_t n = 1;
    for (int d = 0; d < nd->rank; ++d) {
        if (nd->dims[d] < 0) return fail(FP8ORT_INVALID_ARGUMENT, "%s: negative dimension %lld", op, static_cast<long long>(nd->dims[d]));
        if (nd->dims[d] != 0 && n > INT64_MAX / nd->dims[d])
            return fail(FP8ORT_INVALID_ARGUMENT, "%s: the output has more than 2^63 elements", op);
        n *= nd->dims[d];
    }
    *count = n;
    return FP8ORT_OK;
}

// True when the element count and every partial offset sum of operands [0, operands) stay below 2^31, so the walk
// may run in int32 arithmetic. The count keeps a grid's stride of headroom: the grid-stride loop's last increment
// must not overflow.
inline bool fits_int32(const fp8ort_nd& nd, int operands, int64_t count) {
    constexpr int64_t kLimit = int64_t{1} << 31;
    if (count >= kLimit - kMaxBlocks * kThreads) return false;
    for (int k = 0; k < operands; ++k) {
        int64_t reach = nd.offsets[k] < 0 ? -nd.offsets[k] : nd.offsets[k];
        for (int d = 0; d < nd.rank; ++d) {
            const int64_t s = nd.strides[k][d] < 0 ? -nd.strides[k][d] : nd.strides[k][d];
            if (s != 0 && nd.dims[d] > 1 && s > (kLimit - reach) / (nd.dims[d] - 1)) return false;
            reach += s * (nd.dims[d] > 0 ? nd.dims[d] - 1 : 0);
            if (reach >= kLimit) return false;
        }
    }
    return true;
}

// Offsets of output element i in operands 0..K-1 (I: int32_t or int64_t, signed because strides can be negative).
template <int K, class I>
__device__ __forceinline__ void nd_offsets(const fp8ort_nd& nd, I i, I (&off)[K]) {
#pragma unroll
    for (int k = 0; k < K; ++k) off[k] = static_cast<I>(nd.offsets[k]);
    for (int d = nd.rank - 1; d >= 0; --d) {
        const I dim = static_cast<I>(nd.dims[d]);
        const I q = i / dim;
        const I c = i - q * dim;
        i = q;
#pragma unroll
        for (int k = 0; k < K; ++k) off[k] += c * static_cast<I>(nd.strides[k][d]);
    }
}

// Unsigned storage of one element of `bytes` bytes.
template <int Bytes> struct unit_of;
template <> struct unit_of<1> { using type = uint8_t; };
template <> struct unit_of<2> { using type = uint16_t; };
template <> struct unit_of<4> { using type = uint32_t; };
template <> struct unit_of<8> { using type = unsigned long long; };
template <> struct unit_of<16> { using type = uint4; };

inline bool valid_elem_size(int64_t s) { return s == 1 || s == 2 || s == 4 || s == 8; }

}  // namespace onnx
}  // namespace fp8ort
