// GPU kernels of the com.fp8ort ops for ORT's CUDA/ROCm execution providers (built with FP8ORT_GPU=cuda|hip).
#pragma once

#include <memory>

#include "cpu/cpu_kernels.h"

namespace fp8ort {

std::unique_ptr<Kernel> create_gpu_conv(const OrtKernelInfo* info);
std::unique_ptr<Kernel> create_gpu_matmul(const OrtKernelInfo* info);
std::unique_ptr<Kernel> create_gpu_quantize(const OrtKernelInfo* info);
std::unique_ptr<Kernel> create_gpu_dequantize(const OrtKernelInfo* info);
std::unique_ptr<Kernel> create_gpu_max_pool(const OrtKernelInfo* info);
std::unique_ptr<Kernel> create_gpu_attention(const OrtKernelInfo* info);
std::unique_ptr<Kernel> create_gpu_layer_norm(const OrtKernelInfo* info);
std::unique_ptr<Kernel> create_gpu_global_average_pool(const OrtKernelInfo* info);
std::unique_ptr<Kernel> create_gpu_channel_mul(const OrtKernelInfo* info);

}  // namespace fp8ort
