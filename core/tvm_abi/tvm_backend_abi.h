// The TVM backend C ABI: the only part of hetrt that speaks it.
//
// TVM-compiled host libraries define NULL-initialised function-pointer variables
// (__TVMFuncCall, __TVMBackendAllocWorkspace, ...) that the loader fills right
// after dlopen; C code generated for MLF/system libraries instead calls the real
// C symbols (TVMFuncCall, TVMBackendAllocWorkspace, ...), which this file also
// exports. Both routes land in the same implementations, which forward to the
// plugins' device and parallel tables.
#pragma once

#include <string>

#include "hetrt/plugin_abi.h"

namespace hetrt {

class Module;
class Plugin;

// Thread-local last error shared by compiled code, plugins and the core.
void SetLastError(const char* message);
void ClearLastError();
std::string LastErrorMessage();

// Services handed to every plugin at initialize().
const hetrt_host_api_t* BackendHostApi();

// Writes hetrt's implementations into the library's __TVM* pointer variables
// (those that exist). Returns how many were filled.
int InstallBackendPointers(void* dl_handle);
// Stores `library_module` in the library's __tvm_module_ctx, if it has one; that
// pointer comes back to TVMBackendGetFuncFromEnv.
bool InstallModuleContext(void* dl_handle, Module* library_module);

// Routes workspace requests and __tvm_set_device of a device type to a
// plugin's device table (the first plugin bound for a type stays).
void BindDeviceProvider(int32_t device_type, Plugin* plugin);
// The packed function registered globally as "__tvm_set_device".
hetrt_packed_func_t SetDeviceFunction();
// Routes parallel launches to a host plugin's task pool (the first one stays).
void BindParallelProvider(Plugin* plugin);

class PluginRegistry;
// While alive, the TVM backend calls this thread makes (workspace, parallel
// launch, __tvm_set_device) go to `registry`'s plugins instead of the global
// registry's (NULL: the global registry): an executor holds one around each run. Work that parallel tasks
// do on pool threads uses the global registry's CPU plugin (CPU workspace is
// per thread whichever instance serves it).
class BackendRegistryScope {
 public:
  explicit BackendRegistryScope(const PluginRegistry* registry);
  ~BackendRegistryScope();
  BackendRegistryScope(const BackendRegistryScope&) = delete;
  BackendRegistryScope& operator=(const BackendRegistryScope&) = delete;

 private:
  const PluginRegistry* previous_;
};

}  // namespace hetrt
