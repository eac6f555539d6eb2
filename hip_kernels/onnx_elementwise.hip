// Elementwise standard ONNX ops: unary math, broadcasting binary math, comparisons and logical ops (float, integer
// and bool operands), Where, Cast.
// float16 is computed in float32 and rounded once (round to nearest even).
#include "fp8_numerics.h"
#include "onnx_nd.h"

namespace fp8ort {
namespace onnx {
namespace {

// Storage and float32 view of the two math types.
template <int T> struct math_elem;
template <> struct math_elem<FP8ORT_ONNX_FLOAT> {
    using type = float;
    static __device__ __forceinline__ float load(float v) { return v; }
    static __device__ __forceinline__ float store(float v) { return v; }
};
template <> struct math_elem<FP8ORT_ONNX_FLOAT16> {
    using type = uint16_t;
    static __device__ __forceinline__ float load(uint16_t v) { return fp8ort_half_bits_to_float(v); }
    static __device__ __forceinline__ uint16_t store(float v) { return fp8ort_float_to_half_bits(v); }
};

constexpr float kSqrtHalf = 0.70710678118654752f;   // 1 / sqrt(2)
constexpr float kSqrt2OverPi = 0.79788456080286536f;  // sqrt(2 / pi)
constexpr float kGeluCubic = 0.044715f;

template <int Op>
__device__ __forceinline__ float unary_value(float x, float alpha, float beta) {
    if constexpr (Op == FP8ORT_UNARY_RELU) return x < 0.0f ? 0.0f : x;  // NaN stays NaN
    if constexpr (Op == FP8ORT_UNARY_SIGMOID) return 1.0f / (1.0f + expf(-x));
    if constexpr (Op == FP8ORT_UNARY_TANH) return tanhf(x);
    if constexpr (Op == FP8ORT_UNARY_ERF) return erff(x);
    if constexpr (Op == FP8ORT_UNARY_SQRT) return sqrtf(x);
    if constexpr (Op == FP8ORT_UNARY_EXP) return expf(x);
    if constexpr (Op == FP8ORT_UNARY_NEG) return -x;
    if constexpr (Op == FP8ORT_UNARY_ABS) return fabsf(x);
    if constexpr (Op == FP8ORT_UNARY_RECIPROCAL) return 1.0f / x;
    if constexpr (Op == FP8ORT_UNARY_HARD_SIGMOID) {
        const float v = alpha * x + beta;
        return v < 0.0f ? 0.0f : (v > 1.0f ? 1.0f : v);
    }
    if constexpr (Op == FP8ORT_UNARY_HARD_SWISH) {
        const float v = x * (1.0f / 6.0f) + 0.5f;
        return x * (v < 0.0f ? 0.0f : (v > 1.0f ? 1.0f : v));
    }
    if constexpr (Op == FP8ORT_UNARY_CLIP) return x < alpha ? alpha : (x > beta ? beta : x);
    if constexpr (Op == FP8ORT_UNARY_GELU) return 0.5f * x * (1.0f + erff(x * kSqrtHalf));
    if constexpr (Op == FP8ORT_UNARY_GELU_TANH) return 0.5f * x * (1.0f + tanhf(kSqrt2OverPi * (x + kGeluCubic * x * x * x)));
    if constexpr (Op == FP8ORT_UNARY_CEIL) return ceilf(x);
    if constexpr (Op == FP8ORT_UNARY_FLOOR) return floorf(x);
    return x;
}

template <int T, int Op>
__global__ void __launch_bounds__(kThreads)
    unary_kernel(const typename math_elem<T>::type* __restrict__ x, typename math_elem<T>::type* __restrict__ y,
                 int64_t count, float alpha, float beta) {
    using E = math_elem<T>;
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride)
        y[i] = E::store(unary_value<Op>(E::load(x[i]), alpha, beta));
}

template <int T, int Op>
fp8ort_status launch_unary(const void* x, void* y, int64_t count, float alpha, float beta, hipStream_t s) {
    using S = typename math_elem<T>::type;
    unary_kernel<T, Op><<<blocks_for(count), kThreads, 0, s>>>(static_cast<const S*>(x), static_cast<S*>(y), count,
                                                                alpha, beta);
    return check_launch("fp8ort_onnx_unary");
}

template <int T>
fp8ort_status unary_for_type(fp8ort_unary_op op, const void* x, void* y, int64_t n, float a, float b, hipStream_t s) {
    switch (op) {
        case FP8ORT_UNARY_RELU: return launch_unary<T, FP8ORT_UNARY_RELU>(x, y, n, a, b, s);
        case FP8ORT_UNARY_SIGMOID: return launch_unary<T, FP8ORT_UNARY_SIGMOID>(x, y, n, a, b, s);
        case FP8ORT_UNARY_TANH: return launch_unary<T, FP8ORT_UNARY_TANH>(x, y, n, a, b, s);
        case FP8ORT_UNARY_ERF: return launch_unary<T, FP8ORT_UNARY_ERF>(x, y, n, a, b, s);
        case FP8ORT_UNARY_SQRT: return launch_unary<T, FP8ORT_UNARY_SQRT>(x, y, n, a, b, s);
        case FP8ORT_UNARY_EXP: return launch_unary<T, FP8ORT_UNARY_EXP>(x, y, n, a, b, s);
        case FP8ORT_UNARY_NEG: return launch_unary<T, FP8ORT_UNARY_NEG>(x, y, n, a, b, s);
        case FP8ORT_UNARY_ABS: return launch_unary<T, FP8ORT_UNARY_ABS>(x, y, n, a, b, s);
        case FP8ORT_UNARY_RECIPROCAL: return launch_unary<T, FP8ORT_UNARY_RECIPROCAL>(x, y, n, a, b, s);
        case FP8ORT_UNARY_HARD_SIGMOID: return launch_unary<T, FP8ORT_UNARY_HARD_SIGMOID>(x, y, n, a, b, s);
        case FP8ORT_UNARY_HARD_SWISH: return launch_unary<T, FP8ORT_UNARY_HARD_SWISH>(x, y, n, a, b, s);
        case FP8ORT_UNARY_CLIP: return launch_unary<T, FP8ORT_UNARY_CLIP>(x, y, n, a, b, s);
        case FP8ORT_UNARY_GELU: return launch_unary<T, FP8ORT_UNARY_GELU>(x, y, n, a, b, s);
        case FP8ORT_UNARY_GELU_TANH: return launch_unary<T, FP8ORT_UNARY_GELU_TANH>(x, y, n, a, b, s);
        case FP8ORT_UNARY_CEIL: return launch_unary<T, FP8ORT_UNARY_CEIL>(x, y, n, a, b, s);
        case FP8ORT_UNARY_FLOOR: return launch_unary<T, FP8ORT_UNARY_FLOOR>(x, y, n, a, b, s);
    }
    return fail(FP8ORT_INVALID_ARGUMENT, "fp8ort_onnx_unary: unknown op %d", static_cast<int>(op));
}

// ---- binary ----
template <int Op>
__device__ __forceinline__ float binary_value(float a, float b) {
    if constexpr (Op == FP8ORT_BINARY_ADD) return a + b;
    if constexpr (Op == FP8ORT_BINARY_SUB) return a - b;
    if constexpr (Op == FP8ORT_BINARY_MUL) return a * b;
    if constexpr (Op == FP8ORT_BINARY_DIV) return a / b;
    if constexpr (Op == FP8ORT_BINARY_MAX) return (a != a || b != b) ? a + b : (a < b ? b : a);
    if constexpr (Op == FP8ORT_BINARY_MIN) return (a != a || b != b) ? a + b : (b < a ? b : a);
    if constexpr (Op == FP8ORT_BINARY_FMOD) return fmodf(a, b);
    if constexpr (Op == FP8ORT_BINARY_POW) {
        // onnxruntime's CPU kernel multiplies for the exponents 2 and 3; powf elsewhere.
        if (b == 2.0f) return a * a;
        if (b == 3.0f) return a * a * a;
        return powf(a, b);
    }
    return 0.0f;
}

template <int Op, class T>
__device__ __forceinline__ bool compare_value(T a, T b) {
    if constexpr (Op == FP8ORT_BINARY_EQUAL) return a == b;
    if constexpr (Op == FP8ORT_BINARY_LESS) return a < b;
    if constexpr (Op == FP8ORT_BINARY_GREATER) return a > b;
    if constexpr (Op == FP8ORT_BINARY_LESS_OR_EQUAL) return a <= b;
    return a >= b;
}

__host__ __device__ constexpr bool is_comparison(int op) {
    return op == FP8ORT_BINARY_EQUAL || op == FP8ORT_BINARY_LESS || op == FP8ORT_BINARY_GREATER ||
           op == FP8ORT_BINARY_LESS_OR_EQUAL || op == FP8ORT_BINARY_GREATER_OR_EQUAL;
}
__host__ __device__ constexpr bool is_logical(int op) {
    return op == FP8ORT_BINARY_AND || op == FP8ORT_BINARY_OR || op == FP8ORT_BINARY_XOR;
}

template <int TA, int TB, int Op, class I>
__global__ void __launch_bounds__(kThreads)
    binary_kernel(const typename math_elem<TA>::type* a, const typename math_elem<TB>::type* b, void* y, fp8ort_nd nd,
                  I count) {  // no __restrict__: y may alias a (Max/Min fold in place)
    const I stride = static_cast<I>(gridDim.x) * static_cast<I>(blockDim.x);
    for (I i = static_cast<I>(blockIdx.x) * static_cast<I>(blockDim.x) + static_cast<I>(threadIdx.x); i < count; i += stride) {
        I off[2];
        nd_offsets<2, I>(nd, i, off);
        const float va = math_elem<TA>::load(a[off[0]]);
        const float vb = math_elem<TB>::load(b[off[1]]);
        if constexpr (is_comparison(Op)) {
            static_cast<uint8_t*>(y)[i] = compare_value<Op>(va, vb) ? 1 : 0;
        } else {
            static_cast<typename math_elem<TA>::type*>(y)[i] = math_elem<TA>::store(binary_value<Op>(va, vb));
        }
    }
}

// Rows of 4-element groups: the walk's last dimension D (D % 4 == 0) is contiguous in every operand that moves
// along it (stride 1) and constant in the others (stride 0), e.g. the squeeze-excitation scale [N, H*W, C] x
// [N, 1, C]. One thread takes 4 outputs of a row: the N-d walk (a division per dimension) runs once per 4 elements
// instead of once per element, and the loads and the store are 4 wide. No comparison ops (their output is bool).
template <int T>
__device__ __forceinline__ void load4(const typename math_elem<T>::type* p, int64_t stride, float (&v)[4]) {
    if (stride == 0) {
        v[0] = v[1] = v[2] = v[3] = math_elem<T>::load(*p);
    } else if constexpr (T == FP8ORT_ONNX_FLOAT) {
        const float4 q = *reinterpret_cast<const float4*>(p);
        v[0] = q.x, v[1] = q.y, v[2] = q.z, v[3] = q.w;
    } else {
        const uint2 q = *reinterpret_cast<const uint2*>(p);
        v[0] = fp8ort_half_bits_to_float(static_cast<uint16_t>(q.x & 0xffffu));
        v[1] = fp8ort_half_bits_to_float(static_cast<uint16_t>(q.x >> 16));
        v[2] = fp8ort_half_bits_to_float(static_cast<uint16_t>(q.y & 0xffffu));
        v[3] = fp8ort_half_bits_to_float(static_cast<uint16_t>(q.y >> 16));
    }
}

template <int T, int Op, class I>
__global__ void __launch_bounds__(kThreads)
    binary_rows_kernel(const typename math_elem<T>::type* a, const typename math_elem<T>::type* b,
                       typename math_elem<T>::type* y, fp8ort_nd outer, I quads_per_row, I quads, int64_t a_inner,
                       int64_t b_inner) {
    using E = math_elem<T>;
    const I stride = static_cast<I>(gridDim.x) * static_cast<I>(blockDim.x);
    for (I q = static_cast<I>(blockIdx.x) * static_cast<I>(blockDim.x) + static_cast<I>(threadIdx.x); q < quads; q += stride) {
        const I row = q / quads_per_row;
        const I col = (q - row * quads_per_row) * 4;
        I off[2];
        nd_offsets<2, I>(outer, row, off);
        float va[4], vb[4];
        load4<T>(a + off[0] + (a_inner ? col : 0), a_inner, va);
        load4<T>(b + off[1] + (b_inner ? col : 0), b_inner, vb);
        float r[4];
#pragma unroll
        for (int e = 0; e < 4; ++e) r[e] = binary_value<Op>(va[e], vb[e]);
        if constexpr (T == FP8ORT_ONNX_FLOAT) {
            *reinterpret_cast<float4*>(y + q * 4) = make_float4(r[0], r[1], r[2], r[3]);
        } else {
            uint16_t h[4];
#pragma unroll
            for (int e = 0; e < 4; ++e) h[e] = E::store(r[e]);
            *reinterpret_cast<uint2*>(y + q * 4) = make_uint2(h[0] | (static_cast<uint32_t>(h[1]) << 16),
                                                              h[2] | (static_cast<uint32_t>(h[3]) << 16));
        }
    }
}

// The walk without its last dimension, when binary_rows_kernel can take it (see there); false otherwise.
inline bool rows_walk(const fp8ort_nd& nd, const void* a, const void* b, const void* y, int elem_bytes, fp8ort_nd* outer) {
    if (nd.rank < 1) return false;
    const int last = nd.rank - 1;
    const int64_t d = nd.dims[last];
    if (d % 4 != 0 || d < 8) return false;
    const uintptr_t vec = static_cast<uintptr_t>(4 * elem_bytes);
    if ((reinterpret_cast<uintptr_t>(a) | reinterpret_cast<uintptr_t>(b) | reinterpret_cast<uintptr_t>(y)) % vec) return false;
    for (int k = 0; k < 2; ++k) {
        const int64_t inner = nd.strides[k][last];
        if (inner != 0 && inner != 1) return false;
        if (inner == 1) {  // 4-wide loads stay aligned: every row starts at a multiple of 4 elements
            if (nd.offsets[k] % 4) return false;
            for (int dd = 0; dd < last; ++dd)
                if (nd.strides[k][dd] % 4) return false;
        }
    }
    *outer = nd;
    outer->rank = last;
    return true;
}

template <int TA, int TB, int Op>
fp8ort_status launch_binary(const void* a, const void* b, void* y, const fp8ort_nd& nd, int64_t count, hipStream_t s) {
    using SA = typename math_elem<TA>::type;
    using SB = typename math_elem<TB>::type;
    if constexpr (TA == TB && !is_comparison(Op)) {
        fp8ort_nd outer;
        if (rows_walk(nd, a, b, y, sizeof(SA), &outer) && fits_int32(nd, 2, count)) {
            const int64_t quads = count / 4;
            binary_rows_kernel<TA, Op, int32_t><<<blocks_for(quads), kThreads, 0, s>>>(
                static_cast<const SA*>(a), static_cast<const SA*>(b), static_cast<SA*>(y), outer,
                static_cast<int32_t>(nd.dims[nd.rank - 1] / 4), static_cast<int32_t>(quads), nd.strides[0][nd.rank - 1],
                nd.strides[1][nd.rank - 1]);
            return check_launch("fp8ort_onnx_binary");
        }
    }
    const int blocks = blocks_for(count);
    if (fits_int32(nd, 2, count))
        binary_kernel<TA, TB, Op, int32_t><<<blocks, kThreads, 0, s>>>(static_cast<const SA*>(a), static_cast<const SB*>(b),
                                                                        y, nd, static_cast<int32_t>(count));
    else
        binary_kernel<TA, TB, Op, int64_t><<<blocks, kThreads, 0, s>>>(static_cast<const SA*>(a), static_cast<const SB*>(b),
                                                                        y, nd, count);
    return check_launch("fp8ort_onnx_binary");
}

template <int TA, int TB>
fp8ort_status binary_for_types(fp8ort_binary_op op, const void* a, const void* b, void* y, const fp8ort_nd& nd,
                               int64_t n, hipStream_t s) {
    if (op == FP8ORT_BINARY_POW) return launch_binary<TA, TB, FP8ORT_BINARY_POW>(a, b, y, nd, n, s);
    if constexpr (TA == TB) {
        switch (op) {
            case FP8ORT_BINARY_ADD: return launch_binary<TA, TB, FP8ORT_BINARY_ADD>(a, b, y, nd, n, s);
            case FP8ORT_BINARY_SUB: return launch_binary<TA, TB, FP8ORT_BINARY_SUB>(a, b, y, nd, n, s);
            case FP8ORT_BINARY_MUL: return launch_binary<TA, TB, FP8ORT_BINARY_MUL>(a, b, y, nd, n, s);
            case FP8ORT_BINARY_DIV: return launch_binary<TA, TB, FP8ORT_BINARY_DIV>(a, b, y, nd, n, s);
            case FP8ORT_BINARY_EQUAL: return launch_binary<TA, TB, FP8ORT_BINARY_EQUAL>(a, b, y, nd, n, s);
            case FP8ORT_BINARY_LESS: return launch_binary<TA, TB, FP8ORT_BINARY_LESS>(a, b, y, nd, n, s);
            case FP8ORT_BINARY_GREATER: return launch_binary<TA, TB, FP8ORT_BINARY_GREATER>(a, b, y, nd, n, s);
            case FP8ORT_BINARY_LESS_OR_EQUAL: return launch_binary<TA, TB, FP8ORT_BINARY_LESS_OR_EQUAL>(a, b, y, nd, n, s);
            case FP8ORT_BINARY_GREATER_OR_EQUAL:
                return launch_binary<TA, TB, FP8ORT_BINARY_GREATER_OR_EQUAL>(a, b, y, nd, n, s);
            case FP8ORT_BINARY_MAX: return launch_binary<TA, TB, FP8ORT_BINARY_MAX>(a, b, y, nd, n, s);
            case FP8ORT_BINARY_MIN: return launch_binary<TA, TB, FP8ORT_BINARY_MIN>(a, b, y, nd, n, s);
            case FP8ORT_BINARY_FMOD: return launch_binary<TA, TB, FP8ORT_BINARY_FMOD>(a, b, y, nd, n, s);
            default: break;
        }
    }
    return fail(FP8ORT_INVALID_ARGUMENT, "fp8ort_onnx_binary: op %d with these operand types is not supported",
                static_cast<int>(op));
}

// ---- integer and bool operands: computed in their own type ----
template <class T, int Op>
__device__ __forceinline__ T int_value(T a, T b) {
    using U = typename std::make_unsigned<T>::type;  // wrapping arithmetic: no signed overflow
    if constexpr (Op == FP8ORT_BINARY_ADD) return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
    if constexpr (Op == FP8ORT_BINARY_SUB) return static_cast<T>(static_cast<U>(a) - static_cast<U>(b));
    if constexpr (Op == FP8ORT_BINARY_MUL) return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
    if constexpr (Op == FP8ORT_BINARY_DIV) {
        if (b == 0) return 0;
        if (b == -1) return static_cast<T>(U(0) - static_cast<U>(a));
        return a / b;
    }
    if constexpr (Op == FP8ORT_BINARY_MOD || Op == FP8ORT_BINARY_FMOD) {
        if (b == 0 || b == -1) return 0;  // min % -1 overflows; a divisor 0 gives 0 as DIV does
        const T r = static_cast<T>(a % b);
        if constexpr (Op == FP8ORT_BINARY_MOD) return (r != 0 && ((r < 0) != (b < 0))) ? static_cast<T>(r + b) : r;
        return r;
    }
    if constexpr (Op == FP8ORT_BINARY_MAX) return a < b ? b : a;
    return b < a ? b : a;  // MIN
}

template <class T, int Op, class I>
__global__ void __launch_bounds__(kThreads)
    int_binary_kernel(const T* a, const T* b, void* y, fp8ort_nd nd, I count) {
    const I stride = static_cast<I>(gridDim.x) * static_cast<I>(blockDim.x);
    for (I i = static_cast<I>(blockIdx.x) * static_cast<I>(blockDim.x) + static_cast<I>(threadIdx.x); i < count; i += stride) {
        I off[2];
        nd_offsets<2, I>(nd, i, off);
        const T va = a[off[0]], vb = b[off[1]];
        if constexpr (is_comparison(Op)) {
            static_cast<uint8_t*>(y)[i] = compare_value<Op>(va, vb) ? 1 : 0;
        } else if constexpr (is_logical(Op)) {
            const bool p = va != 0, q = vb != 0;
            static_cast<uint8_t*>(y)[i] = (Op == FP8ORT_BINARY_AND ? (p && q) : Op == FP8ORT_BINARY_OR ? (p || q) : (p != q)) ? 1 : 0;
        } else {
            static_cast<T*>(y)[i] = int_value<T, Op>(va, vb);
        }
    }
}

template <class T, int Op>
fp8ort_status launch_int_binary(const void* a, const void* b, void* y, const fp8ort_nd& nd, int64_t count, hipStream_t s) {
    const int blocks = blocks_for(count);
    if (fits_int32(nd, 2, count))
        int_binary_kernel<T, Op, int32_t><<<blocks, kThreads, 0, s>>>(static_cast<const T*>(a), static_cast<const T*>(b), y, nd,
                                                                      static_cast<int32_t>(count));
    else
        int_binary_kernel<T, Op, int64_t><<<blocks, kThreads, 0, s>>>(static_cast<const T*>(a), static_cast<const T*>(b), y, nd,
                                                                      count);
    return check_launch("fp8ort_onnx_binary");
}

template <class T>
fp8ort_status int_binary_for_type(fp8ort_binary_op op, const void* a, const void* b, void* y, const fp8ort_nd& nd, int64_t n,
                                  hipStream_t s) {
    switch (op) {
        case FP8ORT_BINARY_ADD: return launch_int_binary<T, FP8ORT_BINARY_ADD>(a, b, y, nd, n, s);
        case FP8ORT_BINARY_SUB: return launch_int_binary<T, FP8ORT_BINARY_SUB>(a, b, y, nd, n, s);
        case FP8ORT_BINARY_MUL: return launch_int_binary<T, FP8ORT_BINARY_MUL>(a, b, y, nd, n, s);
        case FP8ORT_BINARY_DIV: return launch_int_binary<T, FP8ORT_BINARY_DIV>(a, b, y, nd, n, s);
        case FP8ORT_BINARY_MAX: return launch_int_binary<T, FP8ORT_BINARY_MAX>(a, b, y, nd, n, s);
        case FP8ORT_BINARY_MIN: return launch_int_binary<T, FP8ORT_BINARY_MIN>(a, b, y, nd, n, s);
        case FP8ORT_BINARY_MOD: return launch_int_binary<T, FP8ORT_BINARY_MOD>(a, b, y, nd, n, s);
        case FP8ORT_BINARY_FMOD: return launch_int_binary<T, FP8ORT_BINARY_FMOD>(a, b, y, nd, n, s);
        case FP8ORT_BINARY_EQUAL: return launch_int_binary<T, FP8ORT_BINARY_EQUAL>(a, b, y, nd, n, s);
        case FP8ORT_BINARY_LESS: return launch_int_binary<T, FP8ORT_BINARY_LESS>(a, b, y, nd, n, s);
        case FP8ORT_BINARY_GREATER: return launch_int_binary<T, FP8ORT_BINARY_GREATER>(a, b, y, nd, n, s);
        case FP8ORT_BINARY_LESS_OR_EQUAL: return launch_int_binary<T, FP8ORT_BINARY_LESS_OR_EQUAL>(a, b, y, nd, n, s);
        case FP8ORT_BINARY_GREATER_OR_EQUAL: return launch_int_binary<T, FP8ORT_BINARY_GREATER_OR_EQUAL>(a, b, y, nd, n, s);
        default: break;
    }
    return fail(FP8ORT_INVALID_ARGUMENT, "fp8ort_onnx_binary: op %d does not take integer operands", static_cast<int>(op));
}

fp8ort_status bool_binary(fp8ort_binary_op op, const void* a, const void* b, void* y, const fp8ort_nd& nd, int64_t n,
                          hipStream_t s) {
    switch (op) {
        case FP8ORT_BINARY_EQUAL: return launch_int_binary<uint8_t, FP8ORT_BINARY_EQUAL>(a, b, y, nd, n, s);
        case FP8ORT_BINARY_AND: return launch_int_binary<uint8_t, FP8ORT_BINARY_AND>(a, b, y, nd, n, s);
        case FP8ORT_BINARY_OR: return launch_int_binary<uint8_t, FP8ORT_BINARY_OR>(a, b, y, nd, n, s);
        case FP8ORT_BINARY_XOR: return launch_int_binary<uint8_t, FP8ORT_BINARY_XOR>(a, b, y, nd, n, s);
        default: break;
    }
    return fail(FP8ORT_INVALID_ARGUMENT, "fp8ort_onnx_binary: op %d does not take bool operands", static_cast<int>(op));
}

// ---- Cast to / from FP8 ----
template <int TX, int F>
__global__ void __launch_bounds__(kThreads)
    to_fp8_kernel(const typename math_elem<TX>::type* __restrict__ x, uint8_t* __restrict__ y, int64_t count, bool saturate) {
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride)
        y[i] = encode_fp8<static_cast<fp8ort_fp8_format>(F)>(math_elem<TX>::load(x[i]), saturate);
}

template <int F, int TY>
__global__ void __launch_bounds__(kThreads)
    from_fp8_kernel(const uint8_t* __restrict__ x, typename math_elem<TY>::type* __restrict__ y, int64_t count) {
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride)
        y[i] = math_elem<TY>::store(decode_fp8<static_cast<fp8ort_fp8_format>(F)>(x[i]));
}

