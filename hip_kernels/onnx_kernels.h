/* C ABI of the GPU kernels of standard ONNX ops: elementwise (onnx_elementwise.hip) and data movement
 * (onnx_tensor.hip). Same conventions as fp8_kernels.h: every launcher takes the stream it enqueues on (void*),
 * checks its arguments before launching, never allocates, never synchronizes with the host, returns a status, and
 * fp8ort_gpu_last_error() gives the message of the last failure. A launch with zero elements does nothing and
 * accepts NULL pointers. Element types are ONNX TensorProto numbers. Index arithmetic is int64 (int32 where the
 * launcher proves every offset fits). The nn-op kernels declare theirs in onnx_nn_kernels.h. */
#ifndef FP8ORT_ONNX_KERNELS_H
#define FP8ORT_ONNX_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "fp8_kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ONNX TensorProto element types the elementwise kernels take (data movement works on element sizes). */
typedef enum fp8ort_onnx_type {
    FP8ORT_ONNX_FLOAT = 1,
    FP8ORT_ONNX_UINT8 = 2,
    FP8ORT_ONNX_INT32 = 6,
    FP8ORT_ONNX_INT64 = 7,
    FP8ORT_ONNX_BOOL = 9,
    FP8ORT_ONNX_FLOAT16 = 10
} fp8ort_onnx_type;

#define FP8ORT_ONNX_MAX_RANK 8
#define FP8ORT_ONNX_MAX_OPERANDS 3

/* An N-d walk over an output of dims[0..rank) (row-major, rank 0 = one element). Operand k's element for output
 * coordinate c is at offsets[k] + sum_d c[d] * strides[k][d] (elements; 0 on broadcast dimensions, negative for
 * Slice's negative steps). Broadcasting binary ops and Where use operands 0..1 / 0..2; strided copies use 0. */
typedef struct fp8ort_nd {
    int32_t rank;
    int64_t dims[FP8ORT_ONNX_MAX_RANK];
    int64_t strides[FP8ORT_ONNX_MAX_OPERANDS][FP8ORT_ONNX_MAX_RANK];
    int64_t offsets[FP8ORT_ONNX_MAX_OPERANDS];
} fp8ort_nd;

/* ---- elementwise (onnx_elementwise.hip) ---- float32 and float16 (computed in float32, rounded once) */
typedef enum fp8ort_unary_op {
    FP8ORT_UNARY_RELU = 0,
    FP8ORT_UNARY_SIGMOID = 1,
    FP8ORT_UNARY_TANH = 2,
    FP8ORT_UNARY_ERF = 3,
    FP8ORT_UNARY_SQRT = 4,
    FP8ORT_UNARY_EXP = 5,
    FP8ORT_UNARY_NEG = 6,
    FP8ORT_UNARY_ABS = 7,
    FP8ORT_UNARY_RECIPROCAL = 8,
    FP8ORT_UNARY_HARD_SIGMOID = 9, /* max(0, min(1, alpha * x + beta)) */
    FP8ORT_UNARY_HARD_SWISH = 10,  /* x * max(0, min(1, x / 6 + 0.5)) */
    FP8ORT_UNARY_CLIP = 11,        /* min(max(x, alpha), beta); NaN stays NaN */
    FP8ORT_UNARY_GELU = 12,        /* 0.5 x (1 + erf(x / sqrt 2)) */
    FP8ORT_UNARY_GELU_TANH = 13,   /* 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))) */
    FP8ORT_UNARY_CEIL = 14,
    FP8ORT_UNARY_FLOOR = 15
} fp8ort_unary_op;

/* y[i] = op(x[i]); x and y have type `type` (FLOAT or FLOAT16); alpha/beta as listed above, else unused. */
FP8ORT_GPU_API fp8ort_status fp8ort_onnx_unary(fp8ort_unary_op op, const void* x, void* y, int32_t type,
                                               int64_t count, float alpha, float beta, void* stream);

