/* C ABI of the fp8ort GPU kernels (HIP sources; CUDA through fp8_compat.h).
 *
 * Every launcher takes the stream it enqueues on (hipStream_t / cudaStream_t passed as void*), checks shapes
 * and types before launching, never allocates, never synchronizes with the host, and returns a status;
 * fp8ort_gpu_last_error() gives the message of the last failure on the calling thread.
 * Scales live in device memory (float32), so a launch never reads them on the host.
 * Element types use the ONNX TensorProto numbers, so ORT types pass through unchanged. */
#ifndef FP8ORT_KERNELS_H
#define FP8ORT_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define FP8ORT_GPU_API
#else
#define FP8ORT_GPU_API __attribute__((visibility("default")))
#endif

typedef enum fp8ort_dtype {
    FP8ORT_FLOAT = 1,
    FP8ORT_FLOAT16 = 10,
    FP8ORT_BFLOAT16 = 16,
    FP8ORT_E4M3FN = 17,
    FP8ORT_E4M3FNUZ = 18,
    FP8ORT_E5M2 = 19,
    FP8ORT_E5M2FNUZ = 20
} fp8ort_dtype;
typedef fp8ort_dtype fp8ort_fp8_format; /* one of the four FP8 values above */

typedef enum fp8ort_status {
    FP8ORT_OK = 0,
    FP8ORT_INVALID_ARGUMENT = 1, /* shapes, types or pointers a kernel cannot take: refused before launch */
    FP8ORT_UNSUPPORTED = 2,      /* valid request this device or build has no kernel for */
    FP8ORT_DEVICE_ERROR = 3      /* the HIP/CUDA runtime reported an error */
} fp8ort_status;

/* Message of the last non-OK status returned on this thread ("" after success). */
FP8ORT_GPU_API const char* fp8ort_gpu_last_error(void);

/* ---- conversions (fp8_convert.hip) ---- */
/* y[i] = q(x[i], *scale): float32 division, round to nearest even, saturate to +-max unless saturate == 0.
 * x: FLOAT/FLOAT16/BFLOAT16, y: one of the FP8 types. */
FP8ORT_GPU_API fp8ort_status fp8ort_quantize(const void* x, fp8ort_dtype x_type, const float* scale, void* y,
                                             fp8ort_dtype y_type, int64_t count, int saturate, void* stream);
/* y[i] = float(x[i]) * *scale, cast (RNE) to y_type (FLOAT/FLOAT16/BFLOAT16). scale may be NULL (= 1). */
FP8ORT_GPU_API fp8ort_status fp8ort_dequantize(const void* x, fp8ort_dtype x_type, const float* scale, void* y,
                                               fp8ort_dtype y_type, int64_t count, void* stream);
/* *amax = max |x[i]| (NaN if any x is NaN, 0 for count == 0). amax is device memory, overwritten. */
FP8ORT_GPU_API fp8ort_status fp8ort_amax(const void* x, fp8ort_dtype x_type, int64_t count, float* amax,
                                         void* stream);

/* ---- FP8MaxPool (fp8_pool.hip) ----
 * 2-D max pooling of NHWC X [n, in_h, in_w, c] into Y [n, out_h, out_w, c], X's type: FP8 (compared on decoded
 * values, the winning byte copied), FLOAT or FLOAT16. Window rows iy = oy * stride_h - pad_top + ky * dilation_h
 * (columns alike); taps outside the input are skipped (the caller ensures every window has one); a NaN tap gives
 * NaN, ties go to the first tap in window order. FP8 with c % 4 == 0 and 4-byte aligned x, y moves 32-bit words. */
typedef struct fp8ort_max_pool_params {
    int64_t n, c, in_h, in_w, out_h, out_w;
    int64_t kernel_h, kernel_w, stride_h, stride_w, dilation_h, dilation_w, pad_top, pad_left;
} fp8ort_max_pool_params;
FP8ORT_GPU_API fp8ort_status fp8ort_max_pool_nhwc(const void* x, void* y, fp8ort_dtype type,
                                                  const fp8ort_max_pool_params* p, void* stream);

