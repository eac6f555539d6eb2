// What every com.fp8ort kernel shares, whatever device runs it: element types, input checks with messages
// that name the op, the input and the fix, attribute parsing, and the float32 epilogue of the contract.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ops/fp8_numerics.h"
#include "ort/kernel.h"
#include "ort/ort_api.h"

namespace fp8ort {

bool is_fp8_type(ONNXTensorElementDataType t);
bool is_high_precision_type(ONNXTensorElementDataType t);  // float32, float16, bfloat16
Fp8Format fp8_format_of(ONNXTensorElementDataType t);       // requires is_fp8_type(t)

// Loads element i of a float32/float16/bfloat16/FP8 buffer as float32 (exact).
inline float load_float(const void* data, ONNXTensorElementDataType type, int64_t i) {
  switch (type) {
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT: return static_cast<const float*>(data)[i];
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16: return f16_to_f32(static_cast<const uint16_t*>(data)[i]);
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16: return bf16_to_f32(static_cast<const uint16_t*>(data)[i]);
    default: return fp8_decode_table(fp8_format_of(type))[static_cast<const uint8_t*>(data)[i]];
  }
}

// Where an op's output goes: its element type, and for FP8 the scale it is quantized with.
struct OutputSpec {
  ONNXTensorElementDataType type = ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT;
  float y_scale = 1.0f;
  Fp8Rounder rounder{Fp8Format::kE4M3FN};  // set for FP8 outputs
  void store(void* data, int64_t i, float v) const {
    switch (type) {
      case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT: static_cast<float*>(data)[i] = v; break;
      case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16: static_cast<uint16_t*>(data)[i] = f32_to_f16(v); break;
      case ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16: static_cast<uint16_t*>(data)[i] = f32_to_bf16(v); break;
      default: static_cast<uint8_t*>(data)[i] = rounder.code(v / y_scale); break;
    }
  }
};

// The fused activation of FP8Conv/FP8MatMul (attribute `activation`), applied after bias and residual. The exact
// float32 definitions are reference.py's (docs/operators.md). The values match fp8ort_activation (fp8_kernels.h).
enum class Activation : int {
  kNone = 0,
  kRelu = 1,
  kClip = 2,
  kSigmoid = 3,
  kSilu = 4,
  kHardSigmoid = 5,
  kHardSwish = 6,
  kGelu = 7,
  kGeluTanh = 8,
};

// An activation with its float32 parameters: Clip (min, max), HardSigmoid and HardSwish (alpha, beta); unused
// otherwise.
struct ActivationSpec {
  Activation kind = Activation::kNone;
  float alpha = 0.0f;
  float beta = 0.0f;
};

// The activation name as the attribute spells it ("" for none).
const char* activation_name(Activation a);

// Applies `act` to v[0..n) in place, as the reference does.
void apply_activation(const ActivationSpec& act, float* v, int64_t n);

// The float32 epilogue of FP8Conv/FP8MatMul, applied to one exact accumulator value.
struct Epilogue {
  std::vector<float> channel_scale;  // x_scale * w_scale[c]
  const float* bias = nullptr;       // [channels] or null
  const void* z = nullptr;           // residual, same layout as Y, or null
  ONNXTensorElementDataType z_type = ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
  bool has_z_scale = false;
  float z_scale = 1.0f;
  ActivationSpec act;
  OutputSpec out;

