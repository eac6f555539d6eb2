#include "ops/onnx_shapes.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace fp8ort {

int64_t normalize_axis(int64_t axis, int64_t rank, const char* what) {
  if (axis < -rank || axis >= rank) {
    fail(std::string(what) + " " + std::to_string(axis) + " is out of range for a rank-" + std::to_string(rank) +
         " input; use a value in [" + std::to_string(-rank) + ", " + std::to_string(rank) + ")");
  }
  return axis < 0 ? axis + rank : axis;
}

int64_t element_count(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) fail("negative dimension in shape " + shape_str(shape) + "; dimensions must be >= 0");
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d) {
      fail("shape " + shape_str(shape) + " has more elements than int64 can count; use a smaller shape");
    }
    n *= d;
  }
  return n;
}

int64_t inner_size(const Shape& shape, int64_t axis) {
  int64_t inner = 1;
  for (size_t d = static_cast<size_t>(axis) + 1; d < shape.size(); ++d) inner *= shape[d];
  return inner;
}

Shape contiguous_strides(const Shape& shape) {
  Shape s(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) s[d - 1] = s[d] * shape[d];
  return s;
}

std::vector<int64_t> read_ints(const Tensor& t, const char* name, bool one_d) {
  if (t.type != ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64 && t.type != ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32) {
    fail(std::string("input '") + name + "' must be int64 or int32, got " + type_name(t.type));
  }
  if (one_d && t.shape.size() > 1) fail(std::string("input '") + name + "' must be 1-D, got shape " + shape_str(t.shape));
  if (t.size > 0 && t.data == nullptr) fail(std::string("input '") + name + "' has no data in CPU memory");
  std::vector<int64_t> v(static_cast<size_t>(t.size));
  for (int64_t i = 0; i < t.size; ++i) {
    v[i] = t.type == ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64 ? static_cast<const int64_t*>(t.data)[i]
                                                         : static_cast<const int32_t*>(t.data)[i];
  }
  return v;
}

Shape broadcast_shape(const std::vector<Shape>& shapes) {
  size_t rank = 0;
  for (const auto& s : shapes) rank = std::max(rank, s.size());
  Shape out(rank, 1);
  for (const auto& s : shapes) {
    const size_t lead = rank - s.size();
    for (size_t d = 0; d < s.size(); ++d) {
      int64_t& o = out[lead + d];
      if (s[d] == o || s[d] == 1) continue;
      if (o == 1) {
        o = s[d];
        continue;
      }
      std::string all;
      for (const auto& t : shapes) all += (all.empty() ? "" : " and ") + shape_str(t);
      fail("shapes " + all + " cannot be broadcast (dimension " + std::to_string(lead + d) + ": " +
           std::to_string(o) + " vs " + std::to_string(s[d]) + "); make each dimension equal or 1");
    }
  }
  return out;
}

Shape broadcast_strides(const Shape& in, const Shape& out) {
  Shape strides(out.size(), 0);
  int64_t stride = 1;
  const size_t lead = out.size() - in.size();
  for (size_t d = in.size(); d-- > 0;) {
    strides[lead + d] = in[d] == 1 ? 0 : stride;
    stride *= in[d];
  }
  return strides;
}

Shape reshape_shape(const Shape& in, const Shape& requested, bool allow_zero) {
  Shape shape = requested;
  int64_t infer = -1;
  int64_t known = 1;
  bool has_zero = false;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 0) {
      has_zero = true;
      if (!allow_zero) {
        if (d >= in.size()) {
          fail("shape " + shape_str(requested) + " copies dimension " + std::to_string(d) + " (0) but the input " +
               shape_str(in) + " has rank " + std::to_string(in.size()));
        }
        shape[d] = in[d];
      }
    }
    if (shape[d] == -1) {
      if (infer >= 0) fail("shape " + shape_str(requested) + " has more than one -1; use at most one");
      infer = static_cast<int64_t>(d);
      continue;
    }
    if (shape[d] < 0) fail("shape " + shape_str(requested) + " has a negative dimension other than -1");
    known = element_count({known, shape[d]});
  }
  const int64_t total = element_count(in);
  if (infer >= 0) {
    if (allow_zero && has_zero) {
      fail("shape " + shape_str(requested) + " has both 0 and -1 with allowzero=1, which ONNX forbids; use allowzero=0 "
           "or drop one of them");
    }
    if (known == 0 || total % known != 0) {
      fail("cannot infer the -1 in shape " + shape_str(requested) + " from input shape " + shape_str(in));
    }
    shape[infer] = total / known;
  }
  if (element_count(shape) != total) {
    fail("cannot reshape " + shape_str(in) + " (" + std::to_string(total) + " elements) to " + shape_str(shape) +
         "; the element counts must match");
  }
  return shape;
}

