/* A packed-ABI CPU kernel written here (not by TVM) for export round trips:
 * out = a + b over float32 tensors of equal size. */
#include <dlpack/dlpack.h>
#include <stdint.h>

typedef union {
  int64_t v_int64;
  double v_float64;
  void* v_handle;
} value_t;

/* TVM's convention: report errors through this pointer, which the loader fills. */
__attribute__((weak)) void (*__TVMAPISetLastError)(const char*) = 0;

static int fail(const char* message) {
  if (__TVMAPISetLastError) __TVMAPISetLastError(message);
  return -1;
}

__attribute__((visibility("default"))) int32_t hetrt_test_add_f32(value_t* args, int32_t* codes, int32_t n,
                                                                  value_t* ret, int32_t* ret_code, void* resource) {
  (void)ret, (void)ret_code, (void)resource;
  if (n != 3) return fail("hetrt_test_add_f32: expects 3 arguments");
  for (int i = 0; i < 3; ++i)
    if (codes[i] != 7 || args[i].v_handle == 0) return fail("hetrt_test_add_f32: arguments must be DLTensors");
  const DLTensor* a = (const DLTensor*)args[0].v_handle;
  const DLTensor* b = (const DLTensor*)args[1].v_handle;
  DLTensor* out = (DLTensor*)args[2].v_handle;
  int64_t count = 1;
  for (int d = 0; d < out->ndim; ++d) count *= out->shape[d];
  const float* x = (const float*)a->data;
  const float* y = (const float*)b->data;
  float* z = (float*)out->data;
  for (int64_t i = 0; i < count; ++i) z[i] = x[i] + y[i];
  return 0;
}
