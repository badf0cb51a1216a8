/* hetrt's declarations of the system-library function table that TVM's C
 * codegen emits ("tvm/runtime/crt/module.h"): a names blob (u16 little-endian
 * count, then NUL-terminated names) parallel to an array of packed functions. */
#ifndef HETRT_TVM_CRT_MODULE_H_
#define HETRT_TVM_CRT_MODULE_H_

#include "tvm/runtime/c_backend_api.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct TVMFuncRegistry {
  const char* names;
  const TVMBackendPackedCFunc* funcs;
} TVMFuncRegistry;

typedef struct TVMModule {
  const TVMFuncRegistry* registry;
} TVMModule;

const TVMModule* TVMSystemLibEntryPoint(void);

#ifdef __cplusplus
}
#endif
#endif