bool is_fp8_onnx_type(int32_t t) { return t >= FP8ORT_E4M3FN && t <= FP8ORT_E5M2FNUZ; }

template <int TX>
fp8ort_status cast_to_fp8(const void* x, void* y, int32_t f, int64_t n, bool sat, hipStream_t s) {
    using X = typename math_elem<TX>::type;
    const X* xp = static_cast<const X*>(x);
    uint8_t* yp = static_cast<uint8_t*>(y);
    const int b = blocks_for(n);
    switch (f) {
        case FP8ORT_E4M3FN: to_fp8_kernel<TX, FP8ORT_E4M3FN><<<b, kThreads, 0, s>>>(xp, yp, n, sat); break;
        case FP8ORT_E4M3FNUZ: to_fp8_kernel<TX, FP8ORT_E4M3FNUZ><<<b, kThreads, 0, s>>>(xp, yp, n, sat); break;
        case FP8ORT_E5M2: to_fp8_kernel<TX, FP8ORT_E5M2><<<b, kThreads, 0, s>>>(xp, yp, n, sat); break;
        default: to_fp8_kernel<TX, FP8ORT_E5M2FNUZ><<<b, kThreads, 0, s>>>(xp, yp, n, sat); break;
    }
    return check_launch("fp8ort_onnx_cast_fp8");
}

