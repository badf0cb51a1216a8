// The Vulkan plugin: every physical device the loader finds (lavapipe in
// tests), modules of type_key "vulkan". Knows the core only through the plugin
// ABI header.
#include <cstdlib>
#include <cstring>

#include "vulkan_device.h"
#include "vulkan_module.h"

namespace hetrt::vulkan {

const char* VkResultName(VkResult result) {
  switch (result) {
// clang-format off
#define HETRT_VK_RESULT(x) \
  case x:                  \
    return #x;
    HETRT_VK_RESULT(VK_SUCCESS) HETRT_VK_RESULT(VK_NOT_READY) HETRT_VK_RESULT(VK_TIMEOUT)
    HETRT_VK_RESULT(VK_INCOMPLETE) HETRT_VK_RESULT(VK_ERROR_OUT_OF_HOST_MEMORY)
    HETRT_VK_RESULT(VK_ERROR_OUT_OF_DEVICE_MEMORY) HETRT_VK_RESULT(VK_ERROR_INITIALIZATION_FAILED)
    HETRT_VK_RESULT(VK_ERROR_DEVICE_LOST) HETRT_VK_RESULT(VK_ERROR_MEMORY_MAP_FAILED)
    HETRT_VK_RESULT(VK_ERROR_LAYER_NOT_PRESENT) HETRT_VK_RESULT(VK_ERROR_EXTENSION_NOT_PRESENT)
    HETRT_VK_RESULT(VK_ERROR_FEATURE_NOT_PRESENT) HETRT_VK_RESULT(VK_ERROR_INCOMPATIBLE_DRIVER)
    HETRT_VK_RESULT(VK_ERROR_TOO_MANY_OBJECTS) HETRT_VK_RESULT(VK_ERROR_FORMAT_NOT_SUPPORTED)
    HETRT_VK_RESULT(VK_ERROR_FRAGMENTED_POOL) HETRT_VK_RESULT(VK_ERROR_OUT_OF_POOL_MEMORY)
    HETRT_VK_RESULT(VK_ERROR_INVALID_SHADER_NV) HETRT_VK_RESULT(VK_ERROR_UNKNOWN)
// clang-format on
#undef HETRT_VK_RESULT
                                        default : return "VkResult";
  }
}

hetrt_error_t* VkError(const std::string& call, VkResult result) {
  return MakeError(result == VK_ERROR_OUT_OF_DEVICE_MEMORY || result == VK_ERROR_OUT_OF_HOST_MEMORY
                       ? HETRT_STATUS_RESOURCE_EXHAUSTED
                       : HETRT_STATUS_INTERNAL,
                   call + " failed: " + VkResultName(result) + " (" + std::to_string(result) + ")");
}

namespace {

// Options: integer ones with their range, and switches (0/1).
// wait_poll_us: event/stream waits poll this long before sleeping in the
// driver; -1 (the default): as long as a wake-up costs on this machine.
// batch_limit: a stream submits after this many commands even without a boundary (0: never).
constexpr sdk::IntOption<hetrt_instance> kIntOptions[] = {
    {"wait_poll_us", &hetrt_instance::wait_poll_us, sdk::PollBudget::kAuto, 1000000},
    {"batch_limit", &hetrt_instance::batch_limit, 0, 1 << 20}};
// direct_mapping: host-visible device memory is mapped and copied with memcpy (else staged).
// push_descriptors: VK_KHR_push_descriptor where present (else descriptor pools).
// validate_spirv: spirv-tools validates every shader at load.
// calibrated_clock: device_clock reads VK_EXT_calibrated_timestamps where present (else samples).
constexpr sdk::BoolOption<hetrt_instance> kBoolOptions[] = {{"direct_mapping", &hetrt_instance::direct_mapping},
                                                            {"push_descriptors", &hetrt_instance::push_descriptors},
                                                            {"validate_spirv", &hetrt_instance::validate_spirv},
                                                            {"calibrated_clock", &hetrt_instance::calibrated_clock}};

hetrt_error_t* SetOption(hetrt_set_option_args_t* args) {
  return sdk::SetOption<kLabel>(args->self, args, kIntOptions, kBoolOptions);
}

inline constexpr char kTypeKey[] = "vulkan";

// Devices are discovered on first use, not at instance_create: creating an
// instance is cheap.
constexpr hetrt_plugin_api_t kApi = sdk::OneDevicePluginTable<hetrt_instance, SetOption, kLabel, kDLVulkan, kTypeKey>(
    "vulkan", "0.1.0", &kDeviceApi, &kModuleApi);

}  // namespace
}  // namespace hetrt::vulkan

extern "C" HETRT_PLUGIN_EXPORT const hetrt_plugin_api_t* hetrt_plugin_get_api(void) { return &hetrt::vulkan::kApi; }
