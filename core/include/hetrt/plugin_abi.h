/* hetrt plugin ABI, version 1.
 *
 * The only contract between the hetrt core and a device backend. A plugin is a
 * shared object that exports one symbol, HETRT_PLUGIN_ENTRY_SYMBOL, returning a
 * hetrt_plugin_api_t. Everything crosses as plain C: tables that begin with
 * struct_size, errors as values, no C++ types and no exceptions.
 *
 * Versioning: the core refuses a plugin whose abi_major differs from its own and
 * accepts any abi_minor. Minor versions only append fields to the end of a table;
 * a reader checks struct_size (HETRT_STRUCT_HAS) before touching a field that a
 * smaller, older table may lack, and treats a missing function pointer as "not
 * supported".
 */
#ifndef HETRT_PLUGIN_ABI_H_
#define HETRT_PLUGIN_ABI_H_

#include <stddef.h>
#include <stdint.h>

#include <dlpack/dlpack.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HETRT_PLUGIN_ABI_MAJOR 1
#define HETRT_PLUGIN_ABI_MINOR 1
/* Stable across ABI majors so that a mismatch can be detected and reported. */
#define HETRT_PLUGIN_ENTRY_SYMBOL "hetrt_plugin_get_api"

#if defined(_WIN32)
#define HETRT_PLUGIN_EXPORT __declspec(dllexport)
#else
#define HETRT_PLUGIN_EXPORT __attribute__((visibility("default")))
#endif

/* True when a table of `size` bytes is large enough to hold `field`. */
#define HETRT_STRUCT_HAS(table, type, field)          \
  ((table) != NULL && (table)->struct_size >=          \
                          offsetof(type, field) + sizeof(((type*)0)->field))

/* ---------------------------------------------------------------------------
 * Values and packed functions.
 *
 * Deliberately layout-identical to the packed-function convention that TVM
 * compiled code uses (8-byte value union, int32 type codes, the six-argument C
 * signature), so that a kernel handle can be called by generated host code with
 * no translation step on the hot path.
 * ------------------------------------------------------------------------- */
typedef union hetrt_value {
  int64_t v_int64;
  double v_float64;
  void* v_handle;
  const char* v_str;
  DLDataType v_type;
  DLDevice v_device;
} hetrt_value_t;

typedef enum hetrt_type_code {
  HETRT_TYPE_INT = 0,
  HETRT_TYPE_UINT = 1,
  HETRT_TYPE_FLOAT = 2,
  HETRT_TYPE_HANDLE = 3,
  HETRT_TYPE_NULL = 4,
  HETRT_TYPE_DATATYPE = 5,
  HETRT_TYPE_DEVICE = 6,
  HETRT_TYPE_DLTENSOR = 7,
  HETRT_TYPE_STR = 11,
  HETRT_TYPE_BYTES = 12,
} hetrt_type_code_t;

/* Returns 0 on success. On failure returns non-zero after reporting the message
 * through hetrt_host_api_t.set_last_error. */
typedef int32_t (*hetrt_packed_cfunc_t)(hetrt_value_t* args, int32_t* type_codes,
                                        int32_t num_args, hetrt_value_t* ret,
                                        int32_t* ret_type_code, void* resource);

/* A callable: a C function plus the state it was created with. Owned by the
 * module (or plugin) that handed it out; valid until that module is destroyed. */
typedef struct hetrt_packed_func {
  hetrt_packed_cfunc_t call;
  void* resource;
} hetrt_packed_func_t;

/* ---------------------------------------------------------------------------
 * Errors. A plugin function returns NULL on success, or an error object that
 * the plugin owns until the core passes it to hetrt_plugin_api_t.error_destroy.
 * ------------------------------------------------------------------------- */
/* Each plugin defines `struct hetrt_error` (global namespace in C++) as it likes. */
typedef enum hetrt_status_code {
  HETRT_STATUS_OK = 0,
  HETRT_STATUS_INVALID_ARGUMENT = 1,
  HETRT_STATUS_NOT_FOUND = 2,
  HETRT_STATUS_OUT_OF_RANGE = 3,
  HETRT_STATUS_DATA_LOSS = 4,
  HETRT_STATUS_UNIMPLEMENTED = 5,
  HETRT_STATUS_UNAVAILABLE = 6,
  HETRT_STATUS_RESOURCE_EXHAUSTED = 7,
  HETRT_STATUS_FAILED_PRECONDITION = 8,
  HETRT_STATUS_INTERNAL = 9,
} hetrt_status_code_t;

typedef struct hetrt_error hetrt_error_t;

/* ---------------------------------------------------------------------------
 * Services the core offers a plugin, passed to initialize().
 * ------------------------------------------------------------------------- */
