#include "tvm_abi/tvm_backend_abi.h"

#include <dlfcn.h>

#include <span>

#include <atomic>
#include <exception>
#include <string>

#include "hetrt/base/dtype.h"
#include "hetrt/base/last_error.h"
#include "hetrt/base/log.h"
#include "hetrt/device/device.h"
#include "hetrt/device/task_pool.h"
#include "hetrt/tvm_abi/system_lib_registry.h"
#include "tvm_abi/backend_routes.h"

#define HETRT_C_EXPORT extern "C" __attribute__((visibility("default")))

namespace hetrt {
namespace {

std::atomic<const BackendRoutes* (*)()> g_resolver{nullptr};
std::atomic<const BackendRoutes*> g_default_routes{nullptr};
thread_local const BackendRoutes* t_routes = nullptr;  // BackendRoutesScope

// Compiled code may ask for a service before anything touched the plugins:
// the first call resolves the default routes (cheap afterwards).
const BackendRoutes* DefaultRoutes() {
  const BackendRoutes* routes = g_default_routes.load(std::memory_order_acquire);
  if (routes != nullptr) [[likely]]
    return routes;
  auto resolver = g_resolver.load(std::memory_order_acquire);
  if (resolver == nullptr) return nullptr;
  routes = resolver();
  g_default_routes.store(routes, std::memory_order_release);
  return routes;
}

const BackendRoutes* Routes() { return t_routes != nullptr ? t_routes : DefaultRoutes(); }

Plugin* DeviceProvider(int64_t device_type) {
  if (device_type < 0 || device_type >= kMaxDeviceType) return nullptr;
  const BackendRoutes* routes = Routes();
  return routes ? routes->DeviceProvider(static_cast<int32_t>(device_type)) : nullptr;
}

Plugin* ParallelProvider() {
  const BackendRoutes* routes = Routes();
  return routes ? routes->ParallelProvider() : nullptr;
}

DLDevice MakeDevice(int64_t type, int64_t id) { return {static_cast<DLDeviceType>(type), static_cast<int32_t>(id)}; }

int Fail(const std::string& message) {
  SetLastError(message.c_str());
  return -1;
}

// Called from a catch block: the exception in flight becomes the thread's last
// error. No C++ exception may unwind through the C frames of compiled code.
void ReportException(const char* where) noexcept {
  try {
    throw;
  } catch (const std::exception& e) {
    try {
      SetLastError((std::string(where) + ": " + e.what()).c_str());
    } catch (...) {
    }
  } catch (...) {
    try {
      SetLastError((std::string(where) + ": unknown C++ exception").c_str());
    } catch (...) {
    }
  }
}

// __tvm_set_device(device_type, device_id): TVM host code calls it before it
// launches kernels on a device.
int32_t SetDeviceImpl(hetrt_value_t* args, int32_t* codes, int32_t num_args, hetrt_value_t*, int32_t*, void*) noexcept
    try {
  if (num_args != 2 || codes[0] != HETRT_TYPE_INT || codes[1] != HETRT_TYPE_INT)
    return Fail("__tvm_set_device takes (int device_type, int device_id)");
  Plugin* plugin = DeviceProvider(args[0].v_int64);
  if (plugin == nullptr)
    return Fail("__tvm_set_device: no plugin serves " + DeviceTypeName(static_cast<int32_t>(args[0].v_int64)));
  Status s = Device(plugin, MakeDevice(args[0].v_int64, args[1].v_int64)).SetCurrent();
  return s.ok() ? 0 : Fail(s.message());
} catch (...) {
  ReportException("__tvm_set_device");
  return -1;
}

// Registered once, whichever registry loads plugins.
[[maybe_unused]] const bool g_set_device_registered =
    GlobalFunctionRegistry::Get().Register("__tvm_set_device", {&SetDeviceImpl, nullptr}).ok();

}  // namespace

void SetDefaultBackendRoutes(const BackendRoutes* (*resolver)()) {
  g_resolver.store(resolver, std::memory_order_release);
}

BackendRoutesScope::BackendRoutesScope(const BackendRoutes* routes) : previous_(t_routes) { t_routes = routes; }
BackendRoutesScope::~BackendRoutesScope() { t_routes = previous_; }

void* CurrentNativeStream(int32_t device_type, int32_t device_id) noexcept {
  try {
    Plugin* plugin = DeviceProvider(device_type);
    if (plugin == nullptr) return nullptr;
    Result<void*> native = Device(plugin, MakeDevice(device_type, device_id)).CurrentNativeStream();
    return native.ok() ? *native : nullptr;
  } catch (...) {  // noexcept boundary: compiled code called in
    return nullptr;
  }
}

}  // namespace hetrt

