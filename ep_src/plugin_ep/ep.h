// Fp8OrtEp: one OrtEp per session. GetCapability claims every node the device's kernel registry has a kernel
// for; ORT creates the kernels from the registry. GPU sessions also run on the EP's stream and can capture graphs.
#pragma once

#include <onnxruntime_c_api.h>  // includes onnxruntime_ep_c_api.h

#include "plugin_ep/ep_factory.h"

namespace fp8ort {

struct EpConfig {
  EpDeviceKind kind = EpDeviceKind::kCpu;
  int gpu_ordinal = -1;  // runtime ordinal of the GPU device
  bool graph_capture = false;
};

class Fp8OrtEp : public OrtEp {
 public:
  Fp8OrtEp(Fp8OrtEpFactory& factory, const EpConfig& config, const OrtLogger* logger);
  virtual ~Fp8OrtEp();  // the GPU EP (gpu_ep.cc) derives; ORT's OrtEp* is always converted with static_cast
  const EpConfig& config() const { return config_; }
  Fp8OrtEpFactory& factory_ref() const { return factory_; }

 private:
  static const char* ORT_API_CALL get_name(const OrtEp*) noexcept;
  static OrtStatus* ORT_API_CALL get_capability(OrtEp* self, const OrtGraph* graph,
                                                OrtEpGraphSupportInfo* support) noexcept;
  static OrtStatus* ORT_API_CALL get_kernel_registry(OrtEp* self, const OrtKernelRegistry** out) noexcept;

  Fp8OrtEpFactory& factory_;
  EpConfig config_;
  const OrtLogger* logger_;
};

}  // namespace fp8ort
