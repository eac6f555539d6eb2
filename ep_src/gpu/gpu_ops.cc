// GPU kernels of the com.fp8ort ops for ORT's own GPU execution providers (CUDAExecutionProvider in
// onnxruntime-gpu, ROCMExecutionProvider in onnxruntime-rocm <= 1.22), through the custom-op library.
// Everything runs on ORT's compute stream; scratch memory comes from the EP's allocator, scales stay in device memory.
// A constant weight (initializer in device memory) is packed when the kernel is created, on the default stream and
// waited for there, so no run packs (and a captured graph never contains packing); a weight fed at run time, or a
// conv whose packed layout depends on an input shape unknown at creation, is packed on the first run's stream.
// The plugin EP (plugin_ep/) and the custom-op library for ORT's CUDA/ROCm EPs create the same kernels.
// FP8MatMul can take the vendor BLAS-Lt GEMM (cuBLASLt, hipBLASLt) for large problems where it runs, our own GEMM
// otherwise; FP8ORT_GEMM_BACKEND=ours|blaslt|auto picks (default auto in the CUDA build, ours in the HIP build).
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "fp8_kernels.h"
#include "fp8_runtime.h"
#include "onnx_kernels.h"
#include "onnx_nn_kernels.h"
#include "gpu/gpu_common.h"
#include "gpu/gpu_ops.h"

