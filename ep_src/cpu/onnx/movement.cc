// Data movement ONNX ops on the CPU device: Transpose, Expand, Slice (strided copies), Concat, Split, Pad, Gather,
// GatherElements, GatherND, ScatterND. Elements move as bytes of their width, so FP8, bool and integer tensors go
// through the same code.
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
    const size_t es = element_size(xs[0].type);
    Tensor y = output(ctx, 0, shape);
    if (y.size == 0) return;
    int64_t outer = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= shape[d];
    int64_t inner = inner_size(shape, axis);
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

// Split (13: sizes from the split input or equal parts; 18: or num_outputs parts, the last one smaller).
class SplitKernel : public Kernel {
 public:
  explicit SplitKernel(const OrtKernelInfo* info) {
    oc_ = {"Split", node_name(info)};
    axis_ = attr_int(info, "axis", 0);
    num_outputs_ = attr_int(info, "num_outputs", 0);
    if (has_attr(info, "num_outputs") && num_outputs_ < 1) {
      fail("attribute num_outputs must be >= 1; got " + std::to_string(num_outputs_));
    }
  }

  void compute(OrtKernelContext* ctx) override {
    const Tensor x = input(ctx, 0);
    size_t n_out = 0;
    check(g_ort->KernelContext_GetOutputCount(ctx, &n_out), "KernelContext_GetOutputCount");
    const Tensor s = input(ctx, 1);
    const bool has_split = s.present() && s.data != nullptr;
    std::vector<int64_t> split;
    if (has_split) split = read_ints(s, "split");
    int64_t axis = axis_;
    const std::vector<int64_t> sizes = split_sizes(x.shape, &axis, has_split ? &split : nullptr, num_outputs_, n_out);
    const size_t es = element_size(x.type);
    int64_t outer = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= x.shape[d];
    const int64_t inner = static_cast<int64_t>(es) * inner_size(x.shape, axis);
    const int64_t in_row = x.shape[axis] * inner;
    const uint8_t* xp = static_cast<const uint8_t*>(x.data);
    int64_t col = 0;  // bytes into each input row
    for (size_t k = 0; k < n_out; ++k) {
      std::vector<int64_t> shape = x.shape;
      shape[axis] = sizes[k];
      Tensor y = output(ctx, k, shape);
      const int64_t row = sizes[k] * inner;
      if (y.size > 0) {
        uint8_t* yp = static_cast<uint8_t*>(y.mutable_data);
        for (int64_t o = 0; o < outer; ++o) std::memcpy(yp + o * row, xp + o * in_row + col, static_cast<size_t>(row));
      }
      col += row;
    }
  }

 private:
  int64_t axis_ = 0;
  int64_t num_outputs_ = 0;
};

template <class E>
void pad_typed(OrtKernelContext* ctx, const E* src, E* dst, E value, const PadGeometry& g, const Shape& in_strides,
               PadMode mode) {
  const int64_t rank = static_cast<int64_t>(g.out.size());
  const int64_t last = rank - 1;
  const int64_t inner = g.out[last];
  int64_t rows = 1;
  for (int64_t d = 0; d < last; ++d) rows *= g.out[d];
  // One output row (the last axis) at a time: the outer coordinates give the source row, or the constant.
  auto run_rows = [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      int64_t rem = r, base = 0;
      bool constant = false;
      for (int64_t d = last - 1; d >= 0; --d) {
        const int64_t c = rem % g.out[d];
        rem /= g.out[d];
        const int64_t j = pad_source(c, g.before[d], g.len[d], mode);
        if (j < 0) constant = true;
        base += (g.crop[d] + j) * in_strides[d];
      }
      E* y = dst + r * inner;
      if (constant) {
        for (int64_t o = 0; o < inner; ++o) y[o] = value;
        continue;
      }
      const E* x = src + base + g.crop[last];
      for (int64_t o = 0; o < inner; ++o) {
        const int64_t j = pad_source(o, g.before[last], g.len[last], mode);
        y[o] = j < 0 ? value : x[j];
      }
    }
  };
  const int64_t row_bytes = std::max<int64_t>(1, inner * static_cast<int64_t>(sizeof(E)));
  parallel_ranges(ctx, rows, std::max<int64_t>(1, kGrainBytes / row_bytes), run_rows);
}

// Pad (13: pads and constant_value inputs; 18: axes input; 19: wrap mode). pads and axes are read in CPU memory.
class PadKernel : public Kernel {
 public:
  explicit PadKernel(const OrtKernelInfo* info) {
    oc_ = {"Pad", node_name(info)};
    mode_ = pad_mode(attr_string(info, "mode", "constant"));
  }

