// FP8 convolution, NHWC: an implicit GEMM over the portable main loop (fp8_gemm_core.h) with rows =
// batch * out_h * out_w, columns = output channels of one group, K = kernel_h * kernel_w * (in_c / group) in
// (tap, channel) order, and a direct kernel for depthwise convolution (one input and one output channel per group).
#include "fp8_conv_source.h"
#include "fp8_gemm_core.h"
#include "fp8_gemm_sm90.h"

namespace fp8ort {
namespace {

constexpr int kDepthwiseThreads = 256;

using conv_source = conv_source_t<kChunksPerThread>;

// ONNX [M, C/g, kH, kW] -> [M, kH, kW, cg_out] with channels cg <= c < cg_out zero (cg_out == cg: no padding)
__global__ void pack_conv_weight_kernel(const uint8_t* __restrict__ w, int64_t m, int64_t cg, int64_t kh, int64_t kw,
                                        int64_t cg_out, uint8_t* __restrict__ out) {
    const int64_t total = m * cg_out * kh * kw;
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += stride) {
        int64_t r = i;  // i indexes the packed weight
        const int64_t c = r % cg_out; r /= cg_out;
        const int64_t x = r % kw; r /= kw;
        const int64_t y = r % kh;
        const int64_t o = r / kh;
        out[i] = c < cg ? w[((o * cg + c) * kh + y) * kw + x] : 0;
    }
}

// Depthwise: one thread per output element, exact FP8 products summed in float32.
template <fp8ort_fp8_format F>
__global__ void __launch_bounds__(kDepthwiseThreads)
    depthwise_kernel(const uint8_t* __restrict__ x, const uint8_t* __restrict__ w, fp8ort_conv_shape s, int64_t out_h,
                     int64_t out_w, epilogue_args ep) {
    const int64_t total = s.batch * out_h * out_w * s.out_c;
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += stride) {
        const int64_t ch = i % s.out_c;
        const int64_t row = i / s.out_c;
        const int64_t ox = row % out_w;
        const int64_t oy = (row / out_w) % out_h;
        const int64_t img = row / (out_w * out_h);
        float acc = 0.0f;
        for (int64_t ky = 0; ky < s.kernel_h; ++ky) {
            const int64_t iy = oy * s.stride_h - s.pad_top + ky * s.dilation_h;
            if (iy < 0 || iy >= s.in_h) continue;
            for (int64_t kx = 0; kx < s.kernel_w; ++kx) {
                const int64_t ix = ox * s.stride_w - s.pad_left + kx * s.dilation_w;
                if (ix < 0 || ix >= s.in_w) continue;
                const float a = decode_fp8<F>(x[((img * s.in_h + iy) * s.in_w + ix) * s.in_c + ch]);
                const float b = decode_fp8<F>(w[(ch * s.kernel_h + ky) * s.kernel_w + kx]);
                acc = fp8ort_add_rn(acc, fp8ort_mul_rn(a, b));  // the product is exact
            }
        }
        epilogue_store(ep, load_column(ep, ch), acc, row, ch);
    }
}

