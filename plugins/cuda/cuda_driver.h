// The CUDA driver API, reached at run time: dlopen("libcuda.so.1") (or
// $HETRT_CUDA_DRIVER) and every entry point resolved by name, so the plugin
// links no CUDA library and loads on machines without a driver. The driver's
// types, values and entry point types are hetrt's own (cuda_driver_api.h): the
// plugin builds without the CUDA toolkit.
//
// Which function the plugin calls is fixed here, per entry point, not by the
// headers of any toolkit: a driver API function has variants (cuMemAlloc,
// cuMemAlloc_v2, ...), each introduced by one CUDA version with its own
// signature or semantics, and cuda.h maps each name to the newest variant of
// its own version (cuEventElapsedTime means cuEventElapsedTime_v2 since 12.8,
// a variant no 12.0-12.7 driver has). The plugin names the variant it calls
// and resolves exactly that one on every driver.
//
// NVIDIA's rules for cuGetProcAddress(symbol, &pfn, cudaVersion, flags,
// &symbolStatus) (cuda.h of CUDA 13.0, "Driver Entry Point Access"):
//   - `symbol` is the base name ("cuMemAlloc"); `cudaVersion` (1000 * major +
//     10 * minor) picks the variant: the one of the newest CUDA version that
//     is <= cudaVersion ("cuMemAlloc" at 3020 is cuMemAlloc_v2, at 2000 the
//     32-bit cuMemAlloc);
//   - a cudaVersion newer than the driver is CUDA_ERROR_INVALID_VALUE (so says
//     the 13.0 documentation; that of 12.0 and 12.2 does not);
//   - a symbol the driver does not know, or a cudaVersion older than its first
//     variant, is CUDA_SUCCESS with pfn NULL and symbolStatus
//     CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND or _VERSION_NOT_SUFFICIENT;
//   - flags CU_GET_PROC_ADDRESS_LEGACY_STREAM excludes the per-thread default
//     stream variants (_ptsz, _ptds), which PER_THREAD_DEFAULT_STREAM prefers;
//   - the pointer is to be cast to the PFN_<name>_v<version> type of
//     cudaTypedefs.h for that variant (cuda_driver_api.h declares the same).
// cuGetProcAddress_v2 (the five-argument form) came with 12.0.
#pragma once

#include <string>

#include "cuda_driver_api.h"

