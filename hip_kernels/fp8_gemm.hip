// FP8 GEMM: weight packing, device capability checks and the fp8ort_gemm entry point, which picks the
// sm90a wgmma kernel (fp8_gemm_sm90.hip) when it can run and the portable kernel (fp8_gemm_core.h) otherwise.
#include <atomic>
#include <stdlib.h>
#include <string.h>

#include "fp8_epilogue_apply.h"
#include "fp8_gemm_core.h"
#include "fp8_gemm_sm90.h"

namespace fp8ort {
namespace {

constexpr int kPackTile = 32;
std::atomic<int> g_kernel_override{0};
std::atomic<int> g_silu_variant{0};  // fp8ort_epilogue_set_silu_variant: 0 the environment's choice, 1 call, 2 inline
std::atomic<int> g_z_ahead{0};       // fp8ort_epilogue_set_z_ahead: 0 the environment's choice, 1 off, 2 on
std::atomic<int> g_wide_stream{0};   // fp8ort_gemm_set_wide_stream: 0 the environment's choice, 1 off, 2 on
std::atomic<int> g_rows_fast{0};     // fp8ort_epilogue_set_fast_rows: 0 the environment's choice, 1 off, 2 on
std::atomic<int> g_pdl{0};           // fp8ort_launch_set_pdl: 0 the environment's choice, 1 off, 2 on

// [K, N] -> [N, K] through a shared-memory tile, so both sides stay coalesced.
__global__ void transpose_kn_kernel(const uint8_t* __restrict__ w, int64_t k, int64_t n, uint8_t* __restrict__ out) {
    __shared__ uint8_t tile[kPackTile][kPackTile + 1];
    const int64_t k0 = static_cast<int64_t>(blockIdx.y) * kPackTile;
    const int64_t n0 = static_cast<int64_t>(blockIdx.x) * kPackTile;
    for (int r = threadIdx.y; r < kPackTile; r += blockDim.y) {
        const int64_t kk = k0 + r, nn = n0 + threadIdx.x;
        if (kk < k && nn < n) tile[r][threadIdx.x] = w[kk * n + nn];
    }
    __syncthreads();
    for (int r = threadIdx.y; r < kPackTile; r += blockDim.y) {
        const int64_t nn = n0 + r, kk = k0 + threadIdx.x;
        if (kk < k && nn < n) out[nn * k + kk] = tile[threadIdx.x][r];
    }
}

// ---- Small K on the vector units (automatic where it applies; override 7 forces it where it applies) ----
// EfficientNet's expand and project 1x1 convolutions have K = 16..40 and millions of rows: the tensor-core tile
// kernels then idle their matrix units and run little more than their epilogue at a quarter of the warps (the
// 16 -> 96 expand at 112x112, batch 256: 1.23 ms against cuDNN FP16's 0.31 on an H100, 1.00 ms here; the 32 -> 16
// project 0.70 -> 0.26 ms; EfficientNet-B0 +2.5% at batch 256, bench/NOTES.md). Here a block
// decodes its column chunk of the weight (up to 128 columns) into shared memory once, then walks row tiles: it
// decodes kSkRows * groups rows of A into shared memory (transposed, [k][row]), and a thread sums four rows of four
// columns in float32 in k order (exact FP8 products, one FMA each), then runs the four-column epilogue per row.
constexpr int kSkThreads = 256;
constexpr int kSkMaxQuads = 32;  // columns per block / 4
constexpr int kSkRows = 4;       // rows per thread
constexpr int kSkMaxRowQuads = kSkThreads / kSkMaxQuads * 8;  // row groups a block takes: the rows xs holds / 4
constexpr int kSmallKOverride = 7;  // fp8ort_gemm_set_kernel_override / FP8ORT_GEMM_KERNEL value

struct small_k_args {
    int64_t m, n;
    int quads, groups;  // column quads per block (<= 32), row groups (quads * groups <= 256 threads)
};

template <int K, int Y>
__global__ void __launch_bounds__(kSkThreads)
    small_k_kernel(const uint8_t* __restrict__ a, const uint8_t* __restrict__ b, small_k_args g, epilogue_args ep) {
    __shared__ float4 ws[K][kSkMaxQuads];                    // decoded weight, [k][column quad]
    __shared__ float4 xs[K][kSkMaxRowQuads];                 // decoded rows, [k][row quad]
    const int q = threadIdx.x % g.quads, group = threadIdx.x / g.quads;
    const int64_t col = (static_cast<int64_t>(blockIdx.y) * g.quads + q) * 4;
    const int rows_per_tile = g.groups * kSkRows;
    for (int e = threadIdx.x; e < K * g.quads; e += blockDim.x) {  // column quad e % quads, k = e / quads
        const int qq = e % g.quads, kk = e / g.quads;
        const int64_t c = (static_cast<int64_t>(blockIdx.y) * g.quads + qq) * 4;
        float d[4];
#pragma unroll
        for (int i = 0; i < 4; ++i) d[i] = c + i < g.n ? decode_fp8<FP8ORT_E4M3FN>(b[(c + i) * K + kk]) : 0.0f;
        ws[kk][qq] = make_float4(d[0], d[1], d[2], d[3]);
    }
    const bool active = group < g.groups && col < g.n;
    const int count = g.n - col >= 4 ? 4 : static_cast<int>(g.n - col);
    column_consts cc[4];
    epilogue_scalars sc{};
    if (active) {
#pragma unroll
        for (int e = 0; e < 4; ++e) cc[e] = e < count ? load_column(ep, col + e) : column_consts{0.0f, 0.0f};
        sc = load_scalars(ep);
    }
    const bool vec_y = count == 4 && ep.ld % 4 == 0 && reinterpret_cast<uintptr_t>(ep.y) % 16 == 0;
    const bool vec_z = count == 4 && ep.z && ep.ld % 4 == 0 && reinterpret_cast<uintptr_t>(ep.z) % 16 == 0;
    for (int64_t row0 = static_cast<int64_t>(blockIdx.x) * rows_per_tile; row0 < g.m;
         row0 += static_cast<int64_t>(gridDim.x) * rows_per_tile) {
        __syncthreads();  // the previous tile's rows are read (and, the first time, the weight is written)
        // the tile's rows, 4 bytes (4 values of k) per item: row r = e % rows, k quad = e / rows
        for (int e = threadIdx.x; e < rows_per_tile * (K / 4); e += blockDim.x) {
            const int r = e % rows_per_tile, kq = e / rows_per_tile;
            float d[4] = {0.0f, 0.0f, 0.0f, 0.0f};
            if (row0 + r < g.m)
                decode4_fp8<FP8ORT_E4M3FN>(*reinterpret_cast<const uint32_t*>(a + (row0 + r) * K + 4 * kq), d);
            float* dst = reinterpret_cast<float*>(xs);
#pragma unroll
            for (int i = 0; i < 4; ++i) dst[(4 * kq + i) * kSkMaxRowQuads * 4 + r] = d[i];
        }
        __syncthreads();
        if (!active) continue;
        float acc[kSkRows][4];
#pragma unroll
        for (int r = 0; r < kSkRows; ++r)
#pragma unroll
            for (int e = 0; e < 4; ++e) acc[r][e] = 0.0f;
#pragma unroll
        for (int kk = 0; kk < K; ++kk) {
            const float4 x = xs[kk][group];  // rows 4 * group .. 4 * group + 3
            const float4 w = ws[kk][q];
            const float xr[4] = {x.x, x.y, x.z, x.w}, wc[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
            for (int r = 0; r < kSkRows; ++r)
#pragma unroll
                for (int e = 0; e < 4; ++e) acc[r][e] = fp8ort_fma_exact_product(xr[r], wc[e], acc[r][e]);
        }
#pragma unroll
        for (int r = 0; r < kSkRows; ++r) {
            const int64_t row = row0 + kSkRows * group + r;
            if (row < g.m) epilogue_quad<Y, true>(ep, sc, cc, acc[r], row * ep.ld + col, count, vec_y, vec_z);
        }
    }
}

// Whether the small-K kernel takes a problem (A and B unchecked when null; the output type when 0).
bool small_k_applies(fp8ort_fp8_format format, int64_t m, int64_t n, int64_t k, const void* a, const void* b,
                     int y_type) {
    if (format != FP8ORT_E4M3FN || (k != 8 && k != 16 && k != 24 && k != 32) || m >= (int64_t{1} << 40)) return false;
    if (y_type != 0 && y_type != FP8ORT_FLOAT && y_type != FP8ORT_FLOAT16 && y_type != FP8ORT_E4M3FN) return false;
    if (a && reinterpret_cast<uintptr_t>(a) % 4) return false;  // rows are read 4 bytes at a time (K % 4 == 0)
    return n > 0 && (n + 4 * kSkMaxQuads - 1) / (4 * kSkMaxQuads) <= 65535;
}

template <int K>
fp8ort_status launch_small_k_k(const uint8_t* a, const uint8_t* b, int64_t m, int64_t n, const epilogue_args& ep,
                               hipStream_t stream) {
    small_k_args g;
    g.m = m, g.n = n;
    const int64_t quads = (n + 3) / 4;
    g.quads = static_cast<int>(quads < kSkMaxQuads ? quads : kSkMaxQuads);
    g.groups = kSkThreads / g.quads < kSkMaxRowQuads ? kSkThreads / g.quads : kSkMaxRowQuads;
    const int threads = g.quads * g.groups;
    const int64_t rows_per_tile = static_cast<int64_t>(g.groups) * kSkRows;
    const int64_t tiles = (m + rows_per_tile - 1) / rows_per_tile;
    const int64_t want = static_cast<int64_t>(multiprocessors()) * 8;
    const dim3 grid(static_cast<unsigned>(tiles < want ? tiles : want),
                    static_cast<unsigned>((quads + g.quads - 1) / g.quads));
    switch (ep.y_type) {  // the output types small_k_applies takes
        case FP8ORT_FLOAT: small_k_kernel<K, FP8ORT_FLOAT><<<grid, threads, 0, stream>>>(a, b, g, ep); break;
        case FP8ORT_FLOAT16: small_k_kernel<K, FP8ORT_FLOAT16><<<grid, threads, 0, stream>>>(a, b, g, ep); break;
        default: small_k_kernel<K, FP8ORT_E4M3FN><<<grid, threads, 0, stream>>>(a, b, g, ep); break;
    }
    return check_launch("fp8ort_gemm (small K)");
}

fp8ort_status launch_small_k(const uint8_t* a, const uint8_t* b, int64_t m, int64_t n, int64_t k,
                             const epilogue_args& ep, hipStream_t stream) {
    switch (k) {
        case 8: return launch_small_k_k<8>(a, b, m, n, ep, stream);
        case 16: return launch_small_k_k<16>(a, b, m, n, ep, stream);
        case 24: return launch_small_k_k<24>(a, b, m, n, ep, stream);
        default: return launch_small_k_k<32>(a, b, m, n, ep, stream);
    }
}

template <fp8ort_fp8_format F>
fp8ort_status launch_gemm_core(const uint8_t* a, const uint8_t* b, int64_t m, int64_t n, int64_t k,
                               const epilogue_args& ep, hipStream_t stream) {
    const matrix_source a_src{a, m, k, k};
    const bool vec_a = (k % 16 == 0) && (reinterpret_cast<uintptr_t>(a) % 16 == 0);
    return launch_core<F>(a_src, vec_a, b, m, n, k, 1, ep, stream, "fp8ort_gemm");
}

struct device_info {
    int arch;  // NVIDIA: 10 * major + minor; AMD: the gfx number (942, 1100, 1201, ...)
};

// Looked up once per device: hipGetDeviceProperties is slow on ROCm.
fp8ort_status current_device(device_info* info) {
    constexpr int kMaxDevices = 64;
    static std::atomic<int> cache[kMaxDevices];
    int dev = 0;
    FP8ORT_TRY(check_runtime(hipGetDevice(&dev), "hipGetDevice"));
    if (dev >= 0 && dev < kMaxDevices && cache[dev].load() > 0) {
        info->arch = cache[dev].load();
        return FP8ORT_OK;
    }
#if defined(FP8ORT_CUDA)
    int major = 0, minor = 0;
    FP8ORT_TRY(check_runtime(hipDeviceGetAttribute(&major, hipDeviceAttributeComputeCapabilityMajor, dev), "compute capability"));
    FP8ORT_TRY(check_runtime(hipDeviceGetAttribute(&minor, hipDeviceAttributeComputeCapabilityMinor, dev), "compute capability"));
    info->arch = major * 10 + minor;
#else
    hipDeviceProp_t prop;
    FP8ORT_TRY(check_runtime(hipGetDeviceProperties(&prop, dev), "hipGetDeviceProperties"));
    // "gfx942:sramecc+:xnack-" -> 942; letters (gfx90a) end the number
    char digits[8] = {0};
    for (int i = 0; i < 7 && prop.gcnArchName[3 + i] >= '0' && prop.gcnArchName[3 + i] <= '9'; ++i) digits[i] = prop.gcnArchName[3 + i];
    info->arch = static_cast<int>(strtol(digits, nullptr, 10));
#endif
    if (dev >= 0 && dev < kMaxDevices) cache[dev].store(info->arch);
    return FP8ORT_OK;
}

}  // namespace

fp8ort_status core_supports(const char* op, fp8ort_fp8_format format) {
    device_info dev;
    FP8ORT_TRY(current_device(&dev));
    const bool ocp = format == FP8ORT_E4M3FN || format == FP8ORT_E5M2;
#if defined(FP8ORT_CUDA)
    if (dev.arch < 89)
        return fail(FP8ORT_UNSUPPORTED, "%s: FP8 matrix instructions need compute capability 8.9 or newer, this GPU is %d.%d",
                    op, dev.arch / 10, dev.arch % 10);
    if (!ocp)
        return fail(FP8ORT_UNSUPPORTED, "%s: NVIDIA GPUs multiply float8e4m3fn and float8e5m2, not %s; quantize the model "
                    "for an OCP format", op, dtype_name(format));
#else
    const bool gfx11 = dev.arch >= 1100 && dev.arch < 1200;
    const bool gfx12 = dev.arch >= 1200 && dev.arch < 1300;
    const bool fnuz_mfma = dev.arch == 942;
    const bool ocp_mfma = dev.arch == 950;
    if (!(gfx11 || gfx12 || fnuz_mfma || ocp_mfma))
        return fail(FP8ORT_UNSUPPORTED, "%s: no FP8 GEMM kernel for gfx%d (supported: gfx942, gfx950, gfx11, gfx12)", op, dev.arch);
    if (fnuz_mfma && ocp)
        return fail(FP8ORT_UNSUPPORTED, "%s: gfx942 multiplies FNUZ FP8 only, not %s; quantize for float8e4m3fnuz", op, dtype_name(format));
    if ((gfx12 || ocp_mfma) && !ocp)
        return fail(FP8ORT_UNSUPPORTED, "%s: gfx%d multiplies OCP FP8 only, not %s", op, dev.arch, dtype_name(format));
#endif
    return FP8ORT_OK;
}

fp8ort_status current_gpu_arch(int* arch) {
    device_info dev;
    FP8ORT_TRY(current_device(&dev));
    *arch = dev.arch;
    return FP8ORT_OK;
}

int override_from_env(const char* name, char lo, char hi) {
    const char* v = getenv(name);
    return v && v[0] >= lo && v[0] <= hi && v[1] == '\0' ? v[0] - '0' : 0;
}

int on_off_from_env(const char* name) {
    const char* v = getenv(name);
    if (v && strcmp(v, "on") == 0) return 2;
    if (v && strcmp(v, "off") == 0) return 1;
    return 0;
}

int gemm_kernel_override() {
    // FP8ORT_GEMM_KERNEL=1..8 is fp8ort_gemm_set_kernel_override's value for a library loaded by ORT, where that
    // cannot be called: whole-model A/B runs of the GEMM variants (read once; the call takes precedence).
    static const int from_env = override_from_env("FP8ORT_GEMM_KERNEL", '1', '8');
    const int which = g_kernel_override.load();
    return which != 0 ? which : from_env;
}

int conv_kernel_override() {
    // FP8ORT_CONV_KERNEL=4|5 (one or two blocks per multiprocessor) forces the sm90a convolution variant in a library
    // loaded by ORT: the bench's A/B of the two variants.
    static const int from_env = override_from_env("FP8ORT_CONV_KERNEL", '4', '5');
    const int which = gemm_kernel_override();
    return which != 0 ? which : from_env;
}

// Whether fp8ort_gemm runs this problem on the small-K kernel: no override (or override 7) and a problem it takes
// (pointers and the output type unchecked when null / 0).
static bool takes_small_k(fp8ort_fp8_format format, int64_t m, int64_t n, int64_t k, const void* a, const void* b,
                          int y_type) {
    const int which = gemm_kernel_override();
    return (which == 0 || which == kSmallKOverride) && small_k_applies(format, m, n, k, a, b, y_type);
}

bool gemm_takes_sm90(fp8ort_fp8_format format, int64_t m, int64_t n, int64_t k) {
    return !takes_small_k(format, m, n, k, nullptr, nullptr, 0) && gemm_kernel_override() != 1 && device_is_sm90() &&
           sm90_can_run(format, m, n, k);
}

bool tile_silu_inline() {
    static const bool from_env = [] {
        const char* v = getenv("FP8ORT_TILE_SILU");  // inline unless "call" (inline measured faster, bench/NOTES.md)
        return !(v && strcmp(v, "call") == 0);
    }();
    const int which = g_silu_variant.load();
    return which == 0 ? from_env : which == 2;
}

bool tile_z_ahead() {
    static const int from_env = on_off_from_env("FP8ORT_Z_AHEAD");
    const int which = g_z_ahead.load();
    return (which != 0 ? which : from_env) != 1;  // on unless turned off
}

bool tile_rows_fast() {
    static const int from_env = on_off_from_env("FP8ORT_FAST_ROWS");
    const int which = g_rows_fast.load();
    // on unless turned off: ResNet-50 +16% at batch 256 on an H100 (bench/NOTES.md, 2026-12-06)
    return (which != 0 ? which : from_env) != 1;
}

bool pdl_wanted() {
    static const int from_env = on_off_from_env("FP8ORT_PDL");
    const int which = g_pdl.load();
    // on unless turned off: ResNet-50 +2% at batch 1 and 32 with graphs, +5-7% without, batch 256 level (H100,
    // bench/NOTES.md, 2026-12-07); sm_90 only: the kernels that wait for it are Hopper's
    return (which != 0 ? which : from_env) != 1 && device_is_sm90();
}

bool wide_stream_wanted() {
    static const int from_env = on_off_from_env("FP8ORT_WIDE_STREAM");
    const int which = g_wide_stream.load();
    return (which != 0 ? which : from_env) == 2;  // off unless turned on: not yet measured
}

bool device_is_sm90() {
#if defined(FP8ORT_CUDA)
    device_info dev;
    return current_device(&dev) == FP8ORT_OK && dev.arch == 90;
#else
    return false;
#endif
}

}  // namespace fp8ort

using namespace fp8ort;

extern "C" size_t fp8ort_gemm_packed_bytes(int64_t n, int64_t k) {
    return (n > 0 && k > 0) ? static_cast<size_t>(n) * static_cast<size_t>(k) : 0;
}

extern "C" fp8ort_status fp8ort_gemm_pack_weight(const void* w, int trans_b, int64_t k, int64_t n, void* packed,
                                                 void* stream) {
    if (k <= 0 || n <= 0) return fail(FP8ORT_INVALID_ARGUMENT, "fp8ort_gemm_pack_weight: K=%lld and N=%lld must be positive",
                                      static_cast<long long>(k), static_cast<long long>(n));
    if (!w || !packed) return fail(FP8ORT_INVALID_ARGUMENT, "fp8ort_gemm_pack_weight: NULL pointer");
    const hipStream_t s = as_stream(stream);
    if (trans_b) {  // already [N, K]
        FP8ORT_TRY(check_runtime(hipMemcpyAsync(packed, w, static_cast<size_t>(n * k), hipMemcpyDeviceToDevice, s),
                                 "fp8ort_gemm_pack_weight: copy"));
        return ok();
    }
    const dim3 grid(static_cast<unsigned>((n + kPackTile - 1) / kPackTile), static_cast<unsigned>((k + kPackTile - 1) / kPackTile));
    if (grid.y > 65535) return fail(FP8ORT_INVALID_ARGUMENT, "fp8ort_gemm_pack_weight: K=%lld is too large", static_cast<long long>(k));
    transpose_kn_kernel<<<grid, dim3(kPackTile, 8), 0, s>>>(static_cast<const uint8_t*>(w), k, n, static_cast<uint8_t*>(packed));
    FP8ORT_TRY(check_launch("fp8ort_gemm_pack_weight"));
    return ok();
}

extern "C" void fp8ort_gemm_set_kernel_override(int which) { g_kernel_override.store(which); }

extern "C" void fp8ort_epilogue_set_silu_variant(int which) { g_silu_variant.store(which == 1 || which == 2 ? which : 0); }

extern "C" void fp8ort_epilogue_set_z_ahead(int which) { g_z_ahead.store(which == 1 || which == 2 ? which : 0); }

extern "C" void fp8ort_epilogue_set_fast_rows(int which) { g_rows_fast.store(which == 1 || which == 2 ? which : 0); }

extern "C" void fp8ort_launch_set_pdl(int which) { g_pdl.store(which == 1 || which == 2 ? which : 0); }

extern "C" void fp8ort_gemm_set_wide_stream(int which) { g_wide_stream.store(which == 1 || which == 2 ? which : 0); }

// Whether the automatic choice takes streaming_long where it would take one_block: FP8ORT_GEMM_PERSISTENT=on (read
// once; opt-in: slower than one_block on an H100, 2026-12-07, bench/NOTES.md).
static bool persistent_wanted() {
    static const bool from_env = on_off_from_env("FP8ORT_GEMM_PERSISTENT") == 2;
    return from_env;
}

// The sm90a variant for an override value (0 or 2: by K and N).
sm90_variant sm90_variant_for(int which, int64_t k, int64_t n) {
    switch (which) {
        case 3: return sm90_variant::fast_accumulation;
        case 4: return sm90_variant::one_block;
        case 5: return sm90_variant::two_blocks;
        case 6: return sm90_variant::streaming;
        case 8: return sm90_variant::streaming_long;
        default: {
            const sm90_variant v = sm90_default_variant(k, n);
            return v == sm90_variant::one_block && persistent_wanted() ? sm90_variant::streaming_long : v;
        }
    }
}

extern "C" const char* fp8ort_gemm_kernel_name(fp8ort_fp8_format format, int64_t m, int64_t n, int64_t k) {
    const int which = gemm_kernel_override();
    if (takes_small_k(format, m, n, k, nullptr, nullptr, 0)) return "small_k";
    if (which != 1 && device_is_sm90() && sm90_can_run(format, m, n, k)) {
        switch (sm90_variant_for(which, k, n)) {
            case sm90_variant::fast_accumulation: return "wgmma_sm90a_fast_accum";
            case sm90_variant::two_blocks: return "wgmma_sm90a_2blocks";
            case sm90_variant::streaming: return "wgmma_sm90a_stream";
            case sm90_variant::streaming_wide: return "wgmma_sm90a_stream_wide";
            case sm90_variant::streaming_long: return "wgmma_sm90a_stream_long";
            default: return "wgmma_sm90a";
        }
    }
#if defined(FP8ORT_CUDA)
    return "mma_sync";
#else
    return "amd_matrix_core";
#endif
}

// The sm90a variant and K splits fp8ort_gemm_ws uses for this problem (splits 1 when it does not take the sm90a
// kernel or does not split).
static bool sm90_plan(fp8ort_fp8_format format, int64_t m, int64_t n, int64_t k, sm90_variant* variant, int* splits) {
    const int which = gemm_kernel_override();
    if (which == 1 || !device_is_sm90() || !sm90_can_run(format, m, n, k)) return false;
    *variant = sm90_variant_for(which, k, n);
    *splits = m > 0 ? sm90_gemm_splits(m, n, k, *variant) : 1;
    return true;
}

extern "C" size_t fp8ort_gemm_workspace_bytes(fp8ort_fp8_format format, int64_t m, int64_t n, int64_t k) {
    sm90_variant variant;
    int splits = 1;
    if (m <= 0 || n <= 0 || k <= 0 || takes_small_k(format, m, n, k, nullptr, nullptr, 0) ||
        !sm90_plan(format, m, n, k, &variant, &splits))
        return 0;
    return sm90_split_bytes(splits, m * n);
}

extern "C" fp8ort_status fp8ort_gemm(const void* a, const void* b_packed, fp8ort_fp8_format format, int64_t m, int64_t n,
                                     int64_t k, const fp8ort_epilogue* epilogue, void* y, void* stream) {
    return fp8ort_gemm_ws(a, b_packed, format, m, n, k, epilogue, y, nullptr, 0, stream);
}

extern "C" fp8ort_status fp8ort_gemm_ws(const void* a, const void* b_packed, fp8ort_fp8_format format, int64_t m,
                                        int64_t n, int64_t k, const fp8ort_epilogue* epilogue, void* y,
                                        void* workspace, size_t workspace_bytes, void* stream) {
    const char* op = "fp8ort_gemm";
    if (!is_fp8_type(format)) return fail(FP8ORT_INVALID_ARGUMENT, "%s: format %s is not FP8", op, dtype_name(format));
    if (m < 0 || n <= 0 || k <= 0)
        return fail(FP8ORT_INVALID_ARGUMENT, "%s: M=%lld N=%lld K=%lld: N and K must be positive", op,
                    static_cast<long long>(m), static_cast<long long>(n), static_cast<long long>(k));
    if (m > 0 && (!a || !b_packed)) return fail(FP8ORT_INVALID_ARGUMENT, "%s: A and the packed weight must not be NULL", op);
    epilogue_args ep;
    FP8ORT_TRY(make_epilogue_args(op, epilogue, n, y, n, &ep));
    if (m == 0) return ok();
    const hipStream_t s = as_stream(stream);
    const uint8_t* a8 = static_cast<const uint8_t*>(a);
    const uint8_t* b8 = static_cast<const uint8_t*>(b_packed);
    if (takes_small_k(format, m, n, k, a, b_packed, ep.y_type)) {
        FP8ORT_TRY(launch_small_k(a8, b8, m, n, k, ep, s));
        return ok();
    }
    sm90_variant variant = sm90_variant::one_block;
    int splits = 1;
    const bool sm90 = sm90_plan(format, m, n, k, &variant, &splits);
    // a test's explicit request for an sm90a variant fails here; FP8ORT_GEMM_KERNEL (whole models) falls back
    if (g_kernel_override.load() >= 2 && g_kernel_override.load() != kSmallKOverride && !sm90)
        return fail(FP8ORT_UNSUPPORTED, "%s: the sm90a kernel cannot run this problem (needs an sm_90 GPU, an sm90a build, "
                    "float8e4m3fn/e5m2 and K %% 16 == 0)", op);
    if (sm90) {
        const sm90_split split = sm90_split_for(splits, m * n, workspace, workspace_bytes);
        FP8ORT_TRY(launch_gemm_sm90(a8, b8, format, m, n, k, variant, ep, split, s));
        return ok();
    }
    FP8ORT_TRY(core_supports(op, format));
    fp8ort_status st;
    switch (format) {
        case FP8ORT_E4M3FN: st = launch_gemm_core<FP8ORT_E4M3FN>(a8, b8, m, n, k, ep, s); break;
        case FP8ORT_E5M2: st = launch_gemm_core<FP8ORT_E5M2>(a8, b8, m, n, k, ep, s); break;
        case FP8ORT_E4M3FNUZ: st = launch_gemm_core<FP8ORT_E4M3FNUZ>(a8, b8, m, n, k, ep, s); break;
        default: st = launch_gemm_core<FP8ORT_E5M2FNUZ>(a8, b8, m, n, k, ep, s); break;
    }
    return st == FP8ORT_OK ? ok() : st;
}
