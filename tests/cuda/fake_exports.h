// Every function the fake CUDA driver exports, as X(name, symbol, version):
// the variant of the driver API function `name` exported as `symbol`,
// introduced in CUDA `version` (PFN_<name>_v<version>, declared in
// plugins/cuda/cuda_driver_api.h as cudaTypedefs.h names it).
// A personality of driver version V exports the variants with version <= V
// and no other symbol (tests/CMakeLists.txt reads these lines to write each
// personality's linker version script), and its cuGetProcAddress answers from
// the same variants.
//
// Old variants the CUDA plugin must never call (the 32-bit cuMemAlloc, ...)
// are here too, as a real driver has them: a lookup at the wrong version finds
// them, and they fail loudly (fake_proc_address.cc).
#pragma once

// One entry per line, "X(name, symbol, version)": CMake parses them.
// clang-format off
#define HETRT_FAKE_CUDA_EXPORTS(X) \
  X(cuInit, cuInit, 2000) \
  X(cuDriverGetVersion, cuDriverGetVersion, 2020) \
  X(cuGetErrorName, cuGetErrorName, 6000) \
  X(cuGetErrorString, cuGetErrorString, 6000) \
  X(cuGetProcAddress, cuGetProcAddress, 11030) \
  X(cuGetProcAddress, cuGetProcAddress_v2, 12000) \
  X(cuDeviceGetCount, cuDeviceGetCount, 2000) \
  X(cuDeviceGet, cuDeviceGet, 2000) \
  X(cuDeviceGetName, cuDeviceGetName, 2000) \
  X(cuDeviceGetAttribute, cuDeviceGetAttribute, 2000) \
  X(cuDeviceTotalMem, cuDeviceTotalMem, 2000) \
  X(cuDeviceTotalMem, cuDeviceTotalMem_v2, 3020) \
  X(cuDeviceCanAccessPeer, cuDeviceCanAccessPeer, 4000) \
  X(cuDevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain, 7000) \
  X(cuDevicePrimaryCtxRelease, cuDevicePrimaryCtxRelease, 7000) \
  X(cuDevicePrimaryCtxRelease, cuDevicePrimaryCtxRelease_v2, 11000) \
  X(cuCtxGetCurrent, cuCtxGetCurrent, 4000) \
  X(cuCtxSetCurrent, cuCtxSetCurrent, 4000) \
  X(cuCtxEnablePeerAccess, cuCtxEnablePeerAccess, 4000) \
  X(cuCtxGetStreamPriorityRange, cuCtxGetStreamPriorityRange, 5050) \
  X(cuMemAlloc, cuMemAlloc, 2000) \
  X(cuMemAlloc, cuMemAlloc_v2, 3020) \
  X(cuMemFree, cuMemFree, 2000) \
  X(cuMemFree, cuMemFree_v2, 3020) \
  X(cuMemHostAlloc, cuMemHostAlloc, 2020) \
  X(cuMemFreeHost, cuMemFreeHost, 2000) \
  X(cuMemHostGetDevicePointer, cuMemHostGetDevicePointer, 2020) \
  X(cuMemHostGetDevicePointer, cuMemHostGetDevicePointer_v2, 3020) \
  X(cuMemGetInfo, cuMemGetInfo, 2000) \
  X(cuMemGetInfo, cuMemGetInfo_v2, 3020) \
  X(cuMemcpyAsync, cuMemcpyAsync, 4000) \
  X(cuMemcpyPeerAsync, cuMemcpyPeerAsync, 4000) \
  X(cuMemcpyHtoD, cuMemcpyHtoD_v2, 3020) \
  X(cuMemcpyDtoH, cuMemcpyDtoH_v2, 3020) \
  X(cuMemcpyDtoD, cuMemcpyDtoD_v2, 3020) \
  X(cuStreamCreate, cuStreamCreate, 2000) \
  X(cuStreamCreateWithPriority, cuStreamCreateWithPriority, 5050) \
  X(cuStreamDestroy, cuStreamDestroy, 2000) \
  X(cuStreamDestroy, cuStreamDestroy_v2, 4000) \
  X(cuStreamSynchronize, cuStreamSynchronize, 2000) \
  X(cuStreamWaitEvent, cuStreamWaitEvent, 3020) \
  X(cuEventCreate, cuEventCreate, 2000) \
  X(cuEventDestroy, cuEventDestroy, 2000) \
  X(cuEventDestroy, cuEventDestroy_v2, 4000) \
  X(cuEventRecord, cuEventRecord, 2000) \
  X(cuEventQuery, cuEventQuery, 2000) \
  X(cuEventSynchronize, cuEventSynchronize, 2000) \
  X(cuEventElapsedTime, cuEventElapsedTime, 2000) \
  X(cuEventElapsedTime, cuEventElapsedTime_v2, 12080) \
  X(cuModuleLoadDataEx, cuModuleLoadDataEx, 2010) \
  X(cuModuleUnload, cuModuleUnload, 2000) \
  X(cuModuleGetFunction, cuModuleGetFunction, 2000) \
  X(cuFuncSetAttribute, cuFuncSetAttribute, 9000) \
  X(cuLaunchKernel, cuLaunchKernel, 4000)
// clang-format on
