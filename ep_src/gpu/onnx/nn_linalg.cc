// MatMul (numpy semantics: 1-D operands, broadcast batch axes) and Gemm on the GPU, both through
// fp8ort_nn_gemm_run_ws (float32 accumulation; cuBLASLt for large problems on NVIDIA, with scratch from the EP's
// allocator).
#include "gpu/onnx/nn_common.h"

namespace fp8ort {
namespace gpu_nn {
namespace {

// Enqueues the GEMM with the scratch its library route asks for, returned to the allocator when the call ends
// (stream-ordered reuse: the EP's allocator hands it out again only to work on the same stream).
void run_gemm(OrtAllocator* alloc, const void* a, const void* b, void* y, fp8ort_dtype type, const fp8ort_nn_gemm& g,
              void* stream) {
  const size_t bytes = fp8ort_nn_gemm_workspace_bytes(type, &g);
  DeviceBuffer workspace(alloc, bytes);
  gpu_check(fp8ort_nn_gemm_run_ws(a, b, y, type, &g, workspace.get(), bytes, stream), "fp8ort_nn_gemm_run");
}

class MatMulKernel : public Kernel {
 public:
  explicit MatMulKernel(const OrtKernelInfo* info) : alloc_(info) { oc_ = {"MatMul", node_name(info)}; }

  void compute(OrtKernelContext* ctx) override {
    const Tensor a = input(ctx, 0), b = input(ctx, 1);
    const fp8ort_dtype type = float_type(a, "A");
    require_same_type(b, "B", a.type);
    // Validates and gives Y's shape; 1-D operands: A [K] is [1, K], B [K] is [K, 1] (the added axis is dropped).
    const MatMulShape ms = matmul_shape(a.shape, b.shape);
    const std::vector<int64_t>& as = ms.a_batch;
    const std::vector<int64_t>& bs = ms.b_batch;
    const int64_t m = ms.m, k = ms.k, n = ms.n;
    const size_t a_batch = as.size(), b_batch = bs.size();
    const size_t batch_rank = a_batch > b_batch ? a_batch : b_batch;
    if (batch_rank > FP8ORT_NN_MAX_RANK) fail("MatMul with more than " + std::to_string(FP8ORT_NN_MAX_RANK) + " batch axes is not implemented");
    fp8ort_nn_gemm g{};
    // Batch axes aligned from the right; contiguous strides of each operand, 0 where it broadcasts.
    int64_t a_stride = m * k, b_stride = k * n;
    std::vector<int64_t> dims(batch_rank), a_str(batch_rank, 0), b_str(batch_rank, 0);
    for (size_t i = 0; i < batch_rank; ++i) {
      const size_t d = batch_rank - 1 - i;  // output batch axis, from the right
      const int64_t ad = i < a_batch ? as[a_batch - 1 - i] : 1;
      const int64_t bd = i < b_batch ? bs[b_batch - 1 - i] : 1;
      dims[d] = ad == 1 ? bd : ad;
      a_str[d] = ad == 1 ? 0 : a_stride;
      b_str[d] = bd == 1 ? 0 : b_stride;
      a_stride *= ad;
      b_stride *= bd;
    }
    Tensor y = output(ctx, 0, ms.out);

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
    run_gemm(alloc_.get(), a.data, b.data, y.mutable_data, type, g, compute_stream(ctx));
  }

 private:
  Allocator alloc_;
};

// Gemm: Y = alpha * op(A) op(B) + beta * C, C broadcast to [M, N] (optional from opset 11).
class GemmKernel : public Kernel {
 public:
  explicit GemmKernel(const OrtKernelInfo* info) : alloc_(info) {
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
    const GemmShape gs = gemm_shape(a.shape, b.shape, c.present() ? &c.shape : nullptr, trans_a_, trans_b_);
    const int64_t m = gs.m, k = gs.k, n = gs.n;
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
      const int64_t cr = c.shape.size() == 2 ? c.shape[0] : 1;
      const int64_t cc = c.shape.empty() ? 1 : c.shape.back();
      g.c = c.data;
      g.c_sn = cc == 1 ? 0 : 1;
      g.c_sm = cr == 1 ? 0 : cc;
    }
    Tensor y = output(ctx, 0, {m, n});
    run_gemm(alloc_.get(), a.data, b.data, y.mutable_data, type, g, compute_stream(ctx));
  }

 private:
  Allocator alloc_;
  bool trans_a_ = false, trans_b_ = false;
  float alpha_ = 1.0f, beta_ = 1.0f;
};

}  // namespace

std::unique_ptr<Kernel> create_matmul(const OrtKernelInfo* info) { return std::make_unique<MatMulKernel>(info); }
std::unique_ptr<Kernel> create_gemm(const OrtKernelInfo* info) { return std::make_unique<GemmKernel>(info); }

}  // namespace gpu_nn
}  // namespace fp8ort
