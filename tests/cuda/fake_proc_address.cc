// cuGetProcAddress of the fake driver, following NVIDIA's documented rules
// (cuda.h, "Driver Entry Point Access"; the plugin's cuda_driver.h quotes
// them) over the variants this personality has (fake_exports.h):
//   - a name this driver does not know: CUDA_SUCCESS, pfn NULL,
//     CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
//   - a cudaVersion older than the name's first variant: CUDA_SUCCESS, pfn
//     NULL, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
//   - a cudaVersion newer than the driver: CUDA_ERROR_INVALID_VALUE on 13.0
//     and later, whose documentation says so; a 12.x personality answers for
//     its own version (its documentation says nothing);
//   - else the newest variant introduced at or before cudaVersion.
// The fake has no per-thread default stream variants: PER_THREAD_DEFAULT_STREAM
// falls back to the legacy ones, as documented when none exists.
#include <cstring>
#include <string>

#include "fake_driver.h"
#include "fake_exports.h"

using namespace fake_cuda;

namespace {

// The old variants the CUDA plugin must never reach: they say so and refuse,
// so a lookup at the wrong version fails a test instead of truncating a pointer.
CUresult OldVariantCalled(const char* symbol) {
  Log(std::string("old variant called: ") + symbol);
  return CUDA_ERROR_NOT_SUPPORTED;
}

struct Export {
  const char* name;
  const char* symbol;
  int version;
  void* function;
};

const Export kExports[] = {
#define HETRT_FAKE_EXPORT(name, symbol, version) {#name, #symbol, version, reinterpret_cast<void*>(&symbol)},
    HETRT_FAKE_CUDA_EXPORTS(HETRT_FAKE_EXPORT)
#undef HETRT_FAKE_EXPORT
};

CUresult Find(const char* symbol, void** pfn, int cuda_version, cuuint64_t flags,
              CUdriverProcAddressQueryResult* status) {
  if (symbol == nullptr || pfn == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *pfn = nullptr;
  if (flags & ~cuuint64_t{CU_GET_PROC_ADDRESS_LEGACY_STREAM | CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM})
    return CUDA_ERROR_INVALID_VALUE;
  const int driver = DriverVersion();
  if (cuda_version > driver) {
    if (driver >= 13000) return CUDA_ERROR_INVALID_VALUE;
    cuda_version = driver;
  }
  CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  const Export* best = nullptr;
  if (EnvInt("HETRT_FAKE_CUDA_NO_PROC_ADDRESS", 0) == 0) {
    for (const Export& e : kExports) {
      if (e.version > driver || std::strcmp(e.name, symbol) != 0) continue;
      if (e.version > cuda_version) {
        if (best == nullptr) found = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
        continue;
      }
      if (best == nullptr || e.version > best->version) best = &e;
    }
  }
  if (best != nullptr) {
    *pfn = best->function;
    found = CU_GET_PROC_ADDRESS_SUCCESS;
  }
  if (status) *status = found;
  Log(std::string("proc ") + symbol + " " + std::to_string(cuda_version) + " -> " + (best ? best->symbol : "none"));
  return CUDA_SUCCESS;
}

}  // namespace

extern "C" {

CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int cuda_version, cuuint64_t flags,
                             CUdriverProcAddressQueryResult* status) {
  return Find(symbol, pfn, cuda_version, flags, status);
}

CUresult cuGetProcAddress(const char* symbol, void** pfn, int cuda_version, cuuint64_t flags) {
  return Find(symbol, pfn, cuda_version, flags, nullptr);
}

CUresult cuDeviceTotalMem(unsigned int*, CUdevice) { return OldVariantCalled("cuDeviceTotalMem"); }
CUresult cuDevicePrimaryCtxRelease(CUdevice) { return OldVariantCalled("cuDevicePrimaryCtxRelease"); }
CUresult cuMemAlloc(unsigned int*, unsigned int) { return OldVariantCalled("cuMemAlloc"); }
CUresult cuMemFree(unsigned int) { return OldVariantCalled("cuMemFree"); }
CUresult cuMemHostGetDevicePointer(unsigned int*, void*, unsigned int) {
  return OldVariantCalled("cuMemHostGetDevicePointer");
}
CUresult cuMemGetInfo(unsigned int*, unsigned int*) { return OldVariantCalled("cuMemGetInfo"); }
CUresult cuStreamDestroy(CUstream) { return OldVariantCalled("cuStreamDestroy"); }
CUresult cuEventDestroy(CUevent) { return OldVariantCalled("cuEventDestroy"); }

}  // extern "C"
