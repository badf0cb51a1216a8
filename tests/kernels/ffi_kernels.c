/* A foreign tvm-ffi kernel library, as another compiler would emit one: only
 * __tvm_ffi_<name> safe-call functions (plus metadata and doc functions),
 * no blob, linked against libtvm_ffi.so (DT_NEEDED) and calling its C API by
 * symbol. Tensors are read as DLTensor* (7) or Tensor objects (70), as
 * tvm-ffi's own examples do. Used by tests/kernel_library_test.cc and the
 * Python tests. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hetrt/tvm_abi/tvm_ffi_c_abi.h"

#define EXPORT __attribute__((visibility("default")))

static int Raise(const char* kind, const char* message) {
  TVMFFIErrorSetRaisedFromCStr(kind, message);
  return -1;
}

/* The DLTensor an argument holds, or NULL with a TypeError raised. */
static DLTensor* TensorArg(const hetrt_ffi_any_t* arg) {
  if (arg->type_index == HETRT_FFI_DLTENSOR_PTR) return (DLTensor*)arg->v_ptr;
  if (arg->type_index == HETRT_FFI_TENSOR) return &((hetrt_ffi_tensor_object_t*)arg->v_obj)->dl;
  Raise("TypeError", "expected a tensor argument");
  return NULL;
}

static int64_t Elements(const DLTensor* t) {
  int64_t n = 1;
  for (int i = 0; i < t->ndim; ++i) n *= t->shape[i];
  return n;
}

static int CheckF32Cpu(const DLTensor* t, const char* which) {
  if (t->dtype.code != kDLFloat || t->dtype.bits != 32 || t->dtype.lanes != 1) {
    const char* parts[] = {"argument ", which, " must be float32"};
    TVMFFIErrorSetRaisedFromCStrParts("ValueError", parts, 3);
    return -1;
  }
  if (t->device.device_type != kDLCPU) return Raise("ValueError", "this kernel runs on CPU tensors only");
  return 0;
}

/* add_one(x, y): y = x + 1, destination passing (tvm-ffi's add_one_cpu). */
EXPORT int __tvm_ffi_add_one(void* handle, const hetrt_ffi_any_t* args, int32_t num_args, hetrt_ffi_any_t* result) {
  (void)handle;
  (void)result;
  if (num_args != 2) return Raise("TypeError", "add_one takes 2 arguments (x, y)");
  DLTensor* x = TensorArg(&args[0]);
  DLTensor* y = TensorArg(&args[1]);
  if (x == NULL || y == NULL) return -1;
  if (CheckF32Cpu(x, "x") || CheckF32Cpu(y, "y")) return -1;
  if (Elements(x) != Elements(y)) return Raise("ValueError", "x and y differ in size");
  const float* in = (const float*)((char*)x->data + x->byte_offset);
  float* out = (float*)((char*)y->data + y->byte_offset);
  for (int64_t i = 0; i < Elements(x); ++i) out[i] = in[i] + 1.0f;
  return 0;
}

EXPORT int __tvm_ffi__metadata_add_one(void* handle, const hetrt_ffi_any_t* args, int32_t num_args,
                                       hetrt_ffi_any_t* result) {
  (void)handle;
  (void)args;
  (void)num_args;
  static const char kJson[] = "{\"type_schema\": \"(Tensor, Tensor) -> None\"}";
  hetrt_ffi_byte_array_t text = {kJson, sizeof(kJson) - 1};
  return TVMFFIStringFromByteArray(&text, result);
}

EXPORT int __tvm_ffi__doc_add_one(void* handle, const hetrt_ffi_any_t* args, int32_t num_args,
                                  hetrt_ffi_any_t* result) {
  (void)handle;
  (void)args;
  (void)num_args;
  hetrt_ffi_byte_array_t text = {"y = x + 1", 9};
  return TVMFFIStringFromByteArray(&text, result);
}