Shape flatten_shape(const Shape& in, int64_t axis) {
  const int64_t rank = static_cast<int64_t>(in.size());
  if (axis < -rank || axis > rank) {  // Flatten's axis may equal the rank
    fail("axis " + std::to_string(axis) + " is out of range for a rank-" + std::to_string(rank) +
         " input; use a value in [" + std::to_string(-rank) + ", " + std::to_string(rank) + "]");
  }
  if (axis < 0) axis += rank;
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < rank; ++d) (d < axis ? outer : inner) *= in[d];
  return {outer, inner};
}

Shape squeeze_shape(const Shape& in, const std::vector<int64_t>* axes) {
  const int64_t rank = static_cast<int64_t>(in.size());
  std::vector<bool> drop(in.size(), false);
  if (axes != nullptr) {
    for (int64_t axis : *axes) {
      const int64_t d = normalize_axis(axis, rank, "axes entry");
      if (in[d] != 1) {
        fail("cannot squeeze dimension " + std::to_string(d) + " of shape " + shape_str(in) + ": its size is not 1");
      }
      drop[d] = true;
    }
  } else {
    for (int64_t d = 0; d < rank; ++d) drop[d] = in[d] == 1;
  }
  Shape out;
  for (int64_t d = 0; d < rank; ++d) {
    if (!drop[d]) out.push_back(in[d]);
  }
  return out;
}

Shape unsqueeze_shape(const Shape& in, const std::vector<int64_t>& axes) {
  const int64_t out_rank = static_cast<int64_t>(in.size() + axes.size());
  std::vector<bool> inserted(static_cast<size_t>(out_rank), false);
  for (int64_t axis : axes) {
    const int64_t d = normalize_axis(axis, out_rank, "axes entry");
    if (inserted[d]) fail("axes " + shape_str(axes) + " name dimension " + std::to_string(d) + " twice");
    inserted[d] = true;
  }
  Shape out;
  size_t next = 0;
  for (int64_t d = 0; d < out_rank; ++d) out.push_back(inserted[d] ? 1 : in[next++]);
  return out;
}

Shape concat_shape(const std::vector<const Tensor*>& inputs, int64_t* axis) {
  if (inputs.empty()) fail("Concat needs at least one input");
  const Tensor& first = *inputs[0];
  const int64_t rank = static_cast<int64_t>(first.shape.size());
  *axis = normalize_axis(*axis, rank);
  Shape out = first.shape;
  out[*axis] = 0;
  for (const Tensor* t : inputs) {
    bool ok = t->type == first.type && t->shape.size() == first.shape.size();
    for (int64_t d = 0; ok && d < rank; ++d) ok = d == *axis || t->shape[d] == first.shape[d];
    if (!ok) {
      fail("input " + shape_str(t->shape) + " (" + type_name(t->type) + ") does not match " + shape_str(first.shape) +
           " (" + type_name(first.type) + ") outside axis " + std::to_string(*axis));
    }
    out[*axis] += t->shape[*axis];
  }
  element_count(out);
  return out;
}

Shape expand_shape(const Shape& in, const Shape& target) {
  for (int64_t d : target) {
    if (d < 0) fail("shape " + shape_str(target) + " has a negative dimension; dimensions must be >= 0");
  }
  const Shape out = broadcast_shape({in, target});
  element_count(out);
  return out;
}

std::vector<int64_t> transpose_perm(const Shape& in, const std::vector<int64_t>& perm_attr) {
  const size_t rank = in.size();
  std::vector<int64_t> perm = perm_attr;
  if (perm.empty()) {
    for (size_t d = 0; d < rank; ++d) perm.push_back(static_cast<int64_t>(rank - 1 - d));
  }
  if (perm.size() != rank) {
    fail("perm " + shape_str(perm) + " has " + std::to_string(perm.size()) + " entries but the input " +
         shape_str(in) + " has rank " + std::to_string(rank));
  }
  std::vector<bool> seen(rank, false);
  for (int64_t p : perm) {
    if (p < 0 || p >= static_cast<int64_t>(rank) || seen[p]) {
      fail("perm " + shape_str(perm) + " is not a permutation of 0.." + std::to_string(rank - 1));
    }
    seen[p] = true;
  }
  return perm;
}

