// The custom-op library route: RegisterCustomOps adds the com.fp8ort domain with CPU kernels.
//
// Each op is registered once with open input and output types. Its shape-inference function checks the
// input element types (so a wrong type fails at model load with a message naming the input) and sets the
// output's element type from the output_dtype attribute, which ORT's own custom-op inference cannot read.
#include <atomic>
#include <climits>
#include <mutex>
#include <string>
#include <vector>

#include "cpu/cpu_kernels.h"
#if defined(FP8ORT_WITH_GPU)
#include "gpu/gpu_ops.h"
#endif

namespace fp8ort {
namespace {

constexpr const char* kDomain = "com.fp8ort";
constexpr size_t kMaxInputs = 8;

enum class OpKind { kConv, kMatMul, kQuantize, kDequantize };

// One registration. `base` comes first so ORT's OrtCustomOp* can be cast back (standard layout).

struct OpDef {
  OrtCustomOp base;
  OpKind kind;
  const char* name;
  const char* provider;
  KernelFactory create;
  ONNXTensorElementDataType inputs[kMaxInputs];
  size_t input_count;
  size_t required_inputs;
};

const OpDef* def_of(const OrtCustomOp* op) { return reinterpret_cast<const OpDef*>(op); }

constexpr ONNXTensorElementDataType kAny = ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;

// ---- shape inference -----------------------------------------------------------------------------------

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

void set_output(OrtShapeInferContext* ctx, ONNXTensorElementDataType type, const Dims& d) {
  OrtTensorTypeAndShapeInfo* info = nullptr;
  check(g_ort->CreateTensorTypeAndShapeInfo(&info), "CreateTensorTypeAndShapeInfo");
  std::vector<const char*> names;
  for (const std::string& n : d.names) names.push_back(n.c_str());
  OrtStatus* st = g_ort->SetTensorElementType(info, type);
  if (st == nullptr) st = g_ort->SetDimensions(info, d.values.data(), d.values.size());
  if (st == nullptr) st = g_ort->SetSymbolicDimensions(info, names.data(), names.size());
  if (st == nullptr) st = g_ort->ShapeInferContext_SetOutputTypeShape(ctx, 0, info);
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
  if (c > 0 && w.values[1] > 0 && w.values[1] * group != c) {
    fail("X has " + std::to_string(c) + " channels but W expects " + std::to_string(w.values[1] * group) +
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
    const int64_t eff = dil[a] * (k - 1) + 1;
    const int64_t padded = in + pads[a] + pads[a + 2];
    if (in >= 0 && k >= 0 && padded >= eff && strides[a] >= 1) y.values[out] = (padded - eff) / strides[a] + 1;
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

// ---- OrtCustomOp callbacks -------------------------------------------------------------------------------

OrtStatusPtr ORT_API_CALL create_kernel(const OrtCustomOp* op, const OrtApi*, const OrtKernelInfo* info,
                                        void** kernel) {
  const OpDef* d = def_of(op);
  std::string where = std::string(d->name);
  {
    std::string node = node_name(info);
    if (!node.empty()) where += " '" + node + "'";
  }
  *kernel = nullptr;
  return guarded(where, [&] { *kernel = d->create(info).release(); });
}

OrtStatusPtr ORT_API_CALL compute_kernel(void* kernel, OrtKernelContext* ctx) {
  Kernel* k = static_cast<Kernel*>(kernel);
  return guarded(k->context().where(), [&] { k->compute(ctx); });
}

void ORT_API_CALL destroy_kernel(void* kernel) { delete static_cast<Kernel*>(kernel); }

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
void check_input_types(OrtShapeInferContext* ctx, OpKind kind) {
  static const char* const conv_names[] = {"X", "W", "x_scale", "w_scale", "B", "Z", "z_scale", "y_scale"};
  static const char* const matmul_names[] = {"A", "B", "a_scale", "b_scale", "C", "Z", "z_scale", "y_scale"};
  static const char* const unary_names[] = {"X", "scale"};
  const char* const* names = kind == OpKind::kConv ? conv_names : kind == OpKind::kMatMul ? matmul_names : unary_names;
  const size_t count = (kind == OpKind::kConv || kind == OpKind::kMatMul) ? 8 : 2;
  for (size_t i = 0; i < count; ++i) {
    const ONNXTensorElementDataType t = infer_input_type(ctx, i);
    if (t == ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED) continue;
    bool ok;
    const char* expected;
    if (i == 0 && kind == OpKind::kQuantize) {
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
    if (!ok) fail(std::string("input ") + names[i] + " has element type " + type_name(t) + "; expected " + expected);
  }
}

// Sets the output's element type from output_dtype (ORT cannot derive it from input types) and its shape.
// ORT ignores a status returned from here, so problems found now only leave the shape open: the kernel
// reports them, with the input's name, when the session is created or run.
OrtStatusPtr ORT_API_CALL infer_shape(const OrtCustomOp* op, OrtShapeInferContext* ctx) {
  const OpDef* d = def_of(op);
  return guarded(d->name, [&] {
    const int64_t dflt = d->kind == OpKind::kQuantize ? ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E4M3FN
                                                      : ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT;
    int64_t out_type = infer_int(ctx, "output_dtype", dflt);
    if (out_type < 1 || out_type > ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E5M2FNUZ) out_type = dflt;
    Dims y;
    try {
      check_input_types(ctx, d->kind);
      switch (d->kind) {
        case OpKind::kConv: infer_conv(ctx, y); break;
        case OpKind::kMatMul: infer_matmul(ctx, y); break;
        default: input_dims(ctx, 0, &y); break;
      }
    } catch (const OpError&) {
      Dims x;
      const size_t rank = d->kind == OpKind::kConv ? 4 : (input_dims(ctx, 0, &x) ? x.values.size() : 0);
      y.values.assign(rank, -1);
      y.names.assign(rank, "");
    }
    for (size_t i = 0; i < y.values.size(); ++i) {
      if (y.values[i] < 0 && y.names[i].empty()) y.names[i] = unknown_dim();
    }
    set_output(ctx, static_cast<ONNXTensorElementDataType>(out_type), y);
  });
}

const char* ORT_API_CALL op_name(const OrtCustomOp* op) { return def_of(op)->name; }
const char* ORT_API_CALL op_provider(const OrtCustomOp* op) { return def_of(op)->provider; }
size_t ORT_API_CALL input_count(const OrtCustomOp* op) { return def_of(op)->input_count; }
ONNXTensorElementDataType ORT_API_CALL input_type(const OrtCustomOp* op, size_t i) { return def_of(op)->inputs[i]; }
size_t ORT_API_CALL output_count(const OrtCustomOp*) { return 1; }
ONNXTensorElementDataType ORT_API_CALL output_type(const OrtCustomOp*, size_t) {
  return ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
}
OrtCustomOpInputOutputCharacteristic ORT_API_CALL input_characteristic(const OrtCustomOp* op, size_t i) {
  return i < def_of(op)->required_inputs ? INPUT_OUTPUT_REQUIRED : INPUT_OUTPUT_OPTIONAL;
}
// Declared optional only so that ORT accepts an open output type with no open input type; always produced.
OrtCustomOpInputOutputCharacteristic ORT_API_CALL output_characteristic(const OrtCustomOp*, size_t) {
  return INPUT_OUTPUT_OPTIONAL;
}
OrtMemType ORT_API_CALL input_memory_type(const OrtCustomOp*, size_t) { return OrtMemTypeDefault; }
int ORT_API_CALL variadic_min_arity(const OrtCustomOp*) { return 1; }
int ORT_API_CALL variadic_homogeneity(const OrtCustomOp*) { return 1; }

OpDef make_def(OpKind kind, const char* name, const char* provider, KernelFactory create,
               const std::vector<ONNXTensorElementDataType>& inputs, size_t required) {
  OpDef d{};
  d.kind = kind;
  d.name = name;
  d.provider = provider;
  d.create = create;
  d.input_count = inputs.size();
  d.required_inputs = required;
  for (size_t i = 0; i < inputs.size(); ++i) d.inputs[i] = inputs[i];
  OrtCustomOp& b = d.base;
  b.version = g_api_version;
  b.CreateKernel = nullptr;
  b.GetName = op_name;
  b.GetExecutionProviderType = op_provider;
  b.GetInputType = input_type;
  b.GetInputTypeCount = input_count;
  b.GetOutputType = output_type;
  b.GetOutputTypeCount = output_count;
  b.KernelCompute = nullptr;
  b.KernelDestroy = destroy_kernel;
  b.GetInputCharacteristic = input_characteristic;
  b.GetOutputCharacteristic = output_characteristic;
  b.GetInputMemoryType = input_memory_type;
  b.GetVariadicInputMinArity = variadic_min_arity;
  b.GetVariadicInputHomogeneity = variadic_homogeneity;
  b.GetVariadicOutputMinArity = variadic_min_arity;
  b.GetVariadicOutputHomogeneity = variadic_homogeneity;
  b.CreateKernelV2 = create_kernel;
  b.KernelComputeV2 = compute_kernel;
  b.InferOutputShapeFn = infer_shape;
  return d;
}

// Every registration of the domain, built once (addresses must stay valid for the process).
const std::vector<OpDef>& op_defs() {
  static const std::vector<OpDef> defs = [] {
    const std::vector<ONNXTensorElementDataType> eight(8, kAny), two(2, kAny);
    constexpr const char* cpu = "CPUExecutionProvider";
    std::vector<OpDef> v = {
        make_def(OpKind::kConv, "FP8Conv", cpu, create_cpu_conv, eight, 4),
        make_def(OpKind::kMatMul, "FP8MatMul", cpu, create_cpu_matmul, eight, 4),
        make_def(OpKind::kQuantize, "FP8Quantize", cpu, create_cpu_quantize, two, 2),
        make_def(OpKind::kDequantize, "FP8Dequantize", cpu, create_cpu_dequantize, two, 2),
    };
#if defined(FP8ORT_WITH_GPU)
#if defined(FP8ORT_GPU_HIP)
    constexpr const char* gpu = "ROCMExecutionProvider";
#else
    constexpr const char* gpu = "CUDAExecutionProvider";
#endif
    v.push_back(make_def(OpKind::kConv, "FP8Conv", gpu, create_gpu_conv, eight, 4));
    v.push_back(make_def(OpKind::kMatMul, "FP8MatMul", gpu, create_gpu_matmul, eight, 4));
    v.push_back(make_def(OpKind::kQuantize, "FP8Quantize", gpu, create_gpu_quantize, two, 2));
    v.push_back(make_def(OpKind::kDequantize, "FP8Dequantize", gpu, create_gpu_dequantize, two, 2));
#endif
    return v;
  }();
  return defs;
}

}  // namespace

OrtStatus* add_custom_op_domain(OrtSessionOptions* options) {
  OrtCustomOpDomain* domain = nullptr;
  OrtStatus* st = g_ort->CreateCustomOpDomain(kDomain, &domain);
  if (st != nullptr) return st;
  for (const OpDef& d : op_defs()) {
    st = g_ort->CustomOpDomain_Add(domain, &d.base);
    if (st != nullptr) {
      g_ort->ReleaseCustomOpDomain(domain);
      return st;
    }
  }
  // The domain must outlive every session built from these options; it is kept for the process lifetime.
  return g_ort->AddCustomOpDomain(options, domain);
}

}  // namespace fp8ort

extern "C" __attribute__((visibility("default"))) OrtStatus* ORT_API_CALL
RegisterCustomOps(OrtSessionOptions* options, const OrtApiBase* api_base) {
  std::string error;
  if (!fp8ort::init_api(api_base, fp8ort::kMinCustomOpApiVersion, &error)) {
    // Without a usable API there is no way to build an OrtStatus; use the oldest API every runtime has.
    const OrtApi* api = api_base->GetApi(1);
    return api ? api->CreateStatus(ORT_FAIL, error.c_str()) : nullptr;
  }
  return fp8ort::add_custom_op_domain(options);
}
