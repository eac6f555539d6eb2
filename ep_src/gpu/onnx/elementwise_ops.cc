// Elementwise ONNX ops on the GPU device: unary math (incl. Clip with CPU-resident min/max, Gelu, Ceil/Floor),
// broadcasting binary math, Mod, comparisons and logical ops (float, integer, bool), Max/Min, Not/IsNaN, Where, Cast.
// float16 is computed in float32 and rounded once on the device.
#include <cmath>
#include <limits>
#include <string>

#include "gpu/onnx/tensor_ops.h"
#include "ops/fp8_numerics.h"

namespace fp8ort {
namespace gpu_onnx {
namespace {

bool is_math_type(ONNXTensorElementDataType t) {
  return t == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT || t == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16;
}

void require_math_type(const Tensor& t, const char* name) {
  if (!is_math_type(t.type)) {
    fail(std::string("input ") + name + " is " + type_name(t.type) + "; the GPU kernel takes float32 or float16",
         ORT_NOT_IMPLEMENTED);
  }
}

const char* unary_name(int op) {
  switch (op) {
    case FP8ORT_UNARY_RELU: return "Relu";
    case FP8ORT_UNARY_SIGMOID: return "Sigmoid";
    case FP8ORT_UNARY_TANH: return "Tanh";
    case FP8ORT_UNARY_ERF: return "Erf";
    case FP8ORT_UNARY_SQRT: return "Sqrt";
    case FP8ORT_UNARY_EXP: return "Exp";
    case FP8ORT_UNARY_NEG: return "Neg";
    case FP8ORT_UNARY_ABS: return "Abs";
    case FP8ORT_UNARY_RECIPROCAL: return "Reciprocal";
    case FP8ORT_UNARY_HARD_SIGMOID: return "HardSigmoid";
    case FP8ORT_UNARY_HARD_SWISH: return "HardSwish";
    case FP8ORT_UNARY_CLIP: return "Clip";
    case FP8ORT_UNARY_CEIL: return "Ceil";
    case FP8ORT_UNARY_FLOOR: return "Floor";
    default: return "Gelu";
  }
}

const char* binary_name(int op) {
  switch (op) {
    case FP8ORT_BINARY_ADD: return "Add";
    case FP8ORT_BINARY_SUB: return "Sub";
    case FP8ORT_BINARY_MUL: return "Mul";
    case FP8ORT_BINARY_DIV: return "Div";
    case FP8ORT_BINARY_POW: return "Pow";
    case FP8ORT_BINARY_EQUAL: return "Equal";
    case FP8ORT_BINARY_LESS: return "Less";
    case FP8ORT_BINARY_GREATER: return "Greater";
    case FP8ORT_BINARY_MAX: return "Max";
    case FP8ORT_BINARY_MIN: return "Min";
    case FP8ORT_BINARY_LESS_OR_EQUAL: return "LessOrEqual";
    case FP8ORT_BINARY_GREATER_OR_EQUAL: return "GreaterOrEqual";
    case FP8ORT_BINARY_AND: return "And";
    case FP8ORT_BINARY_OR: return "Or";
    case FP8ORT_BINARY_MOD:
    case FP8ORT_BINARY_FMOD: return "Mod";
    default: return "Xor";
  }
}

bool is_logical(fp8ort_binary_op op) {
  return op == FP8ORT_BINARY_AND || op == FP8ORT_BINARY_OR || op == FP8ORT_BINARY_XOR;
}

// The operand types the device kernel takes for `op` (onnx_kernels.h), with the message the CPU device gives.
void require_binary_types(fp8ort_binary_op op, const Tensor& a, const Tensor& b) {
  if (op == FP8ORT_BINARY_POW) {
    require_math_type(a, "A");
    require_math_type(b, "B");
    return;
  }
  if (a.type != b.type) {
    fail(std::string("inputs have different types ") + type_name(a.type) + " and " + type_name(b.type) +
         "; cast one of them");
  }
  const ONNXTensorElementDataType t = a.type;
  if (is_logical(op)) {
    if (t != ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL) fail(std::string("inputs must be bool, got ") + type_name(t));
    return;
  }
  const bool integer = t == ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64 || t == ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32;
  const bool ok = is_math_type(t) || integer || (op == FP8ORT_BINARY_EQUAL && t == ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL);
  if (!ok) fail(std::string("element type ") + type_name(t) + " is not supported; use float32, float16, int64 or int32");
  if (op == FP8ORT_BINARY_MOD && is_math_type(t)) {
    fail("fmod = 0 is defined for integers only; set fmod = 1 for float inputs");
  }
}

// y = op(x) with two float parameters (HardSigmoid's alpha/beta, Clip's bounds).
class UnaryKernel : public Kernel {
 public:
  UnaryKernel(const OrtKernelInfo* info, fp8ort_unary_op op, float alpha, float beta) : op_(op), alpha_(alpha), beta_(beta) {
    oc_ = {unary_name(op), node_name(info)};
  }
  void compute(OrtKernelContext* ctx) override {
    const Tensor x = input(ctx, 0);
    require_math_type(x, "X");
    float alpha = alpha_, beta = beta_;
    if (op_ == FP8ORT_UNARY_CLIP) clip_bounds(ctx, x.type, &alpha, &beta);
    Tensor y = output(ctx, 0, x.shape);
    if (x.size == 0) return;
    gpu_check(fp8ort_onnx_unary(op_, x.data, y.mutable_data, static_cast<int32_t>(x.type), x.size, alpha, beta,
                                compute_stream(ctx)),
              "fp8ort_onnx_unary");
  }