Shape transpose_shape(const Shape& in, const std::vector<int64_t>& perm) {
  Shape out(perm.size());
  for (size_t d = 0; d < perm.size(); ++d) out[d] = in[perm[d]];
  return out;
}

SliceGeometry slice_geometry(const Shape& in, const std::vector<int64_t>& starts, const std::vector<int64_t>& ends,
                             const std::vector<int64_t>* axes_in, const std::vector<int64_t>* steps_in) {
  const int64_t rank = static_cast<int64_t>(in.size());
  if (starts.size() != ends.size()) {
    fail("'starts' has " + std::to_string(starts.size()) + " entries and 'ends' " + std::to_string(ends.size()) +
         "; give one per sliced axis");
  }
  std::vector<int64_t> axes, steps(starts.size(), 1);
  if (axes_in != nullptr) {
    axes = *axes_in;
  } else {
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  }
  if (steps_in != nullptr) steps = *steps_in;
  if (axes.size() != starts.size() || steps.size() != starts.size()) {
    fail("'axes' and 'steps' must have as many entries as 'starts' (" + std::to_string(starts.size()) + ")");
  }
  SliceGeometry g;
  g.begin.assign(in.size(), 0);
  g.step.assign(in.size(), 1);
  g.out = in;
  std::vector<bool> seen(in.size(), false);
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t d = normalize_axis(axes[i], rank, "axes entry");
    if (seen[d]) fail("axes " + shape_str(axes) + " name dimension " + std::to_string(d) + " twice");
    seen[d] = true;
    const int64_t step = steps[i];
    if (step == 0) fail("steps must not be 0");
    const int64_t n = in[d];
    int64_t s = starts[i], e = ends[i];
    if (s < 0) s += n;  // cannot overflow: n >= 0
    if (e < 0) e += n;
    int64_t count = 0;
    if (n == 0) {
      s = 0;  // nothing to take
    } else if (step > 0) {
      s = std::clamp<int64_t>(s, 0, n);
      e = std::clamp<int64_t>(e, 0, n);
      count = e > s ? (e - s - 1) / step + 1 : 0;
    } else {
      s = std::clamp<int64_t>(s, 0, n - 1);
      e = std::clamp<int64_t>(e, -1, n - 1);
      count = s > e ? (e - s + 1) / step + 1 : 0;  // ceil((s - e) / -step) without negating step
    }
    g.begin[d] = s;
    g.step[d] = step;
    g.out[d] = count;
  }
  return g;
}

Shape gather_shape(const Shape& data, const Shape& indices, int64_t* axis) {
  const int64_t rank = static_cast<int64_t>(data.size());
  if (rank == 0) fail("data must have rank >= 1; got a scalar");
  *axis = normalize_axis(*axis, rank);
  Shape out(data.begin(), data.begin() + *axis);
  out.insert(out.end(), indices.begin(), indices.end());
  out.insert(out.end(), data.begin() + *axis + 1, data.end());
  element_count(out);
  return out;
}

int64_t gather_index(int64_t index, int64_t n, int64_t axis) {
  if (index < -n || index >= n) {
    fail("index " + std::to_string(index) + " is out of range for axis " + std::to_string(axis) + " of size " +
         std::to_string(n) + "; indices must lie in [" + std::to_string(-n) + ", " + std::to_string(n) + ")");
  }
  return index < 0 ? index + n : index;
}

Shape gather_elements_shape(const Shape& data, const Shape& indices, int64_t* axis) {
  const int64_t rank = static_cast<int64_t>(data.size());
  if (rank == 0) fail("data must have rank >= 1; got a scalar");
  if (static_cast<int64_t>(indices.size()) != rank) {
    fail("indices " + shape_str(indices) + " must have the rank of data " + shape_str(data));
  }
  *axis = normalize_axis(*axis, rank);
  for (int64_t d = 0; d < rank; ++d) {
    if (d != *axis && indices[d] > data[d]) {
      fail("indices " + shape_str(indices) + " exceed data " + shape_str(data) + " in dimension " + std::to_string(d) +
           "; outside the gather axis indices may not be larger than data");
    }
  }
  element_count(indices);
  return indices;
}

