// Thin vendor header: the kernels are written in HIP; under nvcc the HIP names used here map to CUDA.
// Capability predicates (FP8ORT_HAS_*) are decided here once, never with #ifdef soup inside kernels.
#pragma once

#if defined(__CUDACC__) && !defined(__HIP_PLATFORM_AMD__)
#define FP8ORT_CUDA 1
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cuda_fp8.h>

using hipError_t = cudaError_t;
using hipStream_t = cudaStream_t;
using hipEvent_t = cudaEvent_t;
using hipDeviceProp_t = cudaDeviceProp;
using __hip_bfloat16 = __nv_bfloat16;
#define hipSuccess cudaSuccess
#define hipGetLastError cudaGetLastError
#define hipPeekAtLastError cudaPeekAtLastError
#define hipGetErrorString cudaGetErrorString
#define hipGetDevice cudaGetDevice
#define hipDeviceGetAttribute cudaDeviceGetAttribute
#define hipDeviceAttributeMultiprocessorCount cudaDevAttrMultiProcessorCount
#define hipDeviceAttributeComputeCapabilityMajor cudaDevAttrComputeCapabilityMajor
#define hipDeviceAttributeComputeCapabilityMinor cudaDevAttrComputeCapabilityMinor
#define hipFuncSetAttribute(f, attr, v) cudaFuncSetAttribute(f, attr, v)
#define hipFuncAttributeMaxDynamicSharedMemorySize cudaFuncAttributeMaxDynamicSharedMemorySize
#define hipMemsetAsync cudaMemsetAsync
#define hipMemcpyAsync cudaMemcpyAsync
#define hipMemcpyDeviceToDevice cudaMemcpyDeviceToDevice
#define hipGetDeviceProperties cudaGetDeviceProperties
#define __hip_bfloat162float __bfloat162float
#else
#define FP8ORT_HIP 1
#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <hip/hip_bfloat16.h>
#if __has_include(<hip/amd_detail/amd_hip_bf16.h>)
#include <hip/amd_detail/amd_hip_bf16.h>
#endif
#endif

#include <stdint.h>

#if defined(FP8ORT_CUDA)
#define FP8ORT_TRAP() __trap()
#else
#define FP8ORT_TRAP() __builtin_trap()
#endif

// Inlined on NVIDIA, a call on AMD: for device functions that every kernel template instantiates in several
// variants (the tile epilogue, one per output type). Inlining all of them into each GEMM/conv kernel makes clang's
// AMDGPU backend ~25x slower (fp8_gemm.hip for gfx1201: 440 s instead of 18 s, code object 3.9 MB instead of
// 0.47 MB) for a call made once per tile.
#if defined(FP8ORT_CUDA)
#define FP8ORT_INLINE_ON_NVIDIA __forceinline__
#else
#define FP8ORT_INLINE_ON_NVIDIA __noinline__
#endif

// ---- capability predicates (device side: which matrix instruction this compilation pass may use) ----
// NVIDIA: mma.sync ... e4m3 on sm_89+, wgmma ... e4m3 on sm_90a only.
#if defined(FP8ORT_CUDA) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
#define FP8ORT_HAS_MMA_SYNC_FP8 1
#endif
#if defined(FP8ORT_CUDA) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define FP8ORT_HAS_WGMMA_FP8 1
#endif
// AMD: FNUZ FP8 MFMA on gfx942, OCP FP8 MFMA on gfx950, FP8 WMMA on gfx12, f16 WMMA only on gfx11.
#if defined(__gfx942__)
#define FP8ORT_HAS_MFMA_FP8 1
#define FP8ORT_MFMA_FNUZ 1
#endif
#if defined(__gfx950__)
#define FP8ORT_HAS_MFMA_FP8 1
#endif
#if defined(__gfx1200__) || defined(__gfx1201__)
#define FP8ORT_HAS_WMMA_FP8 1
#endif
#if defined(__gfx1100__) || defined(__gfx1101__) || defined(__gfx1102__) || defined(__gfx1103__)
#define FP8ORT_HAS_WMMA_F16 1
#endif

