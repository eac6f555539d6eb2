// Hopper FP8 GEMM (sm_90a): C[M, N] = A[M, K] . B[N, K]^T with the fused epilogue.
// Block tile 128 x BN x 128: warpgroup 0 issues TMA loads (128-byte swizzle, zero fill past the edges) into a
// ring of shared-memory stages guarded by mbarriers; warpgroups 1 and 2 each run wgmma m64nBNk32 on 64 rows.
// Hopper's FP8 tensor cores keep only about 14 bits while they accumulate, so by default (Promote) each 128-deep
// k-tile is summed by wgmma and then added into a float32 accumulator in registers (BN = 128; with one block per
// multiprocessor one k-tile behind the wgmma, k_tiles_lagged); the fast variant
// (BN = 256) accumulates the whole K inside wgmma, like cuBLASLt's FAST_ACCUM.
// Split K: when the tiles would leave multiprocessors idle (small M, long K), gridDim.y splits the k-tiles; each
// split writes its float32 partial tile to scratch (the raw epilogue: unit scale, nothing else) and
// launch_epilogue_apply sums the splits in order and applies the real epilogue.
#include <stdlib.h>
#include <string.h>

#include <atomic>

#include "fp8_gemm_sm90.h"
#include "fp8_epilogue_apply.h"
#include "fp8_conv_source.h"

#if defined(FP8ORT_CUDA)
#include <cuda.h>
#include <cudaTypedefs.h>
#endif

namespace fp8ort {

#if defined(FP8ORT_CUDA)
namespace {

constexpr int kBm = 128;
constexpr int kBk = 128;  // bytes: one 128-byte swizzle row
constexpr int kThreadsSm90 = 384;
constexpr int kGroupM = 8;  // tiles of M walked together, for L2 reuse of B
constexpr int kABytes = kBm * kBk;

// Row stride in floats of the tile epilogues' staging buffer. A warp stores its accumulators as float2 at rows
// r0 + (lane / 4) and columns 2 * (lane % 4) (+ 8 j), in two phases of 16 lanes, 4 rows x 8 floats each: with a stride
// of 8 modulo the 32 banks the 4 rows fall on distinct banks. BN + 4 put rows q and q + 1 four banks apart, two ways
// of conflict on every store (Nsight Compute, one_block at 4096^3: 524,288 conflicts, half of its shared-store
// wavefronts). Row-wise reads of 16 bytes per lane stay conflict-free with either stride.
template <int BN>
constexpr int kStagingLd = BN + 8;

// kBlocks 1: one block per multiprocessor, a producer warpgroup (setmaxnreg gives its registers to the consumers)
// and a deep ring of stages, for long K. kBlocks 2: two blocks per multiprocessor, consumers in warpgroups 0 and 1
// and a producer warp (warp 8), a short ring: for short K, where the tile epilogue dominates and one block's
// epilogue then overlaps the other's loads and multiplies.
template <int BN, int kBlocks = 1>
struct sm90_tile {
    static constexpr int kStages = kBlocks == 2 ? (BN == 64 ? 4 : 3) : (BN == 256 ? 4 : 6);
    static constexpr int kThreads = kBlocks == 2 ? 288 : kThreadsSm90;
    static constexpr int kBBytes = BN * kBk;
    static constexpr size_t kSmem = static_cast<size_t>(kStages) * (kABytes + kBBytes) + 2 * kStages * 8 + 1024;
    static_assert(kBlocks == 1 || kSmem * 2 + 2048 <= 228 * 1024, "two blocks fit one multiprocessor");
};

#if defined(FP8ORT_HAS_WGMMA_FP8)
__device__ __forceinline__ uint32_t smem_u32(const void* p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
// Thread-block clusters (split K reduced in the cluster, split_cluster_wanted): the cluster's size and this block's
// rank in it, the cluster barrier in its two halves, and a 16-byte load from another block's shared memory.
__device__ __forceinline__ unsigned cluster_blocks() {
    unsigned r;
    asm volatile("mov.u32 %0, %%cluster_nctarank;\n" : "=r"(r));
    return r;
}
__device__ __forceinline__ unsigned cluster_rank() {
    unsigned r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
    return r;
}
// (not .aligned: the threads of a warp may come from the divergent tile epilogue; the producer threads have exited,
// and the barrier waits only for the cluster's threads that have not)
__device__ __forceinline__ void cluster_arrive() { asm volatile("barrier.cluster.arrive.release;\n" ::: "memory"); }
__device__ __forceinline__ void cluster_wait() { asm volatile("barrier.cluster.wait.acquire;\n" ::: "memory"); }
__device__ __forceinline__ float4 load_cluster_f4(uint32_t local_addr, unsigned rank) {
    uint32_t remote;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(local_addr), "r"(rank));
    float4 v;
    asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];\n"
                 : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
                 : "r"(remote)
                 : "memory");
    return v;
}
__device__ __forceinline__ void mbar_init(uint64_t* bar, uint32_t count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(count));
}
__device__ __forceinline__ void mbar_expect_tx(uint64_t* bar, uint32_t bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(bytes));
}
__device__ __forceinline__ void mbar_arrive(uint64_t* bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem_u32(bar)));
}
__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t parity) {
    uint32_t done = 0;
    do {
        asm volatile(
            "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}\n"
            : "=r"(done)
            : "r"(smem_u32(bar)), "r"(parity));
    } while (!done);
}
__device__ __forceinline__ void tma_load_2d(void* dst, const CUtensorMap* map, int x, int y, uint64_t* bar) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n"
        ::"r"(smem_u32(dst)), "l"(reinterpret_cast<uint64_t>(map)), "r"(x), "r"(y), "r"(smem_u32(bar))
        : "memory");
}
// The residual Z of one output tile into L2, one 128-byte line at a time: rows row0 + first, + step, ... of the
// tile (rows_left of them exist), columns gcol0 .. gcol0 + cols (cols_left exist). Issued by the producer threads
// before their loads, so the epilogue's Z reads, which used to wait on DRAM with few warps in flight (ncu: a
// residual 1x1 GEMM at K = 64 took 0.91 ms against 0.49 ms without Z), find the lines in L2. A hint only: nothing
// waits for it, and it touches only addresses inside Z.
__device__ __forceinline__ void prefetch_z_tile(const epilogue_args& ep, int64_t row0, int64_t gcol0, int rows,
                                                int cols, int64_t rows_left, int64_t cols_left, int first, int step) {
    if (!ep.z || !ep.x_scale) return;  // no residual, or the raw split-K epilogue (Z is applied after the sum)
    const int esize = is_fp8_type(ep.z_type) ? 1 : (ep.z_type == FP8ORT_FLOAT ? 4 : 2);
    const int64_t bytes = static_cast<int64_t>(cols_left < cols ? cols_left : cols) * esize;
    const int64_t last_row = rows_left < rows ? rows_left : rows;
    const char* base = static_cast<const char*>(ep.z) + (row0 * ep.ld + gcol0) * esize;
    for (int64_t r = first; r < last_row; r += step) {
        const char* line = base + r * ep.ld * esize;
        for (int64_t off = 0; off < bytes; off += 128)
            asm volatile("prefetch.global.L2 [%0];\n" ::"l"(line + off));
    }
}

// K-major operand, 128-byte swizzle: stride between 8-row groups 1024 bytes.
__device__ __forceinline__ uint64_t smem_desc(const uint8_t* p) {
    const uint64_t addr = smem_u32(p);
    return ((addr & 0x3ffff) >> 4) | (uint64_t{16 >> 4} << 16) | (uint64_t{1024 >> 4} << 32) | (uint64_t{1} << 62);
}
// The warpgroup of this thread, as a value the compiler knows is the same in every lane (a shuffle from lane 0):
// descriptors derived from it then live in uniform registers instead of being rebuilt and moved there (R2UR) before
// every wgmma. The one-block GEMM at 4096^3 executed 55.8 M warp instructions before, 46.0 M after (cuBLASLt's
// kernel 32.2 M), with no measurable change in its speed (H100, 2026-12-07).
__device__ __forceinline__ int warpgroup_index() {
    return __shfl_sync(0xffffffffu, static_cast<int>(threadIdx.x) / 128, 0);
}

