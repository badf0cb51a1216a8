#include "hetrt/plugin_registry.h"

#include <dirent.h>
#include <dlfcn.h>
#include <sys/stat.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>

#include "hetrt/dtype.h"
#include "hetrt/install_layout.h"
#include "hetrt/module.h"
#include "tvm_abi/tvm_backend_abi.h"

namespace hetrt {
namespace {

constexpr const char* kPluginPrefix = "libhetrt_plugin_";
constexpr const char* kPluginSuffix = ".so";

bool IsDirectory(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}
bool IsFile(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::vector<std::string> ListPluginFiles(const std::string& folder) {
  std::vector<std::string> files;
  DIR* dir = opendir(folder.c_str());
  if (dir == nullptr) return files;
  while (dirent* entry = readdir(dir)) {
    std::string name = entry->d_name;
    if (name.rfind(kPluginPrefix, 0) == 0 && name.size() > std::strlen(kPluginSuffix) &&
        name.compare(name.size() - std::strlen(kPluginSuffix), std::string::npos, kPluginSuffix) == 0)
      files.push_back(folder + "/" + name);
  }
  closedir(dir);
  std::sort(files.begin(), files.end());  // deterministic order
  return files;
}

// The same folder or file named twice (HETRT_PLUGIN_PATH naming the default
// folder, a symlink) is searched once, under its first name.
std::vector<std::string> UniqueSearchPaths(const std::vector<std::string>& paths) {
  std::vector<std::string> unique, real_paths;
  for (const std::string& path : paths) {
    char resolved[PATH_MAX];
    const std::string real = realpath(path.c_str(), resolved) ? resolved : path;
    if (std::find(real_paths.begin(), real_paths.end(), real) != real_paths.end()) continue;
    real_paths.push_back(real);
    unique.push_back(path);
  }
  return unique;
}

class PluginAllocator final : public Allocator {
 public:
  PluginAllocator(const Plugin* plugin, DLDevice device, hetrt_memory_kind_t kind)
      : plugin_(plugin), device_(device), kind_(kind) {}
  DLDevice device() const override { return device_; }
  Result<void*> Allocate(uint64_t nbytes, uint64_t alignment) override {
    auto args = AbiArgs<hetrt_allocate_args_t>();
    args.self = plugin_->instance();
    args.device = device_;
    args.nbytes = nbytes;
    args.alignment = alignment;
    args.kind = kind_;
    HETRT_RETURN_IF_ERROR(plugin_->Consume(plugin_->device_api()->allocate(&args)));
    if (kind_ != HETRT_MEMORY_DEVICE && args.host_pointer != nullptr) {
      std::lock_guard<std::mutex> lock(mutex_);
      host_pointers_[args.data] = args.host_pointer;
    }
    return args.data;
  }
  void Free(void* data) override {
    if (kind_ != HETRT_MEMORY_DEVICE) {
      std::lock_guard<std::mutex> lock(mutex_);
      host_pointers_.erase(data);
    }
    auto args = AbiArgs<hetrt_free_args_t>();
    args.self = plugin_->instance();
    args.device = device_;
    args.data = data;
    args.kind = kind_;
    // A failing free has no caller to report to; the plugin logged it.
    (void)plugin_->Consume(plugin_->device_api()->free(&args));
  }
  std::shared_ptr<void> Owner() const override { return std::const_pointer_cast<Plugin>(plugin_->shared_from_this()); }
  void* HostPointer(void* data) const override {
    if (device_.device_type == kDLCPU) return data;
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = host_pointers_.find(data);
    return it == host_pointers_.end() ? nullptr : it->second;
  }

 private:
  const Plugin* plugin_;
  DLDevice device_;
  hetrt_memory_kind_t kind_;
  mutable std::mutex mutex_;
  std::unordered_map<void*, void*> host_pointers_;
};

StatusCode FromPluginCode(int32_t code) {
  if (code <= HETRT_STATUS_OK || code > HETRT_STATUS_INTERNAL) return StatusCode::kInternal;
  return static_cast<StatusCode>(code);
}

}  // namespace

// ---------------------------------------------------------------- Plugin

Plugin::Plugin(std::string path, void* dl_handle, const hetrt_plugin_api_t* api,
               hetrt_instance_t* instance)
    : path_(std::move(path)), dl_handle_(dl_handle), api_(api), instance_(instance) {}

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

const hetrt_device_api_t* Plugin::device_api() const {
  return HETRT_STRUCT_HAS(api_, hetrt_plugin_api_t, device) ? api_->device : nullptr;
}
const hetrt_module_api_t* Plugin::module_api() const {
  return HETRT_STRUCT_HAS(api_, hetrt_plugin_api_t, module) ? api_->module : nullptr;
}
const hetrt_parallel_api_t* Plugin::parallel_api() const {
  return HETRT_STRUCT_HAS(api_, hetrt_plugin_api_t, parallel) ? api_->parallel : nullptr;
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

std::vector<std::string> Plugin::whole_model_devices() const {
  const auto* t = whole_model_api();
  return t ? Names(t->device_names, t->num_device_names) : std::vector<std::string>{};
}
std::vector<std::string> Plugin::whole_model_transports() const {
  const auto* t = whole_model_api();
  return t ? Names(t->transports, t->num_transports) : std::vector<std::string>{};
}
std::vector<std::string> Plugin::whole_model_boards() const {
  const auto* t = whole_model_api();
  return t ? Names(t->boards, t->num_boards) : std::vector<std::string>{};
}
std::vector<std::string> Plugin::whole_model_formats() const {
  const auto* t = whole_model_api();
  return t ? Names(t->formats, t->num_formats) : std::vector<std::string>{};
}

std::vector<int32_t> Plugin::device_types() const {
  if (api_->device_types == nullptr) return {};
  return {api_->device_types, api_->device_types + api_->num_device_types};
}

std::vector<std::string> Plugin::type_keys() const {
  std::vector<std::string> keys;
  for (size_t i = 0; api_->type_keys && i < api_->num_type_keys; ++i)
    keys.emplace_back(api_->type_keys[i]);
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
  Status status(described ? FromPluginCode(args.code) : StatusCode::kInternal,
                "plugin '" + name() + "': " + message);
  if (api_->error_destroy) {
    auto destroy = AbiArgs<hetrt_error_destroy_args_t>();
    destroy.error = error;
    (void)api_->error_destroy(&destroy);
  }
  return status;
}

Result<Plugin::DeviceCount> Plugin::CountDevices(int32_t device_type) const {
  const hetrt_device_api_t* dev = device_api();
  if (dev == nullptr || dev->device_count == nullptr)
    return Unimplemented("plugin '" + name() + "' has no device table");
  auto args = AbiArgs<hetrt_device_count_args_t>();
  args.self = instance_;
  args.device_type = device_type;
  HETRT_RETURN_IF_ERROR(Consume(dev->device_count(&args)));
  DeviceCount result;
  result.count = args.count;
  if (args.unavailable_reason) result.unavailable_reason = args.unavailable_reason;
  return result;
}

namespace {
Result<hetrt_device_attribute_args_t> QueryAttribute(const Plugin& plugin, DLDevice device,
                                                     int32_t attribute) {
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
  const hetrt_device_api_t* dev = device_api();
  if (dev == nullptr || dev->memory_stats == nullptr)
    return Unimplemented("plugin '" + name() + "' reports no memory statistics");
  auto args = AbiArgs<hetrt_memory_stats_args_t>();
  args.self = instance_;
  args.device = device;
  HETRT_RETURN_IF_ERROR(Consume(dev->memory_stats(&args)));
  return DeviceMemoryStats{args.bytes_in_use, args.peak_bytes_in_use, args.bytes_limit, args.num_allocations};
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

Allocator& Plugin::DeviceAllocator(DLDevice device, hetrt_memory_kind_t kind) {
  std::lock_guard<std::mutex> lock(allocators_mutex_);
  auto key = std::make_tuple(static_cast<int32_t>(device.device_type), device.device_id, static_cast<int32_t>(kind));
  auto& slot = allocators_[key];
  if (!slot) slot = std::make_unique<PluginAllocator>(this, device, kind);
  return *slot;
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

// ---------------------------------------------------------------- PluginRegistry

std::vector<std::string> PluginRegistry::DefaultSearchPaths() {
  std::vector<std::string> paths;
  if (const char* env = std::getenv("HETRT_PLUGIN_PATH")) {
    std::string list = env;
    size_t start = 0;
    while (start <= list.size()) {
      size_t end = list.find(':', start);
      if (end == std::string::npos) end = list.size();
      if (end > start) paths.push_back(list.substr(start, end - start));
      start = end + 1;
    }
  }
  // The folder beside the core library, wherever it was built or installed.
  paths.push_back(DefaultPluginDir());
  return UniqueSearchPaths(paths);
}

std::unique_ptr<PluginRegistry> PluginRegistry::Discover(const Options& options) {
  std::unique_ptr<PluginRegistry> registry(new PluginRegistry());
  registry->search_paths_ =
      UniqueSearchPaths(options.search_paths.empty() ? DefaultSearchPaths() : options.search_paths);
  for (const std::string& path : registry->search_paths_) {
    if (IsFile(path)) {
      registry->LoadPlugin(path);
    } else if (IsDirectory(path)) {
      for (const std::string& file : ListPluginFiles(path)) registry->LoadPlugin(file);
    } else {
      registry->problems_.push_back({path, "plugin folder does not exist"});
    }
  }
  for (const auto& plugin : registry->plugins_)
    for (int32_t t : plugin->device_types())
      if (t >= 0 && t < kMaxDeviceType && registry->by_device_type_[t] == nullptr)
        registry->by_device_type_[t] = plugin.get();  // first wins, as in ForDeviceType
  for (const auto& plugin : registry->plugins_)
    if (registry->parallel_plugin_ == nullptr && plugin->parallel_api()) registry->parallel_plugin_ = plugin.get();
  if (options.bind_backend) {
    (void)GlobalFunctionRegistry::Get().Register("__tvm_set_device", SetDeviceFunction());
    for (const auto& plugin : registry->plugins_) {
      if (plugin->device_api())
        for (int32_t t : plugin->device_types()) BindDeviceProvider(t, plugin.get());
      if (plugin->parallel_api()) BindParallelProvider(plugin.get());
    }
  }
  return registry;
}

std::vector<std::string> PluginRegistry::CandidateFiles(const std::vector<std::string>& search_paths) {
  std::vector<std::string> files;
  for (const std::string& path : UniqueSearchPaths(search_paths)) {
    if (IsFile(path)) files.push_back(path);
    else if (IsDirectory(path))
      for (std::string& file : ListPluginFiles(path)) files.push_back(std::move(file));
  }
  return files;
}

PluginRegistry& PluginRegistry::Global() {
  // Never destroyed: tensors and compiled code may still use plugin memory and
  // function pointers while other static objects are torn down at exit.
  static PluginRegistry* global = [] {
    Options options;
    options.bind_backend = true;
    return Discover(options).release();
  }();
  return *global;
}

PluginRegistry::~PluginRegistry() = default;

void PluginRegistry::LoadPlugin(const std::string& path) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    problems_.push_back({path, std::string("dlopen failed: ") + (why ? why : "?")});
    return;
  }
  auto entry = reinterpret_cast<hetrt_plugin_get_api_fn>(dlsym(handle, HETRT_PLUGIN_ENTRY_SYMBOL));
  if (entry == nullptr) {
    problems_.push_back({path, std::string("no entry symbol '") + HETRT_PLUGIN_ENTRY_SYMBOL + "'"});
    return;
  }
  // Every major starts with the same prefix, so a plugin built for another
  // major is read only that far and refused by name.
  const auto* prefix = reinterpret_cast<const hetrt_plugin_api_prefix_t*>(entry());
  if (prefix == nullptr || prefix->struct_size < offsetof(hetrt_plugin_api_prefix_t, name)) {
    problems_.push_back({path, "entry symbol returned no usable table"});
    return;
  }
  if (prefix->abi_major != HETRT_PLUGIN_ABI_MAJOR) {
    problems_.push_back(
        {path, "plugin ABI version " + std::to_string(prefix->abi_major) + "." +
                   std::to_string(prefix->abi_minor) + " is incompatible with hetrt's ABI version " +
                   std::to_string(HETRT_PLUGIN_ABI_MAJOR) + "." +
                   std::to_string(HETRT_PLUGIN_ABI_MINOR) + " (major versions differ; rebuild the plugin against ABI " +
                   std::to_string(HETRT_PLUGIN_ABI_MAJOR) + ")"});
    return;
  }
  const auto* api = reinterpret_cast<const hetrt_plugin_api_t*>(prefix);
  // Minor versions only append fields; every field through `parallel` is 2.0.
  if (!HETRT_STRUCT_HAS(api, hetrt_plugin_api_t, parallel)) {
    problems_.push_back({path, "plugin table is smaller (" + std::to_string(api->struct_size) +
                                   " bytes) than ABI 2.0 requires"});
    return;
  }
  const std::string name = api->name ? api->name : "";
  if (name.empty()) {
    problems_.push_back({path, "plugin has no name"});
    return;
  }
  if (api->error_message == nullptr || api->error_destroy == nullptr || api->instance_create == nullptr) {
    problems_.push_back({path, "plugin '" + name + "' lacks error_message, error_destroy or instance_create"});
    return;
  }
  for (const auto& existing : plugins_) {
    if (existing->name() == name) {
      problems_.push_back({path, "plugin '" + name + "' already loaded from " + existing->path() +
                                     " (earlier in the search path wins)"});
      return;
    }
  }
  auto create = AbiArgs<hetrt_instance_create_args_t>();
  create.host = BackendHostApi();
  if (hetrt_error_t* error = api->instance_create(&create)) {
    auto message = AbiArgs<hetrt_error_message_args_t>();
    message.error = error;
    const bool described = api->error_message(&message) == nullptr && message.message != nullptr;
    problems_.push_back({path, "instance_create failed: " + std::string(described ? message.message : "(no message)")});
    auto destroy = AbiArgs<hetrt_error_destroy_args_t>();
    destroy.error = error;
    (void)api->error_destroy(&destroy);
    return;
  }
  auto plugin = std::make_shared<Plugin>(path, handle, api, create.instance);
  if (api->global_functions) {
    auto globals = AbiArgs<hetrt_global_functions_args_t>();
    globals.self = create.instance;
    Status listed = plugin->Consume(api->global_functions(&globals));
    if (!listed.ok()) problems_.push_back({path, listed.message()});
    for (size_t i = 0; listed.ok() && globals.functions && i < globals.num_functions; ++i) {
      const hetrt_global_function_t& g = globals.functions[i];
      Status s = GlobalFunctionRegistry::Get().Register(g.name, g.func, plugin);
      if (!s.ok()) problems_.push_back({path, s.message()});
    }
  }
  plugins_.push_back(std::move(plugin));
}

Result<Plugin*> PluginRegistry::ForTypeKey(std::string_view type_key) const {
  for (const auto& p : plugins_)
    if (p->LoadsTypeKey(type_key)) return p.get();
  return NotFound("no plugin provides type_key '" + std::string(type_key) + "' (" +
                  DescribeSearch() + ")");
}

Result<Plugin*> PluginRegistry::ForDeviceType(int32_t device_type) const {
  for (const auto& p : plugins_)
    if (p->ServesDeviceType(device_type)) return p.get();
  return NotFound("no plugin provides device type " + DeviceTypeName(device_type) + " (" +
                  std::to_string(device_type) + ") (" + DescribeSearch() + ")");
}

Result<Plugin*> PluginRegistry::ForWholeModelDevice(const std::string& device) const {
  for (const auto& p : plugins_)
    for (const std::string& name : p->whole_model_devices())
      if (name == device) return p.get();
  return NotFound("no plugin runs whole models on device '" + device + "' (" + DescribeSearch() + ")");
}

Result<Plugin*> PluginRegistry::ForWholeModel(const std::string& path, const std::string& device) const {
  std::string declined;
  for (const auto& p : plugins_) {
    const auto devices = p->whole_model_devices();
    if (std::find(devices.begin(), devices.end(), device) == devices.end()) continue;
    auto args = AbiArgs<hetrt_whole_model_accepts_args_t>();
    args.self = p->instance();
    args.path = path.c_str();
    args.device = device.c_str();
    if (Status s = p->Consume(p->whole_model_api()->accepts(&args)); !s.ok()) return s;
    if (args.accepted) return p.get();
    declined += (declined.empty() ? "" : "; ") + p->name() + ": " + (args.reason ? args.reason : "declined");
  }
  if (!declined.empty()) return NotFound(path + " does not run on device '" + device + "' (" + declined + ")");
  return NotFound("no plugin runs whole models on device '" + device + "' (" + DescribeSearch() + ")");
}

Result<Plugin*> PluginRegistry::ForDevice(DLDevice device) const {
  HETRT_ASSIGN_OR_RETURN(Plugin * plugin, ForDeviceType(device.device_type));
  HETRT_ASSIGN_OR_RETURN(auto count, plugin->CountDevices(device.device_type));
  if (device.device_id < 0 || device.device_id >= count.count) {
    std::string why = count.count == 0 ? "no " + DeviceTypeName(device.device_type) +
                                             " device is available" +
                                             (count.unavailable_reason.empty()
                                                  ? std::string()
                                                  : ": " + count.unavailable_reason)
                                       : "only " + std::to_string(count.count) + " " +
                                             DeviceTypeName(device.device_type) +
                                             " device(s) exist";
    return NotFound("device " + DeviceToString(device) + " not available from plugin '" +
                    plugin->name() + "': " + why);
  }
  return plugin;
}

std::string PluginRegistry::DescribeSearch() const {
  std::string s = "searched: ";
  for (size_t i = 0; i < search_paths_.size(); ++i) s += (i ? ", " : "") + search_paths_[i];
  if (search_paths_.empty()) s += "(nothing)";
  s += "; plugins found: ";
  if (plugins_.empty()) s += "none";
  for (size_t i = 0; i < plugins_.size(); ++i) {
    const Plugin& p = *plugins_[i];
    s += (i ? ", " : "") + p.name() + " " + p.version();
    std::string what;
    for (int32_t t : p.device_types()) what += (what.empty() ? "" : " ") + DeviceTypeName(t);
    for (const auto& k : p.type_keys()) what += (what.empty() ? "" : " ") + ("'" + k + "'");
    if (!what.empty()) s += " [" + what + "]";
  }
  if (!problems_.empty()) {
    // Short: the file and the start of the reason; `hetrt plugins` has the rest.
    s += "; not used: ";
    for (size_t i = 0; i < problems_.size(); ++i) {
      const std::string& reason = problems_[i].reason;
      s += (i ? ", " : "") + problems_[i].path + " (" + (reason.size() > 100 ? reason.substr(0, 97) + "..." : reason) + ")";
    }
  }
  return s;
}

Plugin* PluginRegistry::CopyProvider(DLDevice src, DLDevice dst) const {
  // The device side's plugin moves the bytes; between two host buffers, the CPU plugin.
  Plugin* src_plugin = src.device_type == kDLCPU ? nullptr : PluginOfDeviceType(src.device_type);
  Plugin* dst_plugin = dst.device_type == kDLCPU ? nullptr : PluginOfDeviceType(dst.device_type);
  for (Plugin* p : {src_plugin, dst_plugin})
    if (p != nullptr && p->CanCopy(src, dst)) return p;
  if (src.device_type == kDLCPU && dst.device_type == kDLCPU) {
    Plugin* cpu = PluginOfDeviceType(kDLCPU);
    if (cpu != nullptr && cpu->CanCopy(src, dst)) return cpu;
  }
  return nullptr;
}

Status PluginRegistry::CopyBytes(const void* src, uint64_t src_offset, DLDevice src_device,
                                 void* dst, uint64_t dst_offset, DLDevice dst_device,
                                 uint64_t nbytes) const {
  if (nbytes == 0) return OkStatus();
  const bool src_host = src_device.device_type == kDLCPU;
  const bool dst_host = dst_device.device_type == kDLCPU;
  if (src_host && dst_host && PluginOfDeviceType(kDLCPU) == nullptr) {  // no CPU plugin
    std::memcpy(static_cast<uint8_t*>(dst) + dst_offset, static_cast<const uint8_t*>(src) + src_offset, nbytes);
    return OkStatus();
  }
  Plugin* plugin = CopyProvider(src_device, dst_device);
  if (plugin == nullptr) {
    for (DLDevice d : {src_device, dst_device})
      if (d.device_type != kDLCPU && PluginOfDeviceType(d.device_type) == nullptr)
        return ForDeviceType(d.device_type).status();
    if (src_host || dst_host)
      return Unimplemented("no plugin copies between " + DeviceToString(src_device) + " and " +
                           DeviceToString(dst_device));
    // Two backends that cannot copy to each other: stage through host memory.
    HETRT_ASSIGN_OR_RETURN(Tensor staging, Tensor::EmptyHost({static_cast<int64_t>(nbytes)},
                                                             DLDataType{kDLUInt, 8, 1}));
    HETRT_RETURN_IF_ERROR(CopyBytes(src, src_offset, src_device, staging.data(), 0, staging.device(), nbytes));
    return CopyBytes(staging.data(), 0, staging.device(), dst, dst_offset, dst_device, nbytes);
  }
  auto args = AbiArgs<hetrt_copy_args_t>();
  args.self = plugin->instance();
  args.src = src;
  args.src_offset = src_offset;
  args.src_device = src_device;
  args.dst = dst;
  args.dst_offset = dst_offset;
  args.dst_device = dst_device;
  args.nbytes = nbytes;
  args.flags = HETRT_COPY_BLOCKING;
  return plugin->Consume(plugin->device_api()->copy(&args));
}

Status PluginRegistry::CopyTensor(const Tensor& src, Tensor& dst) const {
  if (src.nbytes() != dst.nbytes())
    return InvalidArgument("copy of " + std::to_string(src.nbytes()) + " bytes (" +
                           ShapeToString(src.shape()) + " " + DataTypeToString(src.dtype()) +
                           ") into " + std::to_string(dst.nbytes()) + " bytes (" +
                           ShapeToString(dst.shape()) + " " + DataTypeToString(dst.dtype()) + ")");
  return CopyBytes(src.data(), src.dl()->byte_offset, src.device(), dst.data(),
                   dst.dl()->byte_offset, dst.device(), src.nbytes());
}

Result<Tensor> PluginRegistry::ToHost(const Tensor& src) const {
  HETRT_ASSIGN_OR_RETURN(Tensor host, Tensor::EmptyHost(src.shape(), src.dtype()));
  HETRT_RETURN_IF_ERROR(CopyTensor(src, host));
  return host;
}

}  // namespace hetrt
