// What TVM v0.22+ generated code needs from the runtime beyond the C API
// symbols of libtvm_ffi.so: its context pointers (docs/tvm-ffi.md (d)) and the
// library context its function lookups come back with.
#pragma once

#include <string>
#include <string_view>

#include "hetrt/base/status.h"
#include "hetrt/tvm_abi/global_functions.h"
#include "hetrt/tvm_abi/tvm_ffi_c_abi.h"

namespace hetrt {

// What a tvm-ffi library's __tvm_ffi__library_ctx points at: the lookup its
// code calls (__TVMBackendGetFuncFromEnv up to v0.25,
// __TVMFFIEnvModLookupFromImports from v0.26) for device kernels,
// __tvm_set_device and extern functions.
// Thread contract: implementations are thread-safe: tvm-ffi code looks functions up from any thread.
class FfiFunctionEnvironment {
 public:
  virtual ~FfiFunctionEnvironment() = default;
  // A Function object the environment keeps for its lifetime (generated code
  // caches the handle and never releases it), or NOT_FOUND naming where it looked.
  virtual Result<hetrt_ffi_object_t*> LookupFfiFunction(std::string_view name) = 0;
};

// Fills the tvm-ffi context pointers a library defines (__TVMFFIFunctionCall,
// __TVMFFIErrorSetRaisedFromCStr, the lookups, __TVMFFIHandleInitOnce, and
// the workspace and parallel-launch pointers, whose meaning is v0.18's).
// Needs LoadTvmFfiShim() first. Returns how many it filled.
int InstallTvmFfiPointers(void* dl_handle);
// Stores `environment` in the library's __tvm_ffi__library_ctx, if it has one.
bool InstallTvmFfiContext(void* dl_handle, FfiFunctionEnvironment* environment);

// A Function object that calls a packed function of hetrt's own convention
// (the global functions: __tvm_set_device, plugins' functions), converting
// tvm-ffi arguments to packed values. One strong reference, the caller's.
hetrt_ffi_object_t* MakeFfiFunctionFromPacked(const PackedFunc& function, std::string name);

// The other way: a tvm-ffi function (a v0.22+ library's __tvm_ffi_<name>) as
// a packed function, so executors call it as any kernel. Tensors arrive as
// DLTensor* (type 7), as generated code reads them in every era; a raised
// error becomes the thread's last error ("kind: message").
PackedFunc MakePackedFromFfiFunction(hetrt_ffi_safe_call_t function);
// The tvm-ffi function such a packed function calls; NULL for any other.
// Callers that pass objects (Shape, Array) or take results of any kind call
// it with CallFfiFunction instead.
hetrt_ffi_safe_call_t FfiSafeCallOf(const PackedFunc& function);
// A packed argument as tvm-ffi's Any (borrowed: tensors as DLTensor*, strings
// as C strings); false for a type code tvm-ffi code cannot take.
bool PackedArgToFfiAny(const hetrt_value_t& value, int32_t code, hetrt_ffi_any_t& any);

}  // namespace hetrt
