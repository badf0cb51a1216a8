/* The tvm-ffi C ABI (TVM v0.22+ libraries and foreign kernels) as hetrt
 * implements it: value and object layouts, type indices, and the C functions
 * such libraries call. Written from the layout description in
 * docs/tvm-ffi.md; binary-compatible with tvm-ffi v0.1.x on 64-bit hosts.
 * Type names are hetrt's; the function names are the ABI's symbols and must
 * match exactly, because compiled code links against them by name.
 *
 * C, so that test kernels written in C compile against it as a foreign
 * library would against tvm-ffi's own header. */
#ifndef HETRT_TVM_ABI_TVM_FFI_C_ABI_H_
#define HETRT_TVM_ABI_TVM_FFI_C_ABI_H_

#include <dlpack/dlpack.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Values ------------------------------------------------------------ */

/* Type indices of hetrt_ffi_any_t (tvm-ffi's TVMFFITypeIndex). 13-63 are
 * invalid; >= 64 means v_obj is a reference-counted object. */
enum {
  HETRT_FFI_NONE = 0,
  HETRT_FFI_INT = 1,
  HETRT_FFI_BOOL = 2,
  HETRT_FFI_FLOAT = 3,
  HETRT_FFI_OPAQUE_PTR = 4,
  HETRT_FFI_DATA_TYPE = 5,
  HETRT_FFI_DEVICE = 6,
  HETRT_FFI_DLTENSOR_PTR = 7,   /* borrowed DLTensor* */
  HETRT_FFI_RAW_STR = 8,        /* borrowed NUL-terminated string; arguments only */
  HETRT_FFI_BYTE_ARRAY_PTR = 9, /* borrowed hetrt_ffi_byte_array_t* */
  HETRT_FFI_OBJECT_RVALUE_REF = 10,
  HETRT_FFI_SMALL_STR = 11, /* <= 7 bytes inline, length in small_str_len */
  HETRT_FFI_SMALL_BYTES = 12,
  HETRT_FFI_STATIC_OBJECT_BEGIN = 64,
  HETRT_FFI_OBJECT = 64,
  HETRT_FFI_STR = 65,
  HETRT_FFI_BYTES = 66,
  HETRT_FFI_ERROR = 67,
  HETRT_FFI_FUNCTION = 68,
  HETRT_FFI_SHAPE = 69,
  HETRT_FFI_TENSOR = 70,
  HETRT_FFI_ARRAY = 71,
  HETRT_FFI_MAP = 72,
  HETRT_FFI_MODULE = 73,
  HETRT_FFI_OPAQUE_PY_OBJECT = 74,
  HETRT_FFI_LIST = 75,
  HETRT_FFI_DICT = 76,
  HETRT_FFI_VISIT_INTERRUPT = 77,
  HETRT_FFI_LAST_STATIC_INDEX = 77,
  HETRT_FFI_DYNAMIC_OBJECT_BEGIN = 128
};

typedef struct hetrt_ffi_object hetrt_ffi_object_t;

/* 16 bytes: the index, a padding word (small_str_len for 11/12, else 0), and
 * an 8-byte union. Writers clear the bytes of the union they do not use. */
typedef struct {
  int32_t type_index;
  union {
    uint32_t zero_padding;
    uint32_t small_str_len;
  };
  union {
    int64_t v_int64;
    double v_float64;
    void* v_ptr;
    const char* v_c_str;
    hetrt_ffi_object_t* v_obj;
    DLDataType v_dtype;
    DLDevice v_device;
    char v_bytes[8];
    uint64_t v_uint64;
  };
} hetrt_ffi_any_t;

typedef struct {
  const char* data;
  size_t size;
} hetrt_ffi_byte_array_t;

/* Every function a library exports as __tvm_ffi_<name>, and the call of a
 * Function object. `handle` is NULL for library symbols. The caller presets
 * `result` to None and owns what it holds afterwards (even after a failure).
 * Returns 0, or non-zero with an error in the thread's raised-error slot. */
typedef int (*hetrt_ffi_safe_call_t)(void* handle, const hetrt_ffi_any_t* args, int32_t num_args,
                                     hetrt_ffi_any_t* result);

/* ---- Objects ----------------------------------------------------------- */

/* Deleter flags: destroy the contents (strong count reached 0), free the
 * memory (weak count reached 0). */
enum { HETRT_FFI_DELETE_STRONG = 1, HETRT_FFI_DELETE_WEAK = 2, HETRT_FFI_DELETE_BOTH = 3 };

/* 24 bytes, at the start of every object. A new object holds one strong and
 * one weak reference (combined_ref_count 0x0000000100000001). */
struct hetrt_ffi_object {
  uint64_t combined_ref_count; /* strong in the low 32 bits, weak in the high 32 */
  int32_t type_index;
  uint32_t padding;
  void (*deleter)(void* self, int flags);
};

/* Object cells: what follows the header, by type index. */
typedef struct { /* HETRT_FFI_STR, HETRT_FFI_BYTES */
  hetrt_ffi_object_t header;
  hetrt_ffi_byte_array_t bytes; /* data[size] is NUL for a Str */
} hetrt_ffi_str_object_t;

typedef struct { /* HETRT_FFI_SHAPE */
  hetrt_ffi_object_t header;
  const int64_t* data;
  size_t size;
} hetrt_ffi_shape_object_t;