  // `count` outputs at flat indices i0, i0+1, ...: element q has accumulator acc[q * acc_stride] (the exact sum of
  // FP8 products) and channel c0 + q * c_step (NCHW rows: c_step 0; NHWC pixels: c_step 1). The reference's
  // float32 arithmetic, in loops that the compiler vectorizes.
  void apply_span(const double* acc, int64_t acc_stride, int64_t c0, int64_t c_step, int64_t i0, int64_t count,
                  void* y) const;
};

// Input checks. Each throws OpError naming the input and the fix.
float read_scalar_scale(const Tensor& t, const char* name);
std::vector<float> read_channel_scale(const Tensor& t, const char* name, int64_t channels);
// The same checks without reading the values (the GPU kernels leave scales in device memory), and the value check
// alone (finite and > 0; `indexed`: the message names the element, as read_channel_scale's does).
void check_scalar_scale_shape(const Tensor& t, const char* name);
void check_channel_scale_shape(const Tensor& t, const char* name, int64_t channels);
void check_scale_values(const float* values, int64_t count, const char* name, bool indexed);
void check_bias_shape(const Tensor& b, const char* name, int64_t channels);  // float32 [channels]
void require_type(const Tensor& t, const char* name, bool ok, const char* expected);
// The output ORT allocated must have the element type output_dtype asks for.
void check_output_type(const Tensor& y, ONNXTensorElementDataType wanted);

// Attributes shared by both ops: activation (with activation_alpha, activation_beta), output_dtype, and their checks.
struct CommonAttrs {
  ActivationSpec act;
  ONNXTensorElementDataType output_type = ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT;
};
CommonAttrs parse_common_attrs(const OrtKernelInfo* info);

// Builds the epilogue from inputs B/C, Z, z_scale, y_scale (indices 4..7) and checks them.
Epilogue make_epilogue(OrtKernelContext* ctx, const CommonAttrs& attrs, float x_scale, const std::vector<float>& w_scale,
                       const std::vector<int64_t>& y_shape, int64_t channels, const char* bias_name);

// FP8Conv geometry (2-D), validated once the input shape is known.
struct ConvAttrs {
  std::vector<int64_t> strides{1, 1}, pads{0, 0, 0, 0}, dilations{1, 1}, kernel_shape;
  int64_t group = 1;
  bool nhwc = false;
};
ConvAttrs parse_conv_attrs(const OrtKernelInfo* info);

struct ConvShape {
  int64_t n, c, h, w;  // input
  int64_t m, kh, kw;   // weight [m, c/group, kh, kw]
  int64_t oh, ow;      // output
  int64_t group;
  std::vector<int64_t> y_shape;
};
ConvShape conv_shape(const ConvAttrs& a, const std::vector<int64_t>& x_shape, const std::vector<int64_t>& w_shape);

// FP8MaxPool (2-D, NHWC): ONNX MaxPool's window attributes plus layout, checked once; the same checks and messages
// serve shape inference and every kernel.
struct MaxPoolAttrs {
  std::vector<int64_t> kernel_shape, strides{1, 1}, pads{0, 0, 0, 0}, dilations{1, 1};
  bool ceil_mode = false;
  std::string layout = "NHWC";
  std::string auto_pad = "NOTSET";
};
MaxPoolAttrs parse_max_pool_attrs(const OrtKernelInfo* info);
void check_max_pool_attrs(const MaxPoolAttrs& a);  // throws OpError naming the attribute

struct MaxPoolShape {
  int64_t n, h, w, c;       // input, NHWC
  int64_t oh, ow;           // output
  int64_t pad_top, pad_left;
  int64_t kh, kw, sh, sw, dh, dw;
  std::vector<int64_t> y_shape;  // [n, oh, ow, c]
};
// Output geometry as ONNX MaxPool (ceil_mode included) for an NHWC input; checks the rank and the window size.
MaxPoolShape max_pool_shape(const MaxPoolAttrs& a, const std::vector<int64_t>& x_shape);
// X's element type: an FP8 type, float32 or float16.
bool is_max_pool_type(ONNXTensorElementDataType t);
constexpr const char* kMaxPoolTypes = "float32, float16 or an FP8 type";

// A kernel's FP8MaxPool run up to the arithmetic, the same on every device: X checked, the geometry, Y allocated
// with X's type.
struct MaxPoolRun {
  Tensor x, y;
  MaxPoolShape shape;
};
MaxPoolRun begin_max_pool(OrtKernelContext* ctx, const MaxPoolAttrs& a);

// FP8Attention: attributes, checked once when the kernel is made.
struct AttentionAttrs {
  int64_t num_heads = 0;
  bool has_scale = false;  // absent: 1/sqrt(D), known once Q's shape is
  float scale = 1.0f;
  bool nan_to_zero = false;
  ONNXTensorElementDataType output_type = ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT;
};
AttentionAttrs parse_attention_attrs(const OrtKernelInfo* info);

// Q [b, s, h*d], K [b, t, h*d], V [b, t, h*dv], or packed: Q [b, s, 3*h*d] holding Q, K and V side by side (K and
// V absent; t = s, dv = d). attn_bias broadcast to [b, h, s, t] through element strides (0 on a broadcast axis).
struct AttentionShape {
  int64_t b, s, t, h, d, dv;
  float scale;
  bool packed = false;
  // elements between consecutive sequence positions of Q, K and V (h*d, h*d, h*dv; 3*h*d each when packed); packed,
  // K starts h*d and V 2*h*d elements after Q's start
  int64_t q_row = 0, k_row = 0, v_row = 0;
  int64_t bias_stride[4] = {0, 0, 0, 0};  // b, h, s, t
  std::vector<int64_t> y_shape;           // [b, s, h*dv]
};
// Checks the shapes against the contract (the messages name the input and the fix); k and v null: packed Q;
// bias_shape null: no bias.
AttentionShape attention_shape(const AttentionAttrs& a, const std::vector<int64_t>& q, const std::vector<int64_t>* k,
                               const std::vector<int64_t>* v, const std::vector<int64_t>* bias_shape);

// Q, K and V's element type: float32 or float16, one type for all three (float16 halves the projections' bytes
// and lets a GPU kernel use FP16 tensor cores).
bool is_attention_qkv_type(ONNXTensorElementDataType t);
constexpr const char* kAttentionQkvTypes = "float32 or float16 (all three the same type)";

// A kernel's FP8Attention run up to the arithmetic, the same on every device: inputs checked, the geometry, Y
// allocated with output_dtype's type. y_scale is checked for presence, type and size here; its value is read by
// the kernel (the CPU kernel checks it too, see read_scalar_scale).
struct AttentionRun {
  Tensor q, k, v, bias, y_scale, y;
  AttentionShape shape;
  // Elements of qkv_type (FLOAT or FLOAT16, the same for all three); packed: K and V point into Q, h*d and 2*h*d
  // elements after its start. Strides (AttentionShape's q_row, k_row, v_row) count elements, not bytes.
  const void *q_data = nullptr, *k_data = nullptr, *v_data = nullptr;
  ONNXTensorElementDataType qkv_type = ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT;
};
AttentionRun begin_attention(OrtKernelContext* ctx, const AttentionAttrs& a);

// FP8LayerNormalization: attributes checked once when the kernel is made.
struct LayerNormAttrs {
  int64_t axis = -1;
  float epsilon = 1e-5f;
  ONNXTensorElementDataType q_type = ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E4M3FN;  // Y_fp8's type (output_dtype)
};
LayerNormAttrs parse_layer_norm_attrs(const OrtKernelInfo* info);

// X viewed as [rows, cols] (cols: the normalized axes); Y with X's type and Y_fp8 with output_dtype's, both
// allocated. y_scale is checked for presence, type and size; its value is read by the kernel.
struct LayerNormRun {
  Tensor x, scale, bias, y_scale, y, y_fp8;
  int64_t rows = 0, cols = 0;
};
LayerNormRun begin_layer_norm(OrtKernelContext* ctx, const LayerNormAttrs& a);

// FP8GlobalAveragePool and FP8ChannelMul: a 4-D FP8 X as [n, hw, c] (NHWC) or [n, c, hw] (NCHW).
struct ChannelOpAttrs {
  bool nhwc = true;
  ONNXTensorElementDataType output_type = ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E4M3FN;  // FP8ChannelMul only
};
// `with_output_dtype`: FP8ChannelMul's output_dtype (an FP8 type, FLOAT or FLOAT16); FP8GlobalAveragePool has none.
ChannelOpAttrs parse_channel_op_attrs(const OrtKernelInfo* info, bool with_output_dtype);

struct ChannelOpRun {
  Tensor x, x_scale, g, y_scale, y;
  int64_t n = 0, hw = 0, c = 0;
};
// FP8GlobalAveragePool: X and x_scale checked, Y float32 [n, 1, 1, c] (NHWC) or [n, c, 1, 1] allocated.
ChannelOpRun begin_global_average_pool(OrtKernelContext* ctx, const ChannelOpAttrs& a);
// FP8ChannelMul: X, x_scale, G ([n, 1, 1, c] or [n, c, 1, 1], float32) and y_scale checked, Y allocated.
ChannelOpRun begin_channel_mul(OrtKernelContext* ctx, const ChannelOpAttrs& a);

}  // namespace fp8ort
