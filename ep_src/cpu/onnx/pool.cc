// Pooling and reduction ONNX ops on the CPU device: MaxPool, AveragePool (1-3 spatial dimensions, pads, strides,
// dilations, ceil_mode), GlobalAveragePool, ReduceMean (axes as attribute before opset 18, as input from 18), and
// CumSum (a running sum along one axis).
#include <algorithm>
#include <cmath>
#include <limits>

#include "cpu/onnx/common.h"

namespace fp8ort {
namespace cpu_onnx {
namespace {

constexpr int64_t kGrainTaps = 1 << 15;  // window taps per thread-pool task, at least

// Pools one [D, H, W] plane; kind: max (with optional argmax index) or average.
class PoolKernel : public Kernel {
 public:
  PoolKernel(const OrtKernelInfo* info, bool is_max) : is_max_(is_max) {
    oc_ = {is_max ? "MaxPool" : "AveragePool", node_name(info)};
    attrs_.read(info);
    count_include_pad_ = attr_int(info, "count_include_pad", 0) != 0;
    if (attr_int(info, "storage_order", 0) != 0) {
      fail("storage_order=1 (column-major Indices) is not supported; use storage_order=0");
    }
  }

  void compute(OrtKernelContext* ctx) override {
    const Tensor x = input(ctx, 0);
    const Window w = make_window(window_geometry(attrs_, x.shape, attrs_.kernel_shape));
    std::vector<int64_t> shape = {x.shape[0], x.shape[1]};
    for (int d = kMaxSpatial - w.rank; d < kMaxSpatial; ++d) shape.push_back(w.out[d]);
    size_t n_out = 0;
    check(g_ort->KernelContext_GetOutputCount(ctx, &n_out), "KernelContext_GetOutputCount");
    Tensor y = output(ctx, 0, shape);
    int64_t* indices = nullptr;
    if (is_max_ && n_out > 1) indices = static_cast<int64_t*>(output(ctx, 1, shape).mutable_data);
    if (y.size == 0) return;
    FloatIn xin(x);
    FloatOut yout(y);
    const float* xp = xin.data();
    float* yp = yout.data();
    const int64_t planes = x.shape[0] * x.shape[1];
    const TapRanges ranges = tap_ranges(w);
    const int64_t work = std::max<int64_t>(1, w.out_size() * w.kernel[0] * w.kernel[1] * w.kernel[2]);
    parallel_ranges(ctx, planes, std::max<int64_t>(1, kGrainTaps / work), [&](int64_t b, int64_t e) {
      for (int64_t plane = b; plane < e; ++plane) {
        pool_plane(w, ranges, xp + plane * w.in_size(), yp + plane * w.out_size(),
                   indices ? indices + plane * w.out_size() : nullptr, plane * w.in_size());
      }
    });
    yout.finish();
  }

 private:
  // Per spatial dimension and output index: the window's taps that land inside the input [k0, k1), and the count
  // of taps inside the padded input (count_include_pad), so the inner loops need no bounds tests.
  struct TapRanges {
    std::vector<int64_t> k0[kMaxSpatial], k1[kMaxSpatial], padded[kMaxSpatial];
  };

  static TapRanges tap_ranges(const Window& w) {
    TapRanges r;
    auto ceil_div = [](int64_t a, int64_t b) { return a <= 0 ? 0 : (a + b - 1) / b; };
    for (int d = 0; d < kMaxSpatial; ++d) {
      for (int64_t o = 0; o < w.out[d]; ++o) {
        const int64_t start = o * w.stride[d] - w.pad_begin[d];
        const int64_t k0 = ceil_div(-start, w.dilation[d]);
        const int64_t k1 = std::max(k0, std::min(w.kernel[d], ceil_div(w.in[d] - start, w.dilation[d])));
        r.k0[d].push_back(std::min(k0, w.kernel[d]));
        r.k1[d].push_back(k1);
        r.padded[d].push_back(std::min(w.kernel[d], ceil_div(w.in[d] + w.pad_end[d] - start, w.dilation[d])));
      }
    }
    return r;
  }

