// Data-movement ONNX ops on the GPU device that move elements: Transpose, Concat, Split, Slice, Pad, Gather, Expand.
// Shape-like inputs (Split's sizes, Slice's starts/ends/axes/steps, Pad's pads/axes/constant_value, Expand's shape)
// are read from CPU memory.
#include <algorithm>
#include <cstring>
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
    const std::vector<int64_t> perm = transpose_perm(x.shape, perm_);
    Tensor y = output(ctx, 0, transpose_shape(x.shape, perm));
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
    if (!has_attr(info, "axis")) fail("attribute 'axis' is required");
    axis_ = attr_int(info, "axis", 0);
  }

  void compute(OrtKernelContext* ctx) override {
    size_t n = 0;
    check(g_ort->KernelContext_GetInputCount(ctx, &n), "KernelContext_GetInputCount");
    std::vector<Tensor> ins;
    std::vector<const Tensor*> ptrs;
    for (size_t i = 0; i < n; ++i) ins.push_back(input(ctx, i));
    for (const Tensor& t : ins) ptrs.push_back(&t);
    int64_t axis = axis_;
    const std::vector<int64_t> out = concat_shape(ptrs, &axis);
    const int64_t elem = require_element_size(ins[0], "inputs");
    Tensor y = output(ctx, 0, out);
    const int64_t total = element_count(out);
    if (total == 0) return;
    int64_t outer = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= out[d];
    const int64_t inner = inner_size(out, axis);
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

// Split (13: sizes from the split input or equal parts; 18: or num_outputs parts, the last one smaller): one row
// copy per output.
class SplitKernel : public Kernel {
 public:
  explicit SplitKernel(const OrtKernelInfo* info)
      : axis_(attr_int(info, "axis", 0)), num_outputs_(attr_int(info, "num_outputs", 0)) {
    oc_ = {"Split", node_name(info)};
    if (has_attr(info, "num_outputs") && num_outputs_ < 1) {
      fail("attribute num_outputs must be >= 1; got " + std::to_string(num_outputs_));
    }
  }

  void compute(OrtKernelContext* ctx) override {
    const Tensor x = input(ctx, 0);
    const int64_t elem = require_element_size(x, "input");
    size_t n_out = 0;
    check(g_ort->KernelContext_GetOutputCount(ctx, &n_out), "KernelContext_GetOutputCount");
    const Tensor split_t = input(ctx, 1);
    std::vector<int64_t> split;
    if (split_t.present()) split = read_ints(split_t, "split");
    int64_t axis = axis_;
    const std::vector<int64_t> sizes =
        split_sizes(x.shape, &axis, split_t.present() ? &split : nullptr, num_outputs_, n_out);
    int64_t outer = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= x.shape[d];
    const int64_t inner = elem * inner_size(x.shape, axis);
    const int64_t src_pitch = x.shape[axis] * inner;
    void* stream = compute_stream(ctx);
    int64_t offset = 0;  // bytes into each input row
    for (size_t k = 0; k < n_out; ++k) {
      std::vector<int64_t> shape = x.shape;
      shape[axis] = sizes[k];
      Tensor y = output(ctx, k, shape);
      const int64_t row = sizes[k] * inner;
      if (row > 0 && outer > 0) {
        gpu_check(fp8ort_onnx_copy_rows(static_cast<const char*>(x.data) + offset, y.mutable_data, outer, row,
                                        src_pitch, row, stream),
                  "fp8ort_onnx_copy_rows");
      }
      offset += row;
    }
  }

 private:
  int64_t axis_;
  int64_t num_outputs_;
};

class SliceKernel : public Kernel {
 public:
  explicit SliceKernel(const OrtKernelInfo* info) { oc_ = {"Slice", node_name(info)}; }

  void compute(OrtKernelContext* ctx) override {
    const Tensor x = input(ctx, 0);
    const int64_t elem = require_element_size(x, "data");
    const int64_t rank = static_cast<int64_t>(x.shape.size());
    const std::vector<int64_t> starts = read_ints(input(ctx, 1), "starts");
    const std::vector<int64_t> ends = read_ints(input(ctx, 2), "ends");
    std::vector<int64_t> axes, steps;
    const Tensor axes_t = input(ctx, 3), steps_t = input(ctx, 4);
    if (axes_t.present()) axes = read_ints(axes_t, "axes");
    if (steps_t.present()) steps = read_ints(steps_t, "steps");
    const SliceGeometry geo = slice_geometry(x.shape, starts, ends, axes_t.present() ? &axes : nullptr,
                                             steps_t.present() ? &steps : nullptr);
    const std::vector<int64_t>& start = geo.begin;
    const std::vector<int64_t>& step = geo.step;
    const std::vector<int64_t>& out = geo.out;
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

// Pad (13: pads and constant_value inputs; 18: axes input; 19: wrap mode), every mode; negative pads crop first.
class PadKernel : public Kernel {
 public:
  explicit PadKernel(const OrtKernelInfo* info) : mode_(pad_mode(attr_string(info, "mode", "constant"))) {
    oc_ = {"Pad", node_name(info)};
  }

  void compute(OrtKernelContext* ctx) override {
    const Tensor x = input(ctx, 0);
    const int64_t elem = require_element_size(x, "data");
    const Tensor pads_t = input(ctx, 1);
    if (!pads_t.present()) fail("input 'pads' is required");
    const std::vector<int64_t> pads = read_ints(pads_t, "pads");
    const Tensor axes_t = input(ctx, 3);
    std::vector<int64_t> axes;
    if (axes_t.present()) axes = read_ints(axes_t, "axes");
    const PadGeometry geo = pad_geometry(x.shape, pads, axes_t.present() ? &axes : nullptr, mode_);
    uint64_t value = 0;
    const Tensor v = input(ctx, 2);
    if (v.present() && mode_ == PadMode::kConstant) {
      if (v.type != x.type) {
        fail(std::string("constant_value is ") + type_name(v.type) + " but data is " + type_name(x.type) +
             "; give it data's type");
      }
      if (v.size > 1) fail("constant_value must hold one value; got shape " + shape_str(v.shape));
      if (v.size == 1) std::memcpy(&value, v.data, static_cast<size_t>(elem));
    }
    Tensor y = output(ctx, 0, geo.out);
    const int64_t count = element_count(geo.out);
    if (count == 0) return;
    if (x.size == 0) {  // an empty input padded with constants: every element is the value
      gpu_check(fp8ort_onnx_fill(y.mutable_data, elem, count, value, compute_stream(ctx)), "fp8ort_onnx_fill");
      return;
    }
    if (x.shape.empty()) {  // a scalar: nothing to pad
      gpu_check(fp8ort_onnx_copy(x.data, y.mutable_data, elem, compute_stream(ctx)), "fp8ort_onnx_copy");
      return;
    }
    if (x.shape.size() > FP8ORT_ONNX_MAX_RANK) {
      fail("data has rank " + std::to_string(x.shape.size()) + "; the GPU Pad takes rank <= " +
               std::to_string(FP8ORT_ONNX_MAX_RANK),
           ORT_NOT_IMPLEMENTED);
    }
    fp8ort_pad_geometry g{};
    g.rank = static_cast<int32_t>(x.shape.size());
    g.mode = static_cast<int32_t>(device_mode(mode_));
    g.value_bits = value;
    const std::vector<int64_t> strides = contiguous_strides(x.shape);
    for (size_t d = 0; d < x.shape.size(); ++d) {
      g.out_dims[d] = geo.out[d];
      g.crop[d] = geo.crop[d];
      g.len[d] = geo.len[d];
      g.before[d] = geo.before[d];
      g.src_strides[d] = strides[d];
    }
    gpu_check(fp8ort_onnx_pad(x.data, y.mutable_data, elem, &g, compute_stream(ctx)), "fp8ort_onnx_pad");
  }

 private:
  static fp8ort_pad_mode device_mode(PadMode m) {
    switch (m) {
      case PadMode::kReflect: return FP8ORT_PAD_REFLECT;
      case PadMode::kEdge: return FP8ORT_PAD_EDGE;
      case PadMode::kWrap: return FP8ORT_PAD_WRAP;
      default: return FP8ORT_PAD_CONSTANT;
    }
  }

  PadMode mode_;
};

// Gather. Indices that are a constant in CPU memory are checked on the host (once, their range kept from the
// constructor) and give the shared gather_index message. Indices in device memory are not read back (that would
// cost a host synchronization per run): an out-of-range device index gives zero elements in Y, not an error.
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
    require_index_type(idx);
    int64_t axis = axis_;
    const std::vector<int64_t> out = gather_shape(data.shape, idx.shape, &axis);
    const int64_t axis_dim = data.shape[axis];
    if (checked_on_host_ && idx.size > 0) {
      gather_index(min_index_, axis_dim, axis);
      gather_index(max_index_, axis_dim, axis);
    }
    Tensor y = output(ctx, 0, out);
    if (element_count(out) == 0) return;
    int64_t outer = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= data.shape[d];
    const int64_t inner = inner_size(data.shape, axis);
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
    const std::vector<int64_t> out = expand_shape(x.shape, read_ints(shape_t, "shape"));
    Tensor y = output(ctx, 0, out);
    if (element_count(out) == 0) return;
    const fp8ort_nd nd = to_device_walk(broadcast_walk(out, {&x.shape}));
    gpu_check(fp8ort_onnx_strided_copy(x.data, y.mutable_data, elem, &nd, compute_stream(ctx)), "fp8ort_onnx_strided_copy");
  }
};

}  // namespace

std::unique_ptr<Kernel> create_transpose(const OrtKernelInfo* info) { return std::make_unique<TransposeKernel>(info); }
std::unique_ptr<Kernel> create_concat(const OrtKernelInfo* info) { return std::make_unique<ConcatKernel>(info); }
std::unique_ptr<Kernel> create_split(const OrtKernelInfo* info) { return std::make_unique<SplitKernel>(info); }
std::unique_ptr<Kernel> create_slice(const OrtKernelInfo* info) { return std::make_unique<SliceKernel>(info); }
std::unique_ptr<Kernel> create_pad(const OrtKernelInfo* info) { return std::make_unique<PadKernel>(info); }
std::unique_ptr<Kernel> create_gather(const OrtKernelInfo* info) { return std::make_unique<GatherKernel>(info); }
std::unique_ptr<Kernel> create_expand(const OrtKernelInfo* info) { return std::make_unique<ExpandKernel>(info); }

}  // namespace gpu_onnx
}  // namespace fp8ort
