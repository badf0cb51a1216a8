// The CPU plugin's entry symbol and lifecycle: initialize, options, shutdown.
#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>

#include "cpu_device.h"
#include "cpu_info.h"
#include "hetrt/plugin_abi.h"
#include "host_services.h"
#include "parallel_api.h"
#include "plugin_error.h"

namespace hetrt::cpu {
namespace {

constexpr int32_t kDeviceTypes[] = {kDLCPU};

bool g_initialized = false;

// The whole of `text` must be a decimal integer in [1, kMaxThreads].
bool ParseThreadCount(const char* text, int32_t* count) {
  const char* end = text + std::strlen(text);
  int32_t value = 0;
  const auto [parsed_end, error] = std::from_chars(text, end, value);
  if (error != std::errc() || parsed_end != end || value < 1 || value > kMaxThreads) return false;
  *count = value;
  return true;
}

hetrt_error_t* Initialize(const hetrt_host_api_t* host) {
  if (host == nullptr) return MakeError(HETRT_STATUS_INVALID_ARGUMENT, "cpu plugin: null host api");
  if (host->abi_major != HETRT_PLUGIN_ABI_MAJOR) {
    return MakeError(HETRT_STATUS_FAILED_PRECONDITION,
                     "cpu plugin: host ABI major %d, plugin ABI major %d",
                     static_cast<int>(host->abi_major), HETRT_PLUGIN_ABI_MAJOR);
  }
  if (g_initialized) {
    return MakeError(HETRT_STATUS_FAILED_PRECONDITION, "cpu plugin: initialized twice");
  }
  int32_t num_threads = std::min(AvailableCoreCount(), kMaxThreads);
  const char* from_environment = std::getenv("HETRT_NUM_THREADS");
  if (from_environment != nullptr && !ParseThreadCount(from_environment, &num_threads)) {
    return MakeError(HETRT_STATUS_INVALID_ARGUMENT,
                     "cpu plugin: HETRT_NUM_THREADS=\"%s\" is not an integer in [1, %d]",
                     from_environment, static_cast<int>(kMaxThreads));
  }
  if (hetrt_error_t* error = StartThreadPool(num_threads)) return error;
  SetHost(host);
  g_initialized = true;
  char message[64];
  std::snprintf(message, sizeof(message), "cpu plugin: %d threads", static_cast<int>(num_threads));
  Log(HETRT_LOG_DEBUG, message);
  return nullptr;
}

void Shutdown() {
  StopThreadPool();
  SetHost(nullptr);
  g_initialized = false;
}

hetrt_error_t* SetOption(const char* key, const char* value) {
  if (!g_initialized) {
    return MakeError(HETRT_STATUS_FAILED_PRECONDITION, "cpu plugin: set_option before initialize");
  }
  if (key == nullptr || value == nullptr) {
    return MakeError(HETRT_STATUS_INVALID_ARGUMENT, "cpu plugin: set_option with a null key or value");
  }
  if (std::strcmp(key, "num_threads") != 0) {
    // NOT_FOUND lets a caller that offers an option to every plugin tell
    // "not mine" from "bad value".
    return MakeError(HETRT_STATUS_NOT_FOUND, "cpu plugin: unknown option \"%s\" (known: num_threads)",
                     key);
  }
  int32_t num_threads = 0;
  if (!ParseThreadCount(value, &num_threads)) {
    return MakeError(HETRT_STATUS_INVALID_ARGUMENT,
                     "cpu plugin: num_threads=\"%s\" is not an integer in [1, %d]", value,
                     static_cast<int>(kMaxThreads));
  }
  if (num_threads == ThreadPoolSize()) return nullptr;
  return StartThreadPool(num_threads);
}

}  // namespace
}  // namespace hetrt::cpu

extern "C" HETRT_PLUGIN_EXPORT const hetrt_plugin_api_t* hetrt_plugin_get_api(void) {
  using namespace hetrt::cpu;
  static const hetrt_plugin_api_t api{
      .struct_size = sizeof(hetrt_plugin_api_t),
      .abi_major = HETRT_PLUGIN_ABI_MAJOR,
      .abi_minor = HETRT_PLUGIN_ABI_MINOR,
      .name = "cpu",
      .version = "0.1.0",
      .error_message = ErrorMessage,
      .error_code = ErrorCode,
      .error_destroy = ErrorDestroy,
      .initialize = Initialize,
      .shutdown = Shutdown,
      .set_option = SetOption,
      .device_types = kDeviceTypes,
      .num_device_types = std::size(kDeviceTypes),
      .type_keys = nullptr,
      .num_type_keys = 0,
      .global_functions = nullptr,
      .num_global_functions = 0,
      .device = CpuDeviceApi(),
      .module = nullptr,
      .parallel = ParallelApi(),
  };
  return &api;
}
