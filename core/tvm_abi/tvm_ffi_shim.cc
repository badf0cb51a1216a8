// hetrt's libtvm_ffi.so: the part of tvm-ffi's C API that compiled libraries
// call by symbol (docs/tvm-ffi.md (c), (d), (i)): object reference counts, the
// raised-error slot, strings, function calls, the environment's streams and
// tensor allocation.
//
// A library of its own, not part of libhetrt_core, for two reasons:
// - foreign kernel libraries list libtvm_ffi.so as DT_NEEDED; once this file
//   is loaded, the dynamic linker satisfies that need with it (by soname);
// - the core loads it RTLD_GLOBAL, so its symbols resolve for libraries
//   dlopen'ed later even when the core itself was loaded RTLD_LOCAL (Python).
// It links nothing of hetrt; the core reaches it through dlsym
// (tvm_ffi_runtime.cc) and hands it an allocator.
#include <atomic>
#include <mutex>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "hetrt/tvm_abi/tvm_ffi_c_abi.h"

namespace {

static_assert(sizeof(hetrt_ffi_any_t) == 16 && alignof(hetrt_ffi_any_t) == 8);
static_assert(sizeof(hetrt_ffi_object_t) == 24);
static_assert(offsetof(hetrt_ffi_tensor_object_t, dl) == 24);
static_assert(offsetof(hetrt_ffi_str_object_t, bytes) == 24);
static_assert(offsetof(hetrt_ffi_function_object_t, safe_call) == 24);
static_assert(offsetof(hetrt_ffi_shape_object_t, data) == 24 && offsetof(hetrt_ffi_shape_object_t, size) == 32);
static_assert(offsetof(hetrt_ffi_array_object_t, data) == 24 && offsetof(hetrt_ffi_array_object_t, size) == 32 &&
              offsetof(hetrt_ffi_array_object_t, capacity) == 40 && offsetof(hetrt_ffi_array_object_t, data_deleter) == 48);
static_assert(offsetof(hetrt_ffi_error_object_t, kind) == 24 && offsetof(hetrt_ffi_error_object_t, message) == 40 &&
              offsetof(hetrt_ffi_error_object_t, backtrace) == 56 &&
              offsetof(hetrt_ffi_error_object_t, update_backtrace) == 72);

constexpr uint64_t kOneStrongOneWeak = 0x0000000100000001ull;
constexpr uint64_t kOneWeak = 1ull << 32;

std::atomic_ref<uint64_t> Counts(hetrt_ffi_object_t* object) { return std::atomic_ref<uint64_t>(object->combined_ref_count); }

void InitHeader(hetrt_ffi_object_t* object, int32_t type_index, void (*deleter)(void*, int)) {
  object->combined_ref_count = kOneStrongOneWeak;
  object->type_index = type_index;
  object->padding = 0;
  object->deleter = deleter;
}

// Str/Bytes and Error objects made here keep their characters in the same
// allocation, after the cell; one free releases everything.
void DeleteMalloced(void* self, int flags) {
  if (flags & HETRT_FFI_DELETE_WEAK) std::free(self);
}

void DeleteError(void* self, int flags) {
  auto* error = static_cast<hetrt_ffi_error_object_t*>(self);
  if ((flags & HETRT_FFI_DELETE_STRONG) && error->cause_chain != nullptr) TVMFFIObjectDecRef(error->cause_chain);
  if ((flags & HETRT_FFI_DELETE_STRONG) && error->extra_context != nullptr) TVMFFIObjectDecRef(error->extra_context);
  if (flags & HETRT_FFI_DELETE_WEAK) std::free(self);
}

void UpdateBacktrace(hetrt_ffi_object_t*, const hetrt_ffi_byte_array_t*, int32_t) {
  // hetrt reports errors with the function's name, not a backtrace: ignored.
}

hetrt_ffi_byte_array_t Bytes(const char* text) { return {text, text ? std::strlen(text) : 0}; }

hetrt_ffi_object_t* MakeError(hetrt_ffi_byte_array_t kind, hetrt_ffi_byte_array_t message,
                              hetrt_ffi_byte_array_t backtrace) {
  const size_t text = kind.size + message.size + backtrace.size + 3;
  auto* error = static_cast<hetrt_ffi_error_object_t*>(std::calloc(1, sizeof(hetrt_ffi_error_object_t) + text));
  if (error == nullptr) return nullptr;
  InitHeader(&error->header, HETRT_FFI_ERROR, DeleteError);
  char* out = reinterpret_cast<char*>(error + 1);
  for (auto [from, to] : {std::pair{&kind, &error->kind}, std::pair{&message, &error->message},
                          std::pair{&backtrace, &error->backtrace}}) {
    if (from->size) std::memcpy(out, from->data, from->size);
    out[from->size] = '\0';
    *to = {out, from->size};
    out += from->size + 1;
  }
  error->update_backtrace = UpdateBacktrace;
  return &error->header;
}

// The raised-error slot of this thread; released at thread exit.
struct RaisedSlot {
  hetrt_ffi_object_t* error = nullptr;
  ~RaisedSlot() {
    if (error != nullptr) TVMFFIObjectDecRef(error);
  }
  void Set(hetrt_ffi_object_t* fresh) {  // takes `fresh`'s reference
    hetrt_ffi_object_t* old = error;
    error = fresh;
    if (old != nullptr) TVMFFIObjectDecRef(old);
  }
};
thread_local RaisedSlot raised;

int SetRaisedOutOfMemory() {
  // Preallocated: an error about memory must not need memory.
  static hetrt_ffi_object_t* out_of_memory = [] {
    hetrt_ffi_object_t* e = MakeError(Bytes("MemoryError"), Bytes("out of memory"), Bytes(""));
    if (e != nullptr) e->deleter = nullptr;  // never freed
    return e;
  }();
  raised.Set(nullptr);
  if (out_of_memory != nullptr) {
    TVMFFIObjectIncRef(out_of_memory);
    raised.error = out_of_memory;
  }
  return -1;
}

int MakeStrOrBytes(const hetrt_ffi_byte_array_t* input, hetrt_ffi_any_t* out, int32_t small_index,
                   int32_t object_index) {
  if (input == nullptr || out == nullptr || (input->data == nullptr && input->size != 0)) {
    TVMFFIErrorSetRaisedFromCStr("ValueError", "TVMFFIStringFromByteArray: NULL input or output");
    return -1;
  }
  std::memset(out, 0, sizeof(*out));
  if (input->size <= 7) {
    out->type_index = small_index;
    out->small_str_len = static_cast<uint32_t>(input->size);
    if (input->size) std::memcpy(out->v_bytes, input->data, input->size);
    return 0;
  }
  auto* str = static_cast<hetrt_ffi_str_object_t*>(std::malloc(sizeof(hetrt_ffi_str_object_t) + input->size + 1));
  if (str == nullptr) return SetRaisedOutOfMemory();
  InitHeader(&str->header, object_index, DeleteMalloced);
  char* chars = reinterpret_cast<char*>(str + 1);
  std::memcpy(chars, input->data, input->size);
  chars[input->size] = '\0';
  str->bytes = {chars, input->size};
  out->type_index = object_index;
  out->v_obj = &str->header;
  return 0;
}

// Streams set per thread and device (tvm-ffi keeps them per thread too).
struct StreamEntry {
  int32_t device_type, device_id;
  void* stream;
};
thread_local std::vector<StreamEntry> streams;

std::atomic<hetrt_ffi_tensor_allocator_t> tensor_allocator{nullptr};
std::atomic<hetrt_ffi_stream_provider_t> stream_provider{nullptr};

}  // namespace

