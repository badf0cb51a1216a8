/* hetrt plugin ABI, version 2 (2.1: module.sample, whole_model; 2.2: whole_model.sample;
 * 2.3: memory_stats.failed_frees; 2.4: stream_get_current.native_stream;
 * 2.5: HETRT_DEVICE_ATTR_MAX_ALIGNMENT).
 *
 * The only contract between the hetrt core and a device backend. A plugin is a
 * shared object that exports one symbol, HETRT_PLUGIN_ENTRY_SYMBOL, returning a
 * hetrt_plugin_api_t: a static table of function pointers and declarations.
 * The core then creates one *instance* of the plugin per registry
 * (instance_create) and passes it as `self` to every call, so two registries
 * hold two independent instances of one shared object.
 *
 * Rules (docs/plugin-abi.md has the full text):
 * - Enumerations cross as int32_t fields (their C enum types only name the
 *   values): a newer minor may send a value an older plugin does not know.
 * - Every call takes exactly one args struct that starts with struct_size and
 *   extension_start (HETRT_ARGS_HEADER). The caller zero-initialises the struct
 *   and sets struct_size = sizeof(its version of the struct); a plugin reads a
 *   field only when HETRT_ARGS_HAS says the caller's struct holds it.
 *   Packed functions (kernels) keep TVM's six-argument C convention instead:
 *   compiled code calls them directly.
 * - Every call returns NULL on success or an error the plugin owns until the
 *   core passes it to error_destroy. No C++ exception ever crosses the boundary.
 * - Versioning: the core refuses a plugin whose abi_major differs from its own
 *   and accepts any abi_minor. A minor version only appends fields to the end
 *   of a table or an args struct, and adds extension types; a NULL function
 *   pointer means "not supported".
 */
#ifndef HETRT_PLUGIN_ABI_H_
#define HETRT_PLUGIN_ABI_H_

#include <stddef.h>
#include <stdint.h>

#include <dlpack/dlpack.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HETRT_PLUGIN_ABI_MAJOR 2
#define HETRT_PLUGIN_ABI_MINOR 5
/* Stable across ABI majors so that a mismatch can be detected and reported:
 * every major starts its table with struct_size, abi_major, abi_minor. */
#define HETRT_PLUGIN_ENTRY_SYMBOL "hetrt_plugin_get_api"

#if defined(_WIN32)
#define HETRT_PLUGIN_EXPORT __declspec(dllexport)
#else
#define HETRT_PLUGIN_EXPORT __attribute__((visibility("default")))
#endif

/* True when a table or args struct is large enough to hold `field`. */
#define HETRT_STRUCT_HAS(ptr, type, field) \
  ((ptr) != NULL && (ptr)->struct_size >= offsetof(type, field) + sizeof(((type*)0)->field))
#define HETRT_ARGS_HAS(args, type, field) HETRT_STRUCT_HAS(args, type, field)

/* The size an args struct had in the minor that introduced it, up to and
 * including `last_field` (its last field then): the smallest struct_size a
 * callee accepts, since an older caller sends exactly that. Every args struct
 * below is followed by its line, with the minor that introduced it (PJRT's
 * PJRT_DEFINE_STRUCT_TRAITS pattern). When a minor appends a field, the line
 * keeps naming the field that ended the struct before, and the new field is
 * read only where HETRT_ARGS_HAS says the caller's struct holds it.
 * Defines <type>_MIN_SIZE, a constant expression in C and C++. */