template <int TY>
fp8ort_status cast_from_fp8(const void* x, int32_t f, void* y, int64_t n, hipStream_t s) {
    using Y = typename math_elem<TY>::type;
    const uint8_t* xp = static_cast<const uint8_t*>(x);
    Y* yp = static_cast<Y*>(y);
    const int b = blocks_for(n);
    switch (f) {
        case FP8ORT_E4M3FN: from_fp8_kernel<FP8ORT_E4M3FN, TY><<<b, kThreads, 0, s>>>(xp, yp, n); break;
        case FP8ORT_E4M3FNUZ: from_fp8_kernel<FP8ORT_E4M3FNUZ, TY><<<b, kThreads, 0, s>>>(xp, yp, n); break;
        case FP8ORT_E5M2: from_fp8_kernel<FP8ORT_E5M2, TY><<<b, kThreads, 0, s>>>(xp, yp, n); break;
        default: from_fp8_kernel<FP8ORT_E5M2FNUZ, TY><<<b, kThreads, 0, s>>>(xp, yp, n); break;
    }
    return check_launch("fp8ort_onnx_cast_fp8");
}

// ---- Where ----
template <int Bytes, class I>
__global__ void __launch_bounds__(kThreads)
    where_kernel(const uint8_t* __restrict__ cond, const typename unit_of<Bytes>::type* __restrict__ x,
                 const typename unit_of<Bytes>::type* __restrict__ y, typename unit_of<Bytes>::type* __restrict__ out,
                 fp8ort_nd nd, I count) {
    const I stride = static_cast<I>(gridDim.x) * static_cast<I>(blockDim.x);
    for (I i = static_cast<I>(blockIdx.x) * static_cast<I>(blockDim.x) + static_cast<I>(threadIdx.x); i < count; i += stride) {
        I off[3];
        nd_offsets<3, I>(nd, i, off);
        out[i] = cond[off[0]] ? x[off[1]] : y[off[2]];
    }
}

