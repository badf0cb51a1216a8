// The functions of hetrt's libtvm_ffi.so the core calls, resolved with dlsym
// when the shim is loaded (LoadTvmFfiShim). Private to core/tvm_abi: the rest
// of the core speaks tvm-ffi through tvm_ffi_values.h and tvm_ffi_context.h.
#pragma once

#include "hetrt/tvm_abi/tvm_ffi_c_abi.h"

namespace hetrt {

struct TvmFfiShim {
  int (*inc_ref)(void*) = nullptr;
  int (*dec_ref)(void*) = nullptr;
  void (*move_from_raised)(void**) = nullptr;
  void (*set_raised)(const char* kind, const char* message) = nullptr;
  int (*function_call)(void*, hetrt_ffi_any_t*, int32_t, hetrt_ffi_any_t*) = nullptr;
  int (*handle_init_once)(void**, int (*)(void**)) = nullptr;
  void (*set_tensor_allocator)(hetrt_ffi_tensor_allocator_t) = nullptr;
  void (*set_stream_provider)(hetrt_ffi_stream_provider_t) = nullptr;
};

// Valid once LoadTvmFfiShim() returned OK.
const TvmFfiShim& Shim();

}  // namespace hetrt
