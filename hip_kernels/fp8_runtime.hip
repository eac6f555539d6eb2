// The runtime ABI of fp8_runtime.h, written with HIP names; under nvcc fp8_compat.h maps the kernels' names and
// the runtime calls only this file uses are mapped just below.
#include <stdio.h>
#include <string.h>

#include "fp8_compat.h"
#include "fp8_runtime.h"

#if defined(FP8ORT_CUDA)
using hipGraph_t = cudaGraph_t;
using hipGraphExec_t = cudaGraphExec_t;
#define hipErrorNoDevice cudaErrorNoDevice
#define hipErrorInsufficientDriver cudaErrorInsufficientDriver
#define hipGetDeviceCount cudaGetDeviceCount
#define hipSetDevice cudaSetDevice
#define hipDeviceGetPCIBusId cudaDeviceGetPCIBusId
#define hipMalloc cudaMalloc
#define hipFree cudaFree
#define hipHostMalloc(p, n, flags) cudaHostAlloc(p, n, flags)
#define hipHostMallocDefault cudaHostAllocDefault
#define hipHostFree cudaFreeHost
#define hipMemcpy cudaMemcpy
#define hipMemcpyDefault cudaMemcpyDefault
#define hipStreamCreateWithFlags cudaStreamCreateWithFlags
#define hipStreamNonBlocking cudaStreamNonBlocking
#define hipStreamDestroy cudaStreamDestroy
#define hipStreamSynchronize cudaStreamSynchronize
#define hipEventCreateWithFlags cudaEventCreateWithFlags
#define hipEventDisableTiming cudaEventDisableTiming
#define hipEventDestroy cudaEventDestroy
#define hipEventRecord cudaEventRecord
#define hipStreamWaitEvent cudaStreamWaitEvent
#define hipEventSynchronize cudaEventSynchronize
#define hipStreamBeginCapture cudaStreamBeginCapture
#define hipStreamCaptureModeThreadLocal cudaStreamCaptureModeThreadLocal
#define hipStreamEndCapture cudaStreamEndCapture
#define hipGraphInstantiateWithFlags cudaGraphInstantiateWithFlags
#define hipGraphDestroy cudaGraphDestroy
#define hipGraphLaunch cudaGraphLaunch
#define hipGraphExecDestroy cudaGraphExecDestroy
#endif

