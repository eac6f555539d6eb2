#include "ort/ort_api.h"

#include <cstdlib>
#include <cstring>
#include <sstream>

namespace fp8ort {

const OrtApi* g_ort = nullptr;
uint32_t g_api_version = 0;

bool init_api(const OrtApiBase* base, uint32_t min_version, std::string* error) {
  const char* version = base->GetVersionString();
  // "1.32.0" -> API version 32
  uint32_t minor = 0;
  const char* dot = version ? std::strchr(version, '.') : nullptr;
  if (dot != nullptr) minor = static_cast<uint32_t>(std::strtoul(dot + 1, nullptr, 10));
  if (minor < min_version) {
    *error = std::string("fp8ort needs onnxruntime >= 1.") + std::to_string(min_version) + " here, found " +
             (version ? version : "unknown") + "; upgrade onnxruntime";
    return false;
  }
  if (g_ort != nullptr) return true;
  uint32_t wanted = minor < ORT_API_VERSION ? minor : ORT_API_VERSION;
  const OrtApi* api = base->GetApi(wanted);
  if (api == nullptr) {
    *error = "onnxruntime " + std::string(version) + " refused API version " + std::to_string(wanted);
    return false;
  }
  g_ort = api;
  g_api_version = wanted;
  return true;
}

void fail(const std::string& msg, OrtErrorCode code) { throw OpError(code, msg); }

void check(OrtStatus* status, const char* what) {
  if (status == nullptr) return;
  std::string msg = std::string(what) + " failed: " + g_ort->GetErrorMessage(status);
  OrtErrorCode code = g_ort->GetErrorCode(status);
  g_ort->ReleaseStatus(status);
  throw OpError(code, msg);
}

Tensor describe(const OrtValue* value) {
  Tensor t;
  if (value == nullptr) return t;
  // the OrtValue's own shape array (API 24, the oldest supported): no type-and-shape object to allocate and free
  const int64_t* dims = nullptr;
  size_t rank = 0;
  check(g_ort->GetTensorElementTypeAndShapeDataReference(value, &t.type, &dims, &rank),
        "reading a tensor's type and shape");
  t.shape.assign(dims, dims + rank);
  t.size = 1;
  for (int64_t d : t.shape) t.size *= d;
  void* data = nullptr;
  check(g_ort->GetTensorMutableData(const_cast<OrtValue*>(value), &data), "GetTensorMutableData");
  t.data = data;
  t.mutable_data = data;
  return t;
}

size_t input_count(OrtKernelContext* ctx) {
  size_t count = 0;
  check(g_ort->KernelContext_GetInputCount(ctx, &count), "KernelContext_GetInputCount");
  return count;
}

std::vector<Tensor> all_inputs(OrtKernelContext* ctx) {
  std::vector<Tensor> ins;
  const size_t n = input_count(ctx);
  for (size_t i = 0; i < n; ++i) ins.push_back(input(ctx, i));
  return ins;
}

Tensor input(OrtKernelContext* ctx, size_t index) {
  if (index >= input_count(ctx)) return Tensor{};
  const OrtValue* value = nullptr;
  check(g_ort->KernelContext_GetInput(ctx, index, &value), "KernelContext_GetInput");
  return describe(value);
}

Tensor output(OrtKernelContext* ctx, size_t index, const std::vector<int64_t>& shape) {
  OrtValue* value = nullptr;
  check(g_ort->KernelContext_GetOutput(ctx, index, shape.data(), shape.size(), &value), "KernelContext_GetOutput");
  return describe(value);
}

int64_t attr_int(const OrtKernelInfo* info, const char* name, int64_t dflt) {
  int64_t v = 0;
  OrtStatus* st = g_ort->KernelInfoGetAttribute_int64(info, name, &v);
  if (st != nullptr) {
    g_ort->ReleaseStatus(st);
    return dflt;
  }
  return v;
}

ONNXTensorElementDataType attr_elem_type(const OrtKernelInfo* info, const char* name, ONNXTensorElementDataType dflt) {
  constexpr int64_t kMaxEnumValue = 31;  // the enum's values (0-26) fit 5 bits: 0..31 convert with defined results
  const int64_t v = attr_int(info, name, dflt);
  if (v < 0 || v > kMaxEnumValue) {
    fail("attribute " + std::string(name) + "=" + std::to_string(v) + " is not an ONNX tensor element type");
  }
  return static_cast<ONNXTensorElementDataType>(v);
}

float attr_float(const OrtKernelInfo* info, const char* name, float dflt) {
  float v = 0.0f;
  OrtStatus* st = g_ort->KernelInfoGetAttribute_float(info, name, &v);
  if (st != nullptr) {
    g_ort->ReleaseStatus(st);
    return dflt;
  }
  return v;
}

std::string attr_string(const OrtKernelInfo* info, const char* name, const std::string& dflt) {
  size_t size = 0;
  OrtStatus* st = g_ort->KernelInfoGetAttribute_string(info, name, nullptr, &size);
  if (st != nullptr) {
    g_ort->ReleaseStatus(st);
    return dflt;
  }
  std::string s(size, '\0');
  check(g_ort->KernelInfoGetAttribute_string(info, name, s.data(), &size), "KernelInfoGetAttribute_string");
  if (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

std::vector<int64_t> attr_ints(const OrtKernelInfo* info, const char* name) {
  size_t size = 0;
  OrtStatus* st = g_ort->KernelInfoGetAttributeArray_int64(info, name, nullptr, &size);
  if (st != nullptr) {
    g_ort->ReleaseStatus(st);
    return {};
  }
  std::vector<int64_t> v(size);
  if (size > 0) {
    check(g_ort->KernelInfoGetAttributeArray_int64(info, name, v.data(), &size), "KernelInfoGetAttributeArray_int64");
  }
  return v;
}

bool has_attr(const OrtKernelInfo* info, const char* name) {
  // Probe every attribute kind we use; any success means the attribute exists.
  int64_t i = 0;
  OrtStatus* st = g_ort->KernelInfoGetAttribute_int64(info, name, &i);
  if (st == nullptr) return true;
  g_ort->ReleaseStatus(st);
  size_t size = 0;
  st = g_ort->KernelInfoGetAttribute_string(info, name, nullptr, &size);
  if (st == nullptr) return true;
  g_ort->ReleaseStatus(st);
  st = g_ort->KernelInfoGetAttributeArray_int64(info, name, nullptr, &size);
  if (st == nullptr) return true;
  g_ort->ReleaseStatus(st);
  float f = 0;
  st = g_ort->KernelInfoGetAttribute_float(info, name, &f);
  if (st == nullptr) return true;
  g_ort->ReleaseStatus(st);
  return false;
}

std::string node_name(const OrtKernelInfo* info) {
  size_t size = 0;
  OrtStatus* st = g_ort->KernelInfo_GetNodeName(info, nullptr, &size);
  if (st != nullptr) {
    g_ort->ReleaseStatus(st);
    return "";
  }
  std::string s(size, '\0');
  st = g_ort->KernelInfo_GetNodeName(info, s.data(), &size);
  if (st != nullptr) {
    g_ort->ReleaseStatus(st);
    return "";
  }
  if (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

const OrtValue* constant_input(const OrtKernelInfo* info, size_t index) {
  int is_constant = 0;
  const OrtValue* value = nullptr;
  OrtStatus* st = g_ort->KernelInfoGetConstantInput_tensor(info, index, &is_constant, &value);
  if (st != nullptr) {
    g_ort->ReleaseStatus(st);
    return nullptr;
  }
  return is_constant ? value : nullptr;
}

std::string shape_str(const std::vector<int64_t>& shape) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < shape.size(); ++i) os << (i ? ", " : "") << shape[i];
  os << "]";
  return os.str();
}

const char* type_name(ONNXTensorElementDataType t) {
  switch (t) {
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT: return "float32";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16: return "float16";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16: return "bfloat16";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE: return "float64";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E4M3FN: return "float8e4m3fn";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E4M3FNUZ: return "float8e4m3fnuz";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E5M2: return "float8e5m2";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E5M2FNUZ: return "float8e5m2fnuz";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8: return "int8";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8: return "uint8";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32: return "int32";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64: return "int64";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED: return "absent";
    default: return "unsupported type";
  }
}

}  // namespace fp8ort
