// FP8 GEMM benchmark: fp8ort_gemm against cuBLASLt FP8 (TN) in the same process, same data, same output type.
// Y[M, N] (bf16) = A[M, K] . W[N, K]^T * (a_scale * w_scale), E4M3 inputs, per-tensor scales.
// Times each with CUDA events (warm-up, then the median of --iters launches) and cross-checks the outputs.
// Build and run on the GPU machine: STEPS=gemm bash tools/h200_plugin_ep.sh (writes gemm.json under $OUT, the record
// kept as bench/results/gemm_h200.json).
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include "fp8_kernels.h"

#define CHECK_CUDA(x)                                                                              \
    do {                                                                                           \
        cudaError_t e_ = (x);                                                                      \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));     \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)
#define CHECK_LT(x)                                                                                \
    do {                                                                                           \
        cublasStatus_t s_ = (x);                                                                   \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                                                         \
            fprintf(stderr, "%s:%d %s: cublas status %d\n", __FILE__, __LINE__, #x, (int)s_);      \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)
#define CHECK_FP8(x)                                                                               \
    do {                                                                                           \
        if ((x) != FP8ORT_OK) {                                                                    \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, fp8ort_gpu_last_error());    \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

namespace {

constexpr size_t kWorkspaceBytes = 64u << 20;

struct lt_gemm {
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
    cublasLtMatmulAlgo_t algo;
    bool ok = false;
};

// Row-major Y[M, N] = A[M, K] . W[N, K]^T is column-major Y^T[N, M] = W . A^T: cuBLASLt's TN with m = N, n = M.
lt_gemm make_lt(cublasLtHandle_t h, int64_t m, int64_t n, int64_t k, const float* sa, const float* sb, int fast_accum,
                const void* a, const void* w, void* y, void* workspace, cudaStream_t stream) {
    lt_gemm g;
    CHECK_LT(cublasLtMatmulDescCreate(&g.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    const cublasOperation_t t = CUBLAS_OP_T, nn = CUBLAS_OP_N;
    CHECK_LT(cublasLtMatmulDescSetAttribute(g.desc, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof(t)));
    CHECK_LT(cublasLtMatmulDescSetAttribute(g.desc, CUBLASLT_MATMUL_DESC_TRANSB, &nn, sizeof(nn)));
    CHECK_LT(cublasLtMatmulDescSetAttribute(g.desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &sb, sizeof(sb)));
    CHECK_LT(cublasLtMatmulDescSetAttribute(g.desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &sa, sizeof(sa)));
    const int8_t fa = static_cast<int8_t>(fast_accum);
    CHECK_LT(cublasLtMatmulDescSetAttribute(g.desc, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fa, sizeof(fa)));
    CHECK_LT(cublasLtMatrixLayoutCreate(&g.la, CUDA_R_8F_E4M3, k, n, k));  // W: [N, K] row-major = K x N col-major
    CHECK_LT(cublasLtMatrixLayoutCreate(&g.lb, CUDA_R_8F_E4M3, k, m, k));  // A: [M, K] row-major
    CHECK_LT(cublasLtMatrixLayoutCreate(&g.lc, CUDA_R_16BF, n, m, n));     // Y: [M, N] row-major
    cublasLtMatmulPreference_t pref;
    CHECK_LT(cublasLtMatmulPreferenceCreate(&pref));
    CHECK_LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &kWorkspaceBytes,
                                                  sizeof(kWorkspaceBytes)));
    constexpr int kMaxAlgos = 16;
    cublasLtMatmulHeuristicResult_t res[kMaxAlgos];
    int found = 0;
    CHECK_LT(cublasLtMatmulAlgoGetHeuristic(h, g.desc, g.la, g.lb, g.lc, g.lc, pref, kMaxAlgos, res, &found));
    // take the first suggested algorithm that runs (trial launch)
    const float alpha = 1.0f, beta = 0.0f;
    int chosen = -1;
    for (int i = 0; i < found && chosen < 0; ++i) {
        const cublasStatus_t st = cublasLtMatmul(h, g.desc, &alpha, w, g.la, a, g.lb, &beta, y, g.lc, y, g.lc,
                                                 &res[i].algo, workspace, kWorkspaceBytes, stream);
        if (st == CUBLAS_STATUS_SUCCESS) chosen = i;
        else fprintf(stderr, "cuBLASLt algorithm %d of %d: status %d\n", i, found, static_cast<int>(st));
    }
    g.ok = chosen >= 0;
    if (!g.ok) fprintf(stderr, "cuBLASLt: none of %d FP8 algorithms ran (fast_accum=%d)\n", found, fast_accum);
    else g.algo = res[chosen].algo;
    cublasLtMatmulPreferenceDestroy(pref);
    return g;
}

template <typename Fn>
double median_ms(Fn&& fn, int warmup, int iters, cudaStream_t s) {
    for (int i = 0; i < warmup; ++i) fn();
    cudaEvent_t e0, e1;
    CHECK_CUDA(cudaEventCreate(&e0));
    CHECK_CUDA(cudaEventCreate(&e1));
    std::vector<float> t;
    for (int i = 0; i < iters; ++i) {
        CHECK_CUDA(cudaEventRecord(e0, s));
        fn();
        CHECK_CUDA(cudaEventRecord(e1, s));
        CHECK_CUDA(cudaEventSynchronize(e1));
        float ms = 0;
        CHECK_CUDA(cudaEventElapsedTime(&ms, e0, e1));
        t.push_back(ms);
    }
    CHECK_CUDA(cudaGetLastError());
    std::sort(t.begin(), t.end());
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    return t[t.size() / 2];
}

std::vector<float> download_bf16(const void* d, size_t count) {
    std::vector<__nv_bfloat16> h(count);
    CHECK_CUDA(cudaMemcpy(h.data(), d, count * 2, cudaMemcpyDeviceToHost));
    std::vector<float> f(count);
    for (size_t i = 0; i < count; ++i) f[i] = __bfloat162float(h[i]);
    return f;
}

}  // namespace

int main(int argc, char** argv) {
    std::vector<int64_t> sizes = {4096, 8192};
    int iters = 30;
    std::string json_path;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "--iters" && i + 1 < argc) iters = atoi(argv[++i]);
        else if (a == "--json" && i + 1 < argc) json_path = argv[++i];
        else if (a == "--sizes" && i + 1 < argc) {
            sizes.clear();
            for (char* p = strtok(argv[++i], ","); p; p = strtok(nullptr, ",")) sizes.push_back(atoll(p));
        }
    }
    cudaDeviceProp prop;
    CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
    int driver = 0, runtime = 0;
    CHECK_CUDA(cudaDriverGetVersion(&driver));
    CHECK_CUDA(cudaRuntimeGetVersion(&runtime));
    const size_t lt_version = cublasLtGetVersion();
    cudaStream_t s;
    CHECK_CUDA(cudaStreamCreate(&s));
    cublasLtHandle_t lt;
    CHECK_LT(cublasLtCreate(&lt));
    void* workspace;
    CHECK_CUDA(cudaMalloc(&workspace, kWorkspaceBytes));

    std::string rows;
    printf("%-6s %-24s %10s %10s %14s %8s %10s\n", "size", "ours kernel", "ours ms", "ours TF/s", "cublasLt TF/s",
           "ratio", "rel diff");
    for (int64_t sz : sizes) {
        const int64_t m = sz, n = sz, k = sz;
        // random E4M3 operands: quantize N(0, 1) floats with scale 1/64 (through our own quantize kernel)
        std::vector<float> host(static_cast<size_t>(std::max(m, n) * k + 16));  // +16: W reads from offset 7
        uint64_t state = 0x9e3779b97f4a7c15ull ^ static_cast<uint64_t>(sz);
        for (auto& v : host) {
            state = state * 6364136223846793005ull + 1442695040888963407ull;
            const double u1 = ((state >> 11) + 1.0) / 9007199254740993.0;
            state = state * 6364136223846793005ull + 1442695040888963407ull;
            const double u2 = (state >> 11) / 9007199254740992.0;
            v = static_cast<float>(std::sqrt(-2 * std::log(u1)) * std::cos(6.283185307179586 * u2));
        }
        float *d_f32, *d_scales;
        void *d_a, *d_w, *d_y_ours, *d_y_lt;
        CHECK_CUDA(cudaMalloc(&d_f32, host.size() * 4));
        // quantize scale, a_scale, w_scale: each on its own 64-byte line (cuBLASLt may want aligned scale pointers)
        CHECK_CUDA(cudaMalloc(&d_scales, 48 * sizeof(float)));
        float scales[48] = {};
        scales[0] = 1.0f / 64, scales[16] = 1.0f / 64, scales[32] = 1.0f / 32;
        CHECK_CUDA(cudaMemcpy(d_scales, scales, sizeof(scales), cudaMemcpyHostToDevice));
        CHECK_CUDA(cudaMemcpy(d_f32, host.data(), host.size() * 4, cudaMemcpyHostToDevice));
        CHECK_CUDA(cudaMalloc(&d_a, m * k));
        CHECK_CUDA(cudaMalloc(&d_w, n * k));
        CHECK_CUDA(cudaMalloc(&d_y_ours, m * n * 2));
        CHECK_CUDA(cudaMalloc(&d_y_lt, m * n * 2));
        CHECK_FP8(fp8ort_quantize(d_f32, FP8ORT_FLOAT, d_scales, d_a, FP8ORT_E4M3FN, m * k, 1, s));
        CHECK_FP8(fp8ort_quantize(d_f32 + 7, FP8ORT_FLOAT, d_scales + 32, d_w, FP8ORT_E4M3FN, n * k, 1, s));

        fp8ort_epilogue ep = {};
        ep.x_scale = d_scales + 16;
        ep.w_scale = d_scales + 32;
        ep.w_scale_count = 1;
        ep.y_scale = nullptr;
        ep.y_type = FP8ORT_BFLOAT16;
        // ours: default (float32 promotion every 128 of K) and fast accumulation (all of K inside wgmma)
        const char* kernel[2];
        double ms_ours[2];
        for (int fast = 0; fast < 2; ++fast) {
            fp8ort_gemm_set_kernel_override(fast ? 3 : 0);
            kernel[fast] = fp8ort_gemm_kernel_name(FP8ORT_E4M3FN, m, n, k);
            ms_ours[fast] = median_ms(
                [&] { CHECK_FP8(fp8ort_gemm(d_a, d_w, FP8ORT_E4M3FN, m, n, k, &ep, d_y_ours, s)); }, 5, iters, s);
        }
        fp8ort_gemm_set_kernel_override(0);
        printf("%-6lld ours: %s %.1f TFLOP/s, %s %.1f TFLOP/s\n", static_cast<long long>(sz), kernel[0],
               2.0 * m * n * k / ms_ours[0] / 1e9, kernel[1], 2.0 * m * n * k / ms_ours[1] / 1e9);
        fflush(stdout);
        CHECK_FP8(fp8ort_gemm(d_a, d_w, FP8ORT_E4M3FN, m, n, k, &ep, d_y_ours, s));  // default kernel's output
        double ms_lt[2];
        for (int fast = 0; fast < 2; ++fast) {
            lt_gemm g = make_lt(lt, m, n, k, d_scales + 16, d_scales + 32, fast, d_a, d_w, d_y_lt, workspace, s);
            const float alpha = 1.0f, beta = 0.0f;
            ms_lt[fast] = !g.ok ? NAN : median_ms([&] {
                CHECK_LT(cublasLtMatmul(lt, g.desc, &alpha, d_w, g.la, d_a, g.lb, &beta, d_y_lt, g.lc, d_y_lt, g.lc, &g.algo,
                                        workspace, kWorkspaceBytes, s));
            }, 5, iters, s);
            cublasLtMatmulDescDestroy(g.desc);
            cublasLtMatrixLayoutDestroy(g.la);
            cublasLtMatrixLayoutDestroy(g.lb);
            cublasLtMatrixLayoutDestroy(g.lc);
        }
        CHECK_CUDA(cudaStreamSynchronize(s));
        // cross-check: both compute the same product (last cuBLASLt run: fast accumulation)
        const std::vector<float> yo = download_bf16(d_y_ours, m * n), yl = download_bf16(d_y_lt, m * n);
        double num = 0, den = 0;
        for (size_t i = 0; i < yo.size(); ++i) {
            num += (yo[i] - yl[i]) * static_cast<double>(yo[i] - yl[i]);
            den += static_cast<double>(yl[i]) * yl[i];
        }
        const double rel = std::isnan(ms_lt[1]) ? NAN : std::sqrt(num / std::max(den, 1e-30));
        const double flop = 2.0 * m * n * k;
        for (int fast = 0; fast < 2; ++fast) {
            const double tf_ours = flop / ms_ours[fast] / 1e9, tf_lt = flop / ms_lt[fast] / 1e9;
            printf("%-6lld %-24s %10.3f %10.1f %14.1f %8.3f %10.2e\n", static_cast<long long>(sz), kernel[fast],
                   ms_ours[fast], tf_ours, tf_lt, tf_ours / tf_lt, rel);
            char lt_ms[32] = "null", lt_tf[32] = "null", ratio[32] = "null";
            if (!std::isnan(ms_lt[fast])) {
                snprintf(lt_ms, sizeof(lt_ms), "%.4f", ms_lt[fast]);
                snprintf(lt_tf, sizeof(lt_tf), "%.1f", tf_lt);
                snprintf(ratio, sizeof(ratio), "%.3f", tf_ours / tf_lt);
            }
            char row[1024];
            snprintf(row, sizeof(row),
                     "%s    {\"m\": %lld, \"n\": %lld, \"k\": %lld, \"accumulation\": \"%s\", \"ours_kernel\": \"%s\", "
                     "\"ours_ms\": %.4f, \"ours_tflops\": %.1f, \"cublaslt_ms\": %s, \"cublaslt_tflops\": %s, "
                     "\"ratio\": %s}",
                     rows.empty() ? "" : ",\n", static_cast<long long>(m), static_cast<long long>(n),
                     static_cast<long long>(k), fast ? "fast (cuBLASLt FAST_ACCUM=1)" : "promoted (FAST_ACCUM=0)",
                     kernel[fast], ms_ours[fast], tf_ours, lt_ms, lt_tf, ratio);
            rows += row;
        }
        cudaFree(d_f32);
        cudaFree(d_scales);
        cudaFree(d_a);
        cudaFree(d_w);
        cudaFree(d_y_ours);
        cudaFree(d_y_lt);
    }
    if (!json_path.empty()) {
        char date[64];
        const std::time_t now = std::time(nullptr);
        std::strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
        FILE* f = fopen(json_path.c_str(), "w");
        if (!f) {
            perror(json_path.c_str());
            return 1;
        }
        fprintf(f,
                "{\n  \"benchmark\": \"fp8 gemm, E4M3 x E4M3 -> bf16, per-tensor scales, TN, median of %d launches\",\n"
                "  \"gpu\": \"%s\", \"sm_count\": %d, \"cuda_driver\": %d, \"cuda_runtime\": %d, \"cublaslt\": %zu,\n"
                "  \"date\": \"%s\", \"command\": \"%s\",\n  \"results\": [\n%s\n  ]\n}\n",
                iters, prop.name, prop.multiProcessorCount, driver, runtime, lt_version, date,
                getenv("FP8ORT_BENCH_COMMAND") ? getenv("FP8ORT_BENCH_COMMAND") : argv[0], rows.c_str());
        fclose(f);
    }
    cublasLtDestroy(lt);
    cudaFree(workspace);
    return 0;
}
