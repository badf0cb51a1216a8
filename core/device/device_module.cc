#include "hetrt/device/device_module.h"

#include <utility>

namespace hetrt {

Result<DeviceModule> DeviceModule::Load(Plugin& plugin, const std::string& type_key, std::span<const uint8_t> data,
                                        uint64_t* consumed) {
  const hetrt_module_api_t* api = plugin.module_api();
  if (api == nullptr || api->load == nullptr)
    return Unimplemented("plugin '" + plugin.name() + "' declares type_key '" + type_key +
                         "' but has no module loader");
  auto args = AbiArgs<hetrt_module_load_args_t>();
  args.self = plugin.instance();
  args.type_key = type_key.c_str();
  args.data = data.data();
  args.size = data.size();
  HETRT_RETURN_IF_ERROR(plugin.Consume(api->load(&args)));
  if (args.module == nullptr) return Internal("plugin '" + plugin.name() + "' loaded no module and gave no error");
  DeviceModule module(plugin.shared_from_this(), args.module);
  if (args.consumed > data.size()) return Internal("plugin '" + plugin.name() + "' claims to have read past the blob");
  if (consumed != nullptr) *consumed = args.consumed;
  return module;
}

DeviceModule::DeviceModule(DeviceModule&& other) noexcept
    : plugin_(std::move(other.plugin_)), handle_(std::exchange(other.handle_, nullptr)) {}

DeviceModule& DeviceModule::operator=(DeviceModule&& other) noexcept {
  if (this != &other) {
    Reset();
    plugin_ = std::move(other.plugin_);
    handle_ = std::exchange(other.handle_, nullptr);
  }
  return *this;
}

DeviceModule::~DeviceModule() { Reset(); }

void DeviceModule::Reset() {
  if (handle_ == nullptr) return;
  if (const hetrt_module_api_t* api = plugin_->module_api(); api && api->destroy) {
    auto args = AbiArgs<hetrt_module_destroy_args_t>();
    args.module = handle_;
    (void)plugin_->Consume(api->destroy(&args));  // nobody to tell; the plugin logged it
  }
  handle_ = nullptr;
}

Result<std::optional<hetrt_packed_func_t>> DeviceModule::Function(const std::string& name) const {
  auto args = AbiArgs<hetrt_module_get_function_args_t>();
  args.module = handle_;
  args.name = name.c_str();
  HETRT_RETURN_IF_ERROR(plugin_->Call(plugin_->module_api()->get_function, &args, "module get_function"));
  if (!args.found) return std::optional<hetrt_packed_func_t>();
  return std::optional<hetrt_packed_func_t>(args.function);
}

Result<std::vector<std::string>> DeviceModule::FunctionNames() const {
  const hetrt_module_api_t* api = plugin_->module_api();
  auto args = AbiArgs<hetrt_module_list_functions_args_t>();
  args.module = handle_;
  HETRT_RETURN_IF_ERROR(plugin_->Call(api->list_functions, &args, "module list_functions"));
  std::vector<const char*> names(args.count);
  args.names = names.data();
  args.capacity = names.size();
  HETRT_RETURN_IF_ERROR(plugin_->Call(api->list_functions, &args, "module list_functions"));
  const size_t n = std::min<size_t>(args.count, names.size());
  std::vector<std::string> result;
  for (size_t i = 0; i < n; ++i) result.emplace_back(names[i] ? names[i] : "");
  return result;
}

Result<std::vector<uint8_t>> DeviceModule::Save() const {
  auto args = AbiArgs<hetrt_module_save_args_t>();
  args.module = handle_;
  HETRT_RETURN_IF_ERROR(plugin_->Call(plugin_->module_api()->save, &args, "module save"));
  return std::vector<uint8_t>(args.data, args.data + args.size);
}

}  // namespace hetrt
