// FP8Conv on the CPU, and the im2col + packed GEMM engine that FP8MatMul shares.
#include <algorithm>

#include "cpu/cpu_kernels.h"

namespace fp8ort {
namespace {

constexpr int64_t kColumnBlock = 8 * kNR;       // output positions per task
constexpr int64_t kQuantizeChunk = 1 << 15;     // elements per task when quantizing X

// Fills b[jp][t][kNR] with the input values under every reduction index t for output positions [p0, p1).
void pack_columns(const ConvGeometry& g, const float* x, int64_t n, int64_t grp, int64_t p0, int64_t p1,
                  std::vector<int64_t>& base_h, std::vector<int64_t>& base_w, double* b) {
  const int64_t np = p1 - p0;
  const int64_t panels = (np + kNR - 1) / kNR;
  const int64_t k = g.k();
  const int64_t cols = panels * kNR;
  base_h.resize(static_cast<size_t>(cols));
  base_w.resize(static_cast<size_t>(cols));
  for (int64_t q = 0; q < cols; ++q) {
    if (q < np) {
      const int64_t p = p0 + q;
      base_h[q] = (p / g.ow) * g.sh - g.pt;
      base_w[q] = (p % g.ow) * g.sw - g.pl;
    } else {
      base_h[q] = -(1LL << 40);  // padding column: always out of bounds, packs zeros
      base_w[q] = 0;
    }
  }
  // A panel whose 8 columns sit on one output row reads its inputs with one stride per tap (fast path).
  thread_local std::vector<uint8_t> same_row;
  same_row.assign(static_cast<size_t>(panels), 0);
  for (int64_t jp = 0; jp < panels; ++jp) {
    const int64_t q0 = jp * kNR;
    same_row[jp] = q0 + kNR <= np && base_h[q0] == base_h[q0 + kNR - 1];
  }
  const int64_t cg = g.cg();
  const int64_t xs = g.nhwc ? g.c : 1;  // stride between neighbouring input columns
  for (int64_t c = 0; c < cg; ++c) {
    const int64_t ch = grp * cg + c;
    const float* plane = g.nhwc ? x + n * g.h * g.w * g.c + ch : x + (n * g.c + ch) * g.h * g.w;
    for (int64_t i = 0; i < g.kh; ++i) {
      for (int64_t j = 0; j < g.kw; ++j) {
        const int64_t t = reduction_index(g, c, i, j);
        const int64_t oh_off = i * g.dh, ow_off = j * g.dw;
        for (int64_t jp = 0; jp < panels; ++jp) {
          double* dst = b + (jp * k + t) * kNR;
          const int64_t q0 = jp * kNR;
          const int64_t ih = base_h[q0] + oh_off, iw0 = base_w[q0] + ow_off;
          if (same_row[jp] && ih >= 0 && ih < g.h && iw0 >= 0 && iw0 + (kNR - 1) * g.sw < g.w) {
            const float* src = plane + (ih * g.w + iw0) * xs;
            const int64_t step = g.sw * xs;
            for (int jj = 0; jj < kNR; ++jj) dst[jj] = src[jj * step];
            continue;
          }
          for (int jj = 0; jj < kNR; ++jj) {
            const int64_t q = q0 + jj;
            const int64_t ihq = base_h[q] + oh_off, iwq = base_w[q] + ow_off;
            dst[jj] = (ihq >= 0 && ihq < g.h && iwq >= 0 && iwq < g.w) ? plane[(ihq * g.w + iwq) * xs] : 0.0;
          }
        }
      }
    }
  }
}

struct ConvTask {
  const ConvGeometry* g;
  const float* xq;
  const PackedWeights* w;
  const Epilogue* epi;
  void* y;
  MicroKernel mk;
  int64_t blocks_per_plane;