namespace fp8ort {
namespace {

// Where ORT says a value lives (GPU or CPU memory; other kinds as they are), or false where it does not say.
bool memory_kind(const OrtValue* value, OrtMemoryInfoDeviceType* kind) {
  const OrtEpApi* ep_api = g_ort->GetEpApi();
  const OrtMemoryDevice* device = ep_api != nullptr ? ep_api->Value_GetMemoryDevice(value) : nullptr;
  if (device == nullptr) return false;
  *kind = ep_api->MemoryDevice_GetDeviceType(device);
  return true;
}

// Scales stay in device memory: their shapes are checked at every run with the CPU kernels' checks (ops/op_common),
// their values once when the kernel is created where they are constants (check_constant_scale).
const float* scalar_scale_ptr(const Tensor& t, const char* name) {
  check_scalar_scale_shape(t, name);
  return static_cast<const float*>(t.data);
}

// The contract's value check (finite, > 0) of a constant scale input, made when the kernel is created: the kernels
// read scales from device memory and never see the values, so a zero, negative or non-finite initializer would
// otherwise pass on the GPU where the CPU kernels refuse it. A scale fed at run time is not checked on the GPU.
void check_constant_scale(const OrtKernelInfo* info, size_t index, const char* name, bool per_channel) {
  const OrtValue* value = constant_input(info, index);
  if (value == nullptr) return;
  const Tensor t = describe(value);
  if (t.type != ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT || t.size < 1 || t.size > (int64_t{1} << 20)) return;
  if (!per_channel && t.size != 1) return;  // the run's shape check names it
  // GPU memory is copied to the host first; memory ORT does not describe is left unchecked
  OrtMemoryInfoDeviceType kind;
  if (!memory_kind(value, &kind) || (kind != OrtMemoryInfoDeviceType_GPU && kind != OrtMemoryInfoDeviceType_CPU)) return;
  std::vector<float> host(static_cast<size_t>(t.size));
  if (kind == OrtMemoryInfoDeviceType_GPU) {
    if (fp8rt_memcpy(host.data(), t.data, host.size() * sizeof(float), nullptr) != 0) {
      fail(std::string("reading the constant ") + name + " from the GPU failed: " + fp8rt_last_error(), ORT_EP_FAIL);
    }
  } else {
    std::memcpy(host.data(), t.data, host.size() * sizeof(float));
  }
  check_scale_values(host.data(), t.size, name, per_channel);
}

// The epilogue inputs 4..7, checked as on the CPU except that scale values stay on the device.
fp8ort_epilogue gpu_epilogue(OrtKernelContext* ctx, const CommonAttrs& attrs, const float* x_scale, const Tensor& ws,
                             const char* w_scale_name, int64_t channels, const std::vector<int64_t>& y_shape,
                             const char* bias_name) {
  fp8ort_epilogue e{};
  e.x_scale = x_scale;
  check_channel_scale_shape(ws, w_scale_name, channels);
  e.w_scale = static_cast<const float*>(ws.data);
  e.w_scale_count = ws.size;
  Tensor b = input(ctx, 4);
  if (b.present()) {
    check_bias_shape(b, bias_name, channels);
    e.bias = static_cast<const float*>(b.data);
  }
  Tensor z = input(ctx, 5), zs = input(ctx, 6), ys = input(ctx, 7);
  if (z.present()) {
    require_type(z, "Z", is_high_precision_type(z.type) || is_fp8_type(z.type), "float32, float16, bfloat16 or FP8");
    if (z.shape != y_shape) fail("input Z must have the output's shape " + shape_str(y_shape) + "; got " + shape_str(z.shape));
    e.z = z.data;
    e.z_type = static_cast<fp8ort_dtype>(z.type);
    if (zs.present()) {
      e.z_scale = scalar_scale_ptr(zs, "z_scale");
    } else if (is_fp8_type(z.type)) {
      fail("input Z is FP8 and needs z_scale (input 6)");
    }
  } else if (zs.present()) {
    fail("input z_scale is given without Z; drop it or give the residual Z");
  }
  e.y_type = static_cast<fp8ort_dtype>(attrs.output_type);
  if (is_fp8_type(attrs.output_type)) {
    if (!ys.present()) fail("output_dtype is FP8 and needs y_scale (input 7)");
    e.y_scale = scalar_scale_ptr(ys, "y_scale");
  }
  static_assert(static_cast<int>(Activation::kClip) == FP8ORT_ACT_CLIP &&
                    static_cast<int>(Activation::kSigmoid) == FP8ORT_ACT_SIGMOID &&
                    static_cast<int>(Activation::kSilu) == FP8ORT_ACT_SILU &&
                    static_cast<int>(Activation::kHardSigmoid) == FP8ORT_ACT_HARD_SIGMOID &&
                    static_cast<int>(Activation::kHardSwish) == FP8ORT_ACT_HARD_SWISH &&
                    static_cast<int>(Activation::kGelu) == FP8ORT_ACT_GELU &&
                    static_cast<int>(Activation::kGeluTanh) == FP8ORT_ACT_GELU_TANH,
                "Activation (op_common.h) and fp8ort_activation (fp8_kernels.h) must agree");
  // Relu through `relu` as before; the other activations through the fields added after it (same enum values).
  e.relu = attrs.act.kind == Activation::kRelu ? 1 : 0;
  e.activation = e.relu ? FP8ORT_ACT_NONE : static_cast<fp8ort_activation>(static_cast<int>(attrs.act.kind));
  e.activation_alpha = attrs.act.alpha;
  e.activation_beta = attrs.act.beta;
  return e;
}

// A constant input in GPU memory at kernel creation (a weight initializer), or nullptr.
const OrtValue* device_constant(const OrtKernelInfo* info, size_t index) {
  const OrtValue* value = constant_input(info, index);
  OrtMemoryInfoDeviceType kind;
  if (value == nullptr || !memory_kind(value, &kind) || kind != OrtMemoryInfoDeviceType_GPU) return nullptr;
  return value;
}

// The static shape of input `index` (unknown dimensions as -1), or empty when ORT does not know it.
std::vector<int64_t> static_input_shape(const OrtKernelInfo* info, size_t index) {
  OrtTypeInfo* type_info = nullptr;
  if (OrtStatus* st = g_ort->KernelInfo_GetInputTypeInfo(info, index, &type_info)) {
    g_ort->ReleaseStatus(st);
    return {};
  }
  std::vector<int64_t> dims;
  const OrtTensorTypeAndShapeInfo* tensor = nullptr;
  OrtStatus* st = g_ort->CastTypeInfoToTensorInfo(type_info, &tensor);
  size_t rank = 0;
  if (st == nullptr && tensor != nullptr) st = g_ort->GetDimensionsCount(tensor, &rank);
  if (st == nullptr && tensor != nullptr) {
    dims.resize(rank);
    st = g_ort->GetDimensions(tensor, dims.data(), rank);
  }
  if (st != nullptr) {
    g_ort->ReleaseStatus(st);
    dims.clear();
  }
  g_ort->ReleaseTypeInfo(type_info);
  return dims;
}

// Waits for packing launched on the default stream at kernel creation.
void wait_for_default_stream() {
  if (fp8rt_stream_synchronize(nullptr) != 0) {
    fail(std::string("packing the weight at session creation failed: ") + fp8rt_last_error(), ORT_EP_FAIL);
  }
}

enum class GemmBackend { kAuto, kOurs, kBlasLt, kInvalid };

// Which GEMM FP8MatMul uses, from FP8ORT_GEMM_BACKEND (read once per process).
GemmBackend gemm_backend() {
  static const GemmBackend backend = [] {
    const char* v = std::getenv("FP8ORT_GEMM_BACKEND");
    // Default: auto in the CUDA build (cuBLASLt where it is found and takes the problem, our GEMM otherwise): on the
    // H200 it made BERT-base 1.5x faster at batch 1 and 1.02x at batch 32 (bench/NOTES.md, 2026-12-04). The HIP build
    // keeps our GEMM: its hipBLASLt route has never run.
    if (v == nullptr || *v == '\0') {
#if defined(FP8ORT_GPU_HIP)
      return GemmBackend::kOurs;
#else
      return GemmBackend::kAuto;
#endif
    }
    if (std::strcmp(v, "ours") == 0) return GemmBackend::kOurs;
    if (std::strcmp(v, "auto") == 0) return GemmBackend::kAuto;
    if (std::strcmp(v, "blaslt") == 0) return GemmBackend::kBlasLt;
    return GemmBackend::kInvalid;
  }();
  return backend;
}

// Smaller problems stay on our GEMM: the BLAS-Lt route adds a second launch and a float32 round trip through memory.
// 2^26: BERT-base's projections at batch 1 (M = 128: 75 to 302 M multiply-adds) are past it.
constexpr double kBlasLtMinMacs = 67108864.0;

// X as FP8 in `fmt`: itself when already FP8 (same format), else quantized into `scratch` on the stream.
const void* fp8_activations(const Tensor& x, const char* name, const float* x_scale, ONNXTensorElementDataType fmt,
                            OrtAllocator* alloc, DeviceBuffer& scratch, void* stream) {
  if (is_fp8_type(x.type)) {
    if (x.type != fmt) {
      fail(std::string("input ") + name + " is " + type_name(x.type) + " but the weights are " + type_name(fmt) +
           "; the GPU kernels need one FP8 format for both");
    }
    return x.data;
  }
  require_type(x, name, is_high_precision_type(x.type), "float32, float16, bfloat16 or FP8");
  scratch = DeviceBuffer(alloc, static_cast<size_t>(x.size));
  gpu_check(fp8ort_quantize(x.data, static_cast<fp8ort_dtype>(x.type), x_scale, scratch.get(),
                            static_cast<fp8ort_dtype>(fmt), x.size, 1, stream),
            "fp8ort_quantize");
  return scratch.get();
}

class GpuConv final : public Kernel {
 public:
  explicit GpuConv(const OrtKernelInfo* info) : alloc_(info) {
    oc_ = {"FP8Conv", node_name(info)};
    attrs_ = parse_conv_attrs(info);
    common_ = parse_common_attrs(info);
    check_constant_scale(info, 2, "x_scale", false);
    check_constant_scale(info, 3, "w_scale", true);
    if (is_fp8_type(common_.output_type)) check_constant_scale(info, 7, "y_scale", false);
    pack_at_creation(info);
  }

