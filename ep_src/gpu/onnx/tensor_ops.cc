// Data-movement ONNX ops on the GPU device that move elements: Transpose, Concat, Slice, Gather, Expand.
// Shape-like inputs (Slice's starts/ends/axes/steps, Expand's shape) are read from CPU memory.
#include <algorithm>
#include <numeric>
#include <string>

#include "gpu/onnx/tensor_ops.h"

namespace fp8ort {
namespace gpu_onnx {
namespace {

class TransposeKernel : public Kernel {
 public:
  explicit TransposeKernel(const OrtKernelInfo* info) : perm_(attr_ints(info, "perm")) { oc_ = {"Transpose", node_name(info)}; }

  void compute(OrtKernelContext* ctx) override {
    const Tensor x = input(ctx, 0);
    const int64_t elem = require_element_size(x, "data");
    const size_t rank = x.shape.size();
    std::vector<int64_t> perm = perm_;
    if (perm.empty()) {
      perm.resize(rank);
      for (size_t i = 0; i < rank; ++i) perm[i] = static_cast<int64_t>(rank - 1 - i);
    }
    if (perm.size() != rank) {
      fail("attribute perm has " + std::to_string(perm.size()) + " entries but the input has rank " + std::to_string(rank) +
           "; give one entry per dimension");
    }
    std::vector<bool> seen(rank, false);
    for (int64_t p : perm) {
      if (p < 0 || p >= static_cast<int64_t>(rank) || seen[p]) {
        fail("attribute perm " + shape_str(perm) + " is not a permutation of 0.." + std::to_string(rank - 1));
      }
      seen[p] = true;
    }
    std::vector<int64_t> out(rank);
    for (size_t i = 0; i < rank; ++i) out[i] = x.shape[perm[i]];
    Tensor y = output(ctx, 0, out);
    if (x.size == 0) return;
    void* stream = compute_stream(ctx);

    const TransposePlan plan = plan_transpose(x.shape, perm);
    switch (plan.kind) {
      case TransposePlan::kCopy:
        gpu_check(fp8ort_onnx_copy(x.data, y.mutable_data, x.size * elem, stream), "fp8ort_onnx_copy");
        return;
      case TransposePlan::kTiles:
        gpu_check(fp8ort_onnx_transpose_2d(x.data, y.mutable_data, elem, plan.batch, plan.rows, plan.cols, stream),
                  "fp8ort_onnx_transpose_2d");
        return;
      default:
        gpu_check(fp8ort_onnx_strided_copy(x.data, y.mutable_data, elem, &plan.walk, stream), "fp8ort_onnx_strided_copy");
        return;
    }
  }

 private:
  std::vector<int64_t> perm_;
};

class ConcatKernel : public Kernel {
 public:
  explicit ConcatKernel(const OrtKernelInfo* info) {
    oc_ = {"Concat", node_name(info)};
    if (!has_attr(info, "axis")) fail("Concat '" + node_name(info) + "': attribute axis is required");
    axis_ = attr_int(info, "axis", 0);
  }

  void compute(OrtKernelContext* ctx) override {
    size_t n = 0;
    check(g_ort->KernelContext_GetInputCount(ctx, &n), "KernelContext_GetInputCount");
    if (n == 0) fail("Concat needs at least one input");
    std::vector<Tensor> ins;
    for (size_t i = 0; i < n; ++i) ins.push_back(input(ctx, i));
    const Tensor& first = ins[0];
    const int64_t elem = require_element_size(first, "inputs");
    const int64_t rank = static_cast<int64_t>(first.shape.size());
    if (rank == 0) fail("Concat inputs must have rank >= 1; input 0 is a scalar");
    const int64_t axis = normalize_axis(axis_, rank, "attribute axis");
    std::vector<int64_t> out = first.shape;
    out[axis] = 0;
    for (size_t i = 0; i < n; ++i) {
      const Tensor& t = ins[i];
      if (t.type != first.type) fail("input " + std::to_string(i) + " is " + type_name(t.type) + " but input 0 is " + type_name(first.type));
      bool same = t.shape.size() == first.shape.size();
      for (int64_t d = 0; same && d < rank; ++d) same = d == axis || t.shape[d] == first.shape[d];
      if (!same) {
        fail("input " + std::to_string(i) + " has shape " + shape_str(t.shape) + ", input 0 " + shape_str(first.shape) +
             "; all inputs must match except along axis " + std::to_string(axis));
      }
      out[axis] += t.shape[axis];
    }
    Tensor y = output(ctx, 0, out);
    const int64_t total = element_count(out);
    if (total == 0) return;
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= out[d];
    for (int64_t d = axis + 1; d < rank; ++d) inner *= out[d];
    const int64_t dst_pitch = out[axis] * inner * elem;
    void* stream = compute_stream(ctx);
    int64_t offset = 0;  // bytes into each output row
    for (const Tensor& t : ins) {
      const int64_t row = t.shape[axis] * inner * elem;
      if (row > 0) {
        gpu_check(fp8ort_onnx_copy_rows(t.data, static_cast<char*>(y.mutable_data) + offset, outer, row, row, dst_pitch, stream),
                  "fp8ort_onnx_copy_rows");
      }
      offset += row;
    }
  }

