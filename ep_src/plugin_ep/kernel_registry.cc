#include "plugin_ep/kernel_registry.h"

#include <memory>
#include <string>
#include <type_traits>

#include "cpu/cpu_kernels.h"
#include "ops/op_schema.h"
#if defined(FP8ORT_WITH_GPU)
#include "gpu/gpu_ops.h"
#endif

namespace fp8ort {
namespace {

// One OrtKernelImpl for every kernel: ORT owns it and releases it through Release. `base` comes first so the
// OrtKernelImpl* ORT hands back is the adapter's address (standard layout).
struct KernelAdapter {
  OrtKernelImpl base;
  std::unique_ptr<Kernel> kernel;

  explicit KernelAdapter(std::unique_ptr<Kernel> k) : base{}, kernel(std::move(k)) {
    base.ort_version_supported = g_api_version;
    base.flags = 0;
    base.Compute = compute;
    base.Release = release;
    base.PrePackWeight = nullptr;  // kernels pack their constant weights when they are created
    base.SetSharedPrePackedWeight = nullptr;
  }

  static KernelAdapter* of(OrtKernelImpl* p) { return reinterpret_cast<KernelAdapter*>(p); }

  static OrtStatus* ORT_API_CALL compute(OrtKernelImpl* self, OrtKernelContext* ctx) noexcept {
    return compute_at_boundary(of(self)->kernel.get(), ctx);
  }

  static void ORT_API_CALL release(OrtKernelImpl* self) noexcept { delete of(self); }
};

static_assert(std::is_standard_layout<OrtKernelImpl>::value, "OrtKernelImpl must be a C struct");

OrtStatus* ORT_API_CALL create_kernel(void* state, const OrtKernelInfo* info, OrtKernelImpl** out) noexcept {
  const KernelDef* def = static_cast<const KernelDef*>(state);
  *out = nullptr;
  std::string where = def->op_type;
  const std::string node = node_name(info);
  if (!node.empty()) where += " '" + node + "'";
  return guarded(where, [&] {
    std::unique_ptr<Kernel> kernel = def->create(info);
    if (!kernel) fail("the kernel factory returned no kernel", ORT_EP_FAIL);
    *out = &(new KernelAdapter(std::move(kernel)))->base;
  });
}

// Owns an OrtKernelDefBuilder or OrtKernelDef for the span of one registration.
template <class T, void (*Release)(T*)>
struct Owned {
  T* p = nullptr;
  ~Owned() {
    if (p != nullptr) Release(p);
  }
};

const OrtEpApi* g_ep_api_for_release = nullptr;
void release_builder(OrtKernelDefBuilder* b) { g_ep_api_for_release->ReleaseKernelDefBuilder(b); }
void release_def(OrtKernelDef* d) { g_ep_api_for_release->ReleaseKernelDef(d); }

void add_row(const OrtEpApi& api, OrtKernelRegistry* registry, const char* ep_name, EpDeviceKind kind,
             const KernelDef& row) {
  const std::string what = std::string("registering ") + (row.domain[0] ? row.domain : "ai.onnx") + "::" +
                           row.op_type + " " + std::to_string(row.since_version);
  Owned<OrtKernelDefBuilder, release_builder> builder;
  check(api.CreateKernelDefBuilder(&builder.p), what.c_str());
  check(api.KernelDefBuilder_SetOperatorType(builder.p, row.op_type), what.c_str());
  check(api.KernelDefBuilder_SetDomain(builder.p, row.domain), what.c_str());
  check(api.KernelDefBuilder_SetSinceVersion(builder.p, row.since_version, row.end_version), what.c_str());
  check(api.KernelDefBuilder_SetExecutionProvider(builder.p, ep_name), what.c_str());
  for (const TypeConstraint& tc : row.constraints) {
    std::vector<const OrtDataType*> types;
    for (ONNXTensorElementDataType t : tc.types) {
      const OrtDataType* dt = nullptr;
      check(api.GetTensorDataType(t, &dt), what.c_str());
      types.push_back(dt);
    }
    check(api.KernelDefBuilder_AddTypeConstraint(builder.p, tc.name, types.data(), types.size()), what.c_str());
  }
  if (kind == EpDeviceKind::kGpu) {
    for (int i : row.cpu_inputs) {
      check(api.KernelDefBuilder_SetInputMemType(builder.p, static_cast<size_t>(i), OrtMemTypeCPUInput),
            what.c_str());
    }
    for (int i : row.cpu_outputs) {
      check(api.KernelDefBuilder_SetOutputMemType(builder.p, static_cast<size_t>(i), OrtMemTypeCPUOutput),
            what.c_str());
    }
  }
  Owned<OrtKernelDef, release_def> def;
  check(api.KernelDefBuilder_Build(builder.p, &def.p), what.c_str());
  check(api.KernelRegistry_AddKernel(registry, def.p, create_kernel, const_cast<KernelDef*>(&row)), what.c_str());
}

// The com.fp8ort ops of a device, one row each, built from the op contract's table (no type constraints: the
// kernels take every type the contract allows and check it themselves, naming the input).
const std::vector<KernelDef>& fp8_rows(EpDeviceKind kind) {
  static const std::vector<KernelDef> cpu = [] {
    std::vector<KernelDef> v;
    for (const OpSchema& s : op_schemas()) {
      v.push_back(KernelDef{kOpDomain, s.name, s.since_version, kLatestOpset, {}, {}, {}, s.create_cpu});
    }
    return v;
  }();
#if defined(FP8ORT_WITH_GPU)
  static const std::vector<KernelDef> gpu = [] {
    std::vector<KernelDef> v;
    for (const OpSchema& s : op_schemas()) {
      v.push_back(KernelDef{kOpDomain, s.name, s.since_version, kLatestOpset, {}, {}, {}, s.create_gpu});
    }
    return v;
  }();
  if (kind == EpDeviceKind::kGpu) return gpu;
#endif
  (void)kind;
  return cpu;
}

}  // namespace

const char* device_kind_name(EpDeviceKind kind) { return kind == EpDeviceKind::kGpu ? "gpu" : "cpu"; }

std::vector<const KernelDef*> kernel_rows(EpDeviceKind kind) {
  std::vector<const KernelDef*> rows;
  for (const KernelDef& r : fp8_rows(kind)) rows.push_back(&r);
#if defined(FP8ORT_WITH_GPU)
  const std::vector<KernelDef>& onnx = kind == EpDeviceKind::kGpu ? gpu_onnx_kernels() : cpu_onnx_kernels();
#else
  const std::vector<KernelDef>& onnx = cpu_onnx_kernels();
#endif
  for (const KernelDef& r : onnx) rows.push_back(&r);
  return rows;
}

OrtKernelRegistry* build_kernel_registry(const OrtEpApi& api, const char* ep_name, EpDeviceKind kind) {
  g_ep_api_for_release = &api;
  OrtKernelRegistry* registry = nullptr;
  check(api.CreateKernelRegistry(&registry), "CreateKernelRegistry");
  try {
    for (const KernelDef* row : kernel_rows(kind)) {
      if (row->create == nullptr) {
        fail(std::string("kernel table row ") + row->op_type + " has no factory", ORT_EP_FAIL);
      }
      add_row(api, registry, ep_name, kind, *row);
    }
  } catch (...) {
    api.ReleaseKernelRegistry(registry);
    throw;
  }
  return registry;
}

}  // namespace fp8ort
