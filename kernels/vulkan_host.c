/* Host side of hetrt's Vulkan kernels (vulkan_kernels/, one .comp per op), TVM-style:
 * blockIdx.x work groups of the shader's 64 invocations. The shaders stride
 * over what does not fit, so blockIdx.x stays within the 65535 groups every
 * Vulkan device dispatches. */
#include "accel_host.h"

HK_ACCEL_KERNEL(hetrt_vk_add, hk_accel_add, "hetrt_vk_add_kernel", kDLVulkan, 65535)
HK_ACCEL_KERNEL(hetrt_vk_mul, hk_accel_mul, "hetrt_vk_mul_kernel", kDLVulkan, 65535)
HK_ACCEL_KERNEL(hetrt_vk_relu, hk_accel_relu, "hetrt_vk_relu_kernel", kDLVulkan, 65535)
HK_ACCEL_KERNEL(hetrt_vk_dense, hk_accel_dense, "hetrt_vk_dense_kernel", kDLVulkan, 65535)
HK_ACCEL_KERNEL(hetrt_vk_softmax, hk_accel_softmax, "hetrt_vk_softmax_kernel", kDLVulkan, 65535)
HK_ACCEL_KERNEL(hetrt_vk_conv2d, hk_accel_conv2d, "hetrt_vk_conv2d_kernel", kDLVulkan, 65535)
HK_ACCEL_KERNEL(hetrt_vk_maxpool, hk_accel_maxpool, "hetrt_vk_maxpool_kernel", kDLVulkan, 65535)
