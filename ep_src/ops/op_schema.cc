#include "ops/op_schema.h"

#include <atomic>
#include <string>

#include "cpu/cpu_kernels.h"
#include "ops/op_common.h"
#if defined(FP8ORT_WITH_GPU)
#include "gpu/gpu_ops.h"
#endif

namespace fp8ort {
namespace {

struct Dims {
  std::vector<int64_t> values;     // -1 where unknown
  std::vector<std::string> names;  // symbolic names ("" where none)
};

bool input_dims(OrtShapeInferContext* ctx, size_t index, Dims* out) {
  size_t count = 0;
  check(g_ort->ShapeInferContext_GetInputCount(ctx, &count), "ShapeInferContext_GetInputCount");
  if (index >= count) return false;
  OrtTensorTypeAndShapeInfo* info = nullptr;
  OrtStatus* st = g_ort->ShapeInferContext_GetInputTypeShape(ctx, index, &info);
  if (st != nullptr) {
    g_ort->ReleaseStatus(st);
    return false;
  }
  size_t rank = 0;
  check(g_ort->GetDimensionsCount(info, &rank), "GetDimensionsCount");
  out->values.assign(rank, 0);
  check(g_ort->GetDimensions(info, out->values.data(), rank), "GetDimensions");
  std::vector<const char*> names(rank, nullptr);
  check(g_ort->GetSymbolicDimensions(info, names.data(), rank), "GetSymbolicDimensions");
  out->names.assign(rank, "");
  for (size_t i = 0; i < rank; ++i) {
    if (names[i] != nullptr) out->names[i] = names[i];
  }
  return true;
}

void set_output(OrtShapeInferContext* ctx, size_t index, ONNXTensorElementDataType type, const Dims& d) {
  OrtTensorTypeAndShapeInfo* info = nullptr;
  check(g_ort->CreateTensorTypeAndShapeInfo(&info), "CreateTensorTypeAndShapeInfo");
  std::vector<const char*> names;
  for (const std::string& n : d.names) names.push_back(n.c_str());
  OrtStatus* st = g_ort->SetTensorElementType(info, type);
  if (st == nullptr) st = g_ort->SetDimensions(info, d.values.data(), d.values.size());
  if (st == nullptr) st = g_ort->SetSymbolicDimensions(info, names.data(), names.size());
  if (st == nullptr) st = g_ort->ShapeInferContext_SetOutputTypeShape(ctx, index, info);
  g_ort->ReleaseTensorTypeAndShapeInfo(info);
  check(st, "setting the output shape");
}

const OrtOpAttr* infer_attr(OrtShapeInferContext* ctx, const char* name) {
  const OrtOpAttr* attr = nullptr;
  OrtStatus* st = g_ort->ShapeInferContext_GetAttribute(ctx, name, &attr);
  if (st != nullptr) {
    g_ort->ReleaseStatus(st);
    return nullptr;
  }
  return attr;
}

std::vector<int64_t> infer_ints(OrtShapeInferContext* ctx, const char* name, std::vector<int64_t> dflt) {
  const OrtOpAttr* attr = infer_attr(ctx, name);
  if (attr == nullptr) return dflt;
  int64_t buf[64];
  size_t bytes = 0;
  OrtStatus* st = g_ort->ReadOpAttr(attr, ORT_OP_ATTR_INTS, buf, sizeof(buf), &bytes);
  if (st != nullptr) {
    g_ort->ReleaseStatus(st);
    return dflt;
  }
  return std::vector<int64_t>(buf, buf + bytes / sizeof(int64_t));
}

int64_t infer_int(OrtShapeInferContext* ctx, const char* name, int64_t dflt) {
  const OrtOpAttr* attr = infer_attr(ctx, name);
  if (attr == nullptr) return dflt;
  int64_t v = dflt;
  size_t bytes = 0;
  OrtStatus* st = g_ort->ReadOpAttr(attr, ORT_OP_ATTR_INT, &v, sizeof(v), &bytes);
  if (st != nullptr) {
    g_ort->ReleaseStatus(st);
    return dflt;
  }
  return v;
}

std::string infer_string(OrtShapeInferContext* ctx, const char* name, const std::string& dflt) {
  const OrtOpAttr* attr = infer_attr(ctx, name);
  if (attr == nullptr) return dflt;
  char buf[256] = {};
  size_t len = 0;
  OrtStatus* st = g_ort->ReadOpAttr(attr, ORT_OP_ATTR_STRING, buf, sizeof(buf) - 1, &len);
  if (st != nullptr) {
    g_ort->ReleaseStatus(st);
    return dflt;
  }
  return std::string(buf);
}

// A fresh symbolic name for a dimension the inference cannot know.
std::string unknown_dim() {
  static std::atomic<int> counter{0};
  return "fp8ort_unk_" + std::to_string(counter++);
}

void infer_conv(OrtShapeInferContext* ctx, Dims& y) {
  Dims x, w;
  if (!input_dims(ctx, 0, &x) || !input_dims(ctx, 1, &w)) return;
  const bool nhwc = infer_string(ctx, "layout", "NCHW") == "NHWC";
  if (x.values.size() != 4) fail("input X must be 4-D; got rank " + std::to_string(x.values.size()));
  if (w.values.size() != 4) fail("input W must be 4-D [M, C/group, kH, kW]; got rank " + std::to_string(w.values.size()));
  std::vector<int64_t> strides = infer_ints(ctx, "strides", {1, 1});
  std::vector<int64_t> pads = infer_ints(ctx, "pads", {0, 0, 0, 0});
  std::vector<int64_t> dil = infer_ints(ctx, "dilations", {1, 1});
  const int64_t group = infer_int(ctx, "group", 1);
  if (strides.size() != 2 || pads.size() != 4 || dil.size() != 2) return;  // the kernel reports it
  const int64_t c = nhwc ? x.values[3] : x.values[1];
  // A hostile group (INT64_MIN from fuzzing) overflows the product: leave that to the kernel's group check.
  int64_t expect = 0;
  const bool overflow = __builtin_mul_overflow(w.values[1], group, &expect);
  if (c > 0 && w.values[1] > 0 && !overflow && expect != c) {
    fail("X has " + std::to_string(c) + " channels but W expects " + std::to_string(expect) +
         " (C/group=" + std::to_string(w.values[1]) + ", group=" + std::to_string(group) + ")");
  }
  const size_t hi = nhwc ? 1 : 2, wi = nhwc ? 2 : 3, ci = nhwc ? 3 : 1;
  y.values.assign(4, -1);
  y.names.assign(4, "");
  y.values[0] = x.values[0];
  y.names[0] = x.names[0];
  y.values[ci] = w.values[0];
  y.names[ci] = w.names[0];
  for (int a = 0; a < 2; ++a) {
    const size_t out = a == 0 ? hi : wi;
    const int64_t in = x.values[out];
    const int64_t k = w.values[2 + a];
    // Hostile attributes (pads, dilations near 2^62) overflow int64 here: leave the dim unknown, the kernel
    // reports them (UBSan found the unchecked sums).
    int64_t eff = 0, padded = 0;
    if (in < 0 || k < 0 || strides[a] < 1 || __builtin_mul_overflow(dil[a], k - 1, &eff) ||
        __builtin_add_overflow(eff, int64_t{1}, &eff) || __builtin_add_overflow(in, pads[a], &padded) ||
        __builtin_add_overflow(padded, pads[a + 2], &padded)) {
      continue;
    }
    if (padded >= eff) y.values[out] = (padded - eff) / strides[a] + 1;
  }
}

void infer_max_pool(OrtShapeInferContext* ctx, Dims& y) {
  Dims x;
  if (!input_dims(ctx, 0, &x)) return;
  MaxPoolAttrs a;
  a.kernel_shape = infer_ints(ctx, "kernel_shape", {});
  a.strides = infer_ints(ctx, "strides", a.strides);
  a.pads = infer_ints(ctx, "pads", a.pads);
  a.dilations = infer_ints(ctx, "dilations", a.dilations);
  a.ceil_mode = infer_int(ctx, "ceil_mode", 0) != 0;
  a.layout = infer_string(ctx, "layout", "NHWC");
  a.auto_pad = infer_string(ctx, "auto_pad", "NOTSET");
  check_max_pool_attrs(a);
  if (x.values.size() != 4) fail("input X must be 4-D (NHWC); got rank " + std::to_string(x.values.size()));
  // An unknown H or W is stood in for by its window's span (always valid), and stays unknown in Y.
  std::vector<int64_t> shape = {1, 1, 1, 1};
  for (int d = 0; d < 2; ++d) {
    const int64_t span = a.dilations[d] * (a.kernel_shape[d] - 1) + 1;
    shape[1 + d] = x.values[1 + d] >= 0 ? x.values[1 + d] : span;
  }
  const MaxPoolShape s = max_pool_shape(a, shape);
  y = x;  // N and C pass through, symbolic names too
  for (int d = 1; d <= 2; ++d) {
    if (x.values[d] >= 0) y.values[d] = s.y_shape[d];  // an unknown one gets a fresh name below
    y.names[d] = "";
  }
}

void infer_matmul(OrtShapeInferContext* ctx, Dims& y) {
  Dims a, b;
  if (!input_dims(ctx, 0, &a) || !input_dims(ctx, 1, &b)) return;
  if (a.values.empty()) fail("input A must have rank >= 1");
  if (b.values.size() != 2) fail("input B must be 2-D; got rank " + std::to_string(b.values.size()));
  const bool trans_b = infer_int(ctx, "transB", 0) != 0;
  const int64_t k = trans_b ? b.values[1] : b.values[0];
  const int64_t n = trans_b ? b.values[0] : b.values[1];
  if (a.values.back() > 0 && k > 0 && a.values.back() != k) {
    fail("input A has K=" + std::to_string(a.values.back()) + " but B needs K=" + std::to_string(k));
  }
  y = a;
  y.values.back() = n;
  y.names.back() = n < 0 ? (trans_b ? b.names[0] : b.names[1]) : "";
}

ONNXTensorElementDataType infer_input_type(OrtShapeInferContext* ctx, size_t index);

// Y [B, S, H*Dv] from Q [B, S, .] and V [., ., H*Dv], or from a packed Q [B, S, 3*H*D] (V absent): [B, S, H*D]; the
// kernel checks the rest.
void infer_attention(OrtShapeInferContext* ctx, Dims& y) {
  Dims q, v;
  if (!input_dims(ctx, 0, &q)) return;
  if (q.values.size() != 3) fail("input Q must be 3-D; got rank " + std::to_string(q.values.size()));
  if (infer_input_type(ctx, 2) == ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED) {  // packed Q, K and V
    y = q;
    y.values[2] = q.values[2] >= 0 ? q.values[2] / 3 : -1;
    y.names[2] = "";
    return;
  }
  if (!input_dims(ctx, 2, &v)) return;
  if (v.values.size() != 3) fail("input V must be 3-D; got rank " + std::to_string(v.values.size()));
  y = q;
  y.values[2] = v.values[2];
  y.names[2] = v.names[2];
}

// FP8GlobalAveragePool: [N, 1, 1, C] (NHWC) or [N, C, 1, 1] from a 4-D X.
void infer_global_average_pool(OrtShapeInferContext* ctx, Dims& y) {
  Dims x;
  if (!input_dims(ctx, 0, &x)) return;
  if (x.values.size() != 4) fail("input X must be 4-D; got rank " + std::to_string(x.values.size()));
  const size_t ci = infer_string(ctx, "layout", "NHWC") == "NCHW" ? 1 : 3;
  y.values.assign(4, 1);
  y.names.assign(4, "");
  for (size_t i : {size_t{0}, ci}) {
    y.values[i] = x.values[i];
    y.names[i] = x.names[i];
  }
}

ONNXTensorElementDataType infer_input_type(OrtShapeInferContext* ctx, size_t index) {
  size_t count = 0;
  check(g_ort->ShapeInferContext_GetInputCount(ctx, &count), "ShapeInferContext_GetInputCount");
  if (index >= count) return ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
  OrtTensorTypeAndShapeInfo* info = nullptr;
  OrtStatus* st = g_ort->ShapeInferContext_GetInputTypeShape(ctx, index, &info);
  if (st != nullptr) {
    g_ort->ReleaseStatus(st);
    return ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
  }
  ONNXTensorElementDataType t = ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
  check(g_ort->GetTensorElementType(info, &t), "GetTensorElementType");
  return t;
}

// Checks the element type of every given input, so that a wrong type fails when the model loads.
void check_input_types(OrtShapeInferContext* ctx, const OpSchema& op) {
  const OpKind kind = op.kind;
  for (size_t i = 0; i < op.inputs.size(); ++i) {
    const ONNXTensorElementDataType t = infer_input_type(ctx, i);
    if (t == ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED) continue;
    bool ok;
    const char* expected;
    if (kind == OpKind::kAttention && i < 3) {
      ok = is_attention_qkv_type(t);
      expected = kAttentionQkvTypes;
    } else if (kind == OpKind::kAttention) {
      ok = t == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT;
      expected = "float32";
    } else if (kind == OpKind::kLayerNorm && i < 3) {
      ok = t == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT || t == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16;
      expected = "float32 or float16";
    } else if (i == 0 && (kind == OpKind::kGlobalAveragePool || kind == OpKind::kChannelMul)) {
      ok = is_fp8_type(t);
      expected = "an FP8 type";
    } else if (i == 0 && kind == OpKind::kMaxPool) {
      ok = is_max_pool_type(t);
      expected = kMaxPoolTypes;
    } else if (i == 0 && kind == OpKind::kQuantize) {
      ok = is_high_precision_type(t);
      expected = "float32, float16 or bfloat16";
    } else if (i == 0 && kind == OpKind::kDequantize) {
      ok = is_fp8_type(t);
      expected = "an FP8 type";
    } else if (i == 0 || i == 5) {
      ok = is_high_precision_type(t) || is_fp8_type(t);
      expected = "float32, float16, bfloat16 or an FP8 type";
    } else if (i == 1 && (kind == OpKind::kConv || kind == OpKind::kMatMul)) {
      ok = is_fp8_type(t);
      expected = "an FP8 type (float8e4m3fn or float8e4m3fnuz weights)";
    } else {
      ok = t == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT;
      expected = "float32";
    }
    if (!ok) {
      fail(std::string("input ") + op.inputs[i] + " has element type " + type_name(t) + "; expected " + expected);
    }
  }
  if (kind == OpKind::kAttention) {  // K and V (when given) of Q's type
    const ONNXTensorElementDataType q = infer_input_type(ctx, 0);
    for (size_t i = 1; i < 3; ++i) {
      const ONNXTensorElementDataType t = infer_input_type(ctx, i);
      if (q != ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED && t != ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED && t != q) {
        fail(std::string("input ") + op.inputs[i] + " has element type " + type_name(t) + " but Q has " +
             type_name(q) + "; Q, K and V must be " + kAttentionQkvTypes);
      }
    }
  }
}

#if defined(FP8ORT_WITH_GPU)
constexpr KernelFactory kGpuConv = create_gpu_conv, kGpuMatMul = create_gpu_matmul,
                        kGpuQuantize = create_gpu_quantize, kGpuDequantize = create_gpu_dequantize,
                        kGpuMaxPool = create_gpu_max_pool, kGpuAttention = create_gpu_attention,
                        kGpuLayerNorm = create_gpu_layer_norm, kGpuGlobalAveragePool = create_gpu_global_average_pool,
                        kGpuChannelMul = create_gpu_channel_mul;
#else
constexpr KernelFactory kGpuConv = nullptr, kGpuMatMul = nullptr, kGpuQuantize = nullptr, kGpuDequantize = nullptr,
                        kGpuMaxPool = nullptr, kGpuAttention = nullptr, kGpuLayerNorm = nullptr,
                        kGpuGlobalAveragePool = nullptr, kGpuChannelMul = nullptr;
#endif

}  // namespace

const std::vector<OpSchema>& op_schemas() {
  constexpr auto kF32 = ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT;
  constexpr auto kE4M3 = ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E4M3FN;
  static const std::vector<OpSchema> table = {
      {OpKind::kConv, "FP8Conv", kOpSinceVersion, {"X", "W", "x_scale", "w_scale", "B", "Z", "z_scale", "y_scale"},
       4, 1, kF32, create_cpu_conv, kGpuConv},
      {OpKind::kMatMul, "FP8MatMul", kOpSinceVersion,
       {"A", "B", "a_scale", "b_scale", "C", "Z", "z_scale", "y_scale"},
       4, 1, kF32, create_cpu_matmul, kGpuMatMul},
      {OpKind::kQuantize, "FP8Quantize", kOpSinceVersion, {"X", "scale"}, 2, 1, kE4M3, create_cpu_quantize,
       kGpuQuantize},
      {OpKind::kDequantize, "FP8Dequantize", kOpSinceVersion, {"X", "scale"}, 2, 1, kF32, create_cpu_dequantize,
       kGpuDequantize},
      {OpKind::kMaxPool, "FP8MaxPool", kOpSinceVersion, {"X"}, 1, 1, ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED,
       create_cpu_max_pool, kGpuMaxPool},
      {OpKind::kAttention, "FP8Attention", kOpSinceVersion, {"Q", "K", "V", "attn_bias", "y_scale"}, 1, 1, kF32,
       create_cpu_attention, kGpuAttention},
      {OpKind::kLayerNorm, "FP8LayerNormalization", kOpSinceVersion, {"X", "Scale", "B", "y_scale"}, 2, 2, kE4M3,
       create_cpu_layer_norm, kGpuLayerNorm},
      {OpKind::kGlobalAveragePool, "FP8GlobalAveragePool", kOpSinceVersion, {"X", "x_scale"}, 2, 1, kF32,
       create_cpu_global_average_pool, kGpuGlobalAveragePool},
      {OpKind::kChannelMul, "FP8ChannelMul", kOpSinceVersion, {"X", "x_scale", "G", "y_scale"}, 3, 1, kE4M3,
       create_cpu_channel_mul, kGpuChannelMul},
  };
  return table;
}

void infer_type_and_shape(const OpSchema& op, OrtShapeInferContext* ctx) {
  int64_t out_type = op.default_output_type;
  if (op.default_output_type == ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED) {  // Y has X's type (FP8MaxPool)
    out_type = infer_input_type(ctx, 0);
  } else if (op.kind == OpKind::kGlobalAveragePool) {  // no output_dtype: always float32
    out_type = ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT;
  } else {
    const int64_t dflt = op.default_output_type;
    out_type = infer_int(ctx, "output_dtype", dflt);
    if (out_type < 1 || out_type > ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E5M2FNUZ) out_type = dflt;
  }
  Dims y;
  try {
    check_input_types(ctx, op);
    switch (op.kind) {
      case OpKind::kConv: infer_conv(ctx, y); break;
      case OpKind::kMatMul: infer_matmul(ctx, y); break;
      case OpKind::kMaxPool: infer_max_pool(ctx, y); break;
      case OpKind::kAttention: infer_attention(ctx, y); break;
      case OpKind::kGlobalAveragePool: infer_global_average_pool(ctx, y); break;
      default: input_dims(ctx, 0, &y); break;
    }
  } catch (const OpError&) {
    Dims x;
    const bool four_d = op.kind == OpKind::kConv || op.kind == OpKind::kMaxPool ||
                        op.kind == OpKind::kGlobalAveragePool || op.kind == OpKind::kChannelMul;
    const size_t rank = four_d
                            ? 4
                            : (input_dims(ctx, 0, &x) ? x.values.size() : 0);
    y.values.assign(rank, -1);
    y.names.assign(rank, "");
  }
  for (size_t i = 0; i < y.values.size(); ++i) {
    if (y.values[i] < 0 && y.names[i].empty()) y.names[i] = unknown_dim();
  }
  if (op.kind == OpKind::kLayerNorm) {  // Y with X's type, then Y_fp8 with output_dtype's
    set_output(ctx, 0, infer_input_type(ctx, 0), y);
    set_output(ctx, 1, static_cast<ONNXTensorElementDataType>(out_type), y);
    return;
  }
  set_output(ctx, 0, static_cast<ONNXTensorElementDataType>(out_type), y);
}

}  // namespace fp8ort