 private:
  // Clip's min (input 1) and max (input 2): optional scalars of X's type in CPU memory.
  static void clip_bounds(OrtKernelContext* ctx, ONNXTensorElementDataType type, float* lo, float* hi) {
    *lo = -std::numeric_limits<float>::infinity();
    *hi = std::numeric_limits<float>::infinity();
    const char* names[2] = {"min", "max"};
    float* dst[2] = {lo, hi};
    for (int k = 0; k < 2; ++k) {
      const Tensor t = input(ctx, static_cast<size_t>(k + 1));
      if (!t.present()) continue;
      if (t.type != type) {
        fail(std::string("input ") + names[k] + " is " + type_name(t.type) + " but X is " + type_name(type) +
             "; give min/max in X's type");
      }
      if (t.size != 1) fail(std::string("input ") + names[k] + " must be a scalar; got shape " + shape_str(t.shape));
      *dst[k] = type == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT ? *static_cast<const float*>(t.data)
                                                            : f16_to_f32(*static_cast<const uint16_t*>(t.data));
    }
  }

  fp8ort_unary_op op_;
  float alpha_, beta_;
};

class BinaryKernel : public Kernel {
 public:
  BinaryKernel(const OrtKernelInfo* info, fp8ort_binary_op op) : op_(op) { oc_ = {binary_name(op), node_name(info)}; }
  void compute(OrtKernelContext* ctx) override {
    const Tensor a = input(ctx, 0), b = input(ctx, 1);
    require_binary_types(op_, a, b);
    const std::vector<int64_t> out = broadcast_shape({a.shape, b.shape});
    Tensor y = output(ctx, 0, out);
    if (element_count(out) == 0) return;
    const fp8ort_nd nd = to_device_walk(broadcast_walk(out, {&a.shape, &b.shape}));
    gpu_check(fp8ort_onnx_binary(op_, a.data, static_cast<int32_t>(a.type), b.data, static_cast<int32_t>(b.type),
                                 y.mutable_data, &nd, compute_stream(ctx)),
              "fp8ort_onnx_binary");
  }