/* scale(x, y, alpha): y = alpha * x; alpha an Int or a Float. */
EXPORT int __tvm_ffi_scale(void* handle, const hetrt_ffi_any_t* args, int32_t num_args, hetrt_ffi_any_t* result) {
  (void)handle;
  (void)result;
  if (num_args != 3) return Raise("TypeError", "scale takes 3 arguments (x, y, alpha)");
  DLTensor* x = TensorArg(&args[0]);
  DLTensor* y = TensorArg(&args[1]);
  if (x == NULL || y == NULL) return -1;
  if (CheckF32Cpu(x, "x") || CheckF32Cpu(y, "y")) return -1;
  double alpha;
  if (args[2].type_index == HETRT_FFI_FLOAT) {
    alpha = args[2].v_float64;
  } else if (args[2].type_index == HETRT_FFI_INT) {
    alpha = (double)args[2].v_int64;
  } else {
    return Raise("TypeError", "alpha must be a number");
  }
  const float* in = (const float*)x->data;
  float* out = (float*)y->data;
  for (int64_t i = 0; i < Elements(x); ++i) out[i] = (float)(alpha * in[i]);
  return 0;
}

/* sum(x) -> Float. */
EXPORT int __tvm_ffi_sum(void* handle, const hetrt_ffi_any_t* args, int32_t num_args, hetrt_ffi_any_t* result) {
  (void)handle;
  if (num_args != 1) return Raise("TypeError", "sum takes 1 argument");
  DLTensor* x = TensorArg(&args[0]);
  if (x == NULL || CheckF32Cpu(x, "x")) return -1;
  double total = 0;
  for (int64_t i = 0; i < Elements(x); ++i) total += ((const float*)x->data)[i];
  memset(result, 0, sizeof(*result));
  result->type_index = HETRT_FFI_FLOAT;
  result->v_float64 = total;
  return 0;
}

/* iota(n) -> Tensor [0, 1, ..., n-1] float32, allocated by the runtime. */
EXPORT int __tvm_ffi_iota(void* handle, const hetrt_ffi_any_t* args, int32_t num_args, hetrt_ffi_any_t* result) {
  (void)handle;
  if (num_args != 1 || args[0].type_index != HETRT_FFI_INT) return Raise("TypeError", "iota takes one Int");
  if (args[0].v_int64 < 0) return Raise("ValueError", "iota: n must not be negative");
  int64_t shape[1] = {args[0].v_int64};
  DLTensor prototype;
  memset(&prototype, 0, sizeof(prototype));
  prototype.device.device_type = kDLCPU;
  prototype.ndim = 1;
  prototype.shape = shape;
  prototype.dtype.code = kDLFloat;
  prototype.dtype.bits = 32;
  prototype.dtype.lanes = 1;
  void* made = NULL;
  if (TVMFFIEnvTensorAlloc(&prototype, &made) != 0) return -1;
  DLTensor* t = &((hetrt_ffi_tensor_object_t*)made)->dl;
  for (int64_t i = 0; i < shape[0]; ++i) ((float*)t->data)[i] = (float)i;
  memset(result, 0, sizeof(*result));
  result->type_index = HETRT_FFI_TENSOR;
  result->v_obj = (hetrt_ffi_object_t*)made;
  return 0;
}

/* keep(x) holds a reference to x (a Tensor object) until release_kept();
 * kept_sum() reads it meanwhile: the caller may have dropped its own. */
static hetrt_ffi_object_t* kept = NULL;

EXPORT int __tvm_ffi_keep(void* handle, const hetrt_ffi_any_t* args, int32_t num_args, hetrt_ffi_any_t* result) {
  (void)handle;
  (void)result;
  if (num_args != 1 || args[0].type_index != HETRT_FFI_TENSOR)
    return Raise("TypeError", "keep takes one Tensor object");
  if (kept != NULL) TVMFFIObjectDecRef(kept);
  kept = args[0].v_obj;
  TVMFFIObjectIncRef(kept);
  return 0;
}

EXPORT int __tvm_ffi_kept_sum(void* handle, const hetrt_ffi_any_t* args, int32_t num_args, hetrt_ffi_any_t* result) {
  (void)handle;
  (void)args;
  (void)num_args;
  if (kept == NULL) return Raise("RuntimeError", "nothing kept");
  hetrt_ffi_any_t arg;
  memset(&arg, 0, sizeof(arg));
  arg.type_index = HETRT_FFI_TENSOR;
  arg.v_obj = kept;
  return __tvm_ffi_sum(NULL, &arg, 1, result);
}

