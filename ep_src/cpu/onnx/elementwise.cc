// Elementwise ONNX ops on the CPU device: activations and other unary math (Ceil/Floor too), broadcasting binary
// arithmetic, Mod, comparisons, Max/Min, logical ops, Not/IsNaN, Where, Clip. float16 is computed in float32 and
// rounded once.
#include <cmath>
#include <cstring>
#include <type_traits>

#include "cpu/onnx/common.h"

namespace fp8ort {
namespace cpu_onnx {
namespace {

constexpr float kInvSqrt2 = 0.70710678118654752440f;
constexpr float kSqrt2OverPi = 0.79788456080286535588f;
constexpr float kGeluTanhCubic = 0.044715f;
constexpr float kHardSwishScale = 1.0f / 6.0f;
constexpr float kHardSigmoidAlpha = 0.2f;
constexpr float kHardSigmoidBeta = 0.5f;
constexpr int64_t kParallelChunk = 1 << 14;

// y = fn(x) elementwise in float32 (float16 through FloatIn/FloatOut), in chunks on ORT's thread pool;
// fn(x, y, count) handles one chunk.
template <class Fn>
void map_chunks(OrtKernelContext* ctx, const Tensor& x, Tensor& y, Fn fn) {
  if (x.size == 0) return;
  FloatIn xin(x);
  FloatOut yout(y);
  const float* xp = xin.data();
  float* yp = yout.data();
  const int64_t n = x.size;
  const int64_t chunks = (n + kParallelChunk - 1) / kParallelChunk;
  auto task = [&](size_t c) {
    const int64_t i0 = static_cast<int64_t>(c) * kParallelChunk;
    fn(xp + i0, yp + i0, std::min(kParallelChunk, n - i0));
  };
  parallel_for(ctx, static_cast<size_t>(chunks), task);
  yout.finish();
}

enum class Unary { kRelu, kSigmoid, kHardSigmoid, kHardSwish, kErf, kTanh, kSqrt, kGelu, kGeluTanh, kCeil, kFloor };

class UnaryKernel : public Kernel {
 public:
  UnaryKernel(const OrtKernelInfo* info, const char* op, Unary kind) : kind_(kind) {
    oc_ = {op, node_name(info)};
    alpha_ = attr_float(info, "alpha", kHardSigmoidAlpha);
    beta_ = attr_float(info, "beta", kHardSigmoidBeta);
    if (kind == Unary::kGelu) {
      const std::string approx = attr_string(info, "approximate", "none");
      if (approx == "tanh") {
        kind_ = Unary::kGeluTanh;
      } else if (approx != "none") {
        fail(std::string("approximate='") + approx + "' is not defined; use 'none' or 'tanh'");
      }
    }
  }

  void compute(OrtKernelContext* ctx) override {
    const Tensor x = input(ctx, 0);
    Tensor y = output(ctx, 0, x.shape);
    map_chunks(ctx, x, y, [this](const float* xp, float* yp, int64_t n) { apply(xp, yp, n); });
  }