/* FP8Attention (docs/operators.md): Y[b, i, h*dv + e] = sum_j softmax_j(Q_h[i] . K_h[j] * scale + bias) V_h[j, e]
 * for Q [b, s, h*d], K [b, t, h*d], V [b, t, h*dv] (float32) whose consecutive sequence positions lie q_row, k_row and
 * v_row elements apart (h*d, h*d, h*dv when contiguous; 3*h*d for the packed form, K and V pointing into Q's rows);
 * Y [b, s, h*dv] contiguous; attn_bias (or NULL) read at
 * b * bias_stride[0] + h * bias_stride[1] + i * bias_stride[2] + j * bias_stride[3] (0 on broadcast axes). Rows with
 * NaN probabilities give NaN, or 0 with nan_to_zero. y_type FLOAT, or FP8 as q(Y, *y_scale) (device pointer).
 * Head sizes d = dv <= 128 (FP8ORT_UNSUPPORTED otherwise). */
typedef struct fp8ort_attention_params {
    int64_t b, s, t, h, d, dv;
    int64_t q_row, k_row, v_row;
    int64_t bias_stride[4];
    float scale;
    int nan_to_zero;
} fp8ort_attention_params;
FP8ORT_GPU_API fp8ort_status fp8ort_attention(const float* q, const float* k, const float* v, const float* attn_bias,
                                              const fp8ort_attention_params* p, void* y, fp8ort_dtype y_type,
                                              const float* y_scale, void* stream);
/* fp8ort_attention with device scratch for a split of the keys over several blocks (small grids; on unless
 * FP8ORT_ATTENTION_SPLIT=off, read at each call): workspace_bytes from fp8ort_attention_workspace_bytes (0: no split;
 * a smaller or NULL workspace runs without one). A split merges the blocks' rows in a fixed order: the results do
 * not depend on timing, and differ from the unsplit kernel's only by float32 rounding. */
FP8ORT_GPU_API size_t fp8ort_attention_workspace_bytes(const fp8ort_attention_params* p);
FP8ORT_GPU_API fp8ort_status fp8ort_attention_ws(const float* q, const float* k, const float* v,
                                                 const float* attn_bias, const fp8ort_attention_params* p, void* y,
                                                 fp8ort_dtype y_type, const float* y_scale, void* workspace,
                                                 size_t workspace_bytes, void* stream);
/* fp8ort_attention_ws on float16 Q, K, V (bit patterns; the same params, strides in elements). NVIDIA GPUs of compute
 * capability 8.0+ run it on the tensor cores for D = Dv <= 128 (float16 products, float32 sums, the probabilities
 * rounded to float16 for P V, as docs/operators.md allows); elsewhere, or with FP8ORT_ATTENTION_F16=widen (read at
 * each call), Q, K and V are widened to float32 in the workspace and fp8ort_attention_ws runs on them.
 * workspace_bytes from fp8ort_attention_f16_workspace_bytes (0 where the tensor cores take it). */
FP8ORT_GPU_API size_t fp8ort_attention_f16_workspace_bytes(const fp8ort_attention_params* p);
FP8ORT_GPU_API fp8ort_status fp8ort_attention_f16(const void* q, const void* k, const void* v, const float* attn_bias,
                                                  const fp8ort_attention_params* p, void* y, fp8ort_dtype y_type,
                                                  const float* y_scale, void* workspace, size_t workspace_bytes,
                                                  void* stream);

/* FP8GlobalAveragePool (docs/operators.md): X FP8 (x_type) viewed as [n, hw, c] (nhwc != 0) or [n, c, hw];
 * y[n * c + ch] = float32(sum over hw / hw) * *x_scale (x_scale: a device pointer; float32 sums). Few images with
 * large H x W split the sums over blocks: workspace_bytes (possibly 0) of device scratch for the partial sums, which
 * a second pass adds in a fixed order (results do not depend on timing). */
FP8ORT_GPU_API size_t fp8ort_global_average_pool_workspace_bytes(int64_t n, int64_t hw, int64_t c, int nhwc);
FP8ORT_GPU_API fp8ort_status fp8ort_global_average_pool(const void* x, fp8ort_dtype x_type, const float* x_scale,
                                                        float* y, int64_t n, int64_t hw, int64_t c, int nhwc,
                                                        void* workspace, size_t workspace_bytes, void* stream);