EXPORT int __tvm_ffi_release_kept(void* handle, const hetrt_ffi_any_t* args, int32_t num_args,
                                  hetrt_ffi_any_t* result) {
  (void)handle;
  (void)args;
  (void)num_args;
  (void)result;
  if (kept != NULL) TVMFFIObjectDecRef(kept);
  kept = NULL;
  return 0;
}

/* greet(name) -> Str "hello, <name>", from a RawStr, SmallStr or Str argument. */
EXPORT int __tvm_ffi_greet(void* handle, const hetrt_ffi_any_t* args, int32_t num_args, hetrt_ffi_any_t* result) {
  (void)handle;
  if (num_args != 1) return Raise("TypeError", "greet takes 1 argument");
  const char* name;
  size_t size;
  if (args[0].type_index == HETRT_FFI_RAW_STR) {
    name = args[0].v_c_str;
    size = strlen(name);
  } else if (args[0].type_index == HETRT_FFI_SMALL_STR) {
    name = args[0].v_bytes;
    size = args[0].small_str_len;
  } else if (args[0].type_index == HETRT_FFI_STR) {
    const hetrt_ffi_str_object_t* s = (const hetrt_ffi_str_object_t*)args[0].v_obj;
    name = s->bytes.data;
    size = s->bytes.size;
  } else {
    return Raise("TypeError", "greet takes a string");
  }
  char text[256] = "hello, ";
  if (size > sizeof(text) - 8) return Raise("ValueError", "name too long");
  memcpy(text + 7, name, size);
  hetrt_ffi_byte_array_t bytes = {text, 7 + size};
  return TVMFFIStringFromByteArray(&bytes, result);
}

/* device_type(x) -> Int: where the tensor it was given lives. */
EXPORT int __tvm_ffi_device_type(void* handle, const hetrt_ffi_any_t* args, int32_t num_args,
                                 hetrt_ffi_any_t* result) {
  (void)handle;
  if (num_args != 1) return Raise("TypeError", "device_type takes 1 argument");
  DLTensor* x = TensorArg(&args[0]);
  if (x == NULL) return -1;
  memset(result, 0, sizeof(*result));
  result->type_index = HETRT_FFI_INT;
  result->v_int64 = x->device.device_type;
  return 0;
}

/* is_flag(b) -> Bool: the negation, to see bools both ways. */
EXPORT int __tvm_ffi_negate(void* handle, const hetrt_ffi_any_t* args, int32_t num_args, hetrt_ffi_any_t* result) {
  (void)handle;
  if (num_args != 1 || args[0].type_index != HETRT_FFI_BOOL) return Raise("TypeError", "negate takes one Bool");
  memset(result, 0, sizeof(*result));
  result->type_index = HETRT_FFI_BOOL;
  result->v_int64 = !args[0].v_int64;
  return 0;
}

/* Broken on purpose: a result no runtime may accept (a borrowed pointer). */
EXPORT int __tvm_ffi_bad_result(void* handle, const hetrt_ffi_any_t* args, int32_t num_args,
                                hetrt_ffi_any_t* result) {
  (void)handle;
  (void)args;
  (void)num_args;
  static const char kText[] = "dangling";
  memset(result, 0, sizeof(*result));
  result->type_index = HETRT_FFI_RAW_STR;
  result->v_c_str = kText;
  return 0;
}

/* Fails without raising: the runtime must still say what happened. */
EXPORT int __tvm_ffi_fail_silently(void* handle, const hetrt_ffi_any_t* args, int32_t num_args,
                                   hetrt_ffi_any_t* result) {
  (void)handle;
  (void)args;
  (void)num_args;
  (void)result;
  return -1;
}

/* describe(items): items an Array [Tensor x (float32, CPU), Shape s, Int k];
 * returns the Array [Shape (s's dims, then k), Float (the sum of x)], objects
 * made here with deleters of this library, as a foreign runtime makes them. */
