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

#include <array>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>

#include "fp8_epilogue_apply.h"  // first: fp8_compat.h says which platform this is (FP8ORT_CUDA)
#include "fp8_gemm_core.h"
#include "nn_gemm_blaslt.h"
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
    lt::abi::matrix_layout_set_attribute layout_set = nullptr;  // NVIDIA only: the float route's strided batches
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
    if (!resolve(so, "MatrixLayoutSetAttribute", &lib.layout_set, lib)) return lib;
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

// The descriptors and algorithm of a problem that ran, kept for the process so that a repeated call makes no
// descriptor (about a dozen library calls; BERT-base at batch 1 without graphs spent ~20 us of host time per FP8MatMul
// beyond other nodes). Only read after they are made (the library reads descriptors in Matmul, never writes them).
// Never destroyed: at exit the library may already be unloaded. At most kMaxCachedProblems; further problems make
// their descriptors per call, as before.
struct ready_problem {
    const lt_descriptors* ds;
    lt::matmul_algo algo;
};
std::map<algo_key, ready_problem> g_ready;  // under g_algo_mutex

// Enqueue D = A . packed^T: a cached algorithm, or the heuristic's candidates in order until one runs.
fp8ort_status run_matmul(const char* op, int dev, const problem& p, hipStream_t stream) {
    const lt_library& lib = library();
    lt::handle_t h = nullptr;
    FP8ORT_TRY(device_handle(op, dev, &h));
    const algo_key key{dev, p.m, p.n, p.k, p.type, alignment_of(p.a), alignment_of(p.b_packed)};
    ready_problem ready{nullptr, {}};
    {
        std::lock_guard<std::mutex> lock(g_algo_mutex);
        auto it = g_ready.find(key);
        if (it != g_ready.end()) ready = it->second;
    }
    if (ready.ds != nullptr) {
        const lt::status_t st = launch_matmul(h, *ready.ds, p, ready.algo, stream);
        if (st == lt::kStatusSuccess) return FP8ORT_OK;
        if (!lt_refused(st)) return lt_check(op, "Matmul", st);
    }
    std::unique_ptr<lt_descriptors> owned(new lt_descriptors(lib));
    lt_descriptors& ds = *owned;
    FP8ORT_TRY(describe(op, p, ds));
    // keeps the descriptors of a problem that ran (once, while there is room)
    auto keep = [&](const lt::matmul_algo& algo) {
        std::lock_guard<std::mutex> lock(g_algo_mutex);
        if (g_ready.size() < kMaxCachedProblems && g_ready.find(key) == g_ready.end()) {
            g_ready[key] = ready_problem{owned.release(), algo};
        }
    };
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
        if (st == lt::kStatusSuccess) {
            keep(cached);
            return FP8ORT_OK;
        }
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
            {
                std::lock_guard<std::mutex> lock(g_algo_mutex);
                if (g_algos.size() >= kMaxCachedProblems) g_algos.clear();
                g_algos[key] = results[i].algo;
            }
            keep(results[i].algo);
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

// ---- the float MatMul/Gemm route (fp8ort_nn_gemm_run_ws): cuBLASLt, float32 compute ----
//
// Row-major Y[M, N] is column-major D[N, M] = B^T A^T: the library's A is our B seen as an [N, K] matrix, its B our
// A seen as [K, M]. Each operand is one column-major layout, transposed or not, when one of its two strides is 1;
// the batch walk must be one constant stride per operand (0 for a broadcast one). CUBLAS_COMPUTE_32F is plain
// float32 (no TF32), as the SIMT kernel and ORT's CPU EP compute. C (Gemm) is copied into Y first and read in place.
namespace fp8ort {

float_gemm_backend nn_gemm_backend() {
    static const float_gemm_backend backend = [] {
        const char* v = std::getenv("FP8ORT_FLOAT_GEMM");
        if (v == nullptr || *v == '\0' || std::strcmp(v, "auto") == 0) return float_gemm_backend::kAuto;
        if (std::strcmp(v, "ours") == 0) return float_gemm_backend::kOurs;
        if (std::strcmp(v, "blaslt") == 0) return float_gemm_backend::kBlasLt;
        return float_gemm_backend::kInvalid;
    }();
    return backend;
}

#if defined(FP8ORT_CUDA)
namespace {

// Below this many multiply-adds the library's host-side set-up (descriptors, heuristic lookup) outweighs its
// faster kernel; 2^22 is e.g. 128 x 128 x 256.
constexpr double kFloatLtMinMacs = 4194304.0;

// An operand as the library sees it: logical [rows, cols] column-major from a row stride and a column stride.
struct lt_operand {
    int32_t op;  // kOpN or kOpT
    uint64_t rows, cols;  // of the stored matrix (before op)
    int64_t ld;
};

// op(stored) is the logical [rows, cols] matrix X(r, c) = base[r * s_r + c * s_c]. False when neither stride is 1.
bool as_lt_operand(int64_t rows, int64_t cols, int64_t s_r, int64_t s_c, lt_operand* out) {
    if ((s_r == 1 || rows == 1) && (cols == 1 || s_c >= rows)) {  // stored column-major [rows, cols], ld s_c
        *out = {lt::kOpN, static_cast<uint64_t>(rows), static_cast<uint64_t>(cols), cols == 1 ? rows : s_c};
        return true;
    }
    if ((s_c == 1 || cols == 1) && (rows == 1 || s_r >= cols)) {  // stored column-major [cols, rows], transposed
        *out = {lt::kOpT, static_cast<uint64_t>(cols), static_cast<uint64_t>(rows), rows == 1 ? cols : s_r};
        return true;
    }
    return false;
}

// The batch walk as one (count, a stride, b stride), or false when its dimensions do not merge.
bool merge_batch(const fp8ort_nn_gemm& g, int64_t* a_stride, int64_t* b_stride) {
    int64_t count = 1, sa = 0, sb = 0;
    for (int d = g.batch_rank - 1; d >= 0; --d) {  // innermost first
        const int64_t n = g.batch_dims[d];
        if (n == 1) continue;
        if (count == 1) {
            sa = g.a_batch_strides[d];
            sb = g.b_batch_strides[d];
        } else if (g.a_batch_strides[d] != sa * count || g.b_batch_strides[d] != sb * count) {
            return false;
        }
        count *= n;
    }
    *a_stride = sa;
    *b_stride = sb;
    return true;
}

// Largest power of two (up to 256) dividing the address and every batch offset in bytes.
uint32_t batched_alignment(const void* p, int64_t stride_bytes) {
    uint32_t a = alignment_of(p);
    while (a > 1 && stride_bytes % a != 0) a /= 2;
    return a;
}

struct float_problem {
    lt::data_type_t type;
    size_t elem;
    lt_operand la, lb;  // the library's A (our B) and B (our A)
    uint64_t m, n, k;   // ours
    int32_t batch;
    int64_t stride_la, stride_lb, stride_d;
    float alpha, beta;
    uint32_t align_la, align_lb, align_d;
};

fp8ort_status describe_float(const char* op, const float_problem& p, size_t workspace_bytes, lt_descriptors& ds,
                             lt::matrix_layout_t* c_layout) {
    const lt_library& lib = ds.lib;
    FP8ORT_TRY(lt_check(op, "MatmulDescCreate", lib.desc_create(&ds.desc, lt::kCompute32F, lt::kR32F)));
    FP8ORT_TRY(lt_check(op, "set TRANSA", lib.desc_set(ds.desc, lt::kDescTransA, &p.la.op, sizeof(p.la.op))));
    FP8ORT_TRY(lt_check(op, "set TRANSB", lib.desc_set(ds.desc, lt::kDescTransB, &p.lb.op, sizeof(p.lb.op))));
    FP8ORT_TRY(lt_check(op, "MatrixLayoutCreate (B)", lib.layout_create(&ds.a, p.type, p.la.rows, p.la.cols, p.la.ld)));
    FP8ORT_TRY(lt_check(op, "MatrixLayoutCreate (A)", lib.layout_create(&ds.b, p.type, p.lb.rows, p.lb.cols, p.lb.ld)));
    FP8ORT_TRY(lt_check(op, "MatrixLayoutCreate (Y)",
                        lib.layout_create(&ds.d, p.type, p.n, p.m, static_cast<int64_t>(p.n))));
    if (p.batch > 1) {
        const struct {
            lt::matrix_layout_t layout;
            int64_t stride;
        } batched[] = {{ds.a, p.stride_la}, {ds.b, p.stride_lb}, {ds.d, p.stride_d}};
        for (const auto& l : batched) {
            FP8ORT_TRY(lt_check(op, "set BATCH_COUNT",
                                lib.layout_set(l.layout, lt::kLayoutBatchCount, &p.batch, sizeof(p.batch))));
            FP8ORT_TRY(lt_check(op, "set STRIDED_BATCH_OFFSET",
                                lib.layout_set(l.layout, lt::kLayoutStridedBatchOffset, &l.stride, sizeof(l.stride))));
        }
    }
    *c_layout = ds.d;  // C is Y (in place): the same layout
    FP8ORT_TRY(lt_check(op, "MatmulPreferenceCreate", lib.pref_create(&ds.pref)));
    const uint64_t ws = workspace_bytes;
    FP8ORT_TRY(lt_check(op, "set MAX_WORKSPACE_BYTES", lib.pref_set(ds.pref, lt::kPrefMaxWorkspaceBytes, &ws, sizeof(ws))));
    FP8ORT_TRY(lt_check(op, "set MIN_ALIGNMENT_A", lib.pref_set(ds.pref, lt::kPrefMinAlignmentA, &p.align_la, sizeof(p.align_la))));
    FP8ORT_TRY(lt_check(op, "set MIN_ALIGNMENT_B", lib.pref_set(ds.pref, lt::kPrefMinAlignmentB, &p.align_lb, sizeof(p.align_lb))));
    FP8ORT_TRY(lt_check(op, "set MIN_ALIGNMENT_C", lib.pref_set(ds.pref, lt::kPrefMinAlignmentC, &p.align_d, sizeof(p.align_d))));
    FP8ORT_TRY(lt_check(op, "set MIN_ALIGNMENT_D", lib.pref_set(ds.pref, lt::kPrefMinAlignmentD, &p.align_d, sizeof(p.align_d))));
    return FP8ORT_OK;
}

// The algorithm that ran, by everything describe_float puts in the descriptors (and the workspace it may use).
using float_algo_key = std::array<int64_t, 20>;
std::mutex g_float_algo_mutex;
std::map<float_algo_key, lt::matmul_algo> g_float_algos;

float_algo_key key_of(int dev, const float_problem& p, size_t workspace_bytes) {
    return {dev, p.type, p.la.op, static_cast<int64_t>(p.la.rows), static_cast<int64_t>(p.la.cols), p.la.ld, p.lb.op,
            static_cast<int64_t>(p.lb.rows), static_cast<int64_t>(p.lb.cols), p.lb.ld, p.batch, p.stride_la,
            p.stride_lb, p.stride_d, p.beta != 0.0f, p.align_la, p.align_lb, p.align_d,
            static_cast<int64_t>(workspace_bytes), 0};
}

}  // namespace

size_t nn_gemm_blaslt_workspace_bytes(fp8ort_dtype type, const fp8ort_nn_gemm& g, int64_t batch) {
    const float_gemm_backend backend = nn_gemm_backend();
    if (backend == float_gemm_backend::kOurs || backend == float_gemm_backend::kInvalid) return 0;
    if (type != FP8ORT_FLOAT && type != FP8ORT_FLOAT16) return 0;
    if (g.m <= 0 || g.n <= 0 || g.k <= 0 || batch <= 0) return 0;
    const double macs = static_cast<double>(g.m) * static_cast<double>(g.n) * static_cast<double>(g.k) *
                        static_cast<double>(batch);
    if (backend == float_gemm_backend::kAuto && macs < kFloatLtMinMacs) return 0;
    return kLtWorkspaceBytes;
}

fp8ort_status nn_gemm_blaslt(const void* a, const void* b, void* y, fp8ort_dtype type, const fp8ort_nn_gemm& g,
                             int64_t batch, c_into_y_fn c_into_y, void* workspace, size_t workspace_bytes,
                             hipStream_t stream) {
    const char* op = "fp8ort_nn_gemm_run (cuBLASLt)";
    const float_gemm_backend backend = nn_gemm_backend();
    if (backend == float_gemm_backend::kOurs) return fail(FP8ORT_UNSUPPORTED, "%s: FP8ORT_FLOAT_GEMM=ours", op);
    if (type != FP8ORT_FLOAT && type != FP8ORT_FLOAT16)
        return fail(FP8ORT_UNSUPPORTED, "%s: takes float32 and float16, not %s", op, dtype_name(type));
    if (g.k <= 0) return fail(FP8ORT_UNSUPPORTED, "%s: K = 0 (Y is beta C or 0)", op);
    const double macs = static_cast<double>(g.m) * static_cast<double>(g.n) * static_cast<double>(g.k) *
                        static_cast<double>(batch);
    if (backend == float_gemm_backend::kAuto && macs < kFloatLtMinMacs)
        return fail(FP8ORT_UNSUPPORTED, "%s: %.0f multiply-adds is below this route's minimum", op, macs);
    if (batch > INT32_MAX) return fail(FP8ORT_UNSUPPORTED, "%s: %lld batches", op, static_cast<long long>(batch));
    float_problem p{};
    p.type = type == FP8ORT_FLOAT ? lt::kR32F : lt::kR16F;
    p.elem = type == FP8ORT_FLOAT ? 4 : 2;
    p.m = static_cast<uint64_t>(g.m);
    p.n = static_cast<uint64_t>(g.n);
    p.k = static_cast<uint64_t>(g.k);
    p.batch = static_cast<int32_t>(batch);
    int64_t a_stride = 0, b_stride = 0;
    if (!merge_batch(g, &a_stride, &b_stride))
        return fail(FP8ORT_UNSUPPORTED, "%s: the batch dimensions do not merge into one stride per operand", op);
    // the library's A: B^T as [N, K], element (n, k) = B(k, n); its B: A^T as [K, M], element (k, m) = A(m, k)
    if (!as_lt_operand(g.n, g.k, g.b_sn, g.b_sk, &p.la) || !as_lt_operand(g.k, g.m, g.a_sk, g.a_sm, &p.lb))
        return fail(FP8ORT_UNSUPPORTED, "%s: an operand has no unit stride (A %lld/%lld, B %lld/%lld)", op,
                    static_cast<long long>(g.a_sm), static_cast<long long>(g.a_sk), static_cast<long long>(g.b_sk),
                    static_cast<long long>(g.b_sn));
    p.stride_la = b_stride;
    p.stride_lb = a_stride;
    p.stride_d = g.m * g.n;
    p.alpha = g.alpha;
    p.beta = g.c ? g.beta : 0.0f;
    p.align_la = batched_alignment(b, b_stride * static_cast<int64_t>(p.elem));
    p.align_lb = batched_alignment(a, a_stride * static_cast<int64_t>(p.elem));
    p.align_d = batched_alignment(y, p.stride_d * static_cast<int64_t>(p.elem));
    if (!workspace) workspace_bytes = 0;

    const lt_library& lib = library();
    if (!lib.loaded) return fail(FP8ORT_UNSUPPORTED, "%s: %s", op, lib.why);
    int dev = 0;
    const hipError_t err = hipGetDevice(&dev);
    if (err != hipSuccess) return fail(FP8ORT_DEVICE_ERROR, "%s: hipGetDevice: %s", op, hipGetErrorString(err));
    if (dev < 0 || dev >= kMaxDevices)
        return fail(FP8ORT_UNSUPPORTED, "%s: device %d is beyond the %d devices this route handles", op, dev, kMaxDevices);
    lt::handle_t h = nullptr;
    FP8ORT_TRY(device_handle(op, dev, &h));
    lt_descriptors ds(lib);
    lt::matrix_layout_t c_layout = nullptr;
    FP8ORT_TRY(describe_float(op, p, workspace_bytes, ds, &c_layout));

    const float_algo_key key = key_of(dev, p, workspace_bytes);
    lt::matmul_algo algo{};
    bool have = false;
    {
        std::lock_guard<std::mutex> lock(g_float_algo_mutex);
        auto it = g_float_algos.find(key);
        if (it != g_float_algos.end()) {
            algo = it->second;
            have = true;
        }
    }
    lt::heuristic_result results[kHeuristicAlgos] = {};
    int found = 0;
    if (!have) {
        const lt::status_t hs =
            lib.heuristic(h, ds.desc, ds.a, ds.b, c_layout, ds.d, ds.pref, kHeuristicAlgos, results, &found);
        if (lt_refused(hs) || (hs == lt::kStatusSuccess && found <= 0))
            return fail(FP8ORT_UNSUPPORTED, "%s: %s has no %s GEMM for M=%lld N=%lld K=%lld batch %lld (%s)", op,
                        lib.label, dtype_name(type), static_cast<long long>(g.m), static_cast<long long>(g.n),
                        static_cast<long long>(g.k), static_cast<long long>(batch),
                        hs == lt::kStatusSuccess ? "no algorithm found" : lt_status_name(hs));
        FP8ORT_TRY(lt_check(op, "MatmulAlgoGetHeuristic", hs));
    }
    // C into Y only now that the library has an algorithm: a refusal above leaves Y to the SIMT kernel untouched
    if (g.c) FP8ORT_TRY(c_into_y(g.c, y, type, g, stream));
    const void* c_ptr = y;
    auto launch = [&](const lt::matmul_algo& al) {
        return lib.matmul(h, ds.desc, &p.alpha, b, ds.a, a, ds.b, &p.beta, c_ptr, c_layout, y, ds.d, &al, workspace,
                          workspace_bytes, static_cast<void*>(stream));
    };
    if (have) {
        const lt::status_t st = launch(algo);
        if (st == lt::kStatusSuccess) return FP8ORT_OK;
        return lt_check(op, "Matmul", st);  // the same problem ran with this algorithm before
    }
    lt::status_t last = lt::kStatusNotSupported;
    for (int i = 0; i < found && i < kHeuristicAlgos; ++i) {
        if (results[i].state != lt::kStatusSuccess) continue;
        last = launch(results[i].algo);
        if (last == lt::kStatusSuccess) {
            std::lock_guard<std::mutex> lock(g_float_algo_mutex);
            if (g_float_algos.size() >= kMaxCachedProblems) g_float_algos.clear();
            g_float_algos[key] = results[i].algo;
            return FP8ORT_OK;
        }
        if (!lt_refused(last)) break;  // a failure, not this algorithm's refusal
    }
    // Y may already hold C: a refusal here is still a clean fallback (the SIMT kernel writes all of Y from C)
    if (lt_refused(last))
        return fail(FP8ORT_UNSUPPORTED, "%s: none of %s's %d algorithms runs M=%lld N=%lld K=%lld (%s)", op,
                    lt::kVendor, found, static_cast<long long>(g.m), static_cast<long long>(g.n),
                    static_cast<long long>(g.k), lt_status_name(last));
    return lt_check(op, "Matmul", last);
}

#else  // AMD: the SIMT kernel

size_t nn_gemm_blaslt_workspace_bytes(fp8ort_dtype, const fp8ort_nn_gemm&, int64_t) { return 0; }

fp8ort_status nn_gemm_blaslt(const void*, const void*, void*, fp8ort_dtype, const fp8ort_nn_gemm&, int64_t,
                             c_into_y_fn, void*, size_t, hipStream_t) {
    return fail(FP8ORT_UNSUPPORTED, "fp8ort_nn_gemm_run: the float BLAS-Lt route is NVIDIA-only");
}

#endif  // FP8ORT_CUDA

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
