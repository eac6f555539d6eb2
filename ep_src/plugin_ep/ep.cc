#include "plugin_ep/ep.h"

#include <string>
#include <vector>

#include "ort/ort_api.h"

namespace fp8ort {

Fp8OrtEp::Fp8OrtEp(Fp8OrtEpFactory& factory, const EpConfig& config, const OrtLogger* logger)
    : OrtEp{}, factory_(factory), config_(config), logger_(logger) {
  ort_version_supported = g_api_version;
  GetName = get_name;
  GetCapability = get_capability;
  GetKernelRegistry = get_kernel_registry;
  // A registry-only EP: no Compile, ORT creates the kernels.
}

Fp8OrtEp::~Fp8OrtEp() = default;

const char* ORT_API_CALL Fp8OrtEp::get_name(const OrtEp*) noexcept { return kEpName; }

OrtStatus* ORT_API_CALL Fp8OrtEp::get_capability(OrtEp* self, const OrtGraph* graph,
                                                 OrtEpGraphSupportInfo* support) noexcept {
  return guarded(std::string(kEpName) + " GetCapability", [&] {
    const OrtEpApi& api = static_cast<Fp8OrtEp*>(self)->factory_.ep_api();
    size_t count = 0;
    check(g_ort->Graph_GetNumNodes(graph, &count), "Graph_GetNumNodes");
    std::vector<const OrtNode*> nodes(count);
    if (count > 0) check(g_ort->Graph_GetNodes(graph, nodes.data(), count), "Graph_GetNodes");
    for (const OrtNode* node : nodes) {
      const OrtKernelDef* def = nullptr;
      check(api.EpGraphSupportInfo_LookUpKernel(support, node, &def), "EpGraphSupportInfo_LookUpKernel");
      if (def != nullptr) check(api.EpGraphSupportInfo_AddSingleNode(support, node), "EpGraphSupportInfo_AddSingleNode");
    }
  });
}

OrtStatus* ORT_API_CALL Fp8OrtEp::get_kernel_registry(OrtEp* self, const OrtKernelRegistry** out) noexcept {
  *out = nullptr;
  Fp8OrtEp* ep = static_cast<Fp8OrtEp*>(self);
  return guarded(std::string(kEpName) + " GetKernelRegistry",
                 [&] { *out = ep->factory_.registry(ep->config_.kind); });
}

}  // namespace fp8ort
