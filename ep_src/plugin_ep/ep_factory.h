// Fp8OrtEpFactory: the OrtEpFactory the library hands to ORT. It offers a CPU device (ORT's CPU
// OrtHardwareDevice, exact CPU kernels) and, in a GPU build, one device per GPU of the build's vendor; it owns
// the kernel registries (one per device kind), the com.fp8ort custom-op domain, and the GPU memory plumbing.
#pragma once

#include <onnxruntime_c_api.h>  // includes onnxruntime_ep_c_api.h

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "plugin_ep/kernel_registry.h"

namespace fp8ort {

constexpr const char* kEpName = "Fp8OrtExecutionProvider";
constexpr const char* kEpVendor = "fp8ort";
constexpr const char* kEpVersion = "0.1.0";
// ep_metadata keys of every EP device the factory creates (read by fp8ort.info and fp8ort.InferenceSession).
constexpr const char* kMetaBackend = "fp8ort.backend";  // none, cuda or hip: the library's GPU build
constexpr const char* kMetaDevice = "fp8ort.device";    // cpu or gpu
constexpr const char* kMetaOrdinal = "fp8ort.gpu_ordinal";
constexpr const char* kMetaArch = "fp8ort.gpu_arch";
// EP option (session config "ep.Fp8OrtExecutionProvider.enable_graph_capture").
constexpr const char* kOptGraphCapture = "enable_graph_capture";

#if defined(FP8ORT_GPU_HIP)
constexpr const char* kBuildBackend = "hip";
#elif defined(FP8ORT_WITH_GPU)
constexpr const char* kBuildBackend = "cuda";
#else
constexpr const char* kBuildBackend = "none";
#endif

struct GpuPlumbing;  // gpu_device.cc (GPU builds): allocators, data transfer, streams per GPU

class Fp8OrtEpFactory : public OrtEpFactory {
 public:
  Fp8OrtEpFactory(const OrtEpApi& ep_api, const OrtLogger* logger);
  ~Fp8OrtEpFactory();

  const OrtEpApi& ep_api() const { return ep_api_; }
  const OrtLogger* logger() const { return logger_; }
  // The registry of a device kind, built on first use (thread-safe). Throws OpError.
  const OrtKernelRegistry* registry(EpDeviceKind kind);
  GpuPlumbing* gpu() { return gpu_.get(); }
  void log(OrtLoggingLevel level, const std::string& msg) const;

 private:
  static const char* ORT_API_CALL get_name(const OrtEpFactory*) noexcept;
  static const char* ORT_API_CALL get_vendor(const OrtEpFactory*) noexcept;
  static uint32_t ORT_API_CALL get_vendor_id(const OrtEpFactory*) noexcept;
  static const char* ORT_API_CALL get_version(const OrtEpFactory*) noexcept;
  static OrtStatus* ORT_API_CALL get_supported_devices(OrtEpFactory* self, const OrtHardwareDevice* const* devices,
                                                       size_t num_devices, OrtEpDevice** ep_devices,
                                                       size_t max_ep_devices, size_t* num_ep_devices) noexcept;
  static OrtStatus* ORT_API_CALL create_ep(OrtEpFactory* self, const OrtHardwareDevice* const* devices,
                                           const OrtKeyValuePairs* const* metadata, size_t num_devices,
                                           const OrtSessionOptions* options, const OrtLogger* logger,
                                           OrtEp** ep) noexcept;
  static void ORT_API_CALL release_ep(OrtEpFactory* self, OrtEp* ep) noexcept;
  static OrtStatus* ORT_API_CALL create_allocator(OrtEpFactory* self, const OrtMemoryInfo* info,
                                                  const OrtKeyValuePairs* options, OrtAllocator** out) noexcept;
  static void ORT_API_CALL release_allocator(OrtEpFactory* self, OrtAllocator* allocator) noexcept;
  static OrtStatus* ORT_API_CALL create_data_transfer(OrtEpFactory* self, OrtDataTransferImpl** out) noexcept;
  static bool ORT_API_CALL is_stream_aware(const OrtEpFactory* self) noexcept;
  static OrtStatus* ORT_API_CALL create_sync_stream(OrtEpFactory* self, const OrtMemoryDevice* device,
                                                    const OrtKeyValuePairs* options,
                                                    OrtSyncStreamImpl** out) noexcept;
  static OrtStatus* ORT_API_CALL get_num_domains(OrtEpFactory* self, size_t* num) noexcept;
  static OrtStatus* ORT_API_CALL get_domains(OrtEpFactory* self, OrtCustomOpDomain** domains, size_t num) noexcept;

  void add_cpu_device(const OrtHardwareDevice* hw, std::vector<OrtEpDevice*>& out);

  const OrtEpApi& ep_api_;
  const OrtLogger* logger_;
  std::mutex mutex_;
  OrtKernelRegistry* registries_[2] = {nullptr, nullptr};
  OrtCustomOpDomain* domain_ = nullptr;
  std::unique_ptr<GpuPlumbing> gpu_;
};

// Helpers shared by the factory and the GPU plumbing.
OrtKeyValuePairs* make_metadata(EpDeviceKind kind);

}  // namespace fp8ort