  void operator()(size_t task) const {
    thread_local std::vector<double> bbuf, cbuf;
    thread_local std::vector<int64_t> base_h, base_w;
    const ConvGeometry& gm = *g;
    const int64_t per_image = gm.group * blocks_per_plane;
    const int64_t n = static_cast<int64_t>(task) / per_image;
    const int64_t grp = (static_cast<int64_t>(task) % per_image) / blocks_per_plane;
    const int64_t blk = static_cast<int64_t>(task) % blocks_per_plane;
    const int64_t plane = gm.oh * gm.ow;
    const int64_t p0 = blk * kColumnBlock, p1 = std::min(plane, p0 + kColumnBlock);
    const int64_t panels = (p1 - p0 + kNR - 1) / kNR;
    const int64_t k = gm.k();
    const int64_t ldc = panels * kNR;
    bbuf.resize(static_cast<size_t>(panels * k * kNR));
    cbuf.resize(static_cast<size_t>(w->panels * kMR * ldc));
    pack_columns(gm, xq, n, grp, p0, p1, base_h, base_w, bbuf.data());
    for (int64_t k0 = 0; k0 < k; k0 += kKC) {
      const int64_t kc = std::min(kKC, k - k0);
      for (int64_t mp = 0; mp < w->panels; ++mp) {
        const double* a = w->panel(grp, mp) + k0 * kMR;
        for (int64_t jp = 0; jp < panels; ++jp) {
          mk(kc, a, bbuf.data() + (jp * k + k0) * kNR, cbuf.data() + mp * kMR * ldc + jp * kNR, ldc, k0 > 0);
        }
      }
    }
    const int64_t mg = gm.mg();
    if (gm.nhwc) {  // per output position: this group's channels are contiguous in Y
      for (int64_t p = p0; p < p1; ++p) {
        epi->apply_span(cbuf.data() + (p - p0), ldc, grp * mg, 1, (n * plane + p) * gm.m + grp * mg, mg, y);
      }
    } else {  // per channel: a row of output positions
      for (int64_t r = 0; r < mg; ++r) {
        const int64_t ch = grp * mg + r;
        epi->apply_span(cbuf.data() + r * ldc, 1, ch, 0, (n * gm.m + ch) * plane + p0, p1 - p0, y);
      }
    }
  }
};

// Direct convolution for groups with few output channels (depthwise): the GEMM tiles would idle.
struct DirectConvTask {
  const ConvGeometry* g;
  const float* xq;
  const std::vector<double>* wd;  // [m][cg][kh][kw] decoded
  const Epilogue* epi;
  void* y;

  void operator()(size_t task) const {
    const ConvGeometry& gm = *g;
    const int64_t n = static_cast<int64_t>(task) / gm.m;
    const int64_t ch = static_cast<int64_t>(task) % gm.m;
    const int64_t grp = ch / gm.mg();
    const int64_t cg = gm.cg();
    const int64_t plane = gm.oh * gm.ow;
    const double* wrow = wd->data() + ch * cg * gm.kh * gm.kw;
    for (int64_t oh = 0; oh < gm.oh; ++oh) {
      for (int64_t ow = 0; ow < gm.ow; ++ow) {
        double acc = 0.0;
        for (int64_t c = 0; c < cg; ++c) {
          const int64_t in_ch = grp * cg + c;
          for (int64_t i = 0; i < gm.kh; ++i) {
            const int64_t ih = oh * gm.sh - gm.pt + i * gm.dh;
            if (ih < 0 || ih >= gm.h) continue;
            for (int64_t j = 0; j < gm.kw; ++j) {
              const int64_t iw = ow * gm.sw - gm.pl + j * gm.dw;
              if (iw < 0 || iw >= gm.w) continue;
              const float xv = gm.nhwc ? xq[((n * gm.h + ih) * gm.w + iw) * gm.c + in_ch]
                                       : xq[((n * gm.c + in_ch) * gm.h + ih) * gm.w + iw];
              acc += static_cast<double>(xv) * wrow[(c * gm.kh + i) * gm.kw + j];
            }
          }
        }
        const int64_t p = oh * gm.ow + ow;
        const int64_t idx = gm.nhwc ? (n * plane + p) * gm.m + ch : (n * gm.m + ch) * plane + p;
        epi->apply_span(&acc, 1, ch, 0, idx, 1, y);
      }
    }
  }
};

class CpuConv final : public Kernel {
 public:
  explicit CpuConv(const OrtKernelInfo* info) {
    oc_ = {"FP8Conv", node_name(info)};
    attrs_ = parse_conv_attrs(info);
    common_ = parse_common_attrs(info);
    if (const OrtValue* w = constant_input(info, 1)) {
      prepare_weights(describe(w), packed_, direct_w_);
      prepacked_ = true;
    }
  }

  void compute(OrtKernelContext* ctx) override {
    Tensor x = input(ctx, 0);
    Tensor w = input(ctx, 1);
    require_type(x, "X", is_high_precision_type(x.type) || is_fp8_type(x.type), "float32, float16, bfloat16 or FP8");
    require_type(w, "W", is_fp8_type(w.type), "an FP8 type (float8e4m3fn, float8e4m3fnuz, ...)");
    PackedWeights local_packed;
    std::vector<double> local_direct;
    if (!prepacked_) prepare_weights(w, local_packed, local_direct);
    const PackedWeights& packed = prepacked_ ? packed_ : local_packed;
    const std::vector<double>& direct_w = prepacked_ ? direct_w_ : local_direct;
    ConvShape s = conv_shape(attrs_, x.shape, w.shape);
    const float x_scale = read_scalar_scale(input(ctx, 2), "x_scale");
    std::vector<float> w_scale = read_channel_scale(input(ctx, 3), "w_scale", s.m);
    Epilogue epi = make_epilogue(ctx, common_, x_scale, w_scale, s.y_shape, s.m, "B");
    Tensor y = output(ctx, 0, s.y_shape);
    check_output_type(y, common_.output_type);
    if (y.size == 0) return;
    ConvGeometry g{s.n, s.c, s.h, s.w, s.m, s.kh, s.kw, s.group, s.oh, s.ow};
    g.sh = attrs_.strides[0];
    g.sw = attrs_.strides[1];
    g.pt = attrs_.pads[0];
    g.pl = attrs_.pads[1];
    g.dh = attrs_.dilations[0];
    g.dw = attrs_.dilations[1];
    g.nhwc = attrs_.nhwc;
    std::vector<float> xq;
    quantize_activations(ctx, x, x_scale, fp8_format_of(w.type), xq);
    if (g.mg() < kMR / 2) {
      DirectConvTask task{&g, xq.data(), &direct_w, &epi, y.mutable_data};
      parallel_for(ctx, static_cast<size_t>(g.n * g.m), task);
    } else {
      run_conv_gemm(ctx, g, xq.data(), packed, epi, y.mutable_data);
    }
  }

