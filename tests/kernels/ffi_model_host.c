/* The host library of a model in TVM v0.22+'s shape (docs/tvm-ffi.md (b),
 * (d)): its kernels are __tvm_ffi_<name> safe-call functions that take
 * tensors as DLTensor* (7) or Tensor objects (70), it defines the library
 * context and the context pointers the loader fills, and it raises errors
 * through them. Linked with a devc.c holding __tvm_ffi__library_bin by
 * tests/tvm_ffi_model_test.cc. */
#include <stdint.h>
#include <string.h>

#include "hetrt/tvm_abi/tvm_ffi_c_abi.h"

#define EXPORT __attribute__((visibility("default")))
#define CONTEXT_POINTER __attribute__((visibility("default"), weak))

CONTEXT_POINTER void* __tvm_ffi__library_ctx = NULL;
CONTEXT_POINTER void (*__TVMFFIErrorSetRaisedFromCStr)(const char*, const char*) = NULL;
CONTEXT_POINTER int (*__TVMBackendGetFuncFromEnv)(void*, const char*, void**) = NULL;
CONTEXT_POINTER int (*__TVMFFIFunctionCall)(void*, hetrt_ffi_any_t*, int32_t, hetrt_ffi_any_t*) = NULL;

static DLTensor* TensorArg(const hetrt_ffi_any_t* arg) {
  if (arg->type_index == HETRT_FFI_DLTENSOR_PTR) return (DLTensor*)arg->v_ptr;
  if (arg->type_index == HETRT_FFI_TENSOR) return &((hetrt_ffi_tensor_object_t*)arg->v_obj)->dl;
  return NULL;
}

/* add_bias(x, bias, out): out[i, j] = x[i, j] + bias[j], float32. */
EXPORT int __tvm_ffi_add_bias(void* handle, const hetrt_ffi_any_t* args, int32_t num_args, hetrt_ffi_any_t* result) {
  (void)handle;
  (void)result;
  if (num_args != 3) {
    __TVMFFIErrorSetRaisedFromCStr("TypeError", "add_bias: expected 3 arguments");
    return -1;
  }
  DLTensor* x = TensorArg(&args[0]);
  DLTensor* bias = TensorArg(&args[1]);
  DLTensor* out = TensorArg(&args[2]);
  if (x == NULL || bias == NULL || out == NULL) {
    __TVMFFIErrorSetRaisedFromCStr("TypeError", "add_bias: arguments must be tensors");
    return -1;
  }
  if (x->ndim != 2 || bias->ndim != 1 || x->shape[1] != bias->shape[0]) {
    __TVMFFIErrorSetRaisedFromCStr("ValueError", "add_bias: x must be [n, k] and bias [k]");
    return -1;
  }
  const int64_t n = x->shape[0], k = x->shape[1];
  const float* in = (const float*)x->data;
  const float* b = (const float*)bias->data;
  float* o = (float*)out->data;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < k; ++j) o[i * k + j] = in[i * k + j] + b[j];
  return 0;
}

/* scale_by(x, out, name): out = x * (the Int the global function `name`
 * returns for (2, 3)): a lookup through the library context and a call
 * through __TVMFFIFunctionCall, as host code reaches externs. */
static void* scale_function = NULL;
EXPORT int __tvm_ffi_scale_by_global(void* handle, const hetrt_ffi_any_t* args, int32_t num_args,
                                     hetrt_ffi_any_t* result) {
  (void)handle;
  (void)result;
  if (num_args != 3 || args[2].type_index != HETRT_FFI_RAW_STR) {
    __TVMFFIErrorSetRaisedFromCStr("TypeError", "scale_by_global(x, out, name: str)");
    return -1;
  }
  if (scale_function == NULL && __TVMBackendGetFuncFromEnv(__tvm_ffi__library_ctx, args[2].v_c_str, &scale_function))
    return -1;
  hetrt_ffi_any_t call[3];
  memset(call, 0, sizeof(call));
  call[0].type_index = HETRT_FFI_INT;
  call[0].v_int64 = 2;
  call[1].type_index = HETRT_FFI_INT;
  call[1].v_int64 = 3;
  if (__TVMFFIFunctionCall(scale_function, call, 2, &call[2]) != 0) return -1;
  DLTensor* x = TensorArg(&args[0]);
  DLTensor* out = TensorArg(&args[1]);
  int64_t count = 1;
  for (int d = 0; d < x->ndim; ++d) count *= x->shape[d];
  for (int64_t i = 0; i < count; ++i) ((float*)out->data)[i] = ((const float*)x->data)[i] * (float)call[2].v_int64;
  return 0;
}

/* add_on_device(a, b, c): c = a + b on the tensors' device, as v0.22+ host
 * code launches a device kernel: __tvm_set_device and the kernel are looked
 * up through the library context (cached in static slots) and called through
 * __TVMFFIFunctionCall with the buffers' data as OpaquePtr and one Int per
 * launch tag (blockIdx.x, threadIdx.x). */