  void compute(OrtKernelContext* ctx) override {
    void* stream = compute_stream(ctx);
    Tensor x = input(ctx, 0), w = input(ctx, 1);
    require_type(w, "W", is_fp8_type(w.type), "an FP8 type");
    ConvShape s = conv_shape(attrs_, x.shape, w.shape);
    fp8ort_conv_shape cs{s.n, s.h, s.w, s.c, s.m, s.kh, s.kw, attrs_.strides[0], attrs_.strides[1],
                         attrs_.pads[0], attrs_.pads[1], attrs_.pads[2], attrs_.pads[3], attrs_.dilations[0],
                         attrs_.dilations[1], attrs_.group};
    const auto fmt = static_cast<fp8ort_fp8_format>(w.type);
    const float* x_scale = scalar_scale_ptr(input(ctx, 2), "x_scale");
    fp8ort_epilogue epi = gpu_epilogue(ctx, common_, x_scale, input(ctx, 3), "w_scale", s.m, s.y_shape, "B");
    Tensor y = output(ctx, 0, s.y_shape);
    check_output_type(y, common_.output_type);
    if (y.size == 0) return;  // before packing: an empty output needs no weight (and the packer refuses empty ones)
    DeviceBuffer zero_plane = zero_plane_for_empty_input(cs, stream);
    if (zero_plane.get() != nullptr) {  // X has no pixels: every tap reads padding
      x.data = zero_plane.get();
      x.type = w.type;
      x.size = cs.batch * cs.in_h * cs.in_w * cs.in_c;
    }
    drop_unused_strides(cs, s.oh, s.ow);
    const int64_t padded_c = ensure_packed(w.data, fmt, cs, stream);
    // The kernel is channels-last. An NCHW node (the quantizer's default layout) runs it between transposes of X,
    // Z and Y through scratch; quantize with layout="NHWC" to keep FP8 tensors channels-last between ops instead.
    DeviceBuffer x_nhwc, z_nhwc, y_nhwc;
    void* y_out = y.mutable_data;
    if (!attrs_.nhwc) {
      if (zero_plane.get() == nullptr) {  // zeros are zeros in either layout
        x_nhwc = to_channels_last(x.data, x.type, s.n, s.c, s.h * s.w, stream);
        x.data = x_nhwc.get();
      }
      if (epi.z != nullptr) {
        z_nhwc = to_channels_last(epi.z, static_cast<ONNXTensorElementDataType>(epi.z_type), s.n, s.m, s.oh * s.ow,
                                  stream);
        epi.z = z_nhwc.get();
      }
      y_nhwc = DeviceBuffer(alloc_.get(), static_cast<size_t>(y.size) * element_bytes(y.type));
      y_out = y_nhwc.get();
    }
    DeviceBuffer scratch;
    const void* xq = nullptr;
    if (padded_c != 0) {
      if (is_fp8_type(x.type) && x.type != w.type) {
        fail(std::string("input X is ") + type_name(x.type) + " but the weights are " + type_name(w.type) +
             "; the GPU kernels need one FP8 format for both");
      }
      require_type(x, "X", is_fp8_type(x.type) || is_high_precision_type(x.type), "float32, float16, bfloat16 or FP8");
      const int64_t pixels = x.size / cs.in_c;
      scratch = DeviceBuffer(alloc_.get(), static_cast<size_t>(pixels * padded_c));
      gpu_check(fp8ort_quantize_padded(x.data, static_cast<fp8ort_dtype>(x.type), x_scale, scratch.get(),
                                       static_cast<fp8ort_dtype>(fmt), pixels, cs.in_c, padded_c, stream),
                "fp8ort_quantize_padded");
      xq = scratch.get();
      cs.in_c = padded_c;
    } else {
      xq = fp8_activations(x, "X", x_scale, w.type, alloc_.get(), scratch, stream);
    }
    // split-K scratch where the kernel would leave multiprocessors idle (small batches); returned when this call ends
    const size_t ws_bytes = fp8ort_conv_workspace_bytes(fmt, &cs);
    DeviceBuffer workspace(alloc_.get(), ws_bytes);
    gpu_check(fp8ort_conv_nhwc_ws(xq, packed_.get(), fmt, &cs, &epi, y_out, workspace.get(), ws_bytes, stream),
              "fp8ort_conv_nhwc");
    if (!attrs_.nhwc) {  // [n, oh*ow, m] -> [n, m, oh*ow]
      gpu_check(fp8ort_onnx_transpose_2d(y_out, y.mutable_data, element_bytes(y.type), s.n, s.oh * s.ow, s.m, stream),
                "fp8ort_onnx_transpose_2d");
    }
  }

