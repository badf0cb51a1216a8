/* Host side of hetrt's OpenCL kernels (opencl_kernels.cl): one work item per
 * output element, so no cap on the number of work groups. */
#include "accel_host.h"

HK_ACCEL_KERNEL(hetrt_cl_add, hk_accel_add, "hetrt_cl_add_kernel", kDLOpenCL, 0)
HK_ACCEL_KERNEL(hetrt_cl_mul, hk_accel_mul, "hetrt_cl_mul_kernel", kDLOpenCL, 0)
HK_ACCEL_KERNEL(hetrt_cl_relu, hk_accel_relu, "hetrt_cl_relu_kernel", kDLOpenCL, 0)
HK_ACCEL_KERNEL(hetrt_cl_dense, hk_accel_dense, "hetrt_cl_dense_kernel", kDLOpenCL, 0)
HK_ACCEL_KERNEL(hetrt_cl_softmax, hk_accel_softmax, "hetrt_cl_softmax_kernel", kDLOpenCL, 0)
HK_ACCEL_KERNEL(hetrt_cl_conv2d, hk_accel_conv2d, "hetrt_cl_conv2d_kernel", kDLOpenCL, 0)
HK_ACCEL_KERNEL(hetrt_cl_maxpool, hk_accel_maxpool, "hetrt_cl_maxpool_kernel", kDLOpenCL, 0)