// ---- The C entry points, with TVM's names and semantics. Each is noexcept:
// a C++ exception inside becomes -1 (or NULL) and the thread's last error.

HETRT_C_EXPORT void TVMAPISetLastError(const char* message) noexcept try {
  hetrt::SetLastError(message);
} catch (...) {  // no memory for the message: nothing more to do
}

HETRT_C_EXPORT const char* TVMGetLastError(void) noexcept { return hetrt::LastErrorCString(); }

HETRT_C_EXPORT int TVMFuncCall(void* func, hetrt_value_t* args, int* type_codes, int num_args, hetrt_value_t* ret,
                               int* ret_type_code) noexcept try {
  if (func == nullptr) return hetrt::Fail("TVMFuncCall: NULL function handle");
  const auto* f = static_cast<const hetrt_packed_func_t*>(func);
  return f->call(args, type_codes, num_args, ret, ret_type_code, f->resource);
} catch (...) {
  hetrt::ReportException("TVMFuncCall");
  return -1;
}

HETRT_C_EXPORT int TVMBackendGetFuncFromEnv(void* mod_node, const char* func_name, void** out) noexcept try {
  if (mod_node == nullptr || func_name == nullptr || out == nullptr)
    return hetrt::Fail("TVMBackendGetFuncFromEnv: NULL module context (was the library loaded by hetrt?)");
  auto found = static_cast<hetrt::FunctionEnvironment*>(mod_node)->GetFunctionFromEnv(func_name);
  if (!found.ok()) return hetrt::Fail(found.status().message());
  *out = const_cast<hetrt_packed_func_t*>(*found);
  return 0;
} catch (...) {
  hetrt::ReportException("TVMBackendGetFuncFromEnv");
  return -1;
}

HETRT_C_EXPORT void* TVMBackendAllocWorkspace(int device_type, int device_id, uint64_t nbytes, int /*dtype_code_hint*/,
                                              int /*dtype_bits_hint*/) noexcept try {
  hetrt::Plugin* plugin = hetrt::DeviceProvider(device_type);
  if (plugin == nullptr || !plugin->HasWorkspace()) [[unlikely]] {
    hetrt::Fail("TVMBackendAllocWorkspace: no plugin provides workspace memory for " +
                hetrt::DeviceTypeName(device_type));
    return nullptr;
  }
  return hetrt::Device(plugin, hetrt::MakeDevice(device_type, device_id)).WorkspaceAllocOrSetLastError(nbytes);
} catch (...) {
  hetrt::ReportException("TVMBackendAllocWorkspace");
  return nullptr;
}

HETRT_C_EXPORT int TVMBackendFreeWorkspace(int device_type, int device_id, void* ptr) noexcept try {
  hetrt::Plugin* plugin = hetrt::DeviceProvider(device_type);
  if (plugin == nullptr || !plugin->HasWorkspace()) [[unlikely]]
    return hetrt::Fail("TVMBackendFreeWorkspace: no workspace provider for " + hetrt::DeviceTypeName(device_type));
  return hetrt::Device(plugin, hetrt::MakeDevice(device_type, device_id)).WorkspaceFreeOrSetLastError(ptr);
} catch (...) {
  hetrt::ReportException("TVMBackendFreeWorkspace");
  return -1;
}

