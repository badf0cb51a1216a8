// Plugin host: finds backend plugins (shared objects exporting
// HETRT_PLUGIN_ENTRY_SYMBOL), negotiates the ABI version, creates one instance
// of each per registry, and answers "who provides type_key X / device type Y"
// with errors that name what was searched.
#pragma once

#include <array>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "hetrt/plugin_abi.h"
#include "hetrt/status.h"
#include "hetrt/tensor.h"

namespace hetrt {

// A zeroed ABI args struct with its struct_size set.
template <typename Args>
Args AbiArgs() {
  Args args{};
  args.struct_size = sizeof(Args);
  return args;
}

struct DeviceMemoryStats {
  uint64_t bytes_in_use = 0;
  uint64_t peak_bytes_in_use = 0;
  uint64_t bytes_limit = 0;
  uint64_t num_allocations = 0;
};

// One instance of one plugin: the ABI table plus the instance handle every
// call takes. Destroying it destroys the instance.
// Shared: tensors from its allocators, modules it loaded and executors that
// use it keep it (and its instance) alive past its registry.
class Plugin : public std::enable_shared_from_this<Plugin> {
 public:
  Plugin(std::string path, void* dl_handle, const hetrt_plugin_api_t* api, hetrt_instance_t* instance);
  ~Plugin();
  Plugin(const Plugin&) = delete;
  Plugin& operator=(const Plugin&) = delete;

  const std::string& path() const { return path_; }
  std::string name() const { return api_->name ? api_->name : "?"; }
  std::string version() const { return api_->version ? api_->version : "?"; }
  const hetrt_plugin_api_t* api() const { return api_; }
  hetrt_instance_t* instance() const { return instance_; }
  const hetrt_device_api_t* device_api() const;
  const hetrt_module_api_t* module_api() const;
  const hetrt_parallel_api_t* parallel_api() const;
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
  bool LoadsTypeKey(std::string_view type_key) const;

  // Turns a plugin error into a Status naming the plugin, and frees the error.
  Status Consume(hetrt_error_t* error) const;
  // The message of a plugin error (the error stays alive).
  std::string ErrorMessage(const hetrt_error_t* error) const;

  struct DeviceCount {
    int32_t count = 0;
    std::string unavailable_reason;
  };
  Result<DeviceCount> CountDevices(int32_t device_type) const;
  std::string DeviceName(DLDevice device) const;
  // NOT_FOUND when the plugin does not know the attribute for the device.
  Result<int64_t> AttributeInt(DLDevice device, int32_t attribute) const;  // a hetrt_device_attribute_t
  Result<std::string> AttributeString(DLDevice device, int32_t attribute) const;
  // Whether the device's memory is host memory (HOST_UNIFIED_MEMORY == 1).
  bool SharesHostMemory(DLDevice device) const;
  Result<DeviceMemoryStats> MemoryStats(DLDevice device) const;
  // Whether copy() moves bytes between the two devices directly.
  bool CanCopy(DLDevice src, DLDevice dst) const;
  // The allocator of one device and memory kind (owned by the plugin object).
  Allocator& DeviceAllocator(DLDevice device, hetrt_memory_kind_t kind = HETRT_MEMORY_DEVICE);
  Status SetOption(const std::string& key, const std::string& value) const;

 private:
  std::string path_;
  void* dl_handle_;
  const hetrt_plugin_api_t* api_;
  hetrt_instance_t* instance_;
  std::mutex allocators_mutex_;  // executors are created from any thread
  std::map<std::tuple<int32_t, int32_t, int32_t>, std::unique_ptr<Allocator>> allocators_;
};

// A plugin that was found but not used, or a search folder that was missing.
struct PluginProblem {
  std::string path;
  std::string reason;
};

class PluginRegistry {
 public:
  struct Options {
    // Folders searched in order. Empty = the default search path:
    // $HETRT_PLUGIN_PATH (colon-separated), then the folder next to the core
    // library (lib/hetrt-plugins, in the build tree and in an install).
    std::vector<std::string> search_paths;
    // Serve the TVM backend ABI (workspace, parallel launch, __tvm_set_device)
    // from these plugins. Only the global registry does; the first plugin of a
    // device type wins, as in ForDeviceType.
    bool bind_backend = false;
  };

  // Loads every plugin it finds. Individual failures become problems(); only
  // an unusable search path (nothing given, nothing found) is not an error.
  static std::unique_ptr<PluginRegistry> Discover(const Options& options);
  static std::vector<std::string> DefaultSearchPaths();
  // The plugin files a search would try, in order (folders expanded, same
  // real path once), without loading any.
  static std::vector<std::string> CandidateFiles(const std::vector<std::string>& search_paths);
  // The process-wide registry (default search path), created on first use.
  static PluginRegistry& Global();

  ~PluginRegistry();

  const std::vector<std::shared_ptr<Plugin>>& plugins() const { return plugins_; }
  const std::vector<PluginProblem>& problems() const { return problems_; }
  const std::vector<std::string>& search_paths() const { return search_paths_; }

  // NOT_FOUND naming the folders searched and the plugins found.
  Result<Plugin*> ForTypeKey(std::string_view type_key) const;
  Result<Plugin*> ForDeviceType(int32_t device_type) const;
  // The plugin whose whole-model table serves `device` and accepts the model
  // file at `path`; NOT_FOUND saying why each such plugin declined.
  Result<Plugin*> ForWholeModel(const std::string& path, const std::string& device) const;
  // The first plugin whose whole-model table serves `device` (for project hooks).
  Result<Plugin*> ForWholeModelDevice(const std::string& device) const;
  // The plugin of a device, checked to exist (device_id < count).
  Result<Plugin*> ForDevice(DLDevice device) const;
  // An array lookup, for hot paths: NULL when no plugin serves the type.
  Plugin* PluginOfDeviceType(int32_t device_type) const {
    return device_type >= 0 && device_type < kMaxDeviceType ? by_device_type_[device_type] : nullptr;
  }
  // The first plugin with a parallel table (the host's task pool), or NULL.
  Plugin* ParallelPlugin() const { return parallel_plugin_; }
  // "searched: A, B; found: cpu 0.1.0 (devices: cpu), ..."
  std::string DescribeSearch() const;

  // The plugin whose copy() moves bytes from src to dst directly (the device
  // side's plugin; the CPU plugin between two host buffers), or NULL when the
  // copy must be staged through host memory.
  Plugin* CopyProvider(DLDevice src, DLDevice dst) const;
  // Copies nbytes between two tensors' memory (any devices), blocking, through
  // the plugins' copy functions; staged through host memory between two plugins.
  Status CopyBytes(const void* src, uint64_t src_offset, DLDevice src_device, void* dst,
                   uint64_t dst_offset, DLDevice dst_device, uint64_t nbytes) const;
  // Whole-tensor copy; shapes may differ, byte sizes must match.
  Status CopyTensor(const Tensor& src, Tensor& dst) const;
  // A host copy of any tensor.
  Result<Tensor> ToHost(const Tensor& src) const;

  static constexpr int kMaxDeviceType = 64;

 private:
  PluginRegistry() = default;
  void LoadPlugin(const std::string& path);

  std::vector<std::string> search_paths_;
  std::vector<std::shared_ptr<Plugin>> plugins_;
  std::vector<PluginProblem> problems_;
  std::array<Plugin*, kMaxDeviceType> by_device_type_{};
  Plugin* parallel_plugin_ = nullptr;
};

}  // namespace hetrt
