// Output shapes and shape/attribute validation of the standard ONNX ops, shared by the CPU device's kernels
// (cpu/onnx/) and the GPU device's host code (gpu/onnx/): one check, one message, whatever device runs the node.
// Every function throws OpError through fail() naming the problem and the fix; the kernel's guarded() wrapper adds
// "<Op> '<node>': " in front. Device-specific limits (ranks a GPU kernel does not implement, element types) stay
// with the device.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ort/ort_api.h"

namespace fp8ort {

using Shape = std::vector<int64_t>;

// ONNX axis in [-rank, rank) -> [0, rank).
int64_t normalize_axis(int64_t axis, int64_t rank, const char* what = "axis");
// Number of elements; fails on a negative dimension or an int64 overflow.
int64_t element_count(const Shape& shape);
// Row-major element strides of a contiguous tensor.
Shape contiguous_strides(const Shape& shape);
// Elements after `axis` (in [0, rank)): a row-major tensor seen as [outer, shape[axis], inner].
int64_t inner_size(const Shape& shape, int64_t axis);
// Values of an int64/int32 tensor in CPU memory (shapes, axes, starts, indices read on the host); one_d: the
// tensor must be 1-D or a scalar (shape-like inputs).
std::vector<int64_t> read_ints(const Tensor& t, const char* name, bool one_d = true);

// Multidirectional (NumPy) broadcasting of several shapes.
Shape broadcast_shape(const std::vector<Shape>& shapes);
// Element strides of `in` seen through `out`'s shape (0 on broadcast dimensions); in is right-aligned.
Shape broadcast_strides(const Shape& in, const Shape& out);

// Reshape: `shape` with 0 (copy the input's dimension unless allow_zero) and at most one -1.
Shape reshape_shape(const Shape& in, const Shape& shape, bool allow_zero);
// Flatten: [prod(in[:axis]), prod(in[axis:])], axis in [-rank, rank].
Shape flatten_shape(const Shape& in, int64_t axis);
// Squeeze: drops the listed size-1 axes, or every size-1 axis when `axes` is null.
Shape squeeze_shape(const Shape& in, const std::vector<int64_t>* axes);
// Unsqueeze: inserts size-1 axes at `axes` (positions in the output).
Shape unsqueeze_shape(const Shape& in, const std::vector<int64_t>& axes);
// Concat: inputs equal outside `axis`, of one element type; `axis` is normalized in place.
Shape concat_shape(const std::vector<const Tensor*>& inputs, int64_t* axis);
// Expand: `in` broadcast with the target shape (dimensions >= 0).
Shape expand_shape(const Shape& in, const Shape& target);
// Transpose: the validated permutation (reversed axes when `perm` is empty).
std::vector<int64_t> transpose_perm(const Shape& in, const std::vector<int64_t>& perm);
Shape transpose_shape(const Shape& in, const std::vector<int64_t>& perm);  // perm from transpose_perm

// Slice (opset 13): per input axis the first element, the step and the output size (starts/ends clamped per ONNX).
struct SliceGeometry {
  std::vector<int64_t> begin, step;
  Shape out;
};
// axes and steps may be null (all leading axes, steps of 1).
SliceGeometry slice_geometry(const Shape& in, const std::vector<int64_t>& starts, const std::vector<int64_t>& ends,
                             const std::vector<int64_t>* axes, const std::vector<int64_t>* steps);

// Gather: data.shape[:axis] + indices.shape + data.shape[axis+1:]; `axis` is normalized in place.
Shape gather_shape(const Shape& data, const Shape& indices, int64_t* axis);
// An index of a Gather along an axis of size n, in [-n, n); returns it in [0, n).
int64_t gather_index(int64_t index, int64_t n, int64_t axis);

// GatherElements: indices of data's rank, each dimension but `axis` at most data's; the output has indices'
// shape. `axis` is normalized in place.
Shape gather_elements_shape(const Shape& data, const Shape& indices, int64_t* axis);

// GatherND with batch_dims b: data [B..., D...], int64 indices [B..., I..., k] (B = the first b dimensions, equal in
// both, 1 <= k <= rank(data) - b); each index row picks data[B..., i_0..i_{k-1}, :] of `slice` elements.
struct GatherNdGeometry {
  int64_t batch = 1;        // prod of the batch dimensions
  int64_t rows = 1;         // index rows per batch: prod(I...)
  int64_t k = 1;            // index length
  int64_t slice = 1;        // elements per gathered slice: prod(data.shape[b + k:])
  int64_t batch_stride = 1; // elements of data per batch: prod(data.shape[b:])
  Shape index_dims;         // data.shape[b : b + k], the ranges the index components must lie in
  Shape dim_strides;        // elements of data per step of each indexed dimension
  Shape out;                // B... + I... + data.shape[b + k:]
};
GatherNdGeometry gather_nd_geometry(const Shape& data, const Tensor& indices, int64_t batch_dims);

// Range(start, limit, delta): max(ceil((limit - start) / delta), 0) elements, element i = start + i * delta. The
// three inputs are scalars (one element) of one type, float32, int32 or int64, in CPU memory; delta is not 0.
struct RangeArgs {
  ONNXTensorElementDataType type = ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
  double start = 0, delta = 0;         // float32 ranges
  int64_t istart = 0, idelta = 0;      // integer ranges (exact)
  int64_t count = 0;
};
RangeArgs range_args(const Tensor& start, const Tensor& limit, const Tensor& delta);

// MatMul with NumPy rules: 1-D A is [1, K], 1-D B is [K, 1] (the added axis is dropped from Y); batch axes
// broadcast.
struct MatMulShape {
  int64_t m = 1, k = 1, n = 1;
  Shape a_batch, b_batch, batch;  // the batch axes of A and B (1-D operands promoted) and their broadcast
  Shape out;
};
MatMulShape matmul_shape(const Shape& a, const Shape& b);

// Gemm: 2-D A and B (after transA/transB) agree on K; C (null when absent) broadcasts to [M, N].
struct GemmShape {
  int64_t m = 0, k = 0, n = 0;
};
GemmShape gemm_shape(const Shape& a, const Shape& b, const Shape* c, bool trans_a, bool trans_b);

// Sliding-window attributes of Conv and the pools (ceil_mode is 0 for Conv, which has no such attribute).
struct WindowAttrs {
  std::vector<int64_t> kernel_shape, strides, dilations, pads;
  std::string auto_pad = "NOTSET";
  bool ceil_mode = false;
  void read(const OrtKernelInfo* info);
};
// One spatial axis after auto_pad and ceil_mode: output size and the pads actually applied.
struct WindowAxis {
  int64_t in = 1, out = 1, kernel = 1, stride = 1, dilation = 1, pad_begin = 0, pad_end = 0;
};
constexpr int64_t kMaxWindowSpatial = 3;
// Validates the attributes against x_shape ([N, C, D1...], 1 to 3 spatial dimensions) and a window of size
// `kernel` (kernel_shape, or W's spatial shape for Conv), and gives each spatial axis's geometry.
std::vector<WindowAxis> window_geometry(const WindowAttrs& a, const Shape& x_shape, const Shape& kernel);

// Conv: X [N, C, D...], W [M, C/group, k...], B [M]; the window geometry and Y's shape.
struct ConvGeometry {
  std::vector<WindowAxis> axes;
  Shape out;
};
ConvGeometry conv_geometry(const WindowAttrs& a, int64_t group, const Shape& x, const Shape& w, const Shape* b);

// Softmax/LogSoftmax/LayerNormalization axis: the input needs rank >= 1.
int64_t norm_axis(int64_t axis, int64_t rank);
// LayerNormalization's Scale or B must broadcast to the normalized shape x.shape[axis:].
void check_norm_param(const Shape& param, const Shape& norm_shape);
// Reduce*: which axes are reduced (every axis when `axes` is empty).
std::vector<bool> reduced_axes(const std::vector<int64_t>& axes, int64_t rank);

// Split: the sizes of the `outputs` parts along `axis` (normalized in place): the `split` input when given (null when
// absent), else num_outputs parts of ceil(dim / num_outputs) with a smaller last one (opset 18's attribute; 0 when
// absent), else `outputs` equal parts.
std::vector<int64_t> split_sizes(const Shape& in, int64_t* axis, const std::vector<int64_t>* split, int64_t num_outputs,
                                 size_t outputs);

// Pad: per axis, negative pads crop the input first (as onnxruntime does); the mode then fills the positive pads
// from the cropped window of `len` elements starting at `crop`.
enum class PadMode { kConstant, kReflect, kEdge, kWrap };
// mode attribute -> PadMode; fails on a mode ONNX does not define.
PadMode pad_mode(const std::string& mode);
struct PadGeometry {
  Shape crop, len, before;  // per axis: first kept input element, kept elements, elements padded in front
  Shape out;
};
// pads holds 2 * n values (all begins, then all ends) for the n axes `axes` (every axis when null).
PadGeometry pad_geometry(const Shape& in, const std::vector<int64_t>& pads, const std::vector<int64_t>* axes,
                         PadMode mode);
// The element of the cropped window (in [0, len)) that output position `o` of an axis reads, or -1 for the
// constant value. Inline so that device code can mirror it line for line.
inline int64_t pad_source(int64_t o, int64_t before, int64_t len, PadMode mode) {
  int64_t i = o - before;
  if (i >= 0 && i < len) return i;
  switch (mode) {
    case PadMode::kConstant: return -1;
    case PadMode::kEdge: return i < 0 ? 0 : len - 1;
    case PadMode::kWrap: return ((i % len) + len) % len;
    case PadMode::kReflect: return i < 0 ? -i : 2 * (len - 1) - i;  // pad_geometry keeps pads below len
  }
  return -1;
}

// CumSum's axis input: one int64/int32 element in CPU memory, in [-rank, rank); returns it in [0, rank).
int64_t cumsum_axis(const Tensor& axis, int64_t rank);

// Attributes the kernels of both devices leave unimplemented, refused when a kernel is created: BatchNormalization
// in training mode or with its training outputs, ScatterND with a reduction.
void check_batch_norm_inference(const OrtKernelInfo* info);
void check_scatter_nd_reduction(const OrtKernelInfo* info);

// BatchNormalization (inference): X [N, C, D...] (rank >= 2) and scale, B, mean, var of shape [C] each; returns C.
int64_t batch_norm_channels(const Shape& x, const Shape& scale, const Shape& b, const Shape& mean, const Shape& var);

// ScatterND: data [r dims], int64 indices [..., k] (1 <= k <= r), updates = indices.shape[:-1] + data.shape[k:];
// each index row writes a slice of `slice` elements at the offset sum_j idx_j * dim_strides[j].
struct ScatterNdGeometry {
  int64_t rows = 1;   // index rows: prod(indices.shape[:-1])
  int64_t k = 1;      // index length
  int64_t slice = 1;  // elements per slice: prod(data.shape[k:])
  Shape index_dims;   // data.shape[:k]
  Shape dim_strides;  // elements of data per step of each indexed dimension
};
ScatterNdGeometry scatter_nd_geometry(const Shape& data, const Tensor& indices, const Shape& updates);

}  // namespace fp8ort
