#include "cpu/onnx/common.h"

#include <limits>

namespace fp8ort {
namespace cpu_onnx {

TypeList float_types() { return {kF32, kF16}; }
TypeList numeric_types() { return {kF32, kF16, kI64, kI32}; }
TypeList index_types() { return {kI32, kI64}; }

TypeList data_types() {
  return {kF32,
          kF16,
          kI64,
          kI32,
          kBool,
          kU8,
          ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8,
          ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16,
          ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E4M3FN,
          ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E4M3FNUZ,
          ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E5M2,
          ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E5M2FNUZ};
}

size_t element_size(ONNXTensorElementDataType t) {
  switch (t) {
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32: return 4;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE: return 8;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16: return 2;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E4M3FN:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E4M3FNUZ:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E5M2:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E5M2FNUZ: return 1;
    default:
      fail(std::string("element type ") + std::to_string(static_cast<int>(t)) +
           " is not supported by fp8ort's CPU kernels; cast the tensor to float32, float16, int64, int32, bool, "
           "uint8 or an FP8 type");
  }
}


int64_t normalize_axis(int64_t axis, int64_t rank, const char* what) {
  if (axis < -rank || axis >= rank) {
    fail(std::string(what) + " " + std::to_string(axis) + " is out of range for a rank-" +
         std::to_string(rank) + " input; use a value in [" + std::to_string(-rank) + ", " + std::to_string(rank) +
         ")");
  }
  return axis < 0 ? axis + rank : axis;
}

int64_t element_count(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) fail(std::string("negative dimension in shape ") + shape_str(shape) + "; dimensions must be >= 0");
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d) {
      fail(std::string("shape ") + shape_str(shape) + " has more elements than int64 can count; use a smaller shape");
    }
    n *= d;
  }
  return n;
}

std::vector<int64_t> read_ints(const Tensor& t, const char* name) {
  std::vector<int64_t> v(static_cast<size_t>(t.size));
  if (t.type == kI64) {
    const int64_t* p = static_cast<const int64_t*>(t.data);
    for (int64_t i = 0; i < t.size; ++i) v[i] = p[i];
  } else if (t.type == kI32) {
    const int32_t* p = static_cast<const int32_t*>(t.data);
    for (int64_t i = 0; i < t.size; ++i) v[i] = p[i];
  } else {
    fail(std::string("input '") + name + "' must be int64 or int32, got " + type_name(t.type));
  }
  return v;
}

std::vector<int64_t> broadcast_shape(const std::vector<std::vector<int64_t>>& shapes) {
  size_t rank = 0;
  for (const auto& s : shapes) rank = std::max(rank, s.size());
  std::vector<int64_t> out(rank, 1);
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
      fail(std::string("shapes ") + all + " cannot be broadcast (dimension " + std::to_string(lead + d) +
           "); make each dimension equal or 1");
    }
  }
  return out;
}

std::vector<int64_t> broadcast_strides(const std::vector<int64_t>& in, const std::vector<int64_t>& out) {
  std::vector<int64_t> strides(out.size(), 0);
  int64_t stride = 1;
  const size_t lead = out.size() - in.size();
  for (size_t d = in.size(); d-- > 0;) {
    strides[lead + d] = in[d] == 1 ? 0 : stride;
    stride *= in[d];
  }
  return strides;
}

FloatIn::FloatIn(const Tensor& t) {
  if (t.type == kF32) {
    ptr_ = static_cast<const float*>(t.data);
    return;
  }
  buf_.resize(static_cast<size_t>(t.size));
  const uint16_t* p = static_cast<const uint16_t*>(t.data);
  for (int64_t i = 0; i < t.size; ++i) buf_[i] = f16_to_f32(p[i]);
  ptr_ = buf_.data();
}

FloatOut::FloatOut(const Tensor& t) : t_(t) {
  if (t.type == kF32) {
    ptr_ = static_cast<float*>(t.mutable_data);
    return;
  }
  buf_.resize(static_cast<size_t>(t.size));
  ptr_ = buf_.data();
}

void FloatOut::finish() {
  if (t_.type == kF32) return;
  uint16_t* p = static_cast<uint16_t*>(t_.mutable_data);
  for (int64_t i = 0; i < t_.size; ++i) p[i] = f32_to_f16(buf_[i]);
}

}  // namespace cpu_onnx
}  // namespace fp8ort