/* FP8ChannelMul: t = float(X) * *x_scale, t = t * g[n * c + ch] (each rounded to float32), then q(t, *y_scale) into
 * an FP8 y_type or a cast to FLOAT/FLOAT16; X as for fp8ort_global_average_pool, Y in X's layout. */
FP8ORT_GPU_API fp8ort_status fp8ort_channel_mul(const void* x, fp8ort_dtype x_type, const float* x_scale,
                                                const float* g, void* y, fp8ort_dtype y_type, const float* y_scale,
                                                int64_t n, int64_t hw, int64_t c, int nhwc, void* stream);

/* Channels-last activations padded with zero channels, for convolutions whose channel count the tensor-core
 * kernels cannot take (in_c % 16 != 0): Y[p, j] = q(X[p, j], *scale) for j < c, 0 for c <= j < c_out (saturating).
 * X is FLOAT/FLOAT16/BFLOAT16, or FP8 of y_type (then copied; scale unused). */
FP8ORT_GPU_API fp8ort_status fp8ort_quantize_padded(const void* x, fp8ort_dtype x_type, const float* scale, void* y,
                                                    fp8ort_dtype y_type, int64_t pixels, int64_t c, int64_t c_out,
                                                    void* stream);

/* ---- GEMM and convolution epilogue (fp8_epilogue.h), in reference order:
 * y = acc * (x_scale * w_scale[n]); y += bias[n]; y += float(Z) * z_scale; activation; cast or q(y, y_scale). */
/* The fused activation (the ops' `activation` attribute; values as ep_src/ops/op_common.h's Activation). */
typedef enum fp8ort_activation {
    FP8ORT_ACT_NONE = 0,          /* none, unless relu == 1 */
    FP8ORT_ACT_RELU = 1,
    FP8ORT_ACT_CLIP = 2,          /* min(max(y, alpha), beta): activation_alpha <= activation_beta, not NaN */
    FP8ORT_ACT_SIGMOID = 3,
    FP8ORT_ACT_SILU = 4,
    FP8ORT_ACT_HARD_SIGMOID = 5,  /* max(0, min(1, alpha * y + beta)), alpha and beta finite */
    FP8ORT_ACT_HARD_SWISH = 6,    /* y * HardSigmoid(y) with alpha 1/6, beta 0.5 fixed (activation_* unused) */
    FP8ORT_ACT_GELU = 7,          /* erf form */
    FP8ORT_ACT_GELU_TANH = 8      /* tanh approximation */
} fp8ort_activation;
typedef struct fp8ort_epilogue {
    const float* x_scale;  /* device, 1 value (required) */
    const float* w_scale;  /* device, 1 or N values (required) */
    int64_t w_scale_count; /* 1 or N */
    const float* bias;     /* device [N] float32, or NULL */
    const void* z;         /* residual with Y's shape and layout, or NULL */
    fp8ort_dtype z_type;   /* FLOAT/FLOAT16/BFLOAT16 or an FP8 type (then z_scale is required) */
    const float* z_scale;  /* device, 1 value, or NULL (high-precision Z only) */
    const float* y_scale;  /* device, 1 value; required when y_type is FP8 */
    int relu;              /* 0 or 1 (1: Relu, the same as activation = FP8ORT_ACT_RELU) */
    fp8ort_dtype y_type;   /* FLOAT/FLOAT16/BFLOAT16 or an FP8 type */
    /* Added after relu/y_type so that zero-initialized callers keep working: 0 = none (relu decides). */
    fp8ort_activation activation; /* relu == 1 allows only NONE or RELU here */
    float activation_alpha;       /* Clip: min; HardSigmoid: alpha; else unused */
    float activation_beta;        /* Clip: max; HardSigmoid: beta; else unused */
} fp8ort_epilogue;

/* ---- GEMM (fp8_gemm.hip, fp8_gemm_sm90.hip) ----
 * Weights are packed once as [N, K] (K contiguous, fp8). W is [K, N] (trans_b = 0) or [N, K] (trans_b = 1). */
