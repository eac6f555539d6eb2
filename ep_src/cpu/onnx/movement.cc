// Data movement ONNX ops on the CPU device: Transpose, Expand, Slice (strided copies), Concat, Gather. Elements
// move as bytes of their width, so FP8, bool and integer tensors go through the same code.
#include <algorithm>
#include <cstring>

#include "cpu/onnx/common.h"

namespace fp8ort {
namespace cpu_onnx {
namespace {

constexpr int64_t kGrainBytes = 1 << 16;  // bytes copied per thread-pool task, at least

template <class E>
void strided_copy_typed(OrtKernelContext* ctx, const E* src, E* dst, const std::vector<int64_t>& out_shape,
                        const std::vector<int64_t>& src_strides) {
  for_each_broadcast_row(ctx, out_shape, {src_strides},
                         [&](int64_t o, const int64_t* off, int64_t n, const int64_t* st) {
                           const E* s = src + off[0];
                           E* y = dst + o;
                           if (st[0] == 1) {
                             std::memcpy(y, s, static_cast<size_t>(n) * sizeof(E));
                           } else {
                             for (int64_t i = 0; i < n; ++i) y[i] = s[i * st[0]];
                           }
                         });
}

// dst[out index] = src[sum(index[d] * src_strides[d])] over out_shape (strides in elements, may be 0).
void strided_copy(OrtKernelContext* ctx, const void* src, void* dst, size_t es, const std::vector<int64_t>& out_shape,
                  const std::vector<int64_t>& src_strides) {
  switch (es) {
    case 1:
      strided_copy_typed(ctx, static_cast<const uint8_t*>(src), static_cast<uint8_t*>(dst), out_shape, src_strides);
      break;
    case 2:
      strided_copy_typed(ctx, static_cast<const uint16_t*>(src), static_cast<uint16_t*>(dst), out_shape, src_strides);
      break;
    case 4:
      strided_copy_typed(ctx, static_cast<const uint32_t*>(src), static_cast<uint32_t*>(dst), out_shape, src_strides);
      break;
    default:
      strided_copy_typed(ctx, static_cast<const uint64_t*>(src), static_cast<uint64_t*>(dst), out_shape, src_strides);
      break;
  }
}

class TransposeKernel : public Kernel {
 public:
  explicit TransposeKernel(const OrtKernelInfo* info) {
    oc_ = {"Transpose", node_name(info)};
    perm_ = attr_ints(info, "perm");
  }

  void compute(OrtKernelContext* ctx) override {
    const Tensor x = input(ctx, 0);
    const std::vector<int64_t> perm = transpose_perm(x.shape, perm_);
    const size_t rank = perm.size();
    const size_t es = element_size(x.type);
    const std::vector<int64_t> in_strides = contiguous_strides(x.shape);
    const std::vector<int64_t> shape = transpose_shape(x.shape, perm);
    std::vector<int64_t> strides(rank);
    for (size_t d = 0; d < rank; ++d) strides[d] = in_strides[perm[d]];
    Tensor y = output(ctx, 0, shape);
    if (y.size == 0) return;
    strided_copy(ctx, x.data, y.mutable_data, es, shape, strides);
  }

 private:
  std::vector<int64_t> perm_;
};

class ExpandKernel : public Kernel {
 public:
  explicit ExpandKernel(const OrtKernelInfo* info) { oc_ = {"Expand", node_name(info)}; }

  void compute(OrtKernelContext* ctx) override {
    const Tensor x = input(ctx, 0);
    const Tensor s = input(ctx, 1);
    if (s.shape.size() != 1) fail(std::string("'shape' must be 1-D, got shape ") + shape_str(s.shape));
    const std::vector<int64_t> shape = expand_shape(x.shape, read_ints(s, "shape"));
    const size_t es = element_size(x.type);
    Tensor y = output(ctx, 0, shape);
    if (y.size == 0) return;
    strided_copy(ctx, x.data, y.mutable_data, es, shape, broadcast_strides(x.shape, shape));
  }
};

// Slice (opset 13): starts/ends/axes/steps inputs, clamped per ONNX.
class SliceKernel : public Kernel {
 public:
  explicit SliceKernel(const OrtKernelInfo* info) { oc_ = {"Slice", node_name(info)}; }

