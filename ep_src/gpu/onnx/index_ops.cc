// Range, CumSum, GatherElements, GatherND and ScatterND on the GPU device (device code: hip_kernels/onnx_index.hip).
// Range reads its three scalars and CumSum its axis in CPU memory (the kernel rows say so); the gathers and
// ScatterND read their indices on the device, where an index out of range gives zero elements (ScatterND: leaves
// data's elements) with no host synchronization inside a run.
#include <string>

#include "gpu/onnx/tensor_ops.h"

namespace fp8ort {
namespace gpu_onnx {
namespace {

class RangeKernel : public Kernel {
 public:
  explicit RangeKernel(const OrtKernelInfo* info) { oc_ = {"Range", node_name(info)}; }
  void compute(OrtKernelContext* ctx) override {
    const RangeArgs r = range_args(input(ctx, 0), input(ctx, 1), input(ctx, 2));
    Tensor y = output(ctx, 0, {r.count});
    if (r.count == 0) return;
    gpu_check(fp8ort_onnx_range(static_cast<int32_t>(r.type), r.start, r.delta, r.istart, r.idelta, r.count,
                                y.mutable_data, compute_stream(ctx)),
              "fp8ort_onnx_range");
  }
};

// CumSum(x, axis): running sums along `axis`, exclusive and/or reverse; float32, int32 and int64.
class CumSumKernel : public Kernel {
 public:
  explicit CumSumKernel(const OrtKernelInfo* info)
      : exclusive_(attr_int(info, "exclusive", 0) != 0), reverse_(attr_int(info, "reverse", 0) != 0) {
    oc_ = {"CumSum", node_name(info)};
  }
  void compute(OrtKernelContext* ctx) override {
    const Tensor x = input(ctx, 0);
    if (x.type != ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT && x.type != ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64 &&
        x.type != ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32) {
      fail(std::string("element type ") + type_name(x.type) + " is not supported; use float32, int64 or int32");
    }
    const int64_t rank = static_cast<int64_t>(x.shape.size());
    const int64_t axis = cumsum_axis(input(ctx, 1), rank);
    Tensor y = output(ctx, 0, x.shape);
    if (x.size == 0) return;
    int64_t outer = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= x.shape[d];
    const int64_t inner = inner_size(x.shape, axis);
    gpu_check(fp8ort_onnx_cumsum(x.data, y.mutable_data, static_cast<int32_t>(x.type), outer, x.shape[axis], inner,
                                 exclusive_ ? 1 : 0, reverse_ ? 1 : 0, compute_stream(ctx)),
              "fp8ort_onnx_cumsum");
  }

 private:
  bool exclusive_, reverse_;
};

void require_rank(const Shape& s, const char* what) {
  if (s.size() > FP8ORT_ONNX_MAX_RANK) {
    fail(std::string(what) + " has rank " + std::to_string(s.size()) + "; the GPU kernel takes rank <= " +
             std::to_string(FP8ORT_ONNX_MAX_RANK),
         ORT_NOT_IMPLEMENTED);
  }
}

class GatherElementsKernel : public Kernel {
 public:
  explicit GatherElementsKernel(const OrtKernelInfo* info) : axis_(attr_int(info, "axis", 0)) {
    oc_ = {"GatherElements", node_name(info)};
  }
  void compute(OrtKernelContext* ctx) override {
    const Tensor data = input(ctx, 0), idx = input(ctx, 1);
    const int64_t elem = require_element_size(data, "data");
    require_index_type(idx);
    int64_t axis = axis_;
    const Shape out = gather_elements_shape(data.shape, idx.shape, &axis);
    require_rank(out, "indices");
    Tensor y = output(ctx, 0, out);
    if (element_count(out) == 0) return;
    fp8ort_gather_elements_geometry g{};
    g.rank = static_cast<int32_t>(out.size());
    g.axis = static_cast<int32_t>(axis);
    g.axis_dim = data.shape[axis];
    const Shape strides = contiguous_strides(data.shape);
    for (size_t d = 0; d < out.size(); ++d) {
      g.dims[d] = out[d];
      g.data_strides[d] = strides[d];
    }
    gpu_check(fp8ort_onnx_gather_elements(data.data, idx.data, static_cast<int32_t>(idx.type), y.mutable_data, elem, &g,
                                          compute_stream(ctx)),
              "fp8ort_onnx_gather_elements");
  }

