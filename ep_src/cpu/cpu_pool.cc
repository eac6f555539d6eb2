// FP8MaxPool on the CPU: 2-D max pooling of NHWC data, FP8 (compared on decoded values, the winning byte copied) or
// float32/float16. The rules of docs/operators.md: padding never wins, a NaN tap wins for good, ties go to the first
// tap in window order.
#include <algorithm>
#include <cstring>

#include "cpu/cpu_kernels.h"

namespace fp8ort {
namespace {

constexpr int64_t kGrainTaps = 1 << 15;  // channel taps per thread-pool task, at least

// Decoders of one element to float32 (exact), one per storage type.
struct Fp8Decode {
  const float* table;
  float operator()(const uint8_t* p, int64_t i) const { return table[p[i]]; }
};
struct F16Decode {
  float operator()(const uint16_t* p, int64_t i) const { return f16_to_f32(p[i]); }
};
struct F32Decode {
  float operator()(const float* p, int64_t i) const { return p[i]; }
};

// Pools output pixels [b, e) (flat over n, oy, ox); best/state are per-channel scratch of size c.
template <class T, class Decode>
void pool_pixels(const MaxPoolShape& s, const T* x, T* y, Decode decode, int64_t b, int64_t e) {
  std::vector<float> best(static_cast<size_t>(s.c));
  std::vector<uint8_t> state(static_cast<size_t>(s.c));  // 0: no tap yet, 1: a value, 2: NaN (final)
  for (int64_t p = b; p < e; ++p) {
    const int64_t ox = p % s.ow, oy = (p / s.ow) % s.oh, n = p / (s.ow * s.oh);
    T* out = y + p * s.c;
    std::fill(state.begin(), state.end(), uint8_t{0});
    for (int64_t ky = 0; ky < s.kh; ++ky) {
      const int64_t iy = oy * s.sh - s.pad_top + ky * s.dh;
      if (iy < 0 || iy >= s.h) continue;
      for (int64_t kx = 0; kx < s.kw; ++kx) {
        const int64_t ix = ox * s.sw - s.pad_left + kx * s.dw;
        if (ix < 0 || ix >= s.w) continue;
        const T* src = x + ((n * s.h + iy) * s.w + ix) * s.c;
        for (int64_t c = 0; c < s.c; ++c) {
          if (state[c] == 2) continue;
          const float v = decode(src, c);
          if (state[c] == 0 || v != v || v > best[c]) {
            best[c] = v;
            out[c] = src[c];
            state[c] = v != v ? 2 : 1;
          }
        }
      }
    }
  }
}

class CpuMaxPool final : public Kernel {
 public:
  explicit CpuMaxPool(const OrtKernelInfo* info) {
    oc_ = {"FP8MaxPool", node_name(info)};
    attrs_ = parse_max_pool_attrs(info);
  }

  void compute(OrtKernelContext* ctx) override {
    const MaxPoolRun run = begin_max_pool(ctx, attrs_);
    const Tensor &x = run.x, &y = run.y;
    const MaxPoolShape& s = run.shape;
    if (y.size == 0) return;
    const int64_t pixels = s.n * s.oh * s.ow;
    const int64_t per_task = std::max<int64_t>(1, kGrainTaps / std::max<int64_t>(1, s.kh * s.kw * s.c));
    const size_t tasks = static_cast<size_t>((pixels + per_task - 1) / per_task);
    auto task = [&](size_t t) {
      const int64_t b = static_cast<int64_t>(t) * per_task, e = std::min(pixels, b + per_task);
      switch (x.type) {
        case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT:
          pool_pixels(s, static_cast<const float*>(x.data), static_cast<float*>(y.mutable_data), F32Decode{}, b, e);
          break;
        case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16:
          pool_pixels(s, static_cast<const uint16_t*>(x.data), static_cast<uint16_t*>(y.mutable_data), F16Decode{}, b,
                      e);
          break;
        default:
          pool_pixels(s, static_cast<const uint8_t*>(x.data), static_cast<uint8_t*>(y.mutable_data),
                      Fp8Decode{fp8_decode_table(fp8_format_of(x.type))}, b, e);
          break;
      }
    };
    parallel_for(ctx, tasks, task);
  }

 private:
  MaxPoolAttrs attrs_;
};

}  // namespace

std::unique_ptr<Kernel> create_cpu_max_pool(const OrtKernelInfo* info) { return std::make_unique<CpuMaxPool>(info); }

}  // namespace fp8ort