// Programmatic dependent launch (NVIDIA sm_90+; see launch_kernel in fp8_status.h): a kernel launched with it may
// start while the kernel before it on the stream still runs. fp8ort_pdl_wait() returns once that kernel has finished
// and its writes are visible (at once without such a launch, and on AMD); every thread calls it before its first
// access to global memory that another kernel writes or reads. fp8ort_pdl_release() lets the next such kernel's
// blocks start once every block of this one has called it or ended (a hint; no memory ordering).
__device__ __forceinline__ void fp8ort_pdl_wait() {
#if defined(FP8ORT_CUDA) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void fp8ort_pdl_release() {
#if defined(FP8ORT_CUDA) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;\n");
#endif
}

#if defined(FP8ORT_CUDA)
#define FP8ORT_WARP_SIZE 32
#elif defined(__GFX9__)
#define FP8ORT_WARP_SIZE 64
#else
#define FP8ORT_WARP_SIZE 32
#endif

// Round-to-nearest float32 arithmetic that the compiler may not contract into FMA: the epilogue must
// round after every step exactly as the NumPy reference does.
#if defined(FP8ORT_CUDA)
__device__ __forceinline__ float fp8ort_mul_rn(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ float fp8ort_add_rn(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ float fp8ort_div_rn(float a, float b) { return __fdiv_rn(a, b); }
#else
__device__ __forceinline__ float fp8ort_mul_rn(float a, float b) {
#pragma clang fp contract(off)
    return a * b;
}
__device__ __forceinline__ float fp8ort_add_rn(float a, float b) {
#pragma clang fp contract(off)
    return a + b;
}
__device__ __forceinline__ float fp8ort_div_rn(float a, float b) { return __fdiv_rn(a, b); }
#endif

// acc + a * b rounded once: the same value as fp8ort_add_rn(acc, fp8ort_mul_rn(a, b)) wherever a * b is exact in
// float32, as the product of two decoded FP8 values always is (at most 8 significant bits; exponents from 2^-32 to
// 2^32). NVIDIA returns its one canonical NaN either way; the HIP build keeps the two steps, whose NaN payloads
// follow the operands.
#if defined(FP8ORT_CUDA)
__device__ __forceinline__ float fp8ort_fma_exact_product(float a, float b, float acc) { return __fmaf_rn(a, b, acc); }
#else
__device__ __forceinline__ float fp8ort_fma_exact_product(float a, float b, float acc) {
    return fp8ort_add_rn(acc, fp8ort_mul_rn(a, b));
}
#endif

// 16-bit float <-> float32 through raw bits, identical on both vendors (RNE, NaN kept as NaN).
// A NaN keeps its sign and payload (the hardware conversion returns a canonical NaN; NumPy does not).
__device__ __forceinline__ float fp8ort_half_bits_to_float(uint16_t h) {
    if ((h & 0x7c00u) == 0x7c00u && (h & 0x03ffu) != 0)
        return __uint_as_float((static_cast<uint32_t>(h & 0x8000u) << 16) | 0x7fc00000u |
                               (static_cast<uint32_t>(h & 0x03ffu) << 13));
    return __half2float(__ushort_as_half(h));
}
__device__ __forceinline__ uint16_t fp8ort_float_to_half_bits(float f) {
    return __half_as_ushort(__float2half_rn(f));
}
__device__ __forceinline__ float fp8ort_bf16_bits_to_float(uint16_t b) {
    return __uint_as_float(static_cast<uint32_t>(b) << 16);
}
__device__ __forceinline__ uint16_t fp8ort_float_to_bf16_bits(float f) {
    uint32_t u = __float_as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);  // quiet NaN
    u += 0x7fffu + ((u >> 16) & 1u);
    return static_cast<uint16_t>(u >> 16);
}