  void compute(OrtKernelContext* ctx) override {
    const Tensor x = input(ctx, 0);
    const int64_t rank = static_cast<int64_t>(x.shape.size());
    const std::vector<int64_t> starts = read_ints(input(ctx, 1), "starts");
    const std::vector<int64_t> ends = read_ints(input(ctx, 2), "ends");
    std::vector<int64_t> axes, steps;
    const Tensor a = input(ctx, 3);
    const bool has_axes = a.present() && a.data != nullptr;
    if (has_axes) axes = read_ints(a, "axes");
    const Tensor st = input(ctx, 4);
    const bool has_steps = st.present() && st.data != nullptr;
    if (has_steps) steps = read_ints(st, "steps");
    const SliceGeometry g =
        slice_geometry(x.shape, starts, ends, has_axes ? &axes : nullptr, has_steps ? &steps : nullptr);
    const std::vector<int64_t>& begin = g.begin;
    const std::vector<int64_t>& step = g.step;
    const std::vector<int64_t>& shape = g.out;
    const size_t es = element_size(x.type);
    Tensor y = output(ctx, 0, shape);
    if (y.size == 0) return;
    const std::vector<int64_t> in_strides = contiguous_strides(x.shape);
    std::vector<int64_t> strides(rank);
    int64_t base = 0;
    for (int64_t d = 0; d < rank; ++d) {
      strides[d] = in_strides[d] * step[d];
      base += begin[d] * in_strides[d];
    }
    strided_copy(ctx, static_cast<const uint8_t*>(x.data) + base * static_cast<int64_t>(es), y.mutable_data, es,
                 shape, strides);
  }
};

class ConcatKernel : public Kernel {
 public:
  explicit ConcatKernel(const OrtKernelInfo* info) {
    oc_ = {"Concat", node_name(info)};
    if (!has_attr(info, "axis")) fail("attribute 'axis' is required");
    axis_ = attr_int(info, "axis", 0);
  }

  void compute(OrtKernelContext* ctx) override {
    size_t count = 0;
    check(g_ort->KernelContext_GetInputCount(ctx, &count), "KernelContext_GetInputCount");
    std::vector<Tensor> xs;
    for (size_t i = 0; i < count; ++i) xs.push_back(input(ctx, i));
    std::vector<const Tensor*> ptrs;
    for (const Tensor& t : xs) ptrs.push_back(&t);
    int64_t axis = axis_;
    const std::vector<int64_t> shape = concat_shape(ptrs, &axis);
    const int64_t rank = static_cast<int64_t>(shape.size());
    const size_t es = element_size(xs[0].type);
    Tensor y = output(ctx, 0, shape);
    if (y.size == 0) return;
    int64_t outer = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= shape[d];
    int64_t inner = 1;
    for (int64_t d = axis + 1; d < rank; ++d) inner *= shape[d];
    const int64_t out_row = shape[axis] * inner * static_cast<int64_t>(es);
    uint8_t* yp = static_cast<uint8_t*>(y.mutable_data);
    int64_t col = 0;
    for (const Tensor& t : xs) {
      const int64_t row = t.shape[axis] * inner * static_cast<int64_t>(es);
      const uint8_t* xp = static_cast<const uint8_t*>(t.data);
      if (row > 0) {
        for (int64_t o = 0; o < outer; ++o) std::memcpy(yp + o * out_row + col, xp + o * row, static_cast<size_t>(row));
      }
      col += row;
    }
  }

 private:
  int64_t axis_ = 0;
};

class GatherKernel : public Kernel {
 public:
  explicit GatherKernel(const OrtKernelInfo* info) {
    oc_ = {"Gather", node_name(info)};
    axis_ = attr_int(info, "axis", 0);
  }

  void compute(OrtKernelContext* ctx) override {
    const Tensor x = input(ctx, 0);
    const Tensor idx = input(ctx, 1);
    const int64_t rank = static_cast<int64_t>(x.shape.size());
    int64_t axis = axis_;
    const std::vector<int64_t> shape = gather_shape(x.shape, idx.shape, &axis);
    std::vector<int64_t> indices = read_ints(idx, "indices", /*one_d=*/false);
    const int64_t n = x.shape[axis];
    for (int64_t& i : indices) i = gather_index(i, n, axis);
    const size_t es = element_size(x.type);
    Tensor y = output(ctx, 0, shape);
    if (y.size == 0) return;
    int64_t outer = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= x.shape[d];
    int64_t inner = 1;
    for (int64_t d = axis + 1; d < rank; ++d) inner *= x.shape[d];
    const size_t block = static_cast<size_t>(inner) * es;
    const uint8_t* xp = static_cast<const uint8_t*>(x.data);
    uint8_t* yp = static_cast<uint8_t*>(y.mutable_data);
    const int64_t m = static_cast<int64_t>(indices.size());
    auto task = [&](size_t o) {
      const uint8_t* src = xp + static_cast<int64_t>(o) * n * static_cast<int64_t>(block);
      uint8_t* dst = yp + static_cast<int64_t>(o) * m * static_cast<int64_t>(block);
      for (int64_t j = 0; j < m; ++j) std::memcpy(dst + j * block, src + indices[j] * block, block);
    };
    parallel_ranges(ctx, outer, std::max<int64_t>(1, kGrainBytes / std::max<int64_t>(1, m * static_cast<int64_t>(block))),
                    [&](int64_t b, int64_t e) {
                      for (int64_t o = b; o < e; ++o) task(static_cast<size_t>(o));
                    });
  }