FP8ORT_GPU_API size_t fp8ort_gemm_packed_bytes(int64_t n, int64_t k);
FP8ORT_GPU_API fp8ort_status fp8ort_gemm_pack_weight(const void* w, int trans_b, int64_t k, int64_t n, void* packed,
                                                     void* stream);
/* Y[M, N] = epilogue(A[M, K] . packed^T). A and the packed weight share the FP8 format `format`. */
FP8ORT_GPU_API fp8ort_status fp8ort_gemm(const void* a, const void* b_packed, fp8ort_fp8_format format, int64_t m,
                                         int64_t n, int64_t k, const fp8ort_epilogue* epilogue, void* y,
                                         void* stream);
/* Split K. Where the sm90a kernel's tiles would leave multiprocessors idle (small M, long K), it can sum ranges of
 * K in separate blocks into float32 scratch and apply the epilogue in a second kernel. fp8ort_gemm_workspace_bytes
 * says how much device scratch that takes for these sizes on the current device (0: no split);
 * fp8ort_gemm_ws splits when `workspace` (16-byte aligned, used only by the work enqueued on `stream`) has at least
 * that many bytes, and otherwise runs as fp8ort_gemm. Results agree with the unsplit kernel up to float32
 * summation order. */
FP8ORT_GPU_API size_t fp8ort_gemm_workspace_bytes(fp8ort_fp8_format format, int64_t m, int64_t n, int64_t k);
FP8ORT_GPU_API fp8ort_status fp8ort_gemm_ws(const void* a, const void* b_packed, fp8ort_fp8_format format, int64_t m,
                                            int64_t n, int64_t k, const fp8ort_epilogue* epilogue, void* y,
                                            void* workspace, size_t workspace_bytes, void* stream);
/* Which GEMM kernel fp8ort_gemm picks for these sizes on the current device ("wgmma_sm90a", "mma_sync", ...). */
FP8ORT_GPU_API const char* fp8ort_gemm_kernel_name(fp8ort_fp8_format format, int64_t m, int64_t n, int64_t k);
/* Kernel choice (tests, benchmarks): 0 = automatic (the small-K kernel where it applies, else by device and sizes),
 * 1 = the portable kernel, 2 = the sm90a kernel (refused if it
 * can't run), 3 = the sm90a kernel with fast accumulation (all of K summed inside wgmma, ~14 bits kept, as cuBLASLt's
 * FAST_ACCUM; FP8 outputs near zero can then differ from the float32-accumulated reference by several codes),
 * 4 = the sm90a kernel with one block per multiprocessor, 5 = with two, 6 = the streaming sm90a kernel (two blocks
 * per multiprocessor, each walking several tiles; GEMM only: for convolutions 6 picks as 0). 2 picks by K and N:
 * streaming for K <= 512, two blocks for K <= 128 with N > 64, one block for longer K. 7 = the small-K kernel on the
 * vector units where it applies (E4M3FN, K of 8, 16, 24 or 32, float32/float16/E4M3FN output; exact float32 sums in
 * K order; automatic there too), the automatic choice elsewhere; 2..6 keep such problems off the small-K kernel.
 * 8 = the streaming sm90a kernel with one block per multiprocessor and 128 x 128 tiles (GEMM only, opt-in; one block
 * per tile where K is split). Where this is 0, the environment variable FP8ORT_GEMM_KERNEL=1..8 (read once) sets the same value for a library loaded by ORT (whole-model A/B runs);
 * a problem the sm90a kernel cannot run then takes the portable kernel instead of being refused. */
FP8ORT_GPU_API void fp8ort_gemm_set_kernel_override(int which);
/* How the sm90a GEMM and convolution epilogues evaluate SiLU (tests, A/B runs; the same bits either way): 0 = the
 * environment's choice, FP8ORT_TILE_SILU=call|inline (read once; unset: inline), 1 = one out-of-line call per four
 * values, 2 = inlined. Takes effect for launches made after the call. */
