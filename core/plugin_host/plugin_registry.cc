#include "hetrt/plugin_host/plugin_registry.h"

#include <dirent.h>
#include <dlfcn.h>
#include <sys/stat.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>

#include "hetrt/base/dtype.h"
#include "hetrt/base/install_layout.h"
#include "hetrt/device/host_services.h"
#include "hetrt/device/whole_model.h"
#include "hetrt/tvm_abi/global_functions.h"
#include "tvm_abi/backend_routes.h"

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

// Compiled code's backend calls go to the first plugin of a device type (as
// in ForDeviceType) and the first task pool.
class RegistryRoutes final : public BackendRoutes {
 public:
  explicit RegistryRoutes(const PluginRegistry* registry) : registry_(registry) {}
  Plugin* DeviceProvider(int32_t device_type) const override { return registry_->PluginOfDeviceType(device_type); }
  Plugin* ParallelProvider() const override { return registry_->ParallelPlugin(); }

 private:
  const PluginRegistry* registry_;
};

const BackendRoutes* GlobalRoutes() { return PluginRegistry::Global().backend_routes(); }

// Installed when the core library loads, before any compiled code can call.
[[maybe_unused]] const bool g_routes_installed = (SetDefaultBackendRoutes(&GlobalRoutes), true);

}  // namespace

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
    if (registry->parallel_plugin_ == nullptr && plugin->HasTaskPool()) registry->parallel_plugin_ = plugin.get();
  registry->routes_ = std::make_unique<RegistryRoutes>(registry.get());
  return registry;
}

std::vector<std::string> PluginRegistry::CandidateFiles(const std::vector<std::string>& search_paths) {
  std::vector<std::string> files;
  for (const std::string& path : UniqueSearchPaths(search_paths)) {
    if (IsFile(path))
      files.push_back(path);
    else if (IsDirectory(path))
      for (std::string& file : ListPluginFiles(path)) files.push_back(std::move(file));
  }
  return files;
}

PluginRegistry& PluginRegistry::Global() {
  // Never destroyed: tensors and compiled code may still use plugin memory and
  // function pointers while other static objects are torn down at exit.
  static PluginRegistry* global = [] { return Discover(Options{}).release(); }();
  return *global;
}

PluginRegistry::~PluginRegistry() = default;

void PluginRegistry::LoadPlugin(const std::string& path) {
  auto opened = Plugin::Open(path, HostServices());
  if (!opened.ok()) {
    problems_.push_back({path, opened.status().message()});
    return;
  }
  std::shared_ptr<Plugin> plugin = std::move(opened).value();
  for (const auto& existing : plugins_) {
    if (existing->name() == plugin->name()) {
      problems_.push_back({path, "plugin '" + plugin->name() + "' already loaded from " + existing->path() +
                                     " (earlier in the search path wins)"});
      return;
    }
  }
  auto globals = plugin->GlobalFunctions();
  if (!globals.ok()) {
    problems_.push_back({path, globals.status().message()});
  } else {
    for (const auto& [name, func] : *globals) {
      Status s = GlobalFunctionRegistry::Get().Register(name, func, plugin);
      if (!s.ok()) problems_.push_back({path, s.message()});
    }
  }
  plugins_.push_back(std::move(plugin));
}

Result<Plugin*> PluginRegistry::ForTypeKey(std::string_view type_key) const {
  for (const auto& p : plugins_)
    if (p->LoadsTypeKey(type_key)) return p.get();
  return NotFound("no plugin provides type_key '" + std::string(type_key) + "' (" + DescribeSearch() + ")");
}

Result<Plugin*> PluginRegistry::ForDeviceType(int32_t device_type) const {
  for (const auto& p : plugins_)
    if (p->ServesDeviceType(device_type)) return p.get();
  return NotFound("no plugin provides device type " + DeviceTypeName(device_type) + " (" + std::to_string(device_type) +
                  ") (" + DescribeSearch() + ")");
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
    std::string reason;
    HETRT_ASSIGN_OR_RETURN(bool accepted, WholeModel::Accepts(*p, path, device, &reason));
    if (accepted) return p.get();
    declined += (declined.empty() ? "" : "; ") + p->name() + ": " + reason;
  }
  if (!declined.empty()) return NotFound(path + " does not run on device '" + device + "' (" + declined + ")");
  return NotFound("no plugin runs whole models on device '" + device + "' (" + DescribeSearch() + ")");
}

Result<Plugin*> PluginRegistry::ForDevice(DLDevice device) const {
  HETRT_ASSIGN_OR_RETURN(Plugin * plugin, ForDeviceType(device.device_type));
  HETRT_ASSIGN_OR_RETURN(auto count, plugin->CountDevices(device.device_type));
  if (device.device_id < 0 || device.device_id >= count.count) {
    std::string why =
        count.count == 0
            ? "no " + DeviceTypeName(device.device_type) + " device is available" +
                  (count.unavailable_reason.empty() ? std::string() : ": " + count.unavailable_reason)
            : "only " + std::to_string(count.count) + " " + DeviceTypeName(device.device_type) + " device(s) exist";
    return NotFound("device " + DeviceToString(device) + " not available from plugin '" + plugin->name() + "': " + why);
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
      s += (i ? ", " : "") + problems_[i].path + " (" + (reason.size() > 100 ? reason.substr(0, 97) + "..." : reason) +
           ")";
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

Status PluginRegistry::CopyBytes(const void* src, uint64_t src_offset, DLDevice src_device, void* dst,
                                 uint64_t dst_offset, DLDevice dst_device, uint64_t nbytes) const {
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
    HETRT_ASSIGN_OR_RETURN(Tensor staging,
                           Tensor::EmptyHost({static_cast<int64_t>(nbytes)}, DLDataType{kDLUInt, 8, 1}));
    HETRT_RETURN_IF_ERROR(CopyBytes(src, src_offset, src_device, staging.data(), 0, staging.device(), nbytes));
    return CopyBytes(staging.data(), 0, staging.device(), dst, dst_offset, dst_device, nbytes);
  }
  // The device face takes the plugin's side; the copy names both devices.
  const DLDevice side = src_host ? dst_device : src_device;
  return Device(plugin, side).Copy(src, src_offset, src_device, dst, dst_offset, dst_device, nbytes);
}

Status PluginRegistry::CopyTensor(const Tensor& src, Tensor& dst) const {
  if (src.nbytes() != dst.nbytes())
    return InvalidArgument("copy of " + std::to_string(src.nbytes()) + " bytes (" + ShapeToString(src.shape()) + " " +
                           DataTypeToString(src.dtype()) + ") into " + std::to_string(dst.nbytes()) + " bytes (" +
                           ShapeToString(dst.shape()) + " " + DataTypeToString(dst.dtype()) + ")");
  return CopyBytes(src.data(), src.dl()->byte_offset, src.device(), dst.data(), dst.dl()->byte_offset, dst.device(),
                   src.nbytes());
}

Result<Tensor> PluginRegistry::ToHost(const Tensor& src) const {
  HETRT_ASSIGN_OR_RETURN(Tensor host, Tensor::EmptyHost(src.shape(), src.dtype()));
  HETRT_RETURN_IF_ERROR(CopyTensor(src, host));
  return host;
}

}  // namespace hetrt
