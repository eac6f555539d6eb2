// The plugin EP on a GPU device: kernels run on the session's stream (one per EP, handed to ORT through
// OrtEp::CreateSyncStreamForDevice, reached by kernels via KernelContext_GetGPUComputeStream), and with
// enable_graph_capture=1 the run is captured as a GPU graph through the 1.26 OrtEp callbacks and replayed.
#include <map>
#include <mutex>
#include <string>

#include "fp8_runtime.h"
#include "plugin_ep/gpu_device.h"

namespace fp8ort {
namespace {

// Uncaptured runs per graph id before capture: the first allocates per tensor, the second allocates by ORT's memory
// pattern (other block sizes); only after both does the allocator's cache serve every request made while capturing.
// On the H200 one warm-up run left capture failing to allocate above batch 1 (logs_h200_plugin_ep_2026-12-03).
constexpr int kWarmupRuns = 2;
constexpr int kSkipCaptureId = -1;    // "gpu_graph_id" value that means: run normally, do not capture
constexpr const char* kGraphIdKey = "gpu_graph_id";
constexpr uint32_t kGraphCaptureApi = 26;
constexpr uint32_t kReleaseCapturedGraphApi = 27;

int graph_id(const OrtRunOptions* options) {
  const char* v = options != nullptr ? g_ort->GetRunConfigEntry(options, kGraphIdKey) : nullptr;
  if (v == nullptr || *v == '\0') return 0;
  try {
    return std::stoi(v);
  } catch (const std::exception&) {
    fail(std::string("run config ") + kGraphIdKey + "='" + v + "' is not an integer");
  }
}

class GpuEp : public Fp8OrtEp {
 public:
  GpuEp(Fp8OrtEpFactory& factory, const EpConfig& config, const OrtLogger* logger) : Fp8OrtEp(factory, config, logger) {
    rt_check(fp8rt_stream_create(config.gpu_ordinal, &stream_), "fp8rt_stream_create");
    CreateSyncStreamForDevice = create_stream;
    OnRunStart = on_run_start;
    OnRunEnd = on_run_end;
    if (g_api_version >= kGraphCaptureApi) {
      IsGraphCaptureEnabled = capture_enabled;
      IsGraphCaptured = captured;
      ReplayGraph = replay;
      GetGraphCaptureNodeAssignmentPolicy = policy;
    }
    if (g_api_version >= kReleaseCapturedGraphApi) ReleaseCapturedGraph = release_graph;
  }

  ~GpuEp() override {
    for (auto& [id, exec] : graphs_) fp8rt_graph_destroy(exec);
    if (stream_ != nullptr) {
      fp8rt_stream_synchronize(stream_);
      fp8rt_stream_destroy(stream_);
    }
  }

 private:
  static GpuEp* self(OrtEp* ep) { return static_cast<GpuEp*>(static_cast<Fp8OrtEp*>(ep)); }
  static const GpuEp* self(const OrtEp* ep) { return static_cast<const GpuEp*>(static_cast<const Fp8OrtEp*>(ep)); }

  // Every stream ORT asks for wraps the EP's one stream: work stays in order and graph capture sees all of it.
  static OrtStatus* ORT_API_CALL create_stream(OrtEp* ep, const OrtMemoryDevice* device,
                                               OrtSyncStreamImpl** out) noexcept {
    *out = nullptr;
    GpuEp* e = self(ep);
    return guarded("Fp8OrtExecutionProvider CreateSyncStreamForDevice", [&] {
      const OrtEpApi& api = e->factory_ref().ep_api();
      if (api.MemoryDevice_GetDeviceType(device) != OrtMemoryInfoDeviceType_GPU) return;
      *out = new GpuStream(e->config().gpu_ordinal, e->stream_, false);
    });
  }

  static OrtStatus* ORT_API_CALL on_run_start(OrtEp* ep, const OrtRunOptions* options) noexcept {
    GpuEp* e = self(ep);
    return guarded("Fp8OrtExecutionProvider OnRunStart", [&] {
      if (!e->config().graph_capture) return;
      const int id = graph_id(options);
      std::lock_guard<std::mutex> lock(e->mutex_);
      if (id == kSkipCaptureId || e->graphs_.count(id) != 0) return;
      if (e->warmups_[id]++ < kWarmupRuns) return;
      rt_check(fp8rt_capture_begin(e->stream_), "fp8rt_capture_begin");
      e->capturing_ = id;
    });
  }

