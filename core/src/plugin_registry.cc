#include "hetrt/plugin_registry.h"

#include <dirent.h>
#include <dlfcn.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>

#include "hetrt/dtype.h"
#include "hetrt/module.h"
#include "tvm_backend_abi.h"

namespace hetrt {
namespace {

constexpr const char* kPluginPrefix = "libhetrt_plugin_";
constexpr const char* kPluginSuffix = ".so";
constexpr const char* kPluginFolderName = "hetrt-plugins";

// One shared object may be opened by several registries (dlopen returns the
// same handle and the same static state), so initialize/shutdown are counted.
std::mutex g_init_mutex;
std::unordered_map<const hetrt_plugin_api_t*, int>& InitCounts() {
  static std::unordered_map<const hetrt_plugin_api_t*, int> counts;
  return counts;
}

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

class PluginAllocator final : public Allocator {
 public:
  PluginAllocator(const Plugin* plugin, DLDevice device) : plugin_(plugin), device_(device) {}
  DLDevice device() const override { return device_; }
  Result<void*> Allocate(uint64_t nbytes, uint64_t alignment) override {
    hetrt_allocate_args_t args{};
    args.struct_size = sizeof(args);
    args.device = device_;
    args.nbytes = nbytes;
    args.alignment = alignment;
    HETRT_RETURN_IF_ERROR(plugin_->Consume(plugin_->device_api()->allocate(&args)));
    return args.data;
  }
  void Free(void* data) override {
    // A failing free has no caller to report to; the plugin logged it.
    (void)plugin_->Consume(plugin_->device_api()->free(device_, data));
  }

 private:
  const Plugin* plugin_;
  DLDevice device_;
};

StatusCode FromPluginCode(hetrt_status_code_t code) {
  if (code <= HETRT_STATUS_OK || code > HETRT_STATUS_INTERNAL) return StatusCode::kInternal;
  return static_cast<StatusCode>(code);
}

}  // namespace

// ---------------------------------------------------------------- Plugin

Plugin::Plugin(std::string path, void* dl_handle, const hetrt_plugin_api_t* api)
    : path_(std::move(path)), dl_handle_(dl_handle), api_(api) {}

Plugin::~Plugin() {
  allocators_.clear();
  std::lock_guard<std::mutex> lock(g_init_mutex);
  if (--InitCounts()[api_] == 0 && HETRT_STRUCT_HAS(api_, hetrt_plugin_api_t, shutdown) &&
      api_->shutdown)
    api_->shutdown();
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

Status Plugin::Consume(hetrt_error_t* error) const {
  if (error == nullptr) return OkStatus();
  const char* message = api_->error_message ? api_->error_message(error) : nullptr;
  Status status(api_->error_code ? FromPluginCode(api_->error_code(error)) : StatusCode::kInternal,
                "plugin '" + name() + "': " + (message ? message : "(no message)"));
  if (api_->error_destroy) api_->error_destroy(error);
  return status;
}

Result<Plugin::DeviceCount> Plugin::CountDevices(int32_t device_type) const {
  const hetrt_device_api_t* dev = device_api();
  if (dev == nullptr || dev->device_count == nullptr)
    return Unimplemented("plugin '" + name() + "' has no device table");
  hetrt_device_count_args_t args{};
  args.struct_size = sizeof(args);
  args.device_type = device_type;
  HETRT_RETURN_IF_ERROR(Consume(dev->device_count(&args)));
  DeviceCount result;
  result.count = args.count;
  if (args.unavailable_reason) result.unavailable_reason = args.unavailable_reason;
  return result;
}

std::string Plugin::DeviceName(DLDevice device) const {
  const hetrt_device_api_t* dev = device_api();
  if (dev == nullptr || !HETRT_STRUCT_HAS(dev, hetrt_device_api_t, device_name) ||
      dev->device_name == nullptr)
    return DeviceToString(device);
  char buffer[256] = {0};
  if (!Consume(dev->device_name(device, buffer, sizeof buffer)).ok()) return DeviceToString(device);
  return buffer;
}

Allocator& Plugin::DeviceAllocator(DLDevice device) {
  std::lock_guard<std::mutex> lock(allocators_mutex_);
  auto key = std::make_pair(static_cast<int32_t>(device.device_type), device.device_id);
  auto& slot = allocators_[key];
  if (!slot) slot = std::make_unique<PluginAllocator>(this, device);
  return *slot;
}

Status Plugin::SetOption(const std::string& key, const std::string& value) const {
  if (!HETRT_STRUCT_HAS(api_, hetrt_plugin_api_t, set_option) || api_->set_option == nullptr)
    return Unimplemented("plugin '" + name() + "' takes no options (asked for '" + key + "')");
  return Consume(api_->set_option(key.c_str(), value.c_str()));
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
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&PluginRegistry::DefaultSearchPaths), &info) &&
      info.dli_fname) {
    std::string lib = info.dli_fname;
    auto slash = lib.rfind('/');
    std::string dir = slash == std::string::npos ? "." : lib.substr(0, slash);
    paths.push_back(dir + "/" + kPluginFolderName);
  }
  return paths;
}

