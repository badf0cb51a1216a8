/* What hetrt's own kernels need of the packed-function ABI that TVM-compiled
 * code uses: the value union, and the backend pointer variables the loader
 * fills after dlopen (weak, so that several files may declare them). */
#ifndef HETRT_KERNEL_ABI_H_
#define HETRT_KERNEL_ABI_H_

#include <dlpack/dlpack.h>
#include <stdint.h>

typedef union {
  int64_t v_int64;
  double v_float64;
  void* v_handle;
} hk_value_t;

typedef struct {
  void* sync_handle;
  int32_t num_task;
} hk_parallel_env_t;

typedef int (*hk_parallel_lambda_t)(int task_id, hk_parallel_env_t* env, void* cdata);

extern void* __tvm_module_ctx;
extern void (*__TVMAPISetLastError)(const char*);
extern int (*__TVMBackendGetFuncFromEnv)(void*, const char*, void**);
extern int (*__TVMFuncCall)(void*, hk_value_t*, int*, int, hk_value_t*, int*);
extern int (*__TVMBackendParallelLaunch)(hk_parallel_lambda_t, void*, int);

#define HK_EXPORT __attribute__((visibility("default")))
#define HK_KERNEL(name) \
  HK_EXPORT int32_t name(hk_value_t* args, int32_t* codes, int32_t num_args, hk_value_t* ret, int32_t* ret_code, void* resource)

/* Returns -1 after reporting `message` (prefixed with the kernel name). */
int hk_fail(const char* kernel, const char* message);
/* Checks num_args and that every argument is a float32 DLTensor on `device_type`. */
int hk_check_tensors(const char* kernel, hk_value_t* args, int32_t* codes, int32_t num_args, int expected,
                     int device_type);
int64_t hk_numel(const DLTensor* t);

#endif
