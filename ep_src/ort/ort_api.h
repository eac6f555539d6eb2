// Access to the ONNX Runtime C API at the runtime's own version, and the error plumbing that keeps every
// C++ exception on our side of the C ABI.
#pragma once

#include <onnxruntime_c_api.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace fp8ort {

// Oldest runtimes supported. The plugin EP needs the 1.24 kernel registry. The custom-op route needs shape
// inference that sets output types; onnxruntime 1.22 crashes in it when an optional input is absent (seen
// 2026-12-02), so it also starts at 1.24.
constexpr uint32_t kMinCustomOpApiVersion = 24;
constexpr uint32_t kMinEpApiVersion = 24;

extern const OrtApi* g_ort;
extern uint32_t g_api_version;

// Picks min(runtime API version, header API version); false with a message when the runtime is older than
// `min_version` (one API table serves the process: the first successful call fixes it).
bool init_api(const OrtApiBase* base, uint32_t min_version, std::string* error);

// An error that becomes an OrtStatus at the C boundary.
class OpError : public std::runtime_error {
 public:
  OpError(OrtErrorCode code, const std::string& msg) : std::runtime_error(msg), code_(code) {}
  OrtErrorCode code() const { return code_; }

 private:
  OrtErrorCode code_;
};

[[noreturn]] void fail(const std::string& msg, OrtErrorCode code = ORT_INVALID_ARGUMENT);

// Throws OpError carrying the message of a failed ORT call (and releases the status).
void check(OrtStatus* status, const char* what);

// Runs fn, turning any exception into an OrtStatus* prefixed with where() (called only on failure). Never throws.
template <class WhereFn, class Fn>
OrtStatus* guarded_lazy(WhereFn&& where, Fn&& fn) noexcept {
  const auto status = [&](OrtErrorCode code, const char* what) {
    return g_ort->CreateStatus(code, (std::string(where()) + ": " + what).c_str());
  };
  try {
    fn();
    return nullptr;
  } catch (const OpError& e) {
    return status(e.code(), e.what());
  } catch (const std::bad_alloc&) {
    return status(ORT_FAIL, "out of memory");
  } catch (const std::exception& e) {
    return status(ORT_FAIL, e.what());
  } catch (...) {
    return status(ORT_FAIL, "unknown error");
  }
}

// The same with a fixed prefix.
template <class Fn>
OrtStatus* guarded(const std::string& where, Fn&& fn) noexcept {
  return guarded_lazy([&] { return where; }, fn);
}

// A kernel input or output seen through the C API.
struct Tensor {
  const void* data = nullptr;
  void* mutable_data = nullptr;
  ONNXTensorElementDataType type = ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
  std::vector<int64_t> shape;
  int64_t size = 0;
  bool present() const { return data != nullptr || type != ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED; }
};

Tensor describe(const OrtValue* value);
// Input `index`, or an absent Tensor when the optional input is not given.
Tensor input(OrtKernelContext* ctx, size_t index);
// Number of inputs the node has, and all of them (variadic ops).
size_t input_count(OrtKernelContext* ctx);
std::vector<Tensor> all_inputs(OrtKernelContext* ctx);
Tensor output(OrtKernelContext* ctx, size_t index, const std::vector<int64_t>& shape);

// Attribute readers with defaults (a missing attribute gives the default).
int64_t attr_int(const OrtKernelInfo* info, const char* name, int64_t dflt);
// An element-type attribute (output_dtype, to). A value outside the enum's range fails here: casting it to
// ONNXTensorElementDataType would be undefined (UBSan, found by tests/fuzz). The caller checks the types it takes.
ONNXTensorElementDataType attr_elem_type(const OrtKernelInfo* info, const char* name, ONNXTensorElementDataType dflt);
float attr_float(const OrtKernelInfo* info, const char* name, float dflt);
std::string attr_string(const OrtKernelInfo* info, const char* name, const std::string& dflt);
std::vector<int64_t> attr_ints(const OrtKernelInfo* info, const char* name);
bool has_attr(const OrtKernelInfo* info, const char* name);
std::string node_name(const OrtKernelInfo* info);
// A constant initializer behind input `index` at kernel creation, or nullptr.
const OrtValue* constant_input(const OrtKernelInfo* info, size_t index);

// Runs fn(i) for i in [0, total) on ORT's intra-op thread pool.
template <class Fn>
void parallel_for(OrtKernelContext* ctx, size_t total, Fn& fn) {
  if (total == 0) return;
  if (total == 1) {
    fn(0);
    return;
  }
  struct Call {
    Fn* fn;
    static void run(void* self, size_t i) { (*static_cast<Call*>(self)->fn)(i); }
  } call{&fn};
  check(g_ort->KernelContext_ParallelFor(ctx, &Call::run, total, 0, &call), "KernelContext_ParallelFor");
}

std::string shape_str(const std::vector<int64_t>& shape);
const char* type_name(ONNXTensorElementDataType t);

}  // namespace fp8ort