// D[64, N] += A[64, 32] . B[N, 32]^T, both operands K-major in shared memory (descriptors); scale_d 0 writes
// D = A . B^T instead (the wgmma's scale-d predicate), which spares zeroing D first.
template <fp8ort_fp8_format F, int N>
__device__ __forceinline__ void wgmma_m64k32(float (&d)[N / 2], uint64_t desc_a, uint64_t desc_b, int scale_d = 1) {
    static_assert(N == 64 || N == 128 || N == 256, "wgmma tile width");
    if constexpr (N == 64 && F == FP8ORT_E5M2) {
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\nwgmma.mma_async.sync.aligned.m64n64k32.f32.e5m2.e5m2 "
                     "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
                     "%32, %33, p, 1, 1;\n}\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
            : "l"(desc_a), "l"(desc_b), "r"(scale_d));
    }     else if constexpr (N == 64) {
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\nwgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e4m3 "
                     "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
                     "%32, %33, p, 1, 1;\n}\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
            : "l"(desc_a), "l"(desc_b), "r"(scale_d));
    } else if constexpr (N == 256 && F == FP8ORT_E5M2) {
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\nwgmma.mma_async.sync.aligned.m64n256k32.f32.e5m2.e5m2 "
                     "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, "
                     "%128, %129, p, 1, 1;\n}\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
              "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
              "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
              "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
              "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
              "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
              "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
              "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
              "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
              "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
              "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
              "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
              "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
              "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
              "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
              "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
            : "l"(desc_a), "l"(desc_b), "r"(scale_d));
    } else if constexpr (N == 256) {
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\nwgmma.mma_async.sync.aligned.m64n256k32.f32.e4m3.e4m3 "
                     "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, "
                     "%128, %129, p, 1, 1;\n}\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
              "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
              "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
              "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
              "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
              "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
              "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
              "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
              "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
              "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
              "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
              "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
              "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
              "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
              "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
              "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
            : "l"(desc_a), "l"(desc_b), "r"(scale_d));
    } else if constexpr (F == FP8ORT_E5M2) {
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\nwgmma.mma_async.sync.aligned.m64n128k32.f32.e5m2.e5m2 "
                     "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
                     "%64, %65, p, 1, 1;\n}\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
              "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
              "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
              "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
              "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
              "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
              "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
              "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
            : "l"(desc_a), "l"(desc_b), "r"(scale_d));
    } else {
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\nwgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3 "
                     "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
                     "%64, %65, p, 1, 1;\n}\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
              "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
              "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
              "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
              "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
              "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
              "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
              "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
            : "l"(desc_a), "l"(desc_b), "r"(scale_d));
    }
}
#endif  // FP8ORT_HAS_WGMMA_FP8

#if defined(FP8ORT_HAS_WGMMA_FP8)
// One k-tile of a consumer warpgroup: D[64, BN] (+)= A[64, 128] . B[BN, 128]^T as four wgmma, from the descriptors of
// the stage's A rows and B tile (a descriptor's low 14 bits hold the address / 16, so the descriptor of the k-th
// 32-byte column is the stage's plus 2k). first_adds false: the first wgmma overwrites D (scale-d 0).
template <fp8ort_fp8_format F, int BN>
__device__ __forceinline__ void wgmma_k_tile(float (&d)[BN / 2], uint64_t desc_a, uint64_t desc_b, bool first_adds) {
#pragma unroll
    for (int kk = 0; kk < kBk / 32; ++kk)
        wgmma_m64k32<F, BN>(d, desc_a + 2 * kk, desc_b + 2 * kk, first_adds || kk > 0);
}

// Keeps the compiler from moving reads or writes of v across the wgmma waits around it (the asm claims to change v).
template <int N>
__device__ __forceinline__ void fence_operands(float (&v)[N]) {
#pragma unroll
    for (int i = 0; i < N; ++i) asm volatile("" : "+f"(v[i])::"memory");
}

// One k-tile's wgmma into the set x as a committed group, from stage s of the ring (desc_a, desc_b: stage 0's),
// fenced so that no read or write of x moves across it; its first wgmma overwrites x (scale-d 0). The caller has
// waited for the stage.
template <fp8ort_fp8_format F, int BN>
__device__ __forceinline__ void issue_k_tile(float (&x)[BN / 2], uint64_t desc_a, uint64_t desc_b, int s) {
    fence_operands(x);
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
    wgmma_k_tile<F, BN>(x, desc_a + s * (kABytes / 16), desc_b + s * (BN * kBk / 16), false);
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
    fence_operands(x);
}

// One tile's k-tiles of a consumer warpgroup (desc_a, desc_b: its 64 rows of stage 0's A and stage 0's B), promoted
// one k-tile behind: k-tiles alternate between the accumulator sets d and e, and while one set's wgmma run, the other's
// finished k-tile is added to acc in float32 and its stage goes back to the producer (consume_tiles' loop waits for
// each k-tile's wgmma before promoting it, so a warpgroup's wgmma stop through every promotion). Measured on an H100,
// 2026-12-07: one_block +2-4% at 4096^3, its tensor pipe 49.6% -> 51% busy (cuBLASLt's kernel of the same tile 81%):
// the promotion was not the main part of that gap (bench/NOTES.md). The same sums in the same order. A k-tile's first wgmma overwrites its set (scale-d 0), so neither set is zeroed. `it`: k-tiles
// of this block before this tile (the ring position); `t`: the thread's index in its warpgroup. The only branches
// around reads of d or e depend on nothing but the tile: with a read in a branch of the loop (a first version
// promoted under `kt > 0`), ptxas serializes every wgmma of the kernel (C7518).
template <fp8ort_fp8_format F, int BN, int kStages>
__device__ __forceinline__ void k_tiles_lagged(uint64_t desc_a, uint64_t desc_b, uint64_t* full, uint64_t* empty,
                                               int k_tiles, int t, int it, float (&acc)[BN / 2]) {
    constexpr int kRegs = BN / 2;
    if (k_tiles <= 0) return;
    float d[kRegs], e[kRegs];
    auto issue = [&](float(&x)[kRegs], int pos) {
        mbar_wait(&full[pos % kStages], (pos / kStages) & 1);
        issue_k_tile<F, BN>(x, desc_a, desc_b, pos % kStages);
    };
    auto promote = [&](float(&x)[kRegs], int pos) {  // x's wgmma are complete (a wait came before)
        fence_operands(x);
        if (t == 0) mbar_arrive(&empty[pos % kStages]);
#pragma unroll
        for (int i = 0; i < kRegs; ++i) acc[i] += x[i];
    };
    issue(d, it);
    int kt = 1;
    for (; kt + 1 < k_tiles; kt += 2) {
        issue(e, it + kt);
        asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");  // all but e's: d's k-tile is done
        promote(d, it + kt - 1);
        issue(d, it + kt + 1);
        asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
        promote(e, it + kt);
    }
    if (kt < k_tiles) {  // one k-tile left
        issue(e, it + kt);
        asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
        promote(d, it + kt - 1);
        asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
        promote(e, it + kt);
    } else {
        asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
        promote(d, it + kt - 1);
    }
}

