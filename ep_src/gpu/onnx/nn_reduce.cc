// ReduceSum, ReduceMean, ReduceMax, ReduceMin on the GPU. The reduced axes are merged with their neighbours so
// that most requests become [outer, reduce, inner] (the last axis, NCHW's H and W, a leading axis), which
// fp8ort_nn_reduce serves with a block per row or a thread per column; other axis sets take the general kernel.
#include <algorithm>

#include "gpu/onnx/nn_common.h"

namespace fp8ort {
namespace gpu_nn {
namespace {

class ReduceKernel : public Kernel {
 public:
  ReduceKernel(const OrtKernelInfo* info, const char* op_type, fp8ort_nn_reduce_op op, bool axes_from_input)
      : op_(op), axes_from_input_(axes_from_input) {
    oc_ = {op_type, node_name(info)};
    keepdims_ = attr_int(info, "keepdims", 1) != 0;
    noop_with_empty_axes_ = attr_int(info, "noop_with_empty_axes", 0) != 0;
    if (!axes_from_input_) axes_attr_ = attr_ints(info, "axes");
  }

  void compute(OrtKernelContext* ctx) override {
    const Tensor x = input(ctx, 0);
    const fp8ort_dtype type = float_type(x, "data");
    const int64_t rank = static_cast<int64_t>(x.shape.size());
    std::vector<int64_t> axes = axes_attr_;
    if (axes_from_input_) {
      const Tensor a = input(ctx, 1);
      if (a.present()) axes = read_ints(a, "axes");  // CPU memory (cpu_inputs)
    }
    std::vector<int> reduced(static_cast<size_t>(rank), 0);
    if (!axes.empty() || !noop_with_empty_axes_) {
      const std::vector<bool> r = reduced_axes(axes, rank);
      for (size_t i = 0; i < r.size(); ++i) reduced[i] = r[i] ? 1 : 0;
    }
    std::vector<int64_t> y_shape;
    for (int64_t i = 0; i < rank; ++i) {
      if (!reduced[static_cast<size_t>(i)]) {
        y_shape.push_back(x.shape[static_cast<size_t>(i)]);
      } else if (keepdims_) {
        y_shape.push_back(1);
      }
    }
    Tensor y = output(ctx, 0, y_shape);
    void* stream = compute_stream(ctx);

    // Merge: drop axes of size 1, join neighbours with the same role.
    std::vector<int64_t> dims;
    std::vector<int> roles;
    for (int64_t i = 0; i < rank; ++i) {
      const int64_t d = x.shape[static_cast<size_t>(i)];
      const int role = reduced[static_cast<size_t>(i)];
      if (d == 1) continue;
      if (!roles.empty() && roles.back() == role) {
        dims.back() *= d;
      } else {
        dims.push_back(d);
        roles.push_back(role);
      }
    }
    // The merged shape alternates kept (0) and reduced (1) groups.
    int64_t outer = 1, reduce = 1, inner = 1;
    bool simple = true;
    if (roles.empty()) {
    } else if (roles.size() == 1) {
      (roles[0] ? reduce : outer) = dims[0];
    } else if (roles.size() == 2) {
      if (roles[0] == 0) {
        outer = dims[0];
        reduce = dims[1];
      } else {
        reduce = dims[0];
        inner = dims[1];
      }
    } else if (roles.size() == 3 && roles[0] == 0) {
      outer = dims[0];
      reduce = dims[1];
      inner = dims[2];
    } else {
      simple = false;
    }
    if (simple) {
      gpu_check(fp8ort_nn_reduce(x.data, y.mutable_data, type, op_, outer, reduce, inner, stream), "fp8ort_nn_reduce");
      return;
    }
    if (dims.size() > FP8ORT_NN_MAX_RANK) {
      fail("the reduced axes leave " + std::to_string(dims.size()) + " separate groups; at most " +
           std::to_string(FP8ORT_NN_MAX_RANK) + " are implemented");
    }
    gpu_check(fp8ort_nn_reduce_axes(x.data, y.mutable_data, type, op_, static_cast<int>(dims.size()), dims.data(),
                                       roles.data(), stream),
                 "fp8ort_nn_reduce_axes");
  }

 private:
  fp8ort_nn_reduce_op op_;
  bool axes_from_input_;
  bool keepdims_ = true;
  bool noop_with_empty_axes_ = false;
  std::vector<int64_t> axes_attr_;
};

}  // namespace

std::unique_ptr<Kernel> create_reduce_sum_attr(const OrtKernelInfo* info) {
  return std::make_unique<ReduceKernel>(info, "ReduceSum", FP8ORT_NN_REDUCE_SUM, false);
}
std::unique_ptr<Kernel> create_reduce_sum_input(const OrtKernelInfo* info) {
  return std::make_unique<ReduceKernel>(info, "ReduceSum", FP8ORT_NN_REDUCE_SUM, true);
}
std::unique_ptr<Kernel> create_reduce_mean_attr(const OrtKernelInfo* info) {
  return std::make_unique<ReduceKernel>(info, "ReduceMean", FP8ORT_NN_REDUCE_MEAN, false);
}
std::unique_ptr<Kernel> create_reduce_mean_input(const OrtKernelInfo* info) {
  return std::make_unique<ReduceKernel>(info, "ReduceMean", FP8ORT_NN_REDUCE_MEAN, true);
}
std::unique_ptr<Kernel> create_reduce_max_attr(const OrtKernelInfo* info) {
  return std::make_unique<ReduceKernel>(info, "ReduceMax", FP8ORT_NN_REDUCE_MAX, false);
}
std::unique_ptr<Kernel> create_reduce_max_input(const OrtKernelInfo* info) {
  return std::make_unique<ReduceKernel>(info, "ReduceMax", FP8ORT_NN_REDUCE_MAX, true);
}
std::unique_ptr<Kernel> create_reduce_min_attr(const OrtKernelInfo* info) {
  return std::make_unique<ReduceKernel>(info, "ReduceMin", FP8ORT_NN_REDUCE_MIN, false);
}
std::unique_ptr<Kernel> create_reduce_min_input(const OrtKernelInfo* info) {
  return std::make_unique<ReduceKernel>(info, "ReduceMin", FP8ORT_NN_REDUCE_MIN, true);
}

}  // namespace gpu_nn
}  // namespace fp8ort
