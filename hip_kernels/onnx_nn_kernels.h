/* C ABI of the GPU kernels for standard ONNX ops kept in float: pooling (onnx_pool.hip), reductions, Softmax and
 * LayerNormalization (onnx_norm.hip), MatMul, Gemm and Conv (onnx_linalg.hip).
 *
 * Element types are FP8ORT_FLOAT or FP8ORT_FLOAT16 (float16 is computed in float32 and rounded once on store).
 * Tensors are dense and row-major. Every entry checks its arguments, returns FP8ORT_OK without launching when
 * the output is empty, enqueues on `stream`, never allocates and never synchronizes with the host; the message of
 * a failure is fp8ort_gpu_last_error(). All sizes are int64 and the kernels index in int64. */
#ifndef FP8ORT_ONNX_NN_KERNELS_H
#define FP8ORT_ONNX_NN_KERNELS_H

#include "fp8_kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

#define FP8ORT_NN_MAX_RANK 8

/* ---- pooling (onnx_pool.hip) ----
 * Y[p, oy, ox] over X[p, in_h, in_w] for p < planes (N * C); 1-D pooling is in_h = out_h = kernel_h = 1.
 * Window rows: iy = oy * stride_h - pad_top + ky * dilation_h for ky < kernel_h (columns alike); taps outside the
 * input are skipped. MaxPool: the first largest value (NaN only when the first tap is NaN), the type's lowest value
 * for an empty window. AveragePool: sum of the taps in the input divided by their count, or with count_include_pad
 * by the taps inside the padded input (the window clipped at in + pad_bottom / in + pad_right). */
typedef struct fp8ort_nn_pool2d {
    int64_t planes, in_h, in_w, out_h, out_w;
    int64_t kernel_h, kernel_w, stride_h, stride_w, dilation_h, dilation_w;
    int64_t pad_top, pad_left, pad_bottom, pad_right;
    int max_pool;          /* 1: MaxPool, 0: AveragePool */
    int count_include_pad; /* AveragePool only */
} fp8ort_nn_pool2d;
FP8ORT_GPU_API fp8ort_status fp8ort_nn_pool2d_run(const void* x, void* y, fp8ort_dtype type, const fp8ort_nn_pool2d* p,
                                                  void* stream);

/* ---- reductions (onnx_norm.hip) ---- */
typedef enum fp8ort_nn_reduce_op {
    FP8ORT_NN_REDUCE_SUM = 0,
    FP8ORT_NN_REDUCE_MEAN = 1,
    FP8ORT_NN_REDUCE_MAX = 2, /* NaN propagates; an empty reduction gives -inf */
    FP8ORT_NN_REDUCE_MIN = 3  /* NaN propagates; an empty reduction gives +inf */
} fp8ort_nn_reduce_op;
/* X viewed as [outer, reduce, inner]: Y[o, i] = op over r of X[o, r, i]. reduce == 0: sum 0, mean NaN. */
FP8ORT_GPU_API fp8ort_status fp8ort_nn_reduce(const void* x, void* y, fp8ort_dtype type, fp8ort_nn_reduce_op op,
                                              int64_t outer, int64_t reduce, int64_t inner, void* stream);
/* Any set of axes: X of shape dims[rank] (rank <= FP8ORT_NN_MAX_RANK), reduced[a] != 0 for the reduced axes; Y holds
 * the kept axes in order. Slower than fp8ort_nn_reduce: callers merge adjacent axes and use that when they can. */
FP8ORT_GPU_API fp8ort_status fp8ort_nn_reduce_axes(const void* x, void* y, fp8ort_dtype type, fp8ort_nn_reduce_op op,
                                                   int rank, const int64_t* dims, const int* reduced, void* stream);

/* ---- Softmax / LogSoftmax (onnx_norm.hip) ----
 * X viewed as [outer, axis_dim, inner]; the softmax runs along axis_dim: exp(x - max) / sum, or with log != 0
 * x - max - log(sum). */
FP8ORT_GPU_API fp8ort_status fp8ort_nn_softmax(const void* x, void* y, fp8ort_dtype type, int64_t outer,
                                               int64_t axis_dim, int64_t inner, int log, void* stream);

/* ---- LayerNormalization (onnx_norm.hip) ----
 * X viewed as [rows, cols]: Y = (x - mean) / sqrt(var + epsilon) * scale + bias (population variance, two passes).
 * scale [cols] and bias [cols] (or NULL) have X's type; mean and inv_std are float32 [rows] or NULL. */
FP8ORT_GPU_API fp8ort_status fp8ort_nn_layer_norm(const void* x, const void* scale, const void* bias, void* y,
                                                  float* mean, float* inv_std, fp8ort_dtype type, int64_t rows,
                                                  int64_t cols, float epsilon, void* stream);