GatherNdGeometry gather_nd_geometry(const Shape& data, const Tensor& index_tensor, int64_t batch_dims) {
  if (index_tensor.type != ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64) {
    fail(std::string("indices must be int64, got ") + type_name(index_tensor.type));
  }
  const Shape& indices = index_tensor.shape;
  const int64_t r = static_cast<int64_t>(data.size()), q = static_cast<int64_t>(indices.size());
  if (r < 1 || q < 1) fail("data " + shape_str(data) + " and indices " + shape_str(indices) + " need rank >= 1");
  if (batch_dims < 0 || batch_dims >= std::min(r, q)) {
    fail("batch_dims " + std::to_string(batch_dims) + " must lie in [0, min(rank(data), rank(indices)))");
  }
  GatherNdGeometry g;
  g.k = indices.back();
  if (g.k < 1 || g.k > r - batch_dims) {
    fail("the last dimension of indices " + shape_str(indices) + " must lie in [1, " + std::to_string(r - batch_dims) +
         "] (rank of data minus batch_dims)");
  }
  for (int64_t d = 0; d < batch_dims; ++d) {
    if (data[d] != indices[d]) {
      fail("data " + shape_str(data) + " and indices " + shape_str(indices) + " differ in batch dimension " +
           std::to_string(d));
    }
    g.batch *= data[d];
    g.out.push_back(data[d]);
  }
  for (int64_t d = batch_dims; d < q - 1; ++d) {
    g.rows *= indices[d];
    g.out.push_back(indices[d]);
  }
  g.index_dims.assign(data.begin() + batch_dims, data.begin() + batch_dims + g.k);
  g.dim_strides.assign(static_cast<size_t>(g.k), 0);
  for (int64_t d = batch_dims + g.k; d < r; ++d) {
    g.slice *= data[d];
    g.out.push_back(data[d]);
  }
  g.batch_stride = element_count(Shape(data.begin() + batch_dims, data.end()));  // bounds the strides' products
  int64_t step = g.slice;
  for (int64_t j = g.k - 1; j >= 0; --j) {
    g.dim_strides[j] = step;
    step *= g.index_dims[j];
  }
  element_count(g.out);
  return g;
}

namespace {

double range_scalar(const Tensor& t, const char* name, ONNXTensorElementDataType type, int64_t* as_int) {
  if (t.type != type) fail(std::string("input '") + name + "' has type " + type_name(t.type) + "; start, limit and delta need one type");
  if (t.size != 1 || t.shape.size() > 1) fail(std::string("input '") + name + "' must be a scalar, got shape " + shape_str(t.shape));
  if (t.data == nullptr) fail(std::string("input '") + name + "' has no data in CPU memory");
  switch (type) {
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT: return *static_cast<const float*>(t.data);
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32: *as_int = *static_cast<const int32_t*>(t.data); break;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64: *as_int = *static_cast<const int64_t*>(t.data); break;
    default: fail(std::string("type ") + type_name(type) + " is not supported; use float32, int32 or int64");
  }
  return static_cast<double>(*as_int);
}

}  // namespace

RangeArgs range_args(const Tensor& start, const Tensor& limit, const Tensor& delta) {
  RangeArgs r;
  r.type = start.type;
  int64_t ilimit = 0;
  r.start = range_scalar(start, "start", r.type, &r.istart);
  const double lim = range_scalar(limit, "limit", r.type, &ilimit);
  r.delta = range_scalar(delta, "delta", r.type, &r.idelta);
  if (!(std::isfinite(r.start) && std::isfinite(lim) && std::isfinite(r.delta))) fail("start, limit and delta must be finite");
  if (r.delta == 0) fail("delta must not be 0");
  double n = 0;
  if (r.type == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT) {
    n = std::ceil((lim - r.start) / r.delta);
  } else {  // exact: ceil of an integer quotient
    const long double span = static_cast<long double>(ilimit) - static_cast<long double>(r.istart);
    n = static_cast<double>(std::ceil(span / static_cast<long double>(r.idelta)));
  }
  constexpr double kMaxRange = 9.0e15;  // below 2^53: the count is exact in a double
  if (n > kMaxRange) fail("the range has " + std::to_string(n) + " elements; that is too many");
  r.count = n > 0 ? static_cast<int64_t>(n) : 0;
  return r;
}

