// Data-movement standard ONNX ops on raw elements of 1, 2, 4 or 8 bytes: strided copies (Transpose, Slice, Expand),
// tiled batched 2-D transposes (NCHW <-> NHWC), row copies (Concat, Split), Pad, Gather, fill (ConstantOfShape) and
// plain copies.
#include <initializer_list>

#include "onnx_nd.h"

namespace fp8ort {
namespace onnx {
namespace {

constexpr int kTile = 32;       // transpose tile edge
constexpr int kTileRows = 8;    // threads per tile column: a block is kTile x kTileRows
constexpr int64_t kMaxTileBlocks = 65535;

// ---- strided copy ----
template <int Bytes, class I>
__global__ void __launch_bounds__(kThreads)
    strided_copy_kernel(const typename unit_of<Bytes>::type* __restrict__ src, typename unit_of<Bytes>::type* __restrict__ dst,
                        fp8ort_nd nd, I count) {
    const I stride = static_cast<I>(gridDim.x) * static_cast<I>(blockDim.x);
    for (I i = static_cast<I>(blockIdx.x) * static_cast<I>(blockDim.x) + static_cast<I>(threadIdx.x); i < count; i += stride) {
        I off[1];
        nd_offsets<1, I>(nd, i, off);
        dst[i] = src[off[0]];
    }
}

template <int Bytes>
fp8ort_status launch_strided_copy(const void* src, void* dst, const fp8ort_nd& nd, int64_t count, hipStream_t s) {
    using U = typename unit_of<Bytes>::type;
    const int blocks = blocks_for(count);
    if (fits_int32(nd, 1, count))
        strided_copy_kernel<Bytes, int32_t><<<blocks, kThreads, 0, s>>>(static_cast<const U*>(src), static_cast<U*>(dst), nd,
                                                                        static_cast<int32_t>(count));
    else
        strided_copy_kernel<Bytes, int64_t><<<blocks, kThreads, 0, s>>>(static_cast<const U*>(src), static_cast<U*>(dst), nd,
                                                                        count);
    return check_launch("fp8ort_onnx_strided_copy");
}

// ---- batched 2-D transpose: dst[b][c][r] = src[b][r][c] ----
template <int Bytes>
__global__ void __launch_bounds__(kTile * kTileRows)
    transpose_2d_kernel(const typename unit_of<Bytes>::type* __restrict__ src, typename unit_of<Bytes>::type* __restrict__ dst,
                        int64_t batch, int64_t rows, int64_t cols) {
    using U = typename unit_of<Bytes>::type;
    __shared__ U tile[kTile][kTile + 1];  // +1: no bank conflicts on the transposed read
    const int64_t tiles_r = (rows + kTile - 1) / kTile;
    const int64_t tiles_c = (cols + kTile - 1) / kTile;
    const int64_t per_batch = tiles_r * tiles_c;
    const int64_t total = batch * per_batch;
    const int tx = static_cast<int>(threadIdx.x), ty = static_cast<int>(threadIdx.y);
    for (int64_t t = blockIdx.x; t < total; t += gridDim.x) {
        const int64_t b = t / per_batch;
        const int64_t rem = t - b * per_batch;
        const int64_t r0 = (rem / tiles_c) * kTile;
        const int64_t c0 = (rem % tiles_c) * kTile;
        const U* in = src + b * rows * cols;
        U* out = dst + b * rows * cols;
        for (int j = ty; j < kTile; j += kTileRows) {
            const int64_t r = r0 + j, c = c0 + tx;
            if (r < rows && c < cols) tile[j][tx] = in[r * cols + c];
        }
        __syncthreads();
        for (int j = ty; j < kTile; j += kTileRows) {
            const int64_t c = c0 + j, r = r0 + tx;
            if (c < cols && r < rows) out[c * rows + r] = tile[tx][j];
        }
        __syncthreads();  // the tile is rewritten by the next iteration
    }
}

// ---- batched 2-D transpose with one short edge (rows or cols <= kShortEdge, e.g. an NCHW image with 3 channels):
// a 32 x 32 tile would leave most of its threads idle, so one thread moves one whole short line instead. With
// `short_rows` thread i owns column i: it reads src[b][0..rows)[i] (each read coalesced across the warp) and writes
// dst[b][i][0..rows) (consecutive). Otherwise thread i owns row i: reads src[b][i][0..cols), writes
// dst[b][0..cols)[i] (each write coalesced across the warp).
constexpr int64_t kShortEdge = 8;

template <int Bytes, bool ShortRows, class I>
__global__ void __launch_bounds__(kThreads)
    transpose_short_kernel(const typename unit_of<Bytes>::type* __restrict__ src,
                           typename unit_of<Bytes>::type* __restrict__ dst, I batch, I rows, I cols) {
    using U = typename unit_of<Bytes>::type;
    const I lines = batch * (ShortRows ? cols : rows);  // one thread per long-edge position
    const I stride = static_cast<I>(gridDim.x) * static_cast<I>(blockDim.x);
    for (I t = static_cast<I>(blockIdx.x) * static_cast<I>(blockDim.x) + static_cast<I>(threadIdx.x); t < lines;
         t += stride) {
        const I per = ShortRows ? cols : rows;
        const I b = t / per, i = t - b * per;
        const U* in = src + b * rows * cols;
        U* out = dst + b * rows * cols;
        if constexpr (ShortRows) {
            U v[kShortEdge];
#pragma unroll
            for (int r = 0; r < kShortEdge; ++r)
                if (r < rows) v[r] = in[static_cast<I>(r) * cols + i];
#pragma unroll
            for (int r = 0; r < kShortEdge; ++r)
                if (r < rows) out[i * rows + r] = v[r];
        } else {
            U v[kShortEdge];
#pragma unroll
            for (int c = 0; c < kShortEdge; ++c)
                if (c < cols) v[c] = in[i * cols + c];
#pragma unroll
            for (int c = 0; c < kShortEdge; ++c)
                if (c < cols) out[static_cast<I>(c) * rows + i] = v[c];
        }
    }
}

template <int Bytes, bool ShortRows>
fp8ort_status launch_transpose_short(const void* src, void* dst, int64_t batch, int64_t rows, int64_t cols,
                                     hipStream_t s) {
    using U = typename unit_of<Bytes>::type;
    const int64_t lines = batch * (ShortRows ? cols : rows);
    const int blocks = blocks_for(lines);
    if (batch * rows * cols < (int64_t{1} << 31))
        transpose_short_kernel<Bytes, ShortRows, int32_t><<<blocks, kThreads, 0, s>>>(
            static_cast<const U*>(src), static_cast<U*>(dst), static_cast<int32_t>(batch), static_cast<int32_t>(rows),
            static_cast<int32_t>(cols));
    else
        transpose_short_kernel<Bytes, ShortRows, int64_t><<<blocks, kThreads, 0, s>>>(
            static_cast<const U*>(src), static_cast<U*>(dst), batch, rows, cols);
    return check_launch("fp8ort_onnx_transpose_2d");
}

template <int Bytes>
fp8ort_status launch_transpose_2d(const void* src, void* dst, int64_t batch, int64_t rows, int64_t cols, hipStream_t s) {
    using U = typename unit_of<Bytes>::type;
    if (rows <= kShortEdge && cols >= kTile) return launch_transpose_short<Bytes, true>(src, dst, batch, rows, cols, s);
    if (cols <= kShortEdge && rows >= kTile) return launch_transpose_short<Bytes, false>(src, dst, batch, rows, cols, s);
    const int64_t tiles = batch * ((rows + kTile - 1) / kTile) * ((cols + kTile - 1) / kTile);
    const int blocks = static_cast<int>(tiles < kMaxTileBlocks ? tiles : kMaxTileBlocks);
    transpose_2d_kernel<Bytes><<<blocks, dim3(kTile, kTileRows), 0, s>>>(static_cast<const U*>(src), static_cast<U*>(dst),
                                                                        batch, rows, cols);
    return check_launch("fp8ort_onnx_transpose_2d");
}

// ---- row copies (Concat) ----
template <int Bytes>
__global__ void __launch_bounds__(kThreads)
    copy_rows_kernel(const typename unit_of<Bytes>::type* __restrict__ src, typename unit_of<Bytes>::type* __restrict__ dst,
                     int64_t rows, int64_t row_units, int64_t src_pitch, int64_t dst_pitch) {
    const int64_t count = rows * row_units;
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
        const int64_t r = i / row_units;
        const int64_t c = i - r * row_units;
        dst[r * dst_pitch + c] = src[r * src_pitch + c];
    }
}

// The widest unit (8, 4, 2 or 1 bytes) dividing every byte count and pointer given.
int unit_for(std::initializer_list<uint64_t> values) {
    uint64_t mask = 0;
    for (uint64_t v : values) mask |= v;
    if ((mask & 7u) == 0) return 8;
    if ((mask & 3u) == 0) return 4;
    if ((mask & 1u) == 0) return 2;
    return 1;
}

template <int Bytes>
fp8ort_status launch_copy_rows(const void* src, void* dst, int64_t rows, int64_t row_bytes, int64_t src_pitch,
                               int64_t dst_pitch, hipStream_t s) {
    using U = typename unit_of<Bytes>::type;
    copy_rows_kernel<Bytes><<<blocks_for(rows * (row_bytes / Bytes)), kThreads, 0, s>>>(
        static_cast<const U*>(src), static_cast<U*>(dst), rows, row_bytes / Bytes, src_pitch / Bytes, dst_pitch / Bytes);
    return check_launch("fp8ort_onnx_copy_rows");
}

// ---- Pad ----
// The position in the cropped window that output position o reads, or -1 for the constant (ops/onnx_shapes.h's
// pad_source, on the device).
__device__ __forceinline__ int64_t pad_source(int64_t o, int64_t before, int64_t len, int mode) {
    const int64_t i = o - before;
    if (i >= 0 && i < len) return i;
    switch (mode) {
        case FP8ORT_PAD_EDGE: return i < 0 ? 0 : len - 1;
        case FP8ORT_PAD_WRAP: return ((i % len) + len) % len;
        case FP8ORT_PAD_REFLECT: return i < 0 ? -i : 2 * (len - 1) - i;
        default: return -1;
    }
}

template <int Bytes>
__global__ void __launch_bounds__(kThreads)
    pad_kernel(const typename unit_of<Bytes>::type* __restrict__ src, typename unit_of<Bytes>::type* __restrict__ dst,
               fp8ort_pad_geometry g, int64_t count) {
    using U = typename unit_of<Bytes>::type;
    const U value = static_cast<U>(g.value_bits);
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
        int64_t rem = i, off = 0;
        bool constant = false;
        for (int d = g.rank - 1; d >= 0; --d) {
            const int64_t q = rem / g.out_dims[d];
            const int64_t c = rem - q * g.out_dims[d];
            rem = q;
            const int64_t j = pad_source(c, g.before[d], g.len[d], g.mode);
            constant = constant || j < 0;
            off += (g.crop[d] + j) * g.src_strides[d];
        }
        dst[i] = constant ? value : src[off];
    }
}

template <int Bytes>
fp8ort_status launch_pad(const void* src, void* dst, const fp8ort_pad_geometry& g, int64_t count, hipStream_t s) {
    using U = typename unit_of<Bytes>::type;
    pad_kernel<Bytes><<<blocks_for(count), kThreads, 0, s>>>(static_cast<const U*>(src), static_cast<U*>(dst), g, count);
    return check_launch("fp8ort_onnx_pad");
}

// ---- Gather ----
template <int Bytes, class Index>
__global__ void __launch_bounds__(kThreads)
    gather_kernel(const typename unit_of<Bytes>::type* __restrict__ data, const Index* __restrict__ indices,
                  typename unit_of<Bytes>::type* __restrict__ out, int64_t outer, int64_t axis_dim, int64_t inner,
                  int64_t index_count) {
    const int64_t count = outer * index_count * inner;
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
        const int64_t t = i / inner;
        const int64_t k = i - t * inner;
        const int64_t o = t / index_count;
        const int64_t j = t - o * index_count;
        int64_t idx = static_cast<int64_t>(indices[j]);
        if (idx < 0) idx += axis_dim;
        out[i] = (idx >= 0 && idx < axis_dim) ? data[(o * axis_dim + idx) * inner + k] : typename unit_of<Bytes>::type{0};
    }
}

