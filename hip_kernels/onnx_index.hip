// Predicates (Not, IsNaN), Range, CumSum, GatherElements, GatherND and ScatterND: the index arithmetic of exporters'
// attention-mask subgraphs. An index out of range gives zero elements (ScatterND: writes nothing): reporting it would
// need a host synchronization inside the run (the CPU device reports it; docs/plugin-ep.md lists the difference).
#include <type_traits>

#include "onnx_nd.h"

namespace fp8ort {
namespace onnx {
namespace {

template <int Op, class T>
__global__ void __launch_bounds__(kThreads) predicate_kernel(const T* __restrict__ x, uint8_t* __restrict__ y, int64_t count) {
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
        if constexpr (Op == FP8ORT_PREDICATE_NOT) {
            y[i] = x[i] ? 0 : 1;
        } else if constexpr (sizeof(T) == 2) {  // float16 bits: NaN has an all-ones exponent and a mantissa
            y[i] = ((x[i] & 0x7C00u) == 0x7C00u && (x[i] & 0x03FFu) != 0) ? 1 : 0;
        } else {
            y[i] = x[i] != x[i] ? 1 : 0;
        }
    }
}

template <class T>
__global__ void __launch_bounds__(kThreads) range_kernel(T* __restrict__ y, double start, double delta, long long istart,
                                                         long long idelta, int64_t count) {
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
        if constexpr (std::is_floating_point<T>::value) {
            y[i] = static_cast<T>(start + static_cast<double>(i) * delta);
        } else {
            y[i] = static_cast<T>(istart + static_cast<long long>(i) * idelta);
        }
    }
}

template <int Bytes, class Index>
__global__ void __launch_bounds__(kThreads)
    gather_elements_kernel(const typename unit_of<Bytes>::type* __restrict__ data, const Index* __restrict__ indices,
                           typename unit_of<Bytes>::type* __restrict__ out, fp8ort_gather_elements_geometry g, int64_t count) {
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
        int64_t idx = static_cast<int64_t>(indices[i]);
        if (idx < 0) idx += g.axis_dim;
        if (idx < 0 || idx >= g.axis_dim) {
            out[i] = 0;
            continue;
        }
        int64_t rem = i, off = 0;
        for (int d = g.rank - 1; d >= 0; --d) {
            const int64_t q = rem / g.dims[d];
            const int64_t c = rem - q * g.dims[d];
            rem = q;
            off += (d == g.axis ? idx : c) * g.data_strides[d];
        }
        out[i] = data[off];
    }
}

template <int Bytes>
__global__ void __launch_bounds__(kThreads)
    gather_nd_kernel(const typename unit_of<Bytes>::type* __restrict__ data, const long long* __restrict__ indices,
                     typename unit_of<Bytes>::type* __restrict__ out, fp8ort_gather_nd_geometry g, int64_t count) {
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
        const int64_t r = i / g.slice;
        const int64_t e = i - r * g.slice;
        int64_t off = (r / g.rows) * g.batch_stride;
        bool inside = true;
        for (int64_t j = 0; j < g.k; ++j) {
            int64_t idx = indices[r * g.k + j];
            if (idx < 0) idx += g.index_dims[j];
            inside = inside && idx >= 0 && idx < g.index_dims[j];
            off += idx * g.dim_strides[j];
        }
        out[i] = inside ? data[off + e] : typename unit_of<Bytes>::type{0};
    }
}

template <int Bytes>
fp8ort_status launch_gather_elements(const void* data, const void* indices, int32_t index_type, void* out,
                                     const fp8ort_gather_elements_geometry& g, int64_t count, hipStream_t s) {
    using U = typename unit_of<Bytes>::type;
    if (index_type == FP8ORT_ONNX_INT64)
        gather_elements_kernel<Bytes, long long><<<blocks_for(count), kThreads, 0, s>>>(
            static_cast<const U*>(data), static_cast<const long long*>(indices), static_cast<U*>(out), g, count);
    else
        gather_elements_kernel<Bytes, int32_t><<<blocks_for(count), kThreads, 0, s>>>(
            static_cast<const U*>(data), static_cast<const int32_t*>(indices), static_cast<U*>(out), g, count);
    return check_launch("fp8ort_onnx_gather_elements");
}

template <int Bytes>
fp8ort_status launch_gather_nd(const void* data, const int64_t* indices, void* out, const fp8ort_gather_nd_geometry& g,
                               int64_t count, hipStream_t s) {
    using U = typename unit_of<Bytes>::type;
    gather_nd_kernel<Bytes><<<blocks_for(count), kThreads, 0, s>>>(
        static_cast<const U*>(data), reinterpret_cast<const long long*>(indices), static_cast<U*>(out), g, count);
    return check_launch("fp8ort_onnx_gather_nd");
}