 private:
  fp8ort_binary_op op_;
};

// Max/Min of one or more inputs broadcast together: y = op(in0, in0) (in0 broadcast to y), then y = op(y, in_k)
// in place.
class ExtremumKernel : public Kernel {
 public:
  ExtremumKernel(const OrtKernelInfo* info, fp8ort_binary_op op) : op_(op) { oc_ = {binary_name(op), node_name(info)}; }
  void compute(OrtKernelContext* ctx) override {
    const std::vector<Tensor> ins = all_inputs(ctx);
    if (ins.empty()) fail("needs at least one input");
    std::vector<Shape> shapes;
    for (const Tensor& t : ins) {
      require_binary_types(op_, ins[0], t);
      shapes.push_back(t.shape);
    }
    const size_t n = ins.size();
    const Shape out = broadcast_shape(shapes);
    Tensor y = output(ctx, 0, out);
    if (element_count(out) == 0) return;
    void* stream = compute_stream(ctx);
    const auto type = static_cast<int32_t>(ins[0].type);
    const fp8ort_nd first = to_device_walk(broadcast_walk(out, {&ins[0].shape, &ins[0].shape}));
    gpu_check(fp8ort_onnx_binary(op_, ins[0].data, type, ins[0].data, type, y.mutable_data, &first, stream),
              "fp8ort_onnx_binary");
    for (size_t i = 1; i < n; ++i) {
      const fp8ort_nd nd = to_device_walk(broadcast_walk(out, {&out, &ins[i].shape}));
      gpu_check(fp8ort_onnx_binary(op_, y.mutable_data, type, ins[i].data, type, y.mutable_data, &nd, stream),
                "fp8ort_onnx_binary");
    }
  }

 private:
  fp8ort_binary_op op_;
};

// Not (bool) and IsNaN (float32/float16), both giving bool.
class PredicateKernel : public Kernel {
 public:
  PredicateKernel(const OrtKernelInfo* info, fp8ort_predicate_op op) : op_(op) {
    oc_ = {op == FP8ORT_PREDICATE_NOT ? "Not" : "IsNaN", node_name(info)};
  }
  void compute(OrtKernelContext* ctx) override {
    const Tensor x = input(ctx, 0);
    if (op_ == FP8ORT_PREDICATE_NOT && x.type != ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL) {
      fail(std::string("input must be bool, got ") + type_name(x.type));
    }
    if (op_ == FP8ORT_PREDICATE_ISNAN && !is_math_type(x.type)) {
      fail(std::string("input must be float32 or float16, got ") + type_name(x.type));
    }
    Tensor y = output(ctx, 0, x.shape);
    if (x.size == 0) return;
    gpu_check(fp8ort_onnx_predicate(op_, x.data, static_cast<int32_t>(x.type), y.mutable_data, x.size, compute_stream(ctx)),
              "fp8ort_onnx_predicate");
  }

 private:
  fp8ort_predicate_op op_;
};

class WhereKernel : public Kernel {
 public:
  explicit WhereKernel(const OrtKernelInfo* info) { oc_ = {"Where", node_name(info)}; }
  void compute(OrtKernelContext* ctx) override {
    const Tensor c = input(ctx, 0), x = input(ctx, 1), y = input(ctx, 2);
    if (c.type != ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL) fail(std::string("input condition must be bool; got ") + type_name(c.type));
    if (x.type != y.type) {
      fail(std::string("inputs X and Y differ in type (") + type_name(x.type) + ", " + type_name(y.type) + ")");
    }
    const int64_t elem = require_element_size(x, "X");
    const std::vector<int64_t> out = broadcast_shape({c.shape, x.shape, y.shape});
    Tensor z = output(ctx, 0, out);
    if (element_count(out) == 0) return;
    const fp8ort_nd nd = to_device_walk(broadcast_walk(out, {&c.shape, &x.shape, &y.shape}));
    gpu_check(fp8ort_onnx_where(c.data, x.data, y.data, z.mutable_data, elem, &nd, compute_stream(ctx)),
              "fp8ort_onnx_where");
  }
};

bool is_cast_type(ONNXTensorElementDataType t) {
  switch (t) {
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8: return true;
    default: return false;
  }
}

bool is_fp8(ONNXTensorElementDataType t) {
  return t == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E4M3FN || t == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E4M3FNUZ ||
         t == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E5M2 || t == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E5M2FNUZ;
}

constexpr const char* kCastTypes = "float32/float16/int64/int32/bool/uint8, or FP8 from/to float32/float16";

// Cast among the numeric types, and between float32/float16 and the FP8 types (saturate: opset 19).
class CastKernel : public Kernel {
 public:
  explicit CastKernel(const OrtKernelInfo* info) {
    oc_ = {"Cast", node_name(info)};
    to_ = attr_elem_type(info, "to", ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED);
    saturate_ = attr_int(info, "saturate", 1) != 0;
    if (!is_cast_type(to_) && !is_fp8(to_)) {
      fail("attribute to = " + std::to_string(static_cast<int>(to_)) + " is not a type the GPU Cast takes (" +
               kCastTypes + ")",
           ORT_NOT_IMPLEMENTED);
    }
  }
  void compute(OrtKernelContext* ctx) override {
    const Tensor x = input(ctx, 0);
    const bool fp8_pair = (is_fp8(to_) && is_math_type(x.type)) || (is_fp8(x.type) && is_math_type(to_));
    if (!fp8_pair && !(is_cast_type(x.type) && is_cast_type(to_))) {
      fail(std::string("Cast from ") + type_name(x.type) + " to " + type_name(to_) + " is not supported on the GPU (" +
               kCastTypes + ")",
           ORT_NOT_IMPLEMENTED);
    }
    Tensor y = output(ctx, 0, x.shape);
    if (y.type != to_) {
      fail(std::string("the output ORT allocated is ") + type_name(y.type) + " but attribute to asks for " + type_name(to_),
           ORT_FAIL);
    }
    if (x.size == 0) return;
    if (fp8_pair) {
      gpu_check(fp8ort_onnx_cast_fp8(x.data, static_cast<int32_t>(x.type), y.mutable_data, static_cast<int32_t>(to_),
                                     x.size, saturate_ ? 1 : 0, compute_stream(ctx)),
                "fp8ort_onnx_cast_fp8");
      return;
    }
    gpu_check(fp8ort_onnx_cast(x.data, static_cast<int32_t>(x.type), y.mutable_data, static_cast<int32_t>(to_), x.size,
                               compute_stream(ctx)),
              "fp8ort_onnx_cast");
  }

