// Pooling and reduction ONNX ops on the CPU device: MaxPool, AveragePool (1-3 spatial dimensions, pads, strides,
// dilations, ceil_mode), GlobalAveragePool, ReduceMean (axes as attribute before opset 18, as input from 18).
#include <algorithm>
#include <cmath>
#include <limits>

#include "cpu/onnx/common.h"

namespace fp8ort {
namespace cpu_onnx {
namespace {

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
    const Window w = make_window(attrs_, x.shape, attrs_.kernel_shape);
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
    auto task = [&](size_t p) {
      const int64_t plane = static_cast<int64_t>(p);
      pool_plane(w, xp + plane * w.in_size(), yp + plane * w.out_size(),
                 indices ? indices + plane * w.out_size() : nullptr, plane * w.in_size());
    };
    parallel_for(ctx, static_cast<size_t>(planes), task);
    yout.finish();
  }

 private:
  void pool_plane(const Window& w, const float* x, float* y, int64_t* idx, int64_t base) const {
    for (int64_t od = 0; od < w.out[0]; ++od) {
      for (int64_t oh = 0; oh < w.out[1]; ++oh) {
        for (int64_t ow = 0; ow < w.out[2]; ++ow) {
          float best = -std::numeric_limits<float>::infinity();
          int64_t best_at = -1;
          float sum = 0.0f;
          int64_t valid = 0;
          int64_t padded = 0;
          const int64_t o[kMaxSpatial] = {od, oh, ow};
          int64_t start[kMaxSpatial];
          for (int d = 0; d < kMaxSpatial; ++d) start[d] = o[d] * w.stride[d] - w.pad_begin[d];
          for (int64_t kd = 0; kd < w.kernel[0]; ++kd) {
            const int64_t id = start[0] + kd * w.dilation[0];
            for (int64_t kh = 0; kh < w.kernel[1]; ++kh) {
              const int64_t ih = start[1] + kh * w.dilation[1];
              for (int64_t kw = 0; kw < w.kernel[2]; ++kw) {
                const int64_t iw = start[2] + kw * w.dilation[2];
                const bool in_pad = id >= -w.pad_begin[0] && id < w.in[0] + w.pad_end[0] &&
                                    ih >= -w.pad_begin[1] && ih < w.in[1] + w.pad_end[1] &&
                                    iw >= -w.pad_begin[2] && iw < w.in[2] + w.pad_end[2];
                padded += in_pad ? 1 : 0;
                if (id < 0 || id >= w.in[0] || ih < 0 || ih >= w.in[1] || iw < 0 || iw >= w.in[2]) continue;
                const int64_t at = (id * w.in[1] + ih) * w.in[2] + iw;
                const float v = x[at];
                if (v > best || best_at < 0) {
                  best = v;
                  best_at = at;
                }
                sum += v;
                ++valid;
              }
            }
          }
          const int64_t out_at = (od * w.out[1] + oh) * w.out[2] + ow;
          if (is_max_) {
            y[out_at] = best;
            if (idx) idx[out_at] = best_at < 0 ? -1 : base + best_at;
          } else {
            const int64_t count = count_include_pad_ ? padded : valid;
            y[out_at] = count > 0 ? sum / static_cast<float>(count) : 0.0f;
          }
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
    parallel_for(ctx, static_cast<size_t>(y.size), task);
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
    std::vector<bool> reduce(rank, false);
    if (axes.empty()) {
      if (axes_input_ && noop_with_empty_axes_) {
        Tensor y = output(ctx, 0, x.shape);
        FloatIn xin(x);
        FloatOut yout(y);
        std::copy(xin.data(), xin.data() + x.size, yout.data());
        yout.finish();
        return;
      }
      std::fill(reduce.begin(), reduce.end(), true);
    }
    for (int64_t a : axes) reduce[normalize_axis(a, rank, "axes entry")] = true;
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
  };
}

}  // namespace cpu_onnx
}  // namespace fp8ort
