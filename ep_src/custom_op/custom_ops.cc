// The custom-op library route: RegisterCustomOps adds the com.fp8ort domain with CPU kernels (and GPU kernels
// for ORT's CUDA/ROCm EP in a GPU build). The op contract (inputs, types, shape inference) is ops/op_schema.
//
// Each op is registered once per provider with open input and output types. Its shape-inference function checks
// the input element types (so a wrong type fails at model load with a message naming the input) and sets the
// output's element type from the output_dtype attribute, which ORT's own custom-op inference cannot read.
#include "custom_op/custom_ops.h"

#include <string>
#include <vector>

#include "ops/op_schema.h"
#include "ort/ort_api.h"

namespace fp8ort {
namespace {

// One registration. `base` comes first so ORT's OrtCustomOp* can be cast back (standard layout).
struct OpDef {
  OrtCustomOp base;
  const OpSchema* schema;
  const char* provider;
  KernelFactory create;
};

const OpDef* def_of(const OrtCustomOp* op) { return reinterpret_cast<const OpDef*>(op); }

OrtStatusPtr ORT_API_CALL create_kernel(const OrtCustomOp* op, const OrtApi*, const OrtKernelInfo* info,
                                        void** kernel) {
  const OpDef* d = def_of(op);
  std::string where = std::string(d->schema->name);
  {
    std::string node = node_name(info);
    if (!node.empty()) where += " '" + node + "'";
  }
  *kernel = nullptr;
  return guarded(where, [&] { *kernel = d->create(info).release(); });
}

OrtStatusPtr ORT_API_CALL compute_kernel(void* kernel, OrtKernelContext* ctx) {
  return compute_at_boundary(static_cast<Kernel*>(kernel), ctx);
}

void ORT_API_CALL destroy_kernel(void* kernel) { delete static_cast<Kernel*>(kernel); }

OrtStatusPtr ORT_API_CALL infer_shape(const OrtCustomOp* op, OrtShapeInferContext* ctx) {
  const OpSchema& s = *def_of(op)->schema;
  return guarded(s.name, [&] { infer_type_and_shape(s, ctx); });
}

const char* ORT_API_CALL op_name(const OrtCustomOp* op) { return def_of(op)->schema->name; }
const char* ORT_API_CALL op_provider(const OrtCustomOp* op) { return def_of(op)->provider; }
size_t ORT_API_CALL input_count(const OrtCustomOp* op) { return def_of(op)->schema->inputs.size(); }
ONNXTensorElementDataType ORT_API_CALL input_type(const OrtCustomOp*, size_t) {
  return ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;  // open: infer_type_and_shape checks the types
}
size_t ORT_API_CALL output_count(const OrtCustomOp* op) { return def_of(op)->schema->output_count; }
ONNXTensorElementDataType ORT_API_CALL output_type(const OrtCustomOp*, size_t) {
  return ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
}
OrtCustomOpInputOutputCharacteristic ORT_API_CALL input_characteristic(const OrtCustomOp* op, size_t i) {
  return i < def_of(op)->schema->required_inputs ? INPUT_OUTPUT_REQUIRED : INPUT_OUTPUT_OPTIONAL;
}
// Declared optional only so that ORT accepts an open output type with no open input type; always produced.
OrtCustomOpInputOutputCharacteristic ORT_API_CALL output_characteristic(const OrtCustomOp*, size_t) {
  return INPUT_OUTPUT_OPTIONAL;
}
OrtMemType ORT_API_CALL input_memory_type(const OrtCustomOp*, size_t) { return OrtMemTypeDefault; }
int ORT_API_CALL variadic_min_arity(const OrtCustomOp*) { return 1; }
int ORT_API_CALL variadic_homogeneity(const OrtCustomOp*) { return 1; }

OpDef make_def(const OpSchema& schema, const char* provider, KernelFactory create) {
  OpDef d{};
  d.schema = &schema;
  d.provider = provider;
  d.create = create;
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
    std::vector<OpDef> v;
    for (const OpSchema& s : op_schemas()) v.push_back(make_def(s, "CPUExecutionProvider", s.create_cpu));
#if defined(FP8ORT_WITH_GPU)
#if defined(FP8ORT_GPU_HIP)
    constexpr const char* gpu = "ROCMExecutionProvider";
#else
    constexpr const char* gpu = "CUDAExecutionProvider";
#endif
    for (const OpSchema& s : op_schemas()) v.push_back(make_def(s, gpu, s.create_gpu));
#endif
    return v;
  }();
  return defs;
}

}  // namespace

OrtStatus* create_custom_op_domain(OrtCustomOpDomain** out) {
  *out = nullptr;
  OrtCustomOpDomain* domain = nullptr;
  OrtStatus* st = g_ort->CreateCustomOpDomain(kOpDomain, &domain);
  if (st != nullptr) return st;
  for (const OpDef& d : op_defs()) {
    st = g_ort->CustomOpDomain_Add(domain, &d.base);
    if (st != nullptr) {
      g_ort->ReleaseCustomOpDomain(domain);
      return st;
    }
  }
  *out = domain;
  return nullptr;
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
  // One domain for every call: ORT does not own a domain added to session options, and one built per call was
  // never released (LeakSanitizer: one domain leaked per registration). Its op definitions are static, so all
  // sessions share it; it must outlive them, so it is released only when the library is unloaded.
  struct SharedDomain {
    OrtCustomOpDomain* domain = nullptr;
    std::string error;
    OrtErrorCode code = ORT_OK;
    SharedDomain() {
      if (OrtStatus* st = fp8ort::create_custom_op_domain(&domain)) {
        error = fp8ort::g_ort->GetErrorMessage(st);
        code = fp8ort::g_ort->GetErrorCode(st);
        fp8ort::g_ort->ReleaseStatus(st);
      }
    }
    ~SharedDomain() {
      if (domain != nullptr) fp8ort::g_ort->ReleaseCustomOpDomain(domain);
    }
  };
  static const SharedDomain shared;  // built once, thread-safe
  if (shared.domain == nullptr) return fp8ort::g_ort->CreateStatus(shared.code, shared.error.c_str());
  return fp8ort::g_ort->AddCustomOpDomain(options, shared.domain);
}