/* Three 1-d tensors (a, b, c); otherwise -1 with `error` raised as a ValueError. */
static int ThreeVectors(const hetrt_ffi_any_t* args, int32_t num_args, const char* error, DLTensor** abc) {
  for (int i = 0; i < 3; ++i) abc[i] = num_args == 3 ? TensorArg(&args[i]) : NULL;
  if (abc[0] && abc[1] && abc[2] && abc[0]->ndim == 1) return 0;
  __TVMFFIErrorSetRaisedFromCStr("ValueError", error);
  return -1;
}

/* __tvm_set_device(device), looked up once into `slot`. */
static int SetDevice(void** slot, DLDevice device) {
  if (*slot == NULL && __TVMBackendGetFuncFromEnv(__tvm_ffi__library_ctx, "__tvm_set_device", slot)) return -1;
  hetrt_ffi_any_t call[3];
  memset(call, 0, sizeof(call));
  call[0].type_index = HETRT_FFI_INT;
  call[0].v_int64 = device.device_type;
  call[1].type_index = HETRT_FFI_INT;
  call[1].v_int64 = device.device_id;
  return __TVMFFIFunctionCall(*slot, call, 2, &call[2]);
}

/* Calls the device kernel `name` (looked up once into `slot`) with the data of
 * `buffers`, then `ints`, then blockIdx.x = n and threadIdx.x = 1. */
static int Launch(void** slot, const char* name, DLTensor** buffers, int num_buffers, const int64_t* ints,
                  int num_ints, int64_t n) {
  if (*slot == NULL && __TVMBackendGetFuncFromEnv(__tvm_ffi__library_ctx, name, slot)) return -1;
  hetrt_ffi_any_t call[9];
  memset(call, 0, sizeof(call));
  int k = 0;
  for (int i = 0; i < num_buffers; ++i, ++k) {
    call[k].type_index = HETRT_FFI_OPAQUE_PTR;
    call[k].v_ptr = buffers[i]->data;
  }
  for (int i = 0; i < num_ints; ++i, ++k) {
    call[k].type_index = HETRT_FFI_INT;
    call[k].v_int64 = ints[i];
  }
  call[k].type_index = HETRT_FFI_INT; /* blockIdx.x */
  call[k++].v_int64 = n;
  call[k].type_index = HETRT_FFI_INT; /* threadIdx.x */
  call[k++].v_int64 = 1;
  return __TVMFFIFunctionCall(*slot, call, k, &call[k]);
}

static void* set_device = NULL;
static void* add_kernel = NULL;
EXPORT int __tvm_ffi_add_on_device(void* handle, const hetrt_ffi_any_t* args, int32_t num_args,
                                   hetrt_ffi_any_t* result) {
  (void)handle;
  (void)result;
  DLTensor* abc[3];
  if (ThreeVectors(args, num_args, "add_on_device: three 1-d tensors expected", abc) != 0) return -1;
  if (SetDevice(&set_device, abc[2]->device) != 0) return -1;
  DLTensor* buffers[3] = {abc[2], abc[0], abc[1]}; /* add_kernel(c, a, b) */
  return Launch(&add_kernel, "add_kernel", buffers, 3, NULL, 0, abc[0]->shape[0]);
}

/* add_with_kernel_set(a, b, c): c = a + b through hetrt's kernel set
 * (kernels/kernel_set.h), whose device module of the tensors' device is an
 * import: hetrt_<cl_|cu_>add_kernel(a, b, c, n), one thread per element.
 * The device payload reaches the plugin in v0.22's form (arg_extra_tags). */
static void* kernel_set_add[2] = {NULL, NULL}; /* OpenCL, CUDA */
EXPORT int __tvm_ffi_add_with_kernel_set(void* handle, const hetrt_ffi_any_t* args, int32_t num_args,
                                         hetrt_ffi_any_t* result) {
  (void)handle;
  (void)result;
  DLTensor* abc[3];
  if (ThreeVectors(args, num_args, "add_with_kernel_set: three 1-d tensors expected", abc) != 0) return -1;
  const int on_cuda = abc[2]->device.device_type == kDLCUDA;
  if (!on_cuda && abc[2]->device.device_type != kDLOpenCL) {
    __TVMFFIErrorSetRaisedFromCStr("ValueError", "add_with_kernel_set: OpenCL or CUDA tensors expected");
    return -1;
  }
  if (SetDevice(&set_device, abc[2]->device) != 0) return -1;
  const int64_t n = abc[0]->shape[0];
  return Launch(&kernel_set_add[on_cuda], on_cuda ? "hetrt_cu_add_kernel" : "hetrt_cl_add_kernel", abc, 3, &n, 1, n);
}
