/* Host code of the template's model, linked into deploy.so by hetrt's
 * exporter: the graph executor calls these packed functions with DLTensors,
 * and the ones on the simulated device launch its kernels the way TVM's host
 * code launches device kernels (__tvm_set_device, then the kernel looked up
 * through the module context, buffers passed as device data pointers). */
#include <dlpack/dlpack.h>
#include <stdint.h>

typedef union {
  int64_t v_int64;
  double v_float64;
  void* v_handle;
} value_t;

/* Filled by hetrt's loader after dlopen (weak: several files may define them). */
#define BACKEND_VAR __attribute__((weak, visibility("default")))
BACKEND_VAR void* __tvm_module_ctx = 0;
BACKEND_VAR void (*__TVMAPISetLastError)(const char*) = 0;
BACKEND_VAR int (*__TVMBackendGetFuncFromEnv)(void*, const char*, void**) = 0;
BACKEND_VAR int (*__TVMFuncCall)(void*, value_t*, int*, int, value_t*, int*) = 0;

#define EXPORT __attribute__((visibility("default")))
#define PACKED(name) \
  EXPORT int32_t name(value_t* args, int32_t* codes, int32_t num_args, value_t* ret, int32_t* ret_code, void* resource)
enum { kHandle = 3, kDLTensorHandle = 7 };

static int fail(const char* message) {
  if (__TVMAPISetLastError) __TVMAPISetLastError(message);
  return -1;
}

static int64_t numel(const DLTensor* t) {
  int64_t n = 1;
  for (int i = 0; i < t->ndim; ++i) n *= t->shape[i];
  return n;
}

static int check(value_t* args, int32_t* codes, int32_t num_args, int expected, int device_type, const char* name) {
  if (num_args != expected) return fail(name);
  for (int i = 0; i < num_args; ++i) {
    const DLTensor* t = (const DLTensor*)args[i].v_handle;
    if (codes[i] != kDLTensorHandle || t == 0 || (int)t->device.device_type != device_type ||
        t->dtype.code != kDLFloat || t->dtype.bits != 32 || numel(t) != numel((const DLTensor*)args[0].v_handle))
      return fail(name);
  }
  return 0;
}

/* Runs device kernel `kernel` with the tensors' data pointers and the count. */
static int launch(const char* kernel, value_t* args, int num_tensors, void** cached) {
  value_t kargs[4], r;
  int kcodes[4], rc;
  void* set_device = 0;
  if (!__TVMBackendGetFuncFromEnv || !__TVMFuncCall) return fail("sim model: library not loaded by hetrt");
  if (__TVMBackendGetFuncFromEnv(__tvm_module_ctx, "__tvm_set_device", &set_device)) return -1;
  const DLTensor* out = (const DLTensor*)args[num_tensors - 1].v_handle;
  value_t dev[2] = {{.v_int64 = out->device.device_type}, {.v_int64 = out->device.device_id}};
  int dev_codes[2] = {0, 0};
  if (__TVMFuncCall(set_device, dev, dev_codes, 2, &r, &rc)) return -1;
  void* fn = __atomic_load_n(cached, __ATOMIC_ACQUIRE);
  if (!fn) {
    if (__TVMBackendGetFuncFromEnv(__tvm_module_ctx, kernel, &fn)) return -1;
    __atomic_store_n(cached, fn, __ATOMIC_RELEASE);
  }
  for (int i = 0; i < num_tensors; ++i) {
    kargs[i].v_handle = ((const DLTensor*)args[i].v_handle)->data;
    kcodes[i] = kHandle;
  }
  kargs[num_tensors].v_int64 = numel(out);
  kcodes[num_tensors] = 0;
  return __TVMFuncCall(fn, kargs, kcodes, num_tensors + 1, &r, &rc);
}

/* On the simulated device (ext_dev = 12): y = a + b, y = relu(x). */
PACKED(sim_model_add) {
  static void* kernel;
  if (check(args, codes, num_args, 3, kDLExtDev, "sim_model_add: expects 3 float32 ext_dev tensors of one size"))
    return -1;
  return launch("sim_add_kernel", args, 3, &kernel);
}

PACKED(sim_model_relu) {
  static void* kernel;
  if (check(args, codes, num_args, 2, kDLExtDev, "sim_model_relu: expects 2 float32 ext_dev tensors of one size"))
    return -1;
  return launch("sim_relu_kernel", args, 2, &kernel);
}

/* On the CPU: y = 2 x. */
PACKED(sim_model_double_on_cpu) {
  if (check(args, codes, num_args, 2, kDLCPU, "sim_model_double_on_cpu: expects 2 float32 CPU tensors of one size"))
    return -1;
  const DLTensor* x = (const DLTensor*)args[0].v_handle;
  const DLTensor* y = (const DLTensor*)args[1].v_handle;
  const float* in = (const float*)((const char*)x->data + x->byte_offset);
  float* out = (float*)((char*)y->data + y->byte_offset);
  for (int64_t i = 0; i < numel(y); ++i) out[i] = 2.0f * in[i];
  return 0;
}
