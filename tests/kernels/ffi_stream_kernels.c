/* Foreign tvm-ffi kernels that launch work themselves, on the stream
 * TVMFFIEnvGetStream gives (as Triton's or TileLang's launchers do): it must
 * be where hetrt queued the work before the call, or the two race.
 * stream_of(device_type, device_id) returns that stream as an Int;
 * set_stream(device_type, device_id, stream) sets one as a framework would;
 * fill_on_stream(out, value) fills an OpenCL tensor there without waiting. */
#include <stdint.h>

#include "hetrt/tvm_abi/tvm_ffi_c_abi.h"

#ifdef HETRT_TEST_WITH_OPENCL
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#endif

#define EXPORT __attribute__((visibility("default")))

static int Raise(const char* kind, const char* message) {
  TVMFFIErrorSetRaisedFromCStr(kind, message);
  return -1;
}

EXPORT int __tvm_ffi_stream_of(void* handle, const hetrt_ffi_any_t* args, int32_t num_args, hetrt_ffi_any_t* result) {
  (void)handle;
  if (num_args != 2 || args[0].type_index != HETRT_FFI_INT || args[1].type_index != HETRT_FFI_INT)
    return Raise("TypeError", "stream_of(device_type: int, device_id: int)");
  result->type_index = HETRT_FFI_INT;
  result->v_int64 = (int64_t)(intptr_t)TVMFFIEnvGetStream((int32_t)args[0].v_int64, (int32_t)args[1].v_int64);
  return 0;
}

/* set_stream(device_type, device_id, stream: int) -> the stream it replaced,
 * as a framework sets its own stream around a call and restores it after. */
EXPORT int __tvm_ffi_set_stream(void* handle, const hetrt_ffi_any_t* args, int32_t num_args, hetrt_ffi_any_t* result) {
  (void)handle;
  if (num_args != 3 || args[0].type_index != HETRT_FFI_INT || args[1].type_index != HETRT_FFI_INT ||
      args[2].type_index != HETRT_FFI_INT)
    return Raise("TypeError", "set_stream(device_type: int, device_id: int, stream: int)");
  void* original = NULL;
  if (TVMFFIEnvSetStream((int32_t)args[0].v_int64, (int32_t)args[1].v_int64, (void*)(intptr_t)args[2].v_int64,
                         &original) != 0)
    return -1;
  result->type_index = HETRT_FFI_INT;
  result->v_int64 = (int64_t)(intptr_t)original;
  return 0;
}

#ifdef HETRT_TEST_WITH_OPENCL
EXPORT int __tvm_ffi_fill_on_stream(void* handle, const hetrt_ffi_any_t* args, int32_t num_args,
                                    hetrt_ffi_any_t* result) {
  (void)handle;
  (void)result;
  if (num_args != 2 || args[0].type_index != HETRT_FFI_TENSOR || args[1].type_index != HETRT_FFI_FLOAT)
    return Raise("TypeError", "fill_on_stream(out: Tensor, value: float)");
  const DLTensor* out = &((const hetrt_ffi_tensor_object_t*)args[0].v_obj)->dl;
  if (out->device.device_type != kDLOpenCL || out->dtype.code != kDLFloat || out->dtype.bits != 32)
    return Raise("ValueError", "fill_on_stream: a float32 OpenCL tensor expected");
  cl_command_queue queue = (cl_command_queue)TVMFFIEnvGetStream(kDLOpenCL, out->device.device_id);
  if (queue == NULL) return Raise("RuntimeError", "fill_on_stream: TVMFFIEnvGetStream gave no OpenCL queue");
  size_t n = 1;
  for (int i = 0; i < out->ndim; ++i) n *= (size_t)out->shape[i];
  const cl_float value = (cl_float)args[1].v_float64;
  /* OpenCL device memory is a descriptor whose first field is the cl_mem, as
   * in TVM's OpenCL runtime. */
  const cl_mem buffer = *(const cl_mem*)out->data;
  const cl_int status = clEnqueueFillBuffer(queue, buffer, &value, sizeof value, (size_t)out->byte_offset,
                                            n * sizeof value, 0, NULL, NULL);
  if (status != CL_SUCCESS) return Raise("RuntimeError", "fill_on_stream: clEnqueueFillBuffer failed");
  return 0;  /* no clFinish: the caller orders and waits */
}
#endif