#define HETRT_DEFINE_ARGS_MIN_SIZE(type, last_field) \
  enum { type##_MIN_SIZE = offsetof(type, last_field) + sizeof(((type*)0)->last_field) }

/* ---------------------------------------------------------------------------
 * Extensions: a singly linked chain of structs that start with this header,
 * hung off any args struct (PJRT's PJRT_Extension_Base). A callee skips types
 * it does not know. Types below 0x10000 are hetrt's; plugins may define their
 * own private types above it.
 * ------------------------------------------------------------------------- */
typedef struct hetrt_extension_base {
  size_t struct_size;
  int32_t type;
  struct hetrt_extension_base* next;
} hetrt_extension_base_t;

#define HETRT_ARGS_HEADER \
  size_t struct_size;     \
  hetrt_extension_base_t* extension_start

/* ---------------------------------------------------------------------------
 * Values and packed functions.
 *
 * Layout-identical to the packed-function convention TVM-compiled code uses
 * (8-byte value union, int32 type codes, the six-argument C signature), so a
 * kernel handle is called by generated host code with no translation step.
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
typedef int32_t (*hetrt_packed_cfunc_t)(hetrt_value_t* args, int32_t* type_codes, int32_t num_args, hetrt_value_t* ret,
                                        int32_t* ret_type_code, void* resource);

/* A callable: a C function plus the state it was created with. Owned by the
 * module or instance that handed it out; valid until that one is destroyed. */
typedef struct hetrt_packed_func {
  hetrt_packed_cfunc_t call;
  void* resource;
} hetrt_packed_func_t;

/* ---------------------------------------------------------------------------
 * Errors: plugin-owned values. Each plugin defines `struct hetrt_error` as it
 * likes (global namespace in C++).
 * ------------------------------------------------------------------------- */
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

typedef struct hetrt_error_message_args {
  HETRT_ARGS_HEADER;
  const hetrt_error_t* error;
  const char* message; /* out: owned by the error, NUL-terminated, never NULL */
  int32_t code;        /* out: a hetrt_status_code_t */
} hetrt_error_message_args_t;
HETRT_DEFINE_ARGS_MIN_SIZE(hetrt_error_message_args_t, code); /* 2.0 */

typedef struct hetrt_error_destroy_args {
  HETRT_ARGS_HEADER;
  hetrt_error_t* error;
} hetrt_error_destroy_args_t;
HETRT_DEFINE_ARGS_MIN_SIZE(hetrt_error_destroy_args_t, error); /* 2.0 */

/* ---------------------------------------------------------------------------
 * Opaque handles, all owned by the plugin instance that created them.
 * ------------------------------------------------------------------------- */
typedef struct hetrt_instance hetrt_instance_t;
typedef struct hetrt_stream hetrt_stream_t; /* NULL = the device's default stream */
typedef struct hetrt_event hetrt_event_t;
typedef struct hetrt_plugin_module hetrt_plugin_module_t;

/* ---------------------------------------------------------------------------
 * Services the core lends an instance (valid until instance_destroy returns).
 * Core-side callbacks cannot fail and may be called from any thread.
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
 * Instance lifecycle and options.
 * ------------------------------------------------------------------------- */
typedef struct hetrt_option {
  const char* key;
  const char* value;
} hetrt_option_t;

typedef struct hetrt_instance_create_args {
  HETRT_ARGS_HEADER;
  const hetrt_host_api_t* host;
  const hetrt_option_t* options; /* applied as by set_option; may be NULL */
  size_t num_options;
  hetrt_instance_t* instance; /* out */
} hetrt_instance_create_args_t;
HETRT_DEFINE_ARGS_MIN_SIZE(hetrt_instance_create_args_t, instance); /* 2.0 */

/* Releases everything the instance created (devices, contexts, queues, thread
 * pools). Modules, streams, events and memory of the instance must already be
 * destroyed or freed; a plugin may reclaim what is left. */
typedef struct hetrt_instance_destroy_args {
  HETRT_ARGS_HEADER;
  hetrt_instance_t* self;
} hetrt_instance_destroy_args_t;
HETRT_DEFINE_ARGS_MIN_SIZE(hetrt_instance_destroy_args_t, self); /* 2.0 */

/* An unknown key is NOT_FOUND (so an option can be offered to every plugin);
 * a bad value is INVALID_ARGUMENT. */
typedef struct hetrt_set_option_args {
  HETRT_ARGS_HEADER;
  hetrt_instance_t* self;
  const char* key;
  const char* value;
} hetrt_set_option_args_t;
HETRT_DEFINE_ARGS_MIN_SIZE(hetrt_set_option_args_t, value); /* 2.0 */

/* Global packed functions the instance offers, e.g. for host code that looks
 * a name up with TVMBackendGetFuncFromEnv. The array is instance-owned. */
typedef struct hetrt_global_function {
  const char* name;
  hetrt_packed_func_t func;
} hetrt_global_function_t;

typedef struct hetrt_global_functions_args {
  HETRT_ARGS_HEADER;
  hetrt_instance_t* self;
  const hetrt_global_function_t* functions; /* out */
  size_t num_functions;                     /* out */
} hetrt_global_functions_args_t;
HETRT_DEFINE_ARGS_MIN_SIZE(hetrt_global_functions_args_t, num_functions); /* 2.0 */

/* ---------------------------------------------------------------------------
 * Device table: devices, memory, copies, streams, events, clocks.
 *
 * Device memory is named by the opaque `data` pointer allocate() returned:
 * that is what lands in DLTensor.data and what kernels receive. Streams are
 * in-order queues of one device; events mark a point in a stream.
 * Threading: every call may come from any thread; the plugin serialises what
 * its driver needs serialised. A stream is used by one thread at a time.
 * ------------------------------------------------------------------------- */

/* Asking for a device type the plugin did not declare is INVALID_ARGUMENT. */
typedef struct hetrt_device_count_args {
  HETRT_ARGS_HEADER;
  hetrt_instance_t* self;
  int32_t device_type;            /* in: a DLDeviceType this plugin declared */
  int32_t count;                  /* out */
  const char* unavailable_reason; /* out: why count is 0 (instance-owned) */
} hetrt_device_count_args_t;
HETRT_DEFINE_ARGS_MIN_SIZE(hetrt_device_count_args_t, unavailable_reason); /* 2.0 */

/* Device attributes (TVM's DeviceAttrKind, IREE's query_i64). Integer
 * attributes fill `value`, string ones `string` (instance-owned). A plugin
 * that does not know an attribute for a device returns NOT_FOUND. */
typedef enum hetrt_device_attribute {
  HETRT_DEVICE_ATTR_NAME = 0,                /* string, e.g. "NVIDIA H100 80GB HBM3" */
  HETRT_DEVICE_ATTR_DRIVER_VERSION = 1,      /* string */
  HETRT_DEVICE_ATTR_HOST_UNIFIED_MEMORY = 2, /* 1: device memory *is* host memory */
  HETRT_DEVICE_ATTR_TOTAL_MEMORY = 3,        /* bytes */
  HETRT_DEVICE_ATTR_MAX_THREADS_PER_BLOCK = 4,
  HETRT_DEVICE_ATTR_WARP_SIZE = 5,
  HETRT_DEVICE_ATTR_MAX_SHARED_MEMORY_PER_BLOCK = 6, /* bytes */
  HETRT_DEVICE_ATTR_COMPUTE_VERSION = 7,             /* string, e.g. "9.0" */
  HETRT_DEVICE_ATTR_MULTIPROCESSOR_COUNT = 8,
  HETRT_DEVICE_ATTR_MAX_CLOCK_RATE_KHZ = 9,
  HETRT_DEVICE_ATTR_COPY_STREAMS = 10, /* 1: separate copy streams overlap compute */
  /* 2.5, bytes: the largest alignment that `allocate` honours for every
   * memory kind of the device (a larger one may be refused). */
  HETRT_DEVICE_ATTR_MAX_ALIGNMENT = 11,
} hetrt_device_attribute_t;

typedef struct hetrt_device_attribute_args {
  HETRT_ARGS_HEADER;
  hetrt_instance_t* self;
  DLDevice device;
  int32_t attribute; /* a hetrt_device_attribute_t; newer minors add values */
  int64_t value;     /* out: integer attributes */
  /* out: string attributes, instance-owned, valid until the next set_option
   * or instance_destroy */
  const char* string;
} hetrt_device_attribute_args_t;
HETRT_DEFINE_ARGS_MIN_SIZE(hetrt_device_attribute_args_t, string); /* 2.0 */

typedef struct hetrt_memory_stats_args {
  HETRT_ARGS_HEADER;
  hetrt_instance_t* self;
  DLDevice device;
  uint64_t bytes_in_use;      /* out: bytes requested by live allocate()s, this instance */
  uint64_t peak_bytes_in_use; /* out */
  uint64_t bytes_limit;       /* out: 0 when unknown */
  uint64_t num_allocations;   /* out: live allocations */
  /* ABI 2.3. out: free calls naming this device that returned an error, this
   * instance. The core presets HETRT_STAT_NOT_REPORTED; a plugin that does not
   * count (an older one, or one that chooses not to) leaves it. */
  uint64_t failed_frees;
} hetrt_memory_stats_args_t;
HETRT_DEFINE_ARGS_MIN_SIZE(hetrt_memory_stats_args_t, num_allocations); /* 2.0; 2.3 appended failed_frees */

/* A statistic the plugin did not report (see failed_frees). */
#define HETRT_STAT_NOT_REPORTED UINT64_MAX

typedef enum hetrt_memory_kind {
  /* Device-local memory; `data` is only meaningful to this plugin. */
  HETRT_MEMORY_DEVICE = 0,
  /* Device memory the host can address too: host_pointer is filled, and host
   * reads/writes through it are coherent with the device at event boundaries
   * (after event_synchronize of the last device work, before the next device
   * work is enqueued). Refused (UNIMPLEMENTED) when the device cannot. */
  HETRT_MEMORY_HOST_VISIBLE = 1,
  /* Page-locked host memory for fast asynchronous copies; `data` and
   * host_pointer are the same host address, usable as a CPU tensor. */
  HETRT_MEMORY_HOST_PINNED = 2,
} hetrt_memory_kind_t;

typedef struct hetrt_allocate_args {
  HETRT_ARGS_HEADER;
  hetrt_instance_t* self;
  DLDevice device;
  uint64_t nbytes;    /* 0 is valid and yields a distinct, freeable handle */
  uint64_t alignment; /* a power of two; plugins may raise it (CPU: to at least 64) */
  int32_t kind;       /* a hetrt_memory_kind_t */
  void* data;         /* out */
  void* host_pointer; /* out: the host address of the bytes, or NULL */
} hetrt_allocate_args_t;
HETRT_DEFINE_ARGS_MIN_SIZE(hetrt_allocate_args_t, host_pointer); /* 2.0 */

/* free of NULL data does nothing (as free(3)); a device the instance does not
 * have is INVALID_ARGUMENT or NOT_FOUND, whatever the data. */
typedef struct hetrt_free_args {
  HETRT_ARGS_HEADER;
  hetrt_instance_t* self;
  DLDevice device;
  void* data;
  int32_t kind; /* as allocated */
} hetrt_free_args_t;
HETRT_DEFINE_ARGS_MIN_SIZE(hetrt_free_args_t, kind); /* 2.0 */

/* Whether copy() can move bytes from src_device to dst_device directly. A
 * plugin answers for pairs where at least one side is its own device; the
 * core routes other pairs through host staging. */
typedef struct hetrt_can_copy_args {
  HETRT_ARGS_HEADER;
  hetrt_instance_t* self;
  DLDevice src_device;
  DLDevice dst_device;
  int32_t can_copy; /* out: 1 or 0 */
} hetrt_can_copy_args_t;
HETRT_DEFINE_ARGS_MIN_SIZE(hetrt_can_copy_args_t, can_copy); /* 2.0 */

typedef enum hetrt_copy_flags {
  /* Return only once the bytes have arrived (and the stream's earlier work is
   * done). Without it the copy is ordered on `stream` and host memory it
   * reads or writes must stay valid and untouched until the stream passes it. */
  HETRT_COPY_BLOCKING = 1,
} hetrt_copy_flags_t;

typedef struct hetrt_copy_args {
  HETRT_ARGS_HEADER;
  hetrt_instance_t* self;
  const void* src;
  uint64_t src_offset;
  DLDevice src_device;
  void* dst;
  uint64_t dst_offset;
  DLDevice dst_device;
  uint64_t nbytes;
  /* A stream of the plugin's device side (src's when both are its own); NULL:
   * that device's default stream. */
  hetrt_stream_t* stream;
  uint32_t flags; /* hetrt_copy_flags_t */
} hetrt_copy_args_t;
HETRT_DEFINE_ARGS_MIN_SIZE(hetrt_copy_args_t, flags); /* 2.0 */

typedef enum hetrt_stream_kind {
  HETRT_STREAM_COMPUTE = 0,
  HETRT_STREAM_COPY = 1, /* a hint: the plugin may give it a copy engine */
} hetrt_stream_kind_t;

typedef struct hetrt_stream_create_args {
  HETRT_ARGS_HEADER;
  hetrt_instance_t* self;
  DLDevice device;
  int32_t kind;           /* a hetrt_stream_kind_t */
  hetrt_stream_t* stream; /* out */
} hetrt_stream_create_args_t;
HETRT_DEFINE_ARGS_MIN_SIZE(hetrt_stream_create_args_t, stream); /* 2.0 */

/* stream_destroy, stream_synchronize (host blocks until the stream's work is
 * done; returns the first error of that work). */
typedef struct hetrt_stream_args {
  HETRT_ARGS_HEADER;
  hetrt_instance_t* self;
  DLDevice device;
  hetrt_stream_t* stream;
} hetrt_stream_args_t;
HETRT_DEFINE_ARGS_MIN_SIZE(hetrt_stream_args_t, stream); /* 2.0 */

/* Work enqueued on `stream` after this call starts only after `event`'s work
 * completed. The event comes from the same instance (any device of it; a
 * plugin that cannot wait across its devices returns UNIMPLEMENTED). An event
 * never recorded is complete. The host does not block. */
typedef struct hetrt_stream_wait_event_args {
  HETRT_ARGS_HEADER;
  hetrt_instance_t* self;
  DLDevice device;
  hetrt_stream_t* stream;
  hetrt_event_t* event;
} hetrt_stream_wait_event_args_t;
HETRT_DEFINE_ARGS_MIN_SIZE(hetrt_stream_wait_event_args_t, event); /* 2.0 */

/* The calling thread's current stream for `device` (TVM's TVMSetStream):
 * kernels that packed functions of this instance launch from this thread on
 * that device go there. Initially NULL (the default stream). A stream must not
 * be destroyed while it is current on any thread. */
typedef struct hetrt_stream_current_args {
  HETRT_ARGS_HEADER;
  hetrt_instance_t* self;
  DLDevice device;
  hetrt_stream_t* stream;   /* in for set; out for get */
  hetrt_stream_t* previous; /* out for set */
  /* ABI 2.4, out for get: the native queue the current stream submits to (a
   * CUstream, a cl_command_queue), for code that launches work itself
   * (tvm-ffi's TVMFFIEnvGetStream); NULL where the device has none. */
  void* native_stream;
} hetrt_stream_current_args_t;
HETRT_DEFINE_ARGS_MIN_SIZE(hetrt_stream_current_args_t, previous); /* 2.0; 2.4 appended native_stream */

typedef enum hetrt_event_flags {
  HETRT_EVENT_TIMING = 1, /* event_timestamp / event_elapsed_ms will be asked */
} hetrt_event_flags_t;

typedef struct hetrt_event_create_args {
  HETRT_ARGS_HEADER;
  hetrt_instance_t* self;
  DLDevice device;
  uint32_t flags;       /* hetrt_event_flags_t */
  hetrt_event_t* event; /* out */
} hetrt_event_create_args_t;
HETRT_DEFINE_ARGS_MIN_SIZE(hetrt_event_create_args_t, event); /* 2.0 */

/* Records `event` at the current end of `stream`; re-recording replaces the
 * previous point. */
typedef struct hetrt_event_record_args {
  HETRT_ARGS_HEADER;
  hetrt_instance_t* self;
  DLDevice device;
  hetrt_event_t* event;
  hetrt_stream_t* stream;
} hetrt_event_record_args_t;
HETRT_DEFINE_ARGS_MIN_SIZE(hetrt_event_record_args_t, stream); /* 2.0 */

/* event_destroy (of NULL: nothing); event_synchronize: the host blocks until
 * the event's work is done and gets that work's first error (the event
 * carries it); event_query: never blocks, sets `complete`, returns the error
 * once the work failed. These, event_record, event_timestamp and
 * stream_wait_event refuse a NULL event with INVALID_ARGUMENT. */
typedef struct hetrt_event_args {
  HETRT_ARGS_HEADER;
  hetrt_instance_t* self;
  DLDevice device;
  hetrt_event_t* event;
  int32_t complete; /* out (event_query) */
} hetrt_event_args_t;
HETRT_DEFINE_ARGS_MIN_SIZE(hetrt_event_args_t, complete); /* 2.0 */

/* Milliseconds between two recorded timing events (waits for both). */
typedef struct hetrt_event_elapsed_args {
  HETRT_ARGS_HEADER;
  hetrt_instance_t* self;
  DLDevice device;
  hetrt_event_t* start;
  hetrt_event_t* end;
  double milliseconds; /* out */
} hetrt_event_elapsed_args_t;
HETRT_DEFINE_ARGS_MIN_SIZE(hetrt_event_elapsed_args_t, milliseconds); /* 2.0 */

/* Device-clock time (ns) at which the work before a recorded timing event was
 * complete (waits for it). */
typedef struct hetrt_event_timestamp_args {
  HETRT_ARGS_HEADER;
  hetrt_instance_t* self;
  DLDevice device;
  hetrt_event_t* event;
  uint64_t device_ns; /* out */
} hetrt_event_timestamp_args_t;
HETRT_DEFINE_ARGS_MIN_SIZE(hetrt_event_timestamp_args_t, device_ns); /* 2.0 */

/* One reading of the device clock and the host clock (CLOCK_MONOTONIC, ns)
 * taken as close together as the plugin can; |error| <= uncertainty_ns. The
 * core maps event timestamps onto the host clock with it. */
typedef struct hetrt_device_clock_args {
  HETRT_ARGS_HEADER;
  hetrt_instance_t* self;
  DLDevice device;
  uint64_t device_ns;      /* out */
  uint64_t host_ns;        /* out */
  uint64_t uncertainty_ns; /* out */
} hetrt_device_clock_args_t;
HETRT_DEFINE_ARGS_MIN_SIZE(hetrt_device_clock_args_t, uncertainty_ns); /* 2.0 */

/* Scratch memory for compiled kernels (TVMBackendAllocWorkspace): a per-thread
 * stack on the CPU, a pool on devices. Called on the hot path. */
typedef struct hetrt_workspace_args {
  HETRT_ARGS_HEADER;
  hetrt_instance_t* self;
  DLDevice device;
  uint64_t nbytes; /* alloc */
  void* data;      /* out for alloc, in for free */
} hetrt_workspace_args_t;
HETRT_DEFINE_ARGS_MIN_SIZE(hetrt_workspace_args_t, data); /* 2.0 */

/* Makes `device` the calling thread's current device of its type, the one
 * kernels launched from this thread run on. The core's global
 * "__tvm_set_device" (called by TVM host code before device kernels)
 * dispatches here by device type. */
typedef struct hetrt_set_device_args {
  HETRT_ARGS_HEADER;
  hetrt_instance_t* self;
  DLDevice device;
} hetrt_set_device_args_t;
HETRT_DEFINE_ARGS_MIN_SIZE(hetrt_set_device_args_t, device); /* 2.0 */

typedef struct hetrt_device_api {
  size_t struct_size;
  hetrt_error_t* (*device_count)(hetrt_device_count_args_t* args);
  hetrt_error_t* (*device_attribute)(hetrt_device_attribute_args_t* args);
  hetrt_error_t* (*memory_stats)(hetrt_memory_stats_args_t* args);
  hetrt_error_t* (*allocate)(hetrt_allocate_args_t* args);
  hetrt_error_t* (*free)(hetrt_free_args_t* args);
  hetrt_error_t* (*can_copy)(hetrt_can_copy_args_t* args);
  hetrt_error_t* (*copy)(hetrt_copy_args_t* args);
  hetrt_error_t* (*stream_create)(hetrt_stream_create_args_t* args);
  hetrt_error_t* (*stream_destroy)(hetrt_stream_args_t* args);
  hetrt_error_t* (*stream_synchronize)(hetrt_stream_args_t* args);
  hetrt_error_t* (*stream_wait_event)(hetrt_stream_wait_event_args_t* args);
  hetrt_error_t* (*stream_set_current)(hetrt_stream_current_args_t* args);
  hetrt_error_t* (*stream_get_current)(hetrt_stream_current_args_t* args);
  hetrt_error_t* (*event_create)(hetrt_event_create_args_t* args);
  hetrt_error_t* (*event_destroy)(hetrt_event_args_t* args);
  hetrt_error_t* (*event_record)(hetrt_event_record_args_t* args);
  hetrt_error_t* (*event_query)(hetrt_event_args_t* args);
  hetrt_error_t* (*event_synchronize)(hetrt_event_args_t* args);
  hetrt_error_t* (*event_elapsed_ms)(hetrt_event_elapsed_args_t* args);
  hetrt_error_t* (*event_timestamp)(hetrt_event_timestamp_args_t* args);
  hetrt_error_t* (*device_clock)(hetrt_device_clock_args_t* args);
  hetrt_error_t* (*workspace_alloc)(hetrt_workspace_args_t* args);
  hetrt_error_t* (*workspace_free)(hetrt_workspace_args_t* args);
  hetrt_error_t* (*set_device)(hetrt_set_device_args_t* args);
} hetrt_device_api_t;

/* ---------------------------------------------------------------------------
 * Module table: load the blob of a type_key (from __tvm_dev_mblob), look
 * functions up, save it back (for the exporter).
 * ------------------------------------------------------------------------- */
typedef struct hetrt_module_load_args {
  HETRT_ARGS_HEADER;
  hetrt_instance_t* self;
  const char* type_key;
  /* The rest of the blob stream, starting at this module's bytes; borrowed for
   * the duration of the call. The stream has no per-module length, so the
   * loader reports how much it read. */
  const uint8_t* data;
  uint64_t size;
  hetrt_plugin_module_t* module; /* out */
  uint64_t consumed;             /* out: bytes of `data` that belong to this module */
} hetrt_module_load_args_t;
HETRT_DEFINE_ARGS_MIN_SIZE(hetrt_module_load_args_t, consumed); /* 2.0 */

/* found = 0 (and no error) when the module has no such function. The
 * function stays valid until the module is destroyed. */
typedef struct hetrt_module_get_function_args {
  HETRT_ARGS_HEADER;
  hetrt_plugin_module_t* module;
  const char* name;
  hetrt_packed_func_t function; /* out */
  int32_t found;                /* out */
} hetrt_module_get_function_args_t;
HETRT_DEFINE_ARGS_MIN_SIZE(hetrt_module_get_function_args_t, found); /* 2.0 */

/* Writes up to `capacity` names (module-owned) and sets the total count. */
typedef struct hetrt_module_list_functions_args {
  HETRT_ARGS_HEADER;
  hetrt_plugin_module_t* module;
  const char** names;
  size_t capacity;
  size_t count; /* out */
} hetrt_module_list_functions_args_t;
HETRT_DEFINE_ARGS_MIN_SIZE(hetrt_module_list_functions_args_t, count); /* 2.0 */

/* The bytes load() would read back (TVM's SaveToBinary layout). */
typedef struct hetrt_module_save_args {
  HETRT_ARGS_HEADER;
  hetrt_plugin_module_t* module;
  const uint8_t* data; /* out: owned by the module, valid until it is destroyed */
  uint64_t size;       /* out */
} hetrt_module_save_args_t;
HETRT_DEFINE_ARGS_MIN_SIZE(hetrt_module_save_args_t, size); /* 2.0 */

typedef struct hetrt_module_destroy_args {
  HETRT_ARGS_HEADER;
  hetrt_plugin_module_t* module;
} hetrt_module_destroy_args_t;
HETRT_DEFINE_ARGS_MIN_SIZE(hetrt_module_destroy_args_t, module); /* 2.0 */

/* 2.1: a sample module the plugin loads, with one function, the arguments to
 * call it with and the bytes it must produce, so that a conformance kit or a
 * test can load, call and check a module of a plugin it knows nothing about.
 * Optional (NULL: no sample). The call runs on the calling thread's current
 * stream of `device`; the caller then synchronizes that stream. */
typedef struct hetrt_module_sample_argument {
  int32_t type_code;       /* HETRT_TYPE_INT, HETRT_TYPE_FLOAT, or HETRT_TYPE_HANDLE: a device buffer */
  hetrt_value_t value;     /* INT / FLOAT: the value passed */
  uint64_t nbytes;         /* HANDLE: the buffer's size; the caller allocates it on `device` */
  const uint8_t* input;    /* HANDLE: bytes copied in before the call (NULL: zeros) */
  const uint8_t* expected; /* HANDLE: the bytes after the call (NULL: not checked) */
} hetrt_module_sample_argument_t;

typedef struct hetrt_module_sample_args {
  HETRT_ARGS_HEADER;
  hetrt_instance_t* self;
  DLDevice device;                                 /* in: where the sample will run (a device of this plugin) */
  const char* type_key;                            /* out: one of the plugin's type_keys */
  const uint8_t* data;                             /* out: a valid blob of that type_key (instance-owned) */
  uint64_t size;                                   /* out */
  const char* function_name;                       /* out: a function of the loaded module */
  const hetrt_module_sample_argument_t* arguments; /* out: instance-owned */
  size_t num_arguments;                            /* out */
} hetrt_module_sample_args_t;
HETRT_DEFINE_ARGS_MIN_SIZE(hetrt_module_sample_args_t, num_arguments); /* 2.1 */

typedef struct hetrt_module_api {
  size_t struct_size;
  hetrt_error_t* (*load)(hetrt_module_load_args_t* args);
  hetrt_error_t* (*get_function)(hetrt_module_get_function_args_t* args);
  hetrt_error_t* (*list_functions)(hetrt_module_list_functions_args_t* args);
  hetrt_error_t* (*save)(hetrt_module_save_args_t* args);
  hetrt_error_t* (*destroy)(hetrt_module_destroy_args_t* args);
  /* 2.1 (check with HETRT_STRUCT_HAS(module_api, hetrt_module_api_t, sample)) */
  hetrt_error_t* (*sample)(hetrt_module_sample_args_t* args);
} hetrt_module_api_t;

/* ---------------------------------------------------------------------------
 * Parallel table (host plugins): the task pool behind TVMBackendParallelLaunch.
 * hetrt_parallel_group_env_t matches the layout compiled code expects.
 * ------------------------------------------------------------------------- */
typedef struct hetrt_parallel_group_env {
  void* sync_handle;
  int32_t num_task;
} hetrt_parallel_group_env_t;

typedef int32_t (*hetrt_parallel_lambda_t)(int32_t task_id, hetrt_parallel_group_env_t* env, void* cdata);

/* Runs lambda(task_id, env, cdata) for task_id in [0, num_task), the calling
 * thread taking part; num_task 0 means one task per pool thread. May be called
 * from several threads at once and from inside a task: a launch that cannot
 * get the pool runs its tasks serially on the caller. When a task returns
 * non-zero, `failed_task` names it and the call returns NULL: the task has
 * reported its message through set_last_error, as TVM code does. */
typedef struct hetrt_parallel_launch_args {
  HETRT_ARGS_HEADER;
  hetrt_instance_t* self;
  hetrt_parallel_lambda_t lambda;
  void* cdata;
  int32_t num_task;
  int32_t failed_task; /* out: -1 when every task returned 0 */
} hetrt_parallel_launch_args_t;
HETRT_DEFINE_ARGS_MIN_SIZE(hetrt_parallel_launch_args_t, failed_task); /* 2.0 */

/* Valid only when every task of the launch has its own thread; otherwise
 * returns an error instead of hanging. */
typedef struct hetrt_parallel_barrier_args {
  HETRT_ARGS_HEADER;
  hetrt_instance_t* self;
  int32_t task_id;
  hetrt_parallel_group_env_t* env;
} hetrt_parallel_barrier_args_t;
HETRT_DEFINE_ARGS_MIN_SIZE(hetrt_parallel_barrier_args_t, env); /* 2.0 */

typedef struct hetrt_parallel_num_threads_args {
  HETRT_ARGS_HEADER;
  hetrt_instance_t* self;
  int32_t num_threads; /* out */
} hetrt_parallel_num_threads_args_t;
HETRT_DEFINE_ARGS_MIN_SIZE(hetrt_parallel_num_threads_args_t, num_threads); /* 2.0 */

typedef struct hetrt_parallel_api {
  size_t struct_size;
  hetrt_error_t* (*launch)(hetrt_parallel_launch_args_t* args);
  hetrt_error_t* (*barrier)(hetrt_parallel_barrier_args_t* args);
  hetrt_error_t* (*num_threads)(hetrt_parallel_num_threads_args_t* args);
} hetrt_parallel_api_t;

/* ---------------------------------------------------------------------------
 * Whole-model table (ABI 2.1; `sample` 2.2): a plugin that runs a whole model
 * on a device it drives itself (a microcontroller over its UART, an emulated
 * board, a device program), rather than single kernels. The core opens a model
 * file with it, then sets inputs, runs and reads outputs, all as host bytes. A
 * plugin names the devices it serves this way (what users write after
 * --device), the transports it reaches them by and the boards it builds for,
 * so that tools can list them. Models are owned by the instance that created
 * them. Every call that takes a model returns INVALID_ARGUMENT for a NULL one
 * (destroy ignores it).
 * ------------------------------------------------------------------------- */
typedef struct hetrt_whole_model hetrt_whole_model_t;

/* Whether the plugin runs the model file `path` on `device` (one of its
 * device_names). A file it does not know is accepted = 0 with a reason, not
 * an error. Meant to be cheap: create() validates everything. */
typedef struct hetrt_whole_model_accepts_args {
  HETRT_ARGS_HEADER;
  hetrt_instance_t* self;
  const char* path;
  const char* device;
  int32_t accepted;   /* out: 1 or 0 */
  const char* reason; /* out when 0: why (instance-owned, valid until the next call) */
} hetrt_whole_model_accepts_args_t;
HETRT_DEFINE_ARGS_MIN_SIZE(hetrt_whole_model_accepts_args_t, reason); /* 2.1 */

/* Creates a model from the file at `path` for `device`. Options are the
 * plugin's own (the micro plugin: transport, board, cache_dir, ...); an
 * unknown key is INVALID_ARGUMENT naming the keys there are. */
typedef struct hetrt_whole_model_create_args {
  HETRT_ARGS_HEADER;
  hetrt_instance_t* self;
  const char* path;
  const char* device;
  const hetrt_option_t* options;
  size_t num_options;
  hetrt_whole_model_t* model; /* out */
} hetrt_whole_model_create_args_t;
HETRT_DEFINE_ARGS_MIN_SIZE(hetrt_whole_model_create_args_t, model); /* 2.1 */

/* destroy (releases the device: closes the link, stops an emulator), run. */
typedef struct hetrt_whole_model_args {
  HETRT_ARGS_HEADER;
  hetrt_whole_model_t* model;
} hetrt_whole_model_args_t;
HETRT_DEFINE_ARGS_MIN_SIZE(hetrt_whole_model_args_t, model); /* 2.1 */

typedef struct hetrt_whole_model_io_count_args {
  HETRT_ARGS_HEADER;
  hetrt_whole_model_t* model;
  int32_t num_inputs;  /* out */
  int32_t num_outputs; /* out */
} hetrt_whole_model_io_count_args_t;
HETRT_DEFINE_ARGS_MIN_SIZE(hetrt_whole_model_io_count_args_t, num_outputs); /* 2.1 */

typedef enum hetrt_io_kind {
  HETRT_IO_INPUT = 0,
  HETRT_IO_OUTPUT = 1,
} hetrt_io_kind_t;

/* One input's or output's name, dtype, shape and byte size (model-owned). */
typedef struct hetrt_whole_model_io_info_args {
  HETRT_ARGS_HEADER;
  hetrt_whole_model_t* model;
  int32_t kind; /* a hetrt_io_kind_t */
  int32_t index;
  const char* name;     /* out */
  DLDataType dtype;     /* out */
  const int64_t* shape; /* out: ndim values */
  int32_t ndim;         /* out */
  uint64_t nbytes;      /* out */
} hetrt_whole_model_io_info_args_t;
HETRT_DEFINE_ARGS_MIN_SIZE(hetrt_whole_model_io_info_args_t, nbytes); /* 2.1 */

/* set_input: `nbytes` host bytes, used (copied or sent) before the call
 * returns. get_output: copies the output into a host buffer of exactly
 * `nbytes`. Both OUT_OF_RANGE for a bad index, INVALID_ARGUMENT for a size
 * that is not the tensor's. */
typedef struct hetrt_whole_model_tensor_args {
  HETRT_ARGS_HEADER;
  hetrt_whole_model_t* model;
  int32_t index;
  void* data; /* const for set_input */
  uint64_t nbytes;
} hetrt_whole_model_tensor_args_t;
HETRT_DEFINE_ARGS_MIN_SIZE(hetrt_whole_model_tensor_args_t, nbytes); /* 2.1 */

/* What the model costs on its device. Zero where the plugin cannot tell. */
typedef struct hetrt_whole_model_report_args {
  HETRT_ARGS_HEADER;
  hetrt_whole_model_t* model;
  uint64_t arena_bytes_used;      /* out: peak of the model's memory (tensors, workspace) */
  uint64_t arena_bytes_total;     /* out: what the device set aside for it */
  uint64_t metadata_bytes;        /* out: what the model file's metadata budgets */
  uint64_t last_run_instructions; /* out: instructions the device executed in the last run */
  uint64_t last_run_device_ns;    /* out: the last run on the device's own clock */
  const char* text;               /* out: for people; model-owned, valid until the next call on it */
} hetrt_whole_model_report_args_t;
HETRT_DEFINE_ARGS_MIN_SIZE(hetrt_whole_model_report_args_t, text); /* 2.1 */

/* Optional: writes a self-contained project for the model into output_dir
 * (sources, build files; firmware for a board). `summary` says what was
 * written and what it costs (instance-owned, valid until the next call). */
typedef struct hetrt_whole_model_project_args {
  HETRT_ARGS_HEADER;
  hetrt_instance_t* self;
  const char* path;
  const char* device;
  const char* output_dir;
  const hetrt_option_t* options;
  size_t num_options;
  const char* summary; /* out */
} hetrt_whole_model_project_args_t;
HETRT_DEFINE_ARGS_MIN_SIZE(hetrt_whole_model_project_args_t, summary); /* 2.1 */

/* Optional: runs a project project_generate wrote (on an emulator, a board),
 * bounded in time. `output` is what the device printed (instance-owned). */
typedef struct hetrt_whole_model_project_run_args {
  HETRT_ARGS_HEADER;
  hetrt_instance_t* self;
  const char* project_dir;
  const hetrt_option_t* options;
  size_t num_options;
  int32_t exit_code;  /* out: the program's status */
  const char* output; /* out */
} hetrt_whole_model_project_run_args_t;
HETRT_DEFINE_ARGS_MIN_SIZE(hetrt_whole_model_project_run_args_t, output); /* 2.1 */

/* ABI 2.2, optional: a small model the plugin runs, with its inputs and the
 * outputs they give, so that the conformance kit can check the table end to
 * end (as the module table's `sample` does for modules). The plugin writes the
 * model file into `dir` (which exists; the caller removes it) and names the
 * device and options to create it with. Every out pointer is instance-owned
 * and valid until the next sample call on the instance. inputs[i] holds io_info's
 * nbytes of input i; expected_outputs[i] those of output i (NULL: not
 * checked, e.g. a timing). */
typedef struct hetrt_whole_model_sample_args {
  HETRT_ARGS_HEADER;
  hetrt_instance_t* self;
  const char* dir;
  const char* path;                       /* out: the model file */
  const char* device;                     /* out: one of device_names */
  const hetrt_option_t* options;          /* out: for create (may be none) */
  size_t num_options;                     /* out */
  const uint8_t* const* inputs;           /* out: num_inputs buffers */
  size_t num_inputs;                      /* out */
  const uint8_t* const* expected_outputs; /* out: num_outputs buffers or NULLs */
  size_t num_outputs;                     /* out */
} hetrt_whole_model_sample_args_t;
HETRT_DEFINE_ARGS_MIN_SIZE(hetrt_whole_model_sample_args_t, num_outputs); /* 2.2 */

typedef struct hetrt_whole_model_api {
  size_t struct_size;
  const char* const* device_names; /* what --device names: "micro" */
  size_t num_device_names;
  const char* const* transports; /* how it reaches devices: "pipe", "serial", "tcp", "qemu" */
  size_t num_transports;
  const char* const* boards; /* what it builds for (may be none) */
  size_t num_boards;
  const char* const* formats; /* model files it reads: "mlf" */
  size_t num_formats;
  hetrt_error_t* (*accepts)(hetrt_whole_model_accepts_args_t* args);
  hetrt_error_t* (*create)(hetrt_whole_model_create_args_t* args);
  hetrt_error_t* (*destroy)(hetrt_whole_model_args_t* args);
  hetrt_error_t* (*io_count)(hetrt_whole_model_io_count_args_t* args);
  hetrt_error_t* (*io_info)(hetrt_whole_model_io_info_args_t* args);
  hetrt_error_t* (*set_input)(hetrt_whole_model_tensor_args_t* args);
  hetrt_error_t* (*run)(hetrt_whole_model_args_t* args);
  hetrt_error_t* (*get_output)(hetrt_whole_model_tensor_args_t* args);
  hetrt_error_t* (*report)(hetrt_whole_model_report_args_t* args);
  hetrt_error_t* (*project_generate)(hetrt_whole_model_project_args_t* args); /* may be NULL */
  hetrt_error_t* (*project_run)(hetrt_whole_model_project_run_args_t* args);  /* may be NULL */
  /* 2.2 (check with HETRT_STRUCT_HAS(table, hetrt_whole_model_api_t, sample)); may be NULL */
  hetrt_error_t* (*sample)(hetrt_whole_model_sample_args_t* args);
} hetrt_whole_model_api_t;

/* ---------------------------------------------------------------------------
 * The plugin table returned by the entry symbol: static for the life of the
 * shared object; everything stateful hangs off an instance.
 * ------------------------------------------------------------------------- */
typedef struct hetrt_plugin_api {
  size_t struct_size;
  uint16_t abi_major;
  uint16_t abi_minor;
  const char* name;    /* short, unique: "cpu", "opencl" */
  const char* version; /* the plugin's own version */

  hetrt_error_t* (*error_message)(hetrt_error_message_args_t* args); /* never fails */
  hetrt_error_t* (*error_destroy)(hetrt_error_destroy_args_t* args); /* never fails */

  hetrt_error_t* (*instance_create)(hetrt_instance_create_args_t* args);
  hetrt_error_t* (*instance_destroy)(hetrt_instance_destroy_args_t* args);
  hetrt_error_t* (*set_option)(hetrt_set_option_args_t* args);
  hetrt_error_t* (*global_functions)(hetrt_global_functions_args_t* args); /* may be NULL */

  const int32_t* device_types; /* DLDeviceType values served */
  size_t num_device_types;
  const char* const* type_keys; /* module type_keys this plugin loads */
  size_t num_type_keys;

  const hetrt_device_api_t* device;     /* NULL when num_device_types == 0 */
  const hetrt_module_api_t* module;     /* NULL when num_type_keys == 0 */
  const hetrt_parallel_api_t* parallel; /* NULL unless a host plugin */

  /* ABI 2.1. A 2.0 plugin's table ends before it: the core checks
   * struct_size (HETRT_STRUCT_HAS) before reading. */
  const hetrt_whole_model_api_t* whole_model; /* NULL unless it runs whole models */
} hetrt_plugin_api_t;

typedef const hetrt_plugin_api_t* (*hetrt_plugin_get_api_fn)(void);

/* What every ABI major shares at the start of its table: enough to read the
 * version of a plugin built for another major and refuse it by name. */
typedef struct hetrt_plugin_api_prefix {
  size_t struct_size;
  uint16_t abi_major;
  uint16_t abi_minor;
  const char* name;
  const char* version;
} hetrt_plugin_api_prefix_t;

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* HETRT_PLUGIN_ABI_H_ */