typedef enum fp8ort_binary_op {
    FP8ORT_BINARY_ADD = 0,
    FP8ORT_BINARY_SUB = 1,
    FP8ORT_BINARY_MUL = 2,
    FP8ORT_BINARY_DIV = 3,
    FP8ORT_BINARY_POW = 4,     /* a_type and b_type may differ (ONNX T, T1); y has a_type */
    FP8ORT_BINARY_EQUAL = 5,   /* y is BOOL (one byte, 0 or 1) */
    FP8ORT_BINARY_LESS = 6,
    FP8ORT_BINARY_GREATER = 7,
    FP8ORT_BINARY_MAX = 8,     /* a NaN operand gives NaN */
    FP8ORT_BINARY_MIN = 9,
    FP8ORT_BINARY_LESS_OR_EQUAL = 10,
    FP8ORT_BINARY_GREATER_OR_EQUAL = 11,
    FP8ORT_BINARY_AND = 12,    /* BOOL operands */
    FP8ORT_BINARY_OR = 13,
    FP8ORT_BINARY_XOR = 14,
    FP8ORT_BINARY_MOD = 15,    /* Mod fmod = 0, integers only: the remainder takes the divisor's sign */
    FP8ORT_BINARY_FMOD = 16    /* Mod fmod = 1: the dividend's sign (fmodf for floats, % for integers) */
} fp8ort_binary_op;

/* y[c] = op(a[walk 0], b[walk 1]) over the walk `nd` (operands 0 and 1); y may alias a when walk 0 is the
 * contiguous output (Max/Min fold their inputs in place). Types: FLOAT/FLOAT16 for every op but AND/OR/XOR and MOD
 * (a_type == b_type except for POW); INT64/INT32 for ADD, SUB, MUL, DIV, MAX, MIN, MOD, FMOD and the comparisons,
 * computed in the integer type (wrapping; DIV truncates toward zero, a divisor 0 gives 0 for DIV, MOD and FMOD: the
 * GPU cannot report it within a run); BOOL for EQUAL, AND, OR, XOR. Comparisons and the logical ops write BOOL. */
FP8ORT_GPU_API fp8ort_status fp8ort_onnx_binary(fp8ort_binary_op op, const void* a, int32_t a_type, const void* b,
                                                int32_t b_type, void* y, const fp8ort_nd* nd, void* stream);

/* out[c] = cond[walk 0] ? x[walk 1] : y[walk 2]; cond is BOOL, x/y/out elements of elem_size bytes (1, 2, 4, 8). */
FP8ORT_GPU_API fp8ort_status fp8ort_onnx_where(const void* cond, const void* x, const void* y, void* out,
                                               int64_t elem_size, const fp8ort_nd* nd, void* stream);

/* y[i] = cast(x[i]) among FLOAT, FLOAT16, INT64, INT32, BOOL, UINT8: float to integer truncates toward zero
 * (NaN gives 0, out of range saturates: the C++ behaviour is undefined there), anything to BOOL is x != 0, float16
 * results are rounded to nearest even from float32 (integers go through float32 first, as onnxruntime does). */
FP8ORT_GPU_API fp8ort_status fp8ort_onnx_cast(const void* x, int32_t x_type, void* y, int32_t y_type, int64_t count,
                                              void* stream);

/* ---- predicates and index ops (onnx_index.hip) ---- */
typedef enum fp8ort_predicate_op {
    FP8ORT_PREDICATE_NOT = 0,   /* BOOL -> BOOL */
    FP8ORT_PREDICATE_ISNAN = 1  /* FLOAT/FLOAT16 -> BOOL */
} fp8ort_predicate_op;
FP8ORT_GPU_API fp8ort_status fp8ort_onnx_predicate(fp8ort_predicate_op op, const void* x, int32_t x_type, void* y,
                                                   int64_t count, void* stream);

/* Range: y[i] = start + i * delta for i < count; FLOAT uses start/delta (computed in double, rounded once), INT32 and
 * INT64 istart/idelta (exact). */
FP8ORT_GPU_API fp8ort_status fp8ort_onnx_range(int32_t type, double start, double delta, int64_t istart, int64_t idelta,
                                               int64_t count, void* y, void* stream);

