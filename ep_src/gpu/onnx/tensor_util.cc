#include <algorithm>
#include <cstring>
#include <numeric>
#include <limits>
#include <string>

#include "gpu/onnx/tensor_ops.h"

namespace fp8ort {
namespace gpu_onnx {

int64_t element_size(ONNXTensorElementDataType t) {
  switch (t) {
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT64: return 8;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT32: return 4;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT16:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT16: return 2;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E4M3FN:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E4M3FNUZ:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E5M2:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E5M2FNUZ: return 1;
    default: return 0;
  }
}

int64_t require_element_size(const Tensor& t, const char* name) {
  const int64_t s = element_size(t.type);
  if (s == 0) {
    fail(std::string("input ") + name + " has element type " + type_name(t.type) + " (ONNX " +
             std::to_string(static_cast<int>(t.type)) + "), which the GPU kernels do not move; use a numeric, bool or "
             "FP8 tensor",
         ORT_NOT_IMPLEMENTED);
  }
  return s;
}

void require_index_type(const Tensor& indices) {
  if (indices.type != ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64 && indices.type != ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32) {
    fail(std::string("input indices must be int64 or int32; got ") + type_name(indices.type));
  }
}

Walk broadcast_walk(const std::vector<int64_t>& out, const std::vector<const std::vector<int64_t>*>& inputs) {
  Walk w;
  w.dims = out;
  w.offsets.assign(inputs.size(), 0);
  const size_t rank = out.size();
  for (const auto* in : inputs) {
    const std::vector<int64_t> cs = contiguous_strides(*in);
    std::vector<int64_t> s(rank, 0);
    for (size_t i = 0; i < in->size(); ++i) {
      const size_t d = rank - in->size() + i;
      s[d] = (*in)[i] == 1 ? 0 : cs[i];
    }
    w.strides.push_back(s);
  }
  return w;
}

fp8ort_nd to_device_walk(Walk w) {
  const size_t k = w.strides.size();
  if (k > FP8ORT_ONNX_MAX_OPERANDS) fail("internal: a walk with more than 3 operands", ORT_FAIL);
  Walk c;
  c.strides.assign(k, {});
  c.offsets = w.offsets;
  for (size_t d = 0; d < w.dims.size(); ++d) {
    if (w.dims[d] == 1) continue;  // a size-1 dim adds nothing to any offset
    bool merge = !c.dims.empty();
    for (size_t o = 0; merge && o < k; ++o) merge = c.strides[o].back() == w.strides[o][d] * w.dims[d];
    if (merge) {
      c.dims.back() *= w.dims[d];
      for (size_t o = 0; o < k; ++o) c.strides[o].back() = w.strides[o][d];
    } else {
      c.dims.push_back(w.dims[d]);
      for (size_t o = 0; o < k; ++o) c.strides[o].push_back(w.strides[o][d]);
    }
  }
  if (c.dims.size() > FP8ORT_ONNX_MAX_RANK) {
    fail("the GPU kernels walk at most " + std::to_string(FP8ORT_ONNX_MAX_RANK) + " dimensions after merging; this one needs " +
             std::to_string(c.dims.size()) + " (shape " + shape_str(w.dims) + "); reshape to fewer dimensions",
         ORT_NOT_IMPLEMENTED);
  }
  fp8ort_nd nd;
  std::memset(&nd, 0, sizeof(nd));
  nd.rank = static_cast<int32_t>(c.dims.size());
  for (size_t d = 0; d < c.dims.size(); ++d) {
    nd.dims[d] = c.dims[d];
    for (size_t o = 0; o < k; ++o) nd.strides[o][d] = c.strides[o][d];
  }
  for (size_t o = 0; o < k; ++o) nd.offsets[o] = c.offsets[o];
  return nd;
}

TransposePlan plan_transpose(const std::vector<int64_t>& shape, const std::vector<int64_t>& perm) {
  // Size-1 axes move nothing: drop them, numbering the remaining input axes 0, 1, ... (so that runs stay visible).
  std::vector<int64_t> compact(shape.size(), -1), dims;
  for (size_t a = 0; a < shape.size(); ++a) {
    if (shape[a] == 1) continue;
    compact[a] = static_cast<int64_t>(dims.size());
    dims.push_back(shape[a]);
  }
  std::vector<int64_t> kept;  // compact input axes, in output order
  for (int64_t p : perm) {
    if (compact[p] >= 0) kept.push_back(compact[p]);
  }
  std::vector<std::vector<int64_t>> groups;  // runs of consecutive input axes, in output order
  for (int64_t p : kept) {
    if (!groups.empty() && groups.back().back() + 1 == p) {
      groups.back().push_back(p);
    } else {
      groups.push_back({p});
    }
  }
  // Groups in input order give the coalesced input shape; their output order gives the coalesced perm.
  std::vector<size_t> by_input(groups.size());
  std::iota(by_input.begin(), by_input.end(), 0);
  std::sort(by_input.begin(), by_input.end(), [&](size_t a, size_t b) { return groups[a][0] < groups[b][0]; });
  const size_t r = groups.size();
  std::vector<int64_t> in_dims(r), cperm(r);
  for (size_t k = 0; k < r; ++k) {
    int64_t d = 1;
    for (int64_t axis : groups[by_input[k]]) d *= dims[axis];
    in_dims[k] = d;
    cperm[by_input[k]] = static_cast<int64_t>(k);
  }
  TransposePlan plan;
  if (r <= 1) return plan;  // the identity permutation after coalescing
  if (r == 2) {             // [R, C] -> [C, R]
    plan.kind = TransposePlan::kTiles;
    plan.rows = in_dims[0];
    plan.cols = in_dims[1];
    return plan;
  }
  if (r == 3 && cperm[0] == 0 && cperm[1] == 2 && cperm[2] == 1) {  // [B, R, C] -> [B, C, R]
    plan.kind = TransposePlan::kTiles;
    plan.batch = in_dims[0];
    plan.rows = in_dims[1];
    plan.cols = in_dims[2];
    return plan;
  }
  const std::vector<int64_t> in_strides = contiguous_strides(in_dims);
  Walk w;
  w.offsets = {0};
  w.strides.resize(1);
  for (size_t k = 0; k < r; ++k) {
    w.dims.push_back(in_dims[cperm[k]]);
    w.strides[0].push_back(in_strides[cperm[k]]);
  }
  plan.kind = TransposePlan::kStrided;
  plan.walk = to_device_walk(w);
  return plan;
}

}  // namespace gpu_onnx
}  // namespace fp8ort