fp8ort_status check_shape(const char* op, const fp8ort_conv_shape* s) {
    if (!s) return fail(FP8ORT_INVALID_ARGUMENT, "%s: shape is NULL", op);
    if (s->batch < 0 || s->in_h <= 0 || s->in_w <= 0 || s->in_c <= 0 || s->out_c <= 0 || s->kernel_h <= 0 ||
        s->kernel_w <= 0)
        return fail(FP8ORT_INVALID_ARGUMENT, "%s: sizes must be positive (batch may be 0)", op);
    if (s->stride_h <= 0 || s->stride_w <= 0 || s->dilation_h <= 0 || s->dilation_w <= 0)
        return fail(FP8ORT_INVALID_ARGUMENT, "%s: strides and dilations must be positive", op);
    if (s->pad_top < 0 || s->pad_left < 0 || s->pad_bottom < 0 || s->pad_right < 0)
        return fail(FP8ORT_INVALID_ARGUMENT, "%s: pads must not be negative", op);
    if (s->group <= 0 || s->in_c % s->group || s->out_c % s->group)
        return fail(FP8ORT_INVALID_ARGUMENT, "%s: group=%lld must divide in_c=%lld and out_c=%lld", op,
                    static_cast<long long>(s->group), static_cast<long long>(s->in_c), static_cast<long long>(s->out_c));
    if (fp8ort_conv_out_h(s) <= 0 || fp8ort_conv_out_w(s) <= 0)
        return fail(FP8ORT_INVALID_ARGUMENT, "%s: the kernel does not fit the padded input (output would be %lldx%lld)",
                    op, static_cast<long long>(fp8ort_conv_out_h(s)), static_cast<long long>(fp8ort_conv_out_w(s)));
    if (s->in_h > (1 << 30) || s->in_w > (1 << 30) || s->stride_h > (1 << 20) || s->stride_w > (1 << 20) ||
        s->dilation_h > (1 << 20) || s->dilation_w > (1 << 20) || s->pad_top > (1 << 20) || s->pad_left > (1 << 20))
        return fail(FP8ORT_INVALID_ARGUMENT, "%s: spatial sizes, strides, dilations or pads too large", op);
    if (s->in_h * s->in_w >= (int64_t{1} << 31) || s->in_c >= (int64_t{1} << 24) ||
        s->kernel_h * s->kernel_w * (s->in_c / s->group) >= (int64_t{1} << 30) || s->kernel_h > (1 << 20) ||
        s->kernel_w > (1 << 20))
        return fail(FP8ORT_INVALID_ARGUMENT, "%s: image (%lldx%lld), channels (%lld) or kernel too large for the GPU kernel",
                    op, static_cast<long long>(s->in_h), static_cast<long long>(s->in_w), static_cast<long long>(s->in_c));
    return FP8ORT_OK;
}

template <fp8ort_fp8_format F>
fp8ort_status launch_conv(const uint8_t* x, const uint8_t* w, const fp8ort_conv_shape& s, const epilogue_args& ep,
                          const sm90_split& split, hipStream_t stream) {
    const int64_t oh = fp8ort_conv_out_h(&s), ow = fp8ort_conv_out_w(&s);
    const int64_t cg = s.in_c / s.group, mg = s.out_c / s.group;
    if (cg == 1 && mg == 1) {
        const int64_t total = s.batch * oh * ow * s.out_c;
        const int64_t blocks = (total + kDepthwiseThreads - 1) / kDepthwiseThreads;
        depthwise_kernel<F><<<static_cast<unsigned>(blocks < 65536 ? blocks : 65536), kDepthwiseThreads, 0, stream>>>(
            x, w, s, oh, ow, ep);
        return check_launch("fp8ort_conv_nhwc (depthwise)");
    }
    if (gemm_kernel_override() != 1 && device_is_sm90() && sm90_conv_can_run(F, s, x, w))
        return launch_conv_sm90(x, w, F, s, oh, ow, sm90_conv_variant(gemm_kernel_override(), s), ep, split, stream);
    FP8ORT_TRY(core_supports("fp8ort_conv_nhwc", F));
    const conv_source src = make_conv_source<kChunksPerThread>(x, s, oh, ow);
    const bool vec_a = cg % 16 == 0 && s.in_c % 16 == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0;
    return launch_core<F>(src, vec_a, w, src.rows, mg, src.k, s.group, ep, stream, "fp8ort_conv_nhwc");
}

}  // namespace
}  // namespace fp8ort

using namespace fp8ort;