template <int Bytes>
fp8ort_status launch_gather(const void* data, const void* indices, int32_t index_type, void* out, int64_t outer,
                            int64_t axis_dim, int64_t inner, int64_t index_count, hipStream_t s) {
    using U = typename unit_of<Bytes>::type;
    const int blocks = blocks_for(outer * index_count * inner);
    if (index_type == FP8ORT_ONNX_INT64)
        gather_kernel<Bytes, long long><<<blocks, kThreads, 0, s>>>(static_cast<const U*>(data), static_cast<const long long*>(indices),
                                                                    static_cast<U*>(out), outer, axis_dim, inner, index_count);
    else
        gather_kernel<Bytes, int32_t><<<blocks, kThreads, 0, s>>>(static_cast<const U*>(data), static_cast<const int32_t*>(indices),
                                                                  static_cast<U*>(out), outer, axis_dim, inner, index_count);
    return check_launch("fp8ort_onnx_gather");
}

// ---- fill ----
template <int Bytes>
__global__ void __launch_bounds__(kThreads)
    fill_kernel(typename unit_of<Bytes>::type* __restrict__ dst, int64_t count, typename unit_of<Bytes>::type value) {
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) dst[i] = value;
}

template <int Bytes>
fp8ort_status launch_fill(void* dst, int64_t count, uint64_t bits, hipStream_t s) {
    using U = typename unit_of<Bytes>::type;
    fill_kernel<Bytes><<<blocks_for(count), kThreads, 0, s>>>(static_cast<U*>(dst), count, static_cast<U>(bits));
    return check_launch("fp8ort_onnx_fill");
}

