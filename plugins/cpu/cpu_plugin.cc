// The CPU plugin's entry symbol and instance lifecycle: create, options, destroy.
#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <memory>

#include "cpu_device.h"
#include "cpu_info.h"
#include "cpu_instance.h"
#include "hetrt/plugin_abi.h"
#include "hetrt/sdk/plugin_table.h"
#include "parallel_api.h"
#include "plugin_error.h"

namespace hetrt::cpu {

void Log(const hetrt_instance_t* self, hetrt_log_level_t level, const char* message) {
  const hetrt_host_api_t* host = self->host;
  if (HETRT_STRUCT_HAS(host, hetrt_host_api_t, log) && host->log != nullptr) {
    host->log(level, "cpu", message);
  }
}

namespace {

constexpr int32_t kDeviceTypes[] = {kDLCPU};

std::atomic<uint64_t> g_next_instance_id{1};

// The whole of `text` must be a decimal integer in [1, kMaxThreads].
bool ParseThreadCount(const char* text, int32_t* count) {
  const char* end = text + std::strlen(text);
  int32_t value = 0;
  const auto [parsed_end, error] = std::from_chars(text, end, value);
  if (error != std::errc() || parsed_end != end || value < 1 || value > kMaxThreads) return false;
  *count = value;
  return true;
}

// The whole of `text` must be a decimal count of microseconds in [0, 1 s].
bool ParseMicroseconds(const char* text, std::chrono::microseconds* spin) {
  const char* end = text + std::strlen(text);
  int64_t value = -1;
  const auto [parsed_end, error] = std::from_chars(text, end, value);
  if (error != std::errc() || parsed_end != end || value < 0 || value > 1000000) return false;
  *spin = std::chrono::microseconds(value);
  return true;
}

hetrt_error_t* ApplyOption(hetrt_instance_t* self, const char* key, const char* value) {
  if (key == nullptr || value == nullptr) {
    return MakeErrorf(HETRT_STATUS_INVALID_ARGUMENT, "cpu plugin: set_option with a null key or value");
  }
  if (std::strcmp(key, "spin_us") == 0) {
    std::chrono::microseconds spin{};
    if (!ParseMicroseconds(value, &spin))
      return MakeErrorf(HETRT_STATUS_INVALID_ARGUMENT,
                        "cpu plugin: spin_us=\"%s\" is not a count of microseconds in [0, 1000000]", value);
    SetPoolSpin(self, spin);
    return nullptr;
  }
  if (std::strcmp(key, "serial_below_us") == 0) {
    std::chrono::microseconds below{};
    if (std::strcmp(value, "-1") == 0) {
      // Splitting pays when half the work outlasts a worker's wake-up.
      below = std::chrono::microseconds(2 * self->wake_up.Us(hetrt::sdk::PollBudget::kAuto));
    } else if (!ParseMicroseconds(value, &below)) {
      return MakeErrorf(HETRT_STATUS_INVALID_ARGUMENT,
                        "cpu plugin: serial_below_us=\"%s\" is not -1 (twice this machine's wake-up) or a count "
                        "of microseconds in [0, 1000000]",
                        value);
    }
    SetPoolSerialBelow(self, below);
    return nullptr;
  }
  if (std::strcmp(key, "num_threads") != 0) {
    // NOT_FOUND lets a caller that offers an option to every plugin tell
    // "not mine" from "bad value".
    return MakeErrorf(HETRT_STATUS_NOT_FOUND,
                      "cpu plugin: unknown option \"%s\" (known: num_threads, spin_us, serial_below_us)", key);
  }
  int32_t num_threads = 0;
  if (!ParseThreadCount(value, &num_threads)) {
    return MakeErrorf(HETRT_STATUS_INVALID_ARGUMENT, "cpu plugin: num_threads=\"%s\" is not an integer in [1, %d]",
                      value, static_cast<int>(kMaxThreads));
  }
  return StartThreadPool(self, num_threads);
}

void DestroyInstance(hetrt_instance_t* self) {
  self->tag.store(0);  // refuse new calls before the pool goes
  StopThreadPool(self);
  delete self;
}

hetrt_error_t* InstanceCreate(hetrt_instance_create_args_t* args) {
  if (args == nullptr || args->struct_size < static_cast<size_t>(hetrt_instance_create_args_t_MIN_SIZE)) {
    return MakeErrorf(HETRT_STATUS_INVALID_ARGUMENT,
                      "cpu plugin: hetrt_instance_create_args_t is null or smaller than in the ABI minor that "
                      "introduced it");
  }
  args->instance = nullptr;
  const hetrt_host_api_t* host = args->host;
  if (!HETRT_STRUCT_HAS(host, hetrt_host_api_t, abi_minor)) {
    return MakeErrorf(HETRT_STATUS_INVALID_ARGUMENT, "cpu plugin: null or truncated host api");
  }
  if (host->abi_major != HETRT_PLUGIN_ABI_MAJOR) {
    return MakeErrorf(HETRT_STATUS_FAILED_PRECONDITION, "cpu plugin: host ABI major %d, plugin ABI major %d",
                      static_cast<int>(host->abi_major), HETRT_PLUGIN_ABI_MAJOR);
  }
  if (args->num_options > 0 && args->options == nullptr) {
    return MakeErrorf(HETRT_STATUS_INVALID_ARGUMENT, "cpu plugin: %zu options but a null array", args->num_options);
  }
  int32_t num_threads = std::min(AvailableCoreCount(), kMaxThreads);
  const char* from_environment = std::getenv("HETRT_NUM_THREADS");
  if (from_environment != nullptr && !ParseThreadCount(from_environment, &num_threads)) {
    return MakeErrorf(HETRT_STATUS_INVALID_ARGUMENT,
                      "cpu plugin: HETRT_NUM_THREADS=\"%s\" is not an integer in [1, %d]", from_environment,
                      static_cast<int>(kMaxThreads));
  }

  // Owned by the unique_ptr until it is handed out, so every failure path
  // (including a throw caught by Entry) stops the pool and frees it.
  auto deleter = [](hetrt_instance_t* self) { DestroyInstance(self); };
  std::unique_ptr<hetrt_instance_t, decltype(deleter)> self(new hetrt_instance_t, deleter);
  self->id = g_next_instance_id.fetch_add(1);
  self->host = host;
  self->cpu_model = CpuModelName();
  if (const char* spin_text = std::getenv("HETRT_CPU_SPIN_US")) {
    std::chrono::microseconds spin{};
    if (!ParseMicroseconds(spin_text, &spin))
      return MakeErrorf(HETRT_STATUS_INVALID_ARGUMENT,
                        "cpu plugin: HETRT_CPU_SPIN_US=\"%s\" is not a count of microseconds in [0, 1000000]",
                        spin_text);
    self->spin_us.store(spin.count());
  }
  if (hetrt_error_t* error = StartThreadPool(self.get(), num_threads)) return error;
  for (size_t i = 0; i < args->num_options; ++i) {
    const hetrt_option_t& option = args->options[i];
    if (hetrt_error_t* error = ApplyOption(self.get(), option.key, option.value)) return error;
  }
  char message[64];
  std::snprintf(message, sizeof(message), "cpu plugin: %d threads", static_cast<int>(self->num_threads.load()));
  Log(self.get(), HETRT_LOG_DEBUG, message);
  args->instance = self.release();
  return nullptr;
}

hetrt_error_t* InstanceDestroy(hetrt_instance_destroy_args_t* args) {
  DestroyInstance(args->self);
  return nullptr;
}

hetrt_error_t* SetOption(hetrt_set_option_args_t* args) { return ApplyOption(args->self, args->key, args->value); }

}  // namespace
}  // namespace hetrt::cpu

extern "C" HETRT_PLUGIN_EXPORT const hetrt_plugin_api_t* hetrt_plugin_get_api(void) {
  using namespace hetrt::cpu;
  // The SDK's table fills struct_size, the ABI version and the error entries,
  // and leaves every table the plugin does not name (module, whole_model) NULL.
  static const hetrt_plugin_api_t api = hetrt::sdk::PluginTable({
      .name = "cpu",
      .version = "0.2.0",
      .instance_create = Entry<InstanceCreate>::Call,
      .instance_destroy = Entry<InstanceDestroy>::Call,
      .set_option = Entry<SetOption>::Call,
      .device_types = kDeviceTypes,
      .device = CpuDeviceApi(),
      .parallel = ParallelApi(),
  });
  return &api;
}