 private:
  void apply(const float* x, float* y, int64_t n) const {
    switch (kind_) {
      case Unary::kRelu:
        for (int64_t i = 0; i < n; ++i) y[i] = x[i] < 0.0f ? 0.0f : x[i];
        break;
      case Unary::kSigmoid:
        for (int64_t i = 0; i < n; ++i) y[i] = 1.0f / (1.0f + std::exp(-x[i]));
        break;
      case Unary::kHardSigmoid:
        for (int64_t i = 0; i < n; ++i) y[i] = std::fmin(1.0f, std::fmax(0.0f, alpha_ * x[i] + beta_));
        break;
      case Unary::kHardSwish:
        for (int64_t i = 0; i < n; ++i) {
          y[i] = x[i] * std::fmin(1.0f, std::fmax(0.0f, x[i] * kHardSwishScale + kHardSigmoidBeta));
        }
        break;
      case Unary::kErf:
        for (int64_t i = 0; i < n; ++i) y[i] = std::erf(x[i]);
        break;
      case Unary::kTanh:
        for (int64_t i = 0; i < n; ++i) y[i] = std::tanh(x[i]);
        break;
      case Unary::kSqrt:
        for (int64_t i = 0; i < n; ++i) y[i] = std::sqrt(x[i]);
        break;
      case Unary::kGelu:
        for (int64_t i = 0; i < n; ++i) y[i] = 0.5f * x[i] * (1.0f + std::erf(x[i] * kInvSqrt2));
        break;
      case Unary::kGeluTanh:
        for (int64_t i = 0; i < n; ++i) {
          const float v = x[i];
          y[i] = 0.5f * v * (1.0f + std::tanh(kSqrt2OverPi * (v + kGeluTanhCubic * v * v * v)));
        }
        break;
      case Unary::kCeil:
        for (int64_t i = 0; i < n; ++i) y[i] = std::ceil(x[i]);
        break;
      case Unary::kFloor:
        for (int64_t i = 0; i < n; ++i) y[i] = std::floor(x[i]);
        break;
    }
  }

  Unary kind_;
  float alpha_ = kHardSigmoidAlpha;
  float beta_ = kHardSigmoidBeta;
};

template <Unary kKind>
std::unique_ptr<Kernel> make_unary(const OrtKernelInfo* info) {
  static const char* const kNames[] = {"Relu", "Sigmoid", "HardSigmoid", "HardSwish", "Erf", "Tanh",
                                       "Sqrt", "Gelu",    "Gelu",        "Ceil",      "Floor"};
  return std::make_unique<UnaryKernel>(info, kNames[static_cast<int>(kKind)], kKind);
}

enum class Binary {
  kAdd, kSub, kMul, kDiv, kPow, kEqual, kLess, kGreater, kLessOrEqual, kGreaterOrEqual, kMax, kMin, kAnd, kOr, kXor
};
constexpr const char* kBinaryNames[] = {"Add",  "Sub",           "Mul", "Div", "Pow", "Equal", "Less", "Greater",
                                        "LessOrEqual", "GreaterOrEqual", "Max", "Min", "And", "Or",   "Xor"};

constexpr bool is_comparison(Binary k) { return k >= Binary::kEqual && k <= Binary::kGreaterOrEqual; }
constexpr bool is_logical(Binary k) { return k >= Binary::kAnd; }

template <Binary kKind, class T>
bool compare(T p, T q) {
  if constexpr (kKind == Binary::kEqual) return p == q;
  if constexpr (kKind == Binary::kLess) return p < q;
  if constexpr (kKind == Binary::kGreater) return p > q;
  if constexpr (kKind == Binary::kLessOrEqual) return p <= q;
  return p >= q;
}

// Max/Min: a NaN operand gives NaN (std::fmax would drop it).
template <Binary kKind, class T>
T extremum(T p, T q) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(p) || std::isnan(q)) return p + q;
  }
  if constexpr (kKind == Binary::kMax) return p < q ? q : p;
  return q < p ? q : p;
}

template <class T, class Out, class F>
void binary_loop(OrtKernelContext* ctx, const T* a, const T* b, Out* y, const std::vector<int64_t>& out_shape,
                 const std::vector<std::vector<int64_t>>& strides, F f) {
  for_each_broadcast_row(ctx, out_shape, strides,
                         [&](int64_t o, const int64_t* off, int64_t n, const int64_t* st) {
                           const T* pa = a + off[0];
                           const T* pb = b + off[1];
                           Out* py = y + o;
                           if (st[0] == 1 && st[1] == 1) {
                             for (int64_t i = 0; i < n; ++i) py[i] = f(pa[i], pb[i]);
                           } else {
                             for (int64_t i = 0; i < n; ++i) py[i] = f(pa[i * st[0]], pb[i * st[1]]);
                           }
                         });
}

