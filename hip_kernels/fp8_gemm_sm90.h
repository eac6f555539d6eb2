// The Hopper (sm_90a) FP8 GEMM: TMA loads into 128-byte-swizzled shared memory, wgmma m64n128k32 / m64n256k32,
// a producer warpgroup and two consumer warpgroups. Only NVIDIA sm90a builds contain it.
#pragma once

#include "fp8_epilogue.h"

namespace fp8ort {

// Whether launch_gemm_sm90 takes this problem (format and alignment; the device is checked separately).
bool sm90_can_run(fp8ort_fp8_format format, int64_t m, int64_t n, int64_t k);
bool device_is_sm90();
// one_block: 128 x 128 tiles, one block per multiprocessor, a deep ring of stages; each 128-deep partial sum is
// added into float32 registers (Hopper's FP8 wgmma keeps about 14 bits while it accumulates), one k-tile behind the
// wgmma, which run on into the next k-tile meanwhile (two accumulator sets).
// two_blocks: two blocks per multiprocessor so that one block's epilogue overlaps the other's work; for short K,
// where the epilogue dominates. Same float32 promotion; 128 x 128 tiles when K <= 128, else 128 x 64.
// fast_accumulation: 128 x 256 tiles accumulating all of K inside wgmma (cuBLASLt's FAST_ACCUM).
// streaming (GEMM only): two_blocks' geometry with 128 x 64 tiles, but each block walks several tiles and its
// producer loads the next tile's stages during the epilogue, staged outside the ring. A split K runs as two_blocks.
// streaming_wide (K <= 128, opt-in: fp8ort_gemm_set_wide_stream, FP8ORT_WIDE_STREAM=on): streaming with two_blocks'
// 128 x 128 tiles and a one-stage ring, in place of two_blocks; compiled and tested for its bits, not yet measured.
// streaming_long (opt-in, measured slower than one_block: override 8, or FP8ORT_GEMM_PERSISTENT=on where the
// automatic choice is one_block):
// one_block's 128 x 128 tiles and lagged promotion in one block per multiprocessor that walks tiles as streaming
// does, its producer loading the next tile during the epilogue. A split K runs as one_block.
enum class sm90_variant { one_block, two_blocks, fast_accumulation, streaming, streaming_wide, streaming_long };
// Host: whether K <= 128 problems wider than 64 columns take streaming_wide instead of two_blocks.
bool wide_stream_wanted();
// The variant fp8ort_gemm picks when no override asks for one, from ResNet-50's 1x1 layers on an H200
// (bench/conv_layers.py, batch 256 and 32): streaming for K <= 512 (5-30% faster than two_blocks per layer),
// except K <= 128 with N > 64, where two_blocks' 128 x 128 tiles win (64 -> 256 channels: 0.44 against 0.55 ms);
// one_block for longer K.
inline sm90_variant sm90_default_variant(int64_t k, int64_t n) {
    if (k <= 128 && n > 64) return wide_stream_wanted() ? sm90_variant::streaming_wide : sm90_variant::two_blocks;
    return k <= 512 ? sm90_variant::streaming : sm90_variant::one_block;
}
// Split K (small M, long K): `splits` > 1 sums k-tile ranges in separate blocks into `workspace` (splits * M * N
// float32), then a second kernel adds them in order and applies the epilogue. splits 1: one pass, no workspace.
struct sm90_split {
    int splits = 1;
    float* workspace = nullptr;
};
// Scratch bytes for `splits` partial sums of `outputs` values (0 when splits < 2).
inline size_t sm90_split_bytes(int splits, int64_t outputs) {
    return splits < 2 ? 0 : static_cast<size_t>(splits) * static_cast<size_t>(outputs) * sizeof(float);
}
// The split a launch uses: `splits` when the caller's workspace holds them (16-byte aligned), else one pass.
inline sm90_split sm90_split_for(int splits, int64_t outputs, void* workspace, size_t workspace_bytes) {
    sm90_split split;
    if (splits > 1 && workspace && workspace_bytes >= sm90_split_bytes(splits, outputs) &&
        reinterpret_cast<uintptr_t>(workspace) % 16 == 0) {
        split.splits = splits;
        split.workspace = static_cast<float*>(workspace);
    }
    return split;
}
// Splits that fill the device's multiprocessors for this problem (1: none).
int sm90_gemm_splits(int64_t m, int64_t n, int64_t k, sm90_variant variant);
fp8ort_status launch_gemm_sm90(const uint8_t* a, const uint8_t* b, fp8ort_fp8_format format, int64_t m, int64_t n,
                               int64_t k, sm90_variant variant, const epilogue_args& ep, const sm90_split& split,
                               hipStream_t stream);

// The sm90a implicit-GEMM convolution: one group, in_c % 16 == 0, OCP formats, 16-byte aligned X and weight.
bool sm90_conv_can_run(fp8ort_fp8_format format, const fp8ort_conv_shape& s, const void* x, const void* w);
// one_block: 128 x 64 tiles for out_c <= 64, else 128 x 128; two_blocks: 128 x 64 tiles, two blocks per
// multiprocessor. Automatic choice from ResNet-50's layers on an H200 (bench/conv_layers.py): two blocks won
// where out_c <= 64 or K = kh * kw * in_c <= 512, one block for the wider, longer layers. Override 4 / 5 forces one.
inline sm90_variant sm90_conv_variant(int override_value, const fp8ort_conv_shape& s) {
    if (override_value == 4) return sm90_variant::one_block;
    if (override_value == 5) return sm90_variant::two_blocks;
    const int64_t k = s.kernel_h * s.kernel_w * s.in_c;
    return s.out_c <= 64 || k <= 512 ? sm90_variant::two_blocks : sm90_variant::one_block;
}
int sm90_conv_splits(const fp8ort_conv_shape& s, int64_t out_h, int64_t out_w, sm90_variant variant);
fp8ort_status launch_conv_sm90(const uint8_t* x, const uint8_t* w, fp8ort_fp8_format format, const fp8ort_conv_shape& s,
                               int64_t out_h, int64_t out_w, sm90_variant variant, const epilogue_args& ep,
                               const sm90_split& split, hipStream_t stream);
// An on|off environment variable as the A/B setters' values: 2 on, 1 off, 0 unset or anything else (the callers
// read it once and let a setter's nonzero value take precedence).
int on_off_from_env(const char* name);
// A one-digit value from the environment in [lo, hi], else 0 (unset or anything else: no override).
int override_from_env(const char* name, char lo, char hi);
// fp8ort_gemm_set_kernel_override's value (0 automatic, 1 portable, 2 sm90a, 3 sm90a fast accumulation,
// 4 sm90a one block per multiprocessor, 5 sm90a two blocks per multiprocessor, 6 sm90a streaming, 7 small K,
// 8 sm90a streaming with one block per multiprocessor and 128 x 128 tiles).
int gemm_kernel_override();
// gemm_kernel_override(), or else FP8ORT_CONV_KERNEL (4 or 5) from the environment: the convolution's choice.
int conv_kernel_override();
// Whether fp8ort_gemm runs this problem (pointers unchecked) on the sm90a wgmma kernel.
bool gemm_takes_sm90(fp8ort_fp8_format format, int64_t m, int64_t n, int64_t k);

}  // namespace fp8ort
