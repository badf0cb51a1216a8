#include "hetrt/tvm_abi/tvm_ffi_values.h"

#include <dlfcn.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <utility>

#include "hetrt/base/dtype.h"
#include "hetrt/base/install_layout.h"
#include "tvm_abi/tvm_backend_abi.h"
#include "tvm_abi/tvm_ffi_shim_api.h"

namespace hetrt {
namespace {

// The shim's functions, resolved once (the core does not link it: a process
// that loaded TVM's own libtvm_ffi.so first would otherwise bind the core to
// that one by soname).
TvmFfiShim g_shim;
std::atomic<FfiTensorMemory> g_tensor_memory{nullptr};

void DecRef(hetrt_ffi_object_t* object) {
  if (object != nullptr) g_shim.dec_ref(object);
}

// A Tensor object around a hetrt Tensor: the DLTensor at +24 as the ABI
// wants, then what keeps the memory alive. Compact strides, as TVM's carry.
struct TensorObject {
  hetrt_ffi_tensor_object_t cell;
  Tensor tensor;
  std::vector<int64_t> strides;
};
static_assert(offsetof(TensorObject, cell) == 0);

void DeleteTensorObject(void* self, int flags) {
  // Made with one strong and one weak reference and never handed out weakly:
  // both flags come together.
  if (flags & HETRT_FFI_DELETE_WEAK) delete static_cast<TensorObject*>(self);
}

hetrt_ffi_object_t* MakeTensorObject(const Tensor& tensor) {
  auto* object = new TensorObject();
  object->cell.header = {0x0000000100000001ull, HETRT_FFI_TENSOR, 0, DeleteTensorObject};
  object->tensor = tensor;
  const std::vector<int64_t>& shape = object->tensor.shape();
  object->strides.assign(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) object->strides[d - 1] = object->strides[d] * shape[d];
  object->cell.dl = *object->tensor.dl();
  object->cell.dl.shape = const_cast<int64_t*>(shape.data());
  object->cell.dl.strides = object->strides.empty() ? nullptr : object->strides.data();
  return &object->cell.header;
}

constexpr uint64_t kNewObject = 0x0000000100000001ull;  // one strong, one weak reference
constexpr int kMaxArrayDepth = 64;                       // nesting of arrays hetrt reads or makes

// A Shape object over its own copy of the dims.
struct ShapeObject {
  hetrt_ffi_shape_object_t cell;
  std::vector<int64_t> dims;
};
void DeleteShapeObject(void* self, int flags) {
  if (flags & HETRT_FFI_DELETE_WEAK) delete static_cast<ShapeObject*>(self);
}
hetrt_ffi_object_t* MakeShapeObject(const std::vector<int64_t>& dims) {
  auto* object = new ShapeObject();
  object->cell.header = {kNewObject, HETRT_FFI_SHAPE, 0, DeleteShapeObject};
  object->dims = dims;
  object->cell.data = object->dims.data();
  object->cell.size = object->dims.size();
  return &object->cell.header;
}

// A Str object owning its characters, NUL-terminated as TVM's are.
struct StrObject {
  hetrt_ffi_str_object_t cell;
  std::string text;
};
void DeleteStrObject(void* self, int flags) {
  if (flags & HETRT_FFI_DELETE_WEAK) delete static_cast<StrObject*>(self);
}

// An Array object owning one reference to each object among its items.
struct ArrayObject {
  hetrt_ffi_array_object_t cell;
  std::vector<hetrt_ffi_any_t> items;
};
void DeleteArrayObject(void* self, int flags) {
  auto* array = static_cast<ArrayObject*>(self);
  if (flags & HETRT_FFI_DELETE_STRONG)
    for (hetrt_ffi_any_t& item : array->items)
      if (item.type_index >= HETRT_FFI_STATIC_OBJECT_BEGIN) DecRef(std::exchange(item.v_obj, nullptr));
  if (flags & HETRT_FFI_DELETE_WEAK) delete array;
}
void ItemsDeletedWithTheArray(void*) {}

// `value` as an Any that holds its own references (an array's item; the
// caller releases it): strings as SmallStr or Str, never borrowed.
Result<hetrt_ffi_any_t> OwnedAny(const FfiValue& value, int depth) {
  hetrt_ffi_any_t any;
  std::memset(&any, 0, sizeof(any));
  if (const auto* text = std::get_if<std::string>(&value)) {
    if (text->size() <= 7) {
      any.type_index = HETRT_FFI_SMALL_STR;
      any.small_str_len = static_cast<uint32_t>(text->size());
      std::memcpy(any.v_bytes, text->data(), text->size());
      return any;
    }
    auto* object = new StrObject();
    object->cell.header = {kNewObject, HETRT_FFI_STR, 0, DeleteStrObject};
    object->text = *text;
    object->cell.bytes = {object->text.c_str(), object->text.size()};
    any.type_index = HETRT_FFI_STR;
    any.v_obj = &object->cell.header;
    return any;
  }
  if (const auto* shape = std::get_if<FfiShape>(&value)) {
    any.type_index = HETRT_FFI_SHAPE;
    any.v_obj = MakeShapeObject(shape->dims);
    return any;
  }
  if (const auto* tensor = std::get_if<Tensor>(&value)) {
    any.type_index = HETRT_FFI_TENSOR;
    any.v_obj = MakeTensorObject(*tensor);
    return any;
  }
  if (const auto* items = std::get_if<FfiArray>(&value)) {
    if (depth >= kMaxArrayDepth)
      return InvalidArgument("arrays nested deeper than " + std::to_string(kMaxArrayDepth));
    auto* array = new ArrayObject();
    array->cell.header = {kNewObject, HETRT_FFI_ARRAY, 0, DeleteArrayObject};
    hetrt_ffi_object_t* made = &array->cell.header;
    array->items.reserve(items->items.size());
    for (const FfiValue& item : items->items) {
      Result<hetrt_ffi_any_t> owned = OwnedAny(item, depth + 1);
      if (!owned.ok()) {
        DecRef(made);
        return owned.status();
      }
      array->items.push_back(*owned);
    }
    array->cell.data = array->items.data();
    array->cell.size = array->cell.capacity = static_cast<int64_t>(array->items.size());
    array->cell.data_deleter = ItemsDeletedWithTheArray;
    any.type_index = HETRT_FFI_ARRAY;
    any.v_obj = made;
    return any;
  }
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, bool>) {
          any.type_index = HETRT_FFI_BOOL;
          any.v_int64 = v ? 1 : 0;
        } else if constexpr (std::is_same_v<T, int64_t>) {
          any.type_index = HETRT_FFI_INT;
          any.v_int64 = v;
        } else if constexpr (std::is_same_v<T, double>) {
          any.type_index = HETRT_FFI_FLOAT;
          any.v_float64 = v;
        } else {
          any.type_index = HETRT_FFI_NONE;  // monostate; the object kinds returned above
        }
      },
      value);
  return any;
}