/* GatherElements over an output (= indices) of `rank` dims: out[c] = data[sum_d c'[d] * data_strides[d]] where
 * c' = c with c'[axis] = indices[c] (+ axis_dim when negative). indices are INT64 or INT32 on the device; an index
 * outside [-axis_dim, axis_dim) gives a zero element (no host synchronization to report it). */
typedef struct fp8ort_gather_elements_geometry {
    int32_t rank, axis;
    int64_t axis_dim;
    int64_t dims[FP8ORT_ONNX_MAX_RANK];
    int64_t data_strides[FP8ORT_ONNX_MAX_RANK];
} fp8ort_gather_elements_geometry;
FP8ORT_GPU_API fp8ort_status fp8ort_onnx_gather_elements(const void* data, const void* indices, int32_t index_type,
                                                         void* out, int64_t elem_size,
                                                         const fp8ort_gather_elements_geometry* g, void* stream);

/* CumSum along the middle axis of x viewed as [outer, n, inner]: y[o, j, i] = sum of x[o, j', i] over j' <= j (j' < j
 * with exclusive; j' >= j / j' > j with reverse), one add per element in order, accumulated in the element type
 * (FLOAT, INT32, INT64; integers wrap). */
FP8ORT_GPU_API fp8ort_status fp8ort_onnx_cumsum(const void* x, void* y, int32_t type, int64_t outer, int64_t n,
                                                int64_t inner, int32_t exclusive, int32_t reverse, void* stream);

/* ScatterND (reduction none) on out, which already holds a copy of data: for index row r (of rows, k INT64
 * components each), out[sum_j idx_j * dim_strides[j] + :slice] = updates[r, :slice] with idx_j in
 * [-index_dims[j], index_dims[j]); a row with an index out of range writes nothing. Rows must not repeat an index
 * (ONNX leaves the result undefined then). */
typedef struct fp8ort_scatter_nd_geometry {
    int64_t rows, k, slice;
    int64_t index_dims[FP8ORT_ONNX_MAX_RANK];
    int64_t dim_strides[FP8ORT_ONNX_MAX_RANK];
} fp8ort_scatter_nd_geometry;
FP8ORT_GPU_API fp8ort_status fp8ort_onnx_scatter_nd(const void* updates, const int64_t* indices, void* out,
                                                    int64_t elem_size, const fp8ort_scatter_nd_geometry* g,
                                                    void* stream);

/* GatherND: for index row r (of batch * rows, k INT64 components each), out[r, :slice] = data[(r / rows) *
 * batch_stride + sum_j idx_j * dim_strides[j] + :slice] with idx_j in [-index_dims[j], index_dims[j]); a row with an
 * index out of range gives zero elements. */
typedef struct fp8ort_gather_nd_geometry {
    int64_t batch, rows, k, slice, batch_stride;
    int64_t index_dims[FP8ORT_ONNX_MAX_RANK];
    int64_t dim_strides[FP8ORT_ONNX_MAX_RANK];
} fp8ort_gather_nd_geometry;
FP8ORT_GPU_API fp8ort_status fp8ort_onnx_gather_nd(const void* data, const int64_t* indices, void* out,
                                                   int64_t elem_size, const fp8ort_gather_nd_geometry* g, void* stream);

/* Cast between FLOAT/FLOAT16 and the FP8 types (TensorProto 17-20, fp8ort_fp8_format): to FP8 rounds to nearest
 * even, with `saturate` values past the largest finite (and Inf) give it, without it they give NaN (Inf for E5M2),
 * as ONNX Cast-19 does; FP8 to FLOAT/FLOAT16 is exact (float16 from the exact float32). One side must be FP8. */
FP8ORT_GPU_API fp8ort_status fp8ort_onnx_cast_fp8(const void* x, int32_t x_type, void* y, int32_t y_type, int64_t count,
                                                  int32_t saturate, void* stream);

/* ---- data movement (onnx_tensor.hip) ---- on elements of elem_size bytes (1, 2, 4 or 8) */
/* dst[c] = src[walk 0] for every output coordinate c of `nd`: Transpose (permuted strides), Slice (stepped strides,
 * offset), Expand (zero strides). */
FP8ORT_GPU_API fp8ort_status fp8ort_onnx_strided_copy(const void* src, void* dst, int64_t elem_size,
                                                      const fp8ort_nd* nd, void* stream);

