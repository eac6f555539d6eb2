// The kernel interface every route binds: a kernel is built once per node from its OrtKernelInfo and computes
// on an OrtKernelContext. Errors are OpError exceptions; each route's adapter turns them into an OrtStatus
// at the C boundary (guarded()). The same class serves the custom-op library and the plugin EP's registry.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ort/ort_api.h"

namespace fp8ort {

// Names an op node in messages: "FP8Conv 'conv1'".
struct OpContext {
  std::string op;
  std::string node;
  std::string where() const { return node.empty() ? op : op + " '" + node + "'"; }
};

class Kernel {
 public:
  virtual ~Kernel();
  virtual void compute(OrtKernelContext* ctx) = 0;
  const OpContext& context() const { return oc_; }

 protected:
  OpContext oc_;  // set by the constructor from the node's OrtKernelInfo

 private:
  friend OrtStatus* compute_at_boundary(Kernel* kernel, OrtKernelContext* ctx) noexcept;
  std::atomic<uint64_t> host_ns_{0};  // FP8ORT_HOST_TIMING only: host time inside compute, and its calls
  std::atomic<uint64_t> calls_{0};
};

// Every route's Compute entry: runs kernel->compute(ctx) and turns an exception into an OrtStatus naming the node
// (the name is built only on failure: no string work per call). With FP8ORT_HOST_TIMING=1 in the environment it
// also adds the call's host time to a per-op table that is printed to stderr at process exit (host cost per node
// on GPU devices, where ORT's own profiler adds its overhead to every node).
OrtStatus* compute_at_boundary(Kernel* kernel, OrtKernelContext* ctx) noexcept;

using KernelFactory = std::unique_ptr<Kernel> (*)(const OrtKernelInfo* info);

// One type constraint of an op schema ("T" and the element types the kernel takes for it).
struct TypeConstraint {
  const char* name;
  std::vector<ONNXTensorElementDataType> types;
};

constexpr int kLatestOpset = 0x7fffffff;  // end_version of a kernel whose op has no newer version yet

// One row of a kernel table: what the plugin EP registers for one op over a range of opset versions.
struct KernelDef {
  const char* domain;   // "" for ONNX ops, "com.fp8ort" for ours
  const char* op_type;  // "Relu"
  int since_version;    // first op version whose semantics the kernel implements
  int end_version;      // last one (inclusive), kLatestOpset when open-ended
  std::vector<TypeConstraint> constraints;
  std::vector<int> cpu_inputs;   // inputs read from CPU memory on a GPU device (shape tensors)
  std::vector<int> cpu_outputs;  // outputs written to CPU memory on a GPU device
  KernelFactory create;
};

// Standard ONNX ops implemented in float for the EP's CPU device (ep_src/cpu/onnx/) and GPU device
// (ep_src/gpu/onnx/, GPU builds only).
const std::vector<KernelDef>& cpu_onnx_kernels();
const std::vector<KernelDef>& gpu_onnx_kernels();

}  // namespace fp8ort
