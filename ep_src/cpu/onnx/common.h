// What the standard-op CPU kernels share: element types, float16 handling (computed in float32, rounded once),
// the broadcast walk, the window geometry of Conv and the pools, and the family tables table.cc joins. Shape and
// attribute validation is ops/onnx_shapes.h's (shared with the GPU device).
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ops/fp8_numerics.h"
#include "ops/onnx_shapes.h"
#include "ort/kernel.h"
#include "ort/ort_api.h"

namespace fp8ort {
namespace cpu_onnx {

using TypeList = std::vector<ONNXTensorElementDataType>;

constexpr ONNXTensorElementDataType kF32 = ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT;
constexpr ONNXTensorElementDataType kF16 = ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16;
constexpr ONNXTensorElementDataType kI64 = ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64;
constexpr ONNXTensorElementDataType kI32 = ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32;
constexpr ONNXTensorElementDataType kBool = ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL;
constexpr ONNXTensorElementDataType kU8 = ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8;

// float32 and float16 (math ops).
TypeList float_types();
// float32, float16, int64, int32 (arithmetic that shape computations also use).
TypeList numeric_types();
// Data movement: the numeric types, bool, uint8 and the four FP8 formats (moved as bytes).
TypeList data_types();
TypeList index_types();  // int32, int64

// Bytes per element of a data-movement type; fails for a type the kernels do not move.
size_t element_size(ONNXTensorElementDataType t);


// Calls fn(out_offset, in_offsets, count, inner_strides) for each run of the innermost output dimension; the
// offsets are element offsets into each input. Runs rows in parallel when the output is large.
template <class Fn>
void for_each_broadcast_row(OrtKernelContext* ctx, const std::vector<int64_t>& out_shape,
                            const std::vector<std::vector<int64_t>>& strides, Fn&& fn);

// Calls fn(begin, end) over [0, count) in chunks of at least `grain` items (so each task has enough work to
// outweigh the thread pool's cost per task), on ORT's thread pool when there is more than one chunk.
template <class Fn>
void parallel_ranges(OrtKernelContext* ctx, int64_t count, int64_t grain, Fn&& fn) {
  constexpr int64_t kMaxTasks = 64;
  if (count <= 0) return;
  const int64_t tasks = std::max<int64_t>(1, std::min(kMaxTasks, count / std::max<int64_t>(grain, 1)));
  if (ctx == nullptr || tasks == 1) {
    fn(int64_t{0}, count);
    return;
  }
  const int64_t step = (count + tasks - 1) / tasks;
  auto task = [&](size_t t) {
    const int64_t b = static_cast<int64_t>(t) * step;
    if (b < count) fn(b, std::min(count, b + step));
  };
  parallel_for(ctx, static_cast<size_t>(tasks), task);
}

// A float32 view of a float32/float16 tensor (float16 is converted once) and an output that is written as
// float32 and rounded to float16 once at the end.
class FloatIn {
 public:
  explicit FloatIn(const Tensor& t);
  const float* data() const { return ptr_; }

 private:
  std::vector<float> buf_;
  const float* ptr_ = nullptr;
};

class FloatOut {
 public:
  explicit FloatOut(const Tensor& t);
  float* data() { return ptr_; }
  void finish();  // rounds to float16 when the output is float16

 private:
  Tensor t_;
  std::vector<float> buf_;
  float* ptr_ = nullptr;
};

template <class K>
std::unique_ptr<Kernel> make_kernel(const OrtKernelInfo* info) {
  return std::make_unique<K>(info);
}

// The family tables (one per source file), joined by cpu_onnx_kernels().
std::vector<KernelDef> elementwise_kernels();
std::vector<KernelDef> shape_kernels();
std::vector<KernelDef> movement_kernels();
std::vector<KernelDef> pool_kernels();
std::vector<KernelDef> norm_kernels();
std::vector<KernelDef> linalg_kernels();

// ---- template definitions ----

template <class Fn>
void for_each_broadcast_row(OrtKernelContext* ctx, const std::vector<int64_t>& out_shape,
                            const std::vector<std::vector<int64_t>>& strides, Fn&& fn) {
  constexpr int64_t kRowsPerTask = 64;
  constexpr int64_t kMinParallelElements = 1 << 16;
  const size_t rank = out_shape.size();
  const size_t n_in = strides.size();
  int64_t inner = rank == 0 ? 1 : out_shape[rank - 1];
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < rank; ++d) rows *= out_shape[d];
  if (inner == 0 || rows == 0) return;
  std::vector<int64_t> inner_strides(n_in, 0);
  for (size_t k = 0; k < n_in; ++k) inner_strides[k] = rank == 0 ? 0 : strides[k][rank - 1];
  auto run_rows = [&](int64_t r0, int64_t r1) {
    std::vector<int64_t> idx(rank > 0 ? rank - 1 : 0, 0);
    std::vector<int64_t> off(n_in, 0);
    int64_t rem = r0;
    for (size_t d = idx.size(); d-- > 0;) {
      idx[d] = rem % out_shape[d];
      rem /= out_shape[d];
      for (size_t k = 0; k < n_in; ++k) off[k] += idx[d] * strides[k][d];
    }
    for (int64_t r = r0; r < r1; ++r) {
      fn(r * inner, off.data(), inner, inner_strides.data());
      for (size_t d = idx.size(); d-- > 0;) {  // odometer step
        ++idx[d];
        for (size_t k = 0; k < n_in; ++k) off[k] += strides[k][d];
        if (idx[d] < out_shape[d]) break;
        for (size_t k = 0; k < n_in; ++k) off[k] -= idx[d] * strides[k][d];
        idx[d] = 0;
      }
    }
  };
  if (ctx == nullptr || rows * inner < kMinParallelElements || rows < 2 * kRowsPerTask) {
    run_rows(0, rows);
    return;
  }
  const int64_t tasks = (rows + kRowsPerTask - 1) / kRowsPerTask;
  auto task = [&](size_t t) {
    const int64_t r0 = static_cast<int64_t>(t) * kRowsPerTask;
    run_rows(r0, std::min(rows, r0 + kRowsPerTask));
  };
  parallel_for(ctx, static_cast<size_t>(tasks), task);
}

}  // namespace cpu_onnx
}  // namespace fp8ort

namespace fp8ort {
namespace cpu_onnx {

// Window geometry of Conv and the pools over up to 3 spatial dimensions (unused ones have size 1).
constexpr int kMaxSpatial = 3;
struct Window {
  int rank = 0;
  int64_t in[kMaxSpatial] = {1, 1, 1};
  int64_t out[kMaxSpatial] = {1, 1, 1};
  int64_t kernel[kMaxSpatial] = {1, 1, 1};
  int64_t stride[kMaxSpatial] = {1, 1, 1};
  int64_t dilation[kMaxSpatial] = {1, 1, 1};
  int64_t pad_begin[kMaxSpatial] = {0, 0, 0};
  int64_t pad_end[kMaxSpatial] = {0, 0, 0};
  int64_t in_size() const { return in[0] * in[1] * in[2]; }
  int64_t out_size() const { return out[0] * out[1] * out[2]; }
};

// The geometry of window_geometry (ops/onnx_shapes.h), right-aligned into kMaxSpatial slots.
Window make_window(const std::vector<WindowAxis>& axes);

}  // namespace cpu_onnx
}  // namespace fp8ort
