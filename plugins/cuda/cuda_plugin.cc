// The CUDA plugin: NVIDIA GPUs through the driver API, loaded at run time
// (cuda_driver.h), and modules of type_key "cuda". Knows the core only through
// the plugin ABI header.
#include "cuda_device.h"
#include "cuda_module.h"

namespace hetrt::cuda {

namespace {

// The driver library is chosen by $HETRT_CUDA_DRIVER, not by an option: it
// is process-wide (one cuInit per process).
hetrt_error_t* SetOption(hetrt_set_option_args_t* args) {
  return MakeError(HETRT_STATUS_NOT_FOUND,
                   "the CUDA plugin has no option '" + std::string(args->key ? args->key : "(null)") + "'");
}

const int32_t kDeviceTypes[] = {kDLCUDA};
const char* const kTypeKeys[] = {"cuda"};

// The driver is probed on first use, not at instance_create: creating an
// instance is cheap.
constexpr hetrt_plugin_api_t kApi = sdk::LazyInstancePluginTable<hetrt_instance, SetOption, kLabel>({
    .name = "cuda",
    .version = "0.1.0",
    .device_types = kDeviceTypes,
    .type_keys = kTypeKeys,
    .device = &kDeviceApi,
    .module = &kModuleApi,
});

}  // namespace
}  // namespace hetrt::cuda

extern "C" HETRT_PLUGIN_EXPORT const hetrt_plugin_api_t* hetrt_plugin_get_api(void) { return &hetrt::cuda::kApi; }
