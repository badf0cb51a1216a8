// The OpenCL plugin: devices through any ICD (PoCL in tests), modules of
// type_key "opencl". Knows the core only through the plugin ABI header.
#include <cstring>

#include "opencl_device.h"
#include "opencl_module.h"

namespace hetrt::opencl {

const hetrt_host_api_t* g_host = nullptr;

void ReportError(const std::string& message) {
  if (g_host && g_host->set_last_error) g_host->set_last_error(message.c_str());
}

hetrt_error_t* MakeError(hetrt_status_code_t code, std::string message) {
  return new hetrt_error{code, std::move(message)};
}

const char* ClErrorName(cl_int status) {
  switch (status) {
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
#undef HETRT_CL_ERROR
    default:
      return "CL error";
  }
}

hetrt_error_t* ClError(const char* call, cl_int status) {
  return MakeError(HETRT_STATUS_INTERNAL,
                   std::string(call) + " failed: " + ClErrorName(status) + " (" + std::to_string(status) + ")");
}

namespace {

const char* ErrorMessage(const hetrt_error_t* e) { return e->message.c_str(); }
hetrt_status_code_t ErrorCode(const hetrt_error_t* e) { return e->code; }
void ErrorDestroy(hetrt_error_t* e) { delete e; }

hetrt_error_t* Initialize(const hetrt_host_api_t* host) {
  g_host = host;
  return nullptr;  // devices are discovered on first use
}

// Contexts and queues live until the process ends: the plugin may be
// initialized again (by another registry) and must then still see its devices.
void Shutdown() {}

hetrt_error_t* SetOption(const char* key, const char*) {
  return MakeError(HETRT_STATUS_NOT_FOUND, std::string("the OpenCL plugin has no option '") + key + "'");
}

const int32_t kDeviceTypes[] = {kDLOpenCL};
const char* const kTypeKeys[] = {"opencl"};

const hetrt_plugin_api_t kApi = {
    sizeof(hetrt_plugin_api_t),
    HETRT_PLUGIN_ABI_MAJOR,
    HETRT_PLUGIN_ABI_MINOR,
    "opencl",
    "0.1.0",
    ErrorMessage,
    ErrorCode,
    ErrorDestroy,
    Initialize,
    Shutdown,
    SetOption,
    kDeviceTypes,
    1,
    kTypeKeys,
    1,
    nullptr,
    0,
    &kDeviceApi,
    &kModuleApi,
    nullptr,
};

}  // namespace
}  // namespace hetrt::opencl

extern "C" HETRT_PLUGIN_EXPORT const hetrt_plugin_api_t* hetrt_plugin_get_api(void) {
  return &hetrt::opencl::kApi;
}