MatMulShape matmul_shape(const Shape& a, const Shape& b) {
  if (a.empty() || b.empty()) {
    fail("inputs A " + shape_str(a) + " and B " + shape_str(b) + " must have rank >= 1");
  }
  Shape as = a, bs = b;
  const bool a_vec = as.size() == 1, b_vec = bs.size() == 1;
  if (a_vec) as.insert(as.begin(), 1);
  if (b_vec) bs.push_back(1);
  MatMulShape s;
  s.m = as[as.size() - 2];
  s.k = as.back();
  s.n = bs.back();
  if (bs[bs.size() - 2] != s.k) {
    fail("A " + shape_str(a) + " and B " + shape_str(b) + " do not agree on the inner dimension (" +
         std::to_string(s.k) + " vs " + std::to_string(bs[bs.size() - 2]) + ")");
  }
  s.a_batch.assign(as.begin(), as.end() - 2);
  s.b_batch.assign(bs.begin(), bs.end() - 2);
  s.batch = broadcast_shape({s.a_batch, s.b_batch});
  s.out = s.batch;
  if (!a_vec) s.out.push_back(s.m);
  if (!b_vec) s.out.push_back(s.n);
  element_count(s.out);
  return s;
}

GemmShape gemm_shape(const Shape& a, const Shape& b, const Shape* c, bool trans_a, bool trans_b) {
  if (a.size() != 2 || b.size() != 2) fail("A " + shape_str(a) + " and B " + shape_str(b) + " must be 2-D");
  GemmShape s;
  s.m = trans_a ? a[1] : a[0];
  s.k = trans_a ? a[0] : a[1];
  const int64_t kb = trans_b ? b[1] : b[0];
  s.n = trans_b ? b[0] : b[1];
  if (s.k != kb) {
    fail("A " + shape_str(a) + " and B " + shape_str(b) + " (transA=" + std::to_string(trans_a) +
         ", transB=" + std::to_string(trans_b) + ") do not agree on K (" + std::to_string(s.k) + " vs " +
         std::to_string(kb) + ")");
  }
  if (c != nullptr) {
    bool ok = c->size() <= 2;
    for (size_t i = 0; ok && i < c->size(); ++i) {
      const int64_t want = c->size() == 2 && i == 0 ? s.m : s.n;  // right-aligned against [M, N]
      ok = (*c)[i] == 1 || (*c)[i] == want;
    }
    if (!ok) {
      fail("C " + shape_str(*c) + " does not broadcast to [" + std::to_string(s.m) + ", " + std::to_string(s.n) +
           "]");
    }
  }
  return s;
}

void WindowAttrs::read(const OrtKernelInfo* info) {
  kernel_shape = attr_ints(info, "kernel_shape");
  strides = attr_ints(info, "strides");
  dilations = attr_ints(info, "dilations");
  pads = attr_ints(info, "pads");
  auto_pad = attr_string(info, "auto_pad", "NOTSET");
  ceil_mode = attr_int(info, "ceil_mode", 0) != 0;
}

