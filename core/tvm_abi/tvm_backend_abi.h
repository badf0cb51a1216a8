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

#include "hetrt/tvm_abi/function_environment.h"

namespace hetrt {

// Writes hetrt's implementations into the library's __TVM* pointer variables
// (those that exist). Returns how many were filled.
int InstallBackendPointers(void* dl_handle);
// Stores `environment` in the library's __tvm_module_ctx, if it has one; that
// pointer comes back to TVMBackendGetFuncFromEnv.
bool InstallModuleContext(void* dl_handle, FunctionEnvironment* environment);

}  // namespace hetrt