/* Batched 2-D transpose through shared-memory tiles: dst[b][c][r] = src[b][r][c] for src [batch, rows, cols].
 * NCHW <-> NHWC is this with rows, cols = C, H*W (or H*W, C). */
FP8ORT_GPU_API fp8ort_status fp8ort_onnx_transpose_2d(const void* src, void* dst, int64_t elem_size, int64_t batch,
                                                      int64_t rows, int64_t cols, void* stream);

/* rows rows of row_bytes bytes: dst + r * dst_pitch <- src + r * src_pitch (bytes; Concat along any axis). */
FP8ORT_GPU_API fp8ort_status fp8ort_onnx_copy_rows(const void* src, void* dst, int64_t rows, int64_t row_bytes,
                                                   int64_t src_pitch, int64_t dst_pitch, void* stream);

/* Pad over an output of `rank` dims (rank >= 1): along each axis d, output position o reads element crop[d] + j of
 * the input, j = the position in the cropped window of len[d] elements for o - before[d] (inside the window: itself;
 * outside: the constant for CONSTANT, the nearest end for EDGE, the mirror without the end for REFLECT (pads <
 * len), the position modulo len for WRAP). A CONSTANT position on any axis gives value_bits (the element's bytes,
 * little endian). src_strides are the input's element strides. */
typedef enum fp8ort_pad_mode {
    FP8ORT_PAD_CONSTANT = 0,
    FP8ORT_PAD_REFLECT = 1,
    FP8ORT_PAD_EDGE = 2,
    FP8ORT_PAD_WRAP = 3
} fp8ort_pad_mode;
typedef struct fp8ort_pad_geometry {
    int32_t rank, mode;
    int64_t out_dims[FP8ORT_ONNX_MAX_RANK];
    int64_t crop[FP8ORT_ONNX_MAX_RANK];
    int64_t len[FP8ORT_ONNX_MAX_RANK];
    int64_t before[FP8ORT_ONNX_MAX_RANK];
    int64_t src_strides[FP8ORT_ONNX_MAX_RANK];
    uint64_t value_bits;
} fp8ort_pad_geometry;
FP8ORT_GPU_API fp8ort_status fp8ort_onnx_pad(const void* src, void* dst, int64_t elem_size, const fp8ort_pad_geometry* g,
                                             void* stream);

/* Device-to-device copy of `bytes` bytes (Identity and the Reshape family). src == dst does nothing. */
FP8ORT_GPU_API fp8ort_status fp8ort_onnx_copy(const void* src, void* dst, int64_t bytes, void* stream);

/* Gather: data [outer, axis_dim, inner] -> out [outer, index_count, inner], out[o, j, k] = data[o, idx[j], k] with
 * idx[j] + axis_dim for a negative index. indices are INT64 or INT32 on the device; an index outside
 * [-axis_dim, axis_dim) gives zero elements (the kernel cannot report it without a host synchronization). */
FP8ORT_GPU_API fp8ort_status fp8ort_onnx_gather(const void* data, const void* indices, int32_t index_type, void* out,
                                                int64_t elem_size, int64_t outer, int64_t axis_dim, int64_t inner,
                                                int64_t index_count, void* stream);

/* dst[i] = value for i < count; value is the element's bytes in the low elem_size bytes of `value_bits`
 * (little endian). */
FP8ORT_GPU_API fp8ort_status fp8ort_onnx_fill(void* dst, int64_t elem_size, int64_t count, uint64_t value_bits,
                                              void* stream);

/* dst[i] = values[i] for i < count (INT64), the values passed to the kernel by value (no copy from host memory
 * that could still change, no host synchronization): Shape's output on the device. count <= FP8ORT_ONNX_MAX_VALUES. */
#define FP8ORT_ONNX_MAX_VALUES 16
FP8ORT_GPU_API fp8ort_status fp8ort_onnx_write_int64s(int64_t* dst, const int64_t* values, int32_t count, void* stream);

#ifdef __cplusplus
}
#endif
#endif /* FP8ORT_ONNX_KERNELS_H */
