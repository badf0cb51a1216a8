// Instance bookkeeping for C++ plugins: a process-unique serial per instance
// (what thread-local tables key on, so that a new instance at a reused address
// never inherits a stale entry), the set of live serials, and instance_create /
// instance_destroy for the common case.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_set>

#include "hetrt/plugin_abi.h"
#include "hetrt/sdk/error.h"

namespace hetrt::sdk {

// A member of the plugin's instance struct: registered as live from
// construction to destruction, and usable as the uint64_t serial.
class InstanceSerial {
 public:
  InstanceSerial() : value_(next().fetch_add(1)) {
    std::lock_guard<std::mutex> lock(mutex());
    live().insert(value_);
  }
  ~InstanceSerial() {
    std::lock_guard<std::mutex> lock(mutex());
    live().erase(value_);
  }
  InstanceSerial(const InstanceSerial&) = delete;
  InstanceSerial& operator=(const InstanceSerial&) = delete;

  operator uint64_t() const noexcept { return value_; }

  // Calls drop(serial) for each of `serials` whose instance is destroyed; one
  // lock for the whole pass (only taken when a thread's table is full).
  template <class Range, class Drop>
  static void ReclaimDead(Range& serials, Drop drop) {
    std::lock_guard<std::mutex> lock(mutex());
    for (auto& entry : serials)
      if (!live().count(entry.serial)) drop(entry);
  }

 private:
  static std::atomic<uint64_t>& next() {
    static std::atomic<uint64_t> counter{1};  // 0 marks a free thread-table slot
    return counter;
  }
  static std::mutex& mutex() {
    static std::mutex m;
    return m;
  }
  static std::unordered_set<uint64_t>& live() {
    static std::unordered_set<uint64_t> serials;
    return serials;
  }
  uint64_t value_;
};

// Applies instance_create's options one by one through the plugin's set_option
// (an unknown key is the plugin's NOT_FOUND error, as the ABI asks).
template <hetrt_error_t* (*SetOption)(hetrt_set_option_args_t*)>
hetrt_error_t* ApplyOptions(hetrt_instance_t* instance, const hetrt_instance_create_args_t* args) {
  for (size_t i = 0; i < args->num_options && args->options != nullptr; ++i) {
    hetrt_set_option_args_t set{sizeof set, nullptr, instance, args->options[i].key, args->options[i].value};
    if (hetrt_error_t* e = SetOption(&set)) return e;
  }
  return nullptr;
}

// instance_create for an instance struct with a `host` member that does its
// real work lazily (device discovery on first use keeps creation cheap).
template <class Instance, hetrt_error_t* (*SetOption)(hetrt_set_option_args_t*)>
hetrt_error_t* CreateInstance(hetrt_instance_create_args_t* args) {
  auto instance = std::make_unique<Instance>();
  instance->host = args->host;
  if (hetrt_error_t* e = ApplyOptions<SetOption>(instance.get(), args)) return e;
  args->instance = instance.release();
  return nullptr;
}

template <class Instance>
hetrt_error_t* DestroyInstance(hetrt_instance_destroy_args_t* args) {
  delete static_cast<Instance*>(args->self);
  return nullptr;
}

// The host's callbacks, for a plugin's packed functions and diagnostics.
inline void ReportError(const hetrt_host_api_t* host, const char* message) noexcept {
  if (HETRT_STRUCT_HAS(host, hetrt_host_api_t, set_last_error) && host->set_last_error) host->set_last_error(message);
}

// A packed function's failure: the error's message becomes the caller's last
// error (TVMGetLastError), the error is released, and -1 is what to return.
inline int32_t FailCall(const hetrt_host_api_t* host, hetrt_error_t* error) noexcept {
  ReportError(host, error->message.c_str());
  DiscardError(error);
  return -1;
}

inline void Log(const hetrt_host_api_t* host, hetrt_log_level_t level, const char* plugin_name,
                const char* message) noexcept {
  if (HETRT_STRUCT_HAS(host, hetrt_host_api_t, log) && host->log) host->log(level, plugin_name, message);
}

}  // namespace hetrt::sdk