// One tile's k-tiles in the order of cuBLASLt's promoting kernel (its SASS, bench/NOTES.md, eighteenth session): at
// the top of each k-tile both consumer warpgroups meet at a named barrier (bar 1, their 256 threads), wait for the
// stage, wait for all of their previous k-tile's wgmma (no lag), give that stage back, add its partial sum to acc and
// issue this k-tile's wgmma into the same set d. The first k-tile is peeled, so no branch of the loop reads d (a read
// under `kt > 0` makes ptxas serialize every wgmma, C7518). The same sums in the same order as k_tiles_lagged.
template <fp8ort_fp8_format F, int BN, int kStages>
__device__ __forceinline__ void k_tiles_paced(uint64_t desc_a, uint64_t desc_b, uint64_t* full, uint64_t* empty,
                                              int k_tiles, int t, float (&acc)[BN / 2]) {
    constexpr int kRegs = BN / 2;
    if (k_tiles <= 0) return;
    float d[kRegs];
    asm volatile("bar.sync 1, 256;\n" ::: "memory");
    mbar_wait(&full[0], 0);
    issue_k_tile<F, BN>(d, desc_a, desc_b, 0);
    for (int kt = 1; kt < k_tiles; ++kt) {
        const int s = kt % kStages;
        asm volatile("bar.sync 1, 256;\n" ::: "memory");
        mbar_wait(&full[s], (kt / kStages) & 1);
        asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
        fence_operands(d);
        if (t == 0) mbar_arrive(&empty[(kt - 1) % kStages]);
#pragma unroll
        for (int i = 0; i < kRegs; ++i) acc[i] += d[i];
        issue_k_tile<F, BN>(d, desc_a, desc_b, s);
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    fence_operands(d);
#pragma unroll
    for (int i = 0; i < kRegs; ++i) acc[i] += d[i];
}

// The two consumer warpgroups (consumer 0 and 1): wgmma over every k-tile as the stages fill, then the tile
// epilogue through shared memory. Output rows row0.., global columns gcol0..; rows_left x cols_left exist.
// kPaced (one_block, FP8ORT_GEMM_PACED=on): the k-tiles through k_tiles_paced instead of k_tiles_lagged.
template <fp8ort_fp8_format F, int BN, bool Promote, int kStages, bool kEarlyColumns, bool kClusterSplit,
          bool kLagged = false, bool kPaced = false>
__device__ __forceinline__ void consume_tiles(uint8_t* smem, const uint8_t* sa, const uint8_t* sb, uint64_t* full,
                                              uint64_t* empty, int k_tiles, int consumer, const epilogue_args& ep,
                                              int64_t row0, int64_t gcol0, int64_t rows_left, int64_t cols_left) {
    constexpr int kBBytes = BN * kBk;
    constexpr int kRegs = BN / 2;
    // kEarlyColumns: the epilogue's column constants loaded before the wait for the operands (the GEMM; the
    // convolution's two-blocks kernel has no registers to hold them through its main loop: it spilled them)
    tile_columns cols;
    if constexpr (kEarlyColumns) cols = load_tile_columns<BN>(ep, gcol0, cols_left, consumer * 128 + threadIdx.x % 128);
    float d[kRegs];
    float acc[Promote ? kRegs : 1];
#pragma unroll
    for (int i = 0; i < kRegs; ++i) d[i] = 0.0f;
#pragma unroll
    for (int i = 0; i < (Promote ? kRegs : 1); ++i) acc[i] = 0.0f;
    const uint64_t desc_a = smem_desc(sa + consumer * 64 * kBk), desc_b = smem_desc(sb);
    if constexpr (Promote && kPaced) k_tiles_paced<F, BN, kStages>(desc_a, desc_b, full, empty, k_tiles,
                                                                   threadIdx.x % 128, acc);
    else if constexpr (Promote && kLagged) k_tiles_lagged<F, BN, kStages>(desc_a, desc_b, full, empty, k_tiles,
                                                                          threadIdx.x % 128, 0, acc);
    else for (int kt = 0; kt < k_tiles; ++kt) {
        const int s = kt % kStages;
        mbar_wait(&full[s], (kt / kStages) & 1);
        asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
        // promoting, the k-tile's first wgmma overwrites d (scale-d 0) instead of adding to zeros
        wgmma_k_tile<F, BN>(d, desc_a + s * (kABytes / 16), desc_b + s * (kBBytes / 16), !Promote);
        asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
        if constexpr (Promote) {
            // this k-tile's partial sum is complete: its stage goes back, the sum moves to float32
            asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
            if (threadIdx.x % 128 == 0) mbar_arrive(&empty[s]);
#pragma unroll
            for (int i = 0; i < kRegs; ++i) acc[i] += d[i];
        } else {
            // keep this k-tile in flight; the previous one is done, so its stage goes back to the producer
            asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
            if (kt > 0 && threadIdx.x % 128 == 0) mbar_arrive(&empty[(kt - 1) % kStages]);
        }
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");

    // Both consumer warpgroups are done with the stages (named barrier 1: the 256 consumer threads); the
    // accumulators go through them to the tile epilogue, which writes coalesced row segments.
    asm volatile("bar.sync 1, 256;\n" ::: "memory");
    constexpr int kLd = kStagingLd<BN>;
    static_assert(kBm * kLd * sizeof(float) <= kStages * (kABytes + kBBytes), "the tile fits the stages");
    float* staged = reinterpret_cast<float*>(smem);
    const int t = threadIdx.x % 128;
    const int r0 = consumer * 64 + (t / 32) * 16 + (t % 32) / 4;
    const int c0 = (t % 4) * 2;
#pragma unroll
    for (int j = 0; j < BN / 8; ++j) {
#pragma unroll
        for (int i = 0; i < 2; ++i) {
            const int r = j * 4 + i * 2;
            const float2 v = Promote ? make_float2(acc[r], acc[r + 1]) : make_float2(d[r], d[r + 1]);
            *reinterpret_cast<float2*>(staged + (r0 + 8 * i) * kLd + c0 + 8 * j) = v;
        }
    }
    asm volatile("bar.sync 1, 256;\n" ::: "memory");
    if constexpr (!kEarlyColumns) cols = load_tile_columns<BN>(ep, gcol0, cols_left, consumer * 128 + t);
    // Split K inside a thread-block cluster (the splits of this tile are its blocks, rank = split): each rank sums
    // its slice of the tile's rows over every rank's partial tile, in rank order (the order of the epilogue pass
    // after a split through scratch: the same bits), then runs the epilogue on that slice. Compiled into the
    // one-block kernels only (the two-blocks kernels have no registers to spare for it).
    const unsigned ctas = kClusterSplit ? cluster_blocks() : 1;
    int r_first = 0, r_count = kBm;
    if (ctas > 1) {
        const unsigned rank = cluster_rank();
        r_first = static_cast<int>(rank * kBm / ctas);
        r_count = static_cast<int>((rank + 1) * kBm / ctas) - r_first;
        cluster_arrive();
        cluster_wait();  // every rank's partial tile is staged
        const uint32_t base = smem_u32(staged);
        for (int i = consumer * 128 + t; i < r_count * (BN / 4); i += 256) {
            const int off = (r_first + i / (BN / 4)) * kLd + (i % (BN / 4)) * 4;
            float4 sum = load_cluster_f4(base + off * 4, 0);
            for (unsigned q = 1; q < ctas; ++q) {
                const float4 v = load_cluster_f4(base + off * 4, q);
                sum.x = fp8ort_add_rn(sum.x, v.x), sum.y = fp8ort_add_rn(sum.y, v.y);
                sum.z = fp8ort_add_rn(sum.z, v.z), sum.w = fp8ort_add_rn(sum.w, v.w);
            }
            *reinterpret_cast<float4*>(staged + off) = sum;  // rows no other rank reads
        }
        cluster_arrive();  // done reading the other ranks' tiles; the wait below keeps this block's tile alive
        asm volatile("bar.sync 1, 256;\n" ::: "memory");
    }
    epilogue_tile<BN, 256, true>(ep, staged + r_first * kLd, kLd, r_count, row0 + r_first, gcol0, rows_left - r_first,
                                 cols_left, consumer * 128 + t, cols);
    if (ctas > 1) cluster_wait();  // no rank ends while another may still read its partial tile
}

#endif  // FP8ORT_HAS_WGMMA_FP8

// kPaced: the consumers' k-tiles through k_tiles_paced (one_block only).
template <fp8ort_fp8_format F, int BN, bool Promote, int kBlocks, bool kPaced = false>
__global__ void __launch_bounds__(sm90_tile<BN, kBlocks>::kThreads, kBlocks)
    gemm_sm90_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b, int64_t m,
                     int64_t n, int64_t k, epilogue_args ep) {
#if defined(FP8ORT_HAS_WGMMA_FP8)
    using tile = sm90_tile<BN, kBlocks>;
    constexpr int kStages = tile::kStages;
    extern __shared__ uint8_t smem_raw[];
    uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t{1023});
    uint8_t* sa = smem;
    uint8_t* sb = smem + kStages * kABytes;
    uint64_t* full = reinterpret_cast<uint64_t*>(sb + kStages * tile::kBBytes);
    uint64_t* empty = full + kStages;

    const int tiles_m = static_cast<int>((m + kBm - 1) / kBm);
    const int tiles_n = static_cast<int>((n + BN - 1) / BN);
    const int id = blockIdx.x;
    const int per_group = kGroupM * tiles_n;
    const int first_m = (id / per_group) * kGroupM;
    const int group_rows = min(tiles_m - first_m, kGroupM);
    const int tm = first_m + (id % per_group) % group_rows;
    const int tn = (id % per_group) / group_rows;
    const int all_k_tiles = static_cast<int>((k + kBk - 1) / kBk);
    const int kt0 = static_cast<int>(static_cast<int64_t>(blockIdx.y) * all_k_tiles / gridDim.y);
    const int k_tiles = static_cast<int>(static_cast<int64_t>(blockIdx.y + 1) * all_k_tiles / gridDim.y) - kt0;
    if (gridDim.y > 1 && !(kBlocks == 1 && cluster_blocks() > 1))  // split K through scratch: this split's tile
        ep.y = static_cast<float*>(ep.y) + static_cast<int64_t>(blockIdx.y) * m * n;

    if (threadIdx.x == 0) {
        for (int s = 0; s < kStages; ++s) {
            mbar_init(&full[s], 1);
            mbar_init(&empty[s], 2);  // one arrival per consumer warpgroup
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
    fp8ort_pdl_wait();  // launched with pdl: the kernel before it may still run; nothing global was touched above
    fp8ort_pdl_release();

    const int wg = warpgroup_index();
    if (wg == (kBlocks == 1 ? 0 : 2)) {  // the producer
        if constexpr (kBlocks == 1) asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
        prefetch_z_tile(ep, static_cast<int64_t>(tm) * kBm, ep.col_offset + static_cast<int64_t>(tn) * BN, kBm, BN,
                        m - static_cast<int64_t>(tm) * kBm, n - static_cast<int64_t>(tn) * BN, threadIdx.x % 128,
                        kBlocks == 1 ? 128 : 32);
        if (threadIdx.x % 128 == 0) {
            for (int kt = 0; kt < k_tiles; ++kt) {
                const int s = kt % kStages;
                if (kt >= kStages) mbar_wait(&empty[s], ((kt / kStages) & 1) ^ 1);
                mbar_expect_tx(&full[s], kABytes + tile::kBBytes);
                tma_load_2d(sa + s * kABytes, &map_a, (kt0 + kt) * kBk, tm * kBm, &full[s]);
                tma_load_2d(sb + s * tile::kBBytes, &map_b, (kt0 + kt) * kBk, tn * BN, &full[s]);
            }
        }
        return;
    }
    if constexpr (kBlocks == 1) asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
    consume_tiles<F, BN, Promote, kStages, true, kBlocks == 1, kBlocks == 1 && !kPaced, kPaced>(smem, sa, sb, full, empty, k_tiles, kBlocks == 1 ? wg - 1 : wg, ep,
                                                 static_cast<int64_t>(tm) * kBm,
                                                 ep.col_offset + static_cast<int64_t>(tn) * BN,
                                                 m - static_cast<int64_t>(tm) * kBm, n - static_cast<int64_t>(tn) * BN);
#else
    FP8ORT_TRAP();
#endif
}

// The streaming GEMM (two blocks per multiprocessor, 128 x 64 tiles): each block walks tiles blockIdx.x,
// + gridDim.x, ... instead of ending after one. The producer warp runs ahead into the next tiles' stages while the
// consumers run the epilogue, which each consumer warpgroup stages through its own shared buffer for its 64 rows,
// outside the ring: for short K, where a block that ends after one tile leaves its multiprocessor waiting on the
// next block's first loads. Float32 promotion per k-tile as the other promoting variants.
// The wide form (streaming_wide, K <= 128: one k-tile, so no promotion and the same sums as two_blocks): 128 x 128
// tiles with a ring of one stage, which the producer refills for the next tile as soon as both warpgroups' wgmma
// are done with it, while they run the epilogue; two blocks still fit a multiprocessor.
// The long form (streaming_long, kBlocks 1: long K, where one_block ends each tile with a pipeline fill and an
// epilogue that nothing overlaps): one_block's 128 x 128 tiles and lagged promotion, one block per multiprocessor
// with a ring of 4 stages
// and the staging buffer outside it, so the producer loads the next tile while the consumers run the epilogue (the
// ring and the staging take ~197 KB; one_block's 6 stages hold the staging themselves).
template <int BN, int kBlocks = 2>
struct sm90_stream_tile {
    static constexpr int kStages = kBlocks == 1 ? 4 : (BN == 128 ? 1 : 3);
    // consumer warpgroups 0 and 1, producer warp 8; with one block per multiprocessor a whole producer warpgroup,
    // so that setmaxnreg can move its registers to the consumers (warps 9-11 exit at once)
    static constexpr int kThreads = kBlocks == 1 ? 384 : 288;
    static constexpr int kBBytes = BN * kBk;
    static constexpr int kLd = kStagingLd<BN>;
    static constexpr size_t kRingBytes = static_cast<size_t>(kStages) * (kABytes + kBBytes);
    static constexpr size_t kStagingBytes = 2 * 64 * kLd * sizeof(float);
    static constexpr size_t kSmem = kRingBytes + kStagingBytes + 2 * kStages * 8 + 1024;
    static_assert(kSmem * kBlocks + 1024 * kBlocks <= 228 * 1024, "the blocks fit one multiprocessor");
};

// Output tile `id` (of tiles_m x tiles_n) in the order that walks kGroupM tiles of M per column of B (L2 reuse).
__device__ __forceinline__ void tile_coords(int id, int tiles_m, int tiles_n, int* tm, int* tn) {
    const int per_group = kGroupM * tiles_n;
    const int first_m = (id / per_group) * kGroupM;
    const int group_rows = min(tiles_m - first_m, kGroupM);
    *tm = first_m + (id % per_group) % group_rows;
    *tn = (id % per_group) / group_rows;
}

template <fp8ort_fp8_format F, int BN, bool Promote, int kBlocks = 2>
__global__ void __launch_bounds__(sm90_stream_tile<BN, kBlocks>::kThreads, kBlocks)
    gemm_sm90_stream_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b,
                            int64_t m, int64_t n, int64_t k, epilogue_args ep) {
#if defined(FP8ORT_HAS_WGMMA_FP8)
    using tile = sm90_stream_tile<BN, kBlocks>;
    constexpr int kStages = tile::kStages;
    constexpr int kLd = tile::kLd;
    extern __shared__ uint8_t smem_raw[];
    uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t{1023});
    uint8_t* sa = smem;
    uint8_t* sb = smem + kStages * kABytes;
    float* staging = reinterpret_cast<float*>(smem + tile::kRingBytes);
    uint64_t* full = reinterpret_cast<uint64_t*>(smem + tile::kRingBytes + tile::kStagingBytes);
    uint64_t* empty = full + kStages;

    const int tiles_m = static_cast<int>((m + kBm - 1) / kBm);
    const int tiles_n = static_cast<int>((n + BN - 1) / BN);
    const int tiles = tiles_m * tiles_n;
    const int k_tiles = static_cast<int>((k + kBk - 1) / kBk);

    if (threadIdx.x == 0) {
        for (int s = 0; s < kStages; ++s) {
            mbar_init(&full[s], 1);
            mbar_init(&empty[s], 2);  // one arrival per consumer warpgroup
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
    fp8ort_pdl_wait();  // launched with pdl: the kernel before it may still run; nothing global was touched above
    fp8ort_pdl_release();

    const int wg = warpgroup_index();
    if (wg == 2) {  // the producer warp: lane 0 issues the loads (`it` counts k-tiles over all of this block's
                    // tiles); every lane prefetches rows of a tile's residual just before its loads, and the warp
                    // moves on together (__syncwarp), so the prefetch runs about one tile ahead of the epilogue
        if constexpr (kBlocks == 1) {
            asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
            if (threadIdx.x >= 288) return;
        }
        const int lane = threadIdx.x - 256;
        int it = 0;
        for (int id = blockIdx.x; id < tiles; id += gridDim.x) {
            int tm, tn;
            tile_coords(id, tiles_m, tiles_n, &tm, &tn);
            prefetch_z_tile(ep, static_cast<int64_t>(tm) * kBm, ep.col_offset + static_cast<int64_t>(tn) * BN, kBm, BN,
                            m - static_cast<int64_t>(tm) * kBm, n - static_cast<int64_t>(tn) * BN, lane, 32);
            if (lane == 0) {
                for (int kt = 0; kt < k_tiles; ++kt, ++it) {
                    const int s = it % kStages;
                    if (it >= kStages) mbar_wait(&empty[s], ((it / kStages) & 1) ^ 1);
                    mbar_expect_tx(&full[s], kABytes + tile::kBBytes);
                    tma_load_2d(sa + s * kABytes, &map_a, kt * kBk, tm * kBm, &full[s]);
                    tma_load_2d(sb + s * tile::kBBytes, &map_b, kt * kBk, tn * BN, &full[s]);
                }
            }
            __syncwarp();
        }
        return;
    }

    // one block per multiprocessor: the consumers take the producer warpgroup's registers (128 x 40 + 256 x 232 fit
    // the 64 K), as one_block's do
    if constexpr (kBlocks == 1) asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
    constexpr int kRegs = BN / 2;
    const int t = threadIdx.x % 128;
    float* mine = staging + wg * 64 * kLd;  // this warpgroup's 64 rows
    const int r0 = (t / 32) * 16 + (t % 32) / 4;
    const int c0 = (t % 4) * 2;
    const uint64_t desc_a = smem_desc(sa + wg * 64 * kBk), desc_b = smem_desc(sb);
    int it = 0;
    for (int id = blockIdx.x; id < tiles; id += gridDim.x) {
        int tm, tn;
        tile_coords(id, tiles_m, tiles_n, &tm, &tn);
        float d[kRegs], acc[Promote ? kRegs : 1];
#pragma unroll
        for (int i = 0; i < kRegs; ++i) d[i] = 0.0f;
#pragma unroll
        for (int i = 0; i < (Promote ? kRegs : 1); ++i) acc[i] = 0.0f;
        if constexpr (Promote && kBlocks == 1) {
            k_tiles_lagged<F, BN, kStages>(desc_a, desc_b, full, empty, k_tiles, t, it, acc);
            it += k_tiles;
        } else for (int kt = 0; kt < k_tiles; ++kt, ++it) {
            const int s = it % kStages;
            mbar_wait(&full[s], (it / kStages) & 1);
            asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
            // promoting, the first wgmma overwrites d (scale-d 0)
            wgmma_k_tile<F, BN>(d, desc_a + s * (kABytes / 16), desc_b + s * (tile::kBBytes / 16), !Promote);
            asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
            asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
            if (t == 0) mbar_arrive(&empty[s]);
            if constexpr (Promote) {
#pragma unroll
                for (int i = 0; i < kRegs; ++i) acc[i] += d[i];
            }
        }
        // the previous tile's epilogue has read this warpgroup's staging rows (named barrier 1 + wg: 128 threads)
        if (wg == 0) asm volatile("bar.sync 1, 128;\n" ::: "memory");
        else asm volatile("bar.sync 2, 128;\n" ::: "memory");
#pragma unroll
        for (int j = 0; j < BN / 8; ++j) {
#pragma unroll
            for (int i = 0; i < 2; ++i) {
                const int r = j * 4 + i * 2;
                float2 v;
                if constexpr (Promote) v = make_float2(acc[r], acc[r + 1]);
                else v = make_float2(d[r], d[r + 1]);
                *reinterpret_cast<float2*>(mine + (r0 + 8 * i) * kLd + c0 + 8 * j) = v;
            }
        }
        if (wg == 0) asm volatile("bar.sync 1, 128;\n" ::: "memory");
        else asm volatile("bar.sync 2, 128;\n" ::: "memory");
        const int64_t row0 = static_cast<int64_t>(tm) * kBm + wg * 64;
        epilogue_tile<BN, 128, true>(ep, mine, kLd, 64, row0, ep.col_offset + static_cast<int64_t>(tn) * BN,
                                     m - row0, n - static_cast<int64_t>(tn) * BN, t);
    }
#else
    FP8ORT_TRAP();
#endif
}

// Implicit-GEMM convolution (NHWC, one group, in_c % 16 == 0): the producer warpgroup gathers A (128 output pixels
// x 128 bytes of (ky, kx, c)) with 16-byte cp.async into the 128-byte-swizzled layout TMA would produce, and one
// thread loads B (the packed weight [out_c, K]) by TMA. Each producer thread signals a stage once its own copies
// landed and are fenced for the async proxy; the full barrier counts 128 producer arrivals plus the TMA arrival.
constexpr int kConvSlots = kBm * (kBk / 16) / 128;  // 16-byte chunks per producer thread per stage
constexpr int kConvLag = 2;                         // stages a producer thread keeps in flight before signalling

// kBlocks 2: two blocks per multiprocessor, 80 registers for every thread (no setmaxnreg; ptxas spills ~60 bytes),
// 128 x 64 tiles: one block's epilogue and gather overlap the other's.
template <fp8ort_fp8_format F, int BN, int kBlocks>
__global__ void __launch_bounds__(kThreadsSm90, kBlocks)
    conv_sm90_kernel(const __grid_constant__ CUtensorMap map_b, conv_source_t<kConvSlots> src, int64_t n,
                     epilogue_args ep) {
#if defined(FP8ORT_HAS_WGMMA_FP8)
    using tile = sm90_tile<BN, kBlocks>;
    constexpr int kStages = tile::kStages;
    extern __shared__ uint8_t smem_raw[];
    uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t{1023});
    uint8_t* sa = smem;
    uint8_t* sb = smem + kStages * kABytes;
    uint64_t* full = reinterpret_cast<uint64_t*>(sb + kStages * tile::kBBytes);
    uint64_t* empty = full + kStages;

    const int64_t m = src.rows;
    const int tiles_m = static_cast<int>((m + kBm - 1) / kBm);
    const int tiles_n = static_cast<int>((n + BN - 1) / BN);
    const int id = blockIdx.x;
    const int per_group = kGroupM * tiles_n;
    const int first_m = (id / per_group) * kGroupM;
    const int group_rows = min(tiles_m - first_m, kGroupM);
    const int tm = first_m + (id % per_group) % group_rows;
    const int tn = (id % per_group) / group_rows;
    const int all_k_tiles = (src.k + kBk - 1) / kBk;
    const int kt0 = static_cast<int>(static_cast<int64_t>(blockIdx.y) * all_k_tiles / gridDim.y);
    const int k_tiles = static_cast<int>(static_cast<int64_t>(blockIdx.y + 1) * all_k_tiles / gridDim.y) - kt0;
    if (gridDim.y > 1 && !(kBlocks == 1 && cluster_blocks() > 1))  // split K through scratch: this split's tile
        ep.y = static_cast<float*>(ep.y) + static_cast<int64_t>(blockIdx.y) * m * n;

    if (threadIdx.x == 0) {
        for (int s = 0; s < kStages; ++s) {
            mbar_init(&full[s], 128 + 1);
            mbar_init(&empty[s], 2);
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
    fp8ort_pdl_wait();  // launched with pdl: the kernel before it may still run; nothing global was touched above
    fp8ort_pdl_release();

    const int wg = warpgroup_index();
    if (wg == 0) {
        if constexpr (kBlocks == 1) asm volatile("setmaxnreg.dec.sync.aligned.u32 104;\n");
        const int t = threadIdx.x;
        prefetch_z_tile(ep, static_cast<int64_t>(tm) * kBm, ep.col_offset + static_cast<int64_t>(tn) * BN, kBm, BN,
                        m - static_cast<int64_t>(tm) * kBm, n - static_cast<int64_t>(tn) * BN, t, 128);
        const int chunk = t % 8;
#pragma unroll
        for (int i = 0; i < kConvSlots; ++i) src.prepare(i, static_cast<int64_t>(tm) * kBm + t / 8 + 16 * i);
        for (int kt = 0; kt < k_tiles; ++kt) {
            const int s = kt % kStages;
            if (kt >= kStages) mbar_wait(&empty[s], ((kt / kStages) & 1) ^ 1);
            if (t == 0) {
                mbar_expect_tx(&full[s], tile::kBBytes);
                tma_load_2d(sb + s * tile::kBBytes, &map_b, (kt0 + kt) * kBk, tn * BN, &full[s]);
            }
            uint8_t* a_stage = sa + s * kABytes;
            const int kk = (kt0 + kt) * kBk + chunk * 16;
#pragma unroll
            for (int i = 0; i < kConvSlots; ++i) {
                const int row = t / 8 + 16 * i;
                const uint8_t* p = src.at(i, kk);
                const uint32_t dst = smem_u32(a_stage + row * kBk + ((chunk ^ (row & 7)) << 4));
                asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(p ? p : src.x),
                             "r"(p ? 16 : 0));
            }
            asm volatile("cp.async.commit_group;\n" ::: "memory");
            if (kt >= kConvLag) {
                asm volatile("cp.async.wait_group %0;\n" ::"n"(kConvLag) : "memory");
                asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
                mbar_arrive(&full[(kt - kConvLag) % kStages]);
            }
        }
        asm volatile("cp.async.wait_group 0;\n" ::: "memory");
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
        for (int kt = k_tiles > kConvLag ? k_tiles - kConvLag : 0; kt < k_tiles; ++kt) mbar_arrive(&full[kt % kStages]);
        return;
    }
    if constexpr (kBlocks == 1) asm volatile("setmaxnreg.inc.sync.aligned.u32 200;\n");
    consume_tiles<F, BN, true, kStages, false, kBlocks == 1>(smem, sa, sb, full, empty, k_tiles, wg - 1, ep,
                                               static_cast<int64_t>(tm) * kBm,
                                               ep.col_offset + static_cast<int64_t>(tn) * BN,
                                               m - static_cast<int64_t>(tm) * kBm, n - static_cast<int64_t>(tn) * BN);
#else
    FP8ORT_TRAP();
#endif
}

PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder() {
    static PFN_cuTensorMapEncodeTiled_v12000 fn = []() -> PFN_cuTensorMapEncodeTiled_v12000 {
        void* p = nullptr;
        cudaDriverEntryPointQueryResult q;
        if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &q) != cudaSuccess ||
            q != cudaDriverEntryPointSuccess)
            return nullptr;
        return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(p);
    }();
    return fn;
}

