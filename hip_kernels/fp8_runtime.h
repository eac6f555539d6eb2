/* The GPU runtime calls the plugin EP needs (devices, memory, copies, streams, events, graph capture) behind a
 * small C ABI, so that ep_src/plugin_ep stays plain C++. Implemented in fp8_runtime.hip with HIP names (nvcc builds
 * it for CUDA). Every function returns 0 on success, else the runtime's error code; fp8rt_last_error() then names
 * the call and the runtime's message (per thread). */
#pragma once

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

const char* fp8rt_last_error(void);

/* Number of GPUs the runtime sees; 0 (and success) when there is no driver or no device. */
int fp8rt_device_count(int* count);
/* PCI bus id of a device ordinal, "0000:00:06.0" (lower case). */
int fp8rt_pci_bus_id(int ordinal, char* buf, int len);
/* Architecture name: "sm_90" on NVIDIA, the gcnArchName ("gfx942:sramecc+:xnack-") on AMD. */
int fp8rt_device_arch(int ordinal, char* buf, int len);

int fp8rt_malloc(int ordinal, void** ptr, size_t bytes);
int fp8rt_free(int ordinal, void* ptr);
/* Page-locked host memory the device can read and write. */
int fp8rt_host_malloc(void** ptr, size_t bytes);
int fp8rt_host_free(void* ptr);

/* Copies between any host or device pointers (the runtime infers the direction). Asynchronous on `stream` when it
 * is not NULL, else synchronous. */
int fp8rt_memcpy(void* dst, const void* src, size_t bytes, void* stream);

int fp8rt_stream_create(int ordinal, void** stream);
int fp8rt_stream_destroy(void* stream);
int fp8rt_stream_synchronize(void* stream);

int fp8rt_event_create(int ordinal, void** event); /* timing disabled */
int fp8rt_event_destroy(void* event);
int fp8rt_event_record(void* event, void* stream);
int fp8rt_stream_wait_event(void* stream, void* event);
int fp8rt_event_synchronize(void* event);

/* Stream capture into an executable graph (thread-local capture mode: other threads' work is not captured). */
int fp8rt_capture_begin(void* stream);
int fp8rt_capture_end(void* stream, void** graph_exec);
int fp8rt_graph_launch(void* graph_exec, void* stream);
int fp8rt_graph_destroy(void* graph_exec);

#ifdef __cplusplus
}
#endif
