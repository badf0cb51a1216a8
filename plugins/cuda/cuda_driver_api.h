// The part of the CUDA driver API hetrt uses, declared by hetrt: the CUDA
// plugin (which opens libcuda.so.1 at run time and resolves every entry point
// by name, cuda_driver.h), the fake driver of the tests (tests/cuda/fake_*.cc,
// a libcuda.so.1 exporting exactly the variants below) and cuda_bench. With
// it nothing in hetrt needs the CUDA toolkit's cuda.h to build; the toolkit
// is needed only to compile CUDA C (nvcc: the kernel set's PTX, the test
// kernels' PTX and cubins).
//
// Names, values and signatures are the driver's (CUDA's cuda.h and
// cudaTypedefs.h), so NVIDIA's documentation reads as it is; they are facts
// of the driver's ABI, which NVIDIA keeps: a value or a variant's signature
// never changes once released (a change is a new variant, cuMemAlloc_v2). Where
// the toolkit is installed, tests/cuda/cuda_api_match_test.cc checks every
// declaration here against its cuda.h and cudaTypedefs.h: the types' sizes,
// each enum's underlying type and every value in the lists below, each
// PFN_<name>_v<version> against the toolkit's, and that each symbol the
// plugin and the fake resolve or export is that variant.
//
// Everything is in namespace hetrt::cuda_api, so that this header and cuda.h
// can be included in one translation unit (the check does), except the tags
// of the driver's objects (struct CUctx_st, ...): they are cuda.h's own, so a
// CUcontext here is cuda.h's CUcontext, and the fake driver completes them.
// Include this header before cuda.h: cuda.h defines some of the names below
// as macros (CU_MEMHOSTALLOC_PORTABLE, CU_LAUNCH_PARAM_END).
//
// To call another driver function, add its entry point to
// HETRT_CUDA_API_ENTRY_POINTS (and a value to its enum's list): the check
// test picks it up. Only what hetrt uses is here; this is not cuda.h.
#pragma once

#include <cstddef>
#include <cstdint>

#if defined(__cuda_cuda_h__)
#error "include cuda_driver_api.h before cuda.h: cuda.h defines some of its names as macros"
#endif

// The driver API's calling convention is CUDAAPI: __stdcall on Windows, the
// platform's default elsewhere. The plugin is for Linux (dlopen), where the
// types below, naming none, are the driver's.
#if defined(_WIN32)
#error "hetrt's CUDA driver API declarations assume the default calling convention (not Windows' __stdcall)"
#endif

// The driver's objects: opaque, never completed by the plugin.
struct CUctx_st;
struct CUmod_st;
struct CUfunc_st;
struct CUstream_st;
struct CUevent_st;