typedef struct { /* HETRT_FFI_ARRAY (a Relax tuple): `size` Anys at `data`, owned by the array */
  hetrt_ffi_object_t header;
  hetrt_ffi_any_t* data;
  int64_t size;
  int64_t capacity;
  void (*data_deleter)(void*); /* NULL: the items follow the object in its allocation */
} hetrt_ffi_array_object_t;

typedef struct { /* HETRT_FFI_TENSOR: the DLTensor at +24; the rest is the creator's */
  hetrt_ffi_object_t header;
  DLTensor dl;
} hetrt_ffi_tensor_object_t;

typedef struct { /* HETRT_FFI_FUNCTION: called with the object itself as handle */
  hetrt_ffi_object_t header;
  hetrt_ffi_safe_call_t safe_call;
  void* cpp_call; /* tvm-ffi's C++ entry; NULL in every function hetrt makes */
} hetrt_ffi_function_object_t;

typedef struct { /* HETRT_FFI_ERROR. cause_chain and extra_context: tvm-ffi v0.1.8+ */
  hetrt_ffi_object_t header;
  hetrt_ffi_byte_array_t kind;
  hetrt_ffi_byte_array_t message;
  hetrt_ffi_byte_array_t backtrace;
  void (*update_backtrace)(hetrt_ffi_object_t* self, const hetrt_ffi_byte_array_t* backtrace, int32_t update_mode);
  hetrt_ffi_object_t* cause_chain;
  hetrt_ffi_object_t* extra_context;
} hetrt_ffi_error_object_t;

/* ---- The C functions libraries call (exported by hetrt's libtvm_ffi.so) ---- */

#if defined(__GNUC__)
#define HETRT_FFI_EXPORT __attribute__((visibility("default")))
#else
#define HETRT_FFI_EXPORT
#endif

HETRT_FFI_EXPORT int TVMFFIObjectIncRef(void* object);
/* Releases one strong reference; the last one runs the deleter. */
HETRT_FFI_EXPORT int TVMFFIObjectDecRef(void* object);

/* The thread's raised-error slot: a callee sets it and returns -1; the caller
 * moves the Error object out (NULL when none) and releases it. */
HETRT_FFI_EXPORT void TVMFFIErrorSetRaisedFromCStr(const char* kind, const char* message);
/* The message is the concatenation of the non-NULL parts. */
HETRT_FFI_EXPORT void TVMFFIErrorSetRaisedFromCStrParts(const char* kind, const char** parts, int32_t num_parts);
/* Keeps its own reference to `error` (an Error object). */
HETRT_FFI_EXPORT void TVMFFIErrorSetRaised(void* error);
HETRT_FFI_EXPORT void TVMFFIErrorMoveFromRaised(void** out);
HETRT_FFI_EXPORT int TVMFFIErrorCreate(const hetrt_ffi_byte_array_t* kind, const hetrt_ffi_byte_array_t* message,
                                       const hetrt_ffi_byte_array_t* backtrace, void** out);

/* Str and Bytes values (SmallStr/SmallBytes up to 7 bytes, objects above). */
HETRT_FFI_EXPORT int TVMFFIStringFromByteArray(const hetrt_ffi_byte_array_t* input, hetrt_ffi_any_t* out);
HETRT_FFI_EXPORT int TVMFFIBytesFromByteArray(const hetrt_ffi_byte_array_t* input, hetrt_ffi_any_t* out);

/* Fills *handle_addr once (thread-safe) with what init_func makes: how
 * generated code caches a looked-up function (v0.26). */
HETRT_FFI_EXPORT int TVMFFIHandleInitOnce(void** handle_addr, int (*init_func)(void** result));

/* Calls a Function object. */
HETRT_FFI_EXPORT int TVMFFIFunctionCall(void* function, hetrt_ffi_any_t* args, int32_t num_args,
                                        hetrt_ffi_any_t* result);

/* The current stream of a device on this thread: the one TVMFFIEnvSetStream
 * set there, else the native queue of hetrt's current stream of the device
 * (a CUstream, a cl_command_queue: where hetrt queued the work before the
 * call), else NULL (the device's default stream). */
HETRT_FFI_EXPORT void* TVMFFIEnvGetStream(int32_t device_type, int32_t device_id);
HETRT_FFI_EXPORT int TVMFFIEnvSetStream(int32_t device_type, int32_t device_id, void* stream,
                                        void** opt_out_original_stream);
/* A new compact Tensor object shaped as `prototype` (shape, dtype, device),
 * in memory from hetrt's allocator of that device. */
HETRT_FFI_EXPORT int TVMFFIEnvTensorAlloc(DLTensor* prototype, void** out);

/* ---- hetrt's side: how the core plugs into the shim -------------------- */

/* Makes *out a Tensor object shaped as `prototype`; 0, or -1 with an error
 * raised. Installed by the core when it loads the shim. */
typedef int (*hetrt_ffi_tensor_allocator_t)(const DLTensor* prototype, hetrt_ffi_object_t** out);
HETRT_FFI_EXPORT void hetrt_ffi_set_tensor_allocator(hetrt_ffi_tensor_allocator_t allocator);

/* The native queue of hetrt's current stream of a device on the calling
 * thread, or NULL; what TVMFFIEnvGetStream answers when nothing was set. */
typedef void* (*hetrt_ffi_stream_provider_t)(int32_t device_type, int32_t device_id);
HETRT_FFI_EXPORT void hetrt_ffi_set_stream_provider(hetrt_ffi_stream_provider_t provider);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* HETRT_TVM_ABI_TVM_FFI_C_ABI_H_ */