std::unique_ptr<PluginRegistry> PluginRegistry::Discover(const Options& options) {
  std::unique_ptr<PluginRegistry> registry(new PluginRegistry());
  registry->search_paths_ =
      options.search_paths.empty() ? DefaultSearchPaths() : options.search_paths;
  for (const std::string& path : registry->search_paths_) {
    if (IsFile(path)) {
      registry->LoadPlugin(path);
    } else if (IsDirectory(path)) {
      for (const std::string& file : ListPluginFiles(path)) registry->LoadPlugin(file);
    } else {
      registry->problems_.push_back({path, "plugin folder does not exist"});
    }
  }
  if (options.bind_backend) {
    (void)GlobalFunctionRegistry::Get().Register("__tvm_set_device", SetDeviceFunction());
    for (const auto& plugin : registry->plugins_) {
      if (plugin->device_api())
        for (int32_t t : plugin->device_types()) BindDeviceProvider(t, plugin->api());
      if (const hetrt_parallel_api_t* par = plugin->parallel_api()) BindParallelProvider(par);
    }
  }
  return registry;
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
  const hetrt_plugin_api_t* api = entry();
  if (api == nullptr || api->struct_size < offsetof(hetrt_plugin_api_t, name)) {
    problems_.push_back({path, "entry symbol returned no usable table"});
    return;
  }
  if (api->abi_major != HETRT_PLUGIN_ABI_MAJOR) {
    problems_.push_back(
        {path, "plugin ABI version " + std::to_string(api->abi_major) + "." +
                   std::to_string(api->abi_minor) + " is incompatible with hetrt's ABI version " +
                   std::to_string(HETRT_PLUGIN_ABI_MAJOR) + "." +
                   std::to_string(HETRT_PLUGIN_ABI_MINOR) + " (major versions differ)"});
    return;
  }
  // Minor versions only append fields; every field through `parallel` is v1.0.
  if (!HETRT_STRUCT_HAS(api, hetrt_plugin_api_t, parallel)) {
    problems_.push_back({path, "plugin table is smaller (" + std::to_string(api->struct_size) +
                                   " bytes) than ABI 1.0 requires"});
    return;
  }
  const std::string name = api->name ? api->name : "";
  if (name.empty()) {
    problems_.push_back({path, "plugin has no name"});
    return;
  }
  for (const auto& existing : plugins_) {
    if (existing->name() == name) {
      problems_.push_back({path, "plugin '" + name + "' already loaded from " + existing->path() +
                                     " (earlier in the search path wins)"});
      return;
    }
  }
  {
    std::lock_guard<std::mutex> lock(g_init_mutex);
    int& count = InitCounts()[api];
    if (count == 0 && api->initialize) {
      hetrt_error_t* error = api->initialize(BackendHostApi());
      if (error != nullptr) {
        std::string message = api->error_message ? api->error_message(error) : "?";
        if (api->error_destroy) api->error_destroy(error);
        problems_.push_back({path, "initialize failed: " + message});
        return;
      }
    }
    ++count;
  }
  auto plugin = std::make_unique<Plugin>(path, handle, api);
  for (size_t i = 0; i < api->num_global_functions && api->global_functions; ++i) {
    const hetrt_global_function_t& g = api->global_functions[i];
    Status s = GlobalFunctionRegistry::Get().Register(g.name, g.func);
    if (!s.ok()) problems_.push_back({path, s.message()});
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
    s += "; not used: ";
    for (size_t i = 0; i < problems_.size(); ++i)
      s += (i ? ", " : "") + problems_[i].path + " (" + problems_[i].reason + ")";
  }
  return s;
}

Status PluginRegistry::CopyBytes(const void* src, uint64_t src_offset, DLDevice src_device,
                                 void* dst, uint64_t dst_offset, DLDevice dst_device,
                                 uint64_t nbytes) const {
  if (nbytes == 0) return OkStatus();
  const bool src_host = src_device.device_type == kDLCPU;
  const bool dst_host = dst_device.device_type == kDLCPU;
  Plugin* src_plugin = nullptr;
  Plugin* dst_plugin = nullptr;
  if (!src_host) {
    HETRT_ASSIGN_OR_RETURN(src_plugin, ForDeviceType(src_device.device_type));
  }
  if (!dst_host) {
    HETRT_ASSIGN_OR_RETURN(dst_plugin, ForDeviceType(dst_device.device_type));
  }
  if (src_plugin && dst_plugin && src_plugin != dst_plugin) {
    // Two different backends: stage through host memory.
    HETRT_ASSIGN_OR_RETURN(Tensor staging, Tensor::EmptyHost({static_cast<int64_t>(nbytes)},
                                                             DLDataType{kDLUInt, 8, 1}));
    HETRT_RETURN_IF_ERROR(CopyBytes(src, src_offset, src_device, staging.data(), 0,
                                    staging.device(), nbytes));
    return CopyBytes(staging.data(), 0, staging.device(), dst, dst_offset, dst_device, nbytes);
  }
  Plugin* plugin = src_plugin ? src_plugin : dst_plugin;
  if (plugin == nullptr) {
    auto cpu = ForDeviceType(kDLCPU);
    if (!cpu.ok()) {  // host to host without a CPU plugin
      std::memcpy(static_cast<uint8_t*>(dst) + dst_offset,
                  static_cast<const uint8_t*>(src) + src_offset, nbytes);
      return OkStatus();
    }
    plugin = *cpu;
  }
  const hetrt_device_api_t* dev = plugin->device_api();
  if (dev == nullptr || dev->copy == nullptr)
    return Unimplemented("plugin '" + plugin->name() + "' cannot copy");
  hetrt_copy_args_t args{};
  args.struct_size = sizeof(args);
  args.src = src;
  args.src_offset = src_offset;
  args.src_device = src_device;
  args.dst = dst;
  args.dst_offset = dst_offset;
  args.dst_device = dst_device;
  args.nbytes = nbytes;
  return plugin->Consume(dev->copy(&args));
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
