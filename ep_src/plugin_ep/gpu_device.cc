#include "plugin_ep/gpu_device.h"

#include <cstdio>
#include <map>
#include <mutex>
#include <unordered_map>

#include "fp8_runtime.h"
#include "ort/ort_api.h"

namespace fp8ort {

void rt_check(int rc, const char* what) {
  if (rc != 0) fail(std::string(what) + " failed: " + fp8rt_last_error(), ORT_EP_FAIL);
}

namespace {

constexpr size_t kSmallGranule = 512;            // bytes: small blocks round up to this
constexpr size_t kLargeGranule = 2u << 20;       // 2 MiB: blocks from 1 MiB up round up to this
constexpr size_t kLargeThreshold = 1u << 20;
constexpr size_t kMaxReuseFactor = 2;            // a cached block serves requests down to half its size
constexpr size_t kPciBusIdLength = 64;
constexpr size_t kArchLength = 128;

size_t round_size(size_t bytes) {
  const size_t g = bytes >= kLargeThreshold ? kLargeGranule : kSmallGranule;
  return (bytes + g - 1) / g * g;
}

// A caching allocator: freed blocks stay with it (by size) until the allocator is released, so steady-state runs
// (and graph replays) do not call into the runtime. ORT rejects an OrtArenaAllocator from a plugin EP, so this one
// reports OrtDeviceAllocator and keeps its cache inside.
class GpuAllocator : public OrtAllocator {
 public:
  GpuAllocator(const OrtMemoryInfo* info, int ordinal, bool host) : OrtAllocator{}, info_(info), ordinal_(ordinal),
                                                                    host_(host) {
    version = g_api_version;
    Alloc = alloc_fn;
    Free = free_fn;
    Info = info_fn;
    Reserve = alloc_fn;
  }
  ~GpuAllocator() {
    for (auto& [size, ptr] : cached_) release(ptr);
    for (auto& [ptr, size] : live_) release(ptr);  // ORT frees everything first; never leak what it did not
  }

 private:
  static GpuAllocator* self(OrtAllocator* a) { return static_cast<GpuAllocator*>(a); }
  static const OrtMemoryInfo* ORT_API_CALL info_fn(const OrtAllocator* a) {
    return static_cast<const GpuAllocator*>(a)->info_;
  }
  static void* ORT_API_CALL alloc_fn(OrtAllocator* a, size_t bytes) { return self(a)->allocate(bytes); }
  static void ORT_API_CALL free_fn(OrtAllocator* a, void* p) { self(a)->deallocate(p); }

  void* allocate(size_t bytes) {
    if (bytes == 0) bytes = 1;
    const size_t size = round_size(bytes);
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = cached_.lower_bound(size);
    if (it != cached_.end() && it->first <= size * kMaxReuseFactor) {
      void* p = it->second;
      live_[p] = it->first;
      cached_.erase(it);
      return p;
    }
    void* p = fresh(size);
    if (p == nullptr && !cached_.empty()) {  // out of memory: give the cache back to the runtime and retry once
      for (auto& [s, ptr] : cached_) release(ptr);
      cached_.clear();
      p = fresh(size);
    }
    if (p != nullptr) live_[p] = size;
    return p;  // nullptr: ORT reports the failed allocation with its size
  }

  void deallocate(void* p) {
    if (p == nullptr) return;
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = live_.find(p);
    if (it == live_.end()) return;  // not ours: ignore rather than corrupt the cache
    cached_.emplace(it->second, p);
    live_.erase(it);
  }

  void* fresh(size_t size) {
    void* p = nullptr;
    const int rc = host_ ? fp8rt_host_malloc(&p, size) : fp8rt_malloc(ordinal_, &p, size);
    return rc == 0 ? p : nullptr;
  }
  void release(void* p) {
    if (host_) {
      fp8rt_host_free(p);
    } else {
      fp8rt_free(ordinal_, p);
    }
  }

