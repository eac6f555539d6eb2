// The vendor BLAS-Lt route of the FP8 GEMM: cuBLASLt on NVIDIA, hipBLASLt on AMD. The library sums, fp8ort
// applies its own epilogue.
//
// The library (libcublasLt.so.13/.12, libhipblaslt.so.1/.0) is opened at run time, so libfp8ort loads and runs
// everywhere without it. It computes only the float32 accumulator D = A . packed^T (FP8 inputs, float32 compute,
// alpha 1, no scales, no library epilogue; on NVIDIA partial sums promoted to float32, no fast accumulation) into
// caller scratch; epilogue_apply_kernel (fp8_epilogue_apply.hip) then applies fp8_epilogue.h's epilogue to D. The
// result matches the reference up to the order of accumulation, like fp8ort_gemm's.
//
// Layout: fp8ort's operands are row-major A[M, K] and packed[N, K]; the BLAS-Lt libraries are column-major.
// Row-major D[M, N] is column-major D^T[N, M] = packed . A^T, so the library's A is the packed weight (stored
// K x N, ld K, transposed) and its B our A (stored K x M, ld K, not transposed): the "TN" form FP8 kernels require,
// with m = N, n = M, k = K. D's leading dimension is N rounded up to 4 floats, so every row starts 16-byte aligned.
//
// The two libraries share this file: fp8_blaslt_api.h (cuBLASLt) and fp8_hipblaslt_api.h (hipBLASLt) declare
// their ABIs under the same names; the differences left are marked FP8ORT_CUDA below (the version call, cuBLASLt's
// fast-accumulation and alignment attributes, which GPUs and formats each library multiplies).
//
// Host code only (built as CUDA or HIP for the runtime headers). Never throws, never synchronizes, never allocates
// device memory: the library handle is created once per device, the chosen algorithm is cached per problem;
// descriptors are made per call (host objects).
#include <dlfcn.h>

#include <atomic>
#include <cstring>
#include <map>
#include <mutex>
#include <tuple>

#include "fp8_epilogue_apply.h"  // first: fp8_compat.h says which platform this is (FP8ORT_CUDA)
#include "fp8_gemm_core.h"
#if defined(FP8ORT_CUDA)
#include "fp8_blaslt_api.h"
#else
#include "fp8_hipblaslt_api.h"
#endif

