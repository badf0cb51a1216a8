// The CUDA plugin: NVIDIA GPUs through the driver API, loaded at run time
// (cuda_driver.h), and modules of type_key "cuda". Knows the core only through
// the plugin ABI header.
#include <new>

#include "cuda_device.h"
#include "cuda_module.h"

namespace hetrt::cuda {

hetrt_error kOutOfMemory{HETRT_STATUS_RESOURCE_EXHAUSTED, "out of host memory in the CUDA plugin"};

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
      return MakeError(HETRT_STATUS_INTERNAL, std::string("CUDA plugin: ") + e.what());
    } catch (...) {
      return &kOutOfMemory;
    }
  } catch (...) {
    return &kOutOfMemory;  // nothing better to say, and no allocation needed
  }
}

namespace {

// error_message / error_destroy never fail; a malformed args struct is ignored.
hetrt_error_t* ErrorMessage(hetrt_error_message_args_t* args) {
  if (!HETRT_ARGS_HAS(args, hetrt_error_message_args_t, code)) return nullptr;
  args->message = args->error ? args->error->message.c_str() : "";
  args->code = args->error ? args->error->code : HETRT_STATUS_OK;
  return nullptr;
}

hetrt_error_t* ErrorDestroy(hetrt_error_destroy_args_t* args) {
  if (HETRT_ARGS_HAS(args, hetrt_error_destroy_args_t, error) && args->error != &kOutOfMemory) delete args->error;
  return nullptr;
}

// The driver library is chosen by $HETRT_CUDA_DRIVER, not by an option: it
// is process-wide (one cuInit per process).
hetrt_error_t* SetOption(hetrt_set_option_args_t* args) {
  return MakeError(HETRT_STATUS_NOT_FOUND,
                   "the CUDA plugin has no option '" + std::string(args->key ? args->key : "(null)") + "'");
}

// The driver is probed on first use, not here: creating an instance is cheap.
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

const int32_t kDeviceTypes[] = {kDLCUDA};
const char* const kTypeKeys[] = {"cuda"};

const hetrt_plugin_api_t kApi = {
    sizeof(hetrt_plugin_api_t),
    HETRT_PLUGIN_ABI_MAJOR,
    HETRT_PLUGIN_ABI_MINOR,
    "cuda",
    "0.1.0",
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
}  // namespace hetrt::cuda

extern "C" HETRT_PLUGIN_EXPORT const hetrt_plugin_api_t* hetrt_plugin_get_api(void) { return &hetrt::cuda::kApi; }