// Row-major [rows, k] bytes, box [box_rows, kBk], 128-byte swizzle, zero fill out of bounds.
fp8ort_status make_map(CUtensorMap* map, const uint8_t* base, int64_t rows, int64_t k, int box_rows) {
    PFN_cuTensorMapEncodeTiled_v12000 encode = tensor_map_encoder();
    if (!encode) return fail(FP8ORT_DEVICE_ERROR, "fp8ort_gemm: cuTensorMapEncodeTiled is not available from the driver");
    const cuuint64_t dims[2] = {static_cast<cuuint64_t>(k), static_cast<cuuint64_t>(rows)};
    const cuuint64_t strides[1] = {static_cast<cuuint64_t>(k)};
    const cuuint32_t box[2] = {static_cast<cuuint32_t>(kBk), static_cast<cuuint32_t>(box_rows)};
    const cuuint32_t elem_strides[2] = {1, 1};
    const CUresult r = encode(map, CU_TENSOR_MAP_DATA_TYPE_UINT8, 2, const_cast<uint8_t*>(base), dims, strides, box,
                              elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                              CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS) return fail(FP8ORT_DEVICE_ERROR, "fp8ort_gemm: cuTensorMapEncodeTiled failed (%d)", static_cast<int>(r));
    return FP8ORT_OK;
}

