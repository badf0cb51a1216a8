// The fake driver's devices: cuInit, versions, error names, device
// attributes, primary contexts and peer access.
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <utility>

#include "fake_driver.h"

namespace fake_cuda {

int EnvInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}
int NumDevices() { return std::clamp(EnvInt("HETRT_FAKE_CUDA_DEVICES", 2), 0, 8); }
int Sm() { return EnvInt("HETRT_FAKE_CUDA_SM", 80); }
bool Integrated() { return EnvInt("HETRT_FAKE_CUDA_INTEGRATED", 0) != 0; }
uint64_t TotalMemory() { return uint64_t(std::max(EnvInt("HETRT_FAKE_CUDA_MEMORY_MIB", 512), 1)) << 20; }

int PtxIsa(int driver_version) {
  switch (driver_version) {
    case 11040: return 74;
    case 12000: return 80;
    case 12040: return 84;
    case 12080: return 87;
    case 13000: return 90;
    default: return (driver_version / 1000 - 4) * 10 + driver_version % 1000 / 10;
  }
}

void Log(const std::string& line) {
  const char* path = std::getenv("HETRT_FAKE_CUDA_LOG");
  if (path == nullptr || *path == '\0') return;
  if (FILE* f = std::fopen(path, "a")) {
    std::fprintf(f, "%s\n", line.c_str());
    std::fclose(f);
  }
}

uint64_t NowNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ULL + static_cast<uint64_t>(ts.tv_nsec);
}

State& S() {
  static State& s = *new State;  // never destroyed: stream threads may outlive static destructors
  return s;
}

thread_local CUctx_st* t_current = nullptr;

CUresult NeedInit() {
  Lock lock(S().mutex);
  return S().initialized ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
}

CUresult NeedContext(Lock&) {
  if (t_current == nullptr || t_current->retains <= 0) return CUDA_ERROR_INVALID_CONTEXT;  // none, or destroyed
  return t_current->sticky;
}

}  // namespace fake_cuda

using namespace fake_cuda;

namespace {

// cuGetErrorName and cuGetErrorString: the name and description of a CUresult
// this driver returns; CUDA_ERROR_INVALID_VALUE (and NULL) for any other.
CUresult ErrorText(CUresult error, const char** name, const char** text) {
  const char* found_name = nullptr;
  const char* found_text = nullptr;
  switch (error) {
#define HETRT_FAKE_ERROR(code, description) \
  case code: found_name = #code, found_text = description; break;
#include "fake_errors.inc"
#undef HETRT_FAKE_ERROR
    default: break;
  }
  if (name) *name = found_name;
  if (text) *text = found_text;
  return found_name ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult NeedDevice(CUdevice device) {
  if (CUresult r = NeedInit()) return r;
  return device < 0 || device >= NumDevices() ? CUDA_ERROR_INVALID_DEVICE : CUDA_SUCCESS;
}

}  // namespace

extern "C" {

CUresult cuInit(unsigned int flags) {
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  Lock lock(S().mutex);
  const int result = EnvInt("HETRT_FAKE_CUDA_INIT", 0);
  if (result == 0) S().initialized = true;
  return static_cast<CUresult>(result);
}

CUresult cuDriverGetVersion(int* version) {
  if (version == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *version = DriverVersion();
  return CUDA_SUCCESS;
}

CUresult cuGetErrorName(CUresult error, const char** name) {
  return name ? ErrorText(error, name, nullptr) : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuGetErrorString(CUresult error, const char** text) {
  return text ? ErrorText(error, nullptr, text) : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuDeviceGetCount(int* count) {
  if (CUresult r = NeedInit()) return r;
  if (count == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *count = NumDevices();
  return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  if (CUresult r = NeedDevice(ordinal)) return r;
  *device = ordinal;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char* name, int len, CUdevice device) {
  if (CUresult r = NeedDevice(device)) return r;
  std::snprintf(name, static_cast<size_t>(len), "hetrt fake CUDA device %d", device);
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int* value, CUdevice_attribute attribute, CUdevice device) {
  if (CUresult r = NeedDevice(device)) return r;
  switch (attribute) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *value = Sm() / 10; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *value = Sm() % 10; break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *value = 4; break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *value = 1024; break;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE: *value = 32; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: *value = 48 * 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *value = 160 * 1024; break;
    case CU_DEVICE_ATTRIBUTE_CLOCK_RATE: *value = 1000000; break;
    case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT: *value = 2; break;
    case CU_DEVICE_ATTRIBUTE_INTEGRATED: *value = Integrated(); break;
    case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY: *value = 1; break;
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: *value = 1; break;
    default: *value = 0; break;
  }
  return CUDA_SUCCESS;
}

CUresult cuDeviceTotalMem_v2(size_t* bytes, CUdevice device) {
  if (CUresult r = NeedDevice(device)) return r;
  *bytes = TotalMemory();
  return CUDA_SUCCESS;
}

CUresult cuDeviceCanAccessPeer(int* can, CUdevice a, CUdevice b) {
  if (CUresult r = NeedDevice(a)) return r;
  if (CUresult r = NeedDevice(b)) return r;
  *can = a != b;
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext* ctx, CUdevice device) {
  if (CUresult r = NeedDevice(device)) return r;
  Lock lock(S().mutex);
  CUctx_st& c = S().contexts[device];
  c.device = device;
  ++c.retains;
  *ctx = &c;
  return CUDA_SUCCESS;
}

// The last release destroys the context, as the driver does: its legacy
// stream, peer access and a sticky error go with it.
CUresult cuDevicePrimaryCtxRelease_v2(CUdevice device) {
  Lock lock(S().mutex);
  if (device < 0 || device >= NumDevices()) return CUDA_ERROR_INVALID_DEVICE;
  CUctx_st& c = S().contexts[device];
  if (c.retains <= 0) return CUDA_ERROR_INVALID_CONTEXT;
  if (--c.retains > 0) return CUDA_SUCCESS;
  if (CUstream_st* legacy = std::exchange(c.legacy, nullptr)) {
    StopQueue(lock, legacy->queue);
    delete legacy;
  }
  c.peers.clear();
  c.sticky = CUDA_SUCCESS;
  if (t_current == &c) t_current = nullptr;
  return CUDA_SUCCESS;
}

CUresult cuCtxGetCurrent(CUcontext* ctx) {
  if (CUresult r = NeedInit()) return r;
  *ctx = t_current;
  return CUDA_SUCCESS;
}

CUresult cuCtxSetCurrent(CUcontext ctx) {
  if (CUresult r = NeedInit()) return r;
  Lock lock(S().mutex);
  if (ctx && ctx->retains <= 0) return CUDA_ERROR_INVALID_CONTEXT;
  t_current = ctx;
  return CUDA_SUCCESS;
}

CUresult cuCtxEnablePeerAccess(CUcontext peer, unsigned int flags) {
  Lock lock(S().mutex);
  if (CUresult r = NeedContext(lock)) return r;
  if (peer == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (peer == t_current) return CUDA_ERROR_INVALID_DEVICE;
  auto& peers = t_current->peers;
  if (std::find(peers.begin(), peers.end(), peer->device) != peers.end()) return CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED;
  peers.push_back(peer->device);
  return CUDA_SUCCESS;
}

// As most GPUs: priorities 0 (least, the default) to -5 (greatest).
CUresult cuCtxGetStreamPriorityRange(int* least, int* greatest) {
  Lock lock(S().mutex);
  if (CUresult r = NeedContext(lock)) return r;
  if (least) *least = 0;
  if (greatest) *greatest = -5;
  return CUDA_SUCCESS;
}

}  // extern "C"