template <int Bytes>
fp8ort_status launch_where(const void* c, const void* x, const void* y, void* out, const fp8ort_nd& nd, int64_t count,
                           hipStream_t s) {
    using U = typename unit_of<Bytes>::type;
    const int blocks = blocks_for(count);
    const uint8_t* cb = static_cast<const uint8_t*>(c);
    if (fits_int32(nd, 3, count))
        where_kernel<Bytes, int32_t><<<blocks, kThreads, 0, s>>>(cb, static_cast<const U*>(x), static_cast<const U*>(y),
                                                                 static_cast<U*>(out), nd, static_cast<int32_t>(count));
    else
        where_kernel<Bytes, int64_t><<<blocks, kThreads, 0, s>>>(cb, static_cast<const U*>(x), static_cast<const U*>(y),
                                                                 static_cast<U*>(out), nd, count);
    return check_launch("fp8ort_onnx_where");
}

// ---- Cast ----
template <int T> struct cast_elem;
template <> struct cast_elem<FP8ORT_ONNX_FLOAT> { using type = float; };
template <> struct cast_elem<FP8ORT_ONNX_FLOAT16> { using type = uint16_t; };
template <> struct cast_elem<FP8ORT_ONNX_INT64> { using type = long long; };
template <> struct cast_elem<FP8ORT_ONNX_INT32> { using type = int32_t; };
template <> struct cast_elem<FP8ORT_ONNX_BOOL> { using type = uint8_t; };
template <> struct cast_elem<FP8ORT_ONNX_UINT8> { using type = uint8_t; };

