#include "hetrt/device/plugin.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstring>

#include "hetrt/base/dtype.h"

namespace hetrt {
namespace {

StatusCode FromPluginCode(int32_t code) {
  if (code <= HETRT_STATUS_OK || code > HETRT_STATUS_INTERNAL) return StatusCode::kInternal;
  return static_cast<StatusCode>(code);
}

std::string VersionText(uint32_t major, uint32_t minor) { return std::to_string(major) + "." + std::to_string(minor); }

}  // namespace

Result<std::shared_ptr<Plugin>> Plugin::Open(const std::string& path, const hetrt_host_api_t* host) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    return FailedPrecondition(std::string("dlopen failed: ") + (why ? why : "?"));
  }
  auto entry = reinterpret_cast<hetrt_plugin_get_api_fn>(dlsym(handle, HETRT_PLUGIN_ENTRY_SYMBOL));
  if (entry == nullptr) return NotFound(std::string("no entry symbol '") + HETRT_PLUGIN_ENTRY_SYMBOL + "'");
  // Every major starts with the same prefix, so a plugin built for another
  // major is read only that far and refused by name.
  const auto* prefix = reinterpret_cast<const hetrt_plugin_api_prefix_t*>(entry());
  if (prefix == nullptr || prefix->struct_size < offsetof(hetrt_plugin_api_prefix_t, name))
    return InvalidArgument("entry symbol returned no usable table");
  if (prefix->abi_major != HETRT_PLUGIN_ABI_MAJOR)
    return FailedPrecondition(
        "plugin ABI version " + VersionText(prefix->abi_major, prefix->abi_minor) +
        " is incompatible with hetrt's ABI version " + VersionText(HETRT_PLUGIN_ABI_MAJOR, HETRT_PLUGIN_ABI_MINOR) +
        " (major versions differ; rebuild the plugin against ABI " + std::to_string(HETRT_PLUGIN_ABI_MAJOR) + ")");
  const auto* api = reinterpret_cast<const hetrt_plugin_api_t*>(prefix);
  // Minor versions only append fields; every field through `parallel` is 2.0.
  if (!HETRT_STRUCT_HAS(api, hetrt_plugin_api_t, parallel))
    return InvalidArgument("plugin table is smaller (" + std::to_string(api->struct_size) +
                           " bytes) than ABI 2.0 requires");
  const std::string name = api->name ? api->name : "";
  if (name.empty()) return InvalidArgument("plugin has no name");
  if (api->error_message == nullptr || api->error_destroy == nullptr || api->instance_create == nullptr)
    return InvalidArgument("plugin '" + name + "' lacks error_message, error_destroy or instance_create");
  auto create = AbiArgs<hetrt_instance_create_args_t>();
  create.host = host;
  if (hetrt_error_t* error = api->instance_create(&create)) {
    auto message = AbiArgs<hetrt_error_message_args_t>();
    message.error = error;
    const bool described = api->error_message(&message) == nullptr && message.message != nullptr;
    Status failed =
        FailedPrecondition("instance_create failed: " + std::string(described ? message.message : "(no message)"));
    auto destroy = AbiArgs<hetrt_error_destroy_args_t>();
    destroy.error = error;
    (void)api->error_destroy(&destroy);
    return failed;
  }
  return std::make_shared<Plugin>(path, handle, api, create.instance);
}

Plugin::Plugin(std::string path, void* dl_handle, const hetrt_plugin_api_t* api, hetrt_instance_t* instance)
    : path_(std::move(path)),
      dl_handle_(dl_handle),
      api_(api),
      instance_(instance),
      device_api_(HETRT_STRUCT_HAS(api, hetrt_plugin_api_t, device) ? api->device : nullptr),
      module_api_(HETRT_STRUCT_HAS(api, hetrt_plugin_api_t, module) ? api->module : nullptr),
      parallel_api_(HETRT_STRUCT_HAS(api, hetrt_plugin_api_t, parallel) ? api->parallel : nullptr) {}

Plugin::~Plugin() {
  allocators_.clear();
  if (api_->instance_destroy) {
    auto args = AbiArgs<hetrt_instance_destroy_args_t>();
    args.self = instance_;
    (void)Consume(api_->instance_destroy(&args));
  }
  // The shared object stays mapped: compiled code may still hold its function pointers.
  (void)dl_handle_;
}

