/* Host side of hetrt's CUDA kernels (cuda_kernels.cu): one thread per output
 * element; CUDA grids reach 2^31 - 1 blocks, so no cap. */
#include "accel_host.h"

HK_ACCEL_KERNEL_SET(cu, kDLCUDA, 0)