FP8ORT_GPU_API void fp8ort_epilogue_set_silu_variant(int which);
/* How the sm90a GEMM and convolution tile epilogues read an E4M3FN residual Z into an E4M3FN output (tests, A/B runs;
 * the same bits either way): 0 = the environment's choice, FP8ORT_Z_AHEAD=on|off (read once; unset: on), 1 = a row
 * at a time (load, epilogue, store), 2 = the Z words of eight rows loaded before any of them is stored, decoded four
 * codes at a time. Takes effect for launches made after the call. */
FP8ORT_GPU_API void fp8ort_epilogue_set_z_ahead(int which);
/* How the sm90a GEMM and convolution tile epilogues and the depthwise tile kernel write an E4M3FN output (tests, A/B
 * runs; the same bits either way): 0 = the environment's choice, FP8ORT_FAST_ROWS=on|off (read once; unset: on),
 * 1 = four values at a time through the general epilogue, 2 = sixteen values (four rows, or a depthwise strip's four
 * pixels) at a time without a branch where the outputs allow it (four aligned columns, no activation, Relu or SiLU,
 * an E4M3FN residual or none). Takes effect for launches made after the call. */
FP8ORT_GPU_API void fp8ort_epilogue_set_fast_rows(int which);
/* Which sm90a GEMM runs K <= 128 problems wider than 64 columns (tests, A/B runs; the same bits either way): 0 = the
 * environment's choice, FP8ORT_WIDE_STREAM=on|off (read once; unset: off), 1 = two blocks per multiprocessor, each
 * ending after one 128 x 128 tile ("wgmma_sm90a_2blocks"), 2 = two persistent blocks per multiprocessor walking
 * 128 x 128 tiles, the next tile's operands loaded during the epilogue ("wgmma_sm90a_stream_wide"; not yet measured).
 * Takes effect for launches made after the call. */
FP8ORT_GPU_API void fp8ort_gemm_set_wide_stream(int which);
/* Whether the sm90a GEMM and convolution kernels, the epilogue pass after a split K or cuBLASLt, and the kernels a CNN
 * runs between them (im2col, the strided 1x1 subsample, Quantize, E4M3FN max pooling, global average pooling) are
 * launched as programmatic dependent launches (NVIDIA sm_90; tests, A/B runs; the same bits either way): 0 = the environment's
 * choice, FP8ORT_PDL=on|off (read once; unset: on), 1 = ordinary launches, 2 = each such kernel may start while the
 * kernel before it on the stream ends (its launch and set-up overlap that kernel's last blocks; it waits for that
 * kernel's results before it reads anything). Takes effect for launches made after the call. */
FP8ORT_GPU_API void fp8ort_launch_set_pdl(int which);

/* ---- the vendor BLAS-Lt route (fp8_blaslt.cc: cuBLASLt on NVIDIA, hipBLASLt on AMD, opened at run time; never
 * linked) ----
 * The library only accumulates: D[M, N] (float32 scratch) = A[M, K] . packed^T, FP8 inputs, float32 accumulation
 * (on NVIDIA without fast accumulation), alpha 1, no scales; fp8ort_epilogue_apply then runs fp8ort's own epilogue
 * over D. So Y equals fp8ort_gemm's result up to the order of accumulation. Needs K % 16 == 0, N % 16 == 0, A and
 * the packed weight 16-byte aligned, a format the GPU multiplies (NVIDIA sm_89+: float8e4m3fn, float8e5m2 where
 * cuBLASLt has it; gfx942: the FNUZ formats; gfx950, gfx12: the OCP formats) and libcublasLt.so.13/.12 or
 * libhipblaslt.so.1/.0 loadable; otherwise FP8ORT_UNSUPPORTED (fall back to fp8ort_gemm). The hipBLASLt side has
 * never run on a GPU. */
/* Scratch bytes fp8ort_gemm_blaslt needs for these sizes (D plus cuBLASLt's own workspace; any alignment). */
FP8ORT_GPU_API size_t fp8ort_gemm_blaslt_workspace_bytes(int64_t m, int64_t n, int64_t k);
/* Y[M, N] = epilogue(A[M, K] . packed^T) through cuBLASLt; `workspace` is device memory of at least
 * fp8ort_gemm_blaslt_workspace_bytes(m, n, k) bytes, used only by the work enqueued on `stream`. */
