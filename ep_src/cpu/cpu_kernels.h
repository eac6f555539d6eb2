// CPU kernels of the com.fp8ort ops. Each is created once per node (weights decoded and packed then) and
// computes through the shared engine in cpu_conv.cc; errors are OpError exceptions, caught at the C boundary.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "cpu/cpu_gemm.h"
#include "ops/op_common.h"
#include "ort/kernel.h"

namespace fp8ort {


std::unique_ptr<Kernel> create_cpu_conv(const OrtKernelInfo* info);
std::unique_ptr<Kernel> create_cpu_matmul(const OrtKernelInfo* info);
std::unique_ptr<Kernel> create_cpu_quantize(const OrtKernelInfo* info);
std::unique_ptr<Kernel> create_cpu_dequantize(const OrtKernelInfo* info);
std::unique_ptr<Kernel> create_cpu_max_pool(const OrtKernelInfo* info);
std::unique_ptr<Kernel> create_cpu_attention(const OrtKernelInfo* info);
std::unique_ptr<Kernel> create_cpu_layer_norm(const OrtKernelInfo* info);
std::unique_ptr<Kernel> create_cpu_global_average_pool(const OrtKernelInfo* info);
std::unique_ptr<Kernel> create_cpu_channel_mul(const OrtKernelInfo* info);

// Geometry of a convolution run as a GEMM (a MatMul is a 1x1 NHWC convolution over its rows).
struct ConvGeometry {
  int64_t n, c, h, w;
  int64_t m, kh, kw, group, oh, ow;
  int64_t sh = 1, sw = 1, pt = 0, pl = 0, dh = 1, dw = 1;
  bool nhwc = false;
  int64_t cg() const { return c / group; }
  int64_t mg() const { return m / group; }
  int64_t k() const { return cg() * kh * kw; }
};

// Reduction index t of weight element (cg, i, j): NCHW orders it (cg, i, j), NHWC orders it (i, j, cg).
inline int64_t reduction_index(const ConvGeometry& g, int64_t cg, int64_t i, int64_t j) {
  return g.nhwc ? (i * g.kw + j) * g.cg() + cg : (cg * g.kh + i) * g.kw + j;
}

// Decodes (or quantizes with x_scale into `fmt`, then decodes) X into exact FP8 values as float32.
void quantize_activations(OrtKernelContext* ctx, const Tensor& x, float x_scale, Fp8Format fmt, std::vector<float>& out);

// Y = epilogue(conv(xq, W)) with W packed for this geometry; multithreaded on ORT's pool.
void run_conv_gemm(OrtKernelContext* ctx, const ConvGeometry& g, const float* xq, const PackedWeights& w,
                   const Epilogue& epi, void* y);

}  // namespace fp8ort