 private:
  int64_t axis_ = 0;
};

// GatherElements: y[c] = x[c with c[axis] replaced by indices[c]].
class GatherElementsKernel : public Kernel {
 public:
  explicit GatherElementsKernel(const OrtKernelInfo* info) {
    oc_ = {"GatherElements", node_name(info)};
    axis_ = attr_int(info, "axis", 0);
  }

  void compute(OrtKernelContext* ctx) override {
    const Tensor x = input(ctx, 0);
    const Tensor idx = input(ctx, 1);
    int64_t axis = axis_;
    const Shape shape = gather_elements_shape(x.shape, idx.shape, &axis);
    const std::vector<int64_t> indices = read_ints(idx, "indices", /*one_d=*/false);
    const size_t es = element_size(x.type);
    Tensor y = output(ctx, 0, shape);
    if (y.size == 0) return;
    const Shape x_strides = contiguous_strides(x.shape);
    const int64_t rank = static_cast<int64_t>(shape.size());
    const int64_t n = x.shape[axis];
    const uint8_t* xp = static_cast<const uint8_t*>(x.data);
    uint8_t* yp = static_cast<uint8_t*>(y.mutable_data);
    std::vector<int64_t> coord(static_cast<size_t>(rank), 0);
    for (int64_t i = 0; i < y.size; ++i) {
      int64_t off = 0;
      for (int64_t d = 0; d < rank; ++d) off += (d == axis ? gather_index(indices[i], n, axis) : coord[d]) * x_strides[d];
      std::memcpy(yp + i * es, xp + off * es, es);
      for (int64_t d = rank - 1; d >= 0 && ++coord[d] == shape[d]; --d) coord[d] = 0;
    }
  }

 private:
  int64_t axis_ = 0;
};

// GatherND: each index row of length k picks a slice of data (batch_dims leading dimensions shared).
class GatherNdKernel : public Kernel {
 public:
  explicit GatherNdKernel(const OrtKernelInfo* info) {
    oc_ = {"GatherND", node_name(info)};
    batch_dims_ = attr_int(info, "batch_dims", 0);
  }

  void compute(OrtKernelContext* ctx) override {
    const Tensor x = input(ctx, 0);
    const Tensor idx = input(ctx, 1);
    const GatherNdGeometry g = gather_nd_geometry(x.shape, idx, batch_dims_);
    const std::vector<int64_t> indices = read_ints(idx, "indices", /*one_d=*/false);
    const size_t es = element_size(x.type);
    Tensor y = output(ctx, 0, g.out);
    if (y.size == 0) return;
    const uint8_t* xp = static_cast<const uint8_t*>(x.data);
    uint8_t* yp = static_cast<uint8_t*>(y.mutable_data);
    const size_t block = static_cast<size_t>(g.slice) * es;
    for (int64_t r = 0; r < g.batch * g.rows; ++r) {
      int64_t off = (r / g.rows) * g.batch_stride;
      for (int64_t j = 0; j < g.k; ++j) off += gather_index(indices[r * g.k + j], g.index_dims[j], j) * g.dim_strides[j];
      std::memcpy(yp + r * block, xp + off * es, block);
    }
  }

 private:
  int64_t batch_dims_ = 0;
};

}  // namespace

std::vector<KernelDef> movement_kernels() {
  const TypeList d = data_types();
  return {
      {"", "Transpose", 13, kLatestOpset, {{"T", d}}, {}, {}, make_kernel<TransposeKernel>},
      {"", "Expand", 13, kLatestOpset, {{"T", d}}, {}, {}, make_kernel<ExpandKernel>},
      {"", "Slice", 13, kLatestOpset, {{"T", d}, {"Tind", index_types()}}, {}, {}, make_kernel<SliceKernel>},
      {"", "Concat", 13, kLatestOpset, {{"T", d}}, {}, {}, make_kernel<ConcatKernel>},
      {"", "Gather", 13, kLatestOpset, {{"T", d}, {"Tind", index_types()}}, {}, {}, make_kernel<GatherKernel>},
      {"", "GatherElements", 13, kLatestOpset, {{"T", d}, {"Tind", index_types()}}, {}, {},
       make_kernel<GatherElementsKernel>},
      {"", "GatherND", 13, kLatestOpset, {{"T", d}}, {}, {}, make_kernel<GatherNdKernel>},
  };
}

}  // namespace cpu_onnx
}  // namespace fp8ort