// y = a (op) b with broadcasting; y may be a itself when a already has the output's shape (Max/Min fold their
// inputs into y this way).
template <Binary kKind, class T>
void typed_binary(OrtKernelContext* ctx, const T* a, const T* b, void* y, const std::vector<int64_t>& shape,
                  const std::vector<std::vector<int64_t>>& strides) {
  if constexpr (is_comparison(kKind)) {
    binary_loop(ctx, a, b, static_cast<bool*>(y), shape, strides, [](T p, T q) { return compare<kKind>(p, q); });
  } else if constexpr (kKind == Binary::kMax || kKind == Binary::kMin) {
    binary_loop(ctx, a, b, static_cast<T*>(y), shape, strides, [](T p, T q) { return extremum<kKind>(p, q); });
  } else if constexpr (std::is_same_v<T, bool>) {
    binary_loop(ctx, a, b, static_cast<bool*>(y), shape, strides, [](bool p, bool q) {
      if constexpr (kKind == Binary::kAnd) return p && q;
      if constexpr (kKind == Binary::kOr) return p || q;
      return p != q;
    });
  } else if constexpr (std::is_floating_point_v<T>) {
    binary_loop(ctx, a, b, static_cast<T*>(y), shape, strides, [](T p, T q) {
      if constexpr (kKind == Binary::kAdd) return p + q;
      if constexpr (kKind == Binary::kSub) return p - q;
      if constexpr (kKind == Binary::kMul) return p * q;
      if constexpr (kKind == Binary::kDiv) return p / q;
      return static_cast<T>(std::pow(p, q));
    });
  } else {
    // Wrapping arithmetic in unsigned types: int overflow is not undefined behaviour here. ONNX integer Div
    // truncates toward zero, as C++ does; min / -1 wraps (the divisor 0 is refused before this).
    using U = std::make_unsigned_t<T>;
    binary_loop(ctx, a, b, static_cast<T*>(y), shape, strides, [](T p, T q) {
      if constexpr (kKind == Binary::kAdd) return static_cast<T>(U(p) + U(q));
      if constexpr (kKind == Binary::kSub) return static_cast<T>(U(p) - U(q));
      if constexpr (kKind == Binary::kMul) return static_cast<T>(U(p) * U(q));
      return (q == -1) ? static_cast<T>(U(0) - U(p)) : static_cast<T>(p / q);
    });
  }
}

// Which element types an op takes here, and the message when it gets another.
template <Binary kKind>
void check_types(ONNXTensorElementDataType a, ONNXTensorElementDataType b) {
  const bool floating = a == kF32 || a == kF16;
  if constexpr (kKind == Binary::kPow) {
    if (!floating || !(b == kF32 || b == kF16)) {
      fail(std::string("Pow supports float32/float16 base and exponent here, got ") + type_name(a) + " and " +
           type_name(b) + "; cast the inputs to float32");
    }
    return;
  }
  if (a != b) fail(std::string("inputs have different types ") + type_name(a) + " and " + type_name(b) + "; cast one of them");
  if constexpr (is_logical(kKind)) {
    if (a != kBool) fail(std::string("inputs must be bool, got ") + type_name(a));
  } else {
    const bool ok = floating || a == kI64 || a == kI32 || (kKind == Binary::kEqual && a == kBool);
    if (!ok) {
      fail(std::string("element type ") + type_name(a) + " is not supported; use float32, float16, int64 or int32");
    }
  }
}