// The allocator the shim's TVMFFIEnvTensorAlloc calls.
int AllocateTensorObject(const DLTensor* prototype, hetrt_ffi_object_t** out) {
  FfiTensorMemory memory = g_tensor_memory.load(std::memory_order_acquire);
  if (prototype->ndim < 0 || (prototype->ndim > 0 && prototype->shape == nullptr)) {
    g_shim.set_raised("ValueError", "TVMFFIEnvTensorAlloc: the prototype has no shape");
    return -1;
  }
  std::vector<int64_t> shape(prototype->shape, prototype->shape + prototype->ndim);
  Result<Tensor> tensor = memory ? memory(*prototype) : Result<Tensor>(Unimplemented("no device memory provider"));
  if (tensor.ok()) {
    // The provider made it for the prototype's device; reshape to its dims.
    *out = MakeTensorObject(*tensor);
    return 0;
  }
  const std::string message = "TVMFFIEnvTensorAlloc of " + ShapeToString(shape) + " " +
                              DataTypeToString(prototype->dtype) + " on " + DeviceToString(prototype->device) + ": " +
                              tensor.status().message();
  g_shim.set_raised("RuntimeError", message.c_str());
  return -1;
}

std::string IndexName(int32_t index) {
  switch (index) {
    case HETRT_FFI_NONE: return "None";
    case HETRT_FFI_INT: return "Int";
    case HETRT_FFI_BOOL: return "Bool";
    case HETRT_FFI_FLOAT: return "Float";
    case HETRT_FFI_OPAQUE_PTR: return "OpaquePtr";
    case HETRT_FFI_DATA_TYPE: return "DataType";
    case HETRT_FFI_DEVICE: return "Device";
    case HETRT_FFI_DLTENSOR_PTR: return "DLTensor*";
    case HETRT_FFI_RAW_STR: return "RawStr";
    case HETRT_FFI_BYTE_ARRAY_PTR: return "ByteArray*";
    case HETRT_FFI_OBJECT_RVALUE_REF: return "ObjectRValueRef";
    case HETRT_FFI_SMALL_STR: return "SmallStr";
    case HETRT_FFI_SMALL_BYTES: return "SmallBytes";
    case HETRT_FFI_STR: return "Str";
    case HETRT_FFI_BYTES: return "Bytes";
    case HETRT_FFI_ERROR: return "Error";
    case HETRT_FFI_FUNCTION: return "Function";
    case HETRT_FFI_SHAPE: return "Shape";
    case HETRT_FFI_TENSOR: return "Tensor";
    case HETRT_FFI_ARRAY: return "Array";
    case HETRT_FFI_MAP: return "Map";
    case HETRT_FFI_MODULE: return "Module";
    default: return "type index " + std::to_string(index);
  }
}