 private:
  // Shapes the CPU kernel computes and the GPU kernels refuse, rewritten into the same problem in a form they take.
  // An input with no rows (or columns) and padding around it: every tap reads padding, the output is the epilogue of
  // zero sums. It becomes one row (column) of FP8 zeros in place of one padding row (column), which keeps the
  // output's size; returns that zero input (channels-last), or nothing when X has pixels.
  DeviceBuffer zero_plane_for_empty_input(fp8ort_conv_shape& cs, void* stream) {
    if (cs.in_h != 0 && cs.in_w != 0) return DeviceBuffer();
    const auto one_from_padding = [](int64_t& in, int64_t& pad_a, int64_t& pad_b) {
      if (in != 0) return;
      in = 1;
      if (pad_b > 0) {  // the pads sum to at least the window (>= 1) when the output is not empty
        --pad_b;
      } else {
        --pad_a;
      }
    };
    one_from_padding(cs.in_h, cs.pad_top, cs.pad_bottom);
    one_from_padding(cs.in_w, cs.pad_left, cs.pad_right);
    const int64_t count = cs.batch * cs.in_h * cs.in_w * cs.in_c;
    DeviceBuffer zeros(alloc_.get(), static_cast<size_t>(count));
    // +0 is code 0 in every FP8 format
    gpu_check(fp8ort_onnx_fill(zeros.get(), 1, count, 0, stream), "fp8ort_onnx_fill");
    return zeros;
  }

  // Where the output has one row (column), the stride along it is never applied and the dilation of a one-tap
  // window never either: the smallest values with the same output replace them, so that strides the CPU takes
  // (up to 2^62) do not reach the GPU kernels' limit of 2^20.
  static void drop_unused_strides(fp8ort_conv_shape& cs, int64_t oh, int64_t ow) {
    const auto shrink = [](int64_t out, int64_t in, int64_t pads, int64_t window, int64_t& stride) {
      if (out == 1) stride = std::min<int64_t>(stride, in + pads - window + 1);  // still one output
    };
    if (cs.kernel_h == 1) cs.dilation_h = 1;
    if (cs.kernel_w == 1) cs.dilation_w = 1;
    shrink(oh, cs.in_h, cs.pad_top + cs.pad_bottom, cs.dilation_h * (cs.kernel_h - 1) + 1, cs.stride_h);
    shrink(ow, cs.in_w, cs.pad_left + cs.pad_right, cs.dilation_w * (cs.kernel_w - 1) + 1, cs.stride_w);
  }

  static int64_t element_bytes(ONNXTensorElementDataType t) {
    switch (t) {
      case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT: return 4;
      case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16:
      case ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16: return 2;
      default: return 1;  // the FP8 types
    }
  }

  // [n, c, pixels] -> a scratch copy [n, pixels, c] on the stream.
  DeviceBuffer to_channels_last(const void* src, ONNXTensorElementDataType t, int64_t n, int64_t c, int64_t pixels,
                                void* stream) {
    DeviceBuffer out(alloc_.get(), static_cast<size_t>(n * c * pixels * element_bytes(t)));
    gpu_check(fp8ort_onnx_transpose_2d(src, out.get(), element_bytes(t), n, c, pixels, stream),
              "fp8ort_onnx_transpose_2d");
    return out;
  }

  // The in_c the kernel library needs W and X padded to for this shape, or 0 when no padding is needed.
  static int64_t padded_channels(fp8ort_fp8_format fmt, const fp8ort_conv_shape& cs) {
    return fp8ort_conv_padded_in_c(fmt, &cs);
  }