// The fewest k-tiles a split may have: 4, or FP8ORT_SPLIT_K_TILES=1..9 (read once) for A/B runs of small batches,
// where a 3x3 convolution's blocks run 4-5 k-tiles each in 15-18 us (ResNet-50 at batch 1, H100 profile).
int split_min_k_tiles() {
    static const int from_env = override_from_env("FP8ORT_SPLIT_K_TILES", '1', '9');
    return from_env != 0 ? from_env : 4;
}

// Whether a K split is summed inside a thread-block cluster (the splits of a tile are the blocks of one cluster,
// consume_tiles) instead of through scratch and an epilogue pass: on unless FP8ORT_SPLIT_CLUSTER=off (read once;
// ResNet-50 at batch 1 with graphs 1,504-1,515 -> 1,631-1,635 img/s on an H100, 2026-12-07). Clusters of up to 8
// blocks (the portable size), so splits are then at most 8; FP8ORT_SPLIT_CLUSTER_MAX=16 (opt-in, read once; tests
// pass with it, ResNet-50 at batch 1 1,610 against 1,633 img/s with the defaults, H100, 2026-12-07) allows Hopper's
// non-portable 16 where the kernel's clusters of that size fit (cluster_fits).
constexpr int kMaxClusterSplits = 16;
int cluster_split_limit() {
    static const int from_env = [] {
        const char* v = getenv("FP8ORT_SPLIT_CLUSTER_MAX");
        return v && strcmp(v, "16") == 0 ? 16 : 8;
    }();
    return from_env;
}
bool split_cluster_wanted() {
    static const bool from_env = on_off_from_env("FP8ORT_SPLIT_CLUSTER") != 1;
    return from_env;
}

