#include "ops/op_common.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <cmath>
#include <mutex>
#include <optional>

#include "ops/onnx_shapes.h"

// The epilogue rounds after every float32 step as the reference does: this file is built with -ffp-contract=off
// (CMakeLists.txt) so that no multiply-add, e.g. HardSigmoid's alpha * y + beta, becomes one fused instruction.

namespace fp8ort {
namespace {

// HardSwish is HardSigmoid with these fixed parameters (ONNX HardSwish).
constexpr float kHardSwishAlpha = 1.0f / 6.0f;
constexpr float kHardSwishBeta = 0.5f;
constexpr double kSqrt2 = 1.4142135623730951;           // sqrt(2) rounded to double, as math.sqrt(2.0)
constexpr double kPi = 3.141592653589793;               // math.pi
constexpr double kGeluTanhCoeff = 0.044715;
// Largest pad or dilation FP8Conv accepts: far beyond any real model, small enough that the padded extent and the
// dilated kernel are computed without int64 overflow.
constexpr int64_t kMaxPadOrDilation = (int64_t{1} << 31) - 1;

struct ActivationInfo {
  const char* name;
  Activation kind;
  bool has_params;  // Clip and HardSigmoid read activation_alpha/activation_beta
  float default_alpha;
  float default_beta;
};

constexpr ActivationInfo kActivations[] = {
    {"", Activation::kNone, false, 0.0f, 0.0f},
    {"Relu", Activation::kRelu, false, 0.0f, 0.0f},
    {"Clip", Activation::kClip, true, 0.0f, 6.0f},
    {"Sigmoid", Activation::kSigmoid, false, 0.0f, 0.0f},
    {"Silu", Activation::kSilu, false, 0.0f, 0.0f},
    {"HardSigmoid", Activation::kHardSigmoid, true, 0.2f, 0.5f},
    {"HardSwish", Activation::kHardSwish, false, kHardSwishAlpha, kHardSwishBeta},
    {"Gelu", Activation::kGelu, false, 0.0f, 0.0f},
    {"GeluTanh", Activation::kGeluTanh, false, 0.0f, 0.0f},
};

std::string allowed_activations() {
  std::string s;
  for (const ActivationInfo& a : kActivations) s += std::string(s.empty() ? "\"" : ", \"") + a.name + "\"";
  return s;
}

// t = alpha * y, then t + beta, each rounded to float32, clamped to [0, 1]; NaN stays NaN.
inline float hard_sigmoid(float y, float alpha, float beta) {
  float t = y * alpha;
  t = t + beta;
  return t < 0.0f ? 0.0f : (t > 1.0f ? 1.0f : t);
}

// A float attribute, or nothing when the node lacks it; one of another type is an error.
std::optional<float> attr_float_opt(const OrtKernelInfo* info, const char* name) {
  float v = 0.0f;
  OrtStatus* st = g_ort->KernelInfoGetAttribute_float(info, name, &v);
  if (st == nullptr) return v;
  g_ort->ReleaseStatus(st);
  if (has_attr(info, name)) {
    fail(std::string("attribute ") + name + " must be a float attribute (ONNX AttributeProto FLOAT); write e.g. 6.0, "
         "not 6");
  }
  return std::nullopt;
}

}  // namespace

const char* activation_name(Activation a) {
  for (const ActivationInfo& info : kActivations) {
    if (info.kind == a) return info.name;
  }
  return "?";
}

void apply_activation(const ActivationSpec& act, float* v, int64_t n) {
  const float a = act.alpha, b = act.beta;
  switch (act.kind) {
    case Activation::kNone: return;
    case Activation::kRelu:
      for (int64_t q = 0; q < n; ++q) v[q] = v[q] < 0.0f ? 0.0f : v[q];
      return;
    case Activation::kClip:
      for (int64_t q = 0; q < n; ++q) v[q] = v[q] < a ? a : (v[q] > b ? b : v[q]);
      return;
    case Activation::kHardSigmoid:
      for (int64_t q = 0; q < n; ++q) v[q] = hard_sigmoid(v[q], a, b);
      return;
    case Activation::kHardSwish:
      for (int64_t q = 0; q < n; ++q) v[q] = v[q] * hard_sigmoid(v[q], kHardSwishAlpha, kHardSwishBeta);
      return;
    // The transcendental ones: float64 from the float32 value, one rounding to float32 (as the reference).
    case Activation::kSigmoid:
      for (int64_t q = 0; q < n; ++q) {
        const double d = v[q];
        v[q] = static_cast<float>(1.0 / (1.0 + std::exp(-d)));
      }
      return;
    case Activation::kSilu:
      for (int64_t q = 0; q < n; ++q) {
        const double d = v[q];
        v[q] = static_cast<float>(d / (1.0 + std::exp(-d)));
      }
      return;
    // Gelu and GeluTanh in the reference's cancellation-free forms: 1 + erf(x) = erfc(-x), and
    // 0.5 * (1 + tanh(t)) = 1 / (1 + exp(-2t)).
    case Activation::kGelu:
      for (int64_t q = 0; q < n; ++q) {
        const double d = v[q];
        v[q] = static_cast<float>(0.5 * d * std::erfc(-d / kSqrt2));
      }
      return;
    case Activation::kGeluTanh: {
      static const double c = std::sqrt(2.0 / kPi);
      for (int64_t q = 0; q < n; ++q) {
        const double d = v[q];
        const double t = c * (d + kGeluTanhCoeff * (d * d * d));
        v[q] = static_cast<float>(d / (1.0 + std::exp(-2.0 * t)));
      }
      return;
    }
  }
}

const float* fp8_decode_table(Fp8Format fmt) {
  static std::array<std::array<float, 256>, kNumFp8Formats> tables;
  static std::once_flag once;
  std::call_once(once, [] {
    for (int f = 0; f < kNumFp8Formats; ++f) {
      for (int v = 0; v < 256; ++v) {
        tables[f][v] = decode_fp8_slow(static_cast<uint8_t>(v), static_cast<Fp8Format>(f));
      }
    }
  });
  return tables[static_cast<int>(fmt)].data();
}

void Epilogue::apply_span(const double* acc, int64_t acc_stride, int64_t c0, int64_t c_step, int64_t i0,
                          int64_t count, void* y) const {
  constexpr int64_t kSpan = 256;
  float v[kSpan];
  for (int64_t s0 = 0; s0 < count; s0 += kSpan) {
    const int64_t n = std::min(kSpan, count - s0);
    const double* a = acc + s0 * acc_stride;
    const float* cs = channel_scale.data() + c0 + s0 * c_step;
    for (int64_t q = 0; q < n; ++q) v[q] = static_cast<float>(a[q * acc_stride] + 0.0) * cs[q * c_step];
    if (bias != nullptr) {
      const float* bs = bias + c0 + s0 * c_step;
      for (int64_t q = 0; q < n; ++q) v[q] = v[q] + bs[q * c_step];
    }
    const int64_t i = i0 + s0;
    if (z != nullptr) {
      switch (z_type) {
        case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT: {
          const float* zp = static_cast<const float*>(z) + i;
          if (has_z_scale) {
            for (int64_t q = 0; q < n; ++q) v[q] = v[q] + zp[q] * z_scale;
          } else {
            for (int64_t q = 0; q < n; ++q) v[q] = v[q] + zp[q];
          }
          break;
        }
        case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16:
        case ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16:
          for (int64_t q = 0; q < n; ++q) {
            const float zv = load_float(z, z_type, i + q);
            v[q] = v[q] + (has_z_scale ? zv * z_scale : zv);
          }
          break;
        default: {
          const float* table = fp8_decode_table(fp8_format_of(z_type));
          const uint8_t* zp = static_cast<const uint8_t*>(z) + i;
          for (int64_t q = 0; q < n; ++q) v[q] = v[q] + table[zp[q]] * z_scale;  // FP8 Z always has z_scale
          break;
        }
      }
    }
    if (act.kind == Activation::kRelu) {  // the common case stays inline
      for (int64_t q = 0; q < n; ++q) v[q] = v[q] < 0.0f ? 0.0f : v[q];
    } else if (act.kind != Activation::kNone) {
      apply_activation(act, v, n);
    }
    switch (out.type) {
      case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT: std::memcpy(static_cast<float*>(y) + i, v, n * sizeof(float)); break;
      case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16: {
        uint16_t* dst = static_cast<uint16_t*>(y) + i;
        for (int64_t q = 0; q < n; ++q) dst[q] = f32_to_f16(v[q]);
        break;
      }
      case ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16: {
        uint16_t* dst = static_cast<uint16_t*>(y) + i;
        for (int64_t q = 0; q < n; ++q) dst[q] = f32_to_bf16(v[q]);
        break;
      }
      default: {
        uint8_t* dst = static_cast<uint8_t*>(y) + i;
        const Fp8Rounder& r = out.rounder;
        for (int64_t q = 0; q < n; ++q) v[q] = r(v[q] / out.y_scale);
        for (int64_t q = 0; q < n; ++q) dst[q] = r.code_of_value(v[q]);
        break;
      }
    }
  }
}

bool is_fp8_type(ONNXTensorElementDataType t) {
  return t == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E4M3FN || t == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E5M2 ||
         t == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E4M3FNUZ || t == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E5M2FNUZ;
}

bool is_high_precision_type(ONNXTensorElementDataType t) {
  return t == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT || t == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16 ||
         t == ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16;
}

Fp8Format fp8_format_of(ONNXTensorElementDataType t) {
  switch (t) {
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E5M2: return Fp8Format::kE5M2;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E4M3FNUZ: return Fp8Format::kE4M3FNUZ;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E5M2FNUZ: return Fp8Format::kE5M2FNUZ;
    default: return Fp8Format::kE4M3FN;
  }
}

void require_type(const Tensor& t, const char* name, bool ok, const char* expected) {
  if (!ok) {
    fail(std::string("input ") + name + " has element type " + type_name(t.type) + "; expected " + expected);
  }
}

void check_output_type(const Tensor& y, ONNXTensorElementDataType wanted) {
  if (y.type != wanted) {
    fail(std::string("output Y is declared ") + type_name(y.type) + " but output_dtype says " + type_name(wanted) +
         "; make the model's declared output type agree with output_dtype");
  }
}

void check_scalar_scale_shape(const Tensor& t, const char* name) {
  if (!t.present()) fail(std::string("input ") + name + " is missing; give a float32 scalar scale > 0");
  require_type(t, name, t.type == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, "float32");
  if (t.size != 1) {
    fail(std::string("input ") + name + " must be a float32 scalar (one element); got shape " + shape_str(t.shape));
  }
}

void check_scale_values(const float* values, int64_t count, const char* name, bool indexed) {
  for (int64_t c = 0; c < count; ++c) {
    const float s = values[c];
    if (!(std::isfinite(s) && s > 0.0f)) {
      fail(std::string("input ") + name + (indexed ? "[" + std::to_string(c) + "]" : std::string()) +
           " must be finite and > 0; got " + std::to_string(s));
    }
  }
}

float read_scalar_scale(const Tensor& t, const char* name) {
  check_scalar_scale_shape(t, name);
  const float* p = static_cast<const float*>(t.data);
  check_scale_values(p, 1, name, false);
  return p[0];
}

void check_channel_scale_shape(const Tensor& t, const char* name, int64_t channels) {
  if (!t.present()) fail(std::string("input ") + name + " is missing; give float32 scales of shape [1] or [channels]");
  require_type(t, name, t.type == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, "float32");
  if (t.shape.size() > 1 || (t.size != 1 && t.size != channels)) {
    fail(std::string("input ") + name + " must have shape [1] or [" + std::to_string(channels) + "]; got " +
         shape_str(t.shape));
  }
}

std::vector<float> read_channel_scale(const Tensor& t, const char* name, int64_t channels) {
  check_channel_scale_shape(t, name, channels);
  const float* p = static_cast<const float*>(t.data);
  check_scale_values(p, t.size, name, true);
  std::vector<float> out(static_cast<size_t>(channels));
  for (int64_t c = 0; c < channels; ++c) out[static_cast<size_t>(c)] = p[t.size == 1 ? 0 : c];
  return out;
}

void check_bias_shape(const Tensor& b, const char* name, int64_t channels) {
  require_type(b, name, b.type == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, "float32");
  if (b.size != channels || b.shape.size() != 1) {
    fail(std::string("input ") + name + " must have shape [" + std::to_string(channels) + "]; got " +
         shape_str(b.shape));
  }
}

CommonAttrs parse_common_attrs(const OrtKernelInfo* info) {
  CommonAttrs a;
  const std::string act = attr_string(info, "activation", "");
  const ActivationInfo* found = nullptr;
  for (const ActivationInfo& k : kActivations) {
    if (act == k.name) found = &k;
  }
  if (found == nullptr) fail("attribute activation must be one of " + allowed_activations() + "; got \"" + act + "\"");
  a.act.kind = found->kind;
  a.act.alpha = found->default_alpha;
  a.act.beta = found->default_beta;
  const std::optional<float> alpha = attr_float_opt(info, "activation_alpha");
  const std::optional<float> beta = attr_float_opt(info, "activation_beta");
  if (found->has_params) {
    if (alpha) a.act.alpha = *alpha;
    if (beta) a.act.beta = *beta;
  } else if (found->kind == Activation::kHardSwish) {
    if ((alpha && *alpha != kHardSwishAlpha) || (beta && *beta != kHardSwishBeta)) {
      fail("activation \"HardSwish\" has fixed parameters (alpha = 1/6, beta = 0.5); drop activation_alpha and "
           "activation_beta");
    }
  } else if (alpha || beta) {
    fail(std::string("activation \"") + found->name + "\" takes no activation_alpha or activation_beta (only \"Clip\" " +
         "and \"HardSigmoid\" do); drop them");
  }
  if (found->kind == Activation::kClip && !(a.act.alpha <= a.act.beta)) {
    fail("activation \"Clip\" needs activation_alpha (min) <= activation_beta (max), neither NaN; got min=" +
         std::to_string(a.act.alpha) + ", max=" + std::to_string(a.act.beta));
  }
  if (found->kind == Activation::kHardSigmoid && !(std::isfinite(a.act.alpha) && std::isfinite(a.act.beta))) {
    fail("activation \"HardSigmoid\" needs finite activation_alpha and activation_beta; got alpha=" +
         std::to_string(a.act.alpha) + ", beta=" + std::to_string(a.act.beta));
  }
  const ONNXTensorElementDataType t = attr_elem_type(info, "output_dtype", ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT);
  const int64_t dt = t;
  if (!(is_high_precision_type(t) || is_fp8_type(t))) {
    fail("attribute output_dtype=" + std::to_string(dt) +
         " is not allowed; use FLOAT (1), FLOAT16 (10), BFLOAT16 (16) or an FP8 type (17-20)");
  }
  a.output_type = t;
  return a;
}

Epilogue make_epilogue(OrtKernelContext* ctx, const CommonAttrs& attrs, float x_scale, const std::vector<float>& w_scale,
                       const std::vector<int64_t>& y_shape, int64_t channels, const char* bias_name) {
  Epilogue e;
  e.act = attrs.act;
  e.channel_scale.resize(w_scale.size());
  for (size_t c = 0; c < w_scale.size(); ++c) e.channel_scale[c] = x_scale * w_scale[c];

  Tensor b = input(ctx, 4);
  if (b.present()) {
    check_bias_shape(b, bias_name, channels);
    e.bias = static_cast<const float*>(b.data);
  }
  Tensor z = input(ctx, 5);
  Tensor zs = input(ctx, 6);
  if (z.present()) {
    require_type(z, "Z", is_high_precision_type(z.type) || is_fp8_type(z.type),
                 "float32, float16, bfloat16 or an FP8 type");
    if (z.shape != y_shape) {
      fail("input Z must have the output's shape " + shape_str(y_shape) + "; got " + shape_str(z.shape));
    }
    e.z = z.data;
    e.z_type = z.type;
    if (zs.present()) {
      e.z_scale = read_scalar_scale(zs, "z_scale");
      e.has_z_scale = true;
    } else if (is_fp8_type(z.type)) {
      fail("input Z is FP8 and needs z_scale (input 6); give its float32 scale");
    }
  } else if (zs.present()) {
    fail("input z_scale is given without Z; drop it or give the residual Z");
  }
  Tensor ys = input(ctx, 7);
  e.out.type = attrs.output_type;
  if (is_fp8_type(attrs.output_type)) {
    if (!ys.present()) {
      fail(std::string("output_dtype is ") + type_name(attrs.output_type) +
           " and needs y_scale (input 7); give the float32 output scale");
    }
    e.out.y_scale = read_scalar_scale(ys, "y_scale");
    e.out.rounder = Fp8Rounder(fp8_format_of(attrs.output_type));
  }
  return e;
}

namespace {

// strides, pads and dilations where the node gives them (the defaults stay otherwise).
void read_window_attrs(const OrtKernelInfo* info, std::vector<int64_t>& strides, std::vector<int64_t>& pads,
                       std::vector<int64_t>& dilations) {
  std::vector<int64_t> v = attr_ints(info, "strides");
  if (!v.empty()) strides = v;
  v = attr_ints(info, "pads");
  if (!v.empty()) pads = v;
  v = attr_ints(info, "dilations");
  if (!v.empty()) dilations = v;
}

}  // namespace

ConvAttrs parse_conv_attrs(const OrtKernelInfo* info) {
  ConvAttrs a;
  std::string auto_pad = attr_string(info, "auto_pad", "NOTSET");
  if (auto_pad != "NOTSET") fail("attribute auto_pad=" + auto_pad + " is not supported; give explicit pads");
  read_window_attrs(info, a.strides, a.pads, a.dilations);
  a.kernel_shape = attr_ints(info, "kernel_shape");
  a.group = attr_int(info, "group", 1);
  std::string layout = attr_string(info, "layout", "NCHW");
  if (layout == "NHWC") {
    a.nhwc = true;
  } else if (layout != "NCHW") {
    fail("attribute layout must be \"NCHW\" or \"NHWC\"; got \"" + layout + "\"");
  }
  if (a.strides.size() != 2 || a.strides[0] < 1 || a.strides[1] < 1) {
    fail("attribute strides must be two integers >= 1; got " + shape_str(a.strides));
  }
  if (a.dilations.size() != 2 || a.dilations[0] < 1 || a.dilations[1] < 1) {
    fail("attribute dilations must be two integers >= 1; got " + shape_str(a.dilations));
  }
  if (a.pads.size() != 4) fail("attribute pads must have 4 values [top, left, bottom, right]; got " + shape_str(a.pads));
  for (int64_t p : a.pads) {
    if (p < 0) fail("attribute pads must be >= 0; got " + shape_str(a.pads));
    if (p > kMaxPadOrDilation) {
      fail("attribute pads must be <= " + std::to_string(kMaxPadOrDilation) + "; got " + shape_str(a.pads));
    }
  }
  for (int64_t d : a.dilations) {
    if (d > kMaxPadOrDilation) {
      fail("attribute dilations must be <= " + std::to_string(kMaxPadOrDilation) + "; got " + shape_str(a.dilations));
    }
  }
  if (a.group < 1) fail("attribute group must be >= 1; got " + std::to_string(a.group));
  if (!a.kernel_shape.empty() && a.kernel_shape.size() != 2) {
    fail("attribute kernel_shape must have 2 values; got " + shape_str(a.kernel_shape));
  }
  return a;
}

ConvShape conv_shape(const ConvAttrs& a, const std::vector<int64_t>& xs, const std::vector<int64_t>& ws) {
  if (xs.size() != 4) {
    fail(std::string("input X must be 4-D (") + (a.nhwc ? "NHWC" : "NCHW") + "); got shape " + shape_str(xs));
  }
  if (ws.size() != 4) fail("input W must be 4-D [M, C/group, kH, kW]; got shape " + shape_str(ws));
  ConvShape s{};
  s.n = xs[0];
  s.c = a.nhwc ? xs[3] : xs[1];
  s.h = a.nhwc ? xs[1] : xs[2];
  s.w = a.nhwc ? xs[2] : xs[3];
  s.m = ws[0];
  s.kh = ws[2];
  s.kw = ws[3];
  s.group = a.group;
  if (s.m % a.group != 0) {
    fail("W has " + std::to_string(s.m) + " output channels, not divisible by group=" + std::to_string(a.group));
  }
  if (ws[1] * a.group != s.c) {
    fail("X has " + std::to_string(s.c) + " channels but W " + shape_str(ws) + " with group=" +
         std::to_string(a.group) + " expects " + std::to_string(ws[1] * a.group));
  }
  if (ws[1] < 1 || s.kh < 1 || s.kw < 1) {
    fail("input W " + shape_str(ws) + " has a zero-size dimension; FP8Conv needs at least one input channel per group "
         "and a kernel of at least 1x1");
  }
  if (!a.kernel_shape.empty() && (a.kernel_shape[0] != s.kh || a.kernel_shape[1] != s.kw)) {
    fail("attribute kernel_shape " + shape_str(a.kernel_shape) + " does not match W " + shape_str(ws));
  }
  int64_t eff_h = 0, eff_w = 0;  // the dilated kernel; pads and dilations are < 2^31, so only this can overflow
  if (__builtin_mul_overflow(a.dilations[0], s.kh - 1, &eff_h) ||
      __builtin_mul_overflow(a.dilations[1], s.kw - 1, &eff_w)) {
    fail("the dilated kernel of W " + shape_str(ws) + " with dilations " + shape_str(a.dilations) +
         " overflows int64; check the dilations");
  }
  eff_h += 1;
  eff_w += 1;
  const int64_t ph = s.h + a.pads[0] + a.pads[2];
  const int64_t pw = s.w + a.pads[1] + a.pads[3];
  if (ph < eff_h || pw < eff_w) {
    fail("the kernel (" + std::to_string(eff_h) + "x" + std::to_string(eff_w) + " with dilation) is larger than the padded input " +
         std::to_string(ph) + "x" + std::to_string(pw));
  }
  s.oh = (ph - eff_h) / a.strides[0] + 1;
  s.ow = (pw - eff_w) / a.strides[1] + 1;
  s.y_shape = a.nhwc ? std::vector<int64_t>{s.n, s.oh, s.ow, s.m} : std::vector<int64_t>{s.n, s.m, s.oh, s.ow};
  int64_t elements = 1;
  for (int64_t d : s.y_shape) {
    if (__builtin_mul_overflow(elements, d, &elements)) {
      fail("the output shape " + shape_str(s.y_shape) + " has more elements than int64 can count; check pads, "
           "strides and dilations");
    }
  }
  return s;
}

MaxPoolAttrs parse_max_pool_attrs(const OrtKernelInfo* info) {
  MaxPoolAttrs a;
  a.kernel_shape = attr_ints(info, "kernel_shape");
  read_window_attrs(info, a.strides, a.pads, a.dilations);
  a.ceil_mode = attr_int(info, "ceil_mode", 0) != 0;
  a.layout = attr_string(info, "layout", "NHWC");
  a.auto_pad = attr_string(info, "auto_pad", "NOTSET");
  check_max_pool_attrs(a);
  return a;
}

void check_max_pool_attrs(const MaxPoolAttrs& a) {
  if (a.layout != "NHWC") fail("attribute layout must be \"NHWC\" (the only layout FP8MaxPool has); got \"" + a.layout + "\"");
  if (a.auto_pad != "NOTSET") fail("attribute auto_pad=" + a.auto_pad + " is not supported; give explicit pads");
  if (a.kernel_shape.size() != 2) {
    fail("attribute kernel_shape is required and must have 2 values [kH, kW]; got " + shape_str(a.kernel_shape));
  }
  auto in_range = [](const std::vector<int64_t>& v, int64_t lo) {
    for (int64_t x : v) {
      if (x < lo || x > kMaxPadOrDilation) return false;
    }
    return true;
  };
  const std::string limit = std::to_string(kMaxPadOrDilation);
  if (!in_range(a.kernel_shape, 1)) fail("attribute kernel_shape must be two integers in [1, " + limit + "]; got " + shape_str(a.kernel_shape));
  if (a.strides.size() != 2 || !in_range(a.strides, 1)) {
    fail("attribute strides must be two integers in [1, " + limit + "]; got " + shape_str(a.strides));
  }
  if (a.dilations.size() != 2 || !in_range(a.dilations, 1)) {
    fail("attribute dilations must be two integers in [1, " + limit + "]; got " + shape_str(a.dilations));
  }
  if (a.pads.size() != 4) fail("attribute pads must have 4 values [top, left, bottom, right]; got " + shape_str(a.pads));
  if (!in_range(a.pads, 0)) fail("attribute pads must be in [0, " + limit + "]; got " + shape_str(a.pads));
}

MaxPoolShape max_pool_shape(const MaxPoolAttrs& a, const std::vector<int64_t>& xs) {
  if (xs.size() != 4) fail("input X must be 4-D (NHWC); got shape " + shape_str(xs));
  // ONNX MaxPool's window rules (onnx_shapes), on the NCHW view of the shape.
  WindowAttrs w;
  w.kernel_shape = a.kernel_shape;
  w.strides = a.strides;
  w.dilations = a.dilations;
  w.pads = a.pads;
  w.ceil_mode = a.ceil_mode;
  const std::vector<WindowAxis> ax = window_geometry(w, {xs[0], xs[3], xs[1], xs[2]}, a.kernel_shape);
  MaxPoolShape s{};
  s.n = xs[0];
  s.h = xs[1];
  s.w = xs[2];
  s.c = xs[3];
  s.oh = ax[0].out;
  s.ow = ax[1].out;
  s.pad_top = ax[0].pad_begin;
  s.pad_left = ax[1].pad_begin;
  s.kh = ax[0].kernel;
  s.kw = ax[1].kernel;
  s.sh = ax[0].stride;
  s.sw = ax[1].stride;
  s.dh = ax[0].dilation;
  s.dw = ax[1].dilation;
  s.y_shape = {s.n, s.oh, s.ow, s.c};
  element_count(s.y_shape);  // fails on an int64 overflow
  // Every window needs a tap inside the input (padding never wins, so an all-padding window has no value). Only
  // windows starting outside the input can miss it: those in the leading and trailing padding are checked.
  for (int d = 0; d < 2; ++d) {
    const WindowAxis& w = ax[d];
    auto empty = [&](int64_t o) {
      const int64_t start = o * w.stride - w.pad_begin;
      const int64_t k0 = start < 0 ? (-start + w.dilation - 1) / w.dilation : 0;
      return !(k0 < w.kernel && start + k0 * w.dilation < w.in);
    };
    const int64_t inside = std::min(w.out, (w.pad_begin + w.stride - 1) / w.stride);      // first start >= 0
    const int64_t beyond = std::min(w.out, (w.in + w.pad_begin + w.stride - 1) / w.stride);  // first start >= in
    for (int64_t o = 0; o < w.out; ++o) {
      if (o == inside) o = std::max(o, beyond);  // the windows in between start inside the input
      if (o < w.out && empty(o)) {
        fail(std::string("output ") + (d == 0 ? "row " : "column ") + std::to_string(o) +
             "'s window lies wholly in the padding (no tap inside the input); make pads smaller than the kernel's " +
             "reach (pads " + shape_str(a.pads) + ", kernel_shape " + shape_str(a.kernel_shape) + ", dilations " +
             shape_str(a.dilations) + ")");
      }
    }
  }
  return s;
}

bool is_max_pool_type(ONNXTensorElementDataType t) {
  return is_fp8_type(t) || t == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT || t == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16;
}

MaxPoolRun begin_max_pool(OrtKernelContext* ctx, const MaxPoolAttrs& a) {
  MaxPoolRun r;
  r.x = input(ctx, 0);
  require_type(r.x, "X", is_max_pool_type(r.x.type), kMaxPoolTypes);
  r.shape = max_pool_shape(a, r.x.shape);
  r.y = output(ctx, 0, r.shape.y_shape);
  check_output_type(r.y, r.x.type);
  return r;
}

AttentionAttrs parse_attention_attrs(const OrtKernelInfo* info) {
  AttentionAttrs a;
  a.num_heads = attr_int(info, "num_heads", 0);
  if (a.num_heads < 1) fail("attribute num_heads is required and must be >= 1; got " + std::to_string(a.num_heads));
  a.has_scale = has_attr(info, "scale");
  a.scale = attr_float(info, "scale", 1.0f);
  if (!std::isfinite(a.scale)) fail("attribute scale must be finite; got " + std::to_string(a.scale));
  const int64_t nz = attr_int(info, "nan_to_zero", 0);
  if (nz != 0 && nz != 1) fail("attribute nan_to_zero must be 0 or 1; got " + std::to_string(nz));
  a.nan_to_zero = nz == 1;
  a.output_type = attr_elem_type(info, "output_dtype", ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT);
  if (a.output_type != ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT && !is_fp8_type(a.output_type)) {
    const int64_t dt = a.output_type;
    fail("attribute output_dtype=" + std::to_string(dt) + " is not allowed; use FLOAT (1) or an FP8 type (17-20)");
  }
  return a;
}

AttentionShape attention_shape(const AttentionAttrs& a, const std::vector<int64_t>& q, const std::vector<int64_t>* k,
                               const std::vector<int64_t>* v, const std::vector<int64_t>* bias_shape) {
  const int64_t h = a.num_heads;
  AttentionShape s;
  s.h = h;
  if (k == nullptr || v == nullptr) {
    if (k != v) {
      fail(std::string("input ") + (k == nullptr ? "V" : "K") + " is given without " + (k == nullptr ? "K" : "V") +
           ": give both, or neither with Q packed as [batch, sequence, 3 * heads * head_size]");
    }
    if (q.size() != 3) {
      fail("input Q (packed Q, K and V: K and V are absent) must be 3-D [batch, sequence, 3 * heads * head_size]; "
           "got shape " + shape_str(q));
    }
    if (q[2] % 3 != 0 || (q[2] / 3) % h != 0) {  // not q[2] % (3 * h): num_heads may be near INT64_MAX
      fail("input Q (packed Q, K and V: K and V are absent) needs a last dimension of 3 * num_heads * head_size "
           "(num_heads=" + std::to_string(h) + "); got shape " + shape_str(q));
    }
    s.packed = true;
    s.b = q[0];
    s.s = s.t = q[1];
    s.d = s.dv = q[2] / 3 / h;
    s.q_row = s.k_row = s.v_row = q[2];
  } else {
    const char* names[3] = {"Q", "K", "V"};
    const std::vector<int64_t>* shapes[3] = {&q, k, v};
    for (int i = 0; i < 3; ++i) {
      if (shapes[i]->size() != 3) {
        fail(std::string("input ") + names[i] + " must be 3-D [batch, sequence, heads * head_size]; got shape " +
             shape_str(*shapes[i]));
      }
    }
    if (q[0] != (*k)[0] || q[0] != (*v)[0]) {
      fail("inputs Q, K and V must have the same batch size; got " + shape_str(q) + ", " + shape_str(*k) + ", " +
           shape_str(*v));
    }
    if ((*k)[1] != (*v)[1]) {
      fail("inputs K and V must have the same length T; got " + shape_str(*k) + " and " + shape_str(*v));
    }
    if (q[2] != (*k)[2]) {
      fail("inputs Q and K must have the same last dimension; got " + shape_str(q) + " and " + shape_str(*k));
    }
    if (q[2] % h != 0 || (*v)[2] % h != 0) {
      fail("num_heads=" + std::to_string(h) + " must divide the last dimensions of Q/K (" + std::to_string(q[2]) +
           ") and V (" + std::to_string((*v)[2]) + ")");
    }
    s.b = q[0];
    s.s = q[1];
    s.t = (*k)[1];
    s.d = q[2] / h;
    s.dv = (*v)[2] / h;
    s.q_row = s.k_row = q[2];
    s.v_row = (*v)[2];
  }
  s.scale = a.has_scale ? a.scale : (s.d > 0 ? static_cast<float>(1.0 / std::sqrt(static_cast<double>(s.d))) : 1.0f);
  s.y_shape = {s.b, s.s, s.h * s.dv};
  if (bias_shape != nullptr) {
    const std::vector<int64_t>& bs = *bias_shape;
    const int64_t full[4] = {s.b, s.h, s.s, s.t};
    if (bs.empty() || bs.size() > 4) {
      fail("input attn_bias must have rank 1 to 4 (broadcast to [batch, heads, S, T]); got shape " + shape_str(bs));
    }
    int64_t stride = 1;
    for (int i = 3, j = static_cast<int>(bs.size()) - 1; i >= 0; --i, --j) {
      const int64_t dim = j >= 0 ? bs[j] : 1;
      if (dim != 1 && dim != full[i]) {
        fail("input attn_bias " + shape_str(bs) + " does not broadcast to the scores [batch, heads, S, T] = " +
             shape_str({s.b, s.h, s.s, s.t}));
      }
      s.bias_stride[i] = dim == 1 ? 0 : stride;
      stride *= dim;
    }
  }
  return s;
}

bool is_attention_qkv_type(ONNXTensorElementDataType t) {
  return t == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT || t == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16;
}

AttentionRun begin_attention(OrtKernelContext* ctx, const AttentionAttrs& a) {
  AttentionRun r;
  r.q = input(ctx, 0);
  r.k = input(ctx, 1);
  r.v = input(ctx, 2);
  r.bias = input(ctx, 3);
  r.y_scale = input(ctx, 4);
  require_type(r.q, "Q", is_attention_qkv_type(r.q.type), kAttentionQkvTypes);
  r.qkv_type = r.q.type;
  const char* names[2] = {"K", "V"};
  const Tensor* kv[2] = {&r.k, &r.v};
  for (int i = 0; i < 2; ++i) {
    if (kv[i]->present() && kv[i]->type != r.q.type) {
      fail(std::string("input ") + names[i] + " has element type " + type_name(kv[i]->type) + " but Q has " +
           type_name(r.q.type) + "; Q, K and V must be " + kAttentionQkvTypes);
    }
  }
  if (r.bias.present()) {
    require_type(r.bias, "attn_bias", r.bias.type == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, "float32");
  }
  r.shape = attention_shape(a, r.q.shape, r.k.present() ? &r.k.shape : nullptr, r.v.present() ? &r.v.shape : nullptr,
                            r.bias.present() ? &r.bias.shape : nullptr);
  r.q_data = r.q.data;
  if (r.shape.packed) {
    // a zero-size Q may have no buffer; no element is read then
    const int64_t elem = r.qkv_type == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16 ? 2 : 4;
    const char* base = static_cast<const char*>(r.q_data);
    r.k_data = base == nullptr ? nullptr : base + r.shape.h * r.shape.d * elem;
    r.v_data = base == nullptr ? nullptr : base + 2 * r.shape.h * r.shape.d * elem;
  } else {
    r.k_data = r.k.data;
    r.v_data = r.v.data;
  }
  if (is_fp8_type(a.output_type)) {
    if (!r.y_scale.present()) fail("output_dtype is FP8 and needs y_scale (input 4)");
    require_type(r.y_scale, "y_scale", r.y_scale.type == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, "float32");
    if (r.y_scale.size != 1) {
      fail("input y_scale must be a float32 scalar (one element); got shape " + shape_str(r.y_scale.shape));
    }
  }
  r.y = output(ctx, 0, r.shape.y_shape);
  check_output_type(r.y, a.output_type);
  return r;
}

LayerNormAttrs parse_layer_norm_attrs(const OrtKernelInfo* info) {
  LayerNormAttrs a;
  a.axis = attr_int(info, "axis", -1);
  a.epsilon = attr_float(info, "epsilon", 1e-5f);
  if (!std::isfinite(a.epsilon) || a.epsilon < 0.0f) {
    fail("attribute epsilon must be finite and >= 0; got " + std::to_string(a.epsilon));
  }
  a.q_type = attr_elem_type(info, "output_dtype", ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E4M3FN);
  if (!is_fp8_type(a.q_type)) {
    const int64_t dt = a.q_type;
    fail("attribute output_dtype=" + std::to_string(dt) + " is not an FP8 type; use 17-20 (Y_fp8's type)");
  }
  return a;
}

LayerNormRun begin_layer_norm(OrtKernelContext* ctx, const LayerNormAttrs& a) {
  LayerNormRun r;
  r.x = input(ctx, 0);
  r.scale = input(ctx, 1);
  r.bias = input(ctx, 2);
  r.y_scale = input(ctx, 3);
  require_type(r.x, "X", r.x.type == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT || r.x.type == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16,
               "float32 or float16");
  const int64_t rank = static_cast<int64_t>(r.x.shape.size());
  const int64_t axis = a.axis < 0 ? a.axis + rank : a.axis;
  if (axis < 0 || axis >= rank) {
    fail("attribute axis=" + std::to_string(a.axis) + " is out of range for X of rank " + std::to_string(rank));
  }
  const std::vector<int64_t> norm(r.x.shape.begin() + axis, r.x.shape.end());
  for (const auto& [t, name] : {std::pair<const Tensor*, const char*>{&r.scale, "Scale"}, {&r.bias, "B"}}) {
    if (!t->present()) {
      if (t == &r.scale) fail("input Scale is missing; give the normalized axes' scale (X's type)");
      continue;
    }
    require_type(*t, name, t->type == r.x.type, type_name(r.x.type));
    if (t->shape != norm) {
      fail(std::string("input ") + name + " must have the normalized axes' shape " + shape_str(norm) + " (X" +
           shape_str(r.x.shape) + " from axis " + std::to_string(axis) + "); got " + shape_str(t->shape));
    }
  }
  check_scalar_scale_shape(r.y_scale, "y_scale");
  r.cols = 1;
  for (int64_t d : norm) r.cols *= d;
  r.rows = r.cols == 0 ? 0 : r.x.size / r.cols;
  size_t outputs = 0;
  check(g_ort->KernelContext_GetOutputCount(ctx, &outputs), "KernelContext_GetOutputCount");
  if (outputs < 2) fail("the node needs both outputs, Y and Y_fp8; use LayerNormalization for a float output alone");
  r.y = output(ctx, 0, r.x.shape);
  if (r.y.type != r.x.type) {
    fail(std::string("output Y is declared ") + type_name(r.y.type) + "; it has X's type " + type_name(r.x.type));
  }
  r.y_fp8 = output(ctx, 1, r.x.shape);
  if (r.y_fp8.type != a.q_type) {
    fail(std::string("output Y_fp8 is declared ") + type_name(r.y_fp8.type) + " but output_dtype says " +
         type_name(a.q_type) + "; make the model's declared output type agree with output_dtype");
  }
  return r;
}

ChannelOpAttrs parse_channel_op_attrs(const OrtKernelInfo* info, bool with_output_dtype) {
  ChannelOpAttrs a;
  const std::string layout = attr_string(info, "layout", "NHWC");
  if (layout != "NHWC" && layout != "NCHW") fail("attribute layout must be \"NHWC\" or \"NCHW\"; got \"" + layout + "\"");
  a.nhwc = layout == "NHWC";
  if (with_output_dtype) {
    a.output_type = attr_elem_type(info, "output_dtype", ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E4M3FN);
    const bool ok = is_fp8_type(a.output_type) || a.output_type == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT ||
                    a.output_type == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16;
    if (!ok) {
      const int64_t dt = a.output_type;
      fail("attribute output_dtype=" + std::to_string(dt) + " is not allowed; use an FP8 type (17-20), FLOAT (1) or "
           "FLOAT16 (10)");
    }
  }
  return a;
}

namespace {

// X (4-D FP8) and x_scale of FP8GlobalAveragePool / FP8ChannelMul, and the [n, hw, c] view.
void begin_channel_op(OrtKernelContext* ctx, const ChannelOpAttrs& a, ChannelOpRun& r) {
  r.x = input(ctx, 0);
  r.x_scale = input(ctx, 1);
  require_type(r.x, "X", is_fp8_type(r.x.type), "an FP8 type");
  if (r.x.shape.size() != 4) {
    fail(std::string("input X must be 4-D (") + (a.nhwc ? "NHWC" : "NCHW") + "); got shape " + shape_str(r.x.shape));
  }
  check_scalar_scale_shape(r.x_scale, "x_scale");
  const std::vector<int64_t>& s = r.x.shape;
  r.n = s[0];
  r.c = a.nhwc ? s[3] : s[1];
  r.hw = a.nhwc ? s[1] * s[2] : s[2] * s[3];
}

std::vector<int64_t> channel_shape(const ChannelOpAttrs& a, int64_t n, int64_t c) {
  return a.nhwc ? std::vector<int64_t>{n, 1, 1, c} : std::vector<int64_t>{n, c, 1, 1};
}

}  // namespace

ChannelOpRun begin_global_average_pool(OrtKernelContext* ctx, const ChannelOpAttrs& a) {
  ChannelOpRun r;
  begin_channel_op(ctx, a, r);
  if (r.hw == 0 && r.n * r.c > 0) {
    fail("input X" + shape_str(r.x.shape) + " has no spatial positions (H * W = 0): the mean is undefined; give X at "
         "least one pixel");
  }
  r.y = output(ctx, 0, channel_shape(a, r.n, r.c));
  check_output_type(r.y, ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT);
  return r;
}

ChannelOpRun begin_channel_mul(OrtKernelContext* ctx, const ChannelOpAttrs& a) {
  ChannelOpRun r;
  begin_channel_op(ctx, a, r);
  r.g = input(ctx, 2);
  r.y_scale = input(ctx, 3);
  if (!r.g.present()) fail("input G is missing; give the per-image, per-channel gate (float32)");
  require_type(r.g, "G", r.g.type == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, "float32");
  const std::vector<int64_t> want = channel_shape(a, r.n, r.c);
  if (r.g.shape != want) {
    fail("input G must have shape " + shape_str(want) + " (one gate per image and channel of X" +
         shape_str(r.x.shape) + "); got " + shape_str(r.g.shape));
  }
  if (is_fp8_type(a.output_type)) {
    if (!r.y_scale.present()) fail("output_dtype is FP8 and needs y_scale (input 3)");
    check_scalar_scale_shape(r.y_scale, "y_scale");
  }
  r.y = output(ctx, 0, r.x.shape);
  check_output_type(r.y, a.output_type);
  return r;
}

}  // namespace fp8ort
