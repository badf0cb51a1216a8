/* Host code for a CPU+OpenCL export round trip, written the way TVM's host code
 * reaches device kernels: through the module context and the backend pointer
 * variables the loader fills. out = 2 * in, both OpenCL tensors. */
#include <dlpack/dlpack.h>
#include <stdint.h>

typedef union {
  int64_t v_int64;
  double v_float64;
  void* v_handle;
} value_t;

__attribute__((weak)) void* __tvm_module_ctx = 0;
__attribute__((weak)) int (*__TVMBackendGetFuncFromEnv)(void*, const char*, void**) = 0;
__attribute__((weak)) int (*__TVMFuncCall)(void*, value_t*, int*, int, value_t*, int*) = 0;
__attribute__((weak)) void (*__TVMAPISetLastError)(const char*) = 0;

static void* s_set_device;
static void* s_kernel;

__attribute__((visibility("default"))) int32_t hetrt_test_cl_twice(value_t* args, int32_t* codes, int32_t n,
                                                                   value_t* ret, int32_t* ret_code, void* resource) {
  (void)ret, (void)ret_code, (void)resource;
  if (n != 2 || codes[0] != 7 || codes[1] != 7) {
    if (__TVMAPISetLastError) __TVMAPISetLastError("hetrt_test_cl_twice: expects 2 DLTensors");
    return -1;
  }
  const DLTensor* in = (const DLTensor*)args[0].v_handle;
  DLTensor* out = (DLTensor*)args[1].v_handle;
  if (in->device.device_type != kDLOpenCL) {
    if (__TVMAPISetLastError) __TVMAPISetLastError("hetrt_test_cl_twice: input is not on OpenCL");
    return -1;
  }
  value_t r;
  int rc;
  if (!s_set_device && __TVMBackendGetFuncFromEnv(__tvm_module_ctx, "__tvm_set_device", &s_set_device)) return -1;
  value_t dev[2] = {{.v_int64 = kDLOpenCL}, {.v_int64 = in->device.device_id}};
  int dev_codes[2] = {0, 0};
  if (__TVMFuncCall(s_set_device, dev, dev_codes, 2, &r, &rc)) return -1;
  if (!s_kernel && __TVMBackendGetFuncFromEnv(__tvm_module_ctx, "twice_into", &s_kernel)) return -1;
  int64_t count = 1;
  for (int d = 0; d < out->ndim; ++d) count *= out->shape[d];
  value_t kargs[3] = {{.v_handle = out->data}, {.v_handle = in->data}, {.v_int64 = count}};
  int kcodes[3] = {3, 3, 0};
  return __TVMFuncCall(s_kernel, kargs, kcodes, 3, &r, &rc);
}
