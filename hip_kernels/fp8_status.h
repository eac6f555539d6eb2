// Host-side helpers shared by the launchers: the per-thread error message and checked runtime calls.
#pragma once

#include <stdarg.h>
#include <stdio.h>

#include "fp8_compat.h"
#include "fp8_kernels.h"

namespace fp8ort {

inline thread_local char g_last_error[512] = "";

inline fp8ort_status fail(fp8ort_status code, const char* fmt, ...) {
    va_list args;
    va_start(args, fmt);
    vsnprintf(g_last_error, sizeof(g_last_error), fmt, args);
    va_end(args);
    return code;
}

inline fp8ort_status ok() {
    g_last_error[0] = '\0';
    return FP8ORT_OK;
}

// Status of the last launch (or any runtime call) with the op's name in the message.
inline fp8ort_status check_runtime(hipError_t err, const char* what) {
    if (err != hipSuccess) return fail(FP8ORT_DEVICE_ERROR, "%s: %s", what, hipGetErrorString(err));
    return FP8ORT_OK;
}

inline fp8ort_status check_launch(const char* what) { return check_runtime(hipGetLastError(), what); }

// Host: whether fp8ort's kernels that wait for it (fp8ort_pdl_wait, fp8_compat.h) are launched as programmatic
// dependent launches: the sm90a GEMM and convolution kernels, the split-K / BLAS-Lt epilogue pass, and the kernels
// between them in a CNN (im2col and its weight rows, the strided 1x1 subsample, Quantize, E4M3FN max pooling,
// global average pooling). fp8ort_launch_set_pdl, or FP8ORT_PDL=on|off read once; on when unset; sm_90 devices
// only. The same bits either way.
bool pdl_wanted();
// The current device's architecture (NVIDIA: 10 * major + minor, 90 for sm_90; AMD: the gfx number, 942, 1201),
// looked up once per device (fp8_gemm.hip).
fp8ort_status current_gpu_arch(int* arch);

// Launches kernel<<<grid, block, smem, stream>>>(args...); with pdl (NVIDIA only) as a programmatic dependent launch,
// which lets the kernel's blocks start while the kernel before it on the stream ends (its launch and set-up overlap
// that kernel's last blocks; the kernel must call fp8ort_pdl_wait() first, fp8_compat.h). A failed launch is the
// runtime's last error, as with <<<...>>>: check it with check_launch.
template <typename... Params, typename... Args>
void launch_kernel(bool pdl, void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem, hipStream_t stream,
                   const Args&... args) {
#if defined(FP8ORT_CUDA)
    if (pdl) {
        cudaLaunchAttribute attr[1];
        attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
        attr[0].val.programmaticStreamSerializationAllowed = 1;
        cudaLaunchConfig_t cfg = {};
        cfg.gridDim = grid;
        cfg.blockDim = block;
        cfg.dynamicSmemBytes = smem;
        cfg.stream = stream;
        cfg.attrs = attr;
        cfg.numAttrs = 1;
        (void)cudaLaunchKernelEx(&cfg, kernel, args...);  // an error stays the last error
        return;
    }
#else
    (void)pdl;
#endif
    kernel<<<grid, block, smem, stream>>>(args...);
}

__host__ __device__ inline bool is_fp8_type(fp8ort_dtype t) {
    return t == FP8ORT_E4M3FN || t == FP8ORT_E5M2 || t == FP8ORT_E4M3FNUZ || t == FP8ORT_E5M2FNUZ;
}
__host__ __device__ inline bool is_hp_type(fp8ort_dtype t) { return t == FP8ORT_FLOAT || t == FP8ORT_FLOAT16 || t == FP8ORT_BFLOAT16; }

inline const char* dtype_name(fp8ort_dtype t) {
    switch (t) {
        case FP8ORT_FLOAT: return "float32";
        case FP8ORT_FLOAT16: return "float16";
        case FP8ORT_BFLOAT16: return "bfloat16";
        case FP8ORT_E4M3FN: return "float8e4m3fn";
        case FP8ORT_E4M3FNUZ: return "float8e4m3fnuz";
        case FP8ORT_E5M2: return "float8e5m2";
        case FP8ORT_E5M2FNUZ: return "float8e5m2fnuz";
    }
    return "unknown";
}

inline hipStream_t as_stream(void* s) { return static_cast<hipStream_t>(s); }

}  // namespace fp8ort

#define FP8ORT_TRY(expr)                                   \
    do {                                                   \
        const fp8ort_status fp8ort_status_ = (expr);       \
        if (fp8ort_status_ != FP8ORT_OK) return fp8ort_status_; \
    } while (0)