struct int64_values {
    long long v[FP8ORT_ONNX_MAX_VALUES];
};

__global__ void write_values_kernel(long long* __restrict__ dst, int64_values values, int count) {
    const int i = static_cast<int>(threadIdx.x);
    if (i < count) dst[i] = values.v[i];
}

bool mul_overflows(int64_t a, int64_t b) { return a != 0 && b > INT64_MAX / a; }

// The copy in units of `unit` bytes (16 or 8) where the walk's last dimension is a contiguous run in the source
// whose length, every other source stride, the source offset and both pointers are multiples of it (e.g. an
// attention head transpose [B, S, H, 64] -> [B, H, S, 64] moves 256-byte runs): one N-d walk per unit instead of per
// element. Returns the unit (elem_size when nothing widens) and the walk in those units.
int64_t widen_walk(const fp8ort_nd& nd, int64_t elem_size, const void* src, const void* dst, fp8ort_nd* out) {
    *out = nd;
    if (nd.rank < 1 || nd.strides[0][nd.rank - 1] != 1) return elem_size;
    const int last = nd.rank - 1;
    for (int64_t unit : {int64_t{16}, int64_t{8}}) {
        if (unit <= elem_size) break;
        const int64_t per = unit / elem_size;
        bool ok = nd.dims[last] % per == 0 && nd.offsets[0] % per == 0 &&
                  (reinterpret_cast<uintptr_t>(src) | reinterpret_cast<uintptr_t>(dst)) % unit == 0;
        for (int d = 0; ok && d < last; ++d) ok = nd.strides[0][d] % per == 0;
        if (!ok) continue;
        out->dims[last] = nd.dims[last] / per;
        out->offsets[0] = nd.offsets[0] / per;
        for (int d = 0; d < last; ++d) out->strides[0][d] = nd.strides[0][d] / per;
        return unit;
    }
    return elem_size;
}

}  // namespace
}  // namespace onnx
}  // namespace fp8ort