  void pool_plane(const Window& w, const TapRanges& r, const float* x, float* y, int64_t* idx, int64_t base) const {
    for (int64_t od = 0; od < w.out[0]; ++od) {
      const int64_t sd = od * w.stride[0] - w.pad_begin[0];
      for (int64_t oh = 0; oh < w.out[1]; ++oh) {
        const int64_t sh = oh * w.stride[1] - w.pad_begin[1];
        for (int64_t ow = 0; ow < w.out[2]; ++ow) {
          const int64_t sw = ow * w.stride[2] - w.pad_begin[2];
          float best = -std::numeric_limits<float>::infinity();
          int64_t best_at = -1;
          float sum = 0.0f;
          for (int64_t kd = r.k0[0][od]; kd < r.k1[0][od]; ++kd) {
            const int64_t id = sd + kd * w.dilation[0];
            for (int64_t kh = r.k0[1][oh]; kh < r.k1[1][oh]; ++kh) {
              const int64_t row = (id * w.in[1] + sh + kh * w.dilation[1]) * w.in[2] + sw;
              if (is_max_) {
                for (int64_t kw = r.k0[2][ow]; kw < r.k1[2][ow]; ++kw) {
                  const int64_t at = row + kw * w.dilation[2];
                  if (x[at] > best || best_at < 0) {
                    best = x[at];
                    best_at = at;
                  }
                }
              } else {
                for (int64_t kw = r.k0[2][ow]; kw < r.k1[2][ow]; ++kw) sum += x[row + kw * w.dilation[2]];
              }
            }
          }
          const int64_t out_at = (od * w.out[1] + oh) * w.out[2] + ow;
          if (is_max_) {
            y[out_at] = best;
            if (idx) idx[out_at] = best_at < 0 ? -1 : base + best_at;
            continue;
          }
          const int64_t count = count_include_pad_
                                    ? r.padded[0][od] * r.padded[1][oh] * r.padded[2][ow]
                                    : (r.k1[0][od] - r.k0[0][od]) * (r.k1[1][oh] - r.k0[1][oh]) *
                                          (r.k1[2][ow] - r.k0[2][ow]);
          y[out_at] = count > 0 ? sum / static_cast<float>(count) : 0.0f;
        }
      }
    }
  }

  bool is_max_;
  bool count_include_pad_ = false;
  WindowAttrs attrs_;
};

std::unique_ptr<Kernel> make_max_pool(const OrtKernelInfo* info) { return std::make_unique<PoolKernel>(info, true); }
std::unique_ptr<Kernel> make_avg_pool(const OrtKernelInfo* info) { return std::make_unique<PoolKernel>(info, false); }

class GlobalAveragePoolKernel : public Kernel {
 public:
  explicit GlobalAveragePoolKernel(const OrtKernelInfo* info) { oc_ = {"GlobalAveragePool", node_name(info)}; }

