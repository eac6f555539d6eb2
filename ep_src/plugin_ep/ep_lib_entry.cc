// The plugin execution-provider entry points: one factory (Fp8OrtExecutionProvider) per registration.
#include <new>
#include <string>

#include "ort/ort_api.h"
#include "plugin_ep/ep_factory.h"

extern "C" {

__attribute__((visibility("default"))) OrtStatus* ORT_API_CALL CreateEpFactories(const char* /*registered_name*/,
                                                                                 const OrtApiBase* api_base,
                                                                                 const OrtLogger* logger,
                                                                                 OrtEpFactory** factories,
                                                                                 size_t max_factories,
                                                                                 size_t* num_factories) {
  if (num_factories != nullptr) *num_factories = 0;
  std::string error;
  if (!fp8ort::init_api(api_base, fp8ort::kMinEpApiVersion, &error)) {
    const OrtApi* api = api_base->GetApi(1);
    return api ? api->CreateStatus(ORT_FAIL, error.c_str()) : nullptr;
  }
  if (factories == nullptr || num_factories == nullptr || max_factories < 1) {
    return fp8ort::g_ort->CreateStatus(ORT_INVALID_ARGUMENT, "CreateEpFactories: room for one factory is needed");
  }
  const OrtEpApi* ep_api = fp8ort::g_ort->GetEpApi();
  if (ep_api == nullptr) return fp8ort::g_ort->CreateStatus(ORT_FAIL, "this onnxruntime offers no plugin-EP API");
  return fp8ort::guarded("CreateEpFactories", [&] {
    factories[0] = new fp8ort::Fp8OrtEpFactory(*ep_api, logger);
    *num_factories = 1;
  });
}

__attribute__((visibility("default"))) OrtStatus* ORT_API_CALL ReleaseEpFactory(OrtEpFactory* factory) {
  delete static_cast<fp8ort::Fp8OrtEpFactory*>(factory);
  return nullptr;
}

}  // extern "C"
