// What every GPU kernel's host side shares: the stream ORT gives the kernel, turning a kernel library status
// into an OpError with the library's message, and scratch memory from the EP's allocator.
#pragma once

#include <string>
#include <utility>

#include "fp8_kernels.h"
#include "ort/ort_api.h"

namespace fp8ort {

// The GPU stream of this kernel call (the EP's stream on the plugin EP, the CUDA/ROCm EP's on the custom-op route).
void* compute_stream(OrtKernelContext* ctx);
// Throws OpError naming `kernel` with the kernel library's message when st is not FP8ORT_OK.
void gpu_check(fp8ort_status st, const char* kernel);

// Device memory from an ORT allocator, returned to it when this object dies.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(OrtAllocator* alloc, size_t bytes) : alloc_(alloc) {
    if (bytes == 0) return;
    check(g_ort->AllocatorAlloc(alloc, bytes, &ptr_), "AllocatorAlloc");
    if (ptr_ == nullptr) fail("could not allocate " + std::to_string(bytes) + " bytes of device memory", ORT_FAIL);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept : alloc_(o.alloc_), ptr_(o.ptr_) { o.ptr_ = nullptr; }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    std::swap(alloc_, o.alloc_);
    std::swap(ptr_, o.ptr_);
    return *this;
  }
  ~DeviceBuffer() {
    if (ptr_ != nullptr) {
      OrtStatus* st = g_ort->AllocatorFree(alloc_, ptr_);
      if (st != nullptr) g_ort->ReleaseStatus(st);
    }
  }
  void* get() const { return ptr_; }

 private:
  OrtAllocator* alloc_ = nullptr;
  void* ptr_ = nullptr;
};

// The EP's device allocator, released with the kernel (after the buffers allocated from it).
class Allocator {
 public:
  explicit Allocator(const OrtKernelInfo* info) {
    check(g_ort->KernelInfoGetAllocator(info, OrtMemTypeDefault, &alloc_), "KernelInfoGetAllocator");
  }
  Allocator(const Allocator&) = delete;
  Allocator& operator=(const Allocator&) = delete;
  ~Allocator() {
    if (alloc_ != nullptr) g_ort->ReleaseAllocator(alloc_);
  }
  OrtAllocator* get() const { return alloc_; }

 private:
  OrtAllocator* alloc_ = nullptr;
};

}  // namespace fp8ort