// One thread per line of [outer, n, inner]; A accumulates (unsigned for integers: wrapping, no undefined overflow).
template <class T, class A>
__global__ void __launch_bounds__(kThreads)
    cumsum_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t outer, int64_t n, int64_t inner, bool exclusive,
                  bool reverse) {
    const int64_t lines = outer * inner;
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; t < lines; t += stride) {
        const int64_t o = t / inner, i = t - o * inner;
        const int64_t first = o * n * inner + i + (reverse ? (n - 1) * inner : 0);
        const int64_t step = reverse ? -inner : inner;
        A acc = A(0);
        for (int64_t k = 0; k < n; ++k) {
            const A v = static_cast<A>(x[first + k * step]);
            if (exclusive) {
                y[first + k * step] = static_cast<T>(acc);
                acc = acc + v;
            } else {
                acc = acc + v;
                y[first + k * step] = static_cast<T>(acc);
            }
        }
    }
}

template <int Bytes>
__global__ void __launch_bounds__(kThreads)
    scatter_nd_kernel(const typename unit_of<Bytes>::type* __restrict__ updates, const long long* __restrict__ indices,
                      typename unit_of<Bytes>::type* __restrict__ out, fp8ort_scatter_nd_geometry g, int64_t count) {
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
        const int64_t r = i / g.slice;
        const int64_t e = i - r * g.slice;
        int64_t off = 0;
        bool inside = true;
        for (int64_t j = 0; j < g.k; ++j) {
            int64_t idx = indices[r * g.k + j];
            if (idx < 0) idx += g.index_dims[j];
            inside = inside && idx >= 0 && idx < g.index_dims[j];
            off += idx * g.dim_strides[j];
        }
        if (inside) out[off + e] = updates[i];
    }
}

template <int Bytes>
fp8ort_status launch_scatter_nd(const void* updates, const int64_t* indices, void* out,
                                const fp8ort_scatter_nd_geometry& g, int64_t count, hipStream_t s) {
    using U = typename unit_of<Bytes>::type;
    scatter_nd_kernel<Bytes><<<blocks_for(count), kThreads, 0, s>>>(
        static_cast<const U*>(updates), reinterpret_cast<const long long*>(indices), static_cast<U*>(out), g, count);
    return check_launch("fp8ort_onnx_scatter_nd");
}

bool product_fits(const int64_t* dims, int rank, int64_t* count) {
    int64_t n = 1;
    for (int d = 0; d < rank; ++d) {
        if (dims[d] < 0 || (dims[d] != 0 && n > INT64_MAX / dims[d])) return false;
        n *= dims[d];
    }
    *count = n;
    return true;
}

}  // namespace
}  // namespace onnx
}  // namespace fp8ort

using namespace fp8ort;
using namespace fp8ort::onnx;

extern "C" fp8ort_status fp8ort_onnx_predicate(fp8ort_predicate_op op, const void* x, int32_t x_type, void* y, int64_t count,
                                               void* stream) {
    const char* name = "fp8ort_onnx_predicate";
    if (count < 0) return fail(FP8ORT_INVALID_ARGUMENT, "%s: negative count %lld", name, static_cast<long long>(count));
    const bool ok_type = op == FP8ORT_PREDICATE_NOT ? x_type == FP8ORT_ONNX_BOOL
                                                    : (x_type == FP8ORT_ONNX_FLOAT || x_type == FP8ORT_ONNX_FLOAT16);
    if (!ok_type) return fail(FP8ORT_UNSUPPORTED, "%s: op %d does not take type %d", name, static_cast<int>(op), static_cast<int>(x_type));
    if (count == 0) return ok();
    if (!x || !y) return fail(FP8ORT_INVALID_ARGUMENT, "%s: x and y must be device pointers, got NULL", name);
    const hipStream_t s = as_stream(stream);
    uint8_t* out = static_cast<uint8_t*>(y);
    if (op == FP8ORT_PREDICATE_NOT)
        predicate_kernel<FP8ORT_PREDICATE_NOT, uint8_t><<<blocks_for(count), kThreads, 0, s>>>(static_cast<const uint8_t*>(x), out, count);
    else if (x_type == FP8ORT_ONNX_FLOAT)
        predicate_kernel<FP8ORT_PREDICATE_ISNAN, float><<<blocks_for(count), kThreads, 0, s>>>(static_cast<const float*>(x), out, count);
    else
        predicate_kernel<FP8ORT_PREDICATE_ISNAN, uint16_t><<<blocks_for(count), kThreads, 0, s>>>(static_cast<const uint16_t*>(x), out, count);
    const fp8ort_status st = check_launch(name);
    return st == FP8ORT_OK ? ok() : st;
}