HETRT_C_EXPORT int TVMBackendParallelLaunch(hetrt_parallel_lambda_t lambda, void* cdata, int num_task) noexcept try {
  hetrt::Plugin* plugin = hetrt::ParallelProvider();
  if (plugin == nullptr) {
    // No host plugin: run serially. Lambdas split work by env.num_task.
    hetrt_parallel_group_env_t env{nullptr, 1};
    return lambda(0, &env, cdata);
  }
  return hetrt::TaskPool(plugin).Launch(lambda, cdata, num_task);
} catch (...) {
  hetrt::ReportException("TVMBackendParallelLaunch");
  return -1;
}

HETRT_C_EXPORT int TVMBackendParallelBarrier(int task_id, hetrt_parallel_group_env_t* env) noexcept try {
  if (env == nullptr || env->num_task <= 1) return 0;
  hetrt::Plugin* plugin = hetrt::ParallelProvider();
  if (plugin == nullptr) return 0;
  return hetrt::TaskPool(plugin).Barrier(task_id, env);
} catch (...) {
  hetrt::ReportException("TVMBackendParallelBarrier");
  return -1;
}

// System-library host code (TVM's --system-lib) registers its functions,
// __tvm_module_ctx and __tvm_dev_mblob from static constructors, before main()
// and usually ignoring the result: a refusal is also logged, and a later
// LoadSystemLib or lookup of that name fails with the same message.
HETRT_C_EXPORT int TVMBackendRegisterSystemLibSymbol(const char* name, void* ptr) noexcept try {
  hetrt::Status s = hetrt::SystemLibRegistry::Global().Register(name, ptr);
  if (s.ok()) return 0;
  hetrt::Log(hetrt::LogLevel::kError, "system-lib", s.message());
  return hetrt::Fail(s.message());
} catch (...) {
  hetrt::ReportException("TVMBackendRegisterSystemLibSymbol");
  return -1;
}

namespace hetrt {

namespace {

struct PointerSlot {
  const char* variable;
  void* implementation;
};

int FillPointers(void* dl_handle, std::span<const PointerSlot> slots) {
  int filled = 0;
  for (const PointerSlot& slot : slots) {
    if (void** variable = static_cast<void**>(dlsym(dl_handle, slot.variable))) {
      *variable = slot.implementation;
      ++filled;
    }
  }
  return filled;
}

}  // namespace

int InstallBackendPointers(void* dl_handle) {
  const PointerSlot slots[] = {
      {"__TVMFuncCall", reinterpret_cast<void*>(&TVMFuncCall)},
      {"__TVMAPISetLastError", reinterpret_cast<void*>(&TVMAPISetLastError)},
      {"__TVMBackendGetFuncFromEnv", reinterpret_cast<void*>(&TVMBackendGetFuncFromEnv)},
      {"__TVMBackendAllocWorkspace", reinterpret_cast<void*>(&TVMBackendAllocWorkspace)},
      {"__TVMBackendFreeWorkspace", reinterpret_cast<void*>(&TVMBackendFreeWorkspace)},
      {"__TVMBackendParallelLaunch", reinterpret_cast<void*>(&TVMBackendParallelLaunch)},
      {"__TVMBackendParallelBarrier", reinterpret_cast<void*>(&TVMBackendParallelBarrier)},
  };
  return FillPointers(dl_handle, slots);
}

int InstallHostServicePointers(void* dl_handle, void* (*alloc_workspace)(int, int, uint64_t, int, int),
                               int (*parallel_launch)(hetrt_parallel_lambda_t, void*, int)) {
  const PointerSlot slots[] = {
      {"__TVMBackendAllocWorkspace", reinterpret_cast<void*>(alloc_workspace)},
      {"__TVMBackendFreeWorkspace", reinterpret_cast<void*>(&TVMBackendFreeWorkspace)},
      {"__TVMBackendParallelLaunch", reinterpret_cast<void*>(parallel_launch)},
      {"__TVMBackendParallelBarrier", reinterpret_cast<void*>(&TVMBackendParallelBarrier)},
  };
  return FillPointers(dl_handle, slots);
}

bool InstallModuleContext(void* dl_handle, FunctionEnvironment* environment) {
  void** ctx = static_cast<void**>(dlsym(dl_handle, "__tvm_module_ctx"));
  if (ctx == nullptr) return false;
  *ctx = environment;
  return true;
}

}  // namespace hetrt