__host__ __device__ constexpr bool is_float_type(int t) { return t == FP8ORT_ONNX_FLOAT || t == FP8ORT_ONNX_FLOAT16; }

// float32 to an integer, truncating toward zero; NaN gives 0 and out-of-range values saturate (a defined answer
// where C++ has none).
template <class D>
__device__ __forceinline__ D float_to_int(float v, float lo, float hi_exclusive, D dlo, D dhi) {
    if (!(v == v)) return 0;
    if (v <= lo) return dlo;
    if (v >= hi_exclusive) return dhi;
    return static_cast<D>(v);
}

template <int TX, int TY>
__device__ __forceinline__ typename cast_elem<TY>::type cast_value(typename cast_elem<TX>::type v) {
    using D = typename cast_elem<TY>::type;
    if constexpr (TY == FP8ORT_ONNX_BOOL) {
        if constexpr (TX == FP8ORT_ONNX_FLOAT16) return fp8ort_half_bits_to_float(v) != 0.0f ? 1 : 0;
        else return v != 0 ? 1 : 0;
    } else if constexpr (is_float_type(TX)) {
        float f;
        if constexpr (TX == FP8ORT_ONNX_FLOAT16) f = fp8ort_half_bits_to_float(v);
        else f = v;
        if constexpr (TY == FP8ORT_ONNX_FLOAT) return f;
        if constexpr (TY == FP8ORT_ONNX_FLOAT16) return fp8ort_float_to_half_bits(f);
        if constexpr (TY == FP8ORT_ONNX_INT64)
            return float_to_int<long long>(f, -9223372036854775808.0f, 9223372036854775808.0f, INT64_MIN, INT64_MAX);
        if constexpr (TY == FP8ORT_ONNX_INT32)
            return float_to_int<int32_t>(f, -2147483648.0f, 2147483648.0f, INT32_MIN, INT32_MAX);
        if constexpr (TY == FP8ORT_ONNX_UINT8) return float_to_int<uint8_t>(f, 0.0f, 256.0f, 0, 255);
    } else {
        // integer or bool source: bool is 0/1 already
        if constexpr (TY == FP8ORT_ONNX_FLOAT) return static_cast<float>(v);
        if constexpr (TY == FP8ORT_ONNX_FLOAT16) return fp8ort_float_to_half_bits(static_cast<float>(v));
        if constexpr (TY == FP8ORT_ONNX_INT64 || TY == FP8ORT_ONNX_INT32 || TY == FP8ORT_ONNX_UINT8)
            return static_cast<D>(v);  // integer conversions wrap (two's complement), as in C++
    }
    return D{};
}

