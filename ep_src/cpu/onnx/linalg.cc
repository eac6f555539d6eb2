// Float linear algebra ONNX ops on the CPU device: MatMul (NumPy batch broadcasting, 1-D operands), Gemm, and Conv
// (1-3 spatial dimensions, groups incl. depthwise, pads, strides, dilations, auto_pad). float32 accumulation.
#include <algorithm>
#include <cstring>

#include "cpu/onnx/common.h"
#include "cpu/onnx/gemm_f32.h"

namespace fp8ort {
namespace cpu_onnx {
namespace {

// Below this many multiply-adds per product, MatMul runs whole products in parallel rather than tiles of one.
constexpr int64_t kBatchParallelWork = 1 << 20;
// Conv goes through im2col + GEMM when a group has at least this many output channels (else direct loops).
constexpr int64_t kMinGemmChannels = 4;
constexpr int64_t kGrainElements = 1 << 15;  // elements (or multiply-adds) per thread-pool task, at least

class MatMulKernel : public Kernel {
 public:
  explicit MatMulKernel(const OrtKernelInfo* info) { oc_ = {"MatMul", node_name(info)}; }

  void compute(OrtKernelContext* ctx) override {
    const Tensor a = input(ctx, 0);
    const Tensor b = input(ctx, 1);
    if (a.type != b.type) fail("A and B must have the same type");
    const MatMulShape ms = matmul_shape(a.shape, b.shape);
    const int64_t m = ms.m, k = ms.k, n = ms.n;
    const std::vector<int64_t>& a_batch = ms.a_batch;
    const std::vector<int64_t>& b_batch = ms.b_batch;
    const std::vector<int64_t>& batch = ms.batch;
    const std::vector<int64_t>& shape = ms.out;
    Tensor y = output(ctx, 0, shape);
    if (y.size == 0) return;
    const std::vector<int64_t> sa = broadcast_strides(a_batch, batch);
    const std::vector<int64_t> sb = broadcast_strides(b_batch, batch);
    int64_t batches = 1;
    for (int64_t d : batch) batches *= d;
    // Offsets of each batch's A and B matrices.
    std::vector<int64_t> a_off(batches), b_off(batches);
    for (int64_t t = 0; t < batches; ++t) {
      int64_t rem = t;
      int64_t oa = 0;
      int64_t ob = 0;
      for (size_t d = batch.size(); d-- > 0;) {
        const int64_t i = rem % batch[d];
        rem /= batch[d];
        oa += i * sa[d];
        ob += i * sb[d];
      }
      a_off[t] = oa * m * k;
      b_off[t] = ob * k * n;
    }
    FloatIn ain(a);
    FloatIn bin(b);
    FloatOut yout(y);
    const float* ap = ain.data();
    const float* bp = bin.data();
    float* yp = yout.data();
    auto one = [&](OrtKernelContext* pool, int64_t t) {
      gemm_f32(pool, m, n, k, {ap + a_off[t], k, 1}, {bp + b_off[t], n, 1}, yp + t * m * n, n);
    };
    if (batches > 1 && m * n * k < kBatchParallelWork) {  // many small products: one per task
      parallel_ranges(ctx, batches, std::max<int64_t>(1, kGrainElements / std::max<int64_t>(1, m * n * k)),
                      [&](int64_t b, int64_t e) {
                        for (int64_t t = b; t < e; ++t) one(nullptr, t);
                      });
    } else {
      for (int64_t t = 0; t < batches; ++t) one(ctx, t);
    }
    yout.finish();
  }
};

// Y = alpha * A' B' + beta * C, C unidirectionally broadcast to [M, N].
class GemmKernel : public Kernel {
 public:
  explicit GemmKernel(const OrtKernelInfo* info) {
    oc_ = {"Gemm", node_name(info)};
    trans_a_ = attr_int(info, "transA", 0) != 0;
    trans_b_ = attr_int(info, "transB", 0) != 0;
    alpha_ = attr_float(info, "alpha", 1.0f);
    beta_ = attr_float(info, "beta", 1.0f);
  }

  void compute(OrtKernelContext* ctx) override {
    const Tensor a = input(ctx, 0);
    const Tensor b = input(ctx, 1);
    const Tensor c = input(ctx, 2);
    const bool has_c = c.present() && c.data != nullptr;
    const GemmShape gs = gemm_shape(a.shape, b.shape, has_c ? &c.shape : nullptr, trans_a_, trans_b_);
    const int64_t m = gs.m, k = gs.k, n = gs.n;
    std::vector<int64_t> c_strides;
    if (has_c) c_strides = broadcast_strides(c.shape, {m, n});
    Tensor y = output(ctx, 0, {m, n});
    if (y.size == 0) return;
    FloatIn ain(a);
    FloatIn bin(b);
    FloatIn cin(has_c ? c : a);
    FloatOut yout(y);
    const float* ap = ain.data();
    const float* bp = bin.data();
    float* yp = yout.data();
    const MatrixView av = trans_a_ ? MatrixView{ap, 1, m} : MatrixView{ap, k, 1};
    const MatrixView bv = trans_b_ ? MatrixView{bp, 1, k} : MatrixView{bp, n, 1};
    gemm_f32(ctx, m, n, k, av, bv, yp, n);
    for (int64_t row = 0; row < m; ++row) {
      float* dst = yp + row * n;
      for (int64_t j = 0; j < n; ++j) {
        float v = alpha_ * dst[j];
        if (has_c) v += beta_ * cin.data()[row * c_strides[0] + j * c_strides[1]];
        dst[j] = v;
      }
    }
    yout.finish();
  }