 private:
  int64_t axis_;
};

class GatherNdKernel : public Kernel {
 public:
  explicit GatherNdKernel(const OrtKernelInfo* info) : batch_dims_(attr_int(info, "batch_dims", 0)) {
    oc_ = {"GatherND", node_name(info)};
  }
  void compute(OrtKernelContext* ctx) override {
    const Tensor data = input(ctx, 0), idx = input(ctx, 1);
    const int64_t elem = require_element_size(data, "data");
    const GatherNdGeometry geo = gather_nd_geometry(data.shape, idx, batch_dims_);
    require_rank(data.shape, "data");
    Tensor y = output(ctx, 0, geo.out);
    if (element_count(geo.out) == 0) return;
    fp8ort_gather_nd_geometry g{};
    g.batch = geo.batch;
    g.rows = geo.rows;
    g.k = geo.k;
    g.slice = geo.slice;
    g.batch_stride = geo.batch_stride;
    for (int64_t j = 0; j < geo.k; ++j) {
      g.index_dims[j] = geo.index_dims[j];
      g.dim_strides[j] = geo.dim_strides[j];
    }
    gpu_check(fp8ort_onnx_gather_nd(data.data, static_cast<const int64_t*>(idx.data), y.mutable_data, elem, &g,
                                    compute_stream(ctx)),
              "fp8ort_onnx_gather_nd");
  }

 private:
  int64_t batch_dims_;
};

// ScatterND (reduction "none"): data copied to the output, then each index row's slice replaced by its updates.
class ScatterNdKernel : public Kernel {
 public:
  explicit ScatterNdKernel(const OrtKernelInfo* info) {
    oc_ = {"ScatterND", node_name(info)};
    check_scatter_nd_reduction(info);
  }
  void compute(OrtKernelContext* ctx) override {
    const Tensor data = input(ctx, 0), idx = input(ctx, 1), updates = input(ctx, 2);
    const int64_t elem = require_element_size(data, "data");
    if (updates.type != data.type) {
      fail(std::string("updates is ") + type_name(updates.type) + " but data is " + type_name(data.type) +
           "; give them one type");
    }
    const ScatterNdGeometry geo = scatter_nd_geometry(data.shape, idx, updates.shape);
    if (geo.k > FP8ORT_ONNX_MAX_RANK) {
      fail("indices rows have " + std::to_string(geo.k) + " components; the GPU kernel takes at most " +
               std::to_string(FP8ORT_ONNX_MAX_RANK),
           ORT_NOT_IMPLEMENTED);
    }
    Tensor y = output(ctx, 0, data.shape);
    if (data.size == 0) return;
    void* stream = compute_stream(ctx);
    gpu_check(fp8ort_onnx_copy(data.data, y.mutable_data, data.size * elem, stream), "fp8ort_onnx_copy");
    fp8ort_scatter_nd_geometry g{};
    g.rows = geo.rows;
    g.k = geo.k;
    g.slice = geo.slice;
    for (int64_t j = 0; j < geo.k; ++j) {
      g.index_dims[j] = geo.index_dims[j];
      g.dim_strides[j] = geo.dim_strides[j];
    }
    gpu_check(
        fp8ort_onnx_scatter_nd(updates.data, static_cast<const int64_t*>(idx.data), y.mutable_data, elem, &g, stream),
        "fp8ort_onnx_scatter_nd");
  }
};

}  // namespace

std::unique_ptr<Kernel> create_range(const OrtKernelInfo* info) { return std::make_unique<RangeKernel>(info); }
std::unique_ptr<Kernel> create_gather_elements(const OrtKernelInfo* info) {
  return std::make_unique<GatherElementsKernel>(info);
}
std::unique_ptr<Kernel> create_gather_nd(const OrtKernelInfo* info) { return std::make_unique<GatherNdKernel>(info); }
std::unique_ptr<Kernel> create_cumsum(const OrtKernelInfo* info) { return std::make_unique<CumSumKernel>(info); }
std::unique_ptr<Kernel> create_scatter_nd(const OrtKernelInfo* info) { return std::make_unique<ScatterNdKernel>(info); }

}  // namespace gpu_onnx
}  // namespace fp8ort