typedef struct {
  hetrt_ffi_shape_object_t cell;
  int64_t dims[16];
} OwnShape;
typedef struct {
  hetrt_ffi_array_object_t cell;
  hetrt_ffi_any_t items[2]; /* in place after the object: data_deleter NULL */
} OwnArray;
static void FreeShape(void* self, int flags) {
  if (flags & HETRT_FFI_DELETE_WEAK) free(self);
}
static void FreeArray(void* self, int flags) {
  OwnArray* array = (OwnArray*)self;
  if (flags & HETRT_FFI_DELETE_STRONG) TVMFFIObjectDecRef(array->items[0].v_obj);
  if (flags & HETRT_FFI_DELETE_WEAK) free(self);
}
EXPORT int __tvm_ffi_describe(void* handle, const hetrt_ffi_any_t* args, int32_t num_args, hetrt_ffi_any_t* result) {
  (void)handle;
  if (num_args != 1 || args[0].type_index != HETRT_FFI_ARRAY) return Raise("TypeError", "describe(items: Array)");
  const hetrt_ffi_array_object_t* in = (const hetrt_ffi_array_object_t*)args[0].v_obj;
  if (in->size != 3 || in->data[0].type_index != HETRT_FFI_TENSOR || in->data[1].type_index != HETRT_FFI_SHAPE ||
      in->data[2].type_index != HETRT_FFI_INT)
    return Raise("TypeError", "describe: items [Tensor, Shape, Int] expected");
  const DLTensor* x = &((const hetrt_ffi_tensor_object_t*)in->data[0].v_obj)->dl;
  if (CheckF32Cpu(x, "x") != 0) return -1;
  const hetrt_ffi_shape_object_t* s = (const hetrt_ffi_shape_object_t*)in->data[1].v_obj;
  if (s->size > 15) return Raise("ValueError", "describe: at most 15 dims");
  OwnShape* shape = (OwnShape*)calloc(1, sizeof *shape);
  OwnArray* out = (OwnArray*)calloc(1, sizeof *out);
  if (shape == NULL || out == NULL) {
    free(shape);
    free(out);
    return Raise("MemoryError", "describe: out of memory");
  }
  shape->cell.header.combined_ref_count = 0x0000000100000001ull;
  shape->cell.header.type_index = HETRT_FFI_SHAPE;
  shape->cell.header.deleter = FreeShape;
  if (s->size > 0) memcpy(shape->dims, s->data, s->size * sizeof(int64_t));
  shape->dims[s->size] = in->data[2].v_int64;
  shape->cell.data = shape->dims;
  shape->cell.size = s->size + 1;
  double sum = 0;
  for (int64_t i = 0; i < Elements(x); ++i) sum += ((const float*)x->data)[i];
  out->cell.header.combined_ref_count = 0x0000000100000001ull;
  out->cell.header.type_index = HETRT_FFI_ARRAY;
  out->cell.header.deleter = FreeArray;
  out->items[0].type_index = HETRT_FFI_SHAPE;
  out->items[0].v_obj = &shape->cell.header;
  out->items[1].type_index = HETRT_FFI_FLOAT;
  out->items[1].v_float64 = sum;
  out->cell.data = out->items;
  out->cell.size = out->cell.capacity = 2;
  result->type_index = HETRT_FFI_ARRAY;
  result->v_obj = &out->cell.header;
  return 0;
}

#ifdef HETRT_TEST_NEEDS_UNKNOWN_FFI
/* A tvm-ffi function hetrt does not implement: loading must fail naming it. */
int TVMFFIFunctionGetGlobal(const hetrt_ffi_byte_array_t* name, void** out);
EXPORT int __tvm_ffi_lookup_global(void* handle, const hetrt_ffi_any_t* args, int32_t num_args,
                                   hetrt_ffi_any_t* result) {
  (void)handle;
  (void)args;
  (void)num_args;
  (void)result;
  hetrt_ffi_byte_array_t name = {"x", 1};
  void* f = NULL;
  return TVMFFIFunctionGetGlobal(&name, &f);
}
#endif