// y = a (op) b for any of the types check_types allows; float16 is computed in float32 and rounded once.
template <Binary kKind>
void apply_binary(OrtKernelContext* ctx, const Tensor& a, const Tensor& b, Tensor& y, const void* a_data,
                  const std::vector<int64_t>& shape) {
  const std::vector<std::vector<int64_t>> strides = {broadcast_strides(a.shape, shape),
                                                     broadcast_strides(b.shape, shape)};
  if (a.type == kF32 || a.type == kF16) {
    Tensor a_view = a;
    a_view.data = a_data;
    FloatIn ain(a_view);
    FloatIn bin(b);
    if constexpr (is_comparison(kKind)) {
      typed_binary<kKind, float>(ctx, ain.data(), bin.data(), y.mutable_data, shape, strides);
    } else {
      FloatOut yout(y);
      typed_binary<kKind, float>(ctx, ain.data(), bin.data(), yout.data(), shape, strides);
      yout.finish();
    }
    return;
  }
  if constexpr (!(kKind == Binary::kPow)) {
    if (a.type == kI64 || a.type == kI32) {
      if constexpr (kKind == Binary::kDiv) {
        for (int64_t i = 0; i < b.size; ++i) {
          const int64_t v = a.type == kI64 ? static_cast<const int64_t*>(b.data)[i] : static_cast<const int32_t*>(b.data)[i];
          if (v == 0) fail(std::string("integer division by zero (divisor element ") + std::to_string(i) + ")");
        }
      }
      if constexpr (!is_logical(kKind)) {
        if (a.type == kI64) {
          typed_binary<kKind, int64_t>(ctx, static_cast<const int64_t*>(a_data), static_cast<const int64_t*>(b.data),
                                       y.mutable_data, shape, strides);
        } else {
          typed_binary<kKind, int32_t>(ctx, static_cast<const int32_t*>(a_data), static_cast<const int32_t*>(b.data),
                                       y.mutable_data, shape, strides);
        }
      }
      return;
    }
    if constexpr (kKind == Binary::kEqual || is_logical(kKind)) {
      typed_binary<kKind, bool>(ctx, static_cast<const bool*>(a_data), static_cast<const bool*>(b.data),
                                y.mutable_data, shape, strides);
    }
  }
}

template <Binary kKind>
class BinaryKernel : public Kernel {
 public:
  explicit BinaryKernel(const OrtKernelInfo* info) { oc_ = {kBinaryNames[static_cast<int>(kKind)], node_name(info)}; }

  void compute(OrtKernelContext* ctx) override {
    const Tensor a = input(ctx, 0);
    const Tensor b = input(ctx, 1);
    check_types<kKind>(a.type, b.type);
    const std::vector<int64_t> shape = broadcast_shape({a.shape, b.shape});
    Tensor y = output(ctx, 0, shape);
    if (y.size == 0) return;
    apply_binary<kKind>(ctx, a, b, y, a.data, shape);
  }
};

// Max/Min of one or more inputs, broadcast together: folded pairwise into the output.
template <Binary kKind>
class ExtremumKernel : public Kernel {
 public:
  explicit ExtremumKernel(const OrtKernelInfo* info) { oc_ = {kBinaryNames[static_cast<int>(kKind)], node_name(info)}; }

  void compute(OrtKernelContext* ctx) override {
    const std::vector<Tensor> ins = all_inputs(ctx);
    if (ins.empty()) fail("needs at least one input");
    std::vector<Shape> shapes;
    for (const Tensor& t : ins) {
      check_types<kKind>(ins[0].type, t.type);
      shapes.push_back(t.shape);
    }
    const size_t n = ins.size();
    const Shape shape = broadcast_shape(shapes);
    Tensor y = output(ctx, 0, shape);
    if (y.size == 0) return;
    // y = in0 broadcast to the output shape, then y = op(y, in_k) in place
    Tensor acc = y;
    acc.shape = shape;
    apply_binary<kKind>(ctx, ins[0], ins[0], y, ins[0].data, shape);
    for (size_t i = 1; i < n; ++i) apply_binary<kKind>(ctx, acc, ins[i], y, y.mutable_data, shape);
  }
};

template <Binary kKind>
std::unique_ptr<Kernel> make_binary(const OrtKernelInfo* info) {
  if constexpr (kKind == Binary::kMax || kKind == Binary::kMin) return std::make_unique<ExtremumKernel<kKind>>(info);
  return std::make_unique<BinaryKernel<kKind>>(info);
}

// Mod(A, B) with broadcasting. fmod = 0 (integers only): the remainder takes the divisor's sign, as Python's %;
// fmod = 1: C's fmod, the dividend's sign (integers truncate, floats use std::fmod in float32).
class ModKernel : public Kernel {
 public:
  explicit ModKernel(const OrtKernelInfo* info) {
    oc_ = {"Mod", node_name(info)};
    fmod_ = attr_int(info, "fmod", 0) != 0;
  }

