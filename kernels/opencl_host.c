/* Host side of hetrt's OpenCL kernels (opencl_kernels.cl): one work item per
 * output element, so no cap on the number of work groups. */
#include "accel_host.h"

HK_ACCEL_KERNEL_SET(cl, kDLOpenCL, 0)