extern "C" fp8ort_status fp8ort_onnx_range(int32_t type, double start, double delta, int64_t istart, int64_t idelta,
                                           int64_t count, void* y, void* stream) {
    const char* name = "fp8ort_onnx_range";
    if (count < 0) return fail(FP8ORT_INVALID_ARGUMENT, "%s: negative count %lld", name, static_cast<long long>(count));
    if (count == 0) return ok();
    if (!y) return fail(FP8ORT_INVALID_ARGUMENT, "%s: y must be a device pointer, got NULL", name);
    const hipStream_t s = as_stream(stream);
    const int blocks = blocks_for(count);
    switch (type) {
        case FP8ORT_ONNX_FLOAT: range_kernel<float><<<blocks, kThreads, 0, s>>>(static_cast<float*>(y), start, delta, 0, 0, count); break;
        case FP8ORT_ONNX_INT32:
            range_kernel<int32_t><<<blocks, kThreads, 0, s>>>(static_cast<int32_t*>(y), 0, 0, istart, idelta, count);
            break;
        case FP8ORT_ONNX_INT64:
            range_kernel<long long><<<blocks, kThreads, 0, s>>>(static_cast<long long*>(y), 0, 0, istart, idelta, count);
            break;
        default: return fail(FP8ORT_UNSUPPORTED, "%s: type %d is not float32, int32 or int64", name, static_cast<int>(type));
    }
    const fp8ort_status st = check_launch(name);
    return st == FP8ORT_OK ? ok() : st;
}

extern "C" fp8ort_status fp8ort_onnx_gather_elements(const void* data, const void* indices, int32_t index_type, void* out,
                                                     int64_t elem_size, const fp8ort_gather_elements_geometry* g,
                                                     void* stream) {
    const char* name = "fp8ort_onnx_gather_elements";
    if (!g) return fail(FP8ORT_INVALID_ARGUMENT, "%s: the geometry is NULL", name);
    if (!valid_elem_size(elem_size)) return fail(FP8ORT_UNSUPPORTED, "%s: element size %lld is not 1, 2, 4 or 8", name, static_cast<long long>(elem_size));
    if (index_type != FP8ORT_ONNX_INT64 && index_type != FP8ORT_ONNX_INT32)
        return fail(FP8ORT_UNSUPPORTED, "%s: index type %d is not int64 or int32", name, static_cast<int>(index_type));
    if (g->rank < 1 || g->rank > FP8ORT_ONNX_MAX_RANK || g->axis < 0 || g->axis >= g->rank)
        return fail(FP8ORT_INVALID_ARGUMENT, "%s: rank %d / axis %d out of range", name, g->rank, g->axis);
    int64_t count = 0;
    if (!product_fits(g->dims, g->rank, &count)) return fail(FP8ORT_INVALID_ARGUMENT, "%s: bad output dimensions", name);
    if (count == 0) return ok();
    if (!data || !indices || !out) return fail(FP8ORT_INVALID_ARGUMENT, "%s: data, indices and out must be device pointers", name);
    const hipStream_t s = as_stream(stream);
    fp8ort_status st;
    switch (elem_size) {
        case 1: st = launch_gather_elements<1>(data, indices, index_type, out, *g, count, s); break;
        case 2: st = launch_gather_elements<2>(data, indices, index_type, out, *g, count, s); break;
        case 4: st = launch_gather_elements<4>(data, indices, index_type, out, *g, count, s); break;
        default: st = launch_gather_elements<8>(data, indices, index_type, out, *g, count, s); break;
    }
    return st == FP8ORT_OK ? ok() : st;
}

extern "C" fp8ort_status fp8ort_onnx_gather_nd(const void* data, const int64_t* indices, void* out, int64_t elem_size,
                                               const fp8ort_gather_nd_geometry* g, void* stream) {
    const char* name = "fp8ort_onnx_gather_nd";
    if (!g) return fail(FP8ORT_INVALID_ARGUMENT, "%s: the geometry is NULL", name);
    if (!valid_elem_size(elem_size)) return fail(FP8ORT_UNSUPPORTED, "%s: element size %lld is not 1, 2, 4 or 8", name, static_cast<long long>(elem_size));
    if (g->k < 1 || g->k > FP8ORT_ONNX_MAX_RANK || g->rows < 0 || g->batch < 0 || g->slice < 0)
        return fail(FP8ORT_INVALID_ARGUMENT, "%s: index length %lld is outside [1, %d]", name, static_cast<long long>(g->k), FP8ORT_ONNX_MAX_RANK);
    const int64_t dims[3] = {g->batch, g->rows, g->slice};
    int64_t count = 0;
    if (!product_fits(dims, 3, &count)) return fail(FP8ORT_INVALID_ARGUMENT, "%s: the output has more than 2^63 elements", name);
    if (count == 0) return ok();
    if (!data || !indices || !out) return fail(FP8ORT_INVALID_ARGUMENT, "%s: data, indices and out must be device pointers", name);
    const hipStream_t s = as_stream(stream);
    fp8ort_status st;
    switch (elem_size) {
        case 1: st = launch_gather_nd<1>(data, indices, out, *g, count, s); break;
        case 2: st = launch_gather_nd<2>(data, indices, out, *g, count, s); break;
        case 4: st = launch_gather_nd<4>(data, indices, out, *g, count, s); break;
        default: st = launch_gather_nd<8>(data, indices, out, *g, count, s); break;
    }
    return st == FP8ORT_OK ? ok() : st;
}

