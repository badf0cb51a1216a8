// The plugin's entry symbol: the table the core reads when it dlopens
// libhetrt_plugin_sim.so. A simulated accelerator with its own device type
// (ext_dev), its own address space and its own module type_key ("sim").
#include "sim_instance.h"

namespace sim {
namespace {

// No options yet; an unknown key is NOT_FOUND so that a caller offering an
// option to every plugin can tell "not mine" from "bad value".
hetrt_error_t* SetOption(hetrt_set_option_args_t* args) {
  return MakeError(HETRT_STATUS_NOT_FOUND,
                   "the sim plugin has no option '" + std::string(args->key ? args->key : "(null)") + "'");
}

constexpr int32_t kDeviceTypes[] = {kDeviceType};
constexpr const char* kTypeKeys[] = {"sim"};

constexpr hetrt_plugin_api_t kApi = hetrt::sdk::LazyInstancePluginTable<hetrt_instance, SetOption, kLabel>({
    .name = "sim",
    .version = "0.1.0",
    .device_types = kDeviceTypes,
    .type_keys = kTypeKeys,
    .device = &kDeviceApi,
    .module = &kModuleApi,
});

}  // namespace
}  // namespace sim

extern "C" HETRT_PLUGIN_EXPORT const hetrt_plugin_api_t* hetrt_plugin_get_api(void) { return &sim::kApi; }
