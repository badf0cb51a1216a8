// The plugin table of a C++ plugin: what every plugin writes the same way
// (struct_size, the ABI version it was built against, the SDK's error entries)
// filled in, the rest named by the plugin.
//
//   extern "C" HETRT_PLUGIN_EXPORT const hetrt_plugin_api_t* hetrt_plugin_get_api(void) {
//     static const hetrt_plugin_api_t api = hetrt::sdk::PluginTable({
//         .name = "sim", .version = "0.1.0",
//         .instance_create = Entry<InstanceCreate>::Call, ...,
//         .device_types = kDeviceTypes, .type_keys = kTypeKeys, .device = &kDeviceApi});
//     return &api;
//   }
#pragma once

#include <span>

#include "hetrt/sdk/entry.h"
#include "hetrt/sdk/error.h"
#include "hetrt/sdk/instance.h"

namespace hetrt::sdk {

struct PluginDescription {
  const char* name = nullptr;
  const char* version = nullptr;
  hetrt_error_t* (*instance_create)(hetrt_instance_create_args_t*) = nullptr;
  hetrt_error_t* (*instance_destroy)(hetrt_instance_destroy_args_t*) = nullptr;
  hetrt_error_t* (*set_option)(hetrt_set_option_args_t*) = nullptr;
  hetrt_error_t* (*global_functions)(hetrt_global_functions_args_t*) = nullptr;
  std::span<const int32_t> device_types{};
  std::span<const char* const> type_keys{};
  const hetrt_device_api_t* device = nullptr;
  const hetrt_module_api_t* module = nullptr;
  const hetrt_parallel_api_t* parallel = nullptr;
};

constexpr hetrt_plugin_api_t PluginTable(const PluginDescription& d) {
  hetrt_plugin_api_t api{};
  api.struct_size = sizeof(hetrt_plugin_api_t);
  api.abi_major = HETRT_PLUGIN_ABI_MAJOR;
  api.abi_minor = HETRT_PLUGIN_ABI_MINOR;
  api.name = d.name;
  api.version = d.version;
  api.error_message = ErrorMessage;
  api.error_destroy = ErrorDestroy;
  api.instance_create = d.instance_create;
  api.instance_destroy = d.instance_destroy;
  api.set_option = d.set_option;
  api.global_functions = d.global_functions;
  api.device_types = d.device_types.data();
  api.num_device_types = d.device_types.size();
  api.type_keys = d.type_keys.data();
  api.num_type_keys = d.type_keys.size();
  api.device = d.device;
  api.module = d.module;
  api.parallel = d.parallel;
  return api;
}

// The table of a plugin whose instance struct (with a `host` member) does its
// real work lazily: instance_create / instance_destroy from instance.h, every
// instance entry wrapped in Entry<..., Label>.
template <class Instance, hetrt_error_t* (*SetOption)(hetrt_set_option_args_t*), const char* Label>
constexpr hetrt_plugin_api_t LazyInstancePluginTable(PluginDescription d) {
  d.instance_create = Entry<CreateInstance<Instance, SetOption>, Label>::Call;
  d.instance_destroy = Entry<DestroyInstance<Instance>, Label>::Call;
  d.set_option = Entry<SetOption, Label>::Call;
  return PluginTable(d);
}

// set_option of a plugin with no options: every key is NOT_FOUND, so that a
// caller offering an option to every plugin can tell "not mine" from "bad value".
template <const char* Label>
hetrt_error_t* NoOptions(hetrt_set_option_args_t* args) {
  return MakeErrorf(HETRT_STATUS_NOT_FOUND, "the %s has no option '%s'", Label, args->key ? args->key : "(null)");
}

// The table of a lazy-instance plugin that serves one device type and loads
// modules of one type_key:
//   inline constexpr char kTypeKey[] = "cuda";
//   constexpr hetrt_plugin_api_t kApi = hetrt::sdk::OneDevicePluginTable<hetrt_instance, SetOption, kLabel,
//       kDLCUDA, kTypeKey>("cuda", "0.1.0", &kDeviceApi, &kModuleApi);
template <int32_t DeviceType, const char* TypeKey>
struct OneDeviceLists {
  static constexpr int32_t kDeviceTypes[] = {DeviceType};
  static constexpr const char* kTypeKeys[] = {TypeKey};
};
template <class Instance, hetrt_error_t* (*SetOption)(hetrt_set_option_args_t*), const char* Label, int32_t DeviceType,
          const char* TypeKey>
constexpr hetrt_plugin_api_t OneDevicePluginTable(const char* name, const char* version,
                                                  const hetrt_device_api_t* device, const hetrt_module_api_t* module) {
  using Lists = OneDeviceLists<DeviceType, TypeKey>;
  PluginDescription d;
  d.name = name;
  d.version = version;
  d.device_types = Lists::kDeviceTypes;
  d.type_keys = Lists::kTypeKeys;
  d.device = device;
  d.module = module;
  return LazyInstancePluginTable<Instance, SetOption, Label>(d);
}

}  // namespace hetrt::sdk
