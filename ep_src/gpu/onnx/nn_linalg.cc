// MatMul (numpy semantics: 1-D operands, broadcast batch axes) and Gemm on the GPU, both through
// fp8ort_nn_gemm_run (float32 accumulation).
#include "gpu/onnx/nn_common.h"

namespace fp8ort {
namespace gpu_nn {
namespace {

class MatMulKernel : public Kernel {
 public:
  explicit MatMulKernel(const OrtKernelInfo* info) { oc_ = {"MatMul", node_name(info)}; }

  void compute(OrtKernelContext* ctx) override {
    const Tensor a = input(ctx, 0), b = input(ctx, 1);
    const fp8ort_dtype type = float_type(a, "A");
    require_same_type(b, "B", a.type);
    if (a.shape.empty() || b.shape.empty()) fail("inputs A and B must have rank >= 1; got " + shape_str(a.shape) + " and " + shape_str(b.shape));
    // 1-D operands: A [K] is [1, K], B [K] is [K, 1]; the added axis is dropped from the output.
    std::vector<int64_t> as = a.shape, bs = b.shape;
    const bool a_vec = as.size() == 1, b_vec = bs.size() == 1;
    if (a_vec) as.insert(as.begin(), 1);
    if (b_vec) bs.push_back(1);
    const int64_t m = as[as.size() - 2], k = as.back(), n = bs.back();
    if (bs[bs.size() - 2] != k) {
      fail("inputs A " + shape_str(a.shape) + " and B " + shape_str(b.shape) + " do not multiply: A has " +
           std::to_string(k) + " columns, B " + std::to_string(bs[bs.size() - 2]) + " rows");
    }
    const size_t a_batch = as.size() - 2, b_batch = bs.size() - 2;
    const size_t batch_rank = a_batch > b_batch ? a_batch : b_batch;
    if (batch_rank > FP8ORT_NN_MAX_RANK) fail("MatMul with more than " + std::to_string(FP8ORT_NN_MAX_RANK) + " batch axes is not implemented");
    fp8ort_nn_gemm g{};
    std::vector<int64_t> y_shape;
    // Batch axes aligned from the right; contiguous strides of each operand, 0 where it broadcasts.
    int64_t a_stride = m * k, b_stride = k * n;
    std::vector<int64_t> dims(batch_rank), a_str(batch_rank, 0), b_str(batch_rank, 0);
    for (size_t i = 0; i < batch_rank; ++i) {
      const size_t d = batch_rank - 1 - i;  // output batch axis, from the right
      const int64_t ad = i < a_batch ? as[a_batch - 1 - i] : 1;
      const int64_t bd = i < b_batch ? bs[b_batch - 1 - i] : 1;
      if (ad != bd && ad != 1 && bd != 1) {
        fail("inputs A " + shape_str(a.shape) + " and B " + shape_str(b.shape) + " have batch axes that do not broadcast");
      }
      dims[d] = ad == 1 ? bd : ad;
      a_str[d] = ad == 1 ? 0 : a_stride;
      b_str[d] = bd == 1 ? 0 : b_stride;
      a_stride *= ad;
      b_stride *= bd;
    }
    y_shape.assign(dims.begin(), dims.end());
    if (!a_vec) y_shape.push_back(m);
    if (!b_vec) y_shape.push_back(n);
    Tensor y = output(ctx, 0, y_shape);

    bool b_shared = true, a_full = true;  // B is one matrix for every batch; A has every batch of its own
    for (size_t d = 0; d < batch_rank; ++d) {
      if (b_str[d] != 0 && dims[d] != 1) b_shared = false;
      if (a_str[d] == 0 && dims[d] != 1) a_full = false;
    }
    g.m = m;
    g.n = n;
    g.k = k;
    g.a_sm = k;
    g.a_sk = 1;
    g.b_sk = n;
    g.b_sn = 1;
    g.alpha = 1.0f;
    if (b_shared && a_full) {
      // [batch..., M, K] x [K, N]: one GEMM with batch * M rows (Y is laid out the same way).
      g.m = m * product(dims, 0, dims.size());
      g.batch_rank = 0;
    } else {
      g.batch_rank = static_cast<int>(batch_rank);
      for (size_t d = 0; d < batch_rank; ++d) {
        g.batch_dims[d] = dims[d];
        g.a_batch_strides[d] = a_str[d];
        g.b_batch_strides[d] = b_str[d];
      }
    }
    gpu_check(fp8ort_nn_gemm_run(a.data, b.data, y.mutable_data, type, &g, compute_stream(ctx)), "fp8ort_nn_gemm_run");
  }
};

// Gemm: Y = alpha * op(A) op(B) + beta * C, C broadcast to [M, N] (optional from opset 11).
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
    const Tensor a = input(ctx, 0), b = input(ctx, 1), c = input(ctx, 2);
    const fp8ort_dtype type = float_type(a, "A");
    require_same_type(b, "B", a.type);
    if (a.shape.size() != 2 || b.shape.size() != 2) {
      fail("inputs A and B must be 2-D; got " + shape_str(a.shape) + " and " + shape_str(b.shape));
    }
    const int64_t m = trans_a_ ? a.shape[1] : a.shape[0];
    const int64_t k = trans_a_ ? a.shape[0] : a.shape[1];
    const int64_t kb = trans_b_ ? b.shape[1] : b.shape[0];
    const int64_t n = trans_b_ ? b.shape[0] : b.shape[1];
    if (k != kb) {
      fail("inputs A " + shape_str(a.shape) + " (transA=" + std::to_string(trans_a_) + ") and B " + shape_str(b.shape) +
           " (transB=" + std::to_string(trans_b_) + ") do not multiply: inner sizes " + std::to_string(k) + " and " +
           std::to_string(kb));
    }
    fp8ort_nn_gemm g{};
    g.m = m;
    g.n = n;
    g.k = k;
    g.a_sm = trans_a_ ? 1 : k;
    g.a_sk = trans_a_ ? m : 1;
    g.b_sk = trans_b_ ? 1 : n;
    g.b_sn = trans_b_ ? k : 1;
    g.alpha = alpha_;
    g.beta = beta_;
    if (c.present() && beta_ != 0.0f) {
      require_same_type(c, "C", a.type);
      const std::string bad = "input C has shape " + shape_str(c.shape) + " which does not broadcast to [M, N] = " +
                              shape_str({m, n});
      if (c.shape.size() > 2) fail(bad);
      const int64_t cr = c.shape.size() == 2 ? c.shape[0] : 1;
      const int64_t cc = c.shape.empty() ? 1 : c.shape.back();
      if ((cr != 1 && cr != m) || (cc != 1 && cc != n)) fail(bad);
      g.c = c.data;
      g.c_sn = cc == 1 ? 0 : 1;
      g.c_sm = cr == 1 ? 0 : cc;
    }
    Tensor y = output(ctx, 0, {m, n});
    gpu_check(fp8ort_nn_gemm_run(a.data, b.data, y.mutable_data, type, &g, compute_stream(ctx)), "fp8ort_nn_gemm_run");
  }

 private:
  bool trans_a_ = false, trans_b_ = false;
  float alpha_ = 1.0f, beta_ = 1.0f;
};

}  // namespace

std::unique_ptr<Kernel> create_matmul(const OrtKernelInfo* info) { return std::make_unique<MatMulKernel>(info); }
std::unique_ptr<Kernel> create_gemm(const OrtKernelInfo* info) { return std::make_unique<GemmKernel>(info); }

}  // namespace gpu_nn
}  // namespace fp8ort
