// The CUDA plugin: NVIDIA GPUs through the driver API, loaded at run time
// (cuda_driver.h), and modules of type_key "cuda". Knows the core only through
// the plugin ABI header.
#include "cuda_device.h"
#include "cuda_module.h"

namespace hetrt::cuda {

namespace {

// No options: the driver library is chosen by $HETRT_CUDA_DRIVER, as it is
// process-wide (one cuInit per process).
inline constexpr char kTypeKey[] = "cuda";

// Devices are discovered on first use, not at instance_create: creating an
// instance is cheap.
constexpr hetrt_plugin_api_t kApi =
    sdk::OneDevicePluginTable<hetrt_instance, sdk::NoOptions<kLabel>, kLabel, kDLCUDA, kTypeKey>(
        "cuda", "0.1.0", &kDeviceApi, &kModuleApi);

}  // namespace
}  // namespace hetrt::cuda

extern "C" HETRT_PLUGIN_EXPORT const hetrt_plugin_api_t* hetrt_plugin_get_api(void) { return &hetrt::cuda::kApi; }