// A result Any that breaks the ABI's rules (docs/tvm-ffi.md (h), "Values").
Status CheckResultAny(const hetrt_ffi_any_t& value, const std::string& what) {
  const int32_t index = value.type_index;
  const bool small = index == HETRT_FFI_SMALL_STR || index == HETRT_FFI_SMALL_BYTES;
  if (index < 0 || (index > HETRT_FFI_SMALL_BYTES && index < HETRT_FFI_STATIC_OBJECT_BEGIN) ||
      (index > HETRT_FFI_LAST_STATIC_INDEX && index < HETRT_FFI_DYNAMIC_OBJECT_BEGIN))
    return DataLoss(what + " returned a value of invalid type index " + std::to_string(index));
  if (index >= HETRT_FFI_STATIC_OBJECT_BEGIN && value.v_obj == nullptr)
    return DataLoss(what + " returned a " + IndexName(index) + " object that is NULL");
  if (small ? value.small_str_len > 7 : value.zero_padding != 0)
    return DataLoss(what + " returned a " + IndexName(index) + " with a corrupt padding word (" +
                    std::to_string(value.zero_padding) + ")");
  if (index == HETRT_FFI_RAW_STR || index == HETRT_FFI_DLTENSOR_PTR || index == HETRT_FFI_BYTE_ARRAY_PTR ||
      index == HETRT_FFI_OBJECT_RVALUE_REF)
    return DataLoss(what + " returned a borrowed " + IndexName(index) +
                    ", which a result may not be (it would point into the callee)");
  return OkStatus();
}

