// Float MatMul/Gemm (strided batched GEMM with broadcast batch offsets) and Conv (implicit GEMM per group, or a
// direct kernel for one input channel per group). Shared-memory tiles of 64x64 outputs, 16 deep, float32
// accumulation; 256 threads, each owning 4x4 outputs spaced 16 apart so a warp's stores are contiguous.
// On NVIDIA, MatMul/Gemm large enough take cuBLASLt where it expresses the problem (nn_gemm_blaslt.h).
#include <cstdlib>

#include "nn_gemm_blaslt.h"
#include "onnx_nn_device.h"

namespace fp8ort {
namespace {

constexpr int kTileM = 64;
constexpr int kTileN = 64;
constexpr int kTileK = 16;
constexpr int kGemmThreads = 256;
constexpr int kThreadsN = 16;  // threads across a tile's columns; kGemmThreads / kThreadsN across its rows
constexpr int kPerThread = 4;  // outputs per thread in each direction: 16 * 4 = 64
constexpr int kTilePad = 4;    // shared-memory row padding
constexpr int kLoadsPerThread = kTileM * kTileK / kGemmThreads;  // 4 values of A and 4 of B per thread and step
static_assert(kTileM == kTileN && kTileM * kTileK % kGemmThreads == 0, "tile shape");
static_assert(kGemmThreads % kTileN == 0, "a thread loads one column of the B tile");

struct tile_smem {
    float a[kTileK][kTileM + kTilePad];  // a[k][m]
    float b[kTileK][kTileN + kTilePad];  // b[k][n]
};

__device__ __forceinline__ void tile_multiply(const tile_smem& s, float (&acc)[kPerThread][kPerThread], int tm, int tn) {
#pragma unroll
    for (int kk = 0; kk < kTileK; ++kk) {
        float av[kPerThread], bv[kPerThread];
#pragma unroll
        for (int i = 0; i < kPerThread; ++i) av[i] = s.a[kk][tm + i * (kGemmThreads / kThreadsN)];
#pragma unroll
        for (int j = 0; j < kPerThread; ++j) bv[j] = s.b[kk][tn + j * kThreadsN];
#pragma unroll
        for (int i = 0; i < kPerThread; ++i)
#pragma unroll
            for (int j = 0; j < kPerThread; ++j) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
    }
}

// ---- MatMul / Gemm ----

template <class T>
__global__ void __launch_bounds__(kGemmThreads)
    gemm_kernel(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ y, fp8ort_nn_gemm g, int64_t batch,
                int64_t tiles_m) {
    __shared__ tile_smem s;
    const int tid = static_cast<int>(threadIdx.x);
    const int tm = tid / kThreadsN, tn = tid % kThreadsN;
    const T* c = static_cast<const T*>(g.c);
    // Load mappings: adjacent threads read adjacent addresses along the operand's contiguous direction.
    const bool a_k_contig = g.a_sk == 1;
    const bool b_n_contig = g.b_sn == 1 || g.b_sk != 1;
    for (int64_t bz = blockIdx.z; bz < batch; bz += gridDim.z) {
        int64_t a_off = 0, b_off = 0, rest = bz;
        for (int d = g.batch_rank - 1; d >= 0; --d) {
            const int64_t idx = rest % g.batch_dims[d];
            rest /= g.batch_dims[d];
            a_off += idx * g.a_batch_strides[d];
            b_off += idx * g.b_batch_strides[d];
        }
        const T* ab = a + a_off;
        const T* bb = b + b_off;
        T* yb = y + bz * g.m * g.n;
        for (int64_t tile_m = blockIdx.y; tile_m < tiles_m; tile_m += gridDim.y) {
            const int64_t m0 = tile_m * kTileM;
            const int64_t n0 = static_cast<int64_t>(blockIdx.x) * kTileN;
            float acc[kPerThread][kPerThread] = {};
            for (int64_t k0 = 0; k0 < g.k; k0 += kTileK) {
#pragma unroll
                for (int l = 0; l < kLoadsPerThread; ++l) {
                    const int e = tid + l * kGemmThreads;
                    const int mm = a_k_contig ? e / kTileK : e % kTileM;
                    const int kk = a_k_contig ? e % kTileK : e / kTileM;
                    const int64_t m = m0 + mm, k = k0 + kk;
                    s.a[kk][mm] = (m < g.m && k < g.k) ? nn::load(ab, m * g.a_sm + k * g.a_sk) : 0.0f;
                }
#pragma unroll
                for (int l = 0; l < kLoadsPerThread; ++l) {
                    const int e = tid + l * kGemmThreads;
                    const int nn_ = b_n_contig ? e % kTileN : e / kTileK;
                    const int kk = b_n_contig ? e / kTileN : e % kTileK;
                    const int64_t n = n0 + nn_, k = k0 + kk;
                    s.b[kk][nn_] = (n < g.n && k < g.k) ? nn::load(bb, k * g.b_sk + n * g.b_sn) : 0.0f;
                }
                __syncthreads();
                tile_multiply(s, acc, tm, tn);
                __syncthreads();
            }
#pragma unroll
            for (int i = 0; i < kPerThread; ++i) {
                const int64_t m = m0 + tm + i * (kGemmThreads / kThreadsN);
                if (m >= g.m) continue;
#pragma unroll
                for (int j = 0; j < kPerThread; ++j) {
                    const int64_t n = n0 + tn + j * kThreadsN;
                    if (n >= g.n) continue;
                    float v = g.alpha * acc[i][j];
                    if (c) v += g.beta * nn::load(c, m * g.c_sm + n * g.c_sn);
                    nn::store(yb, m * g.n + n, v);
                }
            }
        }
    }
}

template <class T>
fp8ort_status launch_gemm(const void* a, const void* b, void* y, const fp8ort_nn_gemm* g, int64_t batch,
                          hipStream_t stream) {
    const int64_t tiles_m = (g->m + kTileM - 1) / kTileM;
    const int64_t tiles_n = (g->n + kTileN - 1) / kTileN;
    const dim3 grid(static_cast<unsigned>(tiles_n), static_cast<unsigned>(nn::clamp_grid(tiles_m, nn::kMaxGridYZ)),
                    static_cast<unsigned>(nn::clamp_grid(batch, nn::kMaxGridYZ)));
    gemm_kernel<T><<<grid, kGemmThreads, 0, stream>>>(static_cast<const T*>(a), static_cast<const T*>(b),
                                                      static_cast<T*>(y), *g, batch, tiles_m);
    return check_launch("fp8ort_nn_gemm_run");
}

// Y[b, m, n] = C(m, n) for every batch: cuBLASLt's C, read in place (it takes no broadcast C).
template <class T>
__global__ void __launch_bounds__(nn::kElementwiseThreads)
    broadcast_c_kernel(const T* __restrict__ c, T* __restrict__ y, int64_t c_sm, int64_t c_sn, int64_t n,
                       int64_t mn, int64_t count) {
    const int64_t grid_stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += grid_stride) {
        const int64_t e = i % mn;
        y[i] = c[(e / n) * c_sm + (e % n) * c_sn];
    }
}

template <class T>
fp8ort_status launch_broadcast_c(const void* c, void* y, int64_t count, const fp8ort_nn_gemm* g, hipStream_t stream) {
    broadcast_c_kernel<T><<<nn::elementwise_blocks(count), nn::kElementwiseThreads, 0, stream>>>(
        static_cast<const T*>(c), static_cast<T*>(y), g->c_sm, g->c_sn, g->n, g->m * g->n, count);
    return check_launch("fp8ort_nn_gemm_run (C into Y)");
}

fp8ort_status c_into_y(const void* c, void* y, fp8ort_dtype type, const fp8ort_nn_gemm& g, hipStream_t stream) {
    int64_t count = g.m * g.n;
    for (int d = 0; d < g.batch_rank; ++d) count *= g.batch_dims[d];
    return FP8ORT_NN_DISPATCH(type, launch_broadcast_c, c, y, count, &g, stream);
}

// ---- Conv ----

// Implicit GEMM for group `g`: rows = output channels of the group, columns = (image, oy, ox), depth = (c, ky, kx).
template <class T>
__global__ void __launch_bounds__(kGemmThreads)
    conv_gemm_kernel(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ bias, T* __restrict__ y,
                     fp8ort_nn_conv2d p, int64_t tiles_m) {
    __shared__ tile_smem s;
    const int tid = static_cast<int>(threadIdx.x);
    const int tm = tid / kThreadsN, tn = tid % kThreadsN;
    const int64_t mg = p.out_c / p.group, cg = p.in_c / p.group;
    const int64_t taps = p.kernel_h * p.kernel_w;
    const int64_t depth = cg * taps;
    const int64_t pixels = p.out_h * p.out_w;
    const int64_t cols = p.batch * pixels;
    const int64_t in_plane = p.in_h * p.in_w;
    const int64_t n0 = static_cast<int64_t>(blockIdx.x) * kTileN;
    // This thread loads column b_col of every B tile: decode it once.
    const int b_col = tid % kTileN;
    const int b_k0 = tid / kTileN;
    const int64_t col = n0 + b_col;
    const bool col_ok = col < cols;
    const int64_t img = col_ok ? col / pixels : 0;
    const int64_t pix = col_ok ? col - img * pixels : 0;
    const int64_t iy0 = (pix / p.out_w) * p.stride_h - p.pad_top;
    const int64_t ix0 = (pix % p.out_w) * p.stride_w - p.pad_left;
    for (int64_t grp = blockIdx.z; grp < p.group; grp += gridDim.z) {
        const T* wg = w + grp * mg * depth;
        const T* xg = x + (img * p.in_c + grp * cg) * in_plane;
        for (int64_t tile_m = blockIdx.y; tile_m < tiles_m; tile_m += gridDim.y) {
            const int64_t m0 = tile_m * kTileM;
            float acc[kPerThread][kPerThread] = {};
            for (int64_t k0 = 0; k0 < depth; k0 += kTileK) {
#pragma unroll
                for (int l = 0; l < kLoadsPerThread; ++l) {
                    const int e = tid + l * kGemmThreads;
                    const int mm = e / kTileK, kk = e % kTileK;
                    const int64_t m = m0 + mm, k = k0 + kk;
                    s.a[kk][mm] = (m < mg && k < depth) ? nn::load(wg, m * depth + k) : 0.0f;
                }
#pragma unroll
                for (int l = 0; l < kLoadsPerThread; ++l) {
                    const int kk = b_k0 + l * (kGemmThreads / kTileN);
                    const int64_t k = k0 + kk;
                    float v = 0.0f;
                    if (col_ok && k < depth) {
                        const int64_t c = k / taps, t = k - c * taps;
                        const int64_t ky = t / p.kernel_w, kx = t - ky * p.kernel_w;
                        const int64_t iy = iy0 + ky * p.dilation_h, ix = ix0 + kx * p.dilation_w;
                        if (iy >= 0 && iy < p.in_h && ix >= 0 && ix < p.in_w)
                            v = nn::load(xg, c * in_plane + iy * p.in_w + ix);
                    }
                    s.b[kk][b_col] = v;
                }
                __syncthreads();
                tile_multiply(s, acc, tm, tn);
                __syncthreads();
            }
#pragma unroll
            for (int i = 0; i < kPerThread; ++i) {
                const int64_t m = m0 + tm + i * (kGemmThreads / kThreadsN);
                if (m >= mg) continue;
                const int64_t oc = grp * mg + m;
                const float bv = bias ? nn::load(bias, oc) : 0.0f;
#pragma unroll
                for (int j = 0; j < kPerThread; ++j) {
                    const int64_t cn = n0 + tn + j * kThreadsN;
                    if (cn >= cols) continue;
                    const int64_t im = cn / pixels, px = cn - im * pixels;
                    nn::store(y, (im * p.out_c + oc) * pixels + px, acc[i][j] + bv);
                }
            }
        }
    }
}

// One input channel per group (depthwise and its channel multipliers): one thread per output value.
template <class T>
__global__ void __launch_bounds__(nn::kElementwiseThreads)
    conv_direct_kernel(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ bias,
                       T* __restrict__ y, fp8ort_nn_conv2d p, int64_t count) {
    const int64_t grid_stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    const int64_t mg = p.out_c / p.group;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += grid_stride) {
        const int64_t ox = i % p.out_w;
        const int64_t oy = (i / p.out_w) % p.out_h;
        const int64_t oc = (i / (p.out_w * p.out_h)) % p.out_c;
        const int64_t img = i / (p.out_w * p.out_h * p.out_c);
        const int64_t ic = oc / mg;  // in_c == group here
        const T* xp = x + (img * p.in_c + ic) * p.in_h * p.in_w;
        const T* wp = w + oc * p.kernel_h * p.kernel_w;
        float acc = bias ? nn::load(bias, oc) : 0.0f;
        const int64_t y0 = oy * p.stride_h - p.pad_top, x0 = ox * p.stride_w - p.pad_left;
        for (int64_t ky = 0; ky < p.kernel_h; ++ky) {
            const int64_t iy = y0 + ky * p.dilation_h;
            if (iy < 0 || iy >= p.in_h) continue;
            for (int64_t kx = 0; kx < p.kernel_w; ++kx) {
                const int64_t ix = x0 + kx * p.dilation_w;
                if (ix < 0 || ix >= p.in_w) continue;
                acc = fmaf(nn::load(wp, ky * p.kernel_w + kx), nn::load(xp, iy * p.in_w + ix), acc);
            }
        }
        nn::store(y, i, acc);
    }
}

