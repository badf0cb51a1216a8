/* A kernel library in the shape TVM v0.22+'s LLVM codegen gives a plain TIR
 * module (docs/tvm-ffi.md (b), (d)): __tvm_ffi_<name> functions, NULL context
 * pointers the loader fills (__TVMBackend*, __TVMFFI*), the library context
 * __tvm_ffi__library_ctx, and function handles cached in static slots. Not
 * linked against libtvm_ffi.so: generated code reaches the runtime only
 * through these pointers (and, from v0.24, the undefined
 * TVMFFIErrorSetRaisedFromCStrParts, used here too). */
#include <stdint.h>
#include <string.h>

#include "hetrt/tvm_abi/tvm_ffi_c_abi.h"

#define EXPORT __attribute__((visibility("default")))
#define CONTEXT_POINTER __attribute__((visibility("default"), weak))

CONTEXT_POINTER void* __tvm_ffi__library_ctx = NULL;
#ifdef HETRT_TEST_V021
/* TVM v0.21's transitional ABI named the context with one underscore. */
CONTEXT_POINTER void* __tvm_ffi_library_ctx = NULL;
#endif
CONTEXT_POINTER int (*__TVMFFIFunctionCall)(void*, hetrt_ffi_any_t*, int32_t, hetrt_ffi_any_t*) = NULL;
CONTEXT_POINTER void (*__TVMFFIErrorSetRaisedFromCStr)(const char*, const char*) = NULL;
CONTEXT_POINTER int (*__TVMBackendGetFuncFromEnv)(void*, const char*, void**) = NULL;
CONTEXT_POINTER int (*__TVMFFIEnvModLookupFromImports)(void*, const char*, void**) = NULL;
CONTEXT_POINTER int (*__TVMFFIHandleInitOnce)(void**, int (*)(void**)) = NULL;
CONTEXT_POINTER void* (*__TVMBackendAllocWorkspace)(int, int, uint64_t, int, int) = NULL;
CONTEXT_POINTER int (*__TVMBackendFreeWorkspace)(int, int, void*) = NULL;
CONTEXT_POINTER int (*__TVMBackendParallelLaunch)(int (*)(int, void*, void*), void*, int) = NULL;

static DLTensor* TensorArg(const hetrt_ffi_any_t* arg) {
  if (arg->type_index == HETRT_FFI_DLTENSOR_PTR) return (DLTensor*)arg->v_ptr;
  if (arg->type_index == HETRT_FFI_TENSOR) return &((hetrt_ffi_tensor_object_t*)arg->v_obj)->dl;
  return NULL;
}

/* Argument checks as generated code raises them. */
static int Check(int ok, const char* kind, const char* message) {
  if (ok) return 0;
  __TVMFFIErrorSetRaisedFromCStr(kind, message);
  return -1;
}

/* The lambda of a parallel loop: each task squares its share into a
 * workspace buffer, then copies it out. */
struct SquareClosure {
  const float* in;
  float* out;
  int64_t n;
};

typedef struct {
  void* sync_handle;
  int32_t num_task;
} ParallelEnv;

static int SquareTask(int task_id, void* penv, void* cdata) {
  const ParallelEnv* env = (const ParallelEnv*)penv;
  const struct SquareClosure* c = (const struct SquareClosure*)cdata;
  const int64_t per = (c->n + env->num_task - 1) / env->num_task;
  const int64_t begin = per * task_id;
  const int64_t end = begin + per < c->n ? begin + per : c->n;
  if (begin >= end) return 0;
  float* scratch = (float*)__TVMBackendAllocWorkspace(kDLCPU, 0, (uint64_t)(end - begin) * 4, 2, 32);
  if (scratch == NULL) return -1;
  for (int64_t i = begin; i < end; ++i) scratch[i - begin] = c->in[i] * c->in[i];
  memcpy(c->out + begin, scratch, (size_t)(end - begin) * 4);
  return __TVMBackendFreeWorkspace(kDLCPU, 0, scratch);
}

/* parallel_square(x, y): y = x * x over a parallel launch with workspace. */
EXPORT int __tvm_ffi_parallel_square(void* handle, const hetrt_ffi_any_t* args, int32_t num_args,
                                     hetrt_ffi_any_t* result) {
  (void)handle;
  (void)result;
  if (Check(num_args == 2, "TypeError", "parallel_square: expected 2 arguments")) return -1;
  DLTensor* x = TensorArg(&args[0]);
  DLTensor* y = TensorArg(&args[1]);
  if (Check(x != NULL && y != NULL, "TypeError", "parallel_square: arguments must be tensors")) return -1;
  if (x->ndim != 1) {
    const char* parts[] = {"parallel_square: ", "x.ndim is expected to be 1"};
    TVMFFIErrorSetRaisedFromCStrParts("ValueError", parts, 2);
    return -1;
  }
  struct SquareClosure closure = {(const float*)x->data, (float*)y->data, x->shape[0]};
  return __TVMBackendParallelLaunch(SquareTask, &closure, 0);
}

/* call_global(name, a) -> Int: looks `name` up through the library context
 * (cached in a static slot, as generated code does), calls it with (a, a). */
static void* cached_function = NULL;
EXPORT int __tvm_ffi_call_global(void* handle, const hetrt_ffi_any_t* args, int32_t num_args,
                                 hetrt_ffi_any_t* result) {
  (void)handle;
  if (Check(num_args == 2 && args[0].type_index == HETRT_FFI_RAW_STR && args[1].type_index == HETRT_FFI_INT,
            "TypeError", "call_global(name: str, a: int)"))
    return -1;
  if (cached_function == NULL &&
      __TVMBackendGetFuncFromEnv(__tvm_ffi__library_ctx, args[0].v_c_str, &cached_function) != 0)
    return -1;
  hetrt_ffi_any_t call_args[3];
  memset(call_args, 0, sizeof(call_args));
  call_args[0].type_index = HETRT_FFI_INT;
  call_args[0].v_int64 = args[1].v_int64;
  call_args[1] = call_args[0];
  call_args[2].type_index = HETRT_FFI_NONE; /* the result slot */
  if (__TVMFFIFunctionCall(cached_function, call_args, 2, &call_args[2]) != 0) return -1;
  *result = call_args[2];
  return 0;
}

/* v0.26's thread-safe lookup: the slot filled once by an initializer. */
static void* lookup_slot = NULL;
static const char* lookup_name = NULL;
static int InitLookup(void** out) {
  return __TVMFFIEnvModLookupFromImports(__tvm_ffi__library_ctx, lookup_name, out);
}
EXPORT int __tvm_ffi_lookup_once(void* handle, const hetrt_ffi_any_t* args, int32_t num_args,
                                 hetrt_ffi_any_t* result) {
  (void)handle;
  if (Check(num_args == 1 && args[0].type_index == HETRT_FFI_RAW_STR, "TypeError", "lookup_once(name: str)"))
    return -1;
  lookup_name = args[0].v_c_str;
  if (__TVMFFIHandleInitOnce(&lookup_slot, InitLookup) != 0) return -1;
  memset(result, 0, sizeof(*result));
  result->type_index = HETRT_FFI_BOOL;
  result->v_int64 = lookup_slot != NULL;
  return 0;
}