namespace fp8ort {
namespace cpu_onnx {

void WindowAttrs::read(const OrtKernelInfo* info) {
  kernel_shape = attr_ints(info, "kernel_shape");
  strides = attr_ints(info, "strides");
  dilations = attr_ints(info, "dilations");
  pads = attr_ints(info, "pads");
  auto_pad = attr_string(info, "auto_pad", "NOTSET");
  ceil_mode = attr_int(info, "ceil_mode", 0) != 0;
}

Window make_window(const WindowAttrs& a, const std::vector<int64_t>& x_shape, const std::vector<int64_t>& kernel) {
  Window w;
  const int64_t rank = static_cast<int64_t>(x_shape.size()) - 2;
  if (rank < 1 || rank > kMaxSpatial) {
    fail(std::string("input shape ") + shape_str(x_shape) + " must be [N, C, D1...] with 1 to 3 spatial "
         "dimensions");
  }
  w.rank = static_cast<int>(rank);
  auto check_len = [&](const std::vector<int64_t>& v, const char* name, size_t want) {
    if (!v.empty() && v.size() != want) {
      fail(std::string("attribute '") + name + "' " + shape_str(v) + " must have " + std::to_string(want) +
           " entries for input shape " + shape_str(x_shape));
    }
  };
  check_len(kernel, "kernel_shape", rank);
  if (kernel.empty()) fail("attribute 'kernel_shape' is required");
  check_len(a.strides, "strides", rank);
  check_len(a.dilations, "dilations", rank);
  check_len(a.pads, "pads", 2 * rank);
  const int64_t off = kMaxSpatial - rank;  // right-align: unused leading dimensions have size 1
  for (int64_t d = 0; d < rank; ++d) {
    const int64_t i = off + d;
    w.in[i] = x_shape[2 + d];
    w.kernel[i] = kernel[d];
    w.stride[i] = a.strides.empty() ? 1 : a.strides[d];
    w.dilation[i] = a.dilations.empty() ? 1 : a.dilations[d];
    if (w.kernel[i] < 1 || w.stride[i] < 1 || w.dilation[i] < 1) {
      fail("kernel_shape, strides and dilations must be >= 1");
    }
    const int64_t span = w.dilation[i] * (w.kernel[i] - 1) + 1;
    if (a.auto_pad == "SAME_UPPER" || a.auto_pad == "SAME_LOWER") {
      w.out[i] = (w.in[i] + w.stride[i] - 1) / w.stride[i];
      const int64_t total = std::max<int64_t>(0, (w.out[i] - 1) * w.stride[i] + span - w.in[i]);
      w.pad_begin[i] = a.auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      w.pad_end[i] = total - w.pad_begin[i];
      continue;
    }
    if (a.auto_pad != "NOTSET" && a.auto_pad != "VALID") {
      fail(std::string("auto_pad '") + a.auto_pad + "' is not defined; use NOTSET, VALID, SAME_UPPER or SAME_LOWER");
    }
    if (a.auto_pad == "NOTSET" && !a.pads.empty()) {
      w.pad_begin[i] = a.pads[d];
      w.pad_end[i] = a.pads[d + rank];
      if (w.pad_begin[i] < 0 || w.pad_end[i] < 0) fail("pads must be >= 0");
    }
    const int64_t room = w.in[i] + w.pad_begin[i] + w.pad_end[i] - span;
    if (room < 0) {
      fail(std::string("the window (") + std::to_string(span) + " wide with dilation) is larger than the padded "
           "input (" + std::to_string(w.in[i] + w.pad_begin[i] + w.pad_end[i]) + ") in spatial dimension " +
           std::to_string(d));
    }
    w.out[i] = (a.ceil_mode ? (room + w.stride[i] - 1) / w.stride[i] : room / w.stride[i]) + 1;
    // ceil_mode: a last window that starts inside the end padding is dropped.
    if (a.ceil_mode && (w.out[i] - 1) * w.stride[i] >= w.in[i] + w.pad_begin[i]) --w.out[i];
  }
  return w;
}

}  // namespace cpu_onnx
}  // namespace fp8ort