template <class T>
fp8ort_status launch_conv(const void* x, const void* w, const void* bias, void* y, const fp8ort_nn_conv2d* p,
                          hipStream_t stream) {
    const T* xt = static_cast<const T*>(x);
    const T* wt = static_cast<const T*>(w);
    const T* bt = static_cast<const T*>(bias);
    T* yt = static_cast<T*>(y);
    if (p->in_c == p->group) {
        const int64_t count = p->batch * p->out_c * p->out_h * p->out_w;
        conv_direct_kernel<T><<<nn::elementwise_blocks(count), nn::kElementwiseThreads, 0, stream>>>(xt, wt, bt, yt,
                                                                                                     *p, count);
        return check_launch("fp8ort_nn_conv2d_run (direct)");
    }
    const int64_t mg = p->out_c / p->group;
    const int64_t cols = p->batch * p->out_h * p->out_w;
    const int64_t tiles_m = (mg + kTileM - 1) / kTileM;
    const int64_t tiles_n = (cols + kTileN - 1) / kTileN;
    const dim3 grid(static_cast<unsigned>(tiles_n), static_cast<unsigned>(nn::clamp_grid(tiles_m, nn::kMaxGridYZ)),
                    static_cast<unsigned>(nn::clamp_grid(p->group, nn::kMaxGridYZ)));
    conv_gemm_kernel<T><<<grid, kGemmThreads, 0, stream>>>(xt, wt, bt, yt, *p, tiles_m);
    return check_launch("fp8ort_nn_conv2d_run (implicit GEMM)");
}

}  // namespace
}  // namespace fp8ort

