#include "tvm_abi/tvm_backend_abi.h"

#include <dlfcn.h>

#include <atomic>
#include <cstdio>

#include "hetrt/dtype.h"
#include "hetrt/module.h"
#include "hetrt/plugin_registry.h"

#define HETRT_C_EXPORT extern "C" __attribute__((visibility("default")))

namespace hetrt {
namespace {

thread_local std::string t_last_error;

constexpr int kMaxDeviceType = 32;
// Plugins of the global registry, which is never destroyed.
std::atomic<Plugin*> g_device_plugins[kMaxDeviceType];
std::atomic<Plugin*> g_parallel_provider{nullptr};


void HostSetLastError(const char* message) { SetLastError(message); }

// Compiled code may ask for a service before anything touched the plugins:
// discovering the global registry binds the providers (once; cheap afterwards).
thread_local const PluginRegistry* t_registry = nullptr;  // BackendRegistryScope

Plugin* DeviceProvider(int device_type) {
  if (t_registry != nullptr) return t_registry->PluginOfDeviceType(device_type);
  if (device_type < 0 || device_type >= kMaxDeviceType) return nullptr;
  Plugin* plugin = g_device_plugins[device_type].load(std::memory_order_acquire);
  if (plugin != nullptr) return plugin;
  PluginRegistry::Global();
  return g_device_plugins[device_type].load(std::memory_order_acquire);
}

Plugin* ParallelProvider() {
  if (t_registry != nullptr) return t_registry->ParallelPlugin();
  Plugin* plugin = g_parallel_provider.load(std::memory_order_acquire);
  if (plugin != nullptr) return plugin;
  PluginRegistry::Global();
  return g_parallel_provider.load(std::memory_order_acquire);
}

// Hot-path failures become the thread's last error, as TVM code expects.
void ReportPluginError(const Plugin& plugin, hetrt_error_t* error) {
  SetLastError(plugin.Consume(error).message().c_str());
}

void HostLog(hetrt_log_level_t level, const char* plugin, const char* message) {
  if (level < HETRT_LOG_WARNING) return;
  std::fprintf(stderr, "hetrt[%s] %s: %s\n", plugin ? plugin : "?",
               level == HETRT_LOG_ERROR ? "error" : "warning", message ? message : "");
}

const hetrt_host_api_t kHostApi = {
    sizeof(hetrt_host_api_t), HETRT_PLUGIN_ABI_MAJOR, HETRT_PLUGIN_ABI_MINOR,
    &HostSetLastError,        &HostLog,
};

}  // namespace

void SetLastError(const char* message) { t_last_error = message ? message : ""; }
void ClearLastError() { t_last_error.clear(); }
std::string LastErrorMessage() { return t_last_error; }
const hetrt_host_api_t* BackendHostApi() { return &kHostApi; }

void BindDeviceProvider(int32_t device_type, Plugin* plugin) {
  if (device_type < 0 || device_type >= kMaxDeviceType) return;
  // First wins, matching PluginRegistry::ForDeviceType.
  Plugin* none = nullptr;
  g_device_plugins[device_type].compare_exchange_strong(none, plugin);
}

namespace {

// __tvm_set_device(device_type, device_id): TVM host code calls it before it
// launches kernels on a device.
int32_t SetDeviceImpl(hetrt_value_t* args, int32_t* codes, int32_t num_args, hetrt_value_t*,
                      int32_t*, void*) {
  if (num_args != 2 || codes[0] != HETRT_TYPE_INT || codes[1] != HETRT_TYPE_INT) {
    SetLastError("__tvm_set_device takes (int device_type, int device_id)");
    return -1;
  }
  const int64_t type = args[0].v_int64;
  Plugin* plugin = type >= 0 && type < kMaxDeviceType ? DeviceProvider(static_cast<int>(type)) : nullptr;
  if (plugin == nullptr) {
    SetLastError(("__tvm_set_device: no plugin serves " + DeviceTypeName(static_cast<int32_t>(type))).c_str());
    return -1;
  }
  const hetrt_device_api_t* dev = plugin->device_api();
  if (dev->set_device == nullptr) return 0;
  auto set = AbiArgs<hetrt_set_device_args_t>();
  set.self = plugin->instance();
  set.device = DLDevice{static_cast<DLDeviceType>(type), static_cast<int32_t>(args[1].v_int64)};
  hetrt_error_t* error = dev->set_device(&set);
  if (error == nullptr) return 0;
  ReportPluginError(*plugin, error);
  return -1;
}

}  // namespace

hetrt_packed_func_t SetDeviceFunction() { return {&SetDeviceImpl, nullptr}; }

BackendRegistryScope::BackendRegistryScope(const PluginRegistry* registry) : previous_(t_registry) {
  t_registry = registry;  // NULL: the global registry, the default route
}
BackendRegistryScope::~BackendRegistryScope() { t_registry = previous_; }

void BindParallelProvider(Plugin* plugin) {
  Plugin* none = nullptr;
  g_parallel_provider.compare_exchange_strong(none, plugin);
}

}  // namespace hetrt

