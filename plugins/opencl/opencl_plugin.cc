// The OpenCL plugin: devices through any ICD (PoCL in tests), modules of
// type_key "opencl". Knows the core only through the plugin ABI header.
#include <cstdlib>
#include <cstring>
#include <new>

#include "opencl_device.h"
#include "opencl_module.h"

namespace hetrt::opencl {

hetrt_error kOutOfMemory{HETRT_STATUS_RESOURCE_EXHAUSTED, "out of host memory in the OpenCL plugin"};

hetrt_error_t* MakeError(hetrt_status_code_t code, std::string message) {
  return new hetrt_error{code, std::move(message)};
}

hetrt_error_t* CurrentExceptionError() noexcept {
  try {
    throw;
  } catch (const std::bad_alloc&) {
    return &kOutOfMemory;
  } catch (const std::exception& e) {
    try {
      return MakeError(HETRT_STATUS_INTERNAL, std::string("OpenCL plugin: ") + e.what());
    } catch (...) {
      return &kOutOfMemory;
    }
  } catch (...) {
    try {
      return MakeError(HETRT_STATUS_INTERNAL, "OpenCL plugin: unknown exception");
    } catch (...) {
      return &kOutOfMemory;
    }
  }
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
    HETRT_CL_ERROR(CL_PROFILING_INFO_NOT_AVAILABLE) HETRT_CL_ERROR(CL_MAP_FAILURE)
    HETRT_CL_ERROR(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST) HETRT_CL_ERROR(CL_INVALID_PLATFORM)
    HETRT_CL_ERROR(CL_INVALID_QUEUE_PROPERTIES) HETRT_CL_ERROR(CL_INVALID_HOST_PTR)
    HETRT_CL_ERROR(CL_INVALID_EVENT_WAIT_LIST)
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

// error_message / error_destroy never fail; a malformed args struct is ignored.
hetrt_error_t* ErrorMessage(hetrt_error_message_args_t* args) {
  if (!HETRT_ARGS_HAS(args, hetrt_error_message_args_t, code)) return nullptr;
  if (args->error == nullptr) {
    args->message = "";
    args->code = HETRT_STATUS_OK;
    return nullptr;
  }
  args->message = args->error->message.c_str();
  args->code = args->error->code;
  return nullptr;
}

hetrt_error_t* ErrorDestroy(hetrt_error_destroy_args_t* args) {
  if (HETRT_ARGS_HAS(args, hetrt_error_destroy_args_t, error) && args->error != &kOutOfMemory) delete args->error;
  return nullptr;
}

hetrt_error_t* SetOption(hetrt_set_option_args_t* args) {
  const std::string key = args->key ? args->key : "(null)";
  if (key != "wait_poll_us")
    return MakeError(HETRT_STATUS_NOT_FOUND, "the OpenCL plugin has no option '" + key + "' (known: wait_poll_us)");
  const std::string value = args->value ? args->value : "";
  char* end = nullptr;
  const long long us = std::strtoll(value.c_str(), &end, 10);
  if (value.empty() || *end != '\0' || us < 0 || us > 1000000)
    return MakeError(HETRT_STATUS_INVALID_ARGUMENT, "wait_poll_us='" + value + "' is not an integer in [0, 1000000]");
  args->self->wait_poll_us.store(us);
  return nullptr;
}

// Devices are discovered on first use, not here: creating an instance is cheap.
hetrt_error_t* InstanceCreate(hetrt_instance_create_args_t* args) {
  auto inst = std::make_unique<hetrt_instance>();
  inst->host = args->host;
  inst->serial = RegisterInstance();
  for (size_t i = 0; i < args->num_options && args->options; ++i) {
    hetrt_set_option_args_t set{sizeof set, nullptr, inst.get(), args->options[i].key, args->options[i].value};
    if (hetrt_error_t* e = SetOption(&set)) return e;
  }
  args->instance = inst.release();
  return nullptr;
}

hetrt_error_t* InstanceDestroy(hetrt_instance_destroy_args_t* args) {
  delete args->self;
  return nullptr;
}

const int32_t kDeviceTypes[] = {kDLOpenCL};
const char* const kTypeKeys[] = {"opencl"};

const hetrt_plugin_api_t kApi = {
    sizeof(hetrt_plugin_api_t),
    HETRT_PLUGIN_ABI_MAJOR,
    HETRT_PLUGIN_ABI_MINOR,
    "opencl",
    "0.2.0",
    ErrorMessage,
    ErrorDestroy,
    Entry<InstanceCreate>::Call,
    Entry<InstanceDestroy>::Call,
    Entry<SetOption>::Call,
    nullptr,  // no global functions
    kDeviceTypes,
    1,
    kTypeKeys,
    1,
    &kDeviceApi,
    &kModuleApi,
    nullptr,
};

}  // namespace
}  // namespace hetrt::opencl

extern "C" HETRT_PLUGIN_EXPORT const hetrt_plugin_api_t* hetrt_plugin_get_api(void) {
  return &hetrt::opencl::kApi;
}
