// A module living in a plugin instance (compiled kernels of one type_key),
// called through the plugin's module table. Owns the plugin's module handle
// and keeps the plugin alive. The module tree wraps it (PluginModule).
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "hetrt/device/plugin.h"

namespace hetrt {

// Thread contract: thread-safe, as the plugin ABI makes module calls (lookups, saves) from any thread.
class DeviceModule {
 public:
  // Loads a blob of `type_key` from the start of `data`; `consumed` receives
  // how many bytes the plugin read (never more than data.size()).
  static Result<DeviceModule> Load(Plugin& plugin, const std::string& type_key, std::span<const uint8_t> data,
                                   uint64_t* consumed = nullptr);
  DeviceModule(DeviceModule&& other) noexcept;
  DeviceModule& operator=(DeviceModule&& other) noexcept;
  DeviceModule(const DeviceModule&) = delete;
  DeviceModule& operator=(const DeviceModule&) = delete;
  ~DeviceModule();

  Plugin* plugin() const { return plugin_.get(); }
  hetrt_plugin_module_t* handle() const { return handle_; }
  // The function of that name, or nullopt when the module has none. Valid
  // while this module lives.
  Result<std::optional<hetrt_packed_func_t>> Function(const std::string& name) const;
  // UNIMPLEMENTED when the plugin cannot list its functions.
  Result<std::vector<std::string>> FunctionNames() const;
  // The bytes its loader reads back (a blob's payload for this type_key).
  Result<std::vector<uint8_t>> Save() const;

 private:
  DeviceModule(std::shared_ptr<Plugin> plugin, hetrt_plugin_module_t* handle)
      : plugin_(std::move(plugin)), handle_(handle) {}
  void Reset();
  std::shared_ptr<Plugin> plugin_;
  hetrt_plugin_module_t* handle_ = nullptr;
};

}  // namespace hetrt