 private:
  int64_t axis_ = 0;
};

class SliceKernel : public Kernel {
 public:
  explicit SliceKernel(const OrtKernelInfo* info) { oc_ = {"Slice", node_name(info)}; }

  void compute(OrtKernelContext* ctx) override {
    const Tensor x = input(ctx, 0);
    const int64_t elem = require_element_size(x, "data");
    const int64_t rank = static_cast<int64_t>(x.shape.size());
    const std::vector<int64_t> starts = read_cpu_ints(input(ctx, 1), "starts");
    const std::vector<int64_t> ends = read_cpu_ints(input(ctx, 2), "ends");
    if (starts.size() != ends.size()) {
      fail("inputs starts and ends have " + std::to_string(starts.size()) + " and " + std::to_string(ends.size()) +
           " values; give one of each per sliced axis");
    }
    const size_t n = starts.size();
    std::vector<int64_t> axes(n), steps(n, 1);
    const Tensor axes_t = input(ctx, 3), steps_t = input(ctx, 4);
    if (axes_t.present()) {
      axes = read_cpu_ints(axes_t, "axes");
    } else {
      std::iota(axes.begin(), axes.end(), 0);
    }
    if (steps_t.present()) steps = read_cpu_ints(steps_t, "steps");
    if (axes.size() != n || steps.size() != n) {
      fail("inputs axes and steps must have as many values as starts (" + std::to_string(n) + ")");
    }
    std::vector<int64_t> start(rank, 0), step(rank, 1), out = x.shape;
    std::vector<bool> seen(rank, false);
    for (size_t i = 0; i < n; ++i) {
      const int64_t a = normalize_axis(axes[i], rank, "axis");
      if (seen[a]) fail("axis " + std::to_string(a) + " appears twice in axes; give each axis once");
      seen[a] = true;
      const int64_t dim = x.shape[a], s = steps[i];
      if (s == 0) fail("steps[" + std::to_string(i) + "] is 0; a step must be nonzero");
      int64_t b = starts[i], e = ends[i];
      if (b < 0) b += dim;
      if (e < 0) e += dim;
      int64_t len = 0;
      if (dim == 0) {
        b = 0;  // nothing to take; std::clamp below needs dim >= 1 for negative steps
      } else if (s > 0) {
        b = std::clamp<int64_t>(b, 0, dim);
        e = std::clamp<int64_t>(e, 0, dim);
        len = e > b ? (e - b - 1) / s + 1 : 0;
      } else {
        b = std::clamp<int64_t>(b, 0, dim - 1);
        e = std::clamp<int64_t>(e, -1, dim - 1);
        len = b > e ? (e - b + 1) / s + 1 : 0;  // ceil((b - e) / -s) without negating s
      }
      start[a] = b;
      step[a] = s;
      out[a] = len;
    }
    Tensor y = output(ctx, 0, out);
    if (element_count(out) == 0) return;
    const std::vector<int64_t> strides = contiguous_strides(x.shape);
    Walk w;
    w.dims = out;
    w.offsets = {0};
    w.strides.assign(1, std::vector<int64_t>(rank));
    for (int64_t d = 0; d < rank; ++d) {
      w.offsets[0] += start[d] * strides[d];
      w.strides[0][d] = step[d] * strides[d];
    }
    const fp8ort_nd nd = to_device_walk(w);
    gpu_check(fp8ort_onnx_strided_copy(x.data, y.mutable_data, elem, &nd, compute_stream(ctx)), "fp8ort_onnx_strided_copy");
  }
};

// Gather with indices on the device. Out-of-range indices give zero elements (no host synchronization can report
// them); when the indices are a constant in CPU memory they are checked on the host instead.
class GatherKernel : public Kernel {
 public:
  explicit GatherKernel(const OrtKernelInfo* info) : axis_(attr_int(info, "axis", 0)) {
    oc_ = {"Gather", node_name(info)};
    const OrtValue* c = constant_input(info, 1);
    if (c == nullptr) return;
    const OrtMemoryInfo* mem = nullptr;
    check(g_ort->GetTensorMemoryInfo(c, &mem), "GetTensorMemoryInfo");
    OrtMemoryInfoDeviceType device = OrtMemoryInfoDeviceType_GPU;
    g_ort->MemoryInfoGetDeviceType(mem, &device);
    if (device != OrtMemoryInfoDeviceType_CPU) return;
    const Tensor t = describe(c);
    if (t.type != ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64 && t.type != ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32) return;
    for (int64_t i = 0; i < t.size; ++i) {
      const int64_t v = t.type == ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64 ? static_cast<const int64_t*>(t.data)[i]
                                                                      : static_cast<const int32_t*>(t.data)[i];
      min_index_ = std::min(min_index_, v);
      max_index_ = std::max(max_index_, v);
    }
    checked_on_host_ = true;
  }

