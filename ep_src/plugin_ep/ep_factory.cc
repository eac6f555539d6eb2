#include "plugin_ep/ep_factory.h"

#include <cctype>
#include <string>

#include "custom_op/custom_ops.h"
#include "ort/ort_api.h"
#include "plugin_ep/ep.h"
#if defined(FP8ORT_WITH_GPU)
#include "plugin_ep/gpu_device.h"
#else
namespace fp8ort {
struct GpuPlumbing {};
}  // namespace fp8ort
#endif

namespace fp8ort {
namespace {

// The value of session config entry `key`, or "" when it is not set.
std::string session_config(const OrtSessionOptions* options, const std::string& key) {
  int has = 0;
  check(g_ort->HasSessionConfigEntry(options, key.c_str(), &has), "HasSessionConfigEntry");
  if (!has) return "";
  size_t size = 0;
  check(g_ort->GetSessionConfigEntry(options, key.c_str(), nullptr, &size), "GetSessionConfigEntry");
  std::string value(size, '\0');
  check(g_ort->GetSessionConfigEntry(options, key.c_str(), value.data(), &size), "GetSessionConfigEntry");
  if (!value.empty() && value.back() == '\0') value.pop_back();
  return value;
}

bool parse_flag(const std::string& key, const std::string& value) {
  if (value.empty() || value == "0" || value == "false") return false;
  if (value == "1" || value == "true") return true;
  fail("EP option " + key + "='" + value + "' is not a flag; use 1 or 0");
}

}  // namespace

OrtKeyValuePairs* make_metadata(EpDeviceKind kind) {
  OrtKeyValuePairs* kv = nullptr;
  g_ort->CreateKeyValuePairs(&kv);
  g_ort->AddKeyValuePair(kv, kMetaBackend, kBuildBackend);
  g_ort->AddKeyValuePair(kv, kMetaDevice, device_kind_name(kind));
  return kv;
}

Fp8OrtEpFactory::Fp8OrtEpFactory(const OrtEpApi& ep_api, const OrtLogger* logger)
    : OrtEpFactory{}, ep_api_(ep_api), logger_(logger) {
  ort_version_supported = g_api_version;
  GetName = get_name;
  GetVendor = get_vendor;
  GetVendorId = get_vendor_id;
  GetVersion = get_version;
  GetSupportedDevices = get_supported_devices;
  CreateEp = create_ep;
  ReleaseEp = release_ep;
  CreateAllocator = create_allocator;
  ReleaseAllocator = release_allocator;
  CreateDataTransfer = create_data_transfer;
  IsStreamAware = is_stream_aware;
  CreateSyncStreamForDevice = create_sync_stream;
  GetNumCustomOpDomains = get_num_domains;
  GetCustomOpDomains = get_domains;
#if defined(FP8ORT_WITH_GPU)
  gpu_ = make_gpu_plumbing(*this);
#endif
}

Fp8OrtEpFactory::~Fp8OrtEpFactory() {
  for (OrtKernelRegistry*& r : registries_) {
    if (r != nullptr) ep_api_.ReleaseKernelRegistry(r);
  }
  if (domain_ != nullptr) g_ort->ReleaseCustomOpDomain(domain_);
}

void Fp8OrtEpFactory::log(OrtLoggingLevel level, const std::string& msg) const {
  if (logger_ == nullptr) return;
  OrtStatus* st = g_ort->Logger_LogMessage(logger_, level, msg.c_str(), __FILE__, __LINE__, "fp8ort");
  if (st != nullptr) g_ort->ReleaseStatus(st);
}

const OrtKernelRegistry* Fp8OrtEpFactory::registry(EpDeviceKind kind) {
  std::lock_guard<std::mutex> lock(mutex_);
  OrtKernelRegistry*& r = registries_[kind == EpDeviceKind::kGpu ? 1 : 0];
  if (r == nullptr) r = build_kernel_registry(ep_api_, kEpName, kind);
  return r;
}

const char* ORT_API_CALL Fp8OrtEpFactory::get_name(const OrtEpFactory*) noexcept { return kEpName; }
const char* ORT_API_CALL Fp8OrtEpFactory::get_vendor(const OrtEpFactory*) noexcept { return kEpVendor; }
uint32_t ORT_API_CALL Fp8OrtEpFactory::get_vendor_id(const OrtEpFactory*) noexcept { return 0; }
const char* ORT_API_CALL Fp8OrtEpFactory::get_version(const OrtEpFactory*) noexcept { return kEpVersion; }

void Fp8OrtEpFactory::add_cpu_device(const OrtHardwareDevice* hw, std::vector<OrtEpDevice*>& out) {
  OrtKeyValuePairs* meta = make_metadata(EpDeviceKind::kCpu);
  OrtEpDevice* device = nullptr;
  OrtStatus* st = ep_api_.CreateEpDevice(this, hw, meta, nullptr, &device);
  g_ort->ReleaseKeyValuePairs(meta);
  check(st, "CreateEpDevice (CPU)");
  out.push_back(device);
}

OrtStatus* ORT_API_CALL Fp8OrtEpFactory::get_supported_devices(OrtEpFactory* self,
                                                               const OrtHardwareDevice* const* devices,
                                                               size_t num_devices, OrtEpDevice** ep_devices,
                                                               size_t max_ep_devices, size_t* num_ep_devices) noexcept {
  *num_ep_devices = 0;
  auto* f = static_cast<Fp8OrtEpFactory*>(self);
  std::vector<OrtEpDevice*> found;
  OrtStatus* st = guarded(std::string(kEpName) + " GetSupportedDevices", [&] {
    bool have_cpu = false;
    for (size_t i = 0; i < num_devices; ++i) {
      if (!have_cpu && g_ort->HardwareDevice_Type(devices[i]) == OrtHardwareDeviceType_CPU) {
        f->add_cpu_device(devices[i], found);
        have_cpu = true;
      }
    }
#if defined(FP8ORT_WITH_GPU)
    gpu_add_devices(*f->gpu_, devices, num_devices, found);
#endif
  });
  if (st != nullptr) {
    for (OrtEpDevice* d : found) f->ep_api_.ReleaseEpDevice(d);
    return st;
  }
  for (OrtEpDevice* d : found) {
    if (*num_ep_devices == max_ep_devices) {
      f->ep_api_.ReleaseEpDevice(d);
      continue;
    }
    ep_devices[(*num_ep_devices)++] = d;
  }
  return nullptr;
}

OrtStatus* ORT_API_CALL Fp8OrtEpFactory::create_ep(OrtEpFactory* self, const OrtHardwareDevice* const* devices,
                                                   const OrtKeyValuePairs* const* metadata, size_t num_devices,
                                                   const OrtSessionOptions* options, const OrtLogger* logger,
                                                   OrtEp** ep) noexcept {
  *ep = nullptr;
  auto* f = static_cast<Fp8OrtEpFactory*>(self);
  return guarded(std::string(kEpName) + " CreateEp", [&] {
    if (num_devices != 1) {
      fail(std::string(kEpName) + " runs one device per session; got " + std::to_string(num_devices) +
           " devices: pass one OrtEpDevice (fp8ort.InferenceSession(device='gpu:N' or 'cpu') picks one)");
    }
    EpConfig config;
    const char* kind = g_ort->GetKeyValue(metadata[0], kMetaDevice);
    config.kind = (kind != nullptr && std::string(kind) == "gpu") ? EpDeviceKind::kGpu : EpDeviceKind::kCpu;
    // ORT stores EP options as session config "ep.<ep name>.<key>"; versions differ in the name's case.
    std::string lower = kEpName;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    std::string capture = session_config(options, "ep." + lower + "." + kOptGraphCapture);
    if (capture.empty()) capture = session_config(options, std::string("ep.") + kEpName + "." + kOptGraphCapture);
    config.graph_capture = parse_flag(kOptGraphCapture, capture);
    if (config.kind == EpDeviceKind::kCpu && config.graph_capture) {
      fail(std::string("EP option ") + kOptGraphCapture + "=1 needs a GPU device; this session uses the CPU device");
    }
#if defined(FP8ORT_WITH_GPU)
    if (config.kind == EpDeviceKind::kGpu) {
      const char* ordinal = g_ort->GetKeyValue(metadata[0], kMetaOrdinal);
      config.gpu_ordinal = ordinal ? std::stoi(ordinal) : 0;
      *ep = create_gpu_ep(*f, config, logger);
      return;
    }
#endif
    (void)devices;
    *ep = new Fp8OrtEp(*f, config, logger);
  });
}

void ORT_API_CALL Fp8OrtEpFactory::release_ep(OrtEpFactory*, OrtEp* ep) noexcept { delete static_cast<Fp8OrtEp*>(ep); }

OrtStatus* ORT_API_CALL Fp8OrtEpFactory::create_allocator(OrtEpFactory* self, const OrtMemoryInfo* info,
                                                          const OrtKeyValuePairs* options,
                                                          OrtAllocator** out) noexcept {
  *out = nullptr;
  (void)options;
#if defined(FP8ORT_WITH_GPU)
  auto* f = static_cast<Fp8OrtEpFactory*>(self);
  return guarded(std::string(kEpName) + " CreateAllocator", [&] { *out = gpu_create_allocator(*f->gpu_, info); });
#else
  (void)self;
  (void)info;
  return nullptr;  // the CPU device uses ORT's CPU allocator
#endif
}

void ORT_API_CALL Fp8OrtEpFactory::release_allocator(OrtEpFactory* self, OrtAllocator* allocator) noexcept {
#if defined(FP8ORT_WITH_GPU)
  gpu_release_allocator(*static_cast<Fp8OrtEpFactory*>(self)->gpu_, allocator);
#else
  (void)self;
  (void)allocator;
#endif
}

OrtStatus* ORT_API_CALL Fp8OrtEpFactory::create_data_transfer(OrtEpFactory* self, OrtDataTransferImpl** out) noexcept {
  *out = nullptr;
#if defined(FP8ORT_WITH_GPU)
  *out = gpu_data_transfer(*static_cast<Fp8OrtEpFactory*>(self)->gpu_);
#else
  (void)self;
#endif
  return nullptr;
}

bool ORT_API_CALL Fp8OrtEpFactory::is_stream_aware(const OrtEpFactory* self) noexcept {
#if defined(FP8ORT_WITH_GPU)
  return gpu_device_count(*static_cast<const Fp8OrtEpFactory*>(self)->gpu_) > 0;
#else
  (void)self;
  return false;
#endif
}

OrtStatus* ORT_API_CALL Fp8OrtEpFactory::create_sync_stream(OrtEpFactory* self, const OrtMemoryDevice* device,
                                                            const OrtKeyValuePairs* options,
                                                            OrtSyncStreamImpl** out) noexcept {
  *out = nullptr;
  (void)options;
#if defined(FP8ORT_WITH_GPU)
  auto* f = static_cast<Fp8OrtEpFactory*>(self);
  return guarded(std::string(kEpName) + " CreateSyncStreamForDevice",
                 [&] { *out = gpu_create_stream(*f->gpu_, device); });
#else
  (void)self;
  (void)device;
  return nullptr;
#endif
}

OrtStatus* ORT_API_CALL Fp8OrtEpFactory::get_num_domains(OrtEpFactory*, size_t* num) noexcept {
  *num = 1;
  return nullptr;
}

OrtStatus* ORT_API_CALL Fp8OrtEpFactory::get_domains(OrtEpFactory* self, OrtCustomOpDomain** domains,
                                                     size_t num) noexcept {
  auto* f = static_cast<Fp8OrtEpFactory*>(self);
  if (num < 1) return nullptr;
  std::lock_guard<std::mutex> lock(f->mutex_);
  if (f->domain_ == nullptr) {
    if (OrtStatus* st = create_custom_op_domain(&f->domain_)) return st;
  }
  domains[0] = f->domain_;
  return nullptr;
}

}  // namespace fp8ort