 private:
  ONNXTensorElementDataType to_;
  bool saturate_ = true;
};

constexpr float kHardSigmoidAlpha = 0.2f;  // ONNX defaults
constexpr float kHardSigmoidBeta = 0.5f;

}  // namespace

template <int Op>
std::unique_ptr<Kernel> create_unary(const OrtKernelInfo* info) {
  float alpha = 0.0f, beta = 0.0f;
  if (Op == FP8ORT_UNARY_HARD_SIGMOID) {
    alpha = attr_float(info, "alpha", kHardSigmoidAlpha);
    beta = attr_float(info, "beta", kHardSigmoidBeta);
  }
  return std::make_unique<UnaryKernel>(info, static_cast<fp8ort_unary_op>(Op), alpha, beta);
}

template <int Op>
std::unique_ptr<Kernel> create_binary(const OrtKernelInfo* info) {
  if (Op == FP8ORT_BINARY_MAX || Op == FP8ORT_BINARY_MIN) {
    return std::make_unique<ExtremumKernel>(info, static_cast<fp8ort_binary_op>(Op));
  }
  return std::make_unique<BinaryKernel>(info, static_cast<fp8ort_binary_op>(Op));
}

std::unique_ptr<Kernel> create_not(const OrtKernelInfo* info) {
  return std::make_unique<PredicateKernel>(info, FP8ORT_PREDICATE_NOT);
}
std::unique_ptr<Kernel> create_isnan(const OrtKernelInfo* info) {
  return std::make_unique<PredicateKernel>(info, FP8ORT_PREDICATE_ISNAN);
}

template std::unique_ptr<Kernel> create_unary<FP8ORT_UNARY_RELU>(const OrtKernelInfo*);
template std::unique_ptr<Kernel> create_unary<FP8ORT_UNARY_SIGMOID>(const OrtKernelInfo*);
template std::unique_ptr<Kernel> create_unary<FP8ORT_UNARY_TANH>(const OrtKernelInfo*);
template std::unique_ptr<Kernel> create_unary<FP8ORT_UNARY_ERF>(const OrtKernelInfo*);
template std::unique_ptr<Kernel> create_unary<FP8ORT_UNARY_SQRT>(const OrtKernelInfo*);
template std::unique_ptr<Kernel> create_unary<FP8ORT_UNARY_EXP>(const OrtKernelInfo*);
template std::unique_ptr<Kernel> create_unary<FP8ORT_UNARY_NEG>(const OrtKernelInfo*);
template std::unique_ptr<Kernel> create_unary<FP8ORT_UNARY_ABS>(const OrtKernelInfo*);
template std::unique_ptr<Kernel> create_unary<FP8ORT_UNARY_RECIPROCAL>(const OrtKernelInfo*);
template std::unique_ptr<Kernel> create_unary<FP8ORT_UNARY_HARD_SIGMOID>(const OrtKernelInfo*);
template std::unique_ptr<Kernel> create_unary<FP8ORT_UNARY_HARD_SWISH>(const OrtKernelInfo*);
template std::unique_ptr<Kernel> create_unary<FP8ORT_UNARY_CEIL>(const OrtKernelInfo*);
template std::unique_ptr<Kernel> create_unary<FP8ORT_UNARY_FLOOR>(const OrtKernelInfo*);
template std::unique_ptr<Kernel> create_binary<FP8ORT_BINARY_ADD>(const OrtKernelInfo*);
template std::unique_ptr<Kernel> create_binary<FP8ORT_BINARY_SUB>(const OrtKernelInfo*);
template std::unique_ptr<Kernel> create_binary<FP8ORT_BINARY_MUL>(const OrtKernelInfo*);
template std::unique_ptr<Kernel> create_binary<FP8ORT_BINARY_DIV>(const OrtKernelInfo*);
template std::unique_ptr<Kernel> create_binary<FP8ORT_BINARY_POW>(const OrtKernelInfo*);
template std::unique_ptr<Kernel> create_binary<FP8ORT_BINARY_EQUAL>(const OrtKernelInfo*);
template std::unique_ptr<Kernel> create_binary<FP8ORT_BINARY_LESS>(const OrtKernelInfo*);
template std::unique_ptr<Kernel> create_binary<FP8ORT_BINARY_GREATER>(const OrtKernelInfo*);
template std::unique_ptr<Kernel> create_binary<FP8ORT_BINARY_MAX>(const OrtKernelInfo*);
template std::unique_ptr<Kernel> create_binary<FP8ORT_BINARY_MIN>(const OrtKernelInfo*);
template std::unique_ptr<Kernel> create_binary<FP8ORT_BINARY_LESS_OR_EQUAL>(const OrtKernelInfo*);
template std::unique_ptr<Kernel> create_binary<FP8ORT_BINARY_GREATER_OR_EQUAL>(const OrtKernelInfo*);
template std::unique_ptr<Kernel> create_binary<FP8ORT_BINARY_AND>(const OrtKernelInfo*);
template std::unique_ptr<Kernel> create_binary<FP8ORT_BINARY_OR>(const OrtKernelInfo*);
template std::unique_ptr<Kernel> create_binary<FP8ORT_BINARY_XOR>(const OrtKernelInfo*);

// Mod: fmod = 0 takes the divisor's sign (integers only), fmod = 1 the dividend's; an integer divisor 0 gives 0 (the
// GPU cannot report it within a run).
std::unique_ptr<Kernel> create_mod(const OrtKernelInfo* info) {
  const bool fmod = attr_int(info, "fmod", 0) != 0;
  return std::make_unique<BinaryKernel>(info, fmod ? FP8ORT_BINARY_FMOD : FP8ORT_BINARY_MOD);
}

std::unique_ptr<Kernel> create_clip(const OrtKernelInfo* info) {
  return std::make_unique<UnaryKernel>(info, FP8ORT_UNARY_CLIP, 0.0f, 0.0f);
}

std::unique_ptr<Kernel> create_gelu(const OrtKernelInfo* info) {
  const std::string approximate = attr_string(info, "approximate", "none");
  if (approximate != "none" && approximate != "tanh") {
    fail("Gelu '" + node_name(info) + "': attribute approximate is '" + approximate + "'; use \"none\" or \"tanh\"");
  }
  return std::make_unique<UnaryKernel>(info, approximate == "tanh" ? FP8ORT_UNARY_GELU_TANH : FP8ORT_UNARY_GELU, 0.0f,
                                       0.0f);
}

std::unique_ptr<Kernel> create_where(const OrtKernelInfo* info) { return std::make_unique<WhereKernel>(info); }
std::unique_ptr<Kernel> create_cast(const OrtKernelInfo* info) { return std::make_unique<CastKernel>(info); }

}  // namespace gpu_onnx
}  // namespace fp8ort