namespace fp8ort {
namespace {

constexpr size_t kLtWorkspaceBytes = size_t{32} << 20;  // the library's own scratch (NVIDIA suggests 32 MiB on Hopper)
constexpr size_t kScratchAlign = 256;
constexpr uint32_t kMaxOperandAlign = 256;
constexpr int64_t kAccRowAlignFloats = 4;  // 16 bytes
constexpr int kMaxDevices = 64;
constexpr int kHeuristicAlgos = 4;         // candidates asked for; the first that runs is kept
constexpr size_t kMaxCachedProblems = 4096;

size_t round_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

int64_t acc_ld(int64_t n) { return (n + kAccRowAlignFloats - 1) / kAccRowAlignFloats * kAccRowAlignFloats; }

// Largest power of two (up to 256) that divides the address.
uint32_t alignment_of(const void* p) {
    const uintptr_t v = reinterpret_cast<uintptr_t>(p);
    uint32_t a = kMaxOperandAlign;
    while (a > 1 && (v % a) != 0) a /= 2;
    return a;
}

const char* lt_status_name(lt::status_t s) {
    for (const lt::status_name& n : lt::kStatusNames)
        if (n.value == s) return n.name;
    return "unknown status";
}

// Refusals that mean "this configuration has no kernel in the library", as opposed to a failure.
bool lt_refused(lt::status_t s) { return s == lt::kStatusNotSupported || s == lt::kStatusArchMismatch; }

// ---- the library, opened once per process and never closed ----
struct lt_library {
    bool loaded = false;
    char why[384] = "";   // why it is not loaded
    char label[48] = "";  // "cuBLASLt 130100" (the version cublasLtGetVersion() gives), "hipBLASLt"
    size_t version = 0;
    lt::abi::create create = nullptr;
    lt::pfn_get_version get_version = nullptr;
    lt::abi::matmul_desc_create desc_create = nullptr;
    lt::abi::matmul_desc_destroy desc_destroy = nullptr;
    lt::abi::matmul_desc_set_attribute desc_set = nullptr;
    lt::abi::matrix_layout_create layout_create = nullptr;
    lt::abi::matrix_layout_destroy layout_destroy = nullptr;
    lt::abi::preference_create pref_create = nullptr;
    lt::abi::preference_destroy pref_destroy = nullptr;
    lt::abi::preference_set_attribute pref_set = nullptr;
    lt::abi::algo_get_heuristic heuristic = nullptr;
    lt::abi::matmul matmul = nullptr;
};

template <typename Fn>
bool resolve(void* so, const char* suffix, Fn* out, lt_library& lib) {
    char name[64];
    snprintf(name, sizeof(name), "%s%s", lt::kSymbolPrefix, suffix);
    *out = reinterpret_cast<Fn>(dlsym(so, name));
    if (*out == nullptr)
        snprintf(lib.why, sizeof(lib.why), "the %s library lacks %s; install a newer %s", lt::kVendor, name, lt::kVendor);
    return *out != nullptr;
}

lt_library open_library() {
    lt_library lib;
    snprintf(lib.label, sizeof(lib.label), "%s", lt::kVendor);
    void* so = nullptr;
    char names[96] = "";  // the sonames tried, for the message
    char err[192] = "";   // why the first (newest) soname did not load; dlerror()'s buffer is reused, so copy it
    for (const char* name : lt::kLibraryNames) {
        const size_t used = strlen(names);
        snprintf(names + used, sizeof(names) - used, "%s%s", used ? ", " : "", name);
        so = dlopen(name, RTLD_NOW | RTLD_LOCAL);
        if (so) break;
        const char* e = dlerror();
        if (e && !err[0]) snprintf(err, sizeof(err), "%s", e);
    }
    if (!so) {
        snprintf(lib.why, sizeof(lib.why), "%s not found (%s): %s; %s", lt::kVendor, names, err, lt::kInstallHint);
        return lib;
    }
    const bool all = resolve(so, "Create", &lib.create, lib) &&
                     resolve(so, "GetVersion", &lib.get_version, lib) &&
                     resolve(so, "MatmulDescCreate", &lib.desc_create, lib) &&
                     resolve(so, "MatmulDescDestroy", &lib.desc_destroy, lib) &&
                     resolve(so, "MatmulDescSetAttribute", &lib.desc_set, lib) &&
                     resolve(so, "MatrixLayoutCreate", &lib.layout_create, lib) &&
                     resolve(so, "MatrixLayoutDestroy", &lib.layout_destroy, lib) &&
                     resolve(so, "MatmulPreferenceCreate", &lib.pref_create, lib) &&
                     resolve(so, "MatmulPreferenceDestroy", &lib.pref_destroy, lib) &&
                     resolve(so, "MatmulPreferenceSetAttribute", &lib.pref_set, lib) &&
                     resolve(so, "MatmulAlgoGetHeuristic", &lib.heuristic, lib) &&
                     resolve(so, "Matmul", &lib.matmul, lib);
    if (!all) return lib;  // the handle stays open: harmless, and closing could unload a library ORT also uses
#if defined(FP8ORT_CUDA)
    lib.version = lib.get_version();
    snprintf(lib.label, sizeof(lib.label), "%s %zu", lt::kVendor, lib.version);
    if (lib.version < 120000) {
        snprintf(lib.why, sizeof(lib.why), "cuBLASLt %zu is too old for FP8 GEMMs; install cuBLAS 12 or 13",
                 lib.version);
        return lib;
    }
#endif
    // hipBLASLt reports its version through a handle only; its FP8 support shows in the heuristic's answer.
    lib.loaded = true;
    return lib;
}

const lt_library& library() {
    static const lt_library lib = open_library();  // thread-safe one-time initialization
    return lib;
}

// ---- the device: which GPUs the library multiplies FP8 on, and one library handle per device ----
bool arch_has_fp8_blaslt(int arch) {
#if defined(FP8ORT_CUDA)
    return arch >= 89;  // FP8 tensor cores: Ada (sm_89) and newer
#else
    return arch == 942 || arch == 950 || (arch >= 1200 && arch < 1300);  // MI300, MI350, RDNA4
#endif
}

// Library loaded and the current device has FP8 matrix instructions the library uses.
fp8ort_status route_usable(const char* op, int* dev, int* arch) {
    const lt_library& lib = library();
    if (!lib.loaded) return fail(FP8ORT_UNSUPPORTED, "%s: %s", op, lib.why);
    const hipError_t err = hipGetDevice(dev);
    if (err != hipSuccess) return fail(FP8ORT_DEVICE_ERROR, "%s: hipGetDevice: %s", op, hipGetErrorString(err));
    if (*dev < 0 || *dev >= kMaxDevices)
        return fail(FP8ORT_UNSUPPORTED, "%s: device %d is beyond the %d devices this route handles", op, *dev, kMaxDevices);
    FP8ORT_TRY(current_gpu_arch(arch));
    if (!arch_has_fp8_blaslt(*arch))
#if defined(FP8ORT_CUDA)
        return fail(FP8ORT_UNSUPPORTED, "%s: cuBLASLt FP8 GEMMs need compute capability 8.9 or newer, this GPU is %d.%d",
                    op, *arch / 10, *arch % 10);
#else
        return fail(FP8ORT_UNSUPPORTED, "%s: hipBLASLt FP8 GEMMs need gfx942, gfx950 or gfx12; this GPU is gfx%d", op,
                    *arch);
#endif
    return FP8ORT_OK;
}

std::mutex g_handle_mutex;
lt::handle_t g_handles[kMaxDevices] = {};

// The handle of device `dev` (current), created on first use and kept for the process lifetime. The handles hold
// no stream or workspace, so threads share them.
fp8ort_status device_handle(const char* op, int dev, lt::handle_t* out) {
    std::lock_guard<std::mutex> lock(g_handle_mutex);
    if (!g_handles[dev]) {
        lt::handle_t h = nullptr;
        const lt::status_t st = library().create(&h);
        if (st != lt::kStatusSuccess || !h)
            return fail(FP8ORT_DEVICE_ERROR, "%s: %sCreate failed on device %d: %s", op, lt::kSymbolPrefix, dev,
                        lt_status_name(st));
        g_handles[dev] = h;
    }
    *out = g_handles[dev];
    return FP8ORT_OK;
}

// ---- per-call descriptors, released on every path ----
struct lt_descriptors {
    const lt_library& lib;
    lt::matmul_desc_t desc = nullptr;
    lt::matrix_layout_t a = nullptr, b = nullptr, d = nullptr;
    lt::preference_t pref = nullptr;
    explicit lt_descriptors(const lt_library& l) : lib(l) {}
    lt_descriptors(const lt_descriptors&) = delete;
    lt_descriptors& operator=(const lt_descriptors&) = delete;
    ~lt_descriptors() {
        if (pref) lib.pref_destroy(pref);
        if (d) lib.layout_destroy(d);
        if (b) lib.layout_destroy(b);
        if (a) lib.layout_destroy(a);
        if (desc) lib.desc_destroy(desc);
    }
};

// `what`: the call without the library's prefix ("MatmulDescCreate") or the attribute set ("set TRANSA").
fp8ort_status lt_check(const char* op, const char* what, lt::status_t st) {
    if (st == lt::kStatusSuccess) return FP8ORT_OK;
    return fail(FP8ORT_DEVICE_ERROR, "%s: %s %s failed: %s", op, lt::kVendor, what, lt_status_name(st));
}

struct problem {
    const void* a;        // fp8ort's A [M, K]: the library's B
    const void* b_packed; // fp8ort's packed weight [N, K]: the library's A
    lt::data_type_t type;
    fp8ort_fp8_format format;
    int64_t m, n, k, ld_acc;
    float* acc;
    void* lt_workspace;
};

fp8ort_status describe(const char* op, const problem& p, lt_descriptors& ds) {
    const lt_library& lib = ds.lib;
    FP8ORT_TRY(lt_check(op, "MatmulDescCreate", lib.desc_create(&ds.desc, lt::kCompute32F, lt::kR32F)));
    const int32_t trans_a = lt::kOpT, trans_b = lt::kOpN;
    const uint32_t epilogue = lt::kEpilogueDefault;
    FP8ORT_TRY(lt_check(op, "set TRANSA", lib.desc_set(ds.desc, lt::kDescTransA, &trans_a, sizeof(trans_a))));
    FP8ORT_TRY(lt_check(op, "set TRANSB", lib.desc_set(ds.desc, lt::kDescTransB, &trans_b, sizeof(trans_b))));
    FP8ORT_TRY(lt_check(op, "set EPILOGUE", lib.desc_set(ds.desc, lt::kDescEpilogue, &epilogue, sizeof(epilogue))));
#if defined(FP8ORT_CUDA)
    const int8_t fast_accum = 0;
    FP8ORT_TRY(lt_check(op, "set FAST_ACCUM", lib.desc_set(ds.desc, lt::kDescFastAccum, &fast_accum, sizeof(fast_accum))));
#endif
    const uint64_t k = static_cast<uint64_t>(p.k), n = static_cast<uint64_t>(p.n), m = static_cast<uint64_t>(p.m);
    FP8ORT_TRY(lt_check(op, "MatrixLayoutCreate (weight)", lib.layout_create(&ds.a, p.type, k, n, p.k)));
    FP8ORT_TRY(lt_check(op, "MatrixLayoutCreate (A)", lib.layout_create(&ds.b, p.type, k, m, p.k)));
    FP8ORT_TRY(lt_check(op, "MatrixLayoutCreate (D)", lib.layout_create(&ds.d, lt::kR32F, n, m, p.ld_acc)));
    FP8ORT_TRY(lt_check(op, "MatmulPreferenceCreate", lib.pref_create(&ds.pref)));
    const uint64_t ws = kLtWorkspaceBytes;
    FP8ORT_TRY(lt_check(op, "set MAX_WORKSPACE_BYTES", lib.pref_set(ds.pref, lt::kPrefMaxWorkspaceBytes, &ws, sizeof(ws))));
#if defined(FP8ORT_CUDA)
    const uint32_t align_w = alignment_of(p.b_packed), align_a = alignment_of(p.a), align_d = kMaxOperandAlign;
    FP8ORT_TRY(lt_check(op, "set MIN_ALIGNMENT_A", lib.pref_set(ds.pref, lt::kPrefMinAlignmentA, &align_w, sizeof(align_w))));
    FP8ORT_TRY(lt_check(op, "set MIN_ALIGNMENT_B", lib.pref_set(ds.pref, lt::kPrefMinAlignmentB, &align_a, sizeof(align_a))));
    FP8ORT_TRY(lt_check(op, "set MIN_ALIGNMENT_C", lib.pref_set(ds.pref, lt::kPrefMinAlignmentC, &align_d, sizeof(align_d))));
    FP8ORT_TRY(lt_check(op, "set MIN_ALIGNMENT_D", lib.pref_set(ds.pref, lt::kPrefMinAlignmentD, &align_d, sizeof(align_d))));
#endif
    return FP8ORT_OK;
}

lt::status_t launch_matmul(lt::handle_t h, const lt_descriptors& ds, const problem& p, const lt::matmul_algo& algo,
                           hipStream_t stream) {
    const float alpha = 1.0f, beta = 0.0f;  // host scalars (the default pointer mode); beta 0: C is not read
    return ds.lib.matmul(h, ds.desc, &alpha, p.b_packed, ds.a, p.a, ds.b, &beta, p.acc, ds.d, p.acc, ds.d, &algo,
                         p.lt_workspace, kLtWorkspaceBytes, static_cast<void*>(stream));
}

// The algorithm that ran for a problem, by (device, sizes, format, operand alignments).
using algo_key = std::tuple<int, int64_t, int64_t, int64_t, int, uint32_t, uint32_t>;
std::mutex g_algo_mutex;
std::map<algo_key, lt::matmul_algo> g_algos;

// Enqueue D = A . packed^T: a cached algorithm, or the heuristic's candidates in order until one runs.
fp8ort_status run_matmul(const char* op, int dev, const problem& p, hipStream_t stream) {
    const lt_library& lib = library();
    lt::handle_t h = nullptr;
    FP8ORT_TRY(device_handle(op, dev, &h));
    lt_descriptors ds(lib);
    FP8ORT_TRY(describe(op, p, ds));
    const algo_key key{dev, p.m, p.n, p.k, p.type, alignment_of(p.a), alignment_of(p.b_packed)};
    lt::matmul_algo cached;
    bool have = false;
    {
        std::lock_guard<std::mutex> lock(g_algo_mutex);
        auto it = g_algos.find(key);
        if (it != g_algos.end()) {
            cached = it->second;
            have = true;
        }
    }
    if (have) {
        const lt::status_t st = launch_matmul(h, ds, p, cached, stream);
        if (st == lt::kStatusSuccess) return FP8ORT_OK;
        if (!lt_refused(st)) return lt_check(op, "Matmul", st);
        // refused now (cannot happen for the same problem, but then ask the heuristic again)
    }
    lt::heuristic_result results[kHeuristicAlgos] = {};
    int found = 0;
    const lt::status_t hs = lib.heuristic(h, ds.desc, ds.a, ds.b, ds.d, ds.d, ds.pref, kHeuristicAlgos, results, &found);
    const char* type_name = dtype_name(p.format);
    if (lt_refused(hs) || (hs == lt::kStatusSuccess && found <= 0))
        return fail(FP8ORT_UNSUPPORTED, "%s: %s has no %s GEMM for M=%lld N=%lld K=%lld on this GPU (%s)", op,
                    lib.label, type_name, static_cast<long long>(p.m), static_cast<long long>(p.n),
                    static_cast<long long>(p.k), hs == lt::kStatusSuccess ? "no algorithm found" : lt_status_name(hs));
    FP8ORT_TRY(lt_check(op, "MatmulAlgoGetHeuristic", hs));
    lt::status_t last = lt::kStatusNotSupported;
    for (int i = 0; i < found && i < kHeuristicAlgos; ++i) {
        if (results[i].state != lt::kStatusSuccess) continue;
        last = launch_matmul(h, ds, p, results[i].algo, stream);
        if (last == lt::kStatusSuccess) {
            std::lock_guard<std::mutex> lock(g_algo_mutex);
            if (g_algos.size() >= kMaxCachedProblems) g_algos.clear();
            g_algos[key] = results[i].algo;
            return FP8ORT_OK;
        }
        if (last == lt::kStatusExecutionFailed) break;  // a launch failed: a device problem, not this algorithm
    }
    if (lt_refused(last))
        return fail(FP8ORT_UNSUPPORTED, "%s: none of %s's %d %s algorithms runs M=%lld N=%lld K=%lld (%s)", op,
                    lt::kVendor, found, type_name, static_cast<long long>(p.m), static_cast<long long>(p.n),
                    static_cast<long long>(p.k), lt_status_name(last));
    return lt_check(op, "Matmul", last);
}

}  // namespace
}  // namespace fp8ort