std::vector<WindowAxis> window_geometry(const WindowAttrs& a, const Shape& x_shape, const Shape& kernel) {
  const int64_t rank = static_cast<int64_t>(x_shape.size()) - 2;
  if (rank < 1 || rank > kMaxWindowSpatial) {
    fail("input shape " + shape_str(x_shape) + " must be [N, C, D1...] with 1 to 3 spatial dimensions");
  }
  auto check_len = [&](const std::vector<int64_t>& v, const char* name, size_t want) {
    if (!v.empty() && v.size() != want) {
      fail(std::string("attribute '") + name + "' " + shape_str(v) + " must have " + std::to_string(want) +
           " entries for input shape " + shape_str(x_shape));
    }
  };
  if (kernel.empty()) fail("attribute 'kernel_shape' is required");
  check_len(kernel, "kernel_shape", rank);
  check_len(a.strides, "strides", rank);
  check_len(a.dilations, "dilations", rank);
  check_len(a.pads, "pads", 2 * rank);
  const bool same = a.auto_pad == "SAME_UPPER" || a.auto_pad == "SAME_LOWER";
  if (!same && a.auto_pad != "NOTSET" && a.auto_pad != "VALID") {
    fail("auto_pad '" + a.auto_pad + "' is not defined; use NOTSET, VALID, SAME_UPPER or SAME_LOWER");
  }
  std::vector<WindowAxis> axes(static_cast<size_t>(rank));
  for (int64_t d = 0; d < rank; ++d) {
    WindowAxis& w = axes[d];
    w.in = x_shape[2 + d];
    w.kernel = kernel[d];
    w.stride = a.strides.empty() ? 1 : a.strides[d];
    w.dilation = a.dilations.empty() ? 1 : a.dilations[d];
    if (w.kernel < 1 || w.stride < 1 || w.dilation < 1) {
      fail("kernel_shape, strides and dilations must be >= 1; got kernel " + shape_str(kernel) + ", strides " +
           shape_str(a.strides) + ", dilations " + shape_str(a.dilations));
    }
    const int64_t span = w.dilation * (w.kernel - 1) + 1;
    if (same) {
      w.out = (w.in + w.stride - 1) / w.stride;
      const int64_t total = std::max<int64_t>(0, (w.out - 1) * w.stride + span - w.in);
      w.pad_begin = a.auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      w.pad_end = total - w.pad_begin;
      continue;
    }
    if (a.auto_pad == "NOTSET" && !a.pads.empty()) {
      w.pad_begin = a.pads[d];
      w.pad_end = a.pads[d + rank];
      if (w.pad_begin < 0 || w.pad_end < 0) fail("pads must be >= 0; got " + shape_str(a.pads));
    }
    const int64_t room = w.in + w.pad_begin + w.pad_end - span;
    if (room < 0) {
      fail("the window (" + std::to_string(span) + " wide with dilation) is larger than the padded input (" +
           std::to_string(w.in + w.pad_begin + w.pad_end) + ") in spatial dimension " + std::to_string(d) +
           "; check kernel_shape, pads and dilations");
    }
    w.out = (a.ceil_mode ? (room + w.stride - 1) / w.stride : room / w.stride) + 1;
    // ceil_mode: a last window that starts inside the end padding is dropped.
    if (a.ceil_mode && (w.out - 1) * w.stride >= w.in + w.pad_begin) --w.out;
  }
  return axes;
}

ConvGeometry conv_geometry(const WindowAttrs& a, int64_t group, const Shape& x, const Shape& w, const Shape* b) {
  if (w.size() != x.size() || x.size() < 3) {
    fail("X " + shape_str(x) + " and W " + shape_str(w) +
         " must both be [N, C, spatial...] / [M, C/group, kernel...] of equal rank");
  }
  const Shape kernel(w.begin() + 2, w.end());
  if (!a.kernel_shape.empty() && a.kernel_shape != kernel) {
    fail("kernel_shape " + shape_str(a.kernel_shape) + " differs from W's spatial shape " + shape_str(kernel));
  }
  const int64_t c_in = x[1], c_out = w[0];
  if (group < 1 || c_in % group != 0 || c_out % group != 0 || w[1] * group != c_in) {
    fail("group " + std::to_string(group) + " does not fit X channels " + std::to_string(c_in) + " and W " +
         shape_str(w) + "; need C = W.shape[1] * group and M divisible by group");
  }
  if (b != nullptr && (b->size() != 1 || (*b)[0] != c_out)) {
    fail("B " + shape_str(*b) + " must be [" + std::to_string(c_out) + "], one bias per output channel");
  }
  ConvGeometry s;
  s.axes = window_geometry(a, x, kernel);
  s.out = {x[0], c_out};
  for (const WindowAxis& ax : s.axes) s.out.push_back(ax.out);
  return s;
}

int64_t norm_axis(int64_t axis, int64_t rank) {
  if (rank == 0) fail("input must have rank >= 1");
  return normalize_axis(axis, rank);
}

void check_norm_param(const Shape& param, const Shape& norm_shape) {
  if (param.size() > norm_shape.size() || broadcast_shape({param, norm_shape}) != norm_shape) {
    fail("Scale/B shape " + shape_str(param) + " does not broadcast to the normalized shape " +
         shape_str(norm_shape));
  }
}

std::vector<bool> reduced_axes(const std::vector<int64_t>& axes, int64_t rank) {
  std::vector<bool> reduce(static_cast<size_t>(rank), axes.empty());
  for (int64_t a : axes) reduce[normalize_axis(a, rank, "axes entry")] = true;
  return reduce;
}