typedef enum hetrt_log_level {
  HETRT_LOG_DEBUG = 0,
  HETRT_LOG_INFO = 1,
  HETRT_LOG_WARNING = 2,
  HETRT_LOG_ERROR = 3,
} hetrt_log_level_t;

typedef struct hetrt_host_api {
  size_t struct_size;
  uint16_t abi_major;
  uint16_t abi_minor;
  /* Records the message a failing packed function reports (thread-local). */
  void (*set_last_error)(const char* message);
  void (*log)(hetrt_log_level_t level, const char* plugin_name, const char* message);
} hetrt_host_api_t;

/* ---------------------------------------------------------------------------
 * Device table: memory, copies, streams, events.
 * Device memory is named by the opaque `data` pointer that allocate() returned:
 * that is what lands in DLTensor.data and what kernels receive.
 * ------------------------------------------------------------------------- */
typedef struct hetrt_stream hetrt_stream_t; /* NULL = the device's default stream */
typedef struct hetrt_event hetrt_event_t;

/* Asking for a device type the plugin did not declare is INVALID_ARGUMENT. */
typedef struct hetrt_device_count_args {
  size_t struct_size;
  int32_t device_type;            /* in: a DLDeviceType this plugin declared */
  int32_t count;                  /* out */
  const char* unavailable_reason; /* out: why count is 0 (plugin-owned, static) */
} hetrt_device_count_args_t;

typedef struct hetrt_allocate_args {
  size_t struct_size;
  DLDevice device;
  uint64_t nbytes;
  uint64_t alignment; /* a power of two; plugins may raise it (CPU: to at least 64) */
  void* data;         /* out */
} hetrt_allocate_args_t;

typedef struct hetrt_copy_args {
  size_t struct_size;
  const void* src;
  uint64_t src_offset;
  DLDevice src_device;
  void* dst;
  uint64_t dst_offset;
  DLDevice dst_device;
  uint64_t nbytes;
  hetrt_stream_t* stream;
} hetrt_copy_args_t;

typedef struct hetrt_device_api {
  size_t struct_size;
  hetrt_error_t* (*device_count)(hetrt_device_count_args_t* args);
  /* Human-readable device name, e.g. "Intel Xeon (8 threads)"; truncated to fit. */
  hetrt_error_t* (*device_name)(DLDevice device, char* buffer, size_t buffer_size);
  hetrt_error_t* (*allocate)(hetrt_allocate_args_t* args);
  hetrt_error_t* (*free)(DLDevice device, void* data);
  /* One side is a device of this plugin; the other is the same plugin's device
   * or a CPU device (host memory). Completes before returning when stream is
   * NULL; otherwise ordered on the stream. */
  hetrt_error_t* (*copy)(hetrt_copy_args_t* args);
  hetrt_error_t* (*stream_create)(DLDevice device, hetrt_stream_t** out);
  hetrt_error_t* (*stream_destroy)(DLDevice device, hetrt_stream_t* stream);
  hetrt_error_t* (*synchronize)(DLDevice device, hetrt_stream_t* stream);
  hetrt_error_t* (*event_create)(DLDevice device, hetrt_event_t** out);
  hetrt_error_t* (*event_destroy)(DLDevice device, hetrt_event_t* event);
  hetrt_error_t* (*event_record)(DLDevice device, hetrt_event_t* event, hetrt_stream_t* stream);
  /* Milliseconds between two recorded events (waits for both). */
  hetrt_error_t* (*event_elapsed_ms)(DLDevice device, hetrt_event_t* start,
                                     hetrt_event_t* end, double* out_ms);
  /* Scratch memory for compiled kernels (TVMBackendAllocWorkspace). Hot path:
   * no error object; NULL means failure, reported through set_last_error. */
  void* (*workspace_alloc)(DLDevice device, uint64_t nbytes);
  int32_t (*workspace_free)(DLDevice device, void* data);
  /* v1.1: makes `device` the calling thread's current device of its type, the
   * one kernels launched from this thread run on. The core's global
   * "__tvm_set_device" (called by TVM host code before device kernels)
   * dispatches here by device type. NULL when a plugin has one device only. */
  hetrt_error_t* (*set_device)(DLDevice device);
} hetrt_device_api_t;

/* ---------------------------------------------------------------------------
 * Module table: load the blob of a type_key (from __tvm_dev_mblob), look
 * functions up, save it back (for the exporter).
 * ------------------------------------------------------------------------- */
typedef struct hetrt_plugin_module hetrt_plugin_module_t;