using hetrt::g_parallel_provider;

// ---- The C entry points, with TVM's names and semantics. ----

HETRT_C_EXPORT void TVMAPISetLastError(const char* message) { hetrt::SetLastError(message); }

HETRT_C_EXPORT const char* TVMGetLastError(void) { return hetrt::t_last_error.c_str(); }

HETRT_C_EXPORT int TVMFuncCall(void* func, hetrt_value_t* args, int* type_codes, int num_args,
                               hetrt_value_t* ret, int* ret_type_code) {
  if (func == nullptr) {
    hetrt::SetLastError("TVMFuncCall: NULL function handle");
    return -1;
  }
  const auto* f = static_cast<const hetrt_packed_func_t*>(func);
  return f->call(args, type_codes, num_args, ret, ret_type_code, f->resource);
}

HETRT_C_EXPORT int TVMBackendGetFuncFromEnv(void* mod_node, const char* func_name, void** out) {
  if (mod_node == nullptr || func_name == nullptr || out == nullptr) {
    hetrt::SetLastError(
        "TVMBackendGetFuncFromEnv: NULL module context (was the library loaded by hetrt?)");
    return -1;
  }
  auto found = static_cast<hetrt::Module*>(mod_node)->GetFunctionFromEnv(func_name);
  if (!found.ok()) {
    hetrt::SetLastError(found.status().message().c_str());
    return -1;
  }
  *out = const_cast<hetrt_packed_func_t*>(*found);
  return 0;
}

HETRT_C_EXPORT void* TVMBackendAllocWorkspace(int device_type, int device_id, uint64_t nbytes,
                                              int /*dtype_code_hint*/, int /*dtype_bits_hint*/) {
  hetrt::Plugin* plugin = hetrt::DeviceProvider(device_type);
  if (plugin == nullptr || plugin->device_api()->workspace_alloc == nullptr) {
    std::string m = "TVMBackendAllocWorkspace: no plugin provides workspace memory for " +
                    hetrt::DeviceTypeName(device_type);
    hetrt::SetLastError(m.c_str());
    return nullptr;
  }
  auto args = hetrt::AbiArgs<hetrt_workspace_args_t>();
  args.self = plugin->instance();
  args.device = DLDevice{static_cast<DLDeviceType>(device_type), device_id};
  args.nbytes = nbytes;
  if (hetrt_error_t* error = plugin->device_api()->workspace_alloc(&args)) [[unlikely]] {
    hetrt::ReportPluginError(*plugin, error);
    return nullptr;
  }
  return args.data;
}

HETRT_C_EXPORT int TVMBackendFreeWorkspace(int device_type, int device_id, void* ptr) {
  hetrt::Plugin* plugin = hetrt::DeviceProvider(device_type);
  if (plugin == nullptr || plugin->device_api()->workspace_free == nullptr) {
    hetrt::SetLastError("TVMBackendFreeWorkspace: no workspace provider for this device type");
    return -1;
  }
  auto args = hetrt::AbiArgs<hetrt_workspace_args_t>();
  args.self = plugin->instance();
  args.device = DLDevice{static_cast<DLDeviceType>(device_type), device_id};
  args.data = ptr;
  if (hetrt_error_t* error = plugin->device_api()->workspace_free(&args)) [[unlikely]] {
    hetrt::ReportPluginError(*plugin, error);
    return -1;
  }
  return 0;
}