const hetrt_whole_model_api_t* Plugin::whole_model_api() const {
  if (!HETRT_STRUCT_HAS(api_, hetrt_plugin_api_t, whole_model)) return nullptr;
  const hetrt_whole_model_api_t* table = api_->whole_model;
  return HETRT_STRUCT_HAS(table, hetrt_whole_model_api_t, report) ? table : nullptr;
}

namespace {
std::vector<std::string> Names(const char* const* names, size_t count) {
  std::vector<std::string> out;
  for (size_t i = 0; names && i < count; ++i)
    if (names[i]) out.emplace_back(names[i]);
  return out;
}
}  // namespace

namespace {
// One of the whole-model table's name lists (empty without a table).
std::vector<std::string> Declared(const hetrt_whole_model_api_t* t, const char* const* hetrt_whole_model_api_t::*names,
                                  size_t hetrt_whole_model_api_t::*count) {
  return t ? Names(t->*names, t->*count) : std::vector<std::string>{};
}
}  // namespace

using WholeModelApi = hetrt_whole_model_api_t;
std::vector<std::string> Plugin::whole_model_devices() const {
  return Declared(whole_model_api(), &WholeModelApi::device_names, &WholeModelApi::num_device_names);
}
std::vector<std::string> Plugin::whole_model_transports() const {
  return Declared(whole_model_api(), &WholeModelApi::transports, &WholeModelApi::num_transports);
}
std::vector<std::string> Plugin::whole_model_boards() const {
  return Declared(whole_model_api(), &WholeModelApi::boards, &WholeModelApi::num_boards);
}
std::vector<std::string> Plugin::whole_model_formats() const {
  return Declared(whole_model_api(), &WholeModelApi::formats, &WholeModelApi::num_formats);
}

std::vector<int32_t> Plugin::device_types() const {
  if (api_->device_types == nullptr) return {};
  return {api_->device_types, api_->device_types + api_->num_device_types};
}

std::vector<std::string> Plugin::type_keys() const {
  std::vector<std::string> keys;
  for (size_t i = 0; api_->type_keys && i < api_->num_type_keys; ++i) keys.emplace_back(api_->type_keys[i]);
  return keys;
}

bool Plugin::ServesDeviceType(int32_t device_type) const {
  for (int32_t t : device_types())
    if (t == device_type) return true;
  return false;
}

bool Plugin::LoadsTypeKey(std::string_view type_key) const {
  for (size_t i = 0; api_->type_keys && i < api_->num_type_keys; ++i)
    if (type_key == api_->type_keys[i]) return true;
  return false;
}

std::string Plugin::ErrorMessage(const hetrt_error_t* error) const {
  auto args = AbiArgs<hetrt_error_message_args_t>();
  args.error = error;
  if (api_->error_message == nullptr || api_->error_message(&args) != nullptr || args.message == nullptr)
    return "(no message)";
  return args.message;
}

Status Plugin::Consume(hetrt_error_t* error) const {
  if (error == nullptr) return OkStatus();
  auto args = AbiArgs<hetrt_error_message_args_t>();
  args.error = error;
  const bool described = api_->error_message != nullptr && api_->error_message(&args) == nullptr;
  const std::string message = described && args.message && *args.message ? args.message : "(no message)";
  Status status(described ? FromPluginCode(args.code) : StatusCode::kInternal, "plugin '" + name() + "': " + message);
  if (api_->error_destroy) {
    auto destroy = AbiArgs<hetrt_error_destroy_args_t>();
    destroy.error = error;
    (void)api_->error_destroy(&destroy);
  }
  return status;
}

Result<Plugin::DeviceCount> Plugin::CountDevices(int32_t device_type) const {
  auto args = AbiArgs<hetrt_device_count_args_t>();
  args.self = instance_;
  args.device_type = device_type;
  HETRT_RETURN_IF_ERROR(Call(device_api_ ? device_api_->device_count : nullptr, &args, "device table"));
  return DeviceCount{args.count, args.unavailable_reason ? args.unavailable_reason : ""};
}

