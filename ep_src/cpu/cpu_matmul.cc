// FP8MatMul on the CPU: A [..., K] times an FP8 B [K, N] ([N, K] with transB=1), run as a 1x1 NHWC
// convolution over A's rows through the shared GEMM engine.
#include "cpu/cpu_kernels.h"

namespace fp8ort {
namespace {

class CpuMatMul final : public Kernel {
 public:
  explicit CpuMatMul(const OrtKernelInfo* info) {
    oc_ = {"FP8MatMul", node_name(info)};
    common_ = parse_common_attrs(info);
    trans_b_ = attr_int(info, "transB", 0);
    if (trans_b_ != 0 && trans_b_ != 1) fail("attribute transB must be 0 or 1; got " + std::to_string(trans_b_));
    if (attr_int(info, "transA", 0) != 0) fail("attribute transA must be 0 (transpose A before the op)");
    if (const OrtValue* b = constant_input(info, 1)) {
      pack(describe(b), packed_);
      prepacked_ = true;
    }
  }

  void compute(OrtKernelContext* ctx) override {
    Tensor a = input(ctx, 0);
    Tensor b = input(ctx, 1);
    require_type(a, "A", is_high_precision_type(a.type) || is_fp8_type(a.type), "float32, float16, bfloat16 or FP8");
    require_type(b, "B", is_fp8_type(b.type), "an FP8 type (float8e4m3fn, float8e4m3fnuz, ...)");
    PackedWeights local;
    if (!prepacked_) pack(b, local);
    const PackedWeights& packed = prepacked_ ? packed_ : local;
    if (a.shape.empty()) fail("input A must have rank >= 1; got a scalar");
    const int64_t k = a.shape.back();
    const int64_t n = packed.rows;
    if (k < 1) fail("input A has K=0 (last dimension of " + shape_str(a.shape) + "); FP8MatMul needs K >= 1");
    if (k != packed.k) {
      fail("input A has K=" + std::to_string(k) + " (last dimension of " + shape_str(a.shape) + ") but B " +
           shape_str(b.shape) + (trans_b_ ? " (transB=1)" : "") + " needs K=" + std::to_string(packed.k));
    }
    std::vector<int64_t> y_shape = a.shape;
    y_shape.back() = n;
    const float a_scale = read_scalar_scale(input(ctx, 2), "a_scale");
    std::vector<float> b_scale = read_channel_scale(input(ctx, 3), "b_scale", n);
    Epilogue epi = make_epilogue(ctx, common_, a_scale, b_scale, y_shape, n, "C");
    Tensor y = output(ctx, 0, y_shape);
    check_output_type(y, common_.output_type);
    if (y.size == 0) return;
    const int64_t rows = a.size / k;
    ConvGeometry g{1, k, rows, 1, n, 1, 1, 1, rows, 1};
    g.nhwc = true;
    std::vector<float> aq;
    quantize_activations(ctx, a, a_scale, fp8_format_of(b.type), aq);
    run_conv_gemm(ctx, g, aq.data(), packed, epi, y.mutable_data);
  }

 private:
  void pack(const Tensor& b, PackedWeights& out) const {
    require_type(b, "B", is_fp8_type(b.type), "an FP8 type (float8e4m3fn, float8e4m3fnuz, ...)");
    if (b.shape.size() != 2) fail("input B must be 2-D; got shape " + shape_str(b.shape));
    const int64_t k = trans_b_ ? b.shape[1] : b.shape[0];
    const int64_t n = trans_b_ ? b.shape[0] : b.shape[1];
    const float* table = fp8_decode_table(fp8_format_of(b.type));
    const uint8_t* codes = static_cast<const uint8_t*>(b.data);
    out.pack(1, n, k, [&](int64_t, int64_t r, int64_t t) -> double {
      return table[trans_b_ ? codes[r * k + t] : codes[t * n + r]];
    });
  }

  CommonAttrs common_;
  int64_t trans_b_ = 0;
  bool prepacked_ = false;
  PackedWeights packed_;
};

}  // namespace

std::unique_ptr<Kernel> create_cpu_matmul(const OrtKernelInfo* info) { return std::make_unique<CpuMatMul>(info); }

}  // namespace fp8ort
