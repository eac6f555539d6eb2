// The GPU device's pooling, normalization, reduction and float linear-algebra kernels, one row per op and range of
// op versions with the same semantics (ep_src/gpu/onnx/nn_*.cc; device code hip_kernels/onnx_{pool,norm,linalg}.hip).
#include "gpu/onnx/nn_common.h"
#include "gpu/onnx/tables.h"

namespace fp8ort {

const std::vector<KernelDef>& gpu_nn_kernels() {
  using namespace gpu_nn;
  static const std::vector<KernelDef> table = [] {
    const std::vector<ONNXTensorElementDataType> floats = {ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT,
                                                           ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16};
    const std::vector<TypeConstraint> t = {{"T", floats}};
    return std::vector<KernelDef>{
        // Pooling: MaxPool 11/12/22 and AveragePool 11/19/22 differ in element types and (19) the dilations
        // attribute only; the kernels read every attribute when present.
        {"", "MaxPool", 11, kLatestOpset, t, {}, {}, create_max_pool},
        {"", "AveragePool", 11, kLatestOpset, t, {}, {}, create_average_pool},
        {"", "GlobalAveragePool", 1, kLatestOpset, t, {}, {}, create_global_average_pool},
        {"", "GlobalMaxPool", 1, kLatestOpset, t, {}, {}, create_global_max_pool},
        // Reductions: axes is an attribute until ReduceSum 13 / ReduceMean, ReduceMax, ReduceMin 18, then input 1.
        {"", "ReduceSum", 11, 12, t, {}, {}, create_reduce_sum_attr},
        {"", "ReduceSum", 13, kLatestOpset, t, {1}, {}, create_reduce_sum_input},
        {"", "ReduceMean", 11, 17, t, {}, {}, create_reduce_mean_attr},
        {"", "ReduceMean", 18, kLatestOpset, t, {1}, {}, create_reduce_mean_input},
        {"", "ReduceMax", 11, 17, t, {}, {}, create_reduce_max_attr},
        {"", "ReduceMax", 18, kLatestOpset, t, {1}, {}, create_reduce_max_input},
        {"", "ReduceMin", 11, 17, t, {}, {}, create_reduce_min_attr},
        {"", "ReduceMin", 18, kLatestOpset, t, {1}, {}, create_reduce_min_input},
        // Softmax 13 normalizes one axis; 11-12 the input flattened to 2-D at axis.
        {"", "Softmax", 11, 12, t, {}, {}, create_softmax_v11},
        {"", "Softmax", 13, kLatestOpset, t, {}, {}, create_softmax_v13},
        {"", "LogSoftmax", 11, 12, t, {}, {}, create_log_softmax_v11},
        {"", "LogSoftmax", 13, kLatestOpset, t, {}, {}, create_log_softmax_v13},
        {"", "LayerNormalization", 17, kLatestOpset, {{"T", floats}, {"U", {ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT}}}, {}, {},
         create_layer_norm},
        // BatchNormalization (inference form): 14 adds training_mode and type U for mean/var, 15 splits the
        // parameters' types into T1 (scale, B) and T2 (mean, var)
        {"", "BatchNormalization", 9, 13, t, {}, {}, create_batch_norm},
        {"", "BatchNormalization", 14, 14, {{"T", floats}, {"U", floats}}, {}, {}, create_batch_norm},
        {"", "BatchNormalization", 15, kLatestOpset, {{"T", floats}, {"T1", floats}, {"T2", floats}}, {}, {},
         create_batch_norm},
        // MatMul 1/9/13 and Gemm 7/9/11/13 differ in element types (and Gemm 11 makes C optional).
        {"", "MatMul", 1, kLatestOpset, t, {}, {}, create_matmul},
        {"", "Gemm", 7, kLatestOpset, t, {}, {}, create_gemm},
        {"", "Conv", 11, kLatestOpset, t, {}, {}, create_conv},
    };
  }();
  return table;
}

}  // namespace fp8ort