using namespace fp8ort;

namespace {

// The batch count, or -1 with the error set.
int64_t gemm_batch(const char* me, const fp8ort_nn_gemm* g) {
    if (g->batch_rank < 0 || g->batch_rank > FP8ORT_NN_MAX_RANK) {
        fail(FP8ORT_INVALID_ARGUMENT, "%s: %d batch dimensions (at most %d)", me, g->batch_rank, FP8ORT_NN_MAX_RANK);
        return -1;
    }
    int64_t batch = 1;
    for (int d = 0; d < g->batch_rank; ++d) {
        if (g->batch_dims[d] < 0) {
            fail(FP8ORT_INVALID_ARGUMENT, "%s: negative batch dimension", me);
            return -1;
        }
        batch *= g->batch_dims[d];
    }
    return batch;
}

}  // namespace

extern "C" size_t fp8ort_nn_gemm_workspace_bytes(fp8ort_dtype type, const fp8ort_nn_gemm* g) {
    if (!g || g->m < 0 || g->n < 0 || g->k < 0) return 0;
    const int64_t batch = gemm_batch("fp8ort_nn_gemm_workspace_bytes", g);
    if (batch <= 0) return 0;
    return nn_gemm_blaslt_workspace_bytes(type, *g, batch);
}

extern "C" fp8ort_status fp8ort_nn_gemm_run_ws(const void* a, const void* b, void* y, fp8ort_dtype type,
                                               const fp8ort_nn_gemm* g, void* workspace, size_t workspace_bytes,
                                               void* stream) {
    const char* me = "fp8ort_nn_gemm_run";
    if (!nn::is_nn_type(type)) return fail(FP8ORT_INVALID_ARGUMENT, "%s: type %s is not float32/float16", me, dtype_name(type));
    if (!g) return fail(FP8ORT_INVALID_ARGUMENT, "%s: parameters are NULL", me);
    if (g->m < 0 || g->n < 0 || g->k < 0) return fail(FP8ORT_INVALID_ARGUMENT, "%s: negative size", me);
    const int64_t batch = gemm_batch(me, g);
    if (batch < 0) return FP8ORT_INVALID_ARGUMENT;
    if (batch == 0 || g->m == 0 || g->n == 0) return ok();
    const int64_t tiles_n = (g->n + kTileN - 1) / kTileN;
    if (tiles_n > nn::kMaxGridX) return fail(FP8ORT_UNSUPPORTED, "%s: n = %lld is too large", me, static_cast<long long>(g->n));
    if (!y || (g->k > 0 && (!a || !b))) return fail(FP8ORT_INVALID_ARGUMENT, "%s: a, b and y must be device pointers, got NULL", me);
    const float_gemm_backend backend = nn_gemm_backend();
    if (backend == float_gemm_backend::kInvalid)
        return fail(FP8ORT_INVALID_ARGUMENT, "%s: FP8ORT_FLOAT_GEMM=%s: use ours, blaslt or auto", me,
                    std::getenv("FP8ORT_FLOAT_GEMM"));
    const hipStream_t s = as_stream(stream);
    if (backend != float_gemm_backend::kOurs) {
        const fp8ort_status st = nn_gemm_blaslt(a, b, y, type, *g, batch, c_into_y, workspace, workspace_bytes, s);
        if (st == FP8ORT_OK) return ok();
        if (st != FP8ORT_UNSUPPORTED || backend == float_gemm_backend::kBlasLt) return st;  // message already set
    }
    FP8ORT_TRY(FP8ORT_NN_DISPATCH(type, launch_gemm, a, b, y, g, batch, s));
    return ok();
}

