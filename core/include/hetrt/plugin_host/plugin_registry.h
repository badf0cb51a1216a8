// Plugin host: finds backend plugins (shared objects exporting
// HETRT_PLUGIN_ENTRY_SYMBOL), opens one instance of each per registry
// (Plugin::Open negotiates the ABI), and answers "who provides type_key X /
// device type Y" with errors that name what was searched.
#pragma once

#include <array>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "hetrt/base/status.h"
#include "hetrt/base/tensor.h"
#include "hetrt/device/device.h"

namespace hetrt {

class BackendRoutes;

// A plugin that was found but not used, or a search folder that was missing.
struct PluginProblem {
  std::string path;
  std::string reason;
};

// Thread contract: thread-safe once Discover returns: nothing in it changes
// afterwards, so lookups may come from any thread.
class PluginRegistry {
 public:
  struct Options {
    // Folders searched in order. Empty = the default search path:
    // $HETRT_PLUGIN_PATH (colon-separated), then the folder next to the core
    // library (lib/hetrt-plugins, in the build tree and in an install).
    std::vector<std::string> search_paths;
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
  // The same as a Device to call.
  Result<Device> DeviceFor(DLDevice device) const {
    HETRT_ASSIGN_OR_RETURN(Plugin * plugin, ForDevice(device));
    return Device(plugin, device);
  }
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
  Status CopyBytes(const void* src, uint64_t src_offset, DLDevice src_device, void* dst, uint64_t dst_offset,
                   DLDevice dst_device, uint64_t nbytes) const;
  // Whole-tensor copy; shapes may differ, byte sizes must match.
  Status CopyTensor(const Tensor& src, Tensor& dst) const;
  // A host copy of any tensor.
  Result<Tensor> ToHost(const Tensor& src) const;

  // Where compiled code's backend calls (workspace, __tvm_set_device,
  // parallel launch) go while an executor over this registry runs.
  const BackendRoutes* backend_routes() const { return routes_.get(); }

 private:
  PluginRegistry() = default;
  void LoadPlugin(const std::string& path);

  std::vector<std::string> search_paths_;
  std::vector<std::shared_ptr<Plugin>> plugins_;
  std::vector<PluginProblem> problems_;
  std::array<Plugin*, kMaxDeviceType> by_device_type_{};
  Plugin* parallel_plugin_ = nullptr;
  std::unique_ptr<BackendRoutes> routes_;
};

}  // namespace hetrt
