/* Host side of hetrt's accelerator kernels (OpenCL, Vulkan): packed functions
 * that the graph executor calls with device DLTensors and that launch the
 * device kernel the way TVM's host code does (__tvm_set_device, then the kernel
 * found through the module context, buffers as data pointers, then the launch
 * extents blockIdx.x, threadIdx.x). One implementation per op serves every
 * device type; the device files only name their kernels. */
#ifndef HETRT_ACCEL_HOST_H_
#define HETRT_ACCEL_HOST_H_

#include "kernel_abi.h"

typedef struct {
  const char* name;    /* the packed function, for messages: "hetrt_vk_add" */
  const char* kernel;  /* the device kernel it launches: "hetrt_vk_add_kernel" */
  int device_type;
  int64_t max_blocks;  /* cap on blockIdx.x (kernels then stride over the rest); 0: none */
  void* cached;        /* the kernel's function handle, looked up once (atomically) */
} hk_accel_fn;

typedef int (*hk_accel_op)(hk_accel_fn* fn, hk_value_t* args, int32_t* codes, int32_t num_args);
int hk_accel_add(hk_accel_fn* fn, hk_value_t* args, int32_t* codes, int32_t num_args);
int hk_accel_mul(hk_accel_fn* fn, hk_value_t* args, int32_t* codes, int32_t num_args);
int hk_accel_relu(hk_accel_fn* fn, hk_value_t* args, int32_t* codes, int32_t num_args);
int hk_accel_dense(hk_accel_fn* fn, hk_value_t* args, int32_t* codes, int32_t num_args);
int hk_accel_softmax(hk_accel_fn* fn, hk_value_t* args, int32_t* codes, int32_t num_args);
int hk_accel_conv2d(hk_accel_fn* fn, hk_value_t* args, int32_t* codes, int32_t num_args);
int hk_accel_maxpool(hk_accel_fn* fn, hk_value_t* args, int32_t* codes, int32_t num_args);

/* Defines packed function `name` running `op` through `kernel` on `device_type`. */
#define HK_ACCEL_KERNEL(name, op, kernel, device_type, max_blocks)                      \
  HK_KERNEL(name) {                                                                      \
    static hk_accel_fn fn = {#name, kernel, device_type, max_blocks, 0};                 \
    return op(&fn, args, codes, num_args);                                               \
  }

/* Defines the whole set on one device: hetrt_<prefix>_add launching
 * "hetrt_<prefix>_add_kernel", and so on for every op. */
#define HK_ACCEL_KERNEL_SET(prefix, device_type, max_blocks)                                                  \
  HK_ACCEL_KERNEL(hetrt_##prefix##_add, hk_accel_add, "hetrt_" #prefix "_add_kernel", device_type, max_blocks)   \
  HK_ACCEL_KERNEL(hetrt_##prefix##_mul, hk_accel_mul, "hetrt_" #prefix "_mul_kernel", device_type, max_blocks)   \
  HK_ACCEL_KERNEL(hetrt_##prefix##_relu, hk_accel_relu, "hetrt_" #prefix "_relu_kernel", device_type, max_blocks) \
  HK_ACCEL_KERNEL(hetrt_##prefix##_dense, hk_accel_dense, "hetrt_" #prefix "_dense_kernel", device_type,         \
                  max_blocks)                                                                                  \
  HK_ACCEL_KERNEL(hetrt_##prefix##_softmax, hk_accel_softmax, "hetrt_" #prefix "_softmax_kernel", device_type,   \
                  max_blocks)                                                                                  \
  HK_ACCEL_KERNEL(hetrt_##prefix##_conv2d, hk_accel_conv2d, "hetrt_" #prefix "_conv2d_kernel", device_type,      \
                  max_blocks)                                                                                  \
  HK_ACCEL_KERNEL(hetrt_##prefix##_maxpool, hk_accel_maxpool, "hetrt_" #prefix "_maxpool_kernel", device_type,   \
                  max_blocks)

#endif