  // Packs W for this shape unless it is packed already in the layout the shape needs; returns padded_c.
  int64_t ensure_packed(const void* w, fp8ort_fp8_format fmt, const fp8ort_conv_shape& cs, void* stream) {
    std::lock_guard<std::mutex> lock(pack_mutex_);
    const int64_t want = padded_channels(fmt, cs);
    if (packed_.get() != nullptr && want == padded_c_) return padded_c_;
    padded_c_ = want;
    if (padded_c_ != 0) {
      fp8ort_conv_shape p = cs;
      p.in_c = padded_c_;
      packed_ = DeviceBuffer(alloc_.get(), fp8ort_conv_packed_bytes(&p));
      gpu_check(fp8ort_conv_pack_weight_padded(w, &p, cs.in_c, packed_.get(), stream),
                "fp8ort_conv_pack_weight_padded");
    } else {
      packed_ = DeviceBuffer(alloc_.get(), fp8ort_conv_packed_bytes(&cs));
      gpu_check(fp8ort_conv_pack_weight(w, &cs, packed_.get(), stream), "fp8ort_conv_pack_weight");
    }
    return padded_c_;
  }

  // Packs a constant W now when X's static shape fixes the layout (unknown batch taken as 1); otherwise the
  // first run packs.
  void pack_at_creation(const OrtKernelInfo* info) {
    const OrtValue* wv = device_constant(info, 1);
    if (wv == nullptr) return;
    Tensor w = describe(wv);
    std::vector<int64_t> x_shape = static_input_shape(info, 0);
    if (!is_fp8_type(w.type) || w.shape.size() != 4 || x_shape.size() != 4 || w.size == 0) return;
    if (x_shape[0] < 0) x_shape[0] = 1;
    for (int64_t d : x_shape) {
      if (d <= 0) return;
    }
    ConvShape s = conv_shape(attrs_, x_shape, w.shape);
    fp8ort_conv_shape cs{s.n, s.h, s.w, s.c, s.m, s.kh, s.kw, attrs_.strides[0], attrs_.strides[1],
                         attrs_.pads[0], attrs_.pads[1], attrs_.pads[2], attrs_.pads[3], attrs_.dilations[0],
                         attrs_.dilations[1], attrs_.group};
    if (s.oh <= 0 || s.ow <= 0) return;
    drop_unused_strides(cs, s.oh, s.ow);
    ensure_packed(w.data, static_cast<fp8ort_fp8_format>(w.type), cs, nullptr);
    wait_for_default_stream();
  }

  ConvAttrs attrs_;
  CommonAttrs common_;
  Allocator alloc_;  // declared before packed_: destroyed after it
  std::mutex pack_mutex_;
  DeviceBuffer packed_;
  int64_t padded_c_ = 0;  // in_c of the packed weight and activations when padded for the wgmma kernel, else 0
};

class GpuMatMul final : public Kernel {
 public:
  explicit GpuMatMul(const OrtKernelInfo* info) : alloc_(info) {
    oc_ = {"FP8MatMul", node_name(info)};
    common_ = parse_common_attrs(info);
    trans_b_ = attr_int(info, "transB", 0);
    if (trans_b_ != 0 && trans_b_ != 1) fail("attribute transB must be 0 or 1; got " + std::to_string(trans_b_));
    if (attr_int(info, "transA", 0) != 0) fail("attribute transA must be 0 (transpose A before the op)");
    check_constant_scale(info, 2, "a_scale", false);
    check_constant_scale(info, 3, "b_scale", true);
    if (is_fp8_type(common_.output_type)) check_constant_scale(info, 7, "y_scale", false);
    if (gemm_backend() == GemmBackend::kInvalid) {
      fail(std::string("environment variable FP8ORT_GEMM_BACKEND must be ours, blaslt or auto; got '") +
           std::getenv("FP8ORT_GEMM_BACKEND") + "'");
    }
    if (const OrtValue* bv = device_constant(info, 1)) {  // a constant B: pack it now, not on the first run
      Tensor b = describe(bv);
      if (is_fp8_type(b.type) && b.shape.size() == 2 && b.size > 0) {
        pack(b, nullptr);
        wait_for_default_stream();
      }
    }
  }

