#include "ort/kernel.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>

namespace fp8ort {
namespace {

bool host_timing_enabled() {
  static const bool on = [] {
    const char* v = std::getenv("FP8ORT_HOST_TIMING");
    return v != nullptr && *v != '\0' && *v != '0';
  }();
  return on;
}

// Per op type: host nanoseconds and calls, added when a kernel is destroyed. Never freed, so a kernel released
// after the report (a session alive at exit) only adds to a table nobody prints.
struct HostTimes {
  std::mutex mutex;
  std::map<std::string, std::pair<uint64_t, uint64_t>> per_op;
};

HostTimes& host_times() {
  static HostTimes* table = [] {
    auto* t = new HostTimes;
    std::atexit([] {
      HostTimes& h = host_times();
      std::lock_guard<std::mutex> lock(h.mutex);
      if (h.per_op.empty()) return;
      uint64_t total_ns = 0, total_calls = 0;
      for (const auto& [op, v] : h.per_op) total_ns += v.first, total_calls += v.second;
      std::fprintf(stderr, "fp8ort host time inside Compute (FP8ORT_HOST_TIMING), released kernels only:\n");
      std::fprintf(stderr, "  %-28s %12s %10s %10s\n", "op", "total ms", "calls", "us/call");
      for (const auto& [op, v] : h.per_op) {
        std::fprintf(stderr, "  %-28s %12.3f %10llu %10.2f\n", op.c_str(), v.first * 1e-6,
                     static_cast<unsigned long long>(v.second), v.second ? v.first * 1e-3 / v.second : 0.0);
      }
      std::fprintf(stderr, "  %-28s %12.3f %10llu %10.2f\n", "all", total_ns * 1e-6,
                   static_cast<unsigned long long>(total_calls), total_calls ? total_ns * 1e-3 / total_calls : 0.0);
    });
    return t;
  }();
  return *table;
}

}  // namespace

Kernel::~Kernel() {
  const uint64_t calls = calls_.load(std::memory_order_relaxed);
  if (calls == 0) return;
  HostTimes& h = host_times();
  std::lock_guard<std::mutex> lock(h.mutex);
  auto& v = h.per_op[oc_.op];
  v.first += host_ns_.load(std::memory_order_relaxed);
  v.second += calls;
}

OrtStatus* compute_at_boundary(Kernel* kernel, OrtKernelContext* ctx) noexcept {
  const auto run = [&] {
    return guarded_lazy([&] { return kernel->context().where(); }, [&] { kernel->compute(ctx); });
  };
  if (!host_timing_enabled()) return run();
  const auto start = std::chrono::steady_clock::now();
  OrtStatus* st = run();
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start);
  kernel->host_ns_.fetch_add(static_cast<uint64_t>(ns.count()), std::memory_order_relaxed);
  kernel->calls_.fetch_add(1, std::memory_order_relaxed);
  return st;
}

}  // namespace fp8ort