// A Tensor result as a hetrt Tensor; takes the object's reference.
Result<Tensor> TakeTensor(hetrt_ffi_object_t* object, const std::string& what) {
  if (object->deleter == DeleteTensorObject) {
    Tensor tensor = reinterpret_cast<TensorObject*>(object)->tensor;
    DecRef(object);
    return tensor;
  }
  // Someone else's object: the tensor keeps the reference.
  std::shared_ptr<void> owner(object, [](void* o) { DecRef(static_cast<hetrt_ffi_object_t*>(o)); });
  const DLTensor& dl = reinterpret_cast<hetrt_ffi_tensor_object_t*>(object)->dl;
  if (dl.ndim < 0 || (dl.ndim > 0 && dl.shape == nullptr))
    return DataLoss(what + " returned a Tensor with ndim " + std::to_string(dl.ndim) + " and no shape");
  std::vector<int64_t> shape(dl.shape, dl.shape + dl.ndim);
  HETRT_RETURN_IF_ERROR(ShapeNumElements(shape).status(), what + " returned a Tensor");
  if (dl.strides != nullptr) {
    int64_t expected = 1;
    for (int32_t d = dl.ndim; d-- > 0;) {
      if (shape[static_cast<size_t>(d)] != 1 && dl.strides[d] != expected)
        return Unimplemented(what + " returned a non-compact Tensor (strides); hetrt takes compact tensors");
      expected *= shape[static_cast<size_t>(d)];
    }
  }
  if (dl.data == nullptr && ShapeNumElements(shape).value() != 0)
    return DataLoss(what + " returned a Tensor with NULL data");
  Tensor tensor = Tensor::Adopt(dl.data, dl.device, std::move(shape), dl.dtype, std::move(owner));
  if (dl.byte_offset == 0) return tensor;
  return tensor.View(tensor.shape(), tensor.dtype(), dl.byte_offset);
}

Result<FfiValue> TakeResult(hetrt_ffi_any_t& value, const std::string& what, int depth = 0);

// A Shape or Array result; takes the object's reference.
Result<FfiValue> TakeShapeOrArray(hetrt_ffi_any_t& value, const std::string& what, int depth) {
  struct Release {
    hetrt_ffi_object_t* object;
    ~Release() { DecRef(object); }
  } release{value.v_obj};
  if (value.type_index == HETRT_FFI_SHAPE) {
    const auto* cell = reinterpret_cast<const hetrt_ffi_shape_object_t*>(value.v_obj);
    if (cell->size > 0 && cell->data == nullptr) return DataLoss(what + " returned a Shape with NULL dims");
    return FfiValue{FfiShape{{cell->data, cell->data + cell->size}}};
  }
  const auto* cell = reinterpret_cast<const hetrt_ffi_array_object_t*>(value.v_obj);
  if (depth >= kMaxArrayDepth)
    return Unimplemented(what + " returned arrays nested deeper than " + std::to_string(kMaxArrayDepth));
  if (cell->size < 0 || (cell->size > 0 && cell->data == nullptr))
    return DataLoss(what + " returned an Array of size " + std::to_string(cell->size) +
                    (cell->data == nullptr ? " with NULL items" : ""));
  FfiArray array;
  array.items.reserve(static_cast<size_t>(cell->size));
  for (int64_t i = 0; i < cell->size; ++i) {
    hetrt_ffi_any_t item = cell->data[i];  // the array's: take a reference of our own
    const std::string where = what + " (item " + std::to_string(i) + " of its Array)";
    HETRT_RETURN_IF_ERROR(CheckResultAny(item, where));
    if (item.type_index >= HETRT_FFI_STATIC_OBJECT_BEGIN) g_shim.inc_ref(item.v_obj);
    HETRT_ASSIGN_OR_RETURN(FfiValue taken, TakeResult(item, where, depth + 1));
    array.items.push_back(std::move(taken));
  }
  return FfiValue{std::move(array)};
}

Result<FfiValue> TakeResult(hetrt_ffi_any_t& value, const std::string& what, int depth) {
  Status valid = CheckResultAny(value, what);
  if (!valid.ok()) {
    // Released even so, where it is an object that can be: the callee gave it away.
    if (value.type_index >= HETRT_FFI_STATIC_OBJECT_BEGIN && value.v_obj != nullptr) DecRef(value.v_obj);
    return valid;
  }
  switch (value.type_index) {
    case HETRT_FFI_NONE: return FfiValue{};
    case HETRT_FFI_INT: return FfiValue{value.v_int64};
    case HETRT_FFI_BOOL: return FfiValue{value.v_int64 != 0};
    case HETRT_FFI_FLOAT: return FfiValue{value.v_float64};
    case HETRT_FFI_SMALL_STR:
    case HETRT_FFI_SMALL_BYTES:
    case HETRT_FFI_STR:
    case HETRT_FFI_BYTES: {
      HETRT_ASSIGN_OR_RETURN(std::string text, TakeFfiString(value, what));
      return FfiValue{std::move(text)};
    }
    case HETRT_FFI_TENSOR: {
      HETRT_ASSIGN_OR_RETURN(Tensor tensor, TakeTensor(value.v_obj, what));
      return FfiValue{std::move(tensor)};
    }
    case HETRT_FFI_SHAPE:
    case HETRT_FFI_ARRAY: return TakeShapeOrArray(value, what, depth);
    default:
      if (value.type_index >= HETRT_FFI_STATIC_OBJECT_BEGIN) DecRef(value.v_obj);
      return Unimplemented(what + " returned a " + IndexName(value.type_index) +
                           "; hetrt takes None, Int, Bool, Float, Str, Bytes, Tensor, Shape and Array results");
  }
}

