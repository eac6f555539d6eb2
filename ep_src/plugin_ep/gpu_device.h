// The GPU device of the plugin EP (GPU builds only): device discovery (ORT's OrtHardwareDevices matched by PCI
// vendor id and bus id, or our own where ORT lists none), the caching device allocators, the data transfer, the
// streams and the per-session GPU EP with graph capture. GPU runtime calls go through hip_kernels/fp8_runtime.h.
#pragma once

#include <onnxruntime_c_api.h>  // includes onnxruntime_ep_c_api.h

#include <memory>
#include <string>
#include <vector>

#include "plugin_ep/ep.h"

namespace fp8ort {

#if defined(FP8ORT_GPU_HIP)
constexpr uint32_t kGpuVendorId = 0x1002;  // AMD
constexpr const char* kGpuVendorName = "AMD";
#else
constexpr uint32_t kGpuVendorId = 0x10DE;  // NVIDIA
constexpr const char* kGpuVendorName = "NVIDIA";
#endif

struct GpuInfo {
  int ordinal = 0;
  std::string pci_bus_id;  // "0000:00:06.0"
  std::string arch;        // "sm_90", "gfx942:sramecc+:xnack-"
  OrtMemoryInfo* device_memory = nullptr;
  OrtMemoryInfo* host_memory = nullptr;  // page-locked, host accessible
};

// An OrtSyncStreamImpl over a runtime stream (owned: destroyed with it).
class GpuStream : public OrtSyncStreamImpl {
 public:
  GpuStream(int ordinal, void* stream, bool owned);
  ~GpuStream();

 private:
  int ordinal_;
  void* stream_;
  bool owned_;
};

struct GpuDataTransfer : OrtDataTransferImpl {
  explicit GpuDataTransfer(const OrtEpApi& api);
  const OrtEpApi& api;
};

struct GpuPlumbing {
  GpuPlumbing(Fp8OrtEpFactory& factory);
  ~GpuPlumbing();
  Fp8OrtEpFactory& factory;
  std::vector<GpuInfo> gpus;
  std::vector<OrtHardwareDevice*> own_devices;  // made with CreateHardwareDevice where ORT listed none
  GpuDataTransfer transfer;
};

std::unique_ptr<GpuPlumbing> make_gpu_plumbing(Fp8OrtEpFactory& factory);
size_t gpu_device_count(const GpuPlumbing& p);
void gpu_add_devices(GpuPlumbing& p, const OrtHardwareDevice* const* devices, size_t count,
                     std::vector<OrtEpDevice*>& out);
OrtAllocator* gpu_create_allocator(GpuPlumbing& p, const OrtMemoryInfo* info);
void gpu_release_allocator(GpuPlumbing& p, OrtAllocator* allocator);
OrtDataTransferImpl* gpu_data_transfer(GpuPlumbing& p);
OrtSyncStreamImpl* gpu_create_stream(GpuPlumbing& p, const OrtMemoryDevice* device);
OrtEp* create_gpu_ep(Fp8OrtEpFactory& factory, const EpConfig& config, const OrtLogger* logger);

// Throws OpError naming the runtime call when rc != 0.
void rt_check(int rc, const char* what);

}  // namespace fp8ort
