// Calling tvm-ffi functions (TVM v0.22+ and foreign kernels) from C++: the
// values hetrt passes and takes, and one call with the ABI's ownership rules
// (docs/tvm-ffi.md (c)) applied. Everything that touches the C layouts of
// tvm_ffi_c_abi.h stays behind this header.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "hetrt/base/status.h"
#include "hetrt/base/tensor.h"
#include "hetrt/tvm_abi/tvm_ffi_c_abi.h"

namespace hetrt {

// A Shape object's dims (tvm-ffi's Shape, type index 69).
struct FfiShape {
  std::vector<int64_t> dims;
  bool operator==(const FfiShape&) const = default;
};
struct FfiArray;

// An argument or result: None, an integer, a float, a bool, a string, a
// tensor on any device, a shape, or an array of these (a Relax tuple). A
// tensor result a function made stays alive as long as any copy of the
// Tensor does.
using FfiValue = std::variant<std::monostate, int64_t, double, bool, std::string, Tensor, FfiShape, FfiArray>;

// An Array object's items (tvm-ffi's Array, type index 71); arrays nest.
struct FfiArray {
  std::vector<FfiValue> items;
};

// What a call raised: the error's kind as the function named it (TVM uses
// Python's exception names: "ValueError", "TypeError", "RuntimeError", ...).
struct FfiRaised {
  std::string kind;
  std::string message;
};

// hetrt's libtvm_ffi.so, loaded once with RTLD_GLOBAL (next to the core
// library, or $HETRT_TVM_FFI_SHIM); libraries that call tvm-ffi's C API by
// symbol can be dlopen'ed only after this succeeded.
Status LoadTvmFfiShim();

// Calls `function` with `args`: tensors as Tensor objects the callee may keep
// (it IncRefs them), strings as borrowed C strings, numbers as themselves,
// shapes and arrays as Shape and Array objects (an array's strings as Str).
// `what` names the function in errors ("kernel 'add_one' in libk.so"). A raised
// error becomes a Status whose message names `what`, the kind and the
// message; `raised` (optional) receives kind and message alone.
Result<FfiValue> CallFfiFunction(hetrt_ffi_safe_call_t function, void* handle, std::span<const FfiValue> args,
                                 const std::string& what, FfiRaised* raised = nullptr);

// Moves the thread's raised error out (kind "RuntimeError" and a note when
// the callee raised nothing).
FfiRaised TakeFfiRaised();

// Releases one reference to an object hetrt holds (NULL: nothing).
void ReleaseFfiObject(hetrt_ffi_object_t* object);

// What a tvm-ffi kernel call returning `failed` and `ret` amounts to: its
// error, or an error for an object result (released), else OK.
Status FfiKernelOutcome(int failed, const hetrt_ffi_any_t& ret);

// The string a result Any holds (SmallStr, Str or Bytes); consumes it.
Result<std::string> TakeFfiString(hetrt_ffi_any_t& value, const std::string& what);

// Where a Tensor object's memory comes from for TVMFFIEnvTensorAlloc: the
// core sets this (the plugin registry knows the devices) before any call.
using FfiTensorMemory = Result<Tensor> (*)(const DLTensor& prototype);
void SetFfiTensorMemory(FfiTensorMemory memory);

}  // namespace hetrt