// Moves the thread's raised error out and turns it into a Status.
Status TakeRaised(const std::string& what, FfiRaised* raised) {
  const FfiRaised error = TakeFfiRaised();
  if (raised != nullptr) *raised = error;
  const std::string text = what + " raised " + error.kind + ": " + error.message;
  if (error.kind == "ValueError" || error.kind == "TypeError" || error.kind == "IndexError" ||
      error.kind == "KeyError")
    return InvalidArgument(text);
  if (error.kind == "MemoryError") return ResourceExhausted(text);
  if (error.kind == "NotImplementedError") return Unimplemented(text);
  return Internal(text);
}

}  // namespace

Status LoadTvmFfiShim() {
  static std::once_flag once;
  static Status loaded;
  std::call_once(once, [] {
    const char* override_path = std::getenv("HETRT_TVM_FFI_SHIM");
    const std::string path = override_path ? override_path : CoreLibraryDir() + "/libtvm_ffi.so";
    dlerror();
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (handle == nullptr) {
      const char* why = dlerror();
      loaded = NotFound("hetrt's tvm-ffi runtime " + path + " cannot be loaded (" + (why ? why : "dlopen failed") +
                        "); it is built and installed beside libhetrt_core.so");
      return;
    }
    auto resolve = [&](auto& slot, const char* name) {
      slot = reinterpret_cast<std::remove_reference_t<decltype(slot)>>(dlsym(handle, name));
      if (slot == nullptr && loaded.ok()) loaded = DataLoss(path + " does not define " + name + ": not hetrt's shim");
    };
    resolve(g_shim.inc_ref, "TVMFFIObjectIncRef");
    resolve(g_shim.dec_ref, "TVMFFIObjectDecRef");
    resolve(g_shim.move_from_raised, "TVMFFIErrorMoveFromRaised");
    resolve(g_shim.set_raised, "TVMFFIErrorSetRaisedFromCStr");
    resolve(g_shim.function_call, "TVMFFIFunctionCall");
    resolve(g_shim.handle_init_once, "TVMFFIHandleInitOnce");
    resolve(g_shim.set_tensor_allocator, "hetrt_ffi_set_tensor_allocator");
    resolve(g_shim.set_stream_provider, "hetrt_ffi_set_stream_provider");
    if (loaded.ok()) {
      g_shim.set_tensor_allocator(AllocateTensorObject);
      g_shim.set_stream_provider(&CurrentNativeStream);
    }
  });
  return loaded;
}

const TvmFfiShim& Shim() { return g_shim; }

FfiRaised TakeFfiRaised() {
  void* handle = nullptr;
  g_shim.move_from_raised(&handle);
  FfiRaised error{"RuntimeError", "(the function failed without raising an error)"};
  auto* object = static_cast<hetrt_ffi_object_t*>(handle);
  if (object != nullptr && object->type_index == HETRT_FFI_ERROR) {
    const auto* cell = reinterpret_cast<const hetrt_ffi_error_object_t*>(object);
    if (cell->kind.data != nullptr) error.kind.assign(cell->kind.data, cell->kind.size);
    if (cell->message.data != nullptr) error.message.assign(cell->message.data, cell->message.size);
  } else if (object != nullptr) {
    error.message = "(it raised a " + IndexName(object->type_index) + " object, not an Error)";
  }
  DecRef(object);
  return error;
}