namespace hetrt::cuda_api {

// ---- Types

using cuuint64_t = std::uint64_t;
using CUdevice = int;  // an ordinal, 0 .. cuDeviceGetCount - 1
// A device address: as wide as a host pointer (the _v2 entry points take it;
// CUdeviceptr_v1 is what the 32-bit variants of CUDA 2.x took).
#if defined(__LP64__)
using CUdeviceptr = unsigned long long;
#else
using CUdeviceptr = unsigned int;
#endif
using CUdeviceptr_v1 = unsigned int;

using CUcontext = CUctx_st*;
using CUmodule = CUmod_st*;
using CUfunction = CUfunc_st*;
using CUstream = CUstream_st*;  // NULL: the context's legacy default stream
using CUevent = CUevent_st*;

// ---- Enumerations
//
// Each as a list X(name, value), which declares it below and which the check
// test walks. The underlying type is the one a compiler gives cuda.h's enums
// (all values non-negative: unsigned int), fixed here so that a value the
// list lacks (an error code of a newer driver) is still a valid CUresult.

// clang-format off
#define HETRT_CUDA_API_RESULTS(X)                \
  X(CUDA_SUCCESS, 0)                             \
  X(CUDA_ERROR_INVALID_VALUE, 1)                 \
  X(CUDA_ERROR_OUT_OF_MEMORY, 2)                 \
  X(CUDA_ERROR_NOT_INITIALIZED, 3)               \
  X(CUDA_ERROR_STUB_LIBRARY, 34)                 \
  X(CUDA_ERROR_NO_DEVICE, 100)                   \
  X(CUDA_ERROR_INVALID_DEVICE, 101)              \
  X(CUDA_ERROR_INVALID_IMAGE, 200)               \
  X(CUDA_ERROR_INVALID_CONTEXT, 201)             \
  X(CUDA_ERROR_NO_BINARY_FOR_GPU, 209)           \
  X(CUDA_ERROR_UNSUPPORTED_PTX_VERSION, 222)     \
  X(CUDA_ERROR_INVALID_HANDLE, 400)              \
  X(CUDA_ERROR_NOT_FOUND, 500)                   \
  X(CUDA_ERROR_NOT_READY, 600)                   \
  X(CUDA_ERROR_ILLEGAL_ADDRESS, 700)             \
  X(CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED, 704) \
  X(CUDA_ERROR_MISALIGNED_ADDRESS, 716)          \
  X(CUDA_ERROR_INVALID_ADDRESS_SPACE, 717)       \
  X(CUDA_ERROR_LAUNCH_FAILED, 719)               \
  X(CUDA_ERROR_NOT_SUPPORTED, 801)               \
  X(CUDA_ERROR_SYSTEM_DRIVER_MISMATCH, 803)

#define HETRT_CUDA_API_DEVICE_ATTRIBUTES(X)                      \
  X(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 1)                \
  X(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, 8)          \
  X(CU_DEVICE_ATTRIBUTE_WARP_SIZE, 10)                           \
  X(CU_DEVICE_ATTRIBUTE_CLOCK_RATE, 13)                          \
  X(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 16)                \
  X(CU_DEVICE_ATTRIBUTE_INTEGRATED, 18)                          \
  X(CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY, 19)                 \
  X(CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT, 40)                  \
  X(CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, 41)                  \
  X(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 75)            \
  X(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 76)            \
  X(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, 97)

#define HETRT_CUDA_API_FUNCTION_ATTRIBUTES(X) \
  X(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 8)

#define HETRT_CUDA_API_JIT_OPTIONS(X)      \
  X(CU_JIT_ERROR_LOG_BUFFER, 5)            \
  X(CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, 6)

#define HETRT_CUDA_API_STREAM_FLAGS(X) \
  X(CU_STREAM_DEFAULT, 0)              \
  X(CU_STREAM_NON_BLOCKING, 1)

#define HETRT_CUDA_API_EVENT_FLAGS(X) \
  X(CU_EVENT_DEFAULT, 0)              \
  X(CU_EVENT_DISABLE_TIMING, 2)

// cuGetProcAddress's flags and what it says it found.
#define HETRT_CUDA_API_PROC_ADDRESS_FLAGS(X)         \
  X(CU_GET_PROC_ADDRESS_DEFAULT, 0)                  \
  X(CU_GET_PROC_ADDRESS_LEGACY_STREAM, 1)            \
  X(CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, 2)

#define HETRT_CUDA_API_PROC_ADDRESS_RESULTS(X)   \
  X(CU_GET_PROC_ADDRESS_SUCCESS, 0)              \
  X(CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND, 1)     \
  X(CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT, 2)

// Every enumeration above as X(type, list).
#define HETRT_CUDA_API_ENUMS(X)                                   \
  X(CUresult, HETRT_CUDA_API_RESULTS)                             \
  X(CUdevice_attribute, HETRT_CUDA_API_DEVICE_ATTRIBUTES)         \
  X(CUfunction_attribute, HETRT_CUDA_API_FUNCTION_ATTRIBUTES)     \
  X(CUjit_option, HETRT_CUDA_API_JIT_OPTIONS)                     \
  X(CUstream_flags, HETRT_CUDA_API_STREAM_FLAGS)                  \
  X(CUevent_flags, HETRT_CUDA_API_EVENT_FLAGS)                    \
  X(CUdriverProcAddress_flags, HETRT_CUDA_API_PROC_ADDRESS_FLAGS) \
  X(CUdriverProcAddressQueryResult, HETRT_CUDA_API_PROC_ADDRESS_RESULTS)
// clang-format on

#define HETRT_CUDA_API_ENUMERATOR(name, value) name = value,
#define HETRT_CUDA_API_ENUM(type, list) enum type : unsigned int { list(HETRT_CUDA_API_ENUMERATOR) };
HETRT_CUDA_API_ENUMS(HETRT_CUDA_API_ENUM)
#undef HETRT_CUDA_API_ENUM
#undef HETRT_CUDA_API_ENUMERATOR

// ---- Constants cuda.h defines as macros (the reason to include this header
// first): cuMemHostAlloc's flags, and the keys of cuLaunchKernel's `extra`
// array (pointers holding small integers).

// clang-format off
#define HETRT_CUDA_API_HOST_ALLOC_FLAGS(X) \
  X(CU_MEMHOSTALLOC_PORTABLE, 0x01)        \
  X(CU_MEMHOSTALLOC_DEVICEMAP, 0x02)       \
  X(CU_MEMHOSTALLOC_WRITECOMBINED, 0x04)

#define HETRT_CUDA_API_LAUNCH_PARAMS(X)  \
  X(CU_LAUNCH_PARAM_END, 0x00)           \
  X(CU_LAUNCH_PARAM_BUFFER_POINTER, 0x01) \
  X(CU_LAUNCH_PARAM_BUFFER_SIZE, 0x02)
// clang-format on

#define HETRT_CUDA_API_FLAG(name, value) inline constexpr unsigned int name = value;
HETRT_CUDA_API_HOST_ALLOC_FLAGS(HETRT_CUDA_API_FLAG)
#undef HETRT_CUDA_API_FLAG
#define HETRT_CUDA_API_LAUNCH_PARAM(name, value) \
  inline void* const name = reinterpret_cast<void*>(std::uintptr_t{value});
HETRT_CUDA_API_LAUNCH_PARAMS(HETRT_CUDA_API_LAUNCH_PARAM)
#undef HETRT_CUDA_API_LAUNCH_PARAM

// ---- Entry points
//
// Each variant hetrt calls or the fake driver exports, as X(name, version,
// parameters): the variant of `name` introduced in CUDA `version` (1000 *
// major + 10 * minor), declared below as PFN_<name>_v<version>, a pointer to
// a function returning CUresult (cudaTypedefs.h's names for the same types).
// Which exported symbol is which variant is said where it is resolved
// (cuda_driver.h) and exported (tests/cuda/fake_exports.h).

// clang-format off
#define HETRT_CUDA_API_ENTRY_POINTS(X)                                                                         \
  X(cuInit, 2000, (unsigned int flags))                                                                        \
  X(cuDriverGetVersion, 2020, (int* version))                                                                  \
  X(cuGetErrorName, 6000, (CUresult error, const char** name))                                                 \
  X(cuGetErrorString, 6000, (CUresult error, const char** text))                                               \
  X(cuGetProcAddress, 11030, (const char* symbol, void** pfn, int cuda_version, cuuint64_t flags))             \
  X(cuGetProcAddress, 12000, (const char* symbol, void** pfn, int cuda_version, cuuint64_t flags,              \
                              CUdriverProcAddressQueryResult* status))                                         \
  X(cuDeviceGetCount, 2000, (int* count))                                                                      \
  X(cuDeviceGet, 2000, (CUdevice* device, int ordinal))                                                        \
  X(cuDeviceGetName, 2000, (char* name, int size, CUdevice device))                                            \
  X(cuDeviceGetAttribute, 2000, (int* value, CUdevice_attribute attribute, CUdevice device))                   \
  X(cuDeviceTotalMem, 2000, (unsigned int* bytes, CUdevice device))                                            \
  X(cuDeviceTotalMem, 3020, (size_t* bytes, CUdevice device))                                                  \
  X(cuDeviceCanAccessPeer, 4000, (int* can_access, CUdevice device, CUdevice peer))                            \
  X(cuDevicePrimaryCtxRetain, 7000, (CUcontext* context, CUdevice device))                                     \
  X(cuDevicePrimaryCtxRelease, 7000, (CUdevice device))                                                        \
  X(cuDevicePrimaryCtxRelease, 11000, (CUdevice device))                                                       \
  X(cuCtxGetCurrent, 4000, (CUcontext* context))                                                               \
  X(cuCtxSetCurrent, 4000, (CUcontext context))                                                                \
  X(cuCtxSynchronize, 2000, ())                                                                                \
  X(cuCtxEnablePeerAccess, 4000, (CUcontext peer, unsigned int flags))                                         \
  X(cuCtxGetStreamPriorityRange, 5050, (int* least, int* greatest))                                            \
  X(cuMemAlloc, 2000, (CUdeviceptr_v1* address, unsigned int bytes))                                           \
  X(cuMemAlloc, 3020, (CUdeviceptr* address, size_t bytes))                                                    \
  X(cuMemFree, 2000, (CUdeviceptr_v1 address))                                                                 \
  X(cuMemFree, 3020, (CUdeviceptr address))                                                                    \
  X(cuMemHostAlloc, 2020, (void** host, size_t bytes, unsigned int flags))                                     \
  X(cuMemFreeHost, 2000, (void* host))                                                                         \
  X(cuMemHostGetDevicePointer, 2020, (CUdeviceptr_v1* address, void* host, unsigned int flags))                \
  X(cuMemHostGetDevicePointer, 3020, (CUdeviceptr* address, void* host, unsigned int flags))                   \
  X(cuMemGetInfo, 2000, (unsigned int* free, unsigned int* total))                                             \
  X(cuMemGetInfo, 3020, (size_t* free, size_t* total))                                                         \
  X(cuMemcpyAsync, 4000, (CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream))                    \
  X(cuMemcpyPeerAsync, 4000, (CUdeviceptr dst, CUcontext dst_context, CUdeviceptr src, CUcontext src_context,  \
                              size_t bytes, CUstream stream))                                                  \
  X(cuMemcpyHtoD, 3020, (CUdeviceptr dst, const void* src, size_t bytes))                                      \
  X(cuMemcpyDtoH, 3020, (void* dst, CUdeviceptr src, size_t bytes))                                            \
  X(cuMemcpyDtoD, 3020, (CUdeviceptr dst, CUdeviceptr src, size_t bytes))                                      \
  X(cuStreamCreate, 2000, (CUstream* stream, unsigned int flags))                                              \
  X(cuStreamCreateWithPriority, 5050, (CUstream* stream, unsigned int flags, int priority))                    \
  X(cuStreamDestroy, 2000, (CUstream stream))                                                                  \
  X(cuStreamDestroy, 4000, (CUstream stream))                                                                  \
  X(cuStreamSynchronize, 2000, (CUstream stream))                                                              \
  X(cuStreamWaitEvent, 3020, (CUstream stream, CUevent event, unsigned int flags))                             \
  X(cuEventCreate, 2000, (CUevent* event, unsigned int flags))                                                 \
  X(cuEventDestroy, 2000, (CUevent event))                                                                     \
  X(cuEventDestroy, 4000, (CUevent event))                                                                     \
  X(cuEventRecord, 2000, (CUevent event, CUstream stream))                                                     \
  X(cuEventQuery, 2000, (CUevent event))                                                                       \
  X(cuEventSynchronize, 2000, (CUevent event))                                                                 \
  X(cuEventElapsedTime, 2000, (float* ms, CUevent start, CUevent end))                                         \
  X(cuEventElapsedTime, 12080, (float* ms, CUevent start, CUevent end))                                        \
  X(cuModuleLoadDataEx, 2010, (CUmodule* module, const void* image, unsigned int count, CUjit_option* options, \
                               void** values))                                                                 \
  X(cuModuleUnload, 2000, (CUmodule module))                                                                   \
  X(cuModuleGetFunction, 2000, (CUfunction* function, CUmodule module, const char* name))                      \
  X(cuFuncSetAttribute, 9000, (CUfunction function, CUfunction_attribute attribute, int value))                \
  X(cuLaunchKernel, 4000, (CUfunction function, unsigned int grid_x, unsigned int grid_y, unsigned int grid_z, \
                           unsigned int block_x, unsigned int block_y, unsigned int block_z,                   \
                           unsigned int shared_bytes, CUstream stream, void** params, void** extra))
// clang-format on

#define HETRT_CUDA_API_PFN(name, version, parameters) using PFN_##name##_v##version = CUresult(*) parameters;
HETRT_CUDA_API_ENTRY_POINTS(HETRT_CUDA_API_PFN)
#undef HETRT_CUDA_API_PFN

}  // namespace hetrt::cuda_api