extern "C" int64_t fp8ort_conv_out_h(const fp8ort_conv_shape* s) {
    return (s->in_h + s->pad_top + s->pad_bottom - s->dilation_h * (s->kernel_h - 1) - 1) / s->stride_h + 1;
}
extern "C" int64_t fp8ort_conv_out_w(const fp8ort_conv_shape* s) {
    return (s->in_w + s->pad_left + s->pad_right - s->dilation_w * (s->kernel_w - 1) - 1) / s->stride_w + 1;
}
extern "C" size_t fp8ort_conv_packed_bytes(const fp8ort_conv_shape* s) {
    if (!s || s->group <= 0) return 0;
    return static_cast<size_t>(s->out_c * (s->in_c / s->group) * s->kernel_h * s->kernel_w);
}

static bool is_pointwise(const fp8ort_conv_shape* s) {
    return s->kernel_h == 1 && s->kernel_w == 1 && s->stride_h == 1 && s->stride_w == 1 && s->group == 1 &&
           s->pad_top == 0 && s->pad_left == 0 && s->pad_bottom == 0 && s->pad_right == 0;
}

extern "C" const char* fp8ort_conv_kernel_name(fp8ort_fp8_format format, const fp8ort_conv_shape* s) {
    if (check_shape("fp8ort_conv_kernel_name", s) != FP8ORT_OK) return "invalid";
    if (s->in_c == s->group && s->out_c == s->group) return "depthwise";
    if (is_pointwise(s)) return fp8ort_gemm_kernel_name(format, s->batch * s->in_h * s->in_w, s->out_c, s->in_c);
    if (gemm_kernel_override() != 1 && device_is_sm90() && sm90_conv_can_run(format, *s, nullptr, nullptr))
        return sm90_conv_variant(gemm_kernel_override(), *s) == sm90_variant::two_blocks ? "wgmma_sm90a_2blocks"
                                                                                      : "wgmma_sm90a";
#if defined(FP8ORT_CUDA)
    return "mma_sync";
#else
    return "amd_matrix_core";
#endif
}

static fp8ort_status pack_weight(const char* op, const void* w, const fp8ort_conv_shape* s, int64_t w_in_c,
                                 void* packed, void* stream) {
    FP8ORT_TRY(check_shape(op, s));
    if (!w || !packed) return fail(FP8ORT_INVALID_ARGUMENT, "%s: NULL pointer", op);
    const int64_t cg_out = s->in_c / s->group;
    const int64_t total = static_cast<int64_t>(fp8ort_conv_packed_bytes(s));
    const int64_t blocks = (total + 255) / 256;
    pack_conv_weight_kernel<<<static_cast<unsigned>(blocks < 65536 ? blocks : 65536), 256, 0, as_stream(stream)>>>(
        static_cast<const uint8_t*>(w), s->out_c, w_in_c / s->group, s->kernel_h, s->kernel_w, cg_out,
        static_cast<uint8_t*>(packed));
    FP8ORT_TRY(check_launch(op));
    return ok();
}

extern "C" fp8ort_status fp8ort_conv_pack_weight(const void* w, const fp8ort_conv_shape* s, void* packed, void* stream) {
    return pack_weight("fp8ort_conv_pack_weight", w, s, s ? s->in_c : 0, packed, stream);
}

extern "C" fp8ort_status fp8ort_conv_pack_weight_padded(const void* w, const fp8ort_conv_shape* s, int64_t w_in_c,
                                                        void* packed, void* stream) {
    const char* op = "fp8ort_conv_pack_weight_padded";
    if (s && (s->group != 1 || w_in_c <= 0 || w_in_c > s->in_c))
        return fail(FP8ORT_INVALID_ARGUMENT, "%s: needs group 1 and 0 < w_in_c <= in_c; got group %lld, w_in_c %lld, "
                    "in_c %lld", op, static_cast<long long>(s->group), static_cast<long long>(w_in_c),
                    static_cast<long long>(s->in_c));
    return pack_weight(op, w, s, w_in_c, packed, stream);
}

// Values of Y: batch * out_h * out_w * out_c.
static int64_t conv_outputs(const fp8ort_conv_shape* s) {
    return s->batch * fp8ort_conv_out_h(s) * fp8ort_conv_out_w(s) * s->out_c;
}

