// The CUDA driver API, reached at run time: dlopen("libcuda.so.1") (or
// $HETRT_CUDA_DRIVER) and every entry point resolved by name, so the plugin
// links no CUDA library and loads on machines without a driver. Only cuda.h's
// types are used at build time.
#pragma once

#include <cuda.h>

#include <string>

namespace hetrt::cuda {

// The oldest driver the plugin accepts: CUDA 12.0 has cuGetProcAddress_v2 and
// every entry point below. (Modules may need more: PTX from nvcc 13 needs a
// 13.0 driver to JIT; module loads say so with both versions.)
inline constexpr int kMinDriverVersion = 12000;

// Every driver function the plugin calls. X(name): `name` is cuda.h's
// un-versioned name; the pointer type is that of the version cuda.h maps it
// to (cuMemAlloc -> cuMemAlloc_v2).
// clang-format off
#define HETRT_CUDA_DRIVER_FUNCTIONS(X)                                                                      \
  X(cuInit) X(cuDriverGetVersion) X(cuGetErrorName) X(cuGetErrorString) X(cuDeviceGetCount) X(cuDeviceGet) \
  X(cuDeviceGetName) X(cuDeviceGetAttribute) X(cuDeviceTotalMem) X(cuDeviceCanAccessPeer)                   \
  X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease) X(cuCtxGetCurrent) X(cuCtxSetCurrent)            \
  X(cuCtxEnablePeerAccess) X(cuMemAlloc) X(cuMemFree) X(cuMemHostAlloc) X(cuMemFreeHost)                    \
  X(cuMemHostGetDevicePointer) X(cuMemGetInfo) X(cuMemcpyAsync) X(cuMemcpyPeerAsync) X(cuStreamCreate)      \
  X(cuStreamDestroy) X(cuStreamSynchronize) X(cuStreamWaitEvent) X(cuEventCreate) X(cuEventDestroy)         \
  X(cuEventRecord) X(cuEventQuery) X(cuEventSynchronize) X(cuEventElapsedTime) X(cuModuleLoadDataEx)        \
  X(cuModuleUnload) X(cuModuleGetFunction) X(cuFuncSetAttribute) X(cuLaunchKernel)  // clang-format on

struct Driver {
#define HETRT_CUDA_DRIVER_POINTER(name) decltype(&::name) name = nullptr;
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
//   "the CUDA driver is version 11.4; the CUDA plugin needs 12.0 or newer"
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