 private:
  bool trans_a_ = false;
  bool trans_b_ = false;
  float alpha_ = 1.0f;
  float beta_ = 1.0f;
};

class ConvKernel : public Kernel {
 public:
  explicit ConvKernel(const OrtKernelInfo* info) {
    oc_ = {"Conv", node_name(info)};
    attrs_.read(info);
    group_ = attr_int(info, "group", 1);
  }

  void compute(OrtKernelContext* ctx) override {
    const Tensor x = input(ctx, 0);
    const Tensor wt = input(ctx, 1);
    const Tensor b = input(ctx, 2);
    if (x.type != wt.type) fail("X and W must have the same type");
    const bool has_b = b.present() && b.data != nullptr;
    if (has_b && b.type != x.type) fail("B must have X's type");
    const ConvGeometry cs = conv_geometry(attrs_, group_, x.shape, wt.shape, has_b ? &b.shape : nullptr);
    const Window w = make_window(cs.axes);
    const int64_t batch = x.shape[0];
    const int64_t c_in = x.shape[1];
    const int64_t c_out = wt.shape[0];
    const std::vector<int64_t>& shape = cs.out;
    Tensor y = output(ctx, 0, shape);
    if (y.size == 0) return;
    FloatIn xin(x);
    FloatIn win(wt);
    FloatIn bin(has_b ? b : x);
    FloatOut yout(y);
    const int64_t cg = c_in / group_;
    const int64_t mg = c_out / group_;
    const int64_t ksize = w.kernel[0] * w.kernel[1] * w.kernel[2];
    if (mg >= kMinGemmChannels) {
      conv_gemm(ctx, w, xin.data(), win.data(), has_b ? bin.data() : nullptr, batch, c_in, c_out, yout.data());
      yout.finish();
      return;
    }
    auto task = [&](size_t p) {
      const int64_t nb = static_cast<int64_t>(p) / c_out;
      const int64_t oc = static_cast<int64_t>(p) % c_out;
      const int64_t g = oc / mg;
      float* dst = yout.data() + static_cast<int64_t>(p) * w.out_size();
      std::fill(dst, dst + w.out_size(), has_b ? bin.data()[oc] : 0.0f);
      for (int64_t ic = 0; ic < cg; ++ic) {
        const float* src = xin.data() + (nb * c_in + g * cg + ic) * w.in_size();
        const float* wk = win.data() + (oc * cg + ic) * ksize;
        accumulate_plane(w, src, wk, dst);
      }
    };
    parallel_ranges(ctx, batch * c_out, std::max<int64_t>(1, kGrainElements / std::max<int64_t>(1, w.out_size() * cg * ksize)),
                    [&](int64_t b, int64_t e) {
                      for (int64_t p = b; p < e; ++p) task(static_cast<size_t>(p));
                    });
    yout.finish();
  }

 private:
  // Per image and group: Y[mg, out] = W[mg, cg * ksize] x col[cg * ksize, out] (+ bias), col the im2col matrix
  // (the input itself for an unpadded 1x1 convolution with stride 1).
  void conv_gemm(OrtKernelContext* ctx, const Window& w, const float* x, const float* wt, const float* bias,
                 int64_t batch, int64_t c_in, int64_t c_out, float* y) const {
    const int64_t cg = c_in / group_;
    const int64_t mg = c_out / group_;
    const int64_t ksize = w.kernel[0] * w.kernel[1] * w.kernel[2];
    const int64_t rows = cg * ksize;
    const int64_t out = w.out_size();
    bool direct = ksize == 1;
    for (int d = 0; d < kMaxSpatial; ++d) {
      direct = direct && w.stride[d] == 1 && w.pad_begin[d] == 0 && w.pad_end[d] == 0;
    }
    std::vector<float> col(direct ? 0 : static_cast<size_t>(rows * out));
    for (int64_t nb = 0; nb < batch; ++nb) {
      for (int64_t g = 0; g < group_; ++g) {
        const float* src = x + (nb * c_in + g * cg) * w.in_size();
        if (!direct) {
          parallel_ranges(ctx, rows, std::max<int64_t>(1, kGrainElements / out), [&](int64_t b, int64_t e) {
            for (int64_t r = b; r < e; ++r) im2col_row(w, src, r, col.data() + r * out);
          });
        }
        float* dst = y + (nb * c_out + g * mg) * out;
        const MatrixView bv = direct ? MatrixView{src, w.in_size(), 1} : MatrixView{col.data(), out, 1};
        gemm_f32(ctx, mg, out, rows, {wt + g * mg * rows, rows, 1}, bv, dst, out);
        if (bias != nullptr) {
          for (int64_t i = 0; i < mg; ++i) {
            const float bv_i = bias[g * mg + i];
            float* row = dst + i * out;
            for (int64_t j = 0; j < out; ++j) row[j] += bv_i;
          }
        }
      }
    }
  }