  void compute(OrtKernelContext* ctx) override {
    void* stream = compute_stream(ctx);
    Tensor a = input(ctx, 0), b = input(ctx, 1);
    require_type(b, "B", is_fp8_type(b.type), "an FP8 type");
    if (b.shape.size() != 2) fail("input B must be 2-D; got shape " + shape_str(b.shape));
    if (a.shape.empty()) fail("input A must have rank >= 1; got a scalar");
    const int64_t k = trans_b_ ? b.shape[1] : b.shape[0];
    const int64_t n = trans_b_ ? b.shape[0] : b.shape[1];
    if (a.shape.back() < 1) {  // as the CPU kernel says it
      fail("input A has K=0 (last dimension of " + shape_str(a.shape) + "); FP8MatMul needs K >= 1");
    }
    if (a.shape.back() != k) {
      fail("input A has K=" + std::to_string(a.shape.back()) + " but B " + shape_str(b.shape) + " needs K=" +
           std::to_string(k));
    }
    std::vector<int64_t> y_shape = a.shape;
    y_shape.back() = n;
    const float* a_scale = scalar_scale_ptr(input(ctx, 2), "a_scale");
    fp8ort_epilogue epi = gpu_epilogue(ctx, common_, a_scale, input(ctx, 3), "b_scale", n, y_shape, "C");
    Tensor y = output(ctx, 0, y_shape);
    check_output_type(y, common_.output_type);
    if (y.size == 0) return;  // before packing: an empty output needs no weight
    pack(b, stream);
    DeviceBuffer scratch;
    const void* aq = fp8_activations(a, "A", a_scale, b.type, alloc_.get(), scratch, stream);
    const int64_t m = a.size / k;
    const auto format = static_cast<fp8ort_fp8_format>(b.type);
    if (run_blaslt(aq, format, m, n, k, epi, y.mutable_data, stream)) return;
    const size_t ws_bytes = fp8ort_gemm_workspace_bytes(format, m, n, k);  // split-K scratch (small M), or 0
    DeviceBuffer workspace(alloc_.get(), ws_bytes);
    gpu_check(fp8ort_gemm_ws(aq, packed_.get(), format, m, n, k, &epi, y.mutable_data, workspace.get(), ws_bytes, stream),
              "fp8ort_gemm");
  }

 private:
  // The BLAS-Lt route: true when it computed Y. Under "auto" a problem it cannot run (FP8ORT_UNSUPPORTED) falls
  // back to our GEMM silently; FP8ORT_GEMM_BACKEND=blaslt makes that an error instead.
  // Packs B once (a weight fed at run time: on the first run's stream).
  void pack(const Tensor& b, void* stream) {
    std::lock_guard<std::mutex> lock(pack_mutex_);
    if (packed_.get() != nullptr) return;
    const int64_t k = trans_b_ ? b.shape[1] : b.shape[0];
    const int64_t n = trans_b_ ? b.shape[0] : b.shape[1];
    packed_ = DeviceBuffer(alloc_.get(), fp8ort_gemm_packed_bytes(n, k));
    gpu_check(fp8ort_gemm_pack_weight(b.data, static_cast<int>(trans_b_), k, n, packed_.get(), stream),
              "fp8ort_gemm_pack_weight");
  }

  bool run_blaslt(const void* aq, fp8ort_fp8_format format, int64_t m, int64_t n, int64_t k,
                  const fp8ort_epilogue& epi, void* y, void* stream) {
    const GemmBackend backend = gemm_backend();
    const bool forced = backend == GemmBackend::kBlasLt;
    if (backend == GemmBackend::kOurs) return false;
    if (!forced && static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) < kBlasLtMinMacs) {
      return false;
    }
    if (!fp8ort_blaslt_available()) {
      if (forced) gpu_check(FP8ORT_UNSUPPORTED, "FP8ORT_GEMM_BACKEND=blaslt");
      return false;
    }
    const size_t bytes = fp8ort_gemm_blaslt_workspace_bytes(m, n, k);
    DeviceBuffer workspace(alloc_.get(), bytes);  // D and cuBLASLt's scratch; returned when this call ends
    const fp8ort_status st =
        fp8ort_gemm_blaslt(aq, packed_.get(), format, m, n, k, &epi, y, workspace.get(), bytes, stream);
    if (st == FP8ORT_OK) return true;
    if (st == FP8ORT_UNSUPPORTED && !forced) return false;
    gpu_check(st, forced ? "fp8ort_gemm_blaslt (FP8ORT_GEMM_BACKEND=blaslt)" : "fp8ort_gemm_blaslt");
    return false;
  }

  CommonAttrs common_;
  int64_t trans_b_ = 0;
  Allocator alloc_;  // declared before packed_: destroyed after it
  std::mutex pack_mutex_;
  DeviceBuffer packed_;
};

class GpuQuantize final : public Kernel {
 public:
  GpuQuantize(const OrtKernelInfo* info, bool quantize) : quantize_(quantize) {
    oc_ = {quantize ? "FP8Quantize" : "FP8Dequantize", node_name(info)};
    out_type_ = attr_elem_type(
        info, "output_dtype",
        quantize ? ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E4M3FN : ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT);
    if (quantize ? !is_fp8_type(out_type_) : !is_high_precision_type(out_type_)) {
      fail("attribute output_dtype=" + std::to_string(out_type_) + " is not allowed for this op");
    }
    saturate_ = attr_int(info, "saturate", 1);
    if (saturate_ != 0 && saturate_ != 1) fail("attribute saturate must be 0 or 1");
    check_constant_scale(info, 1, "scale", false);
  }

  void compute(OrtKernelContext* ctx) override {
    void* stream = compute_stream(ctx);
    Tensor x = input(ctx, 0);
    const float* scale = scalar_scale_ptr(input(ctx, 1), "scale");
    Tensor y = output(ctx, 0, x.shape);
    check_output_type(y, out_type_);
    if (quantize_) {
      require_type(x, "X", is_high_precision_type(x.type), "float32, float16 or bfloat16");
      gpu_check(fp8ort_quantize(x.data, static_cast<fp8ort_dtype>(x.type), scale, y.mutable_data,
                                static_cast<fp8ort_dtype>(out_type_), x.size, static_cast<int>(saturate_), stream),
                "fp8ort_quantize");
    } else {
      require_type(x, "X", is_fp8_type(x.type), "an FP8 type");
      gpu_check(fp8ort_dequantize(x.data, static_cast<fp8ort_dtype>(x.type), scale, y.mutable_data,
                                  static_cast<fp8ort_dtype>(out_type_), x.size, stream),
                "fp8ort_dequantize");
    }
  }