using namespace fp8ort;

extern "C" size_t fp8ort_gemm_blaslt_workspace_bytes(int64_t m, int64_t n, int64_t k) {
    if (m <= 0 || n <= 0 || k <= 0) return 0;
    const size_t row_bytes = static_cast<size_t>(acc_ld(n)) * sizeof(float);
    if (static_cast<size_t>(m) > (SIZE_MAX - 4 * kScratchAlign - kLtWorkspaceBytes) / row_bytes) return SIZE_MAX;
    // D aligned up inside the buffer, then the library's workspace aligned up after D
    return kScratchAlign + round_up(static_cast<size_t>(m) * row_bytes, kScratchAlign) + kLtWorkspaceBytes;
}

extern "C" int fp8ort_blaslt_available(void) {
    int dev = 0, arch = 0;
    if (route_usable("fp8ort_blaslt_available", &dev, &arch) != FP8ORT_OK) return 0;
    ok();
    return 1;
}

extern "C" fp8ort_status fp8ort_gemm_blaslt(const void* a, const void* b_packed, fp8ort_fp8_format format, int64_t m,
                                            int64_t n, int64_t k, const fp8ort_epilogue* epilogue, void* y,
                                            void* workspace, size_t workspace_bytes, void* stream) {
    const char* op = "fp8ort_gemm_blaslt";
    // arguments first: the same call is refused the same way on every machine
    if (!is_fp8_type(format)) return fail(FP8ORT_INVALID_ARGUMENT, "%s: format %s is not FP8", op, dtype_name(format));
    if (m < 0 || n <= 0 || k <= 0)
        return fail(FP8ORT_INVALID_ARGUMENT, "%s: M=%lld N=%lld K=%lld: N and K must be positive", op,
                    static_cast<long long>(m), static_cast<long long>(n), static_cast<long long>(k));
    if (m > 0 && (!a || !b_packed)) return fail(FP8ORT_INVALID_ARGUMENT, "%s: A and the packed weight must not be NULL", op);
    epilogue_args ep;
    FP8ORT_TRY(make_epilogue_args(op, epilogue, n, y, n, &ep));
    if (m == 0) return ok();
    const size_t need = fp8ort_gemm_blaslt_workspace_bytes(m, n, k);
    if (!workspace || workspace_bytes < need)
        return fail(FP8ORT_INVALID_ARGUMENT, "%s: the workspace has %zu bytes, M=%lld N=%lld K=%lld need %zu "
                    "(fp8ort_gemm_blaslt_workspace_bytes)", op, workspace ? workspace_bytes : size_t{0},
                    static_cast<long long>(m), static_cast<long long>(n), static_cast<long long>(k), need);

    // then what this route can run
    int dev = 0, arch = 0;
    FP8ORT_TRY(route_usable(op, &dev, &arch));
    FP8ORT_TRY(core_supports(op, format));  // the formats this GPU multiplies (NVIDIA and gfx950/gfx12 OCP, gfx942 FNUZ)
    lt::data_type_t type;
    switch (format) {
        case FP8ORT_E4M3FN: type = lt::kR8F_E4M3; break;
        case FP8ORT_E5M2: type = lt::kR8F_E5M2; break;
#if !defined(FP8ORT_CUDA)
        case FP8ORT_E4M3FNUZ: type = lt::kR8F_E4M3_FNUZ; break;
        case FP8ORT_E5M2FNUZ: type = lt::kR8F_E5M2_FNUZ; break;
#endif
        default:
            return fail(FP8ORT_UNSUPPORTED, "%s: %s does not multiply %s", op, lt::kVendor, dtype_name(format));
    }
    if (k % 16 != 0)
        return fail(FP8ORT_UNSUPPORTED, "%s: %s FP8 GEMMs need K %% 16 == 0, K is %lld", op, lt::kVendor,
                    static_cast<long long>(k));
    // cuBLASLt 13.1 on an H200 found no FP8 algorithm for N = 257 (its M, the rows of D^T) and ran N = 16, 48, 256;
    // hipBLASLt gets the same limits (not measured: no AMD GPU has run this route)
    if (n % 16 != 0)
        return fail(FP8ORT_UNSUPPORTED, "%s: this route takes N %% 16 == 0 (cuBLASLt has no FP8 algorithm for other "
                    "N), N is %lld", op, static_cast<long long>(n));
    if (alignment_of(a) < 16 || alignment_of(b_packed) < 16)
        return fail(FP8ORT_UNSUPPORTED, "%s: %s FP8 GEMMs need 16-byte aligned operands (A %p, packed weight %p)",
                    op, lt::kVendor, a, b_packed);

    const uintptr_t base = reinterpret_cast<uintptr_t>(workspace);
    const uintptr_t acc_at = round_up(base, kScratchAlign);
    const int64_t ld_acc = acc_ld(n);
    const uintptr_t lt_at = round_up(acc_at + static_cast<size_t>(m) * static_cast<size_t>(ld_acc) * sizeof(float),
                                     kScratchAlign);
    problem p{a, b_packed, type, format, m, n, k, ld_acc, reinterpret_cast<float*>(acc_at), reinterpret_cast<void*>(lt_at)};
    const hipStream_t s = as_stream(stream);
    FP8ORT_TRY(run_matmul(op, dev, p, s));
    FP8ORT_TRY(launch_epilogue_apply(p.acc, ld_acc, m, n, ep, s, op));
    return ok();
}