FP8ORT_GPU_API fp8ort_status fp8ort_gemm_blaslt(const void* a, const void* b_packed, fp8ort_fp8_format format,
                                                int64_t m, int64_t n, int64_t k, const fp8ort_epilogue* epilogue,
                                                void* y, void* workspace, size_t workspace_bytes, void* stream);
/* 1 when the library is loaded and the current device is one it multiplies FP8 on (sm_89+; gfx942, gfx950, gfx12);
 * else 0, and fp8ort_gpu_last_error() says why. */
FP8ORT_GPU_API int fp8ort_blaslt_available(void);
/* Y[M, N] = epilogue(acc[M, N]): the epilogue alone, over float32 accumulators from elsewhere (device memory, row
 * stride ld_acc >= N elements). fp8_epilogue_apply.hip; the numerics are fp8_epilogue.h's. */
FP8ORT_GPU_API fp8ort_status fp8ort_epilogue_apply(const float* acc, int64_t ld_acc, int64_t m, int64_t n,
                                                   const fp8ort_epilogue* epilogue, void* y, void* stream);

/* ---- convolution (fp8_conv.hip): NHWC implicit GEMM ---- */
typedef struct fp8ort_conv_shape {
    int64_t batch, in_h, in_w, in_c;  /* X: [batch, in_h, in_w, in_c] */
    int64_t out_c, kernel_h, kernel_w; /* W: [out_c, in_c / group, kernel_h, kernel_w] */
    int64_t stride_h, stride_w, pad_top, pad_left, pad_bottom, pad_right, dilation_h, dilation_w, group;
} fp8ort_conv_shape;
FP8ORT_GPU_API int64_t fp8ort_conv_out_h(const fp8ort_conv_shape* s);
FP8ORT_GPU_API int64_t fp8ort_conv_out_w(const fp8ort_conv_shape* s);
FP8ORT_GPU_API size_t fp8ort_conv_packed_bytes(const fp8ort_conv_shape* s);
/* ONNX weight [M, C/g, kH, kW] -> packed [M, kH, kW, C/g]; depthwise (in_c == out_c == group): [kH, kW, M]. Same
 * size either way (fp8ort_conv_packed_bytes). */
FP8ORT_GPU_API fp8ort_status fp8ort_conv_pack_weight(const void* w, const fp8ort_conv_shape* s, void* packed,
                                                     void* stream);
/* As fp8ort_conv_pack_weight for shape s (group 1), from a weight [M, w_in_c, kH, kW] with w_in_c <= s->in_c
 * channels; the packed channels past w_in_c are zero (pairs with fp8ort_quantize_padded). */
FP8ORT_GPU_API fp8ort_status fp8ort_conv_pack_weight_padded(const void* w, const fp8ort_conv_shape* s, int64_t w_in_c,
                                                            void* packed, void* stream);
/* Which kernel fp8ort_conv_nhwc picks for this shape on the current device ("wgmma_sm90a", "mma_sync", "depthwise",
 * "few_channels", ...; 1x1 stride-1 convolutions run as GEMMs and report the GEMM kernel). */
FP8ORT_GPU_API const char* fp8ort_conv_kernel_name(fp8ort_fp8_format format, const fp8ort_conv_shape* s);
/* The in_c fp8ort_conv_nhwc needs X and the packed weight padded to with zero channels for this shape on the current
 * device (the sm90a wgmma kernels take group-1 convolutions of 16k channels; fp8ort_conv_pack_weight_padded and
 * fp8ort_quantize_padded pad), or 0 where the shape runs as it is. */
FP8ORT_GPU_API int64_t fp8ort_conv_padded_in_c(fp8ort_fp8_format format, const fp8ort_conv_shape* s);
/* The depthwise kernel (tests, A/B runs): FP8ORT_DEPTHWISE_AUTO picks per shape (the tile kernel at stride 1 on outputs
 * of 14 columns and more, where it measured faster), FP8ORT_DEPTHWISE_PIXEL one output pixel per thread,
 * FP8ORT_DEPTHWISE_TILE a block per 32 channels of an 8-row tile with its input window decoded once into shared
 * memory, wherever it applies (E4M3FN, kernel 3x3 or 5x5, stride 1 or 2, no dilation, channels a multiple of 4,
 * float32/float16/E4M3FN output; the rest takes the per-pixel kernel). Both give the same bits. In a library loaded
 * by ORT, FP8ORT_DEPTHWISE=pixel|tile|auto in the environment picks (read once). */