  void compute(OrtKernelContext* ctx) override {
    const Tensor x = input(ctx, 0);
    if (x.shape.size() < 3) fail(std::string("input shape ") + shape_str(x.shape) + " must be [N, C, D1, ...]");
    std::vector<int64_t> shape(x.shape.size(), 1);
    shape[0] = x.shape[0];
    shape[1] = x.shape[1];
    int64_t spatial = 1;
    for (size_t d = 2; d < x.shape.size(); ++d) spatial *= x.shape[d];
    Tensor y = output(ctx, 0, shape);
    if (y.size == 0) return;
    FloatIn xin(x);
    FloatOut yout(y);
    const float* xp = xin.data();
    float* yp = yout.data();
    auto task = [&](size_t p) {
      const float* src = xp + static_cast<int64_t>(p) * spatial;
      double sum = 0.0;
      for (int64_t i = 0; i < spatial; ++i) sum += src[i];
      yp[p] = spatial > 0 ? static_cast<float>(sum / static_cast<double>(spatial)) : NAN;
    };
    parallel_ranges(ctx, y.size, std::max<int64_t>(1, kGrainTaps / std::max<int64_t>(1, spatial)),
                    [&](int64_t b, int64_t e) {
                      for (int64_t p = b; p < e; ++p) task(static_cast<size_t>(p));
                    });
    yout.finish();
  }
};

class ReduceMeanKernel : public Kernel {
 public:
  ReduceMeanKernel(const OrtKernelInfo* info, bool axes_input) : axes_input_(axes_input) {
    oc_ = {"ReduceMean", node_name(info)};
    keepdims_ = attr_int(info, "keepdims", 1) != 0;
    noop_with_empty_axes_ = attr_int(info, "noop_with_empty_axes", 0) != 0;
    if (!axes_input) axes_ = attr_ints(info, "axes");
  }

  void compute(OrtKernelContext* ctx) override {
    const Tensor x = input(ctx, 0);
    std::vector<int64_t> axes = axes_;
    if (axes_input_) {
      const Tensor a = input(ctx, 1);
      if (a.present() && a.data != nullptr) axes = read_ints(a, "axes");
    }
    const int64_t rank = static_cast<int64_t>(x.shape.size());
    if (axes.empty()) {
      if (axes_input_ && noop_with_empty_axes_) {
        Tensor y = output(ctx, 0, x.shape);
        FloatIn xin(x);
        FloatOut yout(y);
        std::copy(xin.data(), xin.data() + x.size, yout.data());
        yout.finish();
        return;
      }
    }
    const std::vector<bool> reduce = reduced_axes(axes, rank);
    std::vector<int64_t> shape;
    std::vector<int64_t> kept;  // the output's shape with reduced dimensions kept as 1
    int64_t count = 1;
    for (int64_t d = 0; d < rank; ++d) {
      if (reduce[d]) {
        count *= x.shape[d];
        kept.push_back(1);
        if (keepdims_) shape.push_back(1);
      } else {
        kept.push_back(x.shape[d]);
        shape.push_back(x.shape[d]);
      }
    }
    Tensor y = output(ctx, 0, shape);
    if (y.size == 0) return;
    std::vector<double> acc(static_cast<size_t>(y.size), 0.0);
    if (x.size > 0) {
      FloatIn xin(x);
      const float* xp = xin.data();
      // Walk the input; the output offset of each input element is its index with reduced dimensions at 0.
      const std::vector<int64_t> out_strides = broadcast_strides(kept, x.shape);
      std::vector<int64_t> unit(rank, 1);
      for (int64_t d = rank - 1; d > 0; --d) unit[d - 1] = unit[d] * x.shape[d];
      for_each_broadcast_row(nullptr, x.shape, {unit, out_strides},
                             [&](int64_t, const int64_t* off, int64_t n, const int64_t* st) {
                               const float* src = xp + off[0];
                               double* dst = acc.data() + off[1];
                               for (int64_t i = 0; i < n; ++i) dst[i * st[1]] += src[i];
                             });
    }
    FloatOut yout(y);
    float* yp = yout.data();
    for (int64_t i = 0; i < y.size; ++i) {
      yp[i] = count > 0 ? static_cast<float>(acc[i] / static_cast<double>(count)) : NAN;
    }
    yout.finish();
  }

