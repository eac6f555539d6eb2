// Device helpers shared by onnx_pool.hip, onnx_norm.hip and onnx_linalg.hip: element loads/stores for the two
// float types (T = float, or uint16_t holding float16 bits), block reductions, grid sizing and the type dispatch.
#pragma once

#include "fp8_status.h"
#include "onnx_nn_kernels.h"

namespace fp8ort {
namespace nn {

constexpr int kMaxGridX = 1 << 30;      // blocks in x (hardware limit 2^31 - 1); kernels loop past it
constexpr int kMaxGridYZ = 65535;       // blocks in y and z; kernels loop past it
constexpr int kElementwiseThreads = 256;
constexpr int kMaxElementwiseBlocks = 1 << 16;

__device__ __forceinline__ float load(const float* p, int64_t i) { return p[i]; }
__device__ __forceinline__ float load(const uint16_t* p, int64_t i) { return fp8ort_half_bits_to_float(p[i]); }
__device__ __forceinline__ void store(float* p, int64_t i, float v) { p[i] = v; }
__device__ __forceinline__ void store(uint16_t* p, int64_t i, float v) { p[i] = fp8ort_float_to_half_bits(v); }

template <class T>
__device__ __forceinline__ float lowest_value();
template <>
__device__ __forceinline__ float lowest_value<float>() { return -3.402823466e38f; }
template <>
__device__ __forceinline__ float lowest_value<uint16_t>() { return -65504.0f; }

// max/min that keep a NaN from either side.
__device__ __forceinline__ float max_nan(float a, float b) { return (a != a || a > b) ? a : b; }
__device__ __forceinline__ float min_nan(float a, float b) { return (a != a || a < b) ? a : b; }

struct sum_op {
    __device__ float operator()(float a, float b) const { return a + b; }
};
struct max_op {
    __device__ float operator()(float a, float b) const { return max_nan(a, b); }
};
struct min_op {
    __device__ float operator()(float a, float b) const { return min_nan(a, b); }
};

__device__ __forceinline__ float shfl_xor(float v, int mask) {
#if defined(FP8ORT_CUDA)
    return __shfl_xor_sync(0xffffffffu, v, mask);
#else
    return __shfl_xor(v, mask);
#endif
}

constexpr int kMaxBlockWarps = 32;  // smem slots of block_reduce: blocks of up to 1024 threads of 32 lanes

// Reduces v over the block; every thread gets the result. blockDim.x must be a multiple of the warp size
// (launchers use multiples of 64). `smem` holds kMaxBlockWarps floats; calls may follow each other directly.
template <class Op>
__device__ __forceinline__ float block_reduce(float v, Op op, float* smem) {
    for (int off = FP8ORT_WARP_SIZE / 2; off > 0; off >>= 1) v = op(v, shfl_xor(v, off));
    const int warp = static_cast<int>(threadIdx.x) / FP8ORT_WARP_SIZE;
    const int lane = static_cast<int>(threadIdx.x) % FP8ORT_WARP_SIZE;
    const int warps = static_cast<int>(blockDim.x) / FP8ORT_WARP_SIZE;
    __syncthreads();  // the previous call's readers are done with smem
    if (lane == 0) smem[warp] = v;
    __syncthreads();
    float r = smem[0];
    for (int i = 1; i < warps; ++i) r = op(r, smem[i]);
    return r;
}

inline int elementwise_blocks(int64_t count) {
    const int64_t blocks = (count + kElementwiseThreads - 1) / kElementwiseThreads;
    return static_cast<int>(blocks < kMaxElementwiseBlocks ? (blocks > 0 ? blocks : 1) : kMaxElementwiseBlocks);
}

inline int clamp_grid(int64_t blocks, int64_t limit) {
    return static_cast<int>(blocks < 1 ? 1 : (blocks < limit ? blocks : limit));
}

inline bool is_nn_type(fp8ort_dtype t) { return t == FP8ORT_FLOAT || t == FP8ORT_FLOAT16; }

}  // namespace nn
}  // namespace fp8ort

// Calls launcher<T>(args...) with T = float or uint16_t (float16 bits) for a checked fp8ort_dtype.
#define FP8ORT_NN_DISPATCH(type, launcher, ...) \
    ((type) == FP8ORT_FLOAT ? launcher<float>(__VA_ARGS__) : launcher<uint16_t>(__VA_ARGS__))
