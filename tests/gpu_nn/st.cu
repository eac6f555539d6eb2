// Device-memory helpers for the standalone nn-kernel check (not part of the library).
#include <cuda_runtime.h>
extern "C" {
void* st_malloc(size_t n) { void* p = nullptr; return cudaMalloc(&p, n ? n : 16) == cudaSuccess ? p : nullptr; }
int st_free(void* p) { return cudaFree(p); }
int st_h2d(void* d, const void* h, size_t n) { return cudaMemcpy(d, h, n, cudaMemcpyHostToDevice); }
int st_d2h(void* h, const void* d, size_t n) { return cudaMemcpy(h, d, n, cudaMemcpyDeviceToHost); }
int st_sync() { return cudaDeviceSynchronize(); }
}