  const OrtMemoryInfo* info_;
  int ordinal_;
  bool host_;
  std::mutex mutex_;
  std::multimap<size_t, void*> cached_;
  std::unordered_map<void*, size_t> live_;
};

bool is_ours(const OrtEpApi& api, const OrtMemoryDevice* d) {
  return d != nullptr && api.MemoryDevice_GetDeviceType(d) == OrtMemoryInfoDeviceType_GPU &&
         api.MemoryDevice_GetVendorId(d) == kGpuVendorId;
}

bool ORT_API_CALL can_copy(const OrtDataTransferImpl* self, const OrtMemoryDevice* src,
                           const OrtMemoryDevice* dst) noexcept {
  const OrtEpApi& api = static_cast<const GpuDataTransfer*>(self)->api;
  const bool src_ok = is_ours(api, src) || api.MemoryDevice_GetDeviceType(src) == OrtMemoryInfoDeviceType_CPU;
  const bool dst_ok = is_ours(api, dst) || api.MemoryDevice_GetDeviceType(dst) == OrtMemoryInfoDeviceType_CPU;
  return src_ok && dst_ok && (is_ours(api, src) || is_ours(api, dst));
}

OrtStatus* ORT_API_CALL copy_tensors(OrtDataTransferImpl*, const OrtValue** src, OrtValue** dst,
                                     OrtSyncStream** streams, size_t count) noexcept {
  return guarded("Fp8OrtExecutionProvider data transfer", [&] {
    for (size_t i = 0; i < count; ++i) {
      size_t bytes = 0, dst_bytes = 0;
      check(g_ort->GetTensorSizeInBytes(src[i], &bytes), "GetTensorSizeInBytes");
      check(g_ort->GetTensorSizeInBytes(dst[i], &dst_bytes), "GetTensorSizeInBytes");
      if (bytes != dst_bytes) {
        fail("copy between tensors of " + std::to_string(bytes) + " and " + std::to_string(dst_bytes) + " bytes");
      }
      void* from = nullptr;
      void* to = nullptr;
      check(g_ort->GetTensorMutableData(const_cast<OrtValue*>(src[i]), &from), "GetTensorMutableData");
      check(g_ort->GetTensorMutableData(dst[i], &to), "GetTensorMutableData");
      void* stream = (streams != nullptr && streams[i] != nullptr) ? g_ort->SyncStream_GetHandle(streams[i]) : nullptr;
      rt_check(fp8rt_memcpy(to, from, bytes, stream), "fp8rt_memcpy");
    }
  });
}

void ORT_API_CALL release_transfer(OrtDataTransferImpl*) noexcept {}  // owned by GpuPlumbing

// ---- streams -------------------------------------------------------------------------------------------------

struct GpuNotification : OrtSyncNotificationImpl {
  void* event = nullptr;
  void* stream = nullptr;
  GpuNotification(int ordinal, void* s) : OrtSyncNotificationImpl{}, stream(s) {
    ort_version_supported = g_api_version;
    rt_check(fp8rt_event_create(ordinal, &event), "fp8rt_event_create");
    Release = [](OrtSyncNotificationImpl* n) noexcept { delete static_cast<GpuNotification*>(n); };
    Activate = [](OrtSyncNotificationImpl* n) noexcept {
      auto* self = static_cast<GpuNotification*>(n);
      return guarded("stream notification", [&] { rt_check(fp8rt_event_record(self->event, self->stream), "fp8rt_event_record"); });
    };
    WaitOnDevice = [](OrtSyncNotificationImpl* n, OrtSyncStream* consumer) noexcept {
      auto* self = static_cast<GpuNotification*>(n);
      return guarded("stream notification", [&] {
        void* h = consumer != nullptr ? g_ort->SyncStream_GetHandle(consumer) : nullptr;
        if (h != nullptr) {
          rt_check(fp8rt_stream_wait_event(h, self->event), "fp8rt_stream_wait_event");
        } else {
          rt_check(fp8rt_event_synchronize(self->event), "fp8rt_event_synchronize");
        }
      });
    };
    WaitOnHost = [](OrtSyncNotificationImpl* n) noexcept {
      auto* self = static_cast<GpuNotification*>(n);
      return guarded("stream notification", [&] { rt_check(fp8rt_event_synchronize(self->event), "fp8rt_event_synchronize"); });
    };
  }
  ~GpuNotification() {
    if (event != nullptr) fp8rt_event_destroy(event);
  }
};

}  // namespace

GpuStream::GpuStream(int ordinal, void* stream, bool owned)
    : OrtSyncStreamImpl{}, ordinal_(ordinal), stream_(stream), owned_(owned) {
  ort_version_supported = g_api_version;
  Release = [](OrtSyncStreamImpl* s) noexcept { delete static_cast<GpuStream*>(s); };
  GetHandle = [](OrtSyncStreamImpl* s) noexcept { return static_cast<GpuStream*>(s)->stream_; };
  CreateNotification = [](OrtSyncStreamImpl* s, OrtSyncNotificationImpl** out) noexcept {
    auto* self = static_cast<GpuStream*>(s);
    *out = nullptr;
    return guarded("CreateNotification", [&] { *out = new GpuNotification(self->ordinal_, self->stream_); });
  };
  Flush = [](OrtSyncStreamImpl*) noexcept -> OrtStatus* { return nullptr; };
  // Outputs must be complete when Run returns.
  OnSessionRunEnd = [](OrtSyncStreamImpl* s) noexcept {
    auto* self = static_cast<GpuStream*>(s);
    return guarded("stream run end", [&] { rt_check(fp8rt_stream_synchronize(self->stream_), "fp8rt_stream_synchronize"); });
  };
}

GpuStream::~GpuStream() {
  if (owned_ && stream_ != nullptr) fp8rt_stream_destroy(stream_);
}

GpuDataTransfer::GpuDataTransfer(const OrtEpApi& a) : OrtDataTransferImpl{}, api(a) {
  ort_version_supported = g_api_version;
  Release = release_transfer;
  CanCopy = can_copy;
  CopyTensors = copy_tensors;
}

namespace {

// "0000:00:06.0" and "00000000:00:06.0" name the same device: compare the numbers.
bool same_pci(const std::string& a, const std::string& b) {
  unsigned da = 0, ba = 0, xa = 0, fa = 0, db = 0, bb = 0, xb = 0, fb = 0;
  if (std::sscanf(a.c_str(), "%x:%x:%x.%x", &da, &ba, &xa, &fa) != 4) return false;
  if (std::sscanf(b.c_str(), "%x:%x:%x.%x", &db, &bb, &xb, &fb) != 4) return false;
  return da == db && ba == bb && xa == xb && fa == fb;
}

void add_gpu_device(GpuPlumbing& p, const OrtHardwareDevice* hw, const GpuInfo& gpu, std::vector<OrtEpDevice*>& out) {
  const OrtEpApi& api = p.factory.ep_api();
  OrtKeyValuePairs* meta = make_metadata(EpDeviceKind::kGpu);
  g_ort->AddKeyValuePair(meta, kMetaOrdinal, std::to_string(gpu.ordinal).c_str());
  g_ort->AddKeyValuePair(meta, kMetaArch, gpu.arch.c_str());
  g_ort->AddKeyValuePair(meta, "pci_bus_id", gpu.pci_bus_id.c_str());
  OrtEpDevice* device = nullptr;
  OrtStatus* st = api.CreateEpDevice(&p.factory, hw, meta, nullptr, &device);
  g_ort->ReleaseKeyValuePairs(meta);
  check(st, "CreateEpDevice (GPU)");
  out.push_back(device);
  check(api.EpDevice_AddAllocatorInfo(device, gpu.device_memory), "EpDevice_AddAllocatorInfo (device memory)");
  check(api.EpDevice_AddAllocatorInfo(device, gpu.host_memory), "EpDevice_AddAllocatorInfo (host-accessible memory)");
}

}  // namespace

GpuPlumbing::GpuPlumbing(Fp8OrtEpFactory& f) : factory(f), transfer(f.ep_api()) {}

GpuPlumbing::~GpuPlumbing() {
  for (GpuInfo& g : gpus) {
    if (g.device_memory != nullptr) g_ort->ReleaseMemoryInfo(g.device_memory);
    if (g.host_memory != nullptr) g_ort->ReleaseMemoryInfo(g.host_memory);
  }
  for (OrtHardwareDevice* d : own_devices) factory.ep_api().ReleaseHardwareDevice(d);
}

std::unique_ptr<GpuPlumbing> make_gpu_plumbing(Fp8OrtEpFactory& factory) {
  auto p = std::make_unique<GpuPlumbing>(factory);
  int count = 0;
  if (fp8rt_device_count(&count) != 0) {
    factory.log(ORT_LOGGING_LEVEL_WARNING, std::string("fp8ort: no GPU device offered: ") + fp8rt_last_error());
    return p;
  }
  for (int i = 0; i < count; ++i) {
    GpuInfo g;
    g.ordinal = i;
    char pci[kPciBusIdLength] = {}, arch[kArchLength] = {};
    rt_check(fp8rt_pci_bus_id(i, pci, sizeof(pci)), "fp8rt_pci_bus_id");
    rt_check(fp8rt_device_arch(i, arch, sizeof(arch)), "fp8rt_device_arch");
    g.pci_bus_id = pci;
    g.arch = arch;
    check(g_ort->CreateMemoryInfo_V2("Fp8Ort GPU", OrtMemoryInfoDeviceType_GPU, kGpuVendorId, i,
                                     OrtDeviceMemoryType_DEFAULT, 0, OrtDeviceAllocator, &g.device_memory),
          "CreateMemoryInfo_V2 (device)");
    check(g_ort->CreateMemoryInfo_V2("Fp8Ort GPU pinned", OrtMemoryInfoDeviceType_GPU, kGpuVendorId, i,
                                     OrtDeviceMemoryType_HOST_ACCESSIBLE, 0, OrtDeviceAllocator, &g.host_memory),
          "CreateMemoryInfo_V2 (host accessible)");
    p->gpus.push_back(std::move(g));
  }
  return p;
}

size_t gpu_device_count(const GpuPlumbing& p) { return p.gpus.size(); }

void gpu_add_devices(GpuPlumbing& p, const OrtHardwareDevice* const* devices, size_t count,
                     std::vector<OrtEpDevice*>& out) {
  std::vector<bool> taken(p.gpus.size(), false);
  bool ort_listed_ours = false;
  for (size_t i = 0; i < count; ++i) {
    const OrtHardwareDevice* hw = devices[i];
    if (g_ort->HardwareDevice_Type(hw) != OrtHardwareDeviceType_GPU) continue;
    if (g_ort->HardwareDevice_VendorId(hw) != kGpuVendorId) continue;  // the vendor string may be empty
    ort_listed_ours = true;
    const OrtKeyValuePairs* meta = g_ort->HardwareDevice_Metadata(hw);
    const char* pci = meta != nullptr ? g_ort->GetKeyValue(meta, "pci_bus_id") : nullptr;
    int match = -1;
    for (size_t g = 0; g < p.gpus.size() && match < 0; ++g) {
      if (!taken[g] && pci != nullptr && same_pci(pci, p.gpus[g].pci_bus_id)) match = static_cast<int>(g);
    }
    if (match < 0 && pci == nullptr) {  // no bus id to map by: take ORT's order
      for (size_t g = 0; g < p.gpus.size() && match < 0; ++g) {
        if (!taken[g]) match = static_cast<int>(g);
      }
    }
    if (match < 0) continue;  // a GPU the runtime does not see (hidden by CUDA_VISIBLE_DEVICES, say)
    taken[match] = true;
    add_gpu_device(p, hw, p.gpus[match], out);
  }
  if (ort_listed_ours) return;
  // ORT found none (1.24 on machines without /sys/class/drm): describe the runtime's GPUs ourselves.
  for (size_t g = 0; g < p.gpus.size(); ++g) {
    OrtKeyValuePairs* meta = nullptr;
    g_ort->CreateKeyValuePairs(&meta);
    g_ort->AddKeyValuePair(meta, "pci_bus_id", p.gpus[g].pci_bus_id.c_str());
    OrtHardwareDevice* hw = nullptr;
    OrtStatus* st = p.factory.ep_api().CreateHardwareDevice(OrtHardwareDeviceType_GPU, kGpuVendorId, 0,
                                                            kGpuVendorName, meta, &hw);
    g_ort->ReleaseKeyValuePairs(meta);
    check(st, "CreateHardwareDevice");
    p.own_devices.push_back(hw);
    add_gpu_device(p, hw, p.gpus[g], out);
  }
}

OrtAllocator* gpu_create_allocator(GpuPlumbing& p, const OrtMemoryInfo* info) {
  const OrtEpApi& api = p.factory.ep_api();
  const OrtMemoryDevice* md = api.MemoryInfo_GetMemoryDevice(info);
  if (!is_ours(api, md)) fail("CreateAllocator: the memory info is not one of this EP's GPU memory infos", ORT_EP_FAIL);
  const int ordinal = static_cast<int>(api.MemoryDevice_GetDeviceId(md));
  const bool host = api.MemoryDevice_GetMemoryType(md) == OrtDeviceMemoryType_HOST_ACCESSIBLE;
  for (const GpuInfo& g : p.gpus) {
    if (g.ordinal == ordinal) return new GpuAllocator(host ? g.host_memory : g.device_memory, ordinal, host);
  }
  fail("CreateAllocator: no GPU with ordinal " + std::to_string(ordinal), ORT_EP_FAIL);
}

void gpu_release_allocator(GpuPlumbing&, OrtAllocator* allocator) { delete static_cast<GpuAllocator*>(allocator); }

OrtDataTransferImpl* gpu_data_transfer(GpuPlumbing& p) { return p.gpus.empty() ? nullptr : &p.transfer; }

OrtSyncStreamImpl* gpu_create_stream(GpuPlumbing& p, const OrtMemoryDevice* device) {
  const OrtEpApi& api = p.factory.ep_api();
  if (!is_ours(api, device)) return nullptr;  // CPU memory: no stream
  const int ordinal = static_cast<int>(api.MemoryDevice_GetDeviceId(device));
  void* stream = nullptr;
  rt_check(fp8rt_stream_create(ordinal, &stream), "fp8rt_stream_create");
  return new GpuStream(ordinal, stream, true);
}

}  // namespace fp8ort
