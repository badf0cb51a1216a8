/* Host code shaped like TVM v0.18's output for a model built with --system-lib
 * and linked into a program: the packed functions call the runtime's C
 * functions directly (no __TVM* pointer variables for a loader to fill), find
 * device kernels through __tvm_module_ctx and cache the handles in static
 * variables, and a static constructor registers every function and
 * __tvm_module_ctx with TVMBackendRegisterSystemLibSymbol before main(). The
 * OpenCL kernel comes from the blob of the system-lib devc.c that the build
 * generates with hetrt's exporter (make_devc.cc).
 *   syslib_cl_twice(x, y):     y = 2 * x on OpenCL (kernel twice_into)
 *   syslib_add_f32(a, b, out): out = a + b on the CPU, through a workspace */
#include <dlpack/dlpack.h>
#include <stdint.h>
#include <string.h>

typedef union {
  int64_t v_int64;
  double v_float64;
  void* v_handle;
} TVMValue;

int TVMBackendRegisterSystemLibSymbol(const char* name, void* ptr);
int TVMBackendGetFuncFromEnv(void* mod_node, const char* func_name, void** out);
int TVMFuncCall(void* func, TVMValue* args, int* type_codes, int num_args, TVMValue* ret, int* ret_type_code);
void TVMAPISetLastError(const char* message);
void* TVMBackendAllocWorkspace(int device_type, int device_id, uint64_t nbytes, int dtype_code_hint,
                               int dtype_bits_hint);
int TVMBackendFreeWorkspace(int device_type, int device_id, void* ptr);

enum { kArgInt = 0, kArgHandle = 3, kArgTensor = 7 };

static void* __tvm_module_ctx;
static void* s_set_device;
static void* s_twice_into;

static int fail(const char* message) {
  TVMAPISetLastError(message);
  return -1;
}

static int64_t element_count(const DLTensor* t) {
  int64_t count = 1;
  for (int d = 0; d < t->ndim; ++d) count *= t->shape[d];
  return count;
}

int32_t syslib_cl_twice(TVMValue* args, int32_t* codes, int32_t n, TVMValue* ret, int32_t* ret_code, void* resource) {
  (void)ret, (void)ret_code, (void)resource;
  if (n != 2 || codes[0] != kArgTensor || codes[1] != kArgTensor) return fail("syslib_cl_twice: expects 2 DLTensors");
  const DLTensor* in = (const DLTensor*)args[0].v_handle;
  DLTensor* out = (DLTensor*)args[1].v_handle;
  if (in->device.device_type != kDLOpenCL) return fail("syslib_cl_twice: the input is not on OpenCL");
  TVMValue r;
  int rc;
  if (!s_set_device && TVMBackendGetFuncFromEnv(__tvm_module_ctx, "__tvm_set_device", &s_set_device)) return -1;
  TVMValue device[2] = {{.v_int64 = kDLOpenCL}, {.v_int64 = in->device.device_id}};
  int device_codes[2] = {kArgInt, kArgInt};
  if (TVMFuncCall(s_set_device, device, device_codes, 2, &r, &rc)) return -1;
  if (!s_twice_into && TVMBackendGetFuncFromEnv(__tvm_module_ctx, "twice_into", &s_twice_into)) return -1;
  TVMValue kernel_args[3] = {{.v_handle = out->data}, {.v_handle = in->data}, {.v_int64 = element_count(out)}};
  int kernel_codes[3] = {kArgHandle, kArgHandle, kArgInt};
  return TVMFuncCall(s_twice_into, kernel_args, kernel_codes, 3, &r, &rc);
}

int32_t syslib_add_f32(TVMValue* args, int32_t* codes, int32_t n, TVMValue* ret, int32_t* ret_code, void* resource) {
  (void)ret, (void)ret_code, (void)resource;
  if (n != 3) return fail("syslib_add_f32: expects 3 arguments");
  for (int i = 0; i < 3; ++i)
    if (codes[i] != kArgTensor || args[i].v_handle == 0) return fail("syslib_add_f32: arguments must be DLTensors");
  const DLTensor* a = (const DLTensor*)args[0].v_handle;
  const DLTensor* b = (const DLTensor*)args[1].v_handle;
  DLTensor* out = (DLTensor*)args[2].v_handle;
  const int64_t count = element_count(out);
  float* sum = (float*)TVMBackendAllocWorkspace(kDLCPU, 0, (uint64_t)count * sizeof(float), kDLFloat, 32);
  if (sum == 0) return -1;
  for (int64_t i = 0; i < count; ++i) sum[i] = ((const float*)a->data)[i] + ((const float*)b->data)[i];
  memcpy(out->data, sum, (size_t)count * sizeof(float));
  return TVMBackendFreeWorkspace(kDLCPU, 0, sum);
}

__attribute__((constructor)) static void syslib_register_symbols(void) {
  TVMBackendRegisterSystemLibSymbol("syslib_cl_twice", (void*)&syslib_cl_twice);
  TVMBackendRegisterSystemLibSymbol("syslib_add_f32", (void*)&syslib_add_f32);
  TVMBackendRegisterSystemLibSymbol("__tvm_module_ctx", (void*)&__tvm_module_ctx);
}