extern "C" fp8ort_status fp8ort_nn_gemm_run(const void* a, const void* b, void* y, fp8ort_dtype type,
                                            const fp8ort_nn_gemm* g, void* stream) {
    return fp8ort_nn_gemm_run_ws(a, b, y, type, g, nullptr, 0, stream);
}

extern "C" fp8ort_status fp8ort_nn_conv2d_run(const void* x, const void* w, const void* bias, void* y,
                                              fp8ort_dtype type, const fp8ort_nn_conv2d* p, void* stream) {
    const char* me = "fp8ort_nn_conv2d_run";
    if (!nn::is_nn_type(type)) return fail(FP8ORT_INVALID_ARGUMENT, "%s: type %s is not float32/float16", me, dtype_name(type));
    if (!p) return fail(FP8ORT_INVALID_ARGUMENT, "%s: parameters are NULL", me);
    if (p->batch < 0 || p->in_c < 0 || p->in_h < 0 || p->in_w < 0 || p->out_c < 0 || p->out_h < 0 || p->out_w < 0)
        return fail(FP8ORT_INVALID_ARGUMENT, "%s: negative size", me);
    if (p->group < 1 || p->in_c % p->group != 0 || p->out_c % p->group != 0)
        return fail(FP8ORT_INVALID_ARGUMENT, "%s: group %lld does not divide the channel counts %lld and %lld", me,
                    static_cast<long long>(p->group), static_cast<long long>(p->in_c), static_cast<long long>(p->out_c));
    if (p->kernel_h < 1 || p->kernel_w < 1 || p->stride_h < 1 || p->stride_w < 1 || p->dilation_h < 1 || p->dilation_w < 1)
        return fail(FP8ORT_INVALID_ARGUMENT, "%s: kernel, strides and dilations must be >= 1", me);
    const int64_t count = p->batch * p->out_c * p->out_h * p->out_w;
    if (count == 0) return ok();
    if (p->in_c == 0) return fail(FP8ORT_INVALID_ARGUMENT, "%s: no input channels", me);
    const int64_t tiles_n = (p->batch * p->out_h * p->out_w + kTileN - 1) / kTileN;
    if (tiles_n > nn::kMaxGridX) return fail(FP8ORT_UNSUPPORTED, "%s: output too large", me);
    if (!x || !w || !y) return fail(FP8ORT_INVALID_ARGUMENT, "%s: x, w and y must be device pointers, got NULL", me);
    FP8ORT_TRY(FP8ORT_NN_DISPATCH(type, launch_conv, x, w, bias, y, p, as_stream(stream)));
    return ok();
}
