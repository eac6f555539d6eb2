// The parts of the GPU device's standard-op table, one per family of kernels.
#pragma once

#include "ort/kernel.h"

namespace fp8ort {

// Elementwise (unary, broadcasting binary, Where, Cast) and data movement (Transpose, Reshape family, Concat,
// Slice, Gather, Expand, Shape, ConstantOfShape): ep_src/gpu/onnx/tensor_ops.cc and siblings.
const std::vector<KernelDef>& gpu_tensor_kernels();
// Pooling, Softmax, LayerNormalization, ReduceMean, float MatMul/Gemm/Conv: ep_src/gpu/onnx/nn_ops.cc and siblings.
const std::vector<KernelDef>& gpu_nn_kernels();

}  // namespace fp8ort