// K splits of the sm90a convolution for this shape (1: it does not take that kernel, or does not split); x and w
// null: alignment not checked.
static int conv_splits(fp8ort_fp8_format format, const fp8ort_conv_shape& s, const void* x, const void* w) {
    if (gemm_kernel_override() == 1 || !device_is_sm90() || !sm90_conv_can_run(format, s, x, w) || s.batch <= 0)
        return 1;
    return sm90_conv_splits(s, fp8ort_conv_out_h(&s), fp8ort_conv_out_w(&s),
                            sm90_conv_variant(gemm_kernel_override(), s));
}

extern "C" size_t fp8ort_conv_workspace_bytes(fp8ort_fp8_format format, const fp8ort_conv_shape* s) {
    if (check_shape("fp8ort_conv_workspace_bytes", s) != FP8ORT_OK || !is_fp8_type(format)) return 0;
    if (is_pointwise(s)) return fp8ort_gemm_workspace_bytes(format, s->batch * s->in_h * s->in_w, s->out_c, s->in_c);
    return sm90_split_bytes(conv_splits(format, *s, nullptr, nullptr), conv_outputs(s));
}

extern "C" fp8ort_status fp8ort_conv_nhwc(const void* x, const void* w_packed, fp8ort_fp8_format format,
                                          const fp8ort_conv_shape* s, const fp8ort_epilogue* epilogue, void* y,
                                          void* stream) {
    return fp8ort_conv_nhwc_ws(x, w_packed, format, s, epilogue, y, nullptr, 0, stream);
}

extern "C" fp8ort_status fp8ort_conv_nhwc_ws(const void* x, const void* w_packed, fp8ort_fp8_format format,
                                             const fp8ort_conv_shape* s, const fp8ort_epilogue* epilogue, void* y,
                                             void* workspace, size_t workspace_bytes, void* stream) {
    const char* op = "fp8ort_conv_nhwc";
    FP8ORT_TRY(check_shape(op, s));
    if (!is_fp8_type(format)) return fail(FP8ORT_INVALID_ARGUMENT, "%s: format %s is not FP8", op, dtype_name(format));
    epilogue_args ep;
    FP8ORT_TRY(make_epilogue_args(op, epilogue, s->out_c, y, s->out_c, &ep));
    if (s->batch == 0) return ok();
    if (!x || !w_packed) return fail(FP8ORT_INVALID_ARGUMENT, "%s: X and the packed weight must not be NULL", op);
    // A 1x1, stride-1, unpadded, ungrouped convolution is the GEMM [batch*h*w, in_c] . [out_c, in_c]^T on NHWC
    // memory (the packed weight is already [N, K]): it takes the GEMM kernels (wgmma on sm90a).
    if (is_pointwise(s))
        return fp8ort_gemm_ws(x, w_packed, format, s->batch * s->in_h * s->in_w, s->out_c, s->in_c, epilogue, y,
                              workspace, workspace_bytes, stream);
    const uint8_t* x8 = static_cast<const uint8_t*>(x);
    const uint8_t* w8 = static_cast<const uint8_t*>(w_packed);
    const hipStream_t st = as_stream(stream);
    const sm90_split split =
        sm90_split_for(conv_splits(format, *s, x, w_packed), conv_outputs(s), workspace, workspace_bytes);
    fp8ort_status r;
    switch (format) {
        case FP8ORT_E4M3FN: r = launch_conv<FP8ORT_E4M3FN>(x8, w8, *s, ep, split, st); break;
        case FP8ORT_E5M2: r = launch_conv<FP8ORT_E5M2>(x8, w8, *s, ep, split, st); break;
        case FP8ORT_E4M3FNUZ: r = launch_conv<FP8ORT_E4M3FNUZ>(x8, w8, *s, ep, split, st); break;
        default: r = launch_conv<FP8ORT_E5M2FNUZ>(x8, w8, *s, ep, split, st); break;
    }
    return r == FP8ORT_OK ? ok() : r;
}
