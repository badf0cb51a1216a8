/* The backend C ABI that TVM-generated C code calls, served from the arena:
 * workspace (LIFO, from the arena's tail), errors, serial parallel launch,
 * packed-function calls and lookups in the system library's function table. */
#include <string.h>

#include "hetrt_crt.h"
#include "tvm/runtime/crt/module.h"

static hetrt_crt_arena_t* g_workspace_arena;

void hetrt_crt_set_workspace_arena(hetrt_crt_arena_t* arena) { g_workspace_arena = arena; }

void TVMAPISetLastError(const char* msg) { hetrt_crt_fail(HETRT_CRT_ERR_KERNEL, "%s", msg ? msg : ""); }

const char* TVMGetLastError(void) { return hetrt_crt_last_error(); }

/* Workspace comes off the arena's tail with a 16-byte header holding its size,
 * so frees (in reverse order, as generated code does) give it back exactly. */
void* TVMBackendAllocWorkspace(int device_type, int device_id, uint64_t nbytes, int dtype_code_hint,
                               int dtype_bits_hint) {
  (void)device_type, (void)device_id, (void)dtype_code_hint, (void)dtype_bits_hint;
  hetrt_crt_arena_t* a = g_workspace_arena;
  const uint64_t rounded = ((nbytes + 15u) & ~(uint64_t)15u) + 16u;
  if (a == NULL || rounded < nbytes || a->head + a->tail + rounded > a->size) {
    hetrt_crt_fail(HETRT_CRT_ERR_NO_MEMORY, "arena full: a workspace of %lu bytes does not fit", (unsigned long)nbytes);
    return NULL;
  }
  a->tail += (size_t)rounded;
  if (a->tail > a->peak_tail) a->peak_tail = a->tail;
  if (a->head + a->tail > a->peak) a->peak = a->head + a->tail;
  uint8_t* block = a->base + a->size - a->tail;
  memcpy(block, &rounded, sizeof rounded);
  return block + 16;
}

int TVMBackendFreeWorkspace(int device_type, int device_id, void* ptr) {
  (void)device_type, (void)device_id;
  hetrt_crt_arena_t* a = g_workspace_arena;
  if (a == NULL || ptr == NULL || (uint8_t*)ptr != a->base + a->size - a->tail + 16) {
    hetrt_crt_fail(HETRT_CRT_ERR_INVALID, "workspace freed out of order");
    return -1;
  }
  uint64_t rounded;
  memcpy(&rounded, (uint8_t*)ptr - 16, sizeof rounded);
  a->tail -= (size_t)rounded;
  return 0;
}

int TVMBackendParallelLaunch(FTVMParallelLambda flambda, void* cdata, int num_task) {
  (void)num_task;
  TVMParallelGroupEnv env = {NULL, 1};
  return flambda(0, &env, cdata);
}

int TVMBackendParallelBarrier(int task_id, TVMParallelGroupEnv* penv) {
  (void)task_id, (void)penv;
  return 0;
}

int TVMBackendRegisterSystemLibSymbol(const char* name, void* ptr) {
  (void)name, (void)ptr;
  return 0;
}

int TVMFuncCall(TVMFunctionHandle func, TVMValue* arg_values, int* type_codes, int num_args, TVMValue* ret_val,
                int* ret_type_code) {
  return ((TVMBackendPackedCFunc)func)(arg_values, type_codes, num_args, ret_val, ret_type_code, NULL);
}

/* Graph models define the table; AOT models do not (they call functions directly). */
extern const TVMModule* TVMSystemLibEntryPoint(void) __attribute__((weak));

/* Looks `name` up in the system library's table (u16 count, NUL-terminated names). */
TVMBackendPackedCFunc hetrt_crt_find_function(const char* name) {
  if (TVMSystemLibEntryPoint == NULL) return NULL;
  const TVMModule* lib = TVMSystemLibEntryPoint();
  if (lib == NULL || lib->registry == NULL) return NULL;
  const char* names = lib->registry->names;
  const unsigned count = (unsigned)(unsigned char)names[0] | ((unsigned)(unsigned char)names[1] << 8);
  const char* p = names + 2;
  for (unsigned i = 0; i < count; ++i) {
    if (strcmp(p, name) == 0) return lib->registry->funcs[i];
    p += strlen(p) + 1;
  }
  return NULL;
}

int TVMBackendGetFuncFromEnv(void* mod_node, const char* func_name, TVMFunctionHandle* out) {
  (void)mod_node;
  TVMBackendPackedCFunc f = hetrt_crt_find_function(func_name);
  if (f == NULL) {
    hetrt_crt_fail(HETRT_CRT_ERR_NOT_FOUND, "function '%s' is not in the system library", func_name);
    return -1;
  }
  *out = (TVMFunctionHandle)f;
  return 0;
}