  void compute(OrtKernelContext* ctx) override {
    const Tensor a = input(ctx, 0);
    const Tensor b = input(ctx, 1);
    check_types<Binary::kAdd>(a.type, b.type);
    const bool floating = a.type == kF32 || a.type == kF16;
    if (floating && !fmod_) fail("fmod = 0 is defined for integers only; set fmod = 1 for float inputs");
    const std::vector<int64_t> shape = broadcast_shape({a.shape, b.shape});
    Tensor y = output(ctx, 0, shape);
    if (y.size == 0) return;
    const std::vector<std::vector<int64_t>> strides = {broadcast_strides(a.shape, shape),
                                                       broadcast_strides(b.shape, shape)};
    if (floating) {
      FloatIn ain(a);
      FloatIn bin(b);
      FloatOut yout(y);
      binary_loop(ctx, ain.data(), bin.data(), yout.data(), shape, strides,
                  [](float p, float q) { return std::fmod(p, q); });
      yout.finish();
    } else if (a.type == kI64) {
      run_int<int64_t>(ctx, a, b, y, shape, strides);
    } else {
      run_int<int32_t>(ctx, a, b, y, shape, strides);
    }
  }

 private:
  template <class T>
  void run_int(OrtKernelContext* ctx, const Tensor& a, const Tensor& b, Tensor& y, const std::vector<int64_t>& shape,
               const std::vector<std::vector<int64_t>>& strides) const {
    const T* bp = static_cast<const T*>(b.data);
    for (int64_t i = 0; i < b.size; ++i) {
      if (bp[i] == 0) fail(std::string("integer modulo by zero (divisor element ") + std::to_string(i) + ")");
    }
    const bool fmod = fmod_;
    binary_loop(ctx, static_cast<const T*>(a.data), bp, static_cast<T*>(y.mutable_data), shape, strides,
                [fmod](T p, T q) -> T {
                  if (q == -1) return 0;  // min % -1 overflows in C++
                  const T r = static_cast<T>(p % q);
                  return (!fmod && r != 0 && ((r < 0) != (q < 0))) ? static_cast<T>(r + q) : r;
                });
  }

  bool fmod_ = false;
};

// Not (bool) and IsNaN (float32/float16 -> bool).
class PredicateKernel : public Kernel {
 public:
  PredicateKernel(const OrtKernelInfo* info, const char* op, bool is_nan) : is_nan_(is_nan) { oc_ = {op, node_name(info)}; }

  void compute(OrtKernelContext* ctx) override {
    const Tensor x = input(ctx, 0);
    Tensor y = output(ctx, 0, x.shape);
    bool* yp = static_cast<bool*>(y.mutable_data);
    if (!is_nan_) {
      if (x.type != kBool) fail(std::string("input must be bool, got ") + type_name(x.type));
      const bool* xp = static_cast<const bool*>(x.data);
      for (int64_t i = 0; i < x.size; ++i) yp[i] = !xp[i];
      return;
    }
    if (x.type != kF32 && x.type != kF16) fail(std::string("input must be float32 or float16, got ") + type_name(x.type));
    FloatIn xin(x);
    const float* xp = xin.data();
    for (int64_t i = 0; i < x.size; ++i) yp[i] = std::isnan(xp[i]);
  }

 private:
  bool is_nan_;
};

// Clip(input, min?, max?) with optional scalar bounds (opset 13).
class ClipKernel : public Kernel {
 public:
  explicit ClipKernel(const OrtKernelInfo* info) { oc_ = {"Clip", node_name(info)}; }

  void compute(OrtKernelContext* ctx) override {
    const Tensor x = input(ctx, 0);
    float lo = -INFINITY;
    float hi = INFINITY;
    read_bound(input(ctx, 1), x.type, "min", &lo);
    read_bound(input(ctx, 2), x.type, "max", &hi);
    Tensor y = output(ctx, 0, x.shape);
    map_chunks(ctx, x, y, [lo, hi](const float* xp, float* yp, int64_t n) {
      for (int64_t i = 0; i < n; ++i) yp[i] = std::isnan(xp[i]) ? xp[i] : std::fmin(hi, std::fmax(lo, xp[i]));
    });
  }

