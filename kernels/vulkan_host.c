/* Host side of hetrt's Vulkan kernels (vulkan_kernels/, one .comp per op), TVM-style:
 * blockIdx.x work groups of the shader's 64 invocations. The shaders stride
 * over what does not fit, so blockIdx.x stays within the 65535 groups every
 * Vulkan device dispatches. */
#include "accel_host.h"

HK_ACCEL_KERNEL_SET(vk, kDLVulkan, 65535)