/* FP8LayerNormalization (docs/operators.md): Y as fp8ort_nn_layer_norm (no Mean/InvStdDev), and Y_fp8 [rows, cols]
 * = q(Y as written, *y_scale) in FP8 type q_type (y_scale: a device pointer). */
FP8ORT_GPU_API fp8ort_status fp8ort_nn_layer_norm_fp8(const void* x, const void* scale, const void* bias, void* y,
                                                      void* y_fp8, fp8ort_dtype type, fp8ort_dtype q_type,
                                                      const float* y_scale, int64_t rows, int64_t cols, float epsilon,
                                                      void* stream);

/* ---- BatchNormalization, inference form (onnx_norm.hip) ----
 * X viewed as [n, channels, inner]: Y = (x - mean[c]) / sqrt(var[c] + epsilon) * scale[c] + bias[c] in float32.
 * scale and bias have type param_type, mean and var stat_type (FLOAT or FLOAT16 each); Y has X's type. */
FP8ORT_GPU_API fp8ort_status fp8ort_nn_batch_norm(const void* x, const void* scale, const void* bias, const void* mean,
                                                  const void* var, void* y, fp8ort_dtype type, fp8ort_dtype param_type,
                                                  fp8ort_dtype stat_type, int64_t n, int64_t channels, int64_t inner,
                                                  float epsilon, void* stream);

/* ---- batched GEMM for MatMul and Gemm (onnx_linalg.hip) ----
 * For every batch index b (decoded over batch_dims, row-major): Y[b, m, n] = alpha * sum_k A(m, k) * B(k, n)
 * (+ beta * C(m, n)), float32 accumulation. A(m, k) = a[a_off(b) + m * a_sm + k * a_sk], B(k, n) likewise;
 * a_off(b) = sum_d idx_d * a_batch_strides[d] (0 for a broadcast dimension). Y is dense [batch, m, n].
 * C(m, n) = c[m * c_sm + n * c_sn] (strides 0 broadcast) or c == NULL; C has the batch count 1. */
typedef struct fp8ort_nn_gemm {
    int64_t m, n, k;
    int batch_rank; /* <= FP8ORT_NN_MAX_RANK; 0 for a single matrix */
    int64_t batch_dims[FP8ORT_NN_MAX_RANK];
    int64_t a_batch_strides[FP8ORT_NN_MAX_RANK];
    int64_t b_batch_strides[FP8ORT_NN_MAX_RANK];
    int64_t a_sm, a_sk, b_sk, b_sn;
    float alpha, beta;
    const void* c; /* X's type, or NULL */
    int64_t c_sm, c_sn;
} fp8ort_nn_gemm;
FP8ORT_GPU_API fp8ort_status fp8ort_nn_gemm_run(const void* a, const void* b, void* y, fp8ort_dtype type,
                                                const fp8ort_nn_gemm* g, void* stream);
/* The same with scratch for the NVIDIA cuBLASLt route (large problems whose operands have a unit stride and whose
 * batch walk is one stride per operand; FP8ORT_FLOAT_GEMM=ours|blaslt|auto, default auto): `workspace` holds
 * fp8ort_nn_gemm_workspace_bytes(type, g) bytes (0 where the route would not be tried), used only by the work
 * enqueued on `stream`. NULL or 0 bytes: the route runs without scratch. fp8ort_nn_gemm_run passes NULL. */
FP8ORT_GPU_API size_t fp8ort_nn_gemm_workspace_bytes(fp8ort_dtype type, const fp8ort_nn_gemm* g);
FP8ORT_GPU_API fp8ort_status fp8ort_nn_gemm_run_ws(const void* a, const void* b, void* y, fp8ort_dtype type,
                                                   const fp8ort_nn_gemm* g, void* workspace, size_t workspace_bytes,
                                                   void* stream);

/* ---- 2-D convolution, NCHW (onnx_linalg.hip) ----
 * Y[n, oc, oy, ox] = bias[oc] + sum over c < in_c / group, ky, kx of W[oc, c, ky, kx] *
 * X[n, (oc / (out_c / group)) * (in_c / group) + c, oy * stride_h - pad_top + ky * dilation_h, ...] (zero outside).
 * bias has X's type, [out_c], or NULL. 1-D convolution is in_h = out_h = kernel_h = 1. One input channel per group
 * (depthwise) runs a direct kernel, the rest an implicit GEMM per group. */
typedef struct fp8ort_nn_conv2d {
    int64_t batch, in_c, in_h, in_w, out_c, out_h, out_w, group;
    int64_t kernel_h, kernel_w, stride_h, stride_w, dilation_h, dilation_w, pad_top, pad_left;
} fp8ort_nn_conv2d;
FP8ORT_GPU_API fp8ort_status fp8ort_nn_conv2d_run(const void* x, const void* w, const void* bias, void* y,
                                                  fp8ort_dtype type, const fp8ort_nn_conv2d* p, void* stream);

#ifdef __cplusplus
}
#endif

#endif /* FP8ORT_ONNX_NN_KERNELS_H */