namespace {
Result<hetrt_device_attribute_args_t> QueryAttribute(const Plugin& plugin, DLDevice device, int32_t attribute) {
  const hetrt_device_api_t* dev = plugin.device_api();
  if (dev == nullptr || !HETRT_STRUCT_HAS(dev, hetrt_device_api_t, device_attribute) ||
      dev->device_attribute == nullptr)
    return NotFound("plugin '" + plugin.name() + "' reports no device attributes");
  auto args = AbiArgs<hetrt_device_attribute_args_t>();
  args.self = plugin.instance();
  args.device = device;
  args.attribute = attribute;
  HETRT_RETURN_IF_ERROR(plugin.Consume(dev->device_attribute(&args)));
  return args;
}
}  // namespace

Result<int64_t> Plugin::AttributeInt(DLDevice device, int32_t attribute) const {
  HETRT_ASSIGN_OR_RETURN(auto args, QueryAttribute(*this, device, attribute));
  return args.value;
}

Result<std::string> Plugin::AttributeString(DLDevice device, int32_t attribute) const {
  HETRT_ASSIGN_OR_RETURN(auto args, QueryAttribute(*this, device, attribute));
  return std::string(args.string ? args.string : "");
}

std::string Plugin::DeviceName(DLDevice device) const {
  auto name = AttributeString(device, HETRT_DEVICE_ATTR_NAME);
  return name.ok() && !name->empty() ? *name : DeviceToString(device);
}

bool Plugin::SharesHostMemory(DLDevice device) const {
  auto unified = AttributeInt(device, HETRT_DEVICE_ATTR_HOST_UNIFIED_MEMORY);
  return unified.ok() && *unified == 1;
}

Result<DeviceMemoryStats> Plugin::MemoryStats(DLDevice device) const {
  auto args = AbiArgs<hetrt_memory_stats_args_t>();
  args.self = instance_;
  args.device = device;
  args.failed_frees = HETRT_STAT_NOT_REPORTED;  // left so by a plugin that does not count
  HETRT_RETURN_IF_ERROR(Call(device_api_ ? device_api_->memory_stats : nullptr, &args, "memory statistics"));
  const bool counted = args.failed_frees != HETRT_STAT_NOT_REPORTED;
  return DeviceMemoryStats{args.bytes_in_use, args.peak_bytes_in_use, args.bytes_limit, args.num_allocations,
                           counted ? std::optional<uint64_t>(args.failed_frees) : std::nullopt};
}

bool Plugin::CanCopy(DLDevice src, DLDevice dst) const {
  const hetrt_device_api_t* dev = device_api();
  if (dev == nullptr || dev->copy == nullptr) return false;
  if (dev->can_copy == nullptr) return ServesDeviceType(src.device_type) || ServesDeviceType(dst.device_type);
  auto args = AbiArgs<hetrt_can_copy_args_t>();
  args.self = instance_;
  args.src_device = src;
  args.dst_device = dst;
  return Consume(dev->can_copy(&args)).ok() && args.can_copy == 1;
}

Status Plugin::SetOption(const std::string& key, const std::string& value) const {
  if (api_->set_option == nullptr)
    return Unimplemented("plugin '" + name() + "' takes no options (asked for '" + key + "')");
  auto args = AbiArgs<hetrt_set_option_args_t>();
  args.self = instance_;
  args.key = key.c_str();
  args.value = value.c_str();
  return Consume(api_->set_option(&args));
}

Result<std::vector<std::pair<std::string, hetrt_packed_func_t>>> Plugin::GlobalFunctions() const {
  std::vector<std::pair<std::string, hetrt_packed_func_t>> functions;
  if (api_->global_functions == nullptr) return functions;
  auto args = AbiArgs<hetrt_global_functions_args_t>();
  args.self = instance_;
  HETRT_RETURN_IF_ERROR(Consume(api_->global_functions(&args)));
  for (size_t i = 0; args.functions && i < args.num_functions; ++i)
    if (args.functions[i].name != nullptr) functions.emplace_back(args.functions[i].name, args.functions[i].func);
  return functions;
}

Result<int32_t> Plugin::NumThreads() const {
  const hetrt_parallel_api_t* parallel = parallel_api();
  if (parallel == nullptr || parallel->num_threads == nullptr)
    return Unimplemented("plugin '" + name() + "' has no parallel thread count");
  auto args = AbiArgs<hetrt_parallel_num_threads_args_t>();
  args.self = instance_;
  HETRT_RETURN_IF_ERROR(Consume(parallel->num_threads(&args)));
  return args.num_threads;
}

}  // namespace hetrt