void ReleaseFfiObject(hetrt_ffi_object_t* object) { DecRef(object); }

Status FfiKernelOutcome(int failed, const hetrt_ffi_any_t& ret) {
  const bool object = ret.type_index >= HETRT_FFI_STATIC_OBJECT_BEGIN;
  if (object) ReleaseFfiObject(ret.v_obj);
  if (failed != 0) [[unlikely]] {
    const FfiRaised raised = TakeFfiRaised();
    return Internal(raised.kind + ": " + raised.message);
  }
  if (object) [[unlikely]]
    return Internal("the function returned tvm-ffi type index " + std::to_string(ret.type_index) +
                    ", which a kernel call cannot pass on");
  return OkStatus();
}

void SetFfiTensorMemory(FfiTensorMemory memory) { g_tensor_memory.store(memory, std::memory_order_release); }

Result<std::string> TakeFfiString(hetrt_ffi_any_t& value, const std::string& what) {
  switch (value.type_index) {
    case HETRT_FFI_SMALL_STR:
    case HETRT_FFI_SMALL_BYTES:
      if (value.small_str_len > 7) return DataLoss(what + ": a small string longer than 7 bytes");
      return std::string(value.v_bytes, value.small_str_len);
    case HETRT_FFI_STR:
    case HETRT_FFI_BYTES: {
      const auto* cell = reinterpret_cast<const hetrt_ffi_str_object_t*>(value.v_obj);
      std::string text = cell->bytes.data ? std::string(cell->bytes.data, cell->bytes.size) : std::string();
      DecRef(value.v_obj);
      return text;
    }
    default:
      if (value.type_index >= HETRT_FFI_STATIC_OBJECT_BEGIN && value.v_obj != nullptr) DecRef(value.v_obj);
      return InvalidArgument(what + " returned a " + IndexName(value.type_index) + ", not a string");
  }
}

Result<FfiValue> CallFfiFunction(hetrt_ffi_safe_call_t function, void* handle, std::span<const FfiValue> args,
                                 const std::string& what, FfiRaised* raised) {
  HETRT_RETURN_IF_ERROR(LoadTvmFfiShim());
  if (args.size() > static_cast<size_t>(INT32_MAX)) return InvalidArgument(what + ": too many arguments");
  std::vector<hetrt_ffi_any_t> packed(args.size());
  std::vector<hetrt_ffi_object_t*> made;  // our references, released after the call
  struct Release {
    std::vector<hetrt_ffi_object_t*>& objects;
    ~Release() {
      for (hetrt_ffi_object_t* o : objects) DecRef(o);
    }
  } release{made};
  for (size_t i = 0; i < args.size(); ++i) {
    hetrt_ffi_any_t& any = packed[i];
    if (const auto* text = std::get_if<std::string>(&args[i])) {
      std::memset(&any, 0, sizeof(any));
      any.type_index = HETRT_FFI_RAW_STR;  // borrowed for the call
      any.v_c_str = text->c_str();
      continue;
    }
    HETRT_ASSIGN_OR_RETURN(any, OwnedAny(args[i], 0), what + ": argument " + std::to_string(i));
    if (any.type_index >= HETRT_FFI_STATIC_OBJECT_BEGIN) made.push_back(any.v_obj);
  }
  hetrt_ffi_any_t result;
  std::memset(&result, 0, sizeof(result));
  result.type_index = HETRT_FFI_NONE;
  const int rc = function(handle, packed.data(), static_cast<int32_t>(packed.size()), &result);
  if (rc != 0) {
    // A result left behind by a failed call is the caller's to release.
    if (result.type_index >= HETRT_FFI_STATIC_OBJECT_BEGIN && result.v_obj != nullptr) DecRef(result.v_obj);
    return TakeRaised(what, raised);
  }
  return TakeResult(result, what);
}

}  // namespace hetrt