using namespace fp8ort;
using namespace fp8ort::onnx;

extern "C" fp8ort_status fp8ort_onnx_strided_copy(const void* src, void* dst, int64_t elem_size, const fp8ort_nd* nd,
                                                  void* stream) {
    const char* name = "fp8ort_onnx_strided_copy";
    if (!valid_elem_size(elem_size))
        return fail(FP8ORT_UNSUPPORTED, "%s: element size %lld is not 1, 2, 4 or 8", name, static_cast<long long>(elem_size));
    int64_t count = 0;
    FP8ORT_TRY(check_nd(nd, name, &count));
    if (count == 0) return ok();
    if (!src || !dst) return fail(FP8ORT_INVALID_ARGUMENT, "%s: src and dst must be device pointers, got NULL", name);
    const hipStream_t s = as_stream(stream);
    fp8ort_nd wide;
    const int64_t unit = widen_walk(*nd, elem_size, src, dst, &wide);
    const int64_t units = count / (unit / elem_size > 0 ? unit / elem_size : 1);
    fp8ort_status st;
    switch (unit) {
        case 1: st = launch_strided_copy<1>(src, dst, wide, units, s); break;
        case 2: st = launch_strided_copy<2>(src, dst, wide, units, s); break;
        case 4: st = launch_strided_copy<4>(src, dst, wide, units, s); break;
        case 8: st = launch_strided_copy<8>(src, dst, wide, units, s); break;
        default: st = launch_strided_copy<16>(src, dst, wide, units, s); break;
    }
    return st == FP8ORT_OK ? ok() : st;
}