extern "C" {

int TVMFFIObjectIncRef(void* object) {
  if (object == nullptr) return 0;
  Counts(static_cast<hetrt_ffi_object_t*>(object)).fetch_add(1, std::memory_order_relaxed);
  return 0;
}

int TVMFFIObjectDecRef(void* handle) {
  if (handle == nullptr) return 0;
  auto* object = static_cast<hetrt_ffi_object_t*>(handle);
  const uint64_t before = Counts(object).fetch_sub(1, std::memory_order_release);
  if (before == kOneStrongOneWeak) {
    std::atomic_thread_fence(std::memory_order_acquire);
    if (object->deleter != nullptr) object->deleter(object, HETRT_FFI_DELETE_BOTH);
  } else if ((before & 0xffffffffu) == 1) {
    // Last strong reference, weak ones remain: destroy now, free with the last weak.
    std::atomic_thread_fence(std::memory_order_acquire);
    if (object->deleter != nullptr) object->deleter(object, HETRT_FFI_DELETE_STRONG);
    if (Counts(object).fetch_sub(kOneWeak, std::memory_order_acq_rel) == kOneWeak && object->deleter != nullptr)
      object->deleter(object, HETRT_FFI_DELETE_WEAK);
  }
  return 0;
}

void TVMFFIErrorSetRaisedFromCStr(const char* kind, const char* message) {
  hetrt_ffi_object_t* error = MakeError(Bytes(kind ? kind : "RuntimeError"), Bytes(message), Bytes(""));
  if (error == nullptr) {
    SetRaisedOutOfMemory();
    return;
  }
  raised.Set(error);
}

void TVMFFIErrorSetRaisedFromCStrParts(const char* kind, const char** parts, int32_t num_parts) {
  std::string message;
  for (int32_t i = 0; parts != nullptr && i < num_parts; ++i)
    if (parts[i] != nullptr) message += parts[i];
  TVMFFIErrorSetRaisedFromCStr(kind, message.c_str());
}

void TVMFFIErrorSetRaised(void* error) {
  TVMFFIObjectIncRef(error);
  raised.Set(static_cast<hetrt_ffi_object_t*>(error));
}

void TVMFFIErrorMoveFromRaised(void** out) {
  if (out == nullptr) return;
  *out = raised.error;
  raised.error = nullptr;
}

int TVMFFIErrorCreate(const hetrt_ffi_byte_array_t* kind, const hetrt_ffi_byte_array_t* message,
                      const hetrt_ffi_byte_array_t* backtrace, void** out) {
  if (kind == nullptr || message == nullptr || out == nullptr) return -1;
  hetrt_ffi_object_t* error = MakeError(*kind, *message, backtrace ? *backtrace : Bytes(""));
  if (error == nullptr) return SetRaisedOutOfMemory();
  *out = error;
  return 0;
}

int TVMFFIStringFromByteArray(const hetrt_ffi_byte_array_t* input, hetrt_ffi_any_t* out) {
  return MakeStrOrBytes(input, out, HETRT_FFI_SMALL_STR, HETRT_FFI_STR);
}

int TVMFFIBytesFromByteArray(const hetrt_ffi_byte_array_t* input, hetrt_ffi_any_t* out) {
  return MakeStrOrBytes(input, out, HETRT_FFI_SMALL_BYTES, HETRT_FFI_BYTES);
}

int TVMFFIFunctionCall(void* function, hetrt_ffi_any_t* args, int32_t num_args, hetrt_ffi_any_t* result) {
  auto* object = static_cast<hetrt_ffi_function_object_t*>(function);
  if (object == nullptr || object->header.type_index != HETRT_FFI_FUNCTION || object->safe_call == nullptr) {
    TVMFFIErrorSetRaisedFromCStr("TypeError", "TVMFFIFunctionCall: the handle is not a Function object");
    return -1;
  }
  return object->safe_call(object, args, num_args, result);
}

int TVMFFIHandleInitOnce(void** handle_addr, int (*init_func)(void** result)) {
  if (handle_addr == nullptr || init_func == nullptr) {
    TVMFFIErrorSetRaisedFromCStr("ValueError", "TVMFFIHandleInitOnce: NULL handle address or initializer");
    return -1;
  }
  std::atomic_ref<void*> handle(*handle_addr);
  if (handle.load(std::memory_order_acquire) != nullptr) return 0;
  static std::mutex init_mutex;
  std::lock_guard<std::mutex> lock(init_mutex);
  if (handle.load(std::memory_order_relaxed) != nullptr) return 0;
  void* made = nullptr;
  if (init_func(&made) != 0) return -1;  // the initializer raised its error
  if (made == nullptr) {
    TVMFFIErrorSetRaisedFromCStr("RuntimeError", "TVMFFIHandleInitOnce: the initializer returned NULL");
    return -1;
  }
  handle.store(made, std::memory_order_release);
  return 0;
}

void* TVMFFIEnvGetStream(int32_t device_type, int32_t device_id) {
  // NULL set means "the default": hetrt's current stream, as when nothing was
  // set (a caller restoring the NULL it got back must not pin CUDA's legacy
  // stream, which is not ordered with hetrt's).
  for (const StreamEntry& e : streams)
    if (e.device_type == device_type && e.device_id == device_id && e.stream != nullptr) return e.stream;
  hetrt_ffi_stream_provider_t provider = stream_provider.load(std::memory_order_acquire);
  return provider != nullptr ? provider(device_type, device_id) : nullptr;
}

int TVMFFIEnvSetStream(int32_t device_type, int32_t device_id, void* stream, void** opt_out_original_stream) {
  for (StreamEntry& e : streams)
    if (e.device_type == device_type && e.device_id == device_id) {
      if (opt_out_original_stream) *opt_out_original_stream = e.stream;
      e.stream = stream;
      return 0;
    }
  if (opt_out_original_stream) *opt_out_original_stream = nullptr;
  try {
    streams.push_back({device_type, device_id, stream});
  } catch (const std::bad_alloc&) {
    return SetRaisedOutOfMemory();
  }
  return 0;
}

int TVMFFIEnvTensorAlloc(DLTensor* prototype, void** out) {
  if (prototype == nullptr || out == nullptr) {
    TVMFFIErrorSetRaisedFromCStr("ValueError", "TVMFFIEnvTensorAlloc: NULL prototype or output");
    return -1;
  }
  hetrt_ffi_tensor_allocator_t allocator = tensor_allocator.load(std::memory_order_acquire);
  if (allocator == nullptr) {
    TVMFFIErrorSetRaisedFromCStr("RuntimeError", "TVMFFIEnvTensorAlloc: no tensor allocator (hetrt's core is not loaded)");
    return -1;
  }
  hetrt_ffi_object_t* tensor = nullptr;
  if (allocator(prototype, &tensor) != 0) return -1;
  *out = tensor;
  return 0;
}

void hetrt_ffi_set_tensor_allocator(hetrt_ffi_tensor_allocator_t allocator) {
  tensor_allocator.store(allocator, std::memory_order_release);
}

void hetrt_ffi_set_stream_provider(hetrt_ffi_stream_provider_t provider) {
  stream_provider.store(provider, std::memory_order_release);
}

}  // extern "C"
