// The plugin's entry symbol: the table the core reads when it dlopens
// libhetrt_plugin_sim.so. A simulated accelerator with its own device type
// (ext_dev), its own address space and its own module type_key ("sim").
#include "sim_instance.h"

namespace sim {
namespace {

inline constexpr char kTypeKey[] = "sim";

// No options yet (every key is NOT_FOUND); devices are set up on first use.
constexpr hetrt_plugin_api_t kApi =
    hetrt::sdk::OneDevicePluginTable<hetrt_instance, hetrt::sdk::NoOptions<kLabel>, kLabel, kDeviceType, kTypeKey>(
        "sim", "0.1.0", &kDeviceApi, &kModuleApi);

}  // namespace
}  // namespace sim

extern "C" HETRT_PLUGIN_EXPORT const hetrt_plugin_api_t* hetrt_plugin_get_api(void) { return &sim::kApi; }