// The launch attribute of clusters of (1, splits, 1) blocks: the splits of one output tile.
cudaLaunchAttribute split_cluster_dims(int splits) {
    cudaLaunchAttribute a;
    a.id = cudaLaunchAttributeClusterDimension;
    a.val.clusterDim.x = 1, a.val.clusterDim.y = static_cast<unsigned>(splits), a.val.clusterDim.z = 1;
    return a;
}

// Whether `kernel` can run `splits` blocks per cluster with this launch shape; `known` caches the answer per size for
// this kernel (0 unknown, 1 no, 2 yes). A GPU whose clusters of that size do not fit gets the scratch route.
template <class Kernel>
bool cluster_fits(std::atomic<int> (&known)[kMaxClusterSplits + 1], Kernel kernel, int splits, dim3 grid, dim3 block,
                  size_t smem) {
    if (splits < 2 || splits > cluster_split_limit()) return false;
    int k = known[splits].load();
    if (k == 0) {
        if (splits > 8) {  // past the portable size: the kernel must allow it before the query and the launch
            const cudaError_t a = cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
            if (a != cudaSuccess) {
                (void)cudaGetLastError();  // an answer of no, not an error of the launch
                known[splits].store(1);
                return false;
            }
        }
        cudaLaunchAttribute attr[1] = {split_cluster_dims(splits)};
        cudaLaunchConfig_t cfg = {};
        cfg.gridDim = grid, cfg.blockDim = block, cfg.dynamicSmemBytes = smem, cfg.attrs = attr, cfg.numAttrs = 1;
        int clusters = 0;
        const cudaError_t e = cudaOccupancyMaxActiveClusters(&clusters, kernel, &cfg);
        if (e != cudaSuccess) (void)cudaGetLastError();  // an answer of no, not an error of the launch
        k = e == cudaSuccess && clusters > 0 ? 2 : 1;
        known[splits].store(k);
    }
    return k == 2;
}

// Launch `kernel` with clusters of (1, splits, 1) blocks, as a programmatic dependent launch where pdl.
template <typename... Params, typename... Args>
void launch_clustered(bool pdl, void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem, hipStream_t stream,
                      int splits, const Args&... args) {
    cudaLaunchAttribute attr[2] = {split_cluster_dims(splits), {}};
    attr[1].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[1].val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid, cfg.blockDim = block, cfg.dynamicSmemBytes = smem, cfg.stream = stream;
    cfg.attrs = attr, cfg.numAttrs = pdl ? 2 : 1;
    (void)cudaLaunchKernelEx(&cfg, kernel, args...);  // an error stays the last error
}

// K splits for `tiles` output tiles of `k_tiles` k-tiles each, `per_sm` blocks per multiprocessor: as many as
// keep every split within one wave of blocks, at least split_min_k_tiles() k-tiles per split, at most kMaxSplits
// (cluster_split_limit() when the splits are summed in a cluster).
constexpr int kMaxSplits = 16;
int split_count(int64_t tiles, int64_t k_tiles, int per_sm) {
    const int64_t slots = static_cast<int64_t>(multiprocessors()) * per_sm;
    int64_t splits = tiles > 0 ? slots / tiles : 1;
    if (splits > k_tiles / split_min_k_tiles()) splits = k_tiles / split_min_k_tiles();
    const int most = split_cluster_wanted() ? cluster_split_limit() : kMaxSplits;
    if (splits > most) splits = most;
    return splits < 2 ? 1 : static_cast<int>(splits);
}

