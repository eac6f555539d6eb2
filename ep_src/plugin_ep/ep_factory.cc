// The plugin execution-provider entry points. This build offers no EP device yet, so CreateEpFactories
// returns zero factories: onnxruntime can register the library and the custom-op route keeps working.
#include <string>

#include "ort/ort_api.h"

extern "C" {

__attribute__((visibility("default"))) OrtStatus* ORT_API_CALL CreateEpFactories(const char* /*registered_name*/,
                                                                                 const OrtApiBase* api_base,
                                                                                 const OrtLogger* /*logger*/,
                                                                                 OrtEpFactory** factories,
                                                                                 size_t max_factories,
                                                                                 size_t* num_factories) {
  if (num_factories != nullptr) *num_factories = 0;
  std::string error;
  if (!fp8ort::init_api(api_base, fp8ort::kMinEpApiVersion, &error)) {
    const OrtApi* api = api_base->GetApi(1);
    return api ? api->CreateStatus(ORT_FAIL, error.c_str()) : nullptr;
  }
  (void)factories;
  (void)max_factories;
  return nullptr;
}

__attribute__((visibility("default"))) OrtStatus* ORT_API_CALL ReleaseEpFactory(OrtEpFactory* /*factory*/) {
  return nullptr;
}

}  // extern "C"
