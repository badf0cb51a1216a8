// The TVM backend C ABI: the only part of hetrt that speaks it.
//
// TVM-compiled host libraries define NULL-initialised function-pointer variables
// (__TVMFuncCall, __TVMBackendAllocWorkspace, ...) that the loader fills right
// after dlopen; C code generated for MLF/system libraries instead calls the real
// C symbols (TVMFuncCall, TVMBackendAllocWorkspace, ...), which this layer also
// exports. Both routes land in the same implementations, which reach devices
// through BackendRoutes (backend_routes.h) and functions through the library's
// FunctionEnvironment.
#pragma once

#include <cstdint>

#include "hetrt/plugin_abi.h"
#include "hetrt/tvm_abi/function_environment.h"

// hetrt's implementations of the two backend calls whose failures tvm-ffi
// code reports differently (tvm_ffi_context.cc wraps them).
extern "C" void* TVMBackendAllocWorkspace(int device_type, int device_id, uint64_t nbytes, int dtype_code_hint,
                                          int dtype_bits_hint) noexcept;
extern "C" int TVMBackendParallelLaunch(hetrt_parallel_lambda_t lambda, void* cdata, int num_task) noexcept;

namespace hetrt {

// Writes hetrt's implementations into the library's __TVM* pointer variables
// (those that exist). Returns how many were filled.
int InstallBackendPointers(void* dl_handle);
// Fills only the workspace and parallel-launch pointers, whose meaning every
// TVM era shares; tvm-ffi libraries pass allocation and launch functions that
// also raise their errors in the tvm-ffi error slot.
int InstallHostServicePointers(void* dl_handle, void* (*alloc_workspace)(int, int, uint64_t, int, int),
                               int (*parallel_launch)(hetrt_parallel_lambda_t, void*, int));
// The native queue (CUstream, cl_command_queue) behind this thread's current
// stream of a device, through the routes' plugin for its type; NULL when the
// device type has no plugin, the plugin reports none or the device is unknown.
void* CurrentNativeStream(int32_t device_type, int32_t device_id) noexcept;
// Stores `environment` in the library's __tvm_module_ctx, if it has one; that
// pointer comes back to TVMBackendGetFuncFromEnv.
bool InstallModuleContext(void* dl_handle, FunctionEnvironment* environment);

}  // namespace hetrt