  void compute(OrtKernelContext* ctx) override {
    const Tensor data = input(ctx, 0), idx = input(ctx, 1);
    const int64_t elem = require_element_size(data, "data");
    if (idx.type != ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64 && idx.type != ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32) {
      fail(std::string("input indices must be int64 or int32; got ") + type_name(idx.type));
    }
    const int64_t rank = static_cast<int64_t>(data.shape.size());
    if (rank == 0) fail("input data must have rank >= 1; got a scalar");
    const int64_t axis = normalize_axis(axis_, rank, "attribute axis");
    const int64_t axis_dim = data.shape[axis];
    if (checked_on_host_ && idx.size > 0 && (min_index_ < -axis_dim || max_index_ >= axis_dim)) {
      fail("indices range over [" + std::to_string(min_index_) + ", " + std::to_string(max_index_) +
           "] but axis " + std::to_string(axis) + " has size " + std::to_string(axis_dim) + "; valid indices are in [" +
           std::to_string(-axis_dim) + ", " + std::to_string(axis_dim - 1) + "]");
    }
    std::vector<int64_t> out(data.shape.begin(), data.shape.begin() + axis);
    out.insert(out.end(), idx.shape.begin(), idx.shape.end());
    out.insert(out.end(), data.shape.begin() + axis + 1, data.shape.end());
    Tensor y = output(ctx, 0, out);
    if (element_count(out) == 0) return;
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= data.shape[d];
    for (int64_t d = axis + 1; d < rank; ++d) inner *= data.shape[d];
    gpu_check(fp8ort_onnx_gather(data.data, idx.data, static_cast<int32_t>(idx.type), y.mutable_data, elem, outer, axis_dim,
                                 inner, idx.size, compute_stream(ctx)),
              "fp8ort_onnx_gather");
  }

 private:
  int64_t axis_;
  bool checked_on_host_ = false;
  int64_t min_index_ = 0, max_index_ = 0;
};

class ExpandKernel : public Kernel {
 public:
  explicit ExpandKernel(const OrtKernelInfo* info) { oc_ = {"Expand", node_name(info)}; }

  void compute(OrtKernelContext* ctx) override {
    const Tensor x = input(ctx, 0);
    const int64_t elem = require_element_size(x, "input");
    const Tensor shape_t = input(ctx, 1);
    if (shape_t.type != ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64) fail(std::string("input shape must be int64; got ") + type_name(shape_t.type));
    const std::vector<int64_t> shape = read_cpu_ints(shape_t, "shape");
    for (int64_t d : shape) {
      if (d < 0) fail("input shape " + shape_str(shape) + " has a negative dimension");
    }
    const std::vector<int64_t> out = broadcast_shapes({&x.shape, &shape});
    Tensor y = output(ctx, 0, out);
    if (element_count(out) == 0) return;
    const fp8ort_nd nd = to_device_walk(broadcast_walk(out, {&x.shape}));
    gpu_check(fp8ort_onnx_strided_copy(x.data, y.mutable_data, elem, &nd, compute_stream(ctx)), "fp8ort_onnx_strided_copy");
  }
};

}  // namespace

std::unique_ptr<Kernel> create_transpose(const OrtKernelInfo* info) { return std::make_unique<TransposeKernel>(info); }
std::unique_ptr<Kernel> create_concat(const OrtKernelInfo* info) { return std::make_unique<ConcatKernel>(info); }
std::unique_ptr<Kernel> create_slice(const OrtKernelInfo* info) { return std::make_unique<SliceKernel>(info); }
std::unique_ptr<Kernel> create_gather(const OrtKernelInfo* info) { return std::make_unique<GatherKernel>(info); }
std::unique_ptr<Kernel> create_expand(const OrtKernelInfo* info) { return std::make_unique<ExpandKernel>(info); }

}  // namespace gpu_onnx
}  // namespace fp8ort
