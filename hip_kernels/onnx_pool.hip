// MaxPool and AveragePool over NCHW planes (1-D pooling as height 1): one thread per output value.
#include "onnx_nn_device.h"

namespace fp8ort {
namespace {

using nn::kElementwiseThreads;

template <class T>
__global__ void __launch_bounds__(kElementwiseThreads)
    pool2d_kernel(const T* __restrict__ x, T* __restrict__ y, fp8ort_nn_pool2d p, int64_t count) {
    const int64_t grid_stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    const int64_t plane_in = p.in_h * p.in_w;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += grid_stride) {
        const int64_t ox = i % p.out_w;
        const int64_t oy = (i / p.out_w) % p.out_h;
        const int64_t plane = i / (p.out_w * p.out_h);
        const T* xp = x + plane * plane_in;
        const int64_t y0 = oy * p.stride_h - p.pad_top;
        const int64_t x0 = ox * p.stride_w - p.pad_left;
        float result;
        if (p.max_pool) {
            float m = nn::lowest_value<T>();
            bool any = false;
            for (int64_t ky = 0; ky < p.kernel_h; ++ky) {
                const int64_t iy = y0 + ky * p.dilation_h;
                if (iy < 0 || iy >= p.in_h) continue;
                for (int64_t kx = 0; kx < p.kernel_w; ++kx) {
                    const int64_t ix = x0 + kx * p.dilation_w;
                    if (ix < 0 || ix >= p.in_w) continue;
                    const float v = nn::load(xp, iy * p.in_w + ix);
                    if (!any || v > m) m = v;
                    any = true;
                }
            }
            result = m;
        } else {
            float sum = 0.0f;
            int64_t taps = 0;    // taps inside the input
            int64_t padded = 0;  // taps inside the padded input
            for (int64_t ky = 0; ky < p.kernel_h; ++ky) {
                const int64_t iy = y0 + ky * p.dilation_h;
                if (iy >= p.in_h + p.pad_bottom) break;
                for (int64_t kx = 0; kx < p.kernel_w; ++kx) {
                    const int64_t ix = x0 + kx * p.dilation_w;
                    if (ix >= p.in_w + p.pad_right) break;
                    ++padded;
                    if (iy < 0 || ix < 0 || iy >= p.in_h || ix >= p.in_w) continue;
                    sum += nn::load(xp, iy * p.in_w + ix);
                    ++taps;
                }
            }
            const int64_t divisor = p.count_include_pad ? padded : taps;
            result = divisor > 0 ? sum / static_cast<float>(divisor) : 0.0f;
        }
        nn::store(y, i, result);
    }
}

template <class T>
fp8ort_status launch_pool2d(const void* x, void* y, const fp8ort_nn_pool2d* p, int64_t count, hipStream_t stream) {
    pool2d_kernel<T><<<nn::elementwise_blocks(count), kElementwiseThreads, 0, stream>>>(
        static_cast<const T*>(x), static_cast<T*>(y), *p, count);
    return check_launch("fp8ort_nn_pool2d_run");
}

}  // namespace
}  // namespace fp8ort

using namespace fp8ort;

extern "C" fp8ort_status fp8ort_nn_pool2d_run(const void* x, void* y, fp8ort_dtype type, const fp8ort_nn_pool2d* p,
                                              void* stream) {
    const char* me = "fp8ort_nn_pool2d_run";
    if (!nn::is_nn_type(type)) return fail(FP8ORT_INVALID_ARGUMENT, "%s: type %s is not float32/float16", me, dtype_name(type));
    if (!p) return fail(FP8ORT_INVALID_ARGUMENT, "%s: parameters are NULL", me);
    if (p->planes < 0 || p->in_h < 0 || p->in_w < 0 || p->out_h < 0 || p->out_w < 0)
        return fail(FP8ORT_INVALID_ARGUMENT, "%s: negative size", me);
    if (p->kernel_h < 1 || p->kernel_w < 1 || p->stride_h < 1 || p->stride_w < 1 || p->dilation_h < 1 ||
        p->dilation_w < 1)
        return fail(FP8ORT_INVALID_ARGUMENT, "%s: kernel, strides and dilations must be >= 1", me);
    if (p->pad_top < 0 || p->pad_left < 0 || p->pad_bottom < 0 || p->pad_right < 0)
        return fail(FP8ORT_INVALID_ARGUMENT, "%s: negative padding", me);
    const int64_t count = p->planes * p->out_h * p->out_w;
    if (count == 0) return ok();
    if (!x || !y) return fail(FP8ORT_INVALID_ARGUMENT, "%s: x and y must be device pointers, got NULL", me);
    FP8ORT_TRY(FP8ORT_NN_DISPATCH(type, launch_pool2d, x, y, p, count, as_stream(stream)));
    return ok();
}