template <int TX, int TY>
__global__ void __launch_bounds__(kThreads)
    cast_kernel(const typename cast_elem<TX>::type* __restrict__ x, typename cast_elem<TY>::type* __restrict__ y,
                int64_t count) {
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride)
        y[i] = cast_value<TX, TY>(x[i]);
}

template <int TX, int TY>
fp8ort_status launch_cast(const void* x, void* y, int64_t count, hipStream_t s) {
    cast_kernel<TX, TY><<<blocks_for(count), kThreads, 0, s>>>(static_cast<const typename cast_elem<TX>::type*>(x),
                                                               static_cast<typename cast_elem<TY>::type*>(y), count);
    return check_launch("fp8ort_onnx_cast");
}

template <int TX>
fp8ort_status cast_from(const void* x, void* y, int32_t y_type, int64_t n, hipStream_t s) {
    switch (y_type) {
        case FP8ORT_ONNX_FLOAT: return launch_cast<TX, FP8ORT_ONNX_FLOAT>(x, y, n, s);
        case FP8ORT_ONNX_FLOAT16: return launch_cast<TX, FP8ORT_ONNX_FLOAT16>(x, y, n, s);
        case FP8ORT_ONNX_INT64: return launch_cast<TX, FP8ORT_ONNX_INT64>(x, y, n, s);
        case FP8ORT_ONNX_INT32: return launch_cast<TX, FP8ORT_ONNX_INT32>(x, y, n, s);
        case FP8ORT_ONNX_BOOL: return launch_cast<TX, FP8ORT_ONNX_BOOL>(x, y, n, s);
        case FP8ORT_ONNX_UINT8: return launch_cast<TX, FP8ORT_ONNX_UINT8>(x, y, n, s);
    }
    return fail(FP8ORT_UNSUPPORTED, "fp8ort_onnx_cast: output type %d is not float32/float16/int64/int32/bool/uint8",
                static_cast<int>(y_type));
}