 private:
  void read_bound(const Tensor& t, ONNXTensorElementDataType type, const char* name, float* v) const {
    if (!t.present() || t.data == nullptr) return;
    if (t.size != 1) {
      fail(std::string("input '") + name + "' must be a scalar, got shape " + shape_str(t.shape));
    }
    if (t.type != type) fail(std::string("input '") + name + "' must have the input's type " + type_name(type));
    *v = t.type == kF32 ? *static_cast<const float*>(t.data) : f16_to_f32(*static_cast<const uint16_t*>(t.data));
  }
};

// Where(condition, X, Y): elements moved as bytes of the element's width.
class WhereKernel : public Kernel {
 public:
  explicit WhereKernel(const OrtKernelInfo* info) { oc_ = {"Where", node_name(info)}; }

  void compute(OrtKernelContext* ctx) override {
    const Tensor c = input(ctx, 0);
    const Tensor x = input(ctx, 1);
    const Tensor yv = input(ctx, 2);
    if (c.type != kBool) fail(std::string("condition must be bool, got ") + type_name(c.type));
    if (x.type != yv.type) {
      fail(std::string("X and Y have different types ") + std::string(type_name(x.type)) + " and " +
           type_name(yv.type));
    }
    const std::vector<int64_t> shape = broadcast_shape({c.shape, x.shape, yv.shape});
    const size_t es = element_size(x.type);
    Tensor out = output(ctx, 0, shape);
    if (out.size == 0) return;
    const std::vector<std::vector<int64_t>> strides = {
        broadcast_strides(c.shape, shape), broadcast_strides(x.shape, shape), broadcast_strides(yv.shape, shape)};
    switch (es) {
      case 1: run<uint8_t>(ctx, c, x, yv, out, shape, strides); break;
      case 2: run<uint16_t>(ctx, c, x, yv, out, shape, strides); break;
      case 4: run<uint32_t>(ctx, c, x, yv, out, shape, strides); break;
      default: run<uint64_t>(ctx, c, x, yv, out, shape, strides); break;
    }
  }

 private:
  template <class E>
  void run(OrtKernelContext* ctx, const Tensor& c, const Tensor& x, const Tensor& yv, Tensor& out,
           const std::vector<int64_t>& shape, const std::vector<std::vector<int64_t>>& strides) const {
    const bool* cp = static_cast<const bool*>(c.data);
    const E* xp = static_cast<const E*>(x.data);
    const E* yp = static_cast<const E*>(yv.data);
    E* op = static_cast<E*>(out.mutable_data);
    for_each_broadcast_row(ctx, shape, strides, [&](int64_t o, const int64_t* off, int64_t n, const int64_t* st) {
      for (int64_t i = 0; i < n; ++i) {
        op[o + i] = cp[off[0] + i * st[0]] ? xp[off[1] + i * st[1]] : yp[off[2] + i * st[2]];
      }
    });
  }
};

}  // namespace