// The epilogue of a split: the float32 sum itself (null scales mean 1), row-major [m, n] per split.
epilogue_args raw_epilogue(float* workspace, int64_t n) {
    return epilogue_args{nullptr, nullptr, false, nullptr, nullptr, FP8ORT_FLOAT, nullptr, nullptr, false,
                         FP8ORT_FLOAT, workspace, n, 0};
}

template <fp8ort_fp8_format F, int BN, bool Promote, int kBlocks, bool kPaced = false>
fp8ort_status launch_typed(const uint8_t* a, const uint8_t* b, int64_t m, int64_t n, int64_t k, const epilogue_args& ep,
                           const sm90_split& split, hipStream_t stream) {
    using tile = sm90_tile<BN, kBlocks>;
    CUtensorMap map_a, map_b;
    FP8ORT_TRY(make_map(&map_a, a, m, k, kBm));
    FP8ORT_TRY(make_map(&map_b, b, n, k, BN));
    static const hipError_t attr = cudaFuncSetAttribute(gemm_sm90_kernel<F, BN, Promote, kBlocks, kPaced>,
                                                        cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                        static_cast<int>(tile::kSmem));
    FP8ORT_TRY(check_runtime(attr, "fp8ort_gemm: raising the shared-memory limit of the sm90a kernel"));
    const int64_t tiles = ((m + kBm - 1) / kBm) * ((n + BN - 1) / BN);
    if (tiles > 2147483647) return fail(FP8ORT_INVALID_ARGUMENT, "fp8ort_gemm: too many tiles");
    const bool splitting = split.splits > 1;
    const dim3 grid(static_cast<unsigned>(tiles), static_cast<unsigned>(splitting ? split.splits : 1));
    auto kernel = gemm_sm90_kernel<F, BN, Promote, kBlocks, kPaced>;
    static std::atomic<int> cluster_known[kMaxClusterSplits + 1];
    if (kBlocks == 1 && splitting && split_cluster_wanted() &&
        cluster_fits(cluster_known, kernel, split.splits, grid, dim3(tile::kThreads), tile::kSmem)) {
        launch_clustered(pdl_wanted(), kernel, grid, dim3(tile::kThreads), tile::kSmem, stream, split.splits, map_a,
                         map_b, m, n, k, ep);
        return check_launch("fp8ort_gemm (wgmma_sm90a, split K in clusters)");
    }
    launch_kernel(pdl_wanted(), kernel, grid, dim3(tile::kThreads), tile::kSmem,
                  stream, map_a, map_b, m, n, k, splitting ? raw_epilogue(split.workspace, n) : ep);
    FP8ORT_TRY(check_launch("fp8ort_gemm (wgmma_sm90a)"));
    if (!splitting) return FP8ORT_OK;
    return launch_epilogue_apply(split.workspace, n, m, n, ep, stream, "fp8ort_gemm (split-K epilogue)", split.splits,
                                 m * n);
}

template <fp8ort_fp8_format F, int BN, bool Promote, int kBlocks = 2>
fp8ort_status launch_stream(const uint8_t* a, const uint8_t* b, int64_t m, int64_t n, int64_t k,
                            const epilogue_args& ep, hipStream_t stream) {
    using tile = sm90_stream_tile<BN, kBlocks>;
    CUtensorMap map_a, map_b;
    FP8ORT_TRY(make_map(&map_a, a, m, k, kBm));
    FP8ORT_TRY(make_map(&map_b, b, n, k, BN));
    static const hipError_t attr = cudaFuncSetAttribute(gemm_sm90_stream_kernel<F, BN, Promote, kBlocks>,
                                                        cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                        static_cast<int>(tile::kSmem));
    FP8ORT_TRY(check_runtime(attr, "fp8ort_gemm: raising the shared-memory limit of the sm90a streaming kernel"));
    const int64_t tiles = ((m + kBm - 1) / kBm) * ((n + BN - 1) / BN);
    if (tiles > 2147483647) return fail(FP8ORT_INVALID_ARGUMENT, "fp8ort_gemm: too many tiles");
    const int64_t slots = static_cast<int64_t>(multiprocessors()) * kBlocks;  // resident blocks
    const unsigned blocks = static_cast<unsigned>(tiles < slots ? tiles : slots);
    launch_kernel(pdl_wanted(), gemm_sm90_stream_kernel<F, BN, Promote, kBlocks>, dim3(blocks), dim3(tile::kThreads),
                  tile::kSmem, stream, map_a, map_b, m, n, k, ep);
    return check_launch(kBlocks == 1 ? "fp8ort_gemm (wgmma_sm90a_stream_long)" : "fp8ort_gemm (wgmma_sm90a_stream)");
}

// Tile width and blocks per multiprocessor of a GEMM variant.
void gemm_geometry(sm90_variant v, int64_t k, int* bn, int* per_sm) {
    switch (v) {
        case sm90_variant::fast_accumulation: *bn = 256, *per_sm = 1; break;
        case sm90_variant::two_blocks: *bn = k <= kBk ? 128 : 64, *per_sm = 2; break;
        case sm90_variant::streaming: *bn = 64, *per_sm = 2; break;
        case sm90_variant::streaming_wide: *bn = k <= kBk ? 128 : 64, *per_sm = 2; break;
        default: *bn = 128, *per_sm = 1; break;
    }
}

// Whether one_block's consumers run k_tiles_paced instead of k_tiles_lagged: FP8ORT_GEMM_PACED=on (read once;
// opt-in until measured), E4M3FN only (one instantiation fewer).
bool paced_loop_wanted() {
    static const bool from_env = on_off_from_env("FP8ORT_GEMM_PACED") == 2;
    return from_env;
}

template <fp8ort_fp8_format F>
fp8ort_status launch_format(const uint8_t* a, const uint8_t* b, int64_t m, int64_t n, int64_t k, sm90_variant v,
                            const epilogue_args& ep, const sm90_split& split, hipStream_t stream) {
    switch (v) {
        case sm90_variant::fast_accumulation: return launch_typed<F, 256, false, 1>(a, b, m, n, k, ep, split, stream);
        case sm90_variant::two_blocks:
            // one k-tile: no float32 promotion needed (the same sums), so the wide tile fits two blocks' registers
            if (k <= kBk) return launch_typed<F, 128, false, 2>(a, b, m, n, k, ep, split, stream);
            return launch_typed<F, 64, true, 2>(a, b, m, n, k, ep, split, stream);
        case sm90_variant::streaming:
            // a split (few tiles, long K) runs as two_blocks: the splits are what fill the multiprocessors there
            if (split.splits > 1) return launch_typed<F, 64, true, 2>(a, b, m, n, k, ep, split, stream);
            return launch_stream<F, 64, true>(a, b, m, n, k, ep, stream);
        case sm90_variant::streaming_wide:
            // one k-tile only (no promotion: the sums of two_blocks); longer K or a split runs as two_blocks
            if (k <= kBk && split.splits <= 1) return launch_stream<F, 128, false>(a, b, m, n, k, ep, stream);
            if (k <= kBk) return launch_typed<F, 128, false, 2>(a, b, m, n, k, ep, split, stream);
            return launch_typed<F, 64, true, 2>(a, b, m, n, k, ep, split, stream);
        case sm90_variant::streaming_long:
            // a split (few tiles, long K) runs as one_block: the splits are what fill the multiprocessors there
            if (split.splits > 1) return launch_typed<F, 128, true, 1>(a, b, m, n, k, ep, split, stream);
            return launch_stream<F, 128, true, 1>(a, b, m, n, k, ep, stream);
        default:
            if constexpr (F == FP8ORT_E4M3FN) {
                if (paced_loop_wanted()) return launch_typed<F, 128, true, 1, true>(a, b, m, n, k, ep, split, stream);
            }
            return launch_typed<F, 128, true, 1>(a, b, m, n, k, ep, split, stream);
    }
}