 private:
  // Decodes W once: packed GEMM panels, or a plain decoded copy for the direct (depthwise) path.
  void prepare_weights(const Tensor& w, PackedWeights& packed, std::vector<double>& direct_w) const {
    require_type(w, "W", is_fp8_type(w.type), "an FP8 type (float8e4m3fn, float8e4m3fnuz, ...)");
    if (w.shape.size() != 4) fail("input W must be 4-D [M, C/group, kH, kW]; got shape " + shape_str(w.shape));
    const int64_t m = w.shape[0], cg = w.shape[1], kh = w.shape[2], kw = w.shape[3];
    if (m % attrs_.group != 0) {
      fail("W has " + std::to_string(m) + " output channels, not divisible by group=" + std::to_string(attrs_.group));
    }
    const float* table = fp8_decode_table(fp8_format_of(w.type));
    const uint8_t* codes = static_cast<const uint8_t*>(w.data);
    const int64_t mg = m / attrs_.group;
    ConvGeometry g{};
    g.kh = kh;
    g.kw = kw;
    g.c = cg * attrs_.group;
    g.group = attrs_.group;
    g.nhwc = attrs_.nhwc;
    if (mg < kMR / 2) {
      direct_w.resize(static_cast<size_t>(w.size));
      for (int64_t i = 0; i < w.size; ++i) direct_w[i] = table[codes[i]];
      return;
    }
    packed.pack(attrs_.group, mg, cg * kh * kw, [&](int64_t grp, int64_t r, int64_t t) -> double {
      // invert reduction_index: t -> (c, i, j)
      int64_t c, i, j;
      if (g.nhwc) {
        c = t % cg;
        i = (t / cg) / kw;
        j = (t / cg) % kw;
      } else {
        c = t / (kh * kw);
        i = (t / kw) % kh;
        j = t % kw;
      }
      return table[codes[(((grp * mg + r) * cg + c) * kh + i) * kw + j]];
    });
  }

  ConvAttrs attrs_;
  CommonAttrs common_;
  bool prepacked_ = false;
  PackedWeights packed_;
  std::vector<double> direct_w_;
};

}  // namespace

void quantize_activations(OrtKernelContext* ctx, const Tensor& x, float x_scale, Fp8Format fmt,
                          std::vector<float>& out) {
  out.resize(static_cast<size_t>(x.size));
  float* dst = out.data();
  const int64_t size = x.size;
  const Fp8Rounder round(fmt);
  auto task = [&](size_t chunk) {
    const int64_t b = static_cast<int64_t>(chunk) * kQuantizeChunk, e = std::min(size, b + kQuantizeChunk);
    if (is_fp8_type(x.type)) {
      const float* table = fp8_decode_table(fp8_format_of(x.type));
      const uint8_t* src = static_cast<const uint8_t*>(x.data);
      for (int64_t i = b; i < e; ++i) dst[i] = table[src[i]];
    } else if (x.type == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT) {
      const float* src = static_cast<const float*>(x.data);
      for (int64_t i = b; i < e; ++i) dst[i] = round(src[i] / x_scale);
    } else {
      for (int64_t i = b; i < e; ++i) dst[i] = round(load_float(x.data, x.type, i) / x_scale);
    }
  };
  parallel_for(ctx, static_cast<size_t>((size + kQuantizeChunk - 1) / kQuantizeChunk), task);
}

void run_conv_gemm(OrtKernelContext* ctx, const ConvGeometry& g, const float* xq, const PackedWeights& w,
                   const Epilogue& epi, void* y) {
  if (w.groups != g.group || w.rows != g.mg() || w.k != g.k()) fail("internal: packed weights do not fit the geometry");
  static const MicroKernel mk = select_micro_kernel();
  const int64_t blocks = (g.oh * g.ow + kColumnBlock - 1) / kColumnBlock;
  ConvTask task{&g, xq, &w, &epi, y, mk, blocks};
  parallel_for(ctx, static_cast<size_t>(g.n * g.group * blocks), task);
}

std::unique_ptr<Kernel> create_cpu_conv(const OrtKernelInfo* info) { return std::make_unique<CpuConv>(info); }

}  // namespace fp8ort