 private:
  bool axes_input_;
  bool keepdims_ = true;
  bool noop_with_empty_axes_ = false;
  std::vector<int64_t> axes_;
};

std::unique_ptr<Kernel> make_reduce_mean_13(const OrtKernelInfo* info) {
  return std::make_unique<ReduceMeanKernel>(info, false);
}
std::unique_ptr<Kernel> make_reduce_mean_18(const OrtKernelInfo* info) {
  return std::make_unique<ReduceMeanKernel>(info, true);
}

// CumSum(x, axis): running sums along `axis` (a scalar in CPU memory); exclusive leaves each element out of its own
// sum, reverse runs from the end. Sums accumulate in the element type, one add per element as onnxruntime does
// (integers wrap).
class CumSumKernel : public Kernel {
 public:
  explicit CumSumKernel(const OrtKernelInfo* info) {
    oc_ = {"CumSum", node_name(info)};
    exclusive_ = attr_int(info, "exclusive", 0) != 0;
    reverse_ = attr_int(info, "reverse", 0) != 0;
  }

  void compute(OrtKernelContext* ctx) override {
    const Tensor x = input(ctx, 0);
    const int64_t rank = static_cast<int64_t>(x.shape.size());
    const int64_t axis = cumsum_axis(input(ctx, 1), rank);
    Tensor y = output(ctx, 0, x.shape);
    if (x.size == 0) return;
    const int64_t n = x.shape[axis];
    int64_t inner = inner_size(x.shape, axis);
    const int64_t outer = x.size / (n * inner);
    switch (x.type) {
      case kF32: run<float, float>(ctx, x, y, outer, n, inner); break;
      case kI64: run<int64_t, uint64_t>(ctx, x, y, outer, n, inner); break;
      case kI32: run<int32_t, uint32_t>(ctx, x, y, outer, n, inner); break;
      default:
        fail(std::string("element type ") + type_name(x.type) + " is not supported; use float32, int64 or int32");
    }
  }

 private:
  // A: the accumulator (unsigned for integers: wrapping, no undefined overflow).
  template <class T, class A>
  void run(OrtKernelContext* ctx, const Tensor& x, Tensor& y, int64_t outer, int64_t n, int64_t inner) const {
    const T* xp = static_cast<const T*>(x.data);
    T* yp = static_cast<T*>(y.mutable_data);
    const int64_t first = reverse_ ? n - 1 : 0;
    const int64_t step = reverse_ ? -inner : inner;
    parallel_ranges(ctx, outer * inner, std::max<int64_t>(1, kGrainTaps / n), [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t) {
        const int64_t o = t / inner, i = t % inner;
        const T* src = xp + o * n * inner + i + first * inner;
        T* dst = yp + o * n * inner + i + first * inner;
        A acc = A(0);
        for (int64_t k = 0; k < n; ++k) {
          const A v = static_cast<A>(src[k * step]);
          if (exclusive_) {
            dst[k * step] = static_cast<T>(acc);
            acc = acc + v;
          } else {
            acc = acc + v;
            dst[k * step] = static_cast<T>(acc);
          }
        }
      }
    });
  }

  bool exclusive_ = false;
  bool reverse_ = false;
};

}  // namespace

std::vector<KernelDef> pool_kernels() {
  const TypeList f = float_types();
  return {
      {"", "MaxPool", 12, kLatestOpset, {{"T", f}, {"I", {kI64}}}, {}, {}, make_max_pool},
      {"", "AveragePool", 11, 18, {{"T", f}}, {}, {}, make_avg_pool},
      {"", "AveragePool", 19, kLatestOpset, {{"T", f}}, {}, {}, make_avg_pool},  // dilations
      {"", "GlobalAveragePool", 1, kLatestOpset, {{"T", f}}, {}, {}, make_kernel<GlobalAveragePoolKernel>},
      {"", "ReduceMean", 13, 17, {{"T", f}}, {}, {}, make_reduce_mean_13},
      {"", "ReduceMean", 18, kLatestOpset, {{"T", f}}, {}, {}, make_reduce_mean_18},
      // CumSum 14 adds float16 and bfloat16 (not taken here)
      {"", "CumSum", 11, kLatestOpset, {{"T", {kF32, kI64, kI32}}, {"T2", index_types()}}, {}, {},
       make_kernel<CumSumKernel>},
  };
}

}  // namespace cpu_onnx
}  // namespace fp8ort