 private:
  bool quantize_;
  ONNXTensorElementDataType out_type_;
  int64_t saturate_ = 1;
};

// FP8MaxPool: the contract's checks (ops/op_common), then one launch on the compute stream.
class GpuMaxPool final : public Kernel {
 public:
  explicit GpuMaxPool(const OrtKernelInfo* info) {
    oc_ = {"FP8MaxPool", node_name(info)};
    attrs_ = parse_max_pool_attrs(info);
  }

  void compute(OrtKernelContext* ctx) override {
    const MaxPoolRun run = begin_max_pool(ctx, attrs_);
    const Tensor &x = run.x, &y = run.y;
    const MaxPoolShape& s = run.shape;
    fp8ort_max_pool_params p{};
    p.n = s.n;
    p.c = s.c;
    p.in_h = s.h;
    p.in_w = s.w;
    p.out_h = s.oh;
    p.out_w = s.ow;
    p.kernel_h = s.kh;
    p.kernel_w = s.kw;
    p.stride_h = s.sh;
    p.stride_w = s.sw;
    p.dilation_h = s.dh;
    p.dilation_w = s.dw;
    p.pad_top = s.pad_top;
    p.pad_left = s.pad_left;
    gpu_check(fp8ort_max_pool_nhwc(x.data, y.mutable_data, static_cast<fp8ort_dtype>(x.type), &p, compute_stream(ctx)),
              "fp8ort_max_pool_nhwc");
  }

 private:
  MaxPoolAttrs attrs_;
};

// FP8Attention: the contract's checks (ops/op_common), then the kernel for Q/K/V's type on the compute stream (with
// the scratch its workspace_bytes asks for: a split of the keys, or float16 inputs widened); y_scale stays on the
// device.
class GpuAttention final : public Kernel {
 public:
  explicit GpuAttention(const OrtKernelInfo* info) : alloc_(info) {
    oc_ = {"FP8Attention", node_name(info)};
    attrs_ = parse_attention_attrs(info);
    if (is_fp8_type(attrs_.output_type)) check_constant_scale(info, 4, "y_scale", false);
  }

  void compute(OrtKernelContext* ctx) override {
    const AttentionRun run = begin_attention(ctx, attrs_);
    const AttentionShape& s = run.shape;
    if (s.d != s.dv || s.d > 128) {
      fail("head sizes D=" + std::to_string(s.d) + " (Q, K) and Dv=" + std::to_string(s.dv) +
           " (V): the GPU kernel takes D = Dv <= 128; run this model on the CPU device or quantize it with "
           "QuantizeConfig(fuse_attention=False)");
    }
    fp8ort_attention_params p{};
    p.b = s.b;
    p.s = s.s;
    p.t = s.t;
    p.h = s.h;
    p.d = s.d;
    p.dv = s.dv;
    p.q_row = s.q_row;
    p.k_row = s.k_row;
    p.v_row = s.v_row;
    for (int i = 0; i < 4; ++i) p.bias_stride[i] = s.bias_stride[i];
    p.scale = s.scale;
    p.nan_to_zero = attrs_.nan_to_zero ? 1 : 0;
    const float* y_scale = is_fp8_type(attrs_.output_type) ? static_cast<const float*>(run.y_scale.data) : nullptr;
    const float* bias = run.bias.present() ? static_cast<const float*>(run.bias.data) : nullptr;
    const auto y_type = static_cast<fp8ort_dtype>(attrs_.output_type);
    if (run.qkv_type == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16) {  // the tensor-core kernel, or float32 on widened copies
      const size_t ws_bytes = fp8ort_attention_f16_workspace_bytes(&p);
      DeviceBuffer workspace(alloc_.get(), ws_bytes);
      gpu_check(fp8ort_attention_f16(run.q_data, run.k_data, run.v_data, bias, &p, run.y.mutable_data, y_type,
                                     y_scale, workspace.get(), ws_bytes, compute_stream(ctx)),
                "fp8ort_attention_f16");
      return;
    }
    const size_t ws_bytes = fp8ort_attention_workspace_bytes(&p);
    DeviceBuffer workspace(alloc_.get(), ws_bytes);  // the key splits' partial rows, or none
    gpu_check(fp8ort_attention_ws(static_cast<const float*>(run.q_data), static_cast<const float*>(run.k_data),
                                  static_cast<const float*>(run.v_data), bias, &p, run.y.mutable_data, y_type, y_scale,
                                  workspace.get(), ws_bytes, compute_stream(ctx)),
              "fp8ort_attention");
  }

