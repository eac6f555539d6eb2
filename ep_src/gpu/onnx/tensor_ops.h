// Host side of the GPU device's elementwise and data-movement ONNX kernels: the factories the table
// (tensor_table.cc) lists, and what they share on top of ops/onnx_shapes.h (element sizes, the N-d walk handed to
// the device, the Transpose plan). Device code: hip_kernels/onnx_elementwise.hip, hip_kernels/onnx_tensor.hip.
#pragma once

#include <memory>
#include <vector>

#include "gpu/gpu_common.h"
#include "onnx_kernels.h"
#include "ops/onnx_shapes.h"
#include "ort/kernel.h"

namespace fp8ort {
namespace gpu_onnx {

// ---- factories (elementwise_ops.cc) ----
template <int Op> std::unique_ptr<Kernel> create_unary(const OrtKernelInfo* info);   // Op: fp8ort_unary_op
template <int Op> std::unique_ptr<Kernel> create_binary(const OrtKernelInfo* info);  // Op: fp8ort_binary_op
std::unique_ptr<Kernel> create_gelu(const OrtKernelInfo* info);
std::unique_ptr<Kernel> create_clip(const OrtKernelInfo* info);
std::unique_ptr<Kernel> create_where(const OrtKernelInfo* info);
std::unique_ptr<Kernel> create_cast(const OrtKernelInfo* info);
std::unique_ptr<Kernel> create_not(const OrtKernelInfo* info);
std::unique_ptr<Kernel> create_isnan(const OrtKernelInfo* info);
std::unique_ptr<Kernel> create_mod(const OrtKernelInfo* info);

// ---- factories (index_ops.cc) ----
std::unique_ptr<Kernel> create_range(const OrtKernelInfo* info);
std::unique_ptr<Kernel> create_gather_elements(const OrtKernelInfo* info);
std::unique_ptr<Kernel> create_gather_nd(const OrtKernelInfo* info);
std::unique_ptr<Kernel> create_cumsum(const OrtKernelInfo* info);
std::unique_ptr<Kernel> create_scatter_nd(const OrtKernelInfo* info);

// ---- factories (tensor_ops.cc, tensor_shape_ops.cc) ----
std::unique_ptr<Kernel> create_transpose(const OrtKernelInfo* info);
std::unique_ptr<Kernel> create_reshape(const OrtKernelInfo* info);
std::unique_ptr<Kernel> create_flatten(const OrtKernelInfo* info);
std::unique_ptr<Kernel> create_squeeze(const OrtKernelInfo* info);
std::unique_ptr<Kernel> create_unsqueeze(const OrtKernelInfo* info);
std::unique_ptr<Kernel> create_identity(const OrtKernelInfo* info);
std::unique_ptr<Kernel> create_concat(const OrtKernelInfo* info);
std::unique_ptr<Kernel> create_split(const OrtKernelInfo* info);
std::unique_ptr<Kernel> create_pad(const OrtKernelInfo* info);
std::unique_ptr<Kernel> create_slice(const OrtKernelInfo* info);
std::unique_ptr<Kernel> create_gather(const OrtKernelInfo* info);
std::unique_ptr<Kernel> create_expand(const OrtKernelInfo* info);
std::unique_ptr<Kernel> create_shape(const OrtKernelInfo* info);
std::unique_ptr<Kernel> create_constant_of_shape(const OrtKernelInfo* info);

// ---- helpers (tensor_util.cc); each throws OpError with the problem and the fix ----
// Bytes per element of a fixed-size type; 0 for types the data-movement kernels do not move (string, 4-bit).
int64_t element_size(ONNXTensorElementDataType t);
// Element size of t, or an error naming the input when it has none the kernels move.
int64_t require_element_size(const Tensor& t, const char* name);
// Gather's and GatherElements' indices: int64 or int32 (on the device).
void require_index_type(const Tensor& indices);
// Output shapes and their validation (broadcasting, axes, Reshape...) are ops/onnx_shapes.h's, shared with the CPU
// device so that a bad input gets the same message on either.

// An N-d walk of any rank on the host: coalesced to at most FP8ORT_ONNX_MAX_RANK dims before it goes to the device.
struct Walk {
  std::vector<int64_t> dims;
  std::vector<std::vector<int64_t>> strides;  // [operand][dim], elements
  std::vector<int64_t> offsets;               // [operand]
};
// The walk over `out` reading each input with its broadcast strides (0 where it is broadcast).
Walk broadcast_walk(const std::vector<int64_t>& out, const std::vector<const std::vector<int64_t>*>& inputs);
// Drops size-1 dims and merges neighbours that every operand walks contiguously; then checks the rank limit.
fp8ort_nd to_device_walk(Walk walk);

// How a Transpose runs once size-1 dims are dropped and input-adjacent runs merged: a plain copy, the tiled
// batched 2-D transpose ([B, R, C] -> [B, C, R], which NCHW <-> NHWC become), or a strided copy.
struct TransposePlan {
  enum Kind { kCopy, kTiles, kStrided } kind = kCopy;
  int64_t batch = 1, rows = 1, cols = 1;  // kTiles
  fp8ort_nd walk{};                       // kStrided
};
// perm must be a valid permutation of shape's axes.
TransposePlan plan_transpose(const std::vector<int64_t>& shape, const std::vector<int64_t>& perm);

}  // namespace gpu_onnx
}  // namespace fp8ort
