// One instance of one plugin: the ABI table, the instance handle every call
// takes, and the conversion of plugin errors into Status values. The rest of
// the core reaches a plugin's devices through Device (device.h) and its
// modules through DeviceModule (device_module.h); this class holds what is
// per plugin rather than per device.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "hetrt/base/status.h"
#include "hetrt/base/tensor.h"
#include "hetrt/plugin_abi.h"

namespace hetrt {

// How a call's args struct starts: zeroed, with the struct_size of this
// build's version of the struct (plugin_abi.h's rule). Device::Make adds the
// instance and the device.
template <typename Args>
Args AbiArgs() {
  Args args{};
  args.struct_size = sizeof(Args);
  return args;
}

// DLPack device types the core indexes by (kDLCPU .. kDLMAIA and room to grow):
// the registry's lookup table and the TVM backend routes use this one bound.
inline constexpr int kMaxDeviceType = 64;

struct DeviceMemoryStats {
  uint64_t bytes_in_use = 0;
  uint64_t peak_bytes_in_use = 0;
  uint64_t bytes_limit = 0;
  uint64_t num_allocations = 0;
  // Frees that returned an error (ABI 2.3); nullopt when the plugin does not count them.
  std::optional<uint64_t> failed_frees;
};

// Shared: tensors from its allocators, modules it loaded and executors that
// use it keep it (and its instance) alive past its registry.
// Thread contract: thread-safe (the ABI makes every entry callable from any thread).
class Plugin : public std::enable_shared_from_this<Plugin> {
 public:
  // dlopens `path`, checks the ABI version (a major mismatch is refused naming
  // both versions), the table's size and required calls, and creates an
  // instance with `host` as its host services. The error says what was wrong
  // with the file; it does not name the file (the caller does).
  static Result<std::shared_ptr<Plugin>> Open(const std::string& path, const hetrt_host_api_t* host);

  Plugin(std::string path, void* dl_handle, const hetrt_plugin_api_t* api, hetrt_instance_t* instance);
  ~Plugin();
  Plugin(const Plugin&) = delete;
  Plugin& operator=(const Plugin&) = delete;

  const std::string& path() const { return path_; }
  std::string name() const { return api_->name ? api_->name : "?"; }
  std::string version() const { return api_->version ? api_->version : "?"; }
  // The ABI version its table was built against: "2.4".
  std::string abi_version() const { return std::to_string(api_->abi_major) + "." + std::to_string(api_->abi_minor); }
  const hetrt_plugin_api_t* api() const { return api_; }
  hetrt_instance_t* instance() const { return instance_; }
  // The tables its plugin table holds (NULL where it has none); resolved once.
  const hetrt_device_api_t* device_api() const { return device_api_; }
  const hetrt_module_api_t* module_api() const { return module_api_; }
  const hetrt_parallel_api_t* parallel_api() const { return parallel_api_; }
  // ABI 2.1; NULL for a 2.0 plugin (its table ends before the field) and for
  // a table too small to hold every call of 2.1.
  const hetrt_whole_model_api_t* whole_model_api() const;
  // What its whole-model table declares (empty without one).
  std::vector<std::string> whole_model_devices() const;
  std::vector<std::string> whole_model_transports() const;
  std::vector<std::string> whole_model_boards() const;
  std::vector<std::string> whole_model_formats() const;
  std::vector<int32_t> device_types() const;
  std::vector<std::string> type_keys() const;
  bool ServesDeviceType(int32_t device_type) const;
  // Optional calls it implements (NULL entries are allowed where the ABI says so).
  bool CanSynchronize() const { return device_api_ && device_api_->stream_synchronize; }
  bool HasWorkspace() const { return device_api_ && device_api_->workspace_alloc && device_api_->workspace_free; }
  bool CanSaveModules() const { return module_api_ && module_api_->save; }
  // Whether it offers the host task pool (a parallel table).
  bool HasTaskPool() const { return parallel_api_ != nullptr; }
  // Whether it runs whole models on devices it drives itself (ABI 2.1).
  bool RunsWholeModels() const { return whole_model_api() != nullptr; }
  bool LoadsTypeKey(std::string_view type_key) const;

  // Turns a plugin error into a Status naming the plugin, and frees the error.
  Status Consume(hetrt_error_t* error) const;
  // The message of a plugin error (the error stays alive).
  std::string ErrorMessage(const hetrt_error_t* error) const;
  // Calls `fn` with `args` (NULL fn: UNIMPLEMENTED naming the call).
  template <class Args>
  Status Call(hetrt_error_t* (*fn)(Args*), Args* args, const char* call_name) const {
    if (fn == nullptr) [[unlikely]]
      return Unimplemented("plugin '" + name() + "' has no " + call_name);
    hetrt_error_t* error = fn(args);
    if (error == nullptr) [[likely]]
      return OkStatus();
    return Consume(error);
  }

  struct DeviceCount {
    int32_t count = 0;
    std::string unavailable_reason;
  };
  Result<DeviceCount> CountDevices(int32_t device_type) const;
  // Device queries (Device has the same, bound to one device).
  std::string DeviceName(DLDevice device) const;
  // NOT_FOUND when the plugin does not know the attribute for the device.
  Result<int64_t> AttributeInt(DLDevice device, int32_t attribute) const;  // a hetrt_device_attribute_t
  Result<std::string> AttributeString(DLDevice device, int32_t attribute) const;
  // Whether the device's memory is host memory (HOST_UNIFIED_MEMORY == 1).
  bool SharesHostMemory(DLDevice device) const;
  Result<DeviceMemoryStats> MemoryStats(DLDevice device) const;
  // Whether copy() moves bytes between the two devices directly.
  bool CanCopy(DLDevice src, DLDevice dst) const;
  Status SetOption(const std::string& key, const std::string& value) const;
  // The plugin's global packed functions (name, function), e.g. "__tvm_set_device" helpers.
  Result<std::vector<std::pair<std::string, hetrt_packed_func_t>>> GlobalFunctions() const;
  // The host task pool's thread count (parallel table), or an error.
  Result<int32_t> NumThreads() const;

  // The allocator of one device and memory kind (owned by the plugin object).
  Allocator& DeviceAllocator(DLDevice device, hetrt_memory_kind_t kind = HETRT_MEMORY_DEVICE);

 private:
  std::string path_;
  void* dl_handle_;
  const hetrt_plugin_api_t* api_;
  hetrt_instance_t* instance_;
  const hetrt_device_api_t* device_api_;
  const hetrt_module_api_t* module_api_;
  const hetrt_parallel_api_t* parallel_api_;
  std::mutex allocators_mutex_;  // executors are created from any thread
  std::map<std::tuple<int32_t, int32_t, int32_t>, std::unique_ptr<Allocator>> allocators_;
};

}  // namespace hetrt