 private:
  AttentionAttrs attrs_;
  Allocator alloc_;
};

// FP8LayerNormalization: the contract's checks (ops/op_common), then the LayerNormalization kernel with its FP8
// copy in the same pass; y_scale stays on the device (checked when the kernel is made where it is a constant).
class GpuLayerNorm final : public Kernel {
 public:
  explicit GpuLayerNorm(const OrtKernelInfo* info) {
    oc_ = {"FP8LayerNormalization", node_name(info)};
    attrs_ = parse_layer_norm_attrs(info);
    check_constant_scale(info, 3, "y_scale", false);
  }

  void compute(OrtKernelContext* ctx) override {
    const LayerNormRun run = begin_layer_norm(ctx, attrs_);
    gpu_check(fp8ort_nn_layer_norm_fp8(run.x.data, run.scale.data, run.bias.present() ? run.bias.data : nullptr,
                                       run.y.mutable_data, run.y_fp8.mutable_data,
                                       static_cast<fp8ort_dtype>(run.x.type), static_cast<fp8ort_dtype>(attrs_.q_type),
                                       static_cast<const float*>(run.y_scale.data), run.rows, run.cols,
                                       attrs_.epsilon, compute_stream(ctx)),
              "fp8ort_nn_layer_norm_fp8");
  }

 private:
  LayerNormAttrs attrs_;
};

// FP8GlobalAveragePool and FP8ChannelMul: the contract's checks, then one launch; scales stay on the device.
class GpuChannelOp final : public Kernel {
 public:
  GpuChannelOp(const OrtKernelInfo* info, bool mul) : alloc_(info), mul_(mul) {
    oc_ = {mul ? "FP8ChannelMul" : "FP8GlobalAveragePool", node_name(info)};
    attrs_ = parse_channel_op_attrs(info, mul);
    check_constant_scale(info, 1, "x_scale", false);
    if (mul && is_fp8_type(attrs_.output_type)) check_constant_scale(info, 3, "y_scale", false);
  }

  void compute(OrtKernelContext* ctx) override {
    const int nhwc = attrs_.nhwc ? 1 : 0;
    if (!mul_) {
      const ChannelOpRun run = begin_global_average_pool(ctx, attrs_);
      const size_t ws_bytes = fp8ort_global_average_pool_workspace_bytes(run.n, run.hw, run.c, nhwc);
      DeviceBuffer workspace(alloc_.get(), ws_bytes);  // partial sums of few images with large H x W
      gpu_check(fp8ort_global_average_pool(run.x.data, static_cast<fp8ort_dtype>(run.x.type),
                                           static_cast<const float*>(run.x_scale.data),
                                           static_cast<float*>(run.y.mutable_data), run.n, run.hw, run.c, nhwc,
                                           workspace.get(), ws_bytes, compute_stream(ctx)),
                "fp8ort_global_average_pool");
      return;
    }
    const ChannelOpRun run = begin_channel_mul(ctx, attrs_);
    const float* y_scale = is_fp8_type(attrs_.output_type) ? static_cast<const float*>(run.y_scale.data) : nullptr;
    gpu_check(fp8ort_channel_mul(run.x.data, static_cast<fp8ort_dtype>(run.x.type),
                                 static_cast<const float*>(run.x_scale.data), static_cast<const float*>(run.g.data),
                                 run.y.mutable_data, static_cast<fp8ort_dtype>(attrs_.output_type), y_scale, run.n,
                                 run.hw, run.c, nhwc, compute_stream(ctx)),
              "fp8ort_channel_mul");
  }

 private:
  Allocator alloc_;
  bool mul_;
  ChannelOpAttrs attrs_;
};

}  // namespace

std::unique_ptr<Kernel> create_gpu_layer_norm(const OrtKernelInfo* info) { return std::make_unique<GpuLayerNorm>(info); }
std::unique_ptr<Kernel> create_gpu_global_average_pool(const OrtKernelInfo* info) {
  return std::make_unique<GpuChannelOp>(info, false);
}
std::unique_ptr<Kernel> create_gpu_channel_mul(const OrtKernelInfo* info) {
  return std::make_unique<GpuChannelOp>(info, true);
}

std::unique_ptr<Kernel> create_gpu_attention(const OrtKernelInfo* info) { return std::make_unique<GpuAttention>(info); }
std::unique_ptr<Kernel> create_gpu_max_pool(const OrtKernelInfo* info) { return std::make_unique<GpuMaxPool>(info); }
std::unique_ptr<Kernel> create_gpu_conv(const OrtKernelInfo* info) { return std::make_unique<GpuConv>(info); }
std::unique_ptr<Kernel> create_gpu_matmul(const OrtKernelInfo* info) { return std::make_unique<GpuMatMul>(info); }
std::unique_ptr<Kernel> create_gpu_quantize(const OrtKernelInfo* info) {
  return std::make_unique<GpuQuantize>(info, true);
}
std::unique_ptr<Kernel> create_gpu_dequantize(const OrtKernelInfo* info) {
  return std::make_unique<GpuQuantize>(info, false);
}

}  // namespace fp8ort