extern "C" fp8ort_status fp8ort_onnx_transpose_2d(const void* src, void* dst, int64_t elem_size, int64_t batch,
                                                  int64_t rows, int64_t cols, void* stream) {
    const char* name = "fp8ort_onnx_transpose_2d";
    if (!valid_elem_size(elem_size))
        return fail(FP8ORT_UNSUPPORTED, "%s: element size %lld is not 1, 2, 4 or 8", name, static_cast<long long>(elem_size));
    if (batch < 0 || rows < 0 || cols < 0)
        return fail(FP8ORT_INVALID_ARGUMENT, "%s: negative extent (batch %lld, rows %lld, cols %lld)", name,
                    static_cast<long long>(batch), static_cast<long long>(rows), static_cast<long long>(cols));
    if (batch == 0 || rows == 0 || cols == 0) return ok();
    if (mul_overflows(batch, rows) || mul_overflows(batch * rows, cols))
        return fail(FP8ORT_INVALID_ARGUMENT, "%s: more than 2^63 elements", name);
    if (!src || !dst) return fail(FP8ORT_INVALID_ARGUMENT, "%s: src and dst must be device pointers, got NULL", name);
    const hipStream_t s = as_stream(stream);
    fp8ort_status st;
    switch (elem_size) {
        case 1: st = launch_transpose_2d<1>(src, dst, batch, rows, cols, s); break;
        case 2: st = launch_transpose_2d<2>(src, dst, batch, rows, cols, s); break;
        case 4: st = launch_transpose_2d<4>(src, dst, batch, rows, cols, s); break;
        default: st = launch_transpose_2d<8>(src, dst, batch, rows, cols, s); break;
    }
    return st == FP8ORT_OK ? ok() : st;
}

extern "C" fp8ort_status fp8ort_onnx_copy_rows(const void* src, void* dst, int64_t rows, int64_t row_bytes,
                                               int64_t src_pitch, int64_t dst_pitch, void* stream) {
    const char* name = "fp8ort_onnx_copy_rows";
    if (rows < 0 || row_bytes < 0 || src_pitch < row_bytes || dst_pitch < row_bytes)
        return fail(FP8ORT_INVALID_ARGUMENT, "%s: need rows >= 0 and pitches >= row_bytes >= 0; got %lld, %lld, %lld, %lld",
                    name, static_cast<long long>(rows), static_cast<long long>(row_bytes), static_cast<long long>(src_pitch),
                    static_cast<long long>(dst_pitch));
    if (rows == 0 || row_bytes == 0) return ok();
    if (!src || !dst) return fail(FP8ORT_INVALID_ARGUMENT, "%s: src and dst must be device pointers, got NULL", name);
    const hipStream_t s = as_stream(stream);
    const int unit = unit_for({reinterpret_cast<uint64_t>(src), reinterpret_cast<uint64_t>(dst),
                               static_cast<uint64_t>(row_bytes), static_cast<uint64_t>(src_pitch),
                               static_cast<uint64_t>(dst_pitch)});
    fp8ort_status st;
    switch (unit) {
        case 1: st = launch_copy_rows<1>(src, dst, rows, row_bytes, src_pitch, dst_pitch, s); break;
        case 2: st = launch_copy_rows<2>(src, dst, rows, row_bytes, src_pitch, dst_pitch, s); break;
        case 4: st = launch_copy_rows<4>(src, dst, rows, row_bytes, src_pitch, dst_pitch, s); break;
        default: st = launch_copy_rows<8>(src, dst, rows, row_bytes, src_pitch, dst_pitch, s); break;
    }
    return st == FP8ORT_OK ? ok() : st;
}

