// FP8Quantize and FP8Dequantize on the CPU: per-tensor scale, the same conversions as every other kernel.
#include <algorithm>

#include "cpu/cpu_kernels.h"

namespace fp8ort {
namespace {

constexpr int64_t kChunk = 1 << 16;

class CpuQuantize final : public Kernel {
 public:
  explicit CpuQuantize(const OrtKernelInfo* info) {
    oc_ = {"FP8Quantize", node_name(info)};
    out_type_ = attr_elem_type(info, "output_dtype", ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E4M3FN);
    if (!is_fp8_type(out_type_)) {
      fail("attribute output_dtype=" + std::to_string(out_type_) + " is not an FP8 type; use 17, 18, 19 or 20");
    }
    const int64_t sat = attr_int(info, "saturate", 1);
    if (sat != 0 && sat != 1) fail("attribute saturate must be 0 or 1; got " + std::to_string(sat));
    saturate_ = sat == 1;
  }

  void compute(OrtKernelContext* ctx) override {
    Tensor x = input(ctx, 0);
    require_type(x, "X", is_high_precision_type(x.type), "float32, float16 or bfloat16");
    const float scale = read_scalar_scale(input(ctx, 1), "scale");
    Tensor y = output(ctx, 0, x.shape);
    check_output_type(y, out_type_);
    const Fp8Format fmt = fp8_format_of(out_type_);
    uint8_t* dst = static_cast<uint8_t*>(y.mutable_data);
    const Fp8Rounder rounder(fmt);
    auto task = [&](size_t chunk) {
      const int64_t b = static_cast<int64_t>(chunk) * kChunk, e = std::min(x.size, b + kChunk);
      if (saturate_) {
        for (int64_t i = b; i < e; ++i) dst[i] = rounder.code(load_float(x.data, x.type, i) / scale);
      } else {
        for (int64_t i = b; i < e; ++i) dst[i] = encode_fp8(load_float(x.data, x.type, i) / scale, fmt, false);
      }
    };
    parallel_for(ctx, static_cast<size_t>((x.size + kChunk - 1) / kChunk), task);
  }

 private:
  ONNXTensorElementDataType out_type_;
  bool saturate_ = true;
};

class CpuDequantize final : public Kernel {
 public:
  explicit CpuDequantize(const OrtKernelInfo* info) {
    oc_ = {"FP8Dequantize", node_name(info)};
    out_.type = attr_elem_type(info, "output_dtype", ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT);
    if (!is_high_precision_type(out_.type)) {
      fail("attribute output_dtype=" + std::to_string(out_.type) + " is not allowed; use FLOAT (1), FLOAT16 (10) or BFLOAT16 (16)");
    }
  }

  void compute(OrtKernelContext* ctx) override {
    Tensor x = input(ctx, 0);
    require_type(x, "X", is_fp8_type(x.type), "an FP8 type");
    const float scale = read_scalar_scale(input(ctx, 1), "scale");
    Tensor y = output(ctx, 0, x.shape);
    check_output_type(y, out_.type);
    const float* table = fp8_decode_table(fp8_format_of(x.type));
    const uint8_t* src = static_cast<const uint8_t*>(x.data);
    auto task = [&](size_t chunk) {
      const int64_t b = static_cast<int64_t>(chunk) * kChunk, e = std::min(x.size, b + kChunk);
      for (int64_t i = b; i < e; ++i) out_.store(y.mutable_data, i, table[src[i]] * scale);
    };
    parallel_for(ctx, static_cast<size_t>((x.size + kChunk - 1) / kChunk), task);
  }

 private:
  OutputSpec out_;
};

}  // namespace

std::unique_ptr<Kernel> create_cpu_quantize(const OrtKernelInfo* info) { return std::make_unique<CpuQuantize>(info); }
std::unique_ptr<Kernel> create_cpu_dequantize(const OrtKernelInfo* info) {
  return std::make_unique<CpuDequantize>(info);
}

}  // namespace fp8ort