std::vector<KernelDef> elementwise_kernels() {
  const TypeList f = float_types();
  const TypeList num = numeric_types();
  std::vector<KernelDef> rows = {
      {"", "Relu", 13, kLatestOpset, {{"T", f}}, {}, {}, make_unary<Unary::kRelu>},
      {"", "Sigmoid", 13, kLatestOpset, {{"T", f}}, {}, {}, make_unary<Unary::kSigmoid>},
      {"", "HardSigmoid", 6, kLatestOpset, {{"T", f}}, {}, {}, make_unary<Unary::kHardSigmoid>},
      {"", "HardSwish", 14, kLatestOpset, {{"T", f}}, {}, {}, make_unary<Unary::kHardSwish>},
      {"", "Erf", 13, kLatestOpset, {{"T", f}}, {}, {}, make_unary<Unary::kErf>},
      {"", "Tanh", 13, kLatestOpset, {{"T", f}}, {}, {}, make_unary<Unary::kTanh>},
      {"", "Sqrt", 13, kLatestOpset, {{"T", f}}, {}, {}, make_unary<Unary::kSqrt>},
      {"", "Gelu", 20, kLatestOpset, {{"T", f}}, {}, {}, make_unary<Unary::kGelu>},
      {"", "Ceil", 13, kLatestOpset, {{"T", f}}, {}, {}, make_unary<Unary::kCeil>},
      {"", "Floor", 13, kLatestOpset, {{"T", f}}, {}, {}, make_unary<Unary::kFloor>},
      {"", "Not", 1, kLatestOpset, {{"T", {kBool}}}, {}, {},
       [](const OrtKernelInfo* i) -> std::unique_ptr<Kernel> { return std::make_unique<PredicateKernel>(i, "Not", false); }},
      {"", "IsNaN", 13, kLatestOpset, {{"T1", f}, {"T2", {kBool}}}, {}, {},
       [](const OrtKernelInfo* i) -> std::unique_ptr<Kernel> { return std::make_unique<PredicateKernel>(i, "IsNaN", true); }},
      {"", "Add", 13, kLatestOpset, {{"T", num}}, {}, {}, make_binary<Binary::kAdd>},
      {"", "Sub", 13, kLatestOpset, {{"T", num}}, {}, {}, make_binary<Binary::kSub>},
      {"", "Mul", 13, kLatestOpset, {{"T", num}}, {}, {}, make_binary<Binary::kMul>},
      {"", "Div", 13, kLatestOpset, {{"T", num}}, {}, {}, make_binary<Binary::kDiv>},
      {"", "Pow", 13, kLatestOpset, {{"T", f}, {"T1", f}}, {}, {}, make_binary<Binary::kPow>},
      {"", "Mod", 10, kLatestOpset, {{"T", num}}, {}, {}, make_kernel<ModKernel>},  // 13 adds bfloat16
      {"", "Equal", 13, kLatestOpset, {{"T", {kF32, kF16, kI64, kI32, kBool}}, {"T1", {kBool}}}, {}, {},
       make_binary<Binary::kEqual>},
      {"", "Less", 13, kLatestOpset, {{"T", num}, {"T1", {kBool}}}, {}, {}, make_binary<Binary::kLess>},
      {"", "Greater", 13, kLatestOpset, {{"T", num}, {"T1", {kBool}}}, {}, {}, make_binary<Binary::kGreater>},
      {"", "LessOrEqual", 12, kLatestOpset, {{"T", num}, {"T1", {kBool}}}, {}, {}, make_binary<Binary::kLessOrEqual>},
      {"", "GreaterOrEqual", 12, kLatestOpset, {{"T", num}, {"T1", {kBool}}}, {}, {},
       make_binary<Binary::kGreaterOrEqual>},
      {"", "Max", 13, kLatestOpset, {{"T", num}}, {}, {}, make_binary<Binary::kMax>},
      {"", "Min", 13, kLatestOpset, {{"T", num}}, {}, {}, make_binary<Binary::kMin>},
      {"", "And", 7, kLatestOpset, {{"T", {kBool}}, {"T1", {kBool}}}, {}, {}, make_binary<Binary::kAnd>},
      {"", "Or", 7, kLatestOpset, {{"T", {kBool}}, {"T1", {kBool}}}, {}, {}, make_binary<Binary::kOr>},
      {"", "Xor", 7, kLatestOpset, {{"T", {kBool}}, {"T1", {kBool}}}, {}, {}, make_binary<Binary::kXor>},
      {"", "Clip", 13, kLatestOpset, {{"T", f}}, {}, {}, make_kernel<ClipKernel>},
      {"", "Where", 9, kLatestOpset, {{"B", {kBool}}, {"T", data_types()}}, {}, {}, make_kernel<WhereKernel>},
  };
  return rows;
}

}  // namespace cpu_onnx
}  // namespace fp8ort