  static OrtStatus* ORT_API_CALL on_run_end(OrtEp* ep, const OrtRunOptions*, bool sync_stream) noexcept {
    GpuEp* e = self(ep);
    return guarded("Fp8OrtExecutionProvider OnRunEnd", [&] {
      {
        std::lock_guard<std::mutex> lock(e->mutex_);
        if (e->capturing_ != kSkipCaptureId) {
          const int id = e->capturing_;
          e->capturing_ = kSkipCaptureId;
          void* exec = nullptr;
          rt_check(fp8rt_capture_end(e->stream_, &exec), "fp8rt_capture_end");
          e->graphs_[id] = exec;
          // Nothing ran while capturing: run the captured work once now for this run's outputs.
          rt_check(fp8rt_graph_launch(exec, e->stream_), "fp8rt_graph_launch");
        }
      }
      if (sync_stream) rt_check(fp8rt_stream_synchronize(e->stream_), "fp8rt_stream_synchronize");
    });
  }

  static bool ORT_API_CALL capture_enabled(const OrtEp* ep) noexcept { return self(ep)->config().graph_capture; }

  static bool ORT_API_CALL captured(const OrtEp* ep, int id) noexcept {
    const GpuEp* e = self(ep);
    std::lock_guard<std::mutex> lock(e->mutex_);
    return e->graphs_.count(id) != 0;
  }

  static OrtStatus* ORT_API_CALL replay(OrtEp* ep, int id) noexcept {
    GpuEp* e = self(ep);
    return guarded("Fp8OrtExecutionProvider ReplayGraph", [&] {
      void* exec = nullptr;
      {
        std::lock_guard<std::mutex> lock(e->mutex_);
        auto it = e->graphs_.find(id);
        if (it == e->graphs_.end()) fail("no captured graph for gpu_graph_id " + std::to_string(id));
        exec = it->second;
      }
      rt_check(fp8rt_graph_launch(exec, e->stream_), "fp8rt_graph_launch");
      rt_check(fp8rt_stream_synchronize(e->stream_), "fp8rt_stream_synchronize");
    });
  }

  static OrtGraphCaptureNodeAssignmentPolicy ORT_API_CALL policy(const OrtEp*) noexcept {
    return OrtGraphCaptureNodeAssignmentPolicy_ALLOW_CPU_FOR_SHAPES;
  }

  static OrtStatus* ORT_API_CALL release_graph(OrtEp* ep, int id) noexcept {
    GpuEp* e = self(ep);
    return guarded("Fp8OrtExecutionProvider ReleaseCapturedGraph", [&] {
      std::lock_guard<std::mutex> lock(e->mutex_);
      auto it = e->graphs_.find(id);
      if (it == e->graphs_.end()) return;
      rt_check(fp8rt_stream_synchronize(e->stream_), "fp8rt_stream_synchronize");
      rt_check(fp8rt_graph_destroy(it->second), "fp8rt_graph_destroy");
      e->graphs_.erase(it);
      e->warmups_.erase(id);
    });
  }

  void* stream_ = nullptr;
  mutable std::mutex mutex_;
  std::map<int, void*> graphs_;  // gpu_graph_id -> executable graph
  std::map<int, int> warmups_;
  int capturing_ = kSkipCaptureId;
};

}  // namespace

OrtEp* create_gpu_ep(Fp8OrtEpFactory& factory, const EpConfig& config, const OrtLogger* logger) {
  if (config.gpu_ordinal < 0 || static_cast<size_t>(config.gpu_ordinal) >= gpu_device_count(*factory.gpu())) {
    fail("GPU ordinal " + std::to_string(config.gpu_ordinal) + " is not a device of this EP");
  }
  return static_cast<Fp8OrtEp*>(new GpuEp(factory, config, logger));
}

}  // namespace fp8ort