namespace {

thread_local char g_error[512] = "";

int report(hipError_t err, const char* what) {
    if (err == hipSuccess) return 0;
    snprintf(g_error, sizeof(g_error), "%s: %s", what, hipGetErrorString(err));
    (void)hipGetLastError();  // clear a sticky-free error so the next call starts clean
    return static_cast<int>(err);
}

#define FP8RT_CHECK(call)                               \
    do {                                                \
        const int fp8rt_rc_ = report((call), #call);    \
        if (fp8rt_rc_ != 0) return fp8rt_rc_;           \
    } while (0)

}  // namespace

extern "C" {

const char* fp8rt_last_error(void) { return g_error; }

int fp8rt_device_count(int* count) {
    *count = 0;
    const hipError_t err = hipGetDeviceCount(count);
    if (err == hipErrorNoDevice || err == hipErrorInsufficientDriver) {
        (void)hipGetLastError();
        *count = 0;
        return 0;
    }
    if (err != hipSuccess) *count = 0;
    return report(err, "hipGetDeviceCount");
}

int fp8rt_pci_bus_id(int ordinal, char* buf, int len) {
    FP8RT_CHECK(hipDeviceGetPCIBusId(buf, len, ordinal));
    for (char* c = buf; *c; ++c) {
        if (*c >= 'A' && *c <= 'F') *c = static_cast<char>(*c - 'A' + 'a');
    }
    return 0;
}

int fp8rt_device_arch(int ordinal, char* buf, int len) {
    hipDeviceProp_t prop;
    FP8RT_CHECK(hipGetDeviceProperties(&prop, ordinal));
#if defined(FP8ORT_CUDA)
    snprintf(buf, len, "sm_%d%d", prop.major, prop.minor);
#else
    snprintf(buf, len, "%s", prop.gcnArchName);
#endif
    return 0;
}

int fp8rt_malloc(int ordinal, void** ptr, size_t bytes) {
    *ptr = nullptr;
    FP8RT_CHECK(hipSetDevice(ordinal));
    FP8RT_CHECK(hipMalloc(ptr, bytes));
    return 0;
}

int fp8rt_free(int ordinal, void* ptr) {
    FP8RT_CHECK(hipSetDevice(ordinal));
    FP8RT_CHECK(hipFree(ptr));
    return 0;
}

int fp8rt_host_malloc(void** ptr, size_t bytes) {
    *ptr = nullptr;
    FP8RT_CHECK(hipHostMalloc(ptr, bytes, hipHostMallocDefault));
    return 0;
}

int fp8rt_host_free(void* ptr) {
    FP8RT_CHECK(hipHostFree(ptr));
    return 0;
}

int fp8rt_memcpy(void* dst, const void* src, size_t bytes, void* stream) {
    if (bytes == 0) return 0;
    if (stream != nullptr) {
        FP8RT_CHECK(hipMemcpyAsync(dst, src, bytes, hipMemcpyDefault, static_cast<hipStream_t>(stream)));
    } else {
        FP8RT_CHECK(hipMemcpy(dst, src, bytes, hipMemcpyDefault));
    }
    return 0;
}

int fp8rt_stream_create(int ordinal, void** stream) {
    *stream = nullptr;
    FP8RT_CHECK(hipSetDevice(ordinal));
    hipStream_t s = nullptr;
    FP8RT_CHECK(hipStreamCreateWithFlags(&s, hipStreamNonBlocking));
    *stream = s;
    return 0;
}

int fp8rt_stream_destroy(void* stream) {
    FP8RT_CHECK(hipStreamDestroy(static_cast<hipStream_t>(stream)));
    return 0;
}

int fp8rt_stream_synchronize(void* stream) {
    FP8RT_CHECK(hipStreamSynchronize(static_cast<hipStream_t>(stream)));
    return 0;
}

int fp8rt_event_create(int ordinal, void** event) {
    *event = nullptr;
    FP8RT_CHECK(hipSetDevice(ordinal));
    hipEvent_t e = nullptr;
    FP8RT_CHECK(hipEventCreateWithFlags(&e, hipEventDisableTiming));
    *event = e;
    return 0;
}

int fp8rt_event_destroy(void* event) {
    FP8RT_CHECK(hipEventDestroy(static_cast<hipEvent_t>(event)));
    return 0;
}

int fp8rt_event_record(void* event, void* stream) {
    FP8RT_CHECK(hipEventRecord(static_cast<hipEvent_t>(event), static_cast<hipStream_t>(stream)));
    return 0;
}

int fp8rt_stream_wait_event(void* stream, void* event) {
    FP8RT_CHECK(hipStreamWaitEvent(static_cast<hipStream_t>(stream), static_cast<hipEvent_t>(event), 0));
    return 0;
}

int fp8rt_event_synchronize(void* event) {
    FP8RT_CHECK(hipEventSynchronize(static_cast<hipEvent_t>(event)));
    return 0;
}

int fp8rt_capture_begin(void* stream) {
    FP8RT_CHECK(hipStreamBeginCapture(static_cast<hipStream_t>(stream), hipStreamCaptureModeThreadLocal));
    return 0;
}

int fp8rt_capture_end(void* stream, void** graph_exec) {
    *graph_exec = nullptr;
    hipGraph_t graph = nullptr;
    FP8RT_CHECK(hipStreamEndCapture(static_cast<hipStream_t>(stream), &graph));
    hipGraphExec_t exec = nullptr;
    const int rc = report(hipGraphInstantiateWithFlags(&exec, graph, 0), "hipGraphInstantiateWithFlags");
    (void)hipGraphDestroy(graph);  // the executable graph keeps what it needs
    if (rc != 0) return rc;
    *graph_exec = exec;
    return 0;
}

int fp8rt_graph_launch(void* graph_exec, void* stream) {
    FP8RT_CHECK(hipGraphLaunch(static_cast<hipGraphExec_t>(graph_exec), static_cast<hipStream_t>(stream)));
    return 0;
}

int fp8rt_graph_destroy(void* graph_exec) {
    FP8RT_CHECK(hipGraphExecDestroy(static_cast<hipGraphExec_t>(graph_exec)));
    return 0;
}

}  // extern "C"