extern "C" fp8ort_status fp8ort_onnx_copy(const void* src, void* dst, int64_t bytes, void* stream) {
    if (bytes < 0) return fail(FP8ORT_INVALID_ARGUMENT, "fp8ort_onnx_copy: negative size %lld", static_cast<long long>(bytes));
    if (bytes == 0 || src == dst) return ok();
    if (!src || !dst) return fail(FP8ORT_INVALID_ARGUMENT, "fp8ort_onnx_copy: src and dst must be device pointers, got NULL");
    FP8ORT_TRY(check_runtime(hipMemcpyAsync(dst, src, static_cast<size_t>(bytes), hipMemcpyDeviceToDevice, as_stream(stream)),
                             "fp8ort_onnx_copy"));
    return ok();
}

extern "C" fp8ort_status fp8ort_onnx_gather(const void* data, const void* indices, int32_t index_type, void* out,
                                            int64_t elem_size, int64_t outer, int64_t axis_dim, int64_t inner,
                                            int64_t index_count, void* stream) {
    const char* name = "fp8ort_onnx_gather";
    if (!valid_elem_size(elem_size))
        return fail(FP8ORT_UNSUPPORTED, "%s: element size %lld is not 1, 2, 4 or 8", name, static_cast<long long>(elem_size));
    if (index_type != FP8ORT_ONNX_INT64 && index_type != FP8ORT_ONNX_INT32)
        return fail(FP8ORT_UNSUPPORTED, "%s: index type %d is not int64/int32", name, static_cast<int>(index_type));
    if (outer < 0 || axis_dim < 0 || inner < 0 || index_count < 0)
        return fail(FP8ORT_INVALID_ARGUMENT, "%s: negative extent", name);
    if (outer == 0 || inner == 0 || index_count == 0) return ok();
    if (mul_overflows(outer, index_count) || mul_overflows(outer * index_count, inner) ||
        mul_overflows(outer, axis_dim) || mul_overflows(outer * axis_dim, inner))
        return fail(FP8ORT_INVALID_ARGUMENT, "%s: more than 2^63 elements", name);
    if (!indices || !out || (axis_dim > 0 && !data))
        return fail(FP8ORT_INVALID_ARGUMENT, "%s: data, indices and out must be device pointers, got NULL", name);
    const hipStream_t s = as_stream(stream);
    // Rows of `inner` elements move as wider units where sizes and pointers allow (e.g. float16 rows of 64 as 8-byte units).
    const int unit = unit_for({static_cast<uint64_t>(inner * elem_size), reinterpret_cast<uint64_t>(data),
                               reinterpret_cast<uint64_t>(out)});
    const int width = unit > elem_size ? unit : static_cast<int>(elem_size);
    const int64_t units = inner * elem_size / width;
    fp8ort_status st;
    switch (width) {
        case 1: st = launch_gather<1>(data, indices, index_type, out, outer, axis_dim, units, index_count, s); break;
        case 2: st = launch_gather<2>(data, indices, index_type, out, outer, axis_dim, units, index_count, s); break;
        case 4: st = launch_gather<4>(data, indices, index_type, out, outer, axis_dim, units, index_count, s); break;
        default: st = launch_gather<8>(data, indices, index_type, out, outer, axis_dim, units, index_count, s); break;
    }
    return st == FP8ORT_OK ? ok() : st;
}