extern "C" fp8ort_status fp8ort_onnx_cumsum(const void* x, void* y, int32_t type, int64_t outer, int64_t n, int64_t inner,
                                            int32_t exclusive, int32_t reverse, void* stream) {
    const char* name = "fp8ort_onnx_cumsum";
    const int64_t dims[3] = {outer, n, inner};
    int64_t count = 0;
    if (!product_fits(dims, 3, &count)) return fail(FP8ORT_INVALID_ARGUMENT, "%s: bad extents", name);
    if (count == 0) return ok();
    if (!x || !y) return fail(FP8ORT_INVALID_ARGUMENT, "%s: x and y must be device pointers, got NULL", name);
    const hipStream_t s = as_stream(stream);
    const int blocks = blocks_for(outer * inner);
    const bool ex = exclusive != 0, rev = reverse != 0;
    switch (type) {
        case FP8ORT_ONNX_FLOAT:
            cumsum_kernel<float, float><<<blocks, kThreads, 0, s>>>(static_cast<const float*>(x), static_cast<float*>(y),
                                                                    outer, n, inner, ex, rev);
            break;
        case FP8ORT_ONNX_INT32:
            cumsum_kernel<int32_t, uint32_t><<<blocks, kThreads, 0, s>>>(static_cast<const int32_t*>(x),
                                                                         static_cast<int32_t*>(y), outer, n, inner, ex, rev);
            break;
        case FP8ORT_ONNX_INT64:
            cumsum_kernel<long long, unsigned long long><<<blocks, kThreads, 0, s>>>(
                static_cast<const long long*>(x), static_cast<long long*>(y), outer, n, inner, ex, rev);
            break;
        default: return fail(FP8ORT_UNSUPPORTED, "%s: type %d is not float32, int32 or int64", name, static_cast<int>(type));
    }
    const fp8ort_status st = check_launch(name);
    return st == FP8ORT_OK ? ok() : st;
}

extern "C" fp8ort_status fp8ort_onnx_scatter_nd(const void* updates, const int64_t* indices, void* out, int64_t elem_size,
                                                const fp8ort_scatter_nd_geometry* g, void* stream) {
    const char* name = "fp8ort_onnx_scatter_nd";
    if (!g) return fail(FP8ORT_INVALID_ARGUMENT, "%s: the geometry is NULL", name);
    if (!valid_elem_size(elem_size)) return fail(FP8ORT_UNSUPPORTED, "%s: element size %lld is not 1, 2, 4 or 8", name, static_cast<long long>(elem_size));
    if (g->k < 1 || g->k > FP8ORT_ONNX_MAX_RANK)
        return fail(FP8ORT_INVALID_ARGUMENT, "%s: index length %lld is outside [1, %d]", name, static_cast<long long>(g->k), FP8ORT_ONNX_MAX_RANK);
    const int64_t dims[2] = {g->rows, g->slice};
    int64_t count = 0;
    if (!product_fits(dims, 2, &count)) return fail(FP8ORT_INVALID_ARGUMENT, "%s: bad extents", name);
    if (count == 0) return ok();
    if (!updates || !indices || !out) return fail(FP8ORT_INVALID_ARGUMENT, "%s: updates, indices and out must be device pointers", name);
    const hipStream_t s = as_stream(stream);
    fp8ort_status st;
    switch (elem_size) {
        case 1: st = launch_scatter_nd<1>(updates, indices, out, *g, count, s); break;
        case 2: st = launch_scatter_nd<2>(updates, indices, out, *g, count, s); break;
        case 4: st = launch_scatter_nd<4>(updates, indices, out, *g, count, s); break;
        default: st = launch_scatter_nd<8>(updates, indices, out, *g, count, s); break;
    }
    return st == FP8ORT_OK ? ok() : st;
}
