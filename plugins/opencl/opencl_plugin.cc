// The OpenCL plugin: devices through any ICD (PoCL in tests), modules of
// type_key "opencl". Knows the core only through the plugin ABI header.
#include <cstdlib>
#include <cstring>

#include "opencl_device.h"
#include "opencl_module.h"

namespace hetrt::opencl {

const char* ClErrorName(cl_int status) {
  switch (status) {
// clang-format off
#define HETRT_CL_ERROR(x) \
  case x:                 \
    return #x;
    HETRT_CL_ERROR(CL_DEVICE_NOT_FOUND) HETRT_CL_ERROR(CL_DEVICE_NOT_AVAILABLE)
    HETRT_CL_ERROR(CL_COMPILER_NOT_AVAILABLE) HETRT_CL_ERROR(CL_MEM_OBJECT_ALLOCATION_FAILURE)
    HETRT_CL_ERROR(CL_OUT_OF_RESOURCES) HETRT_CL_ERROR(CL_OUT_OF_HOST_MEMORY)
    HETRT_CL_ERROR(CL_BUILD_PROGRAM_FAILURE) HETRT_CL_ERROR(CL_INVALID_VALUE)
    HETRT_CL_ERROR(CL_INVALID_DEVICE) HETRT_CL_ERROR(CL_INVALID_CONTEXT)
    HETRT_CL_ERROR(CL_INVALID_COMMAND_QUEUE) HETRT_CL_ERROR(CL_INVALID_MEM_OBJECT)
    HETRT_CL_ERROR(CL_INVALID_BINARY) HETRT_CL_ERROR(CL_INVALID_BUILD_OPTIONS)
    HETRT_CL_ERROR(CL_INVALID_PROGRAM) HETRT_CL_ERROR(CL_INVALID_PROGRAM_EXECUTABLE)
    HETRT_CL_ERROR(CL_INVALID_KERNEL_NAME) HETRT_CL_ERROR(CL_INVALID_KERNEL)
    HETRT_CL_ERROR(CL_INVALID_ARG_INDEX) HETRT_CL_ERROR(CL_INVALID_ARG_VALUE)
    HETRT_CL_ERROR(CL_INVALID_ARG_SIZE) HETRT_CL_ERROR(CL_INVALID_KERNEL_ARGS)
    HETRT_CL_ERROR(CL_INVALID_WORK_DIMENSION) HETRT_CL_ERROR(CL_INVALID_WORK_GROUP_SIZE)
    HETRT_CL_ERROR(CL_INVALID_WORK_ITEM_SIZE) HETRT_CL_ERROR(CL_INVALID_GLOBAL_OFFSET)
    HETRT_CL_ERROR(CL_INVALID_EVENT) HETRT_CL_ERROR(CL_INVALID_BUFFER_SIZE)
    HETRT_CL_ERROR(CL_INVALID_GLOBAL_WORK_SIZE) HETRT_CL_ERROR(CL_INVALID_OPERATION)
    HETRT_CL_ERROR(CL_PROFILING_INFO_NOT_AVAILABLE) HETRT_CL_ERROR(CL_MAP_FAILURE)
    HETRT_CL_ERROR(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST) HETRT_CL_ERROR(CL_INVALID_PLATFORM)
    HETRT_CL_ERROR(CL_INVALID_QUEUE_PROPERTIES) HETRT_CL_ERROR(CL_INVALID_HOST_PTR)
    HETRT_CL_ERROR(CL_INVALID_EVENT_WAIT_LIST)
// clang-format on
#undef HETRT_CL_ERROR
                                                                                default : return "CL error";
  }
}

hetrt_error_t* ClError(const char* call, cl_int status) {
  return MakeError(HETRT_STATUS_INTERNAL,
                   std::string(call) + " failed: " + ClErrorName(status) + " (" + std::to_string(status) + ")");
}

namespace {

// wait_poll_us: event_synchronize polls this long before sleeping in the
// driver; -1 (the default): as long as a wake-up costs on this machine.
constexpr sdk::IntOption<hetrt_instance> kIntOptions[] = {
    {"wait_poll_us", &hetrt_instance::wait_poll_us, sdk::PollBudget::kAuto, 1000000}};

hetrt_error_t* SetOption(hetrt_set_option_args_t* args) {
  return sdk::SetOption<kLabel>(args->self, args, kIntOptions, {});
}

inline constexpr char kTypeKey[] = "opencl";

// Platforms and devices are enumerated on first use: instance_create is cheap.
constexpr hetrt_plugin_api_t kApi = sdk::OneDevicePluginTable<hetrt_instance, SetOption, kLabel, kDLOpenCL, kTypeKey>(
    "opencl", "0.2.0", &kDeviceApi, &kModuleApi);

}  // namespace
}  // namespace hetrt::opencl

extern "C" HETRT_PLUGIN_EXPORT const hetrt_plugin_api_t* hetrt_plugin_get_api(void) { return &hetrt::opencl::kApi; }
