#include "plugin_ep/ep.h"

#include <cstring>
#include <string>
#include <vector>

#include "ort/ort_api.h"

namespace fp8ort {
namespace {

std::vector<const OrtValueInfo*> node_values(const OrtNode* node, bool outputs) {
  size_t n = 0;
  check(outputs ? g_ort->Node_GetNumOutputs(node, &n) : g_ort->Node_GetNumInputs(node, &n), "Node_GetNum*puts");
  std::vector<const OrtValueInfo*> values(n, nullptr);
  if (n > 0) {
    check(outputs ? g_ort->Node_GetOutputs(node, values.data(), n) : g_ort->Node_GetInputs(node, values.data(), n),
          "Node_Get*puts");
  }
  return values;
}

// Rank of a tensor value, or -1 when the graph does not say.
int64_t value_rank(const OrtValueInfo* value) {
  if (value == nullptr) return -1;
  const OrtTypeInfo* type = nullptr;
  check(g_ort->GetValueInfoTypeInfo(value, &type), "GetValueInfoTypeInfo");
  if (type == nullptr) return -1;
  const OrtTensorTypeAndShapeInfo* tensor = nullptr;
  OrtStatus* st = g_ort->CastTypeInfoToTensorInfo(type, &tensor);
  if (st != nullptr) {
    g_ort->ReleaseStatus(st);
    return -1;
  }
  if (tensor == nullptr) return -1;
  size_t rank = 0;
  check(g_ort->GetDimensionsCount(tensor, &rank), "GetDimensionsCount");
  return static_cast<int64_t>(rank);
}

constexpr int64_t kGpuMaxWindowRank = 4;  // the GPU pools and float Conv are 1-D and 2-D: inputs [N, C, D1, D2]

// Whether the GPU device's kernels can run a node its kernel rows match (rows match by op, version and types, not
// by rank or optional outputs): MaxPool's Indices output and 3-D windows have no GPU kernel, so such nodes are left
// to the next EP (ORT's CPU EP, with fp8ort's placement warning) instead of failing at run time.
bool gpu_kernels_run(const OrtNode* node) {
  const char* domain = nullptr;
  const char* op = nullptr;
  check(g_ort->Node_GetDomain(node, &domain), "Node_GetDomain");
  check(g_ort->Node_GetOperatorType(node, &op), "Node_GetOperatorType");
  if (domain != nullptr && domain[0] != '\0' && std::strcmp(domain, "ai.onnx") != 0) return true;
  const std::string type = op != nullptr ? op : "";
  if (type == "MaxPool") {
    const std::vector<const OrtValueInfo*> outs = node_values(node, true);
    if (outs.size() > 1 && outs[1] != nullptr) return false;
  }
  if (type == "MaxPool" || type == "AveragePool" || type == "Conv" || type == "GlobalAveragePool" ||
      type == "GlobalMaxPool") {
    const std::vector<const OrtValueInfo*> ins = node_values(node, false);
    if (!ins.empty() && value_rank(ins[0]) > kGpuMaxWindowRank) return false;
  }
  return true;
}

}  // namespace

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
    const bool gpu = static_cast<Fp8OrtEp*>(self)->config_.kind == EpDeviceKind::kGpu;
    for (const OrtNode* node : nodes) {
      const OrtKernelDef* def = nullptr;
      check(api.EpGraphSupportInfo_LookUpKernel(support, node, &def), "EpGraphSupportInfo_LookUpKernel");
      // evaluated on the CPU device too (and ignored there), so that CI runs these graph-API calls on every graph
      const bool runs = gpu_kernels_run(node);
      if (def != nullptr && (runs || !gpu)) {
        check(api.EpGraphSupportInfo_AddSingleNode(support, node), "EpGraphSupportInfo_AddSingleNode");
      }
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
