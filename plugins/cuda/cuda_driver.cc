#include "cuda_driver.h"

#include <dlfcn.h>
#include <link.h>

#include <climits>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>

namespace hetrt::cuda {
namespace {

#define HETRT_CUDA_STR(x) #x

constexpr const char* kDefaultLibrary = "libcuda.so.1";

std::string RealPathOf(void* handle, const std::string& fallback) {
  link_map* map = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) != 0 || map == nullptr || map->l_name == nullptr) return fallback;
  char resolved[PATH_MAX];
  return realpath(map->l_name, resolved) ? resolved : map->l_name;
}

// Every entry point, each exactly the variant the table names: through
// cuGetProcAddress at the version that introduced it (so the driver answers
// with that variant, never a newer one), else by its exported name. Returns
// the exported name of the first one missing, or "".
std::string Resolve(void* handle, Driver* d) {
  auto get_proc = reinterpret_cast<PFN_cuGetProcAddress_v12000>(dlsym(handle, "cuGetProcAddress_v2"));
  auto find = [&](const char* name, const char* symbol, int version) -> void* {
    void* fn = nullptr;
    CUdriverProcAddressQueryResult found{};
    if (get_proc && get_proc(name, &fn, version, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &found) == CUDA_SUCCESS &&
        found == CU_GET_PROC_ADDRESS_SUCCESS && fn != nullptr)
      return fn;
    return dlsym(handle, symbol);
  };
#define HETRT_CUDA_RESOLVE(name, symbol, version)                                                             \
  d->name = reinterpret_cast<decltype(d->name)>(find(HETRT_CUDA_STR(name), HETRT_CUDA_STR(symbol), version)); \
  if (d->name == nullptr) return HETRT_CUDA_STR(symbol);
  HETRT_CUDA_DRIVER_FUNCTIONS(HETRT_CUDA_RESOLVE)
#undef HETRT_CUDA_RESOLVE
  return "";
}

bool IsStubPath(const std::string& path) { return path.find("/stubs/") != std::string::npos; }

DriverProbe Probe(const std::string& library, std::unique_ptr<Driver>& owner) {
  DriverProbe probe;
  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    probe.reason = library == kDefaultLibrary
                       ? "libcuda.so.1 not found (no NVIDIA driver installed)"
                       : "CUDA driver '" + library + "' could not be opened: " + (why ? why : "dlopen failed");
    return probe;
  }
  auto driver = std::make_unique<Driver>();
  driver->library = RealPathOf(handle, library);
  const std::string stub = "the CUDA driver is the toolkit's stub library (" + driver->library +
                           "): install the NVIDIA driver, or put its libcuda.so.1 before the stub on the library path";
  if (IsStubPath(driver->library)) {
    probe.reason = stub;
    return probe;
  }
  // The version first: an old driver lacks some entry points, and saying it is
  // too old is the better message.
  driver->cuDriverGetVersion =
      reinterpret_cast<decltype(driver->cuDriverGetVersion)>(dlsym(handle, "cuDriverGetVersion"));
  driver->cuInit = reinterpret_cast<decltype(driver->cuInit)>(dlsym(handle, "cuInit"));
  if (driver->cuDriverGetVersion == nullptr || driver->cuInit == nullptr) {
    probe.reason = driver->library + " is not a CUDA driver (no cuInit/cuDriverGetVersion)";
    return probe;
  }
  const CUresult versioned = driver->cuDriverGetVersion(&driver->version);
  if (versioned == CUDA_ERROR_STUB_LIBRARY) {
    probe.reason = stub;
    return probe;
  }
  if (versioned == CUDA_SUCCESS && driver->version < kMinDriverVersion) {
    probe.reason = "the CUDA driver is version " + VersionString(driver->version) + " (" + driver->library +
                   "); the CUDA plugin needs " + VersionString(kMinDriverVersion) + " or newer";
    return probe;
  }
  if (std::string missing = Resolve(handle, driver.get()); !missing.empty()) {
    probe.reason =
        "the CUDA driver " + driver->library + " (version " + VersionString(driver->version) + ") lacks " + missing;
    return probe;
  }
  switch (const CUresult init = driver->cuInit(0)) {
    case CUDA_SUCCESS: break;
    case CUDA_ERROR_STUB_LIBRARY: probe.reason = stub; return probe;
    case CUDA_ERROR_NO_DEVICE:
      probe.reason = "no CUDA-capable device (the driver " + VersionString(driver->version) + " found none)";
      return probe;
    case CUDA_ERROR_SYSTEM_DRIVER_MISMATCH:
      probe.reason = "the CUDA driver library (version " + VersionString(driver->version) +
                     ") does not match the NVIDIA kernel module (CUDA_ERROR_SYSTEM_DRIVER_MISMATCH)";
      return probe;
    default: probe.reason = "cuInit failed: " + ResultText(driver.get(), init); return probe;
  }
  int count = 0;
  if (const CUresult r = driver->cuDeviceGetCount(&count); r != CUDA_SUCCESS) {
    probe.reason = "cuDeviceGetCount failed: " + ResultText(driver.get(), r);
    return probe;
  }
  if (count == 0) {
    probe.reason = "no CUDA-capable device (the driver " + VersionString(driver->version) + " found none)";
    return probe;
  }
  probe.driver = driver.get();
  owner = std::move(driver);
  probe.device_count = count;
  return probe;
}

}  // namespace

DriverProbe ProbeDriver(const std::string& library) {
  static std::mutex mutex;
  // The table owns the entry points it resolved (freed when the plugin is
  // unloaded); the driver library itself is never unloaded.
  struct Entry {
    DriverProbe probe;
    std::unique_ptr<Driver> driver;
  };
  static std::map<std::string, Entry> probes;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = probes.find(library);
  if (it == probes.end()) {
    Entry entry;
    entry.probe = Probe(library, entry.driver);
    it = probes.emplace(library, std::move(entry)).first;
  }
  return it->second.probe;
}

std::string DefaultDriverLibrary() {
  const char* env = std::getenv("HETRT_CUDA_DRIVER");
  return env && *env ? env : kDefaultLibrary;
}

std::string VersionString(int version) {
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

std::string ResultText(const Driver* driver, CUresult result) {
  const char* name = nullptr;
  const char* text = nullptr;
  if (driver && driver->cuGetErrorName) driver->cuGetErrorName(result, &name);
  if (driver && driver->cuGetErrorString) driver->cuGetErrorString(result, &text);
  std::string s = (name ? name : "CUresult") + std::string(" (") + std::to_string(static_cast<int>(result)) + ")";
  return text ? s + ": " + text : s;
}

}  // namespace hetrt::cuda