  // Row r = (input channel, kd, kh, kw) of the im2col matrix: the input value each output position reads, or 0.
  static void im2col_row(const Window& w, const float* src, int64_t r, float* dst) {
    const int64_t ksize = w.kernel[0] * w.kernel[1] * w.kernel[2];
    const int64_t ic = r / ksize;
    const int64_t kidx = r % ksize;
    const int64_t kd = kidx / (w.kernel[1] * w.kernel[2]);
    const int64_t kh = kidx / w.kernel[2] % w.kernel[1];
    const int64_t kw = kidx % w.kernel[2];
    const float* plane = src + ic * w.in_size();
    const int64_t off_w = kw * w.dilation[2] - w.pad_begin[2];
    const int64_t s = w.stride[2];
    int64_t ow0 = off_w >= 0 ? 0 : (-off_w + s - 1) / s;
    int64_t ow1 = w.in[2] - off_w <= 0 ? 0 : (w.in[2] - off_w + s - 1) / s;
    ow0 = std::min(ow0, w.out[2]);
    ow1 = std::max(ow0, std::min(ow1, w.out[2]));
    for (int64_t od = 0; od < w.out[0]; ++od) {
      const int64_t id = od * w.stride[0] - w.pad_begin[0] + kd * w.dilation[0];
      for (int64_t oh = 0; oh < w.out[1]; ++oh) {
        const int64_t ih = oh * w.stride[1] - w.pad_begin[1] + kh * w.dilation[1];
        float* drow = dst + (od * w.out[1] + oh) * w.out[2];
        if (id < 0 || id >= w.in[0] || ih < 0 || ih >= w.in[1]) {
          std::fill(drow, drow + w.out[2], 0.0f);
          continue;
        }
        const float* srow = plane + (id * w.in[1] + ih) * w.in[2];
        std::fill(drow, drow + ow0, 0.0f);
        for (int64_t ow = ow0; ow < ow1; ++ow) drow[ow] = srow[ow * s + off_w];
        std::fill(drow + ow1, drow + w.out[2], 0.0f);
      }
    }
  }

  // dst[o] += sum_k wk[k] * src[o * stride - pad + k * dilation] over the valid taps, one input channel.
  static void accumulate_plane(const Window& w, const float* src, const float* wk, float* dst) {
    for (int64_t kd = 0; kd < w.kernel[0]; ++kd) {
      for (int64_t kh = 0; kh < w.kernel[1]; ++kh) {
        for (int64_t kw = 0; kw < w.kernel[2]; ++kw) {
          const float wv = wk[(kd * w.kernel[1] + kh) * w.kernel[2] + kw];
          // Output columns whose tap lands inside the input: iw = ow * s - p + kw * dil in [0, in).
          const int64_t off_w = kw * w.dilation[2] - w.pad_begin[2];
          int64_t ow0 = off_w >= 0 ? 0 : (-off_w + w.stride[2] - 1) / w.stride[2];
          int64_t ow1 = w.in[2] - off_w <= 0 ? 0 : (w.in[2] - off_w + w.stride[2] - 1) / w.stride[2];
          ow1 = std::min(ow1, w.out[2]);
          if (ow0 >= ow1) continue;
          for (int64_t od = 0; od < w.out[0]; ++od) {
            const int64_t id = od * w.stride[0] - w.pad_begin[0] + kd * w.dilation[0];
            if (id < 0 || id >= w.in[0]) continue;
            for (int64_t oh = 0; oh < w.out[1]; ++oh) {
              const int64_t ih = oh * w.stride[1] - w.pad_begin[1] + kh * w.dilation[1];
              if (ih < 0 || ih >= w.in[1]) continue;
              const float* srow = src + (id * w.in[1] + ih) * w.in[2];
              float* drow = dst + (od * w.out[1] + oh) * w.out[2];
              const int64_t s = w.stride[2];
              if (s == 1) {
                for (int64_t ow = ow0; ow < ow1; ++ow) drow[ow] += wv * srow[ow + off_w];
              } else {
                for (int64_t ow = ow0; ow < ow1; ++ow) drow[ow] += wv * srow[ow * s + off_w];
              }
            }
          }
        }
      }
    }
  }

  WindowAttrs attrs_;
  int64_t group_ = 1;
};

}  // namespace

std::vector<KernelDef> linalg_kernels() {
  const TypeList f = float_types();
  return {
      {"", "MatMul", 13, kLatestOpset, {{"T", f}}, {}, {}, make_kernel<MatMulKernel>},
      {"", "Gemm", 13, kLatestOpset, {{"T", f}}, {}, {}, make_kernel<GemmKernel>},
      {"", "Conv", 11, kLatestOpset, {{"T", f}}, {}, {}, make_kernel<ConvKernel>},
  };
}

}  // namespace cpu_onnx
}  // namespace fp8ort