typedef enum fp8ort_depthwise_variant {
    FP8ORT_DEPTHWISE_AUTO = 0,
    FP8ORT_DEPTHWISE_PIXEL = 1,
    FP8ORT_DEPTHWISE_TILE = 2
} fp8ort_depthwise_variant;
FP8ORT_GPU_API void fp8ort_conv_set_depthwise_variant(fp8ort_depthwise_variant which);
/* The few-channel kernel for stems (group 1, in_c <= 4, 3x3 or 7x7 at stride 2, out_c % 4 == 0 up to 64, E4M3FN; on
 * the vector units, only the real channels multiplied): 2 takes it for such shapes, 1 keeps the implicit GEMM, 0
 * reads FP8ORT_FEW_CHANNELS=on|off, and when unset takes it for 3x3 stems only (measured faster there, slower on
 * 7x7). */
FP8ORT_GPU_API void fp8ort_conv_set_few_channels(int which);
/* Stems with at most 4 input channels and a kernel larger than 3x3 (ResNet's 7x7) that the few-channel kernel does
 * not take: with the workspace fp8ort_conv_workspace_bytes gives, fp8ort_conv_nhwc_ws writes the rows of the implicit
 * GEMM (K = kh * kw * in_c rounded up to 16, not 16 channels per tap) into it a chunk at a time and runs the sm90a
 * GEMM on them ("im2col_wgmma_sm90a"; sm_90 only; no padding of X). 2 takes that route where it applies, 1 keeps the
 * padded implicit GEMM, 0 reads FP8ORT_IM2COL=on|off (on when unset: ResNet-50's stem 2.08 -> 1.65 ms at batch
 * 256 on an H100). Without the workspace such a stem runs unpadded on the portable kernel. */
FP8ORT_GPU_API void fp8ort_conv_set_im2col(int which);
/* 1x1 convolutions with a stride above 1 (ResNet's downsampling shortcuts; group 1, no padding, in_c % 16 == 0): with
 * the workspace fp8ort_conv_workspace_bytes gives and 16-byte aligned X and weight, fp8ort_conv_nhwc_ws copies the
 * pixels they read into it (16 MB at a time) and runs the sm90a GEMM on them ("subsample_wgmma_sm90a"; sm_90 only).
 * 2 takes that route where it applies, 1 keeps the implicit GEMM, 0 reads FP8ORT_STRIDED_1X1=on|off (on when
 * unset). */
FP8ORT_GPU_API void fp8ort_conv_set_strided_1x1(int which);
/* Y[batch, out_h, out_w, out_c] = epilogue(conv(X, W)); X is FP8 NHWC with the packed weight's format. */
FP8ORT_GPU_API fp8ort_status fp8ort_conv_nhwc(const void* x, const void* w_packed, fp8ort_fp8_format format,
                                              const fp8ort_conv_shape* s, const fp8ort_epilogue* epilogue, void* y,
                                              void* stream);
/* Split K for the convolution, as fp8ort_gemm_workspace_bytes / fp8ort_gemm_ws (1x1 stride-1 shapes ask the GEMM). */
FP8ORT_GPU_API size_t fp8ort_conv_workspace_bytes(fp8ort_fp8_format format, const fp8ort_conv_shape* s);
FP8ORT_GPU_API fp8ort_status fp8ort_conv_nhwc_ws(const void* x, const void* w_packed, fp8ort_fp8_format format,
                                                 const fp8ort_conv_shape* s, const fp8ort_epilogue* epilogue, void* y,
                                                 void* workspace, size_t workspace_bytes, void* stream);

#ifdef __cplusplus
}
#endif
#endif /* FP8ORT_KERNELS_H */