typedef struct hetrt_module_load_args {
  size_t struct_size;
  const char* type_key;
  /* The rest of the blob stream, starting at this module's bytes; borrowed for
   * the duration of the call. The stream has no per-module length, so the
   * loader reports how much it read. */
  const uint8_t* data;
  uint64_t size;
  hetrt_plugin_module_t* module; /* out */
  uint64_t consumed;             /* out: bytes of `data` that belong to this module */
} hetrt_module_load_args_t;

typedef struct hetrt_module_save_args {
  size_t struct_size;
  hetrt_plugin_module_t* module;
  const uint8_t* data; /* out: owned by the module, valid until it is destroyed */
  uint64_t size;       /* out */
} hetrt_module_save_args_t;

typedef struct hetrt_module_api {
  size_t struct_size;
  hetrt_error_t* (*load)(hetrt_module_load_args_t* args);
  /* *found = 0 and NULL returned when the module has no such function. */
  hetrt_error_t* (*get_function)(hetrt_plugin_module_t* module, const char* name,
                                 hetrt_packed_func_t* out, int32_t* found);
  /* Names of the functions the module defines; returns the total count and
   * writes up to `capacity` names (module-owned strings). */
  size_t (*list_functions)(hetrt_plugin_module_t* module, const char** names,
                           size_t capacity);
  hetrt_error_t* (*save)(hetrt_module_save_args_t* args);
  void (*destroy)(hetrt_plugin_module_t* module);
} hetrt_module_api_t;

/* ---------------------------------------------------------------------------
 * Parallel table (host plugins): the task pool behind TVMBackendParallelLaunch.
 * hetrt_parallel_group_env_t matches the layout compiled code expects.
 * ------------------------------------------------------------------------- */
typedef struct hetrt_parallel_group_env {
  void* sync_handle;
  int32_t num_task;
} hetrt_parallel_group_env_t;

typedef int32_t (*hetrt_parallel_lambda_t)(int32_t task_id,
                                           hetrt_parallel_group_env_t* env, void* cdata);

typedef struct hetrt_parallel_api {
  size_t struct_size;
  /* Runs lambda(task_id, env, cdata) for task_id in [0, env->num_task), the
   * calling thread taking part. num_task 0 means one task per pool thread.
   * Returns 0, or non-zero when a task returned non-zero. May be called from
   * several threads at once and from inside a task: a launch that cannot get
   * the pool runs its tasks serially on the caller. */
  int32_t (*launch)(hetrt_parallel_lambda_t lambda, void* cdata, int32_t num_task);
  /* Valid only when every task of the launch has its own thread; otherwise
   * returns non-zero with a message instead of hanging. */
  int32_t (*barrier)(int32_t task_id, hetrt_parallel_group_env_t* env);
  int32_t (*num_threads)(void);
} hetrt_parallel_api_t;

/* ---------------------------------------------------------------------------
 * The plugin table returned by the entry symbol.
 * ------------------------------------------------------------------------- */
typedef struct hetrt_global_function {
  const char* name; /* e.g. "__tvm_set_device" */
  hetrt_packed_func_t func;
} hetrt_global_function_t;

typedef struct hetrt_plugin_api {
  size_t struct_size;
  uint16_t abi_major;
  uint16_t abi_minor;
  const char* name;    /* short, unique: "cpu", "opencl" */
  const char* version; /* the plugin's own version */

  const char* (*error_message)(const hetrt_error_t* error);
  hetrt_status_code_t (*error_code)(const hetrt_error_t* error);
  void (*error_destroy)(hetrt_error_t* error);

  /* Called once before anything else; host stays valid until shutdown. */
  hetrt_error_t* (*initialize)(const hetrt_host_api_t* host);
  void (*shutdown)(void);
  /* Runtime configuration, e.g. ("num_threads", "4"). An unknown key is
   * NOT_FOUND (so an option can be offered to every plugin); a bad value is
   * INVALID_ARGUMENT. */
  hetrt_error_t* (*set_option)(const char* key, const char* value);

  const int32_t* device_types; /* DLDeviceType values served */
  size_t num_device_types;
  const char* const* type_keys; /* module type_keys this plugin loads */
  size_t num_type_keys;
  const hetrt_global_function_t* global_functions;
  size_t num_global_functions;

  const hetrt_device_api_t* device;     /* NULL when num_device_types == 0 */
  const hetrt_module_api_t* module;     /* NULL when num_type_keys == 0 */
  const hetrt_parallel_api_t* parallel; /* NULL unless a host plugin */
} hetrt_plugin_api_t;

typedef const hetrt_plugin_api_t* (*hetrt_plugin_get_api_fn)(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* HETRT_PLUGIN_ABI_H_ */
