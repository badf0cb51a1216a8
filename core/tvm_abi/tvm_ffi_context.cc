#include "hetrt/tvm_abi/tvm_ffi_context.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "hetrt/base/last_error.h"
#include "hetrt/tvm_abi/tvm_ffi_values.h"
#include "tvm_abi/tvm_backend_abi.h"
#include "tvm_abi/tvm_ffi_shim_api.h"

namespace hetrt {
namespace {

void Raise(const char* kind, const std::string& message) { Shim().set_raised(kind, message.c_str()); }

// __TVMBackendGetFuncFromEnv (v0.21-v0.25) and __TVMFFIEnvModLookupFromImports
// (v0.26): the same signature and meaning; `out` gets a borrowed Function.
int LookupFromEnvironment(void* library_ctx, const char* name, void** out) noexcept {
  try {
    if (library_ctx == nullptr || name == nullptr || out == nullptr) {
      Raise("RuntimeError", "function lookup without a library context (was the library loaded by hetrt?)");
      return -1;
    }
    Result<hetrt_ffi_object_t*> found = static_cast<FfiFunctionEnvironment*>(library_ctx)->LookupFfiFunction(name);
    if (!found.ok()) {
      Raise("RuntimeError", found.status().message());
      return -1;
    }
    *out = *found;
    return 0;
  } catch (const std::exception& e) {
    Raise("RuntimeError", std::string("function lookup: ") + e.what());
    return -1;
  }
}

// Workspace and parallel launch as v0.18's, with failures raised in the
// tvm-ffi error slot, where tvm-ffi code looks for them.
void* AllocWorkspace(int device_type, int device_id, uint64_t nbytes, int code_hint, int bits_hint) noexcept {
  void* memory = TVMBackendAllocWorkspace(device_type, device_id, nbytes, code_hint, bits_hint);
  if (memory == nullptr) Raise("RuntimeError", LastErrorMessage());
  return memory;
}

int ParallelLaunch(hetrt_parallel_lambda_t lambda, void* cdata, int num_task) noexcept {
  const int rc = TVMBackendParallelLaunch(lambda, cdata, num_task);
  if (rc != 0) Raise("RuntimeError", "parallel launch failed: " + LastErrorMessage());
  return rc;
}

// A packed function of hetrt's convention seen as a Function object.
struct PackedFunctionObject {
  hetrt_ffi_function_object_t cell;
  PackedFunc function;
  std::string name;
};

bool ToPacked(const hetrt_ffi_any_t& any, hetrt_value_t& value, int32_t& code) {
  switch (any.type_index) {
    case HETRT_FFI_NONE: code = HETRT_TYPE_NULL, value.v_handle = nullptr; return true;
    case HETRT_FFI_INT:
    case HETRT_FFI_BOOL: code = HETRT_TYPE_INT, value.v_int64 = any.v_int64; return true;
    case HETRT_FFI_FLOAT: code = HETRT_TYPE_FLOAT, value.v_float64 = any.v_float64; return true;
    case HETRT_FFI_OPAQUE_PTR: code = HETRT_TYPE_HANDLE, value.v_handle = any.v_ptr; return true;
    case HETRT_FFI_DATA_TYPE: code = HETRT_TYPE_DATATYPE, value.v_type = any.v_dtype; return true;
    case HETRT_FFI_DEVICE: code = HETRT_TYPE_DEVICE, value.v_device = any.v_device; return true;
    case HETRT_FFI_DLTENSOR_PTR: code = HETRT_TYPE_DLTENSOR, value.v_handle = any.v_ptr; return true;
    case HETRT_FFI_TENSOR:
      code = HETRT_TYPE_DLTENSOR;
      value.v_handle = &reinterpret_cast<hetrt_ffi_tensor_object_t*>(any.v_obj)->dl;
      return true;
    case HETRT_FFI_RAW_STR: code = HETRT_TYPE_STR, value.v_str = any.v_c_str; return true;
    case HETRT_FFI_SMALL_STR: code = HETRT_TYPE_STR, value.v_str = any.v_bytes; return true;  // NUL follows
    case HETRT_FFI_STR:
      code = HETRT_TYPE_STR;
      value.v_str = reinterpret_cast<hetrt_ffi_str_object_t*>(any.v_obj)->bytes.data;
      return true;
    default: return false;
  }
}

int CallPacked(void* handle, const hetrt_ffi_any_t* args, int32_t num_args, hetrt_ffi_any_t* result) noexcept {
  auto* self = static_cast<PackedFunctionObject*>(handle);
  try {
    std::vector<hetrt_value_t> values(static_cast<size_t>(std::max(num_args, 0)));
    std::vector<int32_t> codes(values.size());
    for (int32_t i = 0; i < num_args; ++i)
      if (!ToPacked(args[i], values[static_cast<size_t>(i)], codes[static_cast<size_t>(i)])) {
        Raise("TypeError", self->name + ": argument " + std::to_string(i) + " has tvm-ffi type index " +
                               std::to_string(args[i].type_index) + ", which hetrt's function cannot take");
        return -1;
      }
    hetrt_value_t ret{};
    int32_t ret_code = HETRT_TYPE_NULL;
    ClearLastError();
    if (self->function.call(values.data(), codes.data(), num_args, &ret, &ret_code, self->function.resource) != 0) {
      Raise("RuntimeError", self->name + ": " + LastErrorMessage());
      return -1;
    }
    std::memset(result, 0, sizeof(*result));
    switch (ret_code) {
      case HETRT_TYPE_NULL: result->type_index = HETRT_FFI_NONE; return 0;
      case HETRT_TYPE_INT:
      case HETRT_TYPE_UINT: result->type_index = HETRT_FFI_INT, result->v_int64 = ret.v_int64; return 0;
      case HETRT_TYPE_FLOAT: result->type_index = HETRT_FFI_FLOAT, result->v_float64 = ret.v_float64; return 0;
      case HETRT_TYPE_HANDLE: result->type_index = HETRT_FFI_OPAQUE_PTR, result->v_ptr = ret.v_handle; return 0;
      default:
        result->type_index = HETRT_FFI_NONE;
        Raise("TypeError", self->name + " returned packed type code " + std::to_string(ret_code) +
                               ", which hetrt does not pass to tvm-ffi code");
        return -1;
    }
  } catch (const std::exception& e) {
    Raise("RuntimeError", self->name + ": " + e.what());
    return -1;
  }
}

void DeletePackedFunctionObject(void* self, int flags) {
  if (flags & HETRT_FFI_DELETE_WEAK) delete static_cast<PackedFunctionObject*>(self);
}

// A packed value as tvm-ffi's Any (arguments only: borrowed).
bool ToAny(const hetrt_value_t& value, int32_t code, hetrt_ffi_any_t& any) {
  std::memset(&any, 0, sizeof(any));
  switch (code) {
    case HETRT_TYPE_INT:
    case HETRT_TYPE_UINT: any.type_index = HETRT_FFI_INT, any.v_int64 = value.v_int64; return true;
    case HETRT_TYPE_FLOAT: any.type_index = HETRT_FFI_FLOAT, any.v_float64 = value.v_float64; return true;
    case HETRT_TYPE_HANDLE: any.type_index = HETRT_FFI_OPAQUE_PTR, any.v_ptr = value.v_handle; return true;
    case HETRT_TYPE_NULL: any.type_index = HETRT_FFI_NONE; return true;
    case HETRT_TYPE_DATATYPE: any.type_index = HETRT_FFI_DATA_TYPE, any.v_dtype = value.v_type; return true;
    case HETRT_TYPE_DEVICE: any.type_index = HETRT_FFI_DEVICE, any.v_device = value.v_device; return true;
    case HETRT_TYPE_DLTENSOR: any.type_index = HETRT_FFI_DLTENSOR_PTR, any.v_ptr = value.v_handle; return true;
    case HETRT_TYPE_STR: any.type_index = HETRT_FFI_RAW_STR, any.v_c_str = value.v_str; return true;
    case HETRT_TYPE_BYTES: any.type_index = HETRT_FFI_BYTE_ARRAY_PTR, any.v_ptr = value.v_handle; return true;
    default: return false;
  }
}

int32_t CallFfiAsPacked(hetrt_value_t* args, int32_t* codes, int32_t num_args, hetrt_value_t* ret, int32_t* ret_code,
                        void* resource) noexcept {
  auto function = reinterpret_cast<hetrt_ffi_safe_call_t>(resource);
  try {
    constexpr int32_t kOnStack = 16;
    hetrt_ffi_any_t stack[kOnStack];
    std::vector<hetrt_ffi_any_t> heap;
    hetrt_ffi_any_t* anys = stack;
    if (num_args > kOnStack) {
      heap.resize(static_cast<size_t>(num_args));
      anys = heap.data();
    }
    for (int32_t i = 0; i < num_args; ++i)
      if (!ToAny(args[i], codes[i], anys[i])) {
        SetLastError(("argument " + std::to_string(i) + " has packed type code " + std::to_string(codes[i]) +
                      ", which hetrt does not pass to tvm-ffi code")
                         .c_str());
        return -1;
      }
    hetrt_ffi_any_t result;
    std::memset(&result, 0, sizeof(result));
    if (function(nullptr, anys, num_args, &result) != 0) {
      if (result.type_index >= HETRT_FFI_STATIC_OBJECT_BEGIN && result.v_obj != nullptr) Shim().dec_ref(result.v_obj);
      const FfiRaised raised = TakeFfiRaised();
      SetLastError((raised.kind + ": " + raised.message).c_str());
      return -1;
    }
    int32_t code = HETRT_TYPE_NULL;
    hetrt_value_t value{};
    switch (result.type_index) {
      case HETRT_FFI_NONE: break;
      case HETRT_FFI_INT:
      case HETRT_FFI_BOOL: code = HETRT_TYPE_INT, value.v_int64 = result.v_int64; break;
      case HETRT_FFI_FLOAT: code = HETRT_TYPE_FLOAT, value.v_float64 = result.v_float64; break;
      case HETRT_FFI_OPAQUE_PTR: code = HETRT_TYPE_HANDLE, value.v_handle = result.v_ptr; break;
      default:
        if (result.type_index >= HETRT_FFI_STATIC_OBJECT_BEGIN && result.v_obj != nullptr)
          Shim().dec_ref(result.v_obj);
        SetLastError(("the function returned tvm-ffi type index " + std::to_string(result.type_index) +
                      ", which a kernel call cannot pass on")
                         .c_str());
        return -1;
    }
    if (ret != nullptr) *ret = value;
    if (ret_code != nullptr) *ret_code = code;
    return 0;
  } catch (const std::exception& e) {
    SetLastError(e.what());
    return -1;
  }
}

}  // namespace

PackedFunc MakePackedFromFfiFunction(hetrt_ffi_safe_call_t function) {
  return {&CallFfiAsPacked, reinterpret_cast<void*>(function)};
}

bool PackedArgToFfiAny(const hetrt_value_t& value, int32_t code, hetrt_ffi_any_t& any) {
  return ToAny(value, code, any);
}

hetrt_ffi_safe_call_t FfiSafeCallOf(const PackedFunc& function) {
  return function.call == &CallFfiAsPacked ? reinterpret_cast<hetrt_ffi_safe_call_t>(function.resource) : nullptr;
}

hetrt_ffi_object_t* MakeFfiFunctionFromPacked(const PackedFunc& function, std::string name) {
  auto* object = new PackedFunctionObject();
  object->cell.header = {0x0000000100000001ull, HETRT_FFI_FUNCTION, 0, DeletePackedFunctionObject};
  object->cell.safe_call = CallPacked;
  object->cell.cpp_call = nullptr;
  object->function = function;
  object->name = std::move(name);
  return &object->cell.header;
}

int InstallTvmFfiPointers(void* dl_handle) {
  struct Slot {
    const char* variable;
    void* implementation;
  };
  const Slot slots[] = {
      {"__TVMFFIFunctionCall", reinterpret_cast<void*>(Shim().function_call)},
      {"__TVMFFIErrorSetRaisedFromCStr", reinterpret_cast<void*>(Shim().set_raised)},
      {"__TVMBackendGetFuncFromEnv", reinterpret_cast<void*>(&LookupFromEnvironment)},
      {"__TVMFFIEnvModLookupFromImports", reinterpret_cast<void*>(&LookupFromEnvironment)},
      {"__TVMFFIHandleInitOnce", reinterpret_cast<void*>(Shim().handle_init_once)},
  };
  int filled = 0;
  for (const Slot& slot : slots)
    if (void** variable = static_cast<void**>(dlsym(dl_handle, slot.variable))) {
      *variable = slot.implementation;
      ++filled;
    }
  return filled + InstallHostServicePointers(dl_handle, &AllocWorkspace, &ParallelLaunch);
}

bool InstallTvmFfiContext(void* dl_handle, FfiFunctionEnvironment* environment) {
  void** ctx = static_cast<void**>(dlsym(dl_handle, "__tvm_ffi__library_ctx"));
  if (ctx == nullptr) return false;
  *ctx = environment;
  return true;
}

}  // namespace hetrt
