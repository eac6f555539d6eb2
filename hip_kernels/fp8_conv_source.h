// How the implicit-GEMM convolution finds its A operand in NHWC memory: row r = (image, oy, ox), k = (ky, kx, c)
// of group blockIdx.z. Shared by the portable kernel (fp8_gemm_core.h) and the sm90a kernel (fp8_gemm_sm90.hip).
#pragma once

#include "fp8_compat.h"
#include "fp8_kernels.h"

namespace fp8ort {

// Division by a divisor fixed at launch, for dividends in [0, 2^31): q = umulhi(n, magic) >> shift, with
// magic = ceil(2^(31 + l) / d) and l = ceil(log2 d) (divisor 1: magic 0 means q = n).
struct fast_div {
    uint32_t d = 1, magic = 0, shift = 0;
    static fast_div make(uint32_t divisor) {
        fast_div f;
        f.d = divisor;
        if (divisor > 1) {
            uint32_t l = 0;
            while ((uint64_t{1} << l) < divisor) ++l;
            f.magic = static_cast<uint32_t>(((uint64_t{1} << (31 + l)) + divisor - 1) / divisor);
            f.shift = l - 1;
        }
        return f;
    }
    __device__ __forceinline__ uint32_t div(uint32_t n) const { return magic ? __umulhi(n, magic) >> shift : n; }
};

// A of the implicit GEMM: row r = (image, oy, ox), k = (ky, kx, c) of group blockIdx.z; padding reads zero.
// K, in_h * in_w and every coordinate fit in int32 (checked on the host); image offsets are int64.
template <int kSlots>
struct conv_source_t {
    const uint8_t* x;
    int64_t rows;
    int k;
    int in_h, in_w, in_c, group_c, kernel_w;
    int stride_h, stride_w, pad_top, pad_left, dilation_h, dilation_w;
    int64_t out_hw;
    int out_w;
    fast_div by_group_c, by_kernel_w;
    // decoded rows of this thread (one per chunk slot); image < 0 marks a row past the end
    int64_t image_offset[kSlots];
    int iy0[kSlots], ix0[kSlots];
    bool live[kSlots];

    __device__ void prepare(int slot, int64_t row) {
        live[slot] = row < rows;
        const int64_t r = row < rows ? row : 0;
        const int64_t image = r / out_hw;
        const int p = static_cast<int>(r - image * out_hw);
        image_offset[slot] = image * in_h * in_w * in_c + static_cast<int64_t>(blockIdx.z) * group_c;
        iy0[slot] = (p / out_w) * stride_h - pad_top;
        ix0[slot] = (p % out_w) * stride_w - pad_left;
    }
    // k index -> (channel, kernel row, kernel column)
    __device__ __forceinline__ void decode(int kk, int& c, int& ky, int& kx) const {
        const int tap = static_cast<int>(by_group_c.div(static_cast<uint32_t>(kk)));
        c = kk - tap * group_c;
        ky = static_cast<int>(by_kernel_w.div(static_cast<uint32_t>(tap)));
        kx = tap - ky * kernel_w;
    }
    // address of (row of `slot`, k index kk) or nullptr for padding / past the end
    __device__ __forceinline__ const uint8_t* at(int slot, int kk) const {
        if (!live[slot] || kk >= k) return nullptr;
        int c, ky, kx;
        decode(kk, c, ky, kx);
        const int iy = iy0[slot] + ky * dilation_h;
        const int ix = ix0[slot] + kx * dilation_w;
        if (iy < 0 || iy >= in_h || ix < 0 || ix >= in_w) return nullptr;
        return x + image_offset[slot] + static_cast<int64_t>(iy * in_w + ix) * in_c + c;
    }
    __device__ const uint8_t* chunk(int slot, int64_t, int64_t kk, bool, bool& valid) const {
        const uint8_t* p = at(slot, static_cast<int>(kk));
        valid = p != nullptr;
        return valid ? p : x;
    }
    // 16 consecutive k of one row, any group_c: decode (tap, c) once, then walk channels and taps.
    __device__ void bytes16(int slot, int64_t, int64_t kk0, uint8_t (&out)[16]) const {
        int kk = static_cast<int>(kk0);
        int c, ky, kx;
        decode(kk < k ? kk : 0, c, ky, kx);
        const uint8_t* pixel = nullptr;
        bool fresh = true;
#pragma unroll
        for (int e = 0; e < 16; ++e, ++kk) {
            if (fresh) {
                const int iy = iy0[slot] + ky * dilation_h, ix = ix0[slot] + kx * dilation_w;
                const bool inside = live[slot] && iy >= 0 && iy < in_h && ix >= 0 && ix < in_w;
                pixel = inside ? x + image_offset[slot] + static_cast<int64_t>(iy * in_w + ix) * in_c : nullptr;
                fresh = false;
            }
            out[e] = (pixel && kk < k) ? pixel[c] : 0;
            if (++c == group_c) {
                c = 0;
                fresh = true;
                if (++kx == kernel_w) kx = 0, ++ky;
            }
        }
    }
};

// Everything but the per-slot rows, filled on the host from an fp8ort_conv_shape (checked by the caller).
template <int kSlots>
conv_source_t<kSlots> make_conv_source(const uint8_t* x, const fp8ort_conv_shape& s, int64_t out_h, int64_t out_w) {
    conv_source_t<kSlots> src{};
    const int64_t cg = s.in_c / s.group;
    src.x = x;
    src.rows = s.batch * out_h * out_w;
    src.k = static_cast<int>(s.kernel_h * s.kernel_w * cg);
    src.in_h = static_cast<int>(s.in_h), src.in_w = static_cast<int>(s.in_w), src.in_c = static_cast<int>(s.in_c);
    src.group_c = static_cast<int>(cg), src.kernel_w = static_cast<int>(s.kernel_w);
    src.out_hw = out_h * out_w, src.out_w = static_cast<int>(out_w);
    src.stride_h = static_cast<int>(s.stride_h), src.stride_w = static_cast<int>(s.stride_w);
    src.pad_top = static_cast<int>(s.pad_top), src.pad_left = static_cast<int>(s.pad_left);
    src.dilation_h = static_cast<int>(s.dilation_h), src.dilation_w = static_cast<int>(s.dilation_w);
    src.by_group_c = fast_div::make(static_cast<uint32_t>(cg));
    src.by_kernel_w = fast_div::make(static_cast<uint32_t>(s.kernel_w));
    return src;
}

}  // namespace fp8ort