extern "C" fp8ort_status fp8ort_onnx_fill(void* dst, int64_t elem_size, int64_t count, uint64_t value_bits, void* stream) {
    const char* name = "fp8ort_onnx_fill";
    if (!valid_elem_size(elem_size))
        return fail(FP8ORT_UNSUPPORTED, "%s: element size %lld is not 1, 2, 4 or 8", name, static_cast<long long>(elem_size));
    if (count < 0) return fail(FP8ORT_INVALID_ARGUMENT, "%s: negative count %lld", name, static_cast<long long>(count));
    if (count == 0) return ok();
    if (!dst) return fail(FP8ORT_INVALID_ARGUMENT, "%s: dst must be a device pointer, got NULL", name);
    const hipStream_t s = as_stream(stream);
    fp8ort_status st;
    switch (elem_size) {
        case 1: st = launch_fill<1>(dst, count, value_bits, s); break;
        case 2: st = launch_fill<2>(dst, count, value_bits, s); break;
        case 4: st = launch_fill<4>(dst, count, value_bits, s); break;
        default: st = launch_fill<8>(dst, count, value_bits, s); break;
    }
    return st == FP8ORT_OK ? ok() : st;
}

extern "C" fp8ort_status fp8ort_onnx_write_int64s(int64_t* dst, const int64_t* values, int32_t count, void* stream) {
    const char* name = "fp8ort_onnx_write_int64s";
    if (count < 0 || count > FP8ORT_ONNX_MAX_VALUES)
        return fail(FP8ORT_INVALID_ARGUMENT, "%s: count %d is outside [0, %d]", name, count, FP8ORT_ONNX_MAX_VALUES);
    if (count == 0) return ok();
    if (!dst || !values) return fail(FP8ORT_INVALID_ARGUMENT, "%s: dst and values must not be NULL", name);
    int64_values v{};
    for (int32_t i = 0; i < count; ++i) v.v[i] = static_cast<long long>(values[i]);
    write_values_kernel<<<1, FP8ORT_ONNX_MAX_VALUES, 0, as_stream(stream)>>>(reinterpret_cast<long long*>(dst), v, count);
    const fp8ort_status st = check_launch(name);
    return st == FP8ORT_OK ? ok() : st;
}

extern "C" fp8ort_status fp8ort_onnx_pad(const void* src, void* dst, int64_t elem_size, const fp8ort_pad_geometry* g,
                                         void* stream) {
    const char* name = "fp8ort_onnx_pad";
    if (!g) return fail(FP8ORT_INVALID_ARGUMENT, "%s: the geometry is NULL", name);
    if (!valid_elem_size(elem_size))
        return fail(FP8ORT_UNSUPPORTED, "%s: element size %lld is not 1, 2, 4 or 8", name, static_cast<long long>(elem_size));
    if (g->rank < 1 || g->rank > FP8ORT_ONNX_MAX_RANK)
        return fail(FP8ORT_INVALID_ARGUMENT, "%s: rank %d is outside [1, %d]", name, g->rank, FP8ORT_ONNX_MAX_RANK);
    if (g->mode < FP8ORT_PAD_CONSTANT || g->mode > FP8ORT_PAD_WRAP)
        return fail(FP8ORT_INVALID_ARGUMENT, "%s: unknown mode %d", name, g->mode);
    int64_t count = 1;
    for (int d = 0; d < g->rank; ++d) {
        if (g->out_dims[d] < 0 || g->len[d] < 0 || g->crop[d] < 0 || g->before[d] < 0)
            return fail(FP8ORT_INVALID_ARGUMENT, "%s: negative extent on axis %d", name, d);
        if (g->out_dims[d] > g->len[d] && g->mode != FP8ORT_PAD_CONSTANT && g->len[d] == 0)
            return fail(FP8ORT_INVALID_ARGUMENT, "%s: axis %d has no elements to pad from", name, d);
        if (g->out_dims[d] != 0 && count > INT64_MAX / g->out_dims[d])
            return fail(FP8ORT_INVALID_ARGUMENT, "%s: the output has more than 2^63 elements", name);
        count *= g->out_dims[d];
    }
    if (count == 0) return ok();
    if (!src || !dst) return fail(FP8ORT_INVALID_ARGUMENT, "%s: src and dst must be device pointers, got NULL", name);
    const hipStream_t s = as_stream(stream);
    fp8ort_status st;
    switch (elem_size) {
        case 1: st = launch_pad<1>(src, dst, *g, count, s); break;
        case 2: st = launch_pad<2>(src, dst, *g, count, s); break;
        case 4: st = launch_pad<4>(src, dst, *g, count, s); break;
        default: st = launch_pad<8>(src, dst, *g, count, s); break;
    }
    return st == FP8ORT_OK ? ok() : st;
}