  void compute(OrtKernelContext* ctx) override {
    const Tensor x = input(ctx, 0);
    const Tensor p = input(ctx, 1);
    if (!p.present()) fail("input 'pads' is required");
    const std::vector<int64_t> pads = read_ints(p, "pads");
    const Tensor a = input(ctx, 3);
    const bool has_axes = a.present() && a.data != nullptr;
    std::vector<int64_t> axes;
    if (has_axes) axes = read_ints(a, "axes");
    // A scalar is padded as shape [1] with no pads.
    const bool scalar = x.shape.empty();
    const Shape in_shape = scalar ? Shape{1} : x.shape;
    const PadGeometry g = pad_geometry(x.shape, pads, has_axes ? &axes : nullptr, mode_);
    const size_t es = element_size(x.type);
    uint64_t value = 0;
    const Tensor v = input(ctx, 2);
    if (v.present() && v.data != nullptr && mode_ == PadMode::kConstant) {
      if (v.type != x.type) {
        fail(std::string("constant_value is ") + type_name(v.type) + " but data is " + type_name(x.type) +
             "; give it data's type");
      }
      if (v.size > 1) fail("constant_value must hold one value; got shape " + shape_str(v.shape));
      if (v.size == 1) std::memcpy(&value, v.data, es);
    }
    Tensor y = output(ctx, 0, g.out);
    if (y.size == 0) return;
    if (x.size == 0) {  // an empty input padded with constants: every element is the value
      uint8_t* yp = static_cast<uint8_t*>(y.mutable_data);
      for (int64_t i = 0; i < y.size; ++i) std::memcpy(yp + i * static_cast<int64_t>(es), &value, es);
      return;
    }
    PadGeometry run = g;
    if (scalar) run = {{0}, {1}, {0}, {1}};
    const Shape in_strides = contiguous_strides(in_shape);
    switch (es) {
      case 1:
        pad_typed(ctx, static_cast<const uint8_t*>(x.data), static_cast<uint8_t*>(y.mutable_data),
                  static_cast<uint8_t>(value), run, in_strides, mode_);
        break;
      case 2:
        pad_typed(ctx, static_cast<const uint16_t*>(x.data), static_cast<uint16_t*>(y.mutable_data),
                  static_cast<uint16_t>(value), run, in_strides, mode_);
        break;
      case 4:
        pad_typed(ctx, static_cast<const uint32_t*>(x.data), static_cast<uint32_t*>(y.mutable_data),
                  static_cast<uint32_t>(value), run, in_strides, mode_);
        break;
      default:
        pad_typed(ctx, static_cast<const uint64_t*>(x.data), static_cast<uint64_t*>(y.mutable_data), value, run,
                  in_strides, mode_);
        break;
    }
  }

 private:
  PadMode mode_ = PadMode::kConstant;
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
    int64_t inner = inner_size(x.shape, axis);
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

// ScatterND (reduction "none"): the output is data with each index row's slice replaced by the matching updates.
class ScatterNdKernel : public Kernel {
 public:
  explicit ScatterNdKernel(const OrtKernelInfo* info) {
    oc_ = {"ScatterND", node_name(info)};
    check_scatter_nd_reduction(info);
  }

  void compute(OrtKernelContext* ctx) override {
    const Tensor x = input(ctx, 0);
    const Tensor idx = input(ctx, 1);
    const Tensor upd = input(ctx, 2);
    if (upd.type != x.type) {
      fail(std::string("updates is ") + type_name(upd.type) + " but data is " + type_name(x.type) +
           "; give them one type");
    }
    const ScatterNdGeometry g = scatter_nd_geometry(x.shape, idx, upd.shape);
    const std::vector<int64_t> indices = read_ints(idx, "indices", /*one_d=*/false);
    const size_t es = element_size(x.type);
    Tensor y = output(ctx, 0, x.shape);
    std::vector<int64_t> offsets(static_cast<size_t>(g.rows), 0);
    for (int64_t r = 0; r < g.rows; ++r) {
      for (int64_t j = 0; j < g.k; ++j) {
        offsets[r] += gather_index(indices[r * g.k + j], g.index_dims[j], j) * g.dim_strides[j];
      }
    }
    if (y.size == 0) return;
    uint8_t* yp = static_cast<uint8_t*>(y.mutable_data);
    if (yp != x.data) std::memcpy(yp, x.data, static_cast<size_t>(x.size) * es);
    const size_t block = static_cast<size_t>(g.slice) * es;
    const uint8_t* up = static_cast<const uint8_t*>(upd.data);
    for (int64_t r = 0; r < g.rows; ++r) std::memcpy(yp + offsets[r] * es, up + r * block, block);
  }
};

}  // namespace

std::vector<KernelDef> movement_kernels() {
  const TypeList d = data_types();
  return {
      {"", "Transpose", 13, kLatestOpset, {{"T", d}}, {}, {}, make_kernel<TransposeKernel>},
      {"", "Expand", 13, kLatestOpset, {{"T", d}}, {}, {}, make_kernel<ExpandKernel>},
      {"", "Slice", 13, kLatestOpset, {{"T", d}, {"Tind", index_types()}}, {}, {}, make_kernel<SliceKernel>},
      {"", "Concat", 13, kLatestOpset, {{"T", d}}, {}, {}, make_kernel<ConcatKernel>},
      {"", "Split", 13, kLatestOpset, {{"T", d}}, {}, {}, make_kernel<SplitKernel>},
      // Pad 18 adds the axes input (type Tind), 19 the wrap mode (taken from 13 on: one mapping), 21 more types;
      // 23 is not checked
      {"", "Pad", 13, 17, {{"T", d}}, {}, {}, make_kernel<PadKernel>},
      {"", "Pad", 18, 22, {{"T", d}, {"Tind", index_types()}}, {}, {}, make_kernel<PadKernel>},
      {"", "Gather", 13, kLatestOpset, {{"T", d}, {"Tind", index_types()}}, {}, {}, make_kernel<GatherKernel>},
      {"", "GatherElements", 13, kLatestOpset, {{"T", d}, {"Tind", index_types()}}, {}, {},
       make_kernel<GatherElementsKernel>},
      {"", "GatherND", 13, kLatestOpset, {{"T", d}}, {}, {}, make_kernel<GatherNdKernel>},
      // ScatterND 16 adds the reduction attribute, 18 its max/min values ("none" only here)
      {"", "ScatterND", 11, kLatestOpset, {{"T", d}}, {}, {}, make_kernel<ScatterNdKernel>},
  };
}

}  // namespace cpu_onnx
}  // namespace fp8ort