namespace hetrt::cuda {

// The driver API's names (CUresult, CUDA_SUCCESS, PFN_cuInit_v2000, ...), as
// the plugin's code and NVIDIA's documentation spell them.
using namespace cuda_api;

// The oldest driver the plugin accepts: CUDA 12.0 has cuGetProcAddress_v2 and
// every variant below. (Modules may need more: PTX from nvcc 13 needs a 13.0
// driver to JIT; module loads say so with both versions.)
inline constexpr int kMinDriverVersion = 12000;

// Every driver function the plugin calls, as X(name, symbol, version): the
// variant of `name` exported as `symbol`, introduced in CUDA `version`, called
// through PFN_<name>_v<version> (cuda_driver_api.h), never a per-thread
// default stream variant (_ptsz, _ptds). All exist in 12.0 (the newest,
// cuDevicePrimaryCtxRelease_v2, is 11.0's); cuEventElapsedTime stays the 2.0
// variant, which reports errors of earlier work as every other call does
// (12.8's _v2 need not).
// clang-format off
#define HETRT_CUDA_DRIVER_FUNCTIONS(X)                                                        \
  X(cuInit, cuInit, 2000)                                                                     \
  X(cuDriverGetVersion, cuDriverGetVersion, 2020)                                             \
  X(cuGetErrorName, cuGetErrorName, 6000)                                                     \
  X(cuGetErrorString, cuGetErrorString, 6000)                                                 \
  X(cuDeviceGetCount, cuDeviceGetCount, 2000)                                                 \
  X(cuDeviceGet, cuDeviceGet, 2000)                                                           \
  X(cuDeviceGetName, cuDeviceGetName, 2000)                                                   \
  X(cuDeviceGetAttribute, cuDeviceGetAttribute, 2000)                                         \
  X(cuDeviceTotalMem, cuDeviceTotalMem_v2, 3020)                                              \
  X(cuDeviceCanAccessPeer, cuDeviceCanAccessPeer, 4000)                                       \
  X(cuDevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain, 7000)                                 \
  X(cuDevicePrimaryCtxRelease, cuDevicePrimaryCtxRelease_v2, 11000)                           \
  X(cuCtxGetCurrent, cuCtxGetCurrent, 4000)                                                   \
  X(cuCtxSetCurrent, cuCtxSetCurrent, 4000)                                                   \
  X(cuCtxEnablePeerAccess, cuCtxEnablePeerAccess, 4000)                                       \
  X(cuCtxGetStreamPriorityRange, cuCtxGetStreamPriorityRange, 5050)                           \
  X(cuMemAlloc, cuMemAlloc_v2, 3020)                                                          \
  X(cuMemFree, cuMemFree_v2, 3020)                                                            \
  X(cuMemHostAlloc, cuMemHostAlloc, 2020)                                                     \
  X(cuMemFreeHost, cuMemFreeHost, 2000)                                                       \
  X(cuMemHostGetDevicePointer, cuMemHostGetDevicePointer_v2, 3020)                            \
  X(cuMemGetInfo, cuMemGetInfo_v2, 3020)                                                      \
  X(cuMemcpyAsync, cuMemcpyAsync, 4000)                                                       \
  X(cuMemcpyPeerAsync, cuMemcpyPeerAsync, 4000)                                               \
  X(cuStreamCreate, cuStreamCreate, 2000)                                                     \
  X(cuStreamCreateWithPriority, cuStreamCreateWithPriority, 5050)                             \
  X(cuStreamDestroy, cuStreamDestroy_v2, 4000)                                                \
  X(cuStreamSynchronize, cuStreamSynchronize, 2000)                                           \
  X(cuStreamWaitEvent, cuStreamWaitEvent, 3020)                                               \
  X(cuEventCreate, cuEventCreate, 2000)                                                       \
  X(cuEventDestroy, cuEventDestroy_v2, 4000)                                                  \
  X(cuEventRecord, cuEventRecord, 2000)                                                       \
  X(cuEventQuery, cuEventQuery, 2000)                                                         \
  X(cuEventSynchronize, cuEventSynchronize, 2000)                                             \
  X(cuEventElapsedTime, cuEventElapsedTime, 2000)                                             \
  X(cuModuleLoadDataEx, cuModuleLoadDataEx, 2010)                                             \
  X(cuModuleUnload, cuModuleUnload, 2000)                                                     \
  X(cuModuleGetFunction, cuModuleGetFunction, 2000)                                           \
  X(cuFuncSetAttribute, cuFuncSetAttribute, 9000)                                             \
  X(cuLaunchKernel, cuLaunchKernel, 4000)
// clang-format on

struct Driver {
#define HETRT_CUDA_DRIVER_POINTER(name, symbol, version) PFN_##name##_v##version name = nullptr;
  HETRT_CUDA_DRIVER_FUNCTIONS(HETRT_CUDA_DRIVER_POINTER)
#undef HETRT_CUDA_DRIVER_POINTER
  std::string library;  // the file that was opened (real path)
  int version = 0;      // cuDriverGetVersion: 13000 = 13.0
};

// The result of looking for a usable driver: `driver` with cuInit done and at
// least one device, or `reason` saying why there is no CUDA device:
//   "libcuda.so.1 not found (no NVIDIA driver installed)"
//   "the CUDA driver is the toolkit's stub library (<path>) ..."
//   "no CUDA-capable device ..."
//   "the CUDA driver is version 11.4 (<path>); the CUDA plugin needs 12.0 or newer"
struct DriverProbe {
  const Driver* driver = nullptr;
  int device_count = 0;
  std::string reason;
};

// Opens `library` (a file name the loader searches for, or a path) and
// checks it. Libraries stay loaded for the life of the process (drivers do not
// survive being unloaded), once per name, so probing again is cheap; the
// Driver lives as long as the plugin is loaded.
DriverProbe ProbeDriver(const std::string& library);
// $HETRT_CUDA_DRIVER when set, else "libcuda.so.1".
std::string DefaultDriverLibrary();

// "13.0" for 13000.
std::string VersionString(int version);
// "CUDA_ERROR_OUT_OF_MEMORY (2): out of memory", through the driver's own
// names when it has them.
std::string ResultText(const Driver* driver, CUresult result);

}  // namespace hetrt::cuda
