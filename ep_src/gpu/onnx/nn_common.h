// Host-side helpers of the GPU device's nn kernels (pooling, reductions, Softmax, LayerNormalization,
// BatchNormalization, MatMul, Gemm, Conv): element-type checks and optional outputs; shapes and attributes are
// validated by ops/onnx_shapes.h.
// Device code: hip_kernels/onnx_{pool,norm,linalg}.hip.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gpu/gpu_common.h"
#include "onnx_nn_kernels.h"
#include "ops/onnx_shapes.h"
#include "ort/kernel.h"

namespace fp8ort {
namespace gpu_nn {

// X's element type as the kernel library's dtype; fails unless float32 or float16.
fp8ort_dtype float_type(const Tensor& t, const char* name);
// Requires `t` to have element type `type` (Scale, B, C beside X).
void require_same_type(const Tensor& t, const char* name, ONNXTensorElementDataType type);
int64_t product(const std::vector<int64_t>& shape, size_t begin, size_t end);
// Output `index` when the node has it and the graph uses it, else an absent Tensor.
Tensor optional_output(OrtKernelContext* ctx, size_t index, const std::vector<int64_t>& shape);

// Window attributes and geometry (WindowAttrs, window_geometry) and axis checks are ops/onnx_shapes.h's.

std::unique_ptr<Kernel> create_max_pool(const OrtKernelInfo* info);
std::unique_ptr<Kernel> create_average_pool(const OrtKernelInfo* info);
std::unique_ptr<Kernel> create_global_average_pool(const OrtKernelInfo* info);
std::unique_ptr<Kernel> create_global_max_pool(const OrtKernelInfo* info);
// Reductions: `_attr` reads axes from the attribute (older opsets), `_input` from input 1 (CPU memory).
std::unique_ptr<Kernel> create_reduce_sum_attr(const OrtKernelInfo* info);
std::unique_ptr<Kernel> create_reduce_sum_input(const OrtKernelInfo* info);
std::unique_ptr<Kernel> create_reduce_mean_attr(const OrtKernelInfo* info);
std::unique_ptr<Kernel> create_reduce_mean_input(const OrtKernelInfo* info);
std::unique_ptr<Kernel> create_reduce_max_attr(const OrtKernelInfo* info);
std::unique_ptr<Kernel> create_reduce_max_input(const OrtKernelInfo* info);
std::unique_ptr<Kernel> create_reduce_min_attr(const OrtKernelInfo* info);
std::unique_ptr<Kernel> create_reduce_min_input(const OrtKernelInfo* info);
// Softmax/LogSoftmax: `_v13` normalizes one axis, `_v11` the flattened trailing axes (opsets 11-12).
std::unique_ptr<Kernel> create_softmax_v13(const OrtKernelInfo* info);
std::unique_ptr<Kernel> create_softmax_v11(const OrtKernelInfo* info);
std::unique_ptr<Kernel> create_log_softmax_v13(const OrtKernelInfo* info);
std::unique_ptr<Kernel> create_log_softmax_v11(const OrtKernelInfo* info);
std::unique_ptr<Kernel> create_layer_norm(const OrtKernelInfo* info);
std::unique_ptr<Kernel> create_batch_norm(const OrtKernelInfo* info);
std::unique_ptr<Kernel> create_matmul(const OrtKernelInfo* info);
std::unique_ptr<Kernel> create_gemm(const OrtKernelInfo* info);
std::unique_ptr<Kernel> create_conv(const OrtKernelInfo* info);

}  // namespace gpu_nn
}  // namespace fp8ort