bool is_math_type(int32_t t) { return t == FP8ORT_ONNX_FLOAT || t == FP8ORT_ONNX_FLOAT16; }

}  // namespace
}  // namespace onnx
}  // namespace fp8ort

using namespace fp8ort;
using namespace fp8ort::onnx;

extern "C" fp8ort_status fp8ort_onnx_unary(fp8ort_unary_op op, const void* x, void* y, int32_t type, int64_t count,
                                           float alpha, float beta, void* stream) {
    if (!is_math_type(type)) return fail(FP8ORT_UNSUPPORTED, "fp8ort_onnx_unary: type %d is not float32/float16", static_cast<int>(type));
    if (count < 0) return fail(FP8ORT_INVALID_ARGUMENT, "fp8ort_onnx_unary: negative count %lld", static_cast<long long>(count));
    if (count == 0) return ok();
    if (!x || !y) return fail(FP8ORT_INVALID_ARGUMENT, "fp8ort_onnx_unary: x and y must be device pointers, got NULL");
    const hipStream_t s = as_stream(stream);
    const fp8ort_status st = type == FP8ORT_ONNX_FLOAT ? unary_for_type<FP8ORT_ONNX_FLOAT>(op, x, y, count, alpha, beta, s)
                                                       : unary_for_type<FP8ORT_ONNX_FLOAT16>(op, x, y, count, alpha, beta, s);
    return st == FP8ORT_OK ? ok() : st;
}

extern "C" fp8ort_status fp8ort_onnx_binary(fp8ort_binary_op op, const void* a, int32_t a_type, const void* b,
                                            int32_t b_type, void* y, const fp8ort_nd* nd, void* stream) {
    const char* name = "fp8ort_onnx_binary";
    const bool math = is_math_type(a_type) && is_math_type(b_type);
    const bool integer = a_type == b_type && (a_type == FP8ORT_ONNX_INT64 || a_type == FP8ORT_ONNX_INT32);
    const bool boolean = a_type == b_type && a_type == FP8ORT_ONNX_BOOL;
    if (!math && !integer && !boolean)
        return fail(FP8ORT_UNSUPPORTED, "%s: operand types %d, %d are not float32/float16, int64, int32 or bool", name,
                    static_cast<int>(a_type), static_cast<int>(b_type));
    if (a_type != b_type && op != FP8ORT_BINARY_POW)
        return fail(FP8ORT_INVALID_ARGUMENT, "%s: operand types differ (%d, %d)", name, static_cast<int>(a_type), static_cast<int>(b_type));
    if (math && is_logical(op)) return fail(FP8ORT_INVALID_ARGUMENT, "%s: op %d needs bool operands", name, static_cast<int>(op));
    if (math && op == FP8ORT_BINARY_MOD)
        return fail(FP8ORT_INVALID_ARGUMENT, "%s: MOD takes integer operands (FMOD for floats)", name);
    int64_t count = 0;
    FP8ORT_TRY(check_nd(nd, name, &count));
    if (count == 0) return ok();
    if (!a || !b || !y) return fail(FP8ORT_INVALID_ARGUMENT, "%s: a, b and y must be device pointers, got NULL", name);
    const hipStream_t s = as_stream(stream);
    fp8ort_status st;
    if (boolean)
        st = bool_binary(op, a, b, y, *nd, count, s);
    else if (a_type == FP8ORT_ONNX_INT64)
        st = int_binary_for_type<long long>(op, a, b, y, *nd, count, s);
    else if (a_type == FP8ORT_ONNX_INT32)
        st = int_binary_for_type<int32_t>(op, a, b, y, *nd, count, s);
    else if (a_type == FP8ORT_ONNX_FLOAT)
        st = b_type == FP8ORT_ONNX_FLOAT ? binary_for_types<FP8ORT_ONNX_FLOAT, FP8ORT_ONNX_FLOAT>(op, a, b, y, *nd, count, s)
                                         : binary_for_types<FP8ORT_ONNX_FLOAT, FP8ORT_ONNX_FLOAT16>(op, a, b, y, *nd, count, s);
    else
        st = b_type == FP8ORT_ONNX_FLOAT ? binary_for_types<FP8ORT_ONNX_FLOAT16, FP8ORT_ONNX_FLOAT>(op, a, b, y, *nd, count, s)
                                         : binary_for_types<FP8ORT_ONNX_FLOAT16, FP8ORT_ONNX_FLOAT16>(op, a, b, y, *nd, count, s);
    return st == FP8ORT_OK ? ok() : st;
}