std::vector<int64_t> split_sizes(const Shape& in, int64_t* axis, const std::vector<int64_t>* split, int64_t num_outputs,
                                 size_t outputs) {
  const int64_t rank = static_cast<int64_t>(in.size());
  if (rank == 0) fail("input must have rank >= 1; got a scalar");
  *axis = normalize_axis(*axis, rank);
  const int64_t dim = in[*axis];
  const int64_t n = static_cast<int64_t>(outputs);
  if (split != nullptr && num_outputs > 0) fail("give either the split input or the num_outputs attribute, not both");
  if (split != nullptr) {
    if (static_cast<int64_t>(split->size()) != n) {
      fail("split has " + std::to_string(split->size()) + " values but the node has " + std::to_string(n) +
           " outputs; give one size per output");
    }
    int64_t sum = 0;
    for (int64_t v : *split) {
      if (v < 0) fail("split sizes must be >= 0; got " + std::to_string(v));
      sum += v;
    }
    if (sum != dim) {
      fail("split sizes add up to " + std::to_string(sum) + " but axis " + std::to_string(*axis) + " of input " +
           shape_str(in) + " has " + std::to_string(dim) + " elements");
    }
    return *split;
  }
  if (num_outputs > 0) {
    if (num_outputs != n) {
      fail("num_outputs is " + std::to_string(num_outputs) + " but the node has " + std::to_string(n) + " outputs");
    }
    if (dim < n) {
      fail("axis " + std::to_string(*axis) + " of input " + shape_str(in) + " has fewer than num_outputs = " +
           std::to_string(n) + " elements");
    }
    const int64_t part = (dim + n - 1) / n;
    std::vector<int64_t> sizes(static_cast<size_t>(n), part);
    sizes.back() = dim - part * (n - 1);
    return sizes;
  }
  if (n == 0 || dim % n != 0) {
    fail("axis " + std::to_string(*axis) + " of input " + shape_str(in) + " (" + std::to_string(dim) +
         " elements) does not split into " + std::to_string(n) + " equal parts; give the split input");
  }
  return std::vector<int64_t>(static_cast<size_t>(n), dim / n);
}

PadMode pad_mode(const std::string& mode) {
  if (mode == "constant") return PadMode::kConstant;
  if (mode == "reflect") return PadMode::kReflect;
  if (mode == "edge") return PadMode::kEdge;
  if (mode == "wrap") return PadMode::kWrap;
  fail("mode '" + mode + "' is not defined; use 'constant', 'reflect', 'edge' or 'wrap'");
}

PadGeometry pad_geometry(const Shape& in, const std::vector<int64_t>& pads, const std::vector<int64_t>* axes,
                         PadMode mode) {
  const int64_t rank = static_cast<int64_t>(in.size());
  std::vector<int64_t> all_axes;
  if (axes == nullptr) {
    for (int64_t d = 0; d < rank; ++d) all_axes.push_back(d);
    axes = &all_axes;
  }
  const int64_t n = static_cast<int64_t>(axes->size());
  if (static_cast<int64_t>(pads.size()) != 2 * n) {
    fail("pads has " + std::to_string(pads.size()) + " values; it needs 2 * " + std::to_string(n) +
         " (a begin and an end for each padded axis of input " + shape_str(in) + ")");
  }
  Shape begin(static_cast<size_t>(rank), 0), end(static_cast<size_t>(rank), 0);
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (int64_t j = 0; j < n; ++j) {
    const int64_t a = normalize_axis((*axes)[j], rank, "axes entry");
    if (seen[a]) fail("axis " + std::to_string(a) + " appears twice in axes");
    seen[a] = true;
    begin[a] = pads[j];
    end[a] = pads[j + n];
  }
  PadGeometry g;
  g.crop.resize(static_cast<size_t>(rank));
  g.len.resize(static_cast<size_t>(rank));
  g.before.resize(static_cast<size_t>(rank));
  g.out.resize(static_cast<size_t>(rank));
  for (int64_t d = 0; d < rank; ++d) {
    const int64_t cut = std::max<int64_t>(0, -begin[d]) + std::max<int64_t>(0, -end[d]);
    if (cut > in[d]) {
      fail("pads " + std::to_string(begin[d]) + " and " + std::to_string(end[d]) + " crop more than the " +
           std::to_string(in[d]) + " elements of axis " + std::to_string(d));
    }
    g.crop[d] = std::max<int64_t>(0, -begin[d]);
    g.len[d] = in[d] - cut;
    g.before[d] = std::max<int64_t>(0, begin[d]);
    const int64_t after = std::max<int64_t>(0, end[d]);
    const int64_t grow = g.before[d] + after;
    if (grow > 0 && mode != PadMode::kConstant && g.len[d] == 0) {
      fail("axis " + std::to_string(d) + " has no elements (after cropping) to pad from in mode " +
           (mode == PadMode::kEdge ? "'edge'" : mode == PadMode::kReflect ? "'reflect'" : "'wrap'") +
           "; use mode 'constant'");
    }
    if (grow > 0 && mode == PadMode::kReflect && std::max(g.before[d], after) > g.len[d] - 1) {
      fail("reflect pads " + std::to_string(g.before[d]) + " and " + std::to_string(after) + " of axis " +
           std::to_string(d) + " must be smaller than its " + std::to_string(g.len[d]) + " elements (after cropping)");
    }
    if (g.len[d] > std::numeric_limits<int64_t>::max() - grow) fail("padded shape overflows int64");
    g.out[d] = g.len[d] + grow;
  }
  element_count(g.out);
  return g;
}