template <fp8ort_fp8_format F, int BN, int kBlocks>
fp8ort_status launch_conv_typed(const uint8_t* x, const uint8_t* w, const fp8ort_conv_shape& s, int64_t out_h,
                                int64_t out_w, const epilogue_args& ep, const sm90_split& split, hipStream_t stream) {
    using tile = sm90_tile<BN, kBlocks>;
    const auto src = make_conv_source<kConvSlots>(x, s, out_h, out_w);
    CUtensorMap map_b;
    FP8ORT_TRY(make_map(&map_b, w, s.out_c, src.k, BN));
    static const hipError_t attr = cudaFuncSetAttribute(conv_sm90_kernel<F, BN, kBlocks>,
                                                        cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                        static_cast<int>(tile::kSmem));
    FP8ORT_TRY(check_runtime(attr, "fp8ort_conv_nhwc: raising the shared-memory limit of the sm90a kernel"));
    const int64_t tiles = ((src.rows + kBm - 1) / kBm) * ((s.out_c + BN - 1) / BN);
    if (tiles > 2147483647) return fail(FP8ORT_INVALID_ARGUMENT, "fp8ort_conv_nhwc: too many tiles");
    const bool splitting = split.splits > 1;
    const dim3 grid(static_cast<unsigned>(tiles), static_cast<unsigned>(splitting ? split.splits : 1));
    auto kernel = conv_sm90_kernel<F, BN, kBlocks>;
    static std::atomic<int> cluster_known[kMaxClusterSplits + 1];
    if (kBlocks == 1 && splitting && split_cluster_wanted() &&
        cluster_fits(cluster_known, kernel, split.splits, grid, dim3(kThreadsSm90), tile::kSmem)) {
        launch_clustered(pdl_wanted(), kernel, grid, dim3(kThreadsSm90), tile::kSmem, stream, split.splits, map_b, src,
                         s.out_c, ep);
        return check_launch("fp8ort_conv_nhwc (wgmma_sm90a, split K in clusters)");
    }
    launch_kernel(pdl_wanted(), kernel, grid, dim3(kThreadsSm90), tile::kSmem, stream, map_b,
                  src, s.out_c, splitting ? raw_epilogue(split.workspace, s.out_c) : ep);
    FP8ORT_TRY(check_launch("fp8ort_conv_nhwc (wgmma_sm90a)"));
    if (!splitting) return FP8ORT_OK;
    return launch_epilogue_apply(split.workspace, s.out_c, src.rows, s.out_c, ep, stream,
                                 "fp8ort_conv_nhwc (split-K epilogue)", split.splits, src.rows * s.out_c);
}

template <fp8ort_fp8_format F>
fp8ort_status launch_conv_format(const uint8_t* x, const uint8_t* w, const fp8ort_conv_shape& s, int64_t out_h,
                                 int64_t out_w, sm90_variant v, const epilogue_args& ep, const sm90_split& split,
                                 hipStream_t stream) {
    if (v == sm90_variant::two_blocks) return launch_conv_typed<F, 64, 2>(x, w, s, out_h, out_w, ep, split, stream);
    if (s.out_c <= 64) return launch_conv_typed<F, 64, 1>(x, w, s, out_h, out_w, ep, split, stream);
    return launch_conv_typed<F, 128, 1>(x, w, s, out_h, out_w, ep, split, stream);
}

}  // namespace

bool sm90_can_run(fp8ort_fp8_format format, int64_t m, int64_t n, int64_t k) {
#if defined(FP8ORT_BUILD_SM90A)
    // TMA needs 16-byte row strides; tile coordinates are int32
    return (format == FP8ORT_E4M3FN || format == FP8ORT_E5M2) && k % 16 == 0 && m < (int64_t{1} << 31) &&
           n < (int64_t{1} << 31) && k < (int64_t{1} << 31);
#else
    (void)format, (void)m, (void)n, (void)k;
    return false;
#endif
}

int sm90_gemm_splits(int64_t m, int64_t n, int64_t k, sm90_variant variant) {
    int bn = 128, per_sm = 1;
    gemm_geometry(variant, k, &bn, &per_sm);
    return split_count(((m + kBm - 1) / kBm) * ((n + bn - 1) / bn), (k + kBk - 1) / kBk, per_sm);
}

fp8ort_status launch_gemm_sm90(const uint8_t* a, const uint8_t* b, fp8ort_fp8_format format, int64_t m, int64_t n,
                               int64_t k, sm90_variant variant, const epilogue_args& ep, const sm90_split& split,
                               hipStream_t stream) {
    if ((reinterpret_cast<uintptr_t>(a) | reinterpret_cast<uintptr_t>(b)) % 16)
        return fail(FP8ORT_INVALID_ARGUMENT, "fp8ort_gemm: A and the packed weight must be 16-byte aligned for the sm90a kernel");
    if (format == FP8ORT_E5M2) return launch_format<FP8ORT_E5M2>(a, b, m, n, k, variant, ep, split, stream);
    return launch_format<FP8ORT_E4M3FN>(a, b, m, n, k, variant, ep, split, stream);
}

bool sm90_conv_can_run(fp8ort_fp8_format format, const fp8ort_conv_shape& s, const void* x, const void* w) {
#if defined(FP8ORT_BUILD_SM90A)
    const int64_t cg = s.in_c / s.group;
    return (format == FP8ORT_E4M3FN || format == FP8ORT_E5M2) && s.group == 1 && cg % 16 == 0 &&
           (reinterpret_cast<uintptr_t>(x) | reinterpret_cast<uintptr_t>(w)) % 16 == 0 && s.out_c < (int64_t{1} << 31);
#else
    (void)format, (void)s, (void)x, (void)w;
    return false;
#endif
}

int sm90_conv_splits(const fp8ort_conv_shape& s, int64_t out_h, int64_t out_w, sm90_variant variant) {
    const int bn = variant == sm90_variant::two_blocks || s.out_c <= 64 ? 64 : 128;
    const int64_t rows = s.batch * out_h * out_w, k = s.kernel_h * s.kernel_w * s.in_c;
    return split_count(((rows + kBm - 1) / kBm) * ((s.out_c + bn - 1) / bn), (k + kBk - 1) / kBk,
                       variant == sm90_variant::two_blocks ? 2 : 1);
}

fp8ort_status launch_conv_sm90(const uint8_t* x, const uint8_t* w, fp8ort_fp8_format format, const fp8ort_conv_shape& s,
                               int64_t out_h, int64_t out_w, sm90_variant variant, const epilogue_args& ep,
                               const sm90_split& split, hipStream_t stream) {
    if (format == FP8ORT_E5M2) return launch_conv_format<FP8ORT_E5M2>(x, w, s, out_h, out_w, variant, ep, split, stream);
    return launch_conv_format<FP8ORT_E4M3FN>(x, w, s, out_h, out_w, variant, ep, split, stream);
}

#else  // HIP: no Hopper kernel

bool sm90_can_run(fp8ort_fp8_format, int64_t, int64_t, int64_t) { return false; }
int sm90_gemm_splits(int64_t, int64_t, int64_t, sm90_variant) { return 1; }
int sm90_conv_splits(const fp8ort_conv_shape&, int64_t, int64_t, sm90_variant) { return 1; }
fp8ort_status launch_gemm_sm90(const uint8_t*, const uint8_t*, fp8ort_fp8_format, int64_t, int64_t, int64_t, sm90_variant,
                               const epilogue_args&, const sm90_split&, hipStream_t) {
    return fail(FP8ORT_UNSUPPORTED, "fp8ort_gemm: the wgmma kernel exists only in NVIDIA sm90a builds");
}
bool sm90_conv_can_run(fp8ort_fp8_format, const fp8ort_conv_shape&, const void*, const void*) { return false; }
fp8ort_status launch_conv_sm90(const uint8_t*, const uint8_t*, fp8ort_fp8_format, const fp8ort_conv_shape&, int64_t,
                               int64_t, sm90_variant, const epilogue_args&, const sm90_split&, hipStream_t) {
    return fail(FP8ORT_UNSUPPORTED, "fp8ort_conv_nhwc: the wgmma kernel exists only in NVIDIA sm90a builds");
}

#endif

}  // namespace fp8ort