HETRT_C_EXPORT int TVMBackendParallelLaunch(hetrt_parallel_lambda_t lambda, void* cdata,
                                            int num_task) {
  hetrt::Plugin* plugin = hetrt::ParallelProvider();
  if (plugin == nullptr) {
    // No host plugin: run serially. Lambdas split work by env.num_task.
    hetrt_parallel_group_env_t env{nullptr, 1};
    return lambda(0, &env, cdata);
  }
  auto args = hetrt::AbiArgs<hetrt_parallel_launch_args_t>();
  args.self = plugin->instance();
  args.lambda = lambda;
  args.cdata = cdata;
  args.num_task = num_task;
  if (hetrt_error_t* error = plugin->parallel_api()->launch(&args)) [[unlikely]] {
    hetrt::ReportPluginError(*plugin, error);
    return -1;
  }
  return args.failed_task >= 0 ? -1 : 0;
}

HETRT_C_EXPORT int TVMBackendParallelBarrier(int task_id, hetrt_parallel_group_env_t* env) {
  hetrt::Plugin* plugin = hetrt::t_registry != nullptr ? hetrt::t_registry->ParallelPlugin()
                                                       : g_parallel_provider.load(std::memory_order_acquire);
  if (plugin == nullptr || env == nullptr || env->num_task <= 1) return 0;
  auto args = hetrt::AbiArgs<hetrt_parallel_barrier_args_t>();
  args.self = plugin->instance();
  args.task_id = task_id;
  args.env = env;
  if (hetrt_error_t* error = plugin->parallel_api()->barrier(&args)) [[unlikely]] {
    hetrt::ReportPluginError(*plugin, error);
    return -1;
  }
  return 0;
}

// System-library C code registers its symbols from static constructors. hetrt
// finds functions by dlsym (exported symbols) or through the library's
// TVMSystemLibEntryPoint table, so registration only has to succeed.
HETRT_C_EXPORT int TVMBackendRegisterSystemLibSymbol(const char* name, void* ptr) {
  (void)ptr;
  return name == nullptr ? -1 : 0;
}

namespace hetrt {

int InstallBackendPointers(void* dl_handle) {
  struct Slot {
    const char* variable;
    void* implementation;
  };
  const Slot slots[] = {
      {"__TVMFuncCall", reinterpret_cast<void*>(&TVMFuncCall)},
      {"__TVMAPISetLastError", reinterpret_cast<void*>(&TVMAPISetLastError)},
      {"__TVMBackendGetFuncFromEnv", reinterpret_cast<void*>(&TVMBackendGetFuncFromEnv)},
      {"__TVMBackendAllocWorkspace", reinterpret_cast<void*>(&TVMBackendAllocWorkspace)},
      {"__TVMBackendFreeWorkspace", reinterpret_cast<void*>(&TVMBackendFreeWorkspace)},
      {"__TVMBackendParallelLaunch", reinterpret_cast<void*>(&TVMBackendParallelLaunch)},
      {"__TVMBackendParallelBarrier", reinterpret_cast<void*>(&TVMBackendParallelBarrier)},
  };
  int filled = 0;
  for (const Slot& slot : slots) {
    if (void** variable = static_cast<void**>(dlsym(dl_handle, slot.variable))) {
      *variable = slot.implementation;
      ++filled;
    }
  }
  return filled;
}

bool InstallModuleContext(void* dl_handle, Module* library_module) {
  void** ctx = static_cast<void**>(dlsym(dl_handle, "__tvm_module_ctx"));
  if (ctx == nullptr) return false;
  *ctx = library_module;
  return true;
}

}  // namespace hetrt