int64_t cumsum_axis(const Tensor& axis, int64_t rank) {
  const std::vector<int64_t> v = read_ints(axis, "axis");
  if (v.size() != 1) fail("input 'axis' must hold one value (a scalar); got shape " + shape_str(axis.shape));
  if (rank == 0) fail("input must have rank >= 1; got a scalar");
  return normalize_axis(v[0], rank);
}

int64_t batch_norm_channels(const Shape& x, const Shape& scale, const Shape& b, const Shape& mean, const Shape& var) {
  if (x.size() < 2) fail("X must have rank >= 2 ([N, C, ...]); got shape " + shape_str(x));
  const int64_t c = x[1];
  const char* names[4] = {"scale", "B", "mean", "var"};
  const Shape* shapes[4] = {&scale, &b, &mean, &var};
  for (int k = 0; k < 4; ++k) {
    if (shapes[k]->size() != 1 || (*shapes[k])[0] != c) {
      fail(std::string("input ") + names[k] + " has shape " + shape_str(*shapes[k]) + "; it must be [" +
           std::to_string(c) + "], one value per channel of X " + shape_str(x));
    }
  }
  return c;
}

ScatterNdGeometry scatter_nd_geometry(const Shape& data, const Tensor& index_tensor, const Shape& updates) {
  if (index_tensor.type != ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64) {
    fail(std::string("indices must be int64, got ") + type_name(index_tensor.type));
  }
  const Shape& indices = index_tensor.shape;
  const int64_t r = static_cast<int64_t>(data.size()), q = static_cast<int64_t>(indices.size());
  if (r < 1 || q < 1) fail("data " + shape_str(data) + " and indices " + shape_str(indices) + " need rank >= 1");
  ScatterNdGeometry g;
  g.k = indices.back();
  if (g.k < 1 || g.k > r) {
    fail("the last dimension of indices " + shape_str(indices) + " must lie in [1, " + std::to_string(r) +
         "] (the rank of data)");
  }
  Shape want(indices.begin(), indices.end() - 1);
  for (int64_t d = 0; d < q - 1; ++d) g.rows *= indices[d];
  for (int64_t d = g.k; d < r; ++d) {
    g.slice *= data[d];
    want.push_back(data[d]);
  }
  if (updates != want) {
    fail("updates has shape " + shape_str(updates) + "; with data " + shape_str(data) + " and indices " +
         shape_str(indices) + " it must be " + shape_str(want));
  }
  g.index_dims.assign(data.begin(), data.begin() + g.k);
  g.dim_strides.assign(static_cast<size_t>(g.k), 0);
  int64_t step = g.slice;
  for (int64_t j = g.k - 1; j >= 0; --j) {
    g.dim_strides[j] = step;
    step *= g.index_dims[j];
  }
  return g;
}

void check_batch_norm_inference(const OrtKernelInfo* info) {
  if (attr_int(info, "training_mode", 0) != 0) {
    fail("training_mode = 1 is not implemented (inference only); export the model in eval mode", ORT_NOT_IMPLEMENTED);
  }
  size_t outputs = 0;
  check(g_ort->KernelInfo_GetOutputCount(info, &outputs), "KernelInfo_GetOutputCount");
  if (outputs > 1) {
    fail("the node has " + std::to_string(outputs) + " outputs; the inference form has Y only (the running and "
         "saved statistics are training outputs)", ORT_NOT_IMPLEMENTED);
  }
}

void check_scatter_nd_reduction(const OrtKernelInfo* info) {
  const std::string reduction = attr_string(info, "reduction", "none");
  if (reduction != "none") {
    fail("reduction '" + reduction + "' is not implemented on fp8ort's EP (only 'none')", ORT_NOT_IMPLEMENTED);
  }
}

}  // namespace fp8ort