extern "C" fp8ort_status fp8ort_onnx_where(const void* cond, const void* x, const void* y, void* out, int64_t elem_size,
                                           const fp8ort_nd* nd, void* stream) {
    const char* name = "fp8ort_onnx_where";
    if (!valid_elem_size(elem_size))
        return fail(FP8ORT_UNSUPPORTED, "%s: element size %lld is not 1, 2, 4 or 8", name, static_cast<long long>(elem_size));
    int64_t count = 0;
    FP8ORT_TRY(check_nd(nd, name, &count));
    if (count == 0) return ok();
    if (!cond || !x || !y || !out) return fail(FP8ORT_INVALID_ARGUMENT, "%s: cond, x, y and out must be device pointers", name);
    const hipStream_t s = as_stream(stream);
    fp8ort_status st;
    switch (elem_size) {
        case 1: st = launch_where<1>(cond, x, y, out, *nd, count, s); break;
        case 2: st = launch_where<2>(cond, x, y, out, *nd, count, s); break;
        case 4: st = launch_where<4>(cond, x, y, out, *nd, count, s); break;
        default: st = launch_where<8>(cond, x, y, out, *nd, count, s); break;
    }
    return st == FP8ORT_OK ? ok() : st;
}

extern "C" fp8ort_status fp8ort_onnx_cast(const void* x, int32_t x_type, void* y, int32_t y_type, int64_t count,
                                          void* stream) {
    if (count < 0) return fail(FP8ORT_INVALID_ARGUMENT, "fp8ort_onnx_cast: negative count %lld", static_cast<long long>(count));
    if (count == 0) return ok();
    if (!x || !y) return fail(FP8ORT_INVALID_ARGUMENT, "fp8ort_onnx_cast: x and y must be device pointers, got NULL");
    const hipStream_t s = as_stream(stream);
    fp8ort_status st;
    switch (x_type) {
        case FP8ORT_ONNX_FLOAT: st = cast_from<FP8ORT_ONNX_FLOAT>(x, y, y_type, count, s); break;
        case FP8ORT_ONNX_FLOAT16: st = cast_from<FP8ORT_ONNX_FLOAT16>(x, y, y_type, count, s); break;
        case FP8ORT_ONNX_INT64: st = cast_from<FP8ORT_ONNX_INT64>(x, y, y_type, count, s); break;
        case FP8ORT_ONNX_INT32: st = cast_from<FP8ORT_ONNX_INT32>(x, y, y_type, count, s); break;
        case FP8ORT_ONNX_BOOL: st = cast_from<FP8ORT_ONNX_BOOL>(x, y, y_type, count, s); break;
        case FP8ORT_ONNX_UINT8: st = cast_from<FP8ORT_ONNX_UINT8>(x, y, y_type, count, s); break;
        default:
            return fail(FP8ORT_UNSUPPORTED, "fp8ort_onnx_cast: input type %d is not float32/float16/int64/int32/bool/uint8",
                        static_cast<int>(x_type));
    }
    return st == FP8ORT_OK ? ok() : st;
}

extern "C" fp8ort_status fp8ort_onnx_cast_fp8(const void* x, int32_t x_type, void* y, int32_t y_type, int64_t count,
                                              int32_t saturate, void* stream) {
    const char* name = "fp8ort_onnx_cast_fp8";
    if (count < 0) return fail(FP8ORT_INVALID_ARGUMENT, "%s: negative count %lld", name, static_cast<long long>(count));
    const bool to_fp8 = is_math_type(x_type) && is_fp8_onnx_type(y_type);
    const bool from_fp8 = is_fp8_onnx_type(x_type) && is_math_type(y_type);
    if (!to_fp8 && !from_fp8)
        return fail(FP8ORT_UNSUPPORTED, "%s: %d -> %d is not float32/float16 <-> FP8", name, static_cast<int>(x_type),
                    static_cast<int>(y_type));
    if (count == 0) return ok();
    if (!x || !y) return fail(FP8ORT_INVALID_ARGUMENT, "%s: x and y must be device pointers, got NULL", name);
    const hipStream_t s = as_stream(stream);
    fp8ort_status st;
    if (to_fp8)
        st = x_type == FP8ORT_ONNX_FLOAT ? cast_to_fp8<FP8ORT_ONNX_FLOAT>(x, y, y_type, count, saturate != 0, s)
                                         : cast_to_fp8<FP8ORT_ONNX_FLOAT16>(x, y, y_type, count, saturate != 0, s);
    else
        st = y_type == FP8ORT_ONNX_FLOAT ? cast_from_fp8<FP8ORT_ONNX_FLOAT>(x, x_type, y, count, s)
                                         : cast_from_fp8<FP8ORT_ONNX_FLOAT16>(x, x_type, y, count, s);
    return st == FP8ORT_OK ? ok() : st;
}
