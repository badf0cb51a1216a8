// A fake CUDA driver (libcuda.so.1) for machines without a GPU: the entry
// points the CUDA plugin resolves, on host memory. Work on a stream is queued
// and runs only when something waits for it (a stream or event synchronize, a
// stream waiting for an event when its own work runs, a free, a copy into
// pageable memory, which CUDA makes synchronous), so work that a caller
// forgot to wait for shows up as stale data, as it could on a GPU. Kernels are
// host builds of hetrt's CUDA C (kernels/cuda_kernels.cu,
// tests/cuda/test_kernels.cu) and of the TVM fixture's add kernel, run thread
// by thread with their arguments copied at launch. It checks what a real
// driver would refuse (no current context, a stream or event of another
// context, more dynamic shared memory than the function allows, copies past an
// allocation) so that the plugin's use of contexts, streams and limits is
// tested here.
//
// Configured by the environment:
//   HETRT_FAKE_CUDA_DEVICES   number of devices (2, so that peer copies are tested)
//   HETRT_FAKE_CUDA_VERSION   cuDriverGetVersion (13000)
//   HETRT_FAKE_CUDA_INIT      CUresult cuInit returns (0), e.g. 100: no device
//   HETRT_FAKE_CUDA_SM        compute capability x 10 (80)
//   HETRT_FAKE_CUDA_INTEGRATED  1: an integrated GPU that maps host memory
//   HETRT_FAKE_CUDA_NO_PROC_ADDRESS  1: cuGetProcAddress finds nothing (dlsym path)
//   HETRT_FAKE_CUDA_LOG       file that gets a line per launch, copy and attribute
#include <cuda.h>
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "cuda_driver.h"
#include "fake_cuda_shim.h"

// The kernels, compiled here as host code.
#include "../../kernels/cuda_kernels.cu"
#include "test_kernels.cu"

namespace {

int EnvInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}
int NumDevices() { return std::clamp(EnvInt("HETRT_FAKE_CUDA_DEVICES", 2), 0, 8); }
int Sm() { return EnvInt("HETRT_FAKE_CUDA_SM", 80); }

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

}  // namespace

// Handles: what CUcontext, CUstream, ... point to in this driver.
struct CUctx_st {
  int device = 0;
  int retains = 0;
  std::vector<int> peers;  // devices whose memory this context may access
};
struct CUstream_st {
  CUctx_st* ctx = nullptr;
  int id = 0;
  std::deque<std::function<void()>> pending = {};  // work not run yet, in order
  bool running = false;
};
struct CUevent_st {
  CUctx_st* ctx = nullptr;
  unsigned flags = 0;
  bool recorded = false;
  bool done = true;  // the stream reached it
  uint64_t ns = 0;
  int stream = 0;  // where it was last recorded (0: the legacy stream)
};
struct CUfunc_st;
struct CUmod_st {
  CUctx_st* ctx = nullptr;
  std::string image;                                       // the bytes that name the kernels
  std::vector<std::unique_ptr<CUfunc_st>> functions = {};  // handles die with the module, as in the driver
  ~CUmod_st();
};

namespace {

// A kernel with its arguments copied, as cuLaunchKernel does: each parameter
// takes its own width from params[i].
using Binder = std::function<void()> (*)(void** params);
template <class... A, size_t... I>
std::function<void()> BindWith(void (*f)(A...), void** params, std::index_sequence<I...>) {
  std::tuple<A...> args{*static_cast<A*>(params[I])...};
  return [f, args] { std::apply(f, args); };
}
template <class F>
struct Arity;
template <class... A>
struct Arity<void (*)(A...)> {
  static constexpr size_t value = sizeof...(A);
};
template <auto F>
std::function<void()> Bind(void** params) {
  return BindWith(F, params, std::make_index_sequence<Arity<decltype(F)>::value>{});
}

struct State;
State& S();

// TVM's tvmgen_default_fused_add_kernel of hetero_cuda_seed: T_add = p0 + p1,
// one thread per element (the output comes first, as TVM orders kernel
// buffers); bounded by the output's allocation.
void TvmFusedAddKernel(float* t_add, float* p0, float* p1);

struct FakeKernel {
  const char* name;
  Binder bind;  // NULL: does nothing (a TVM kernel this fake does not know)
};
const FakeKernel kKernels[] = {
    {"hetrt_cu_add_kernel", Bind<hetrt_cu_add_kernel>},
    {"hetrt_cu_mul_kernel", Bind<hetrt_cu_mul_kernel>},
    {"hetrt_cu_relu_kernel", Bind<hetrt_cu_relu_kernel>},
    {"hetrt_cu_dense_kernel", Bind<hetrt_cu_dense_kernel>},
    {"hetrt_cu_softmax_kernel", Bind<hetrt_cu_softmax_kernel>},
    {"hetrt_cu_conv2d_kernel", Bind<hetrt_cu_conv2d_kernel>},
    {"hetrt_cu_maxpool_kernel", Bind<hetrt_cu_maxpool_kernel>},
    {"hetrt_test_args_kernel", Bind<hetrt_test_args_kernel>},
    {"hetrt_test_shared_kernel", Bind<hetrt_test_shared_kernel>},
    {"tvmgen_default_fused_add_kernel", Bind<TvmFusedAddKernel>},
};

struct Allocation {
  size_t size = 0;
  int device = 0;
  bool host = false;
};

// One lock for everything: queued work runs under it, and work may queue
// nothing but may look up allocations, so it is recursive.
struct State {
  std::recursive_mutex mutex;
  bool initialized = false;
  CUctx_st contexts[8];
  std::map<uintptr_t, Allocation> allocations;
  std::map<int, CUstream_st*> streams;  // live streams by id
  int next_stream = 1;
};
State& S() {
  static State s;
  return s;
}
thread_local CUctx_st* t_current = nullptr;
using Lock = std::lock_guard<std::recursive_mutex>;

// Runs a stream's queued work (the GPU catching up).
void Drain(CUstream_st* s) {
  if (s == nullptr || s->running) return;  // already running: its earlier work is done
  s->running = true;
  while (!s->pending.empty()) {
    auto work = std::move(s->pending.front());
    s->pending.pop_front();
    work();
  }
  s->running = false;
}
void DrainAll() {
  for (auto& [id, s] : S().streams) Drain(s);
}
void DrainStream(int id) {
  if (auto it = S().streams.find(id); it != S().streams.end()) Drain(it->second);
}
// Queues work on a stream; the legacy NULL stream runs it now, after everything.
void Enqueue(CUstream_st* s, std::function<void()> work) {
  if (s != nullptr) {
    s->pending.push_back(std::move(work));
    return;
  }
  DrainAll();
  work();
}

const Allocation* FindAllocation(uintptr_t p, uintptr_t* base) {
  auto& all = S().allocations;
  auto it = all.upper_bound(p);
  if (it == all.begin()) return nullptr;
  --it;
  if (p >= it->first + std::max<size_t>(it->second.size, 1)) return nullptr;
  *base = it->first;
  return &it->second;
}

void TvmFusedAddKernel(float* t_add, float* p0, float* p1) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  uintptr_t base = 0;
  const Allocation* a = FindAllocation(reinterpret_cast<uintptr_t>(t_add), &base);
  if (a == nullptr || (reinterpret_cast<uintptr_t>(t_add + i + 1) > base + a->size)) return;
  t_add[i] = p0[i] + p1[i];
}

// Whether an address is memory this driver allocated (device or pinned host).
bool DriverMemory(uintptr_t p) {
  uintptr_t base = 0;
  return FindAllocation(p, &base) != nullptr;
}

// A device range must lie inside one of this driver's device allocations;
// anything else is host memory, which the fake cannot check.
bool RangeOk(uintptr_t p, size_t n) {
  uintptr_t base = 0;
  const Allocation* a = FindAllocation(p, &base);
  return a == nullptr || a->host || p + n <= base + a->size;
}

}  // namespace

struct CUfunc_st {
  CUmod_st* module = nullptr;
  const FakeKernel* kernel = nullptr;
  std::string name;
  int max_dynamic_shared = 48 * 1024;
};

CUmod_st::~CUmod_st() = default;

namespace {

CUresult NeedContext() { return t_current ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT; }
CUctx_st* ContextOf(CUstream s) { return s ? s->ctx : t_current; }
int StreamId(CUstream s) { return s ? s->id : 0; }

// PTX needs a driver whose version knows its ISA: 13.x reads PTX 9.x, 12.x 8.x.
bool PtxVersionSupported(const std::string& ptx, int driver_version) {
  const size_t at = ptx.find(".version ");
  if (at == std::string::npos) return false;
  return std::atoi(ptx.c_str() + at + 9) <= driver_version / 1000 - 4;
}

// Whether a fatbin holds code for this GPU: PTX of an older architecture, or
// a cubin of the same major version and no newer minor one.
bool FatbinFits(const unsigned char* p, int sm) {
  uint16_t header = 0;
  uint64_t size = 0;
  std::memcpy(&header, p + 6, 2);
  std::memcpy(&size, p + 8, 8);
  for (uint64_t at = header; at + 32 <= header + size;) {
    uint16_t kind = 0;
    uint32_t entry_header = 0, arch = 0;
    uint64_t payload = 0;
    std::memcpy(&kind, p + at, 2);
    std::memcpy(&entry_header, p + at + 4, 4);
    std::memcpy(&payload, p + at + 8, 8);
    std::memcpy(&arch, p + at + 28, 4);
    if ((kind == 1 && static_cast<int>(arch) <= sm) ||
        (kind == 2 && static_cast<int>(arch) / 10 == sm / 10 && static_cast<int>(arch) <= sm))
      return true;
    if (entry_header == 0) break;
    at += entry_header + payload;
  }
  return false;
}

std::string FatbinBytes(const void* image) {
  const auto* p = static_cast<const unsigned char*>(image);
  uint16_t header = 0;
  uint64_t size = 0;
  std::memcpy(&header, p + 6, 2);
  std::memcpy(&size, p + 8, 8);
  return std::string(reinterpret_cast<const char*>(p), header + size);
}

void WriteLog(unsigned n, CUjit_option* options, void** values, const std::string& text) {
  char* buffer = nullptr;
  size_t size = 0;
  for (unsigned i = 0; i < n; ++i) {
    if (options[i] == CU_JIT_ERROR_LOG_BUFFER) buffer = static_cast<char*>(values[i]);
    if (options[i] == CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES) size = reinterpret_cast<uintptr_t>(values[i]);
  }
  if (buffer && size) std::snprintf(buffer, size, "%s", text.c_str());
}

}  // namespace

extern "C" {

CUresult CUDAAPI cuInit(unsigned int) {
  Lock lock(S().mutex);
  const int result = EnvInt("HETRT_FAKE_CUDA_INIT", 0);
  if (result == 0) S().initialized = true;
  return static_cast<CUresult>(result);
}

CUresult CUDAAPI cuDriverGetVersion(int* version) {
  *version = EnvInt("HETRT_FAKE_CUDA_VERSION", 13000);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGetErrorName(CUresult error, const char** name) {
  switch (error) {
    case CUDA_SUCCESS: *name = "CUDA_SUCCESS"; break;
    case CUDA_ERROR_INVALID_VALUE: *name = "CUDA_ERROR_INVALID_VALUE"; break;
    case CUDA_ERROR_OUT_OF_MEMORY: *name = "CUDA_ERROR_OUT_OF_MEMORY"; break;
    case CUDA_ERROR_NO_DEVICE: *name = "CUDA_ERROR_NO_DEVICE"; break;
    case CUDA_ERROR_INVALID_CONTEXT: *name = "CUDA_ERROR_INVALID_CONTEXT"; break;
    case CUDA_ERROR_NO_BINARY_FOR_GPU: *name = "CUDA_ERROR_NO_BINARY_FOR_GPU"; break;
    case CUDA_ERROR_INVALID_IMAGE: *name = "CUDA_ERROR_INVALID_IMAGE"; break;
    case CUDA_ERROR_UNSUPPORTED_PTX_VERSION: *name = "CUDA_ERROR_UNSUPPORTED_PTX_VERSION"; break;
    case CUDA_ERROR_INVALID_HANDLE: *name = "CUDA_ERROR_INVALID_HANDLE"; break;
    case CUDA_ERROR_NOT_FOUND: *name = "CUDA_ERROR_NOT_FOUND"; break;
    default: *name = nullptr; return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGetErrorString(CUresult error, const char** text) {
  *text = error == CUDA_SUCCESS ? "no error" : "reported by the fake CUDA driver";
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetCount(int* count) {
  if (!S().initialized) return CUDA_ERROR_NOT_INITIALIZED;
  *count = NumDevices();
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGet(CUdevice* device, int ordinal) {
  if (ordinal < 0 || ordinal >= NumDevices()) return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetName(char* name, int len, CUdevice device) {
  std::snprintf(name, static_cast<size_t>(len), "hetrt fake CUDA device %d", device);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetAttribute(int* value, CUdevice_attribute attribute, CUdevice) {
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
    case CU_DEVICE_ATTRIBUTE_INTEGRATED:
    case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY: *value = EnvInt("HETRT_FAKE_CUDA_INTEGRATED", 0); break;
    default: *value = 0; break;
  }
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceTotalMem(size_t* bytes, CUdevice) {
  *bytes = size_t{1} << 30;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceCanAccessPeer(int* can, CUdevice a, CUdevice b) {
  *can = a != b;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext* ctx, CUdevice device) {
  Lock lock(S().mutex);
  if (device < 0 || device >= NumDevices()) return CUDA_ERROR_INVALID_DEVICE;
  CUctx_st& c = S().contexts[device];
  c.device = device;
  ++c.retains;
  *ctx = &c;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice device) {
  Lock lock(S().mutex);
  CUctx_st& c = S().contexts[device];
  if (c.retains <= 0) return CUDA_ERROR_INVALID_CONTEXT;
  --c.retains;
  if (t_current == &c && c.retains == 0) t_current = nullptr;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxGetCurrent(CUcontext* ctx) {
  *ctx = t_current;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxSetCurrent(CUcontext ctx) {
  if (ctx && ctx->retains <= 0) return CUDA_ERROR_INVALID_CONTEXT;
  t_current = ctx;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxEnablePeerAccess(CUcontext peer, unsigned int) {
  if (CUresult r = NeedContext()) return r;
  Lock lock(S().mutex);
  auto& peers = t_current->peers;
  if (std::find(peers.begin(), peers.end(), peer->device) != peers.end()) return CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED;
  peers.push_back(peer->device);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemAlloc(CUdeviceptr* ptr, size_t size) {
  if (CUresult r = NeedContext()) return r;
  if (size == 0) return CUDA_ERROR_INVALID_VALUE;
  void* p = std::aligned_alloc(256, (size + 255) / 256 * 256);
  if (p == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
  Lock lock(S().mutex);
  S().allocations[reinterpret_cast<uintptr_t>(p)] = {size, t_current->device, false};
  *ptr = reinterpret_cast<CUdeviceptr>(p);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemHostAlloc(void** ptr, size_t size, unsigned int) {
  if (CUresult r = NeedContext()) return r;
  void* p = std::aligned_alloc(4096, (size + 4095) / 4096 * 4096);
  if (p == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
  Lock lock(S().mutex);
  S().allocations[reinterpret_cast<uintptr_t>(p)] = {size, t_current->device, true};
  *ptr = p;
  return CUDA_SUCCESS;
}

// Freeing waits for all work first, as cuMemFree does.
static CUresult FreeAllocation(uintptr_t p, bool host) {
  Lock lock(S().mutex);
  DrainAll();
  auto it = S().allocations.find(p);
  if (it == S().allocations.end() || it->second.host != host) return CUDA_ERROR_INVALID_VALUE;
  S().allocations.erase(it);
  std::free(reinterpret_cast<void*>(p));
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemFree(CUdeviceptr ptr) {
  if (CUresult r = NeedContext()) return r;
  return FreeAllocation(ptr, false);
}

CUresult CUDAAPI cuMemFreeHost(void* ptr) { return FreeAllocation(reinterpret_cast<uintptr_t>(ptr), true); }

CUresult CUDAAPI cuMemHostGetDevicePointer(CUdeviceptr* device, void* host, unsigned int) {
  *device = reinterpret_cast<CUdeviceptr>(host);  // one address space, as on an integrated GPU
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemGetInfo(size_t* free, size_t* total) {
  *free = *total = size_t{1} << 30;
  return CUDA_SUCCESS;
}

// As CUDA does: a copy into pageable host memory returns once it is done
// (after the stream's earlier work); one from pageable memory reads it now and
// lands later; anything else runs when the stream gets to it.
CUresult CUDAAPI cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream stream) {
  if (CUresult r = NeedContext()) return r;
  Lock lock(S().mutex);
  if (ContextOf(stream) != t_current) return CUDA_ERROR_INVALID_HANDLE;
  if (!RangeOk(dst, n) || !RangeOk(src, n)) return CUDA_ERROR_INVALID_VALUE;
  Log("copy " + std::to_string(n) + " stream=" + std::to_string(StreamId(stream)));
  auto* to = reinterpret_cast<unsigned char*>(dst);
  if (!DriverMemory(dst)) {
    Drain(stream);
    std::memmove(to, reinterpret_cast<const void*>(src), n);
  } else if (!DriverMemory(src)) {
    const auto* from = reinterpret_cast<const unsigned char*>(src);
    Enqueue(stream,
            [to, bytes = std::vector<unsigned char>(from, from + n)] { std::memcpy(to, bytes.data(), bytes.size()); });
  } else {
    Enqueue(stream, [to, src, n] { std::memmove(to, reinterpret_cast<const void*>(src), n); });
  }
  return CUDA_SUCCESS;
}

// The synchronous copies bench/cuda_bench.cc measures the plugin against.
CUresult CUDAAPI cuMemcpyHtoD(CUdeviceptr dst, const void* src, size_t n) {
  return cuMemcpyAsync(dst, reinterpret_cast<CUdeviceptr>(src), n, nullptr);
}
CUresult CUDAAPI cuMemcpyDtoH(void* dst, CUdeviceptr src, size_t n) {
  return cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(dst), src, n, nullptr);
}
CUresult CUDAAPI cuMemcpyDtoD(CUdeviceptr dst, CUdeviceptr src, size_t n) {
  return cuMemcpyAsync(dst, src, n, nullptr);
}

CUresult CUDAAPI cuMemcpyPeerAsync(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src, CUcontext src_ctx, size_t n,
                                   CUstream stream) {
  Lock lock(S().mutex);
  if (dst_ctx == nullptr || src_ctx == nullptr || ContextOf(stream) == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  if (!RangeOk(dst, n) || !RangeOk(src, n)) return CUDA_ERROR_INVALID_VALUE;
  Log("peer copy " + std::to_string(n) + " cuda:" + std::to_string(src_ctx->device) +
      " -> cuda:" + std::to_string(dst_ctx->device) + " stream=" + std::to_string(StreamId(stream)));
  Enqueue(stream, [dst, src, n] { std::memmove(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), n); });
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamCreate(CUstream* stream, unsigned int) {
  if (CUresult r = NeedContext()) return r;
  Lock lock(S().mutex);
  *stream = new CUstream_st{t_current, S().next_stream++};
  S().streams[(*stream)->id] = *stream;
  return CUDA_SUCCESS;
}

// Its work still completes, as on a GPU.
CUresult CUDAAPI cuStreamDestroy(CUstream stream) {
  if (stream == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  Lock lock(S().mutex);
  Drain(stream);
  S().streams.erase(stream->id);
  delete stream;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamSynchronize(CUstream stream) {
  Lock lock(S().mutex);
  if (ContextOf(stream) == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  if (stream)
    Drain(stream);
  else
    DrainAll();
  return CUDA_SUCCESS;
}

// When the waiting stream's work gets here, the event's stream catches up
// first (all of it: being ahead is allowed).
CUresult CUDAAPI cuStreamWaitEvent(CUstream stream, CUevent event, unsigned int) {
  if (event == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  Lock lock(S().mutex);
  if (ContextOf(stream) == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  Log("wait stream=" + std::to_string(StreamId(stream)) + " for stream=" + std::to_string(event->stream));
  if (!event->done) Enqueue(stream, [source = event->stream] { DrainStream(source); });
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventCreate(CUevent* event, unsigned int flags) {
  if (CUresult r = NeedContext()) return r;
  *event = new CUevent_st{t_current, flags};
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventDestroy(CUevent event) {
  if (event == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  Lock lock(S().mutex);
  DrainStream(event->stream);  // queued work may still mark it
  delete event;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventRecord(CUevent event, CUstream stream) {
  if (event == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  Lock lock(S().mutex);
  if (ContextOf(stream) != event->ctx) return CUDA_ERROR_INVALID_HANDLE;  // an event and its stream share a context
  DrainStream(event->stream);  // a queued mark of the previous record must not land after this one
  event->recorded = true;
  event->done = false;
  event->stream = StreamId(stream);
  Enqueue(stream, [event] {
    event->ns = NowNs();
    event->done = true;
  });
  return CUDA_SUCCESS;
}

// Stricter than a real driver: event calls run with the event's context
// current. A query lets the GPU catch up (it would, eventually).
CUresult CUDAAPI cuEventSynchronize(CUevent event) {
  if (event == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  Lock lock(S().mutex);
  if (t_current != event->ctx) return CUDA_ERROR_INVALID_CONTEXT;
  DrainStream(event->stream);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuEventQuery(CUevent event) { return cuEventSynchronize(event); }

CUresult CUDAAPI cuEventElapsedTime(float* ms, CUevent start, CUevent end) {
  if (!start || !end || !start->recorded || !end->recorded) return CUDA_ERROR_INVALID_HANDLE;
  if (t_current != start->ctx || t_current != end->ctx) return CUDA_ERROR_INVALID_CONTEXT;
  if ((start->flags | end->flags) & CU_EVENT_DISABLE_TIMING) return CUDA_ERROR_INVALID_HANDLE;
  if (!start->done || !end->done) return CUDA_ERROR_NOT_READY;
  *ms = static_cast<float>((static_cast<double>(end->ns) - static_cast<double>(start->ns)) / 1e6);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuModuleLoadDataEx(CUmodule* module, const void* image, unsigned int n, CUjit_option* options,
                                    void** values) {
  if (CUresult r = NeedContext()) return r;
  const auto* bytes = static_cast<const unsigned char*>(image);
  uint32_t magic = 0;
  std::memcpy(&magic, bytes, 4);
  std::string text;
  if (magic == 0xBA55ED50) {
    if (!FatbinFits(bytes, Sm())) return CUDA_ERROR_NO_BINARY_FOR_GPU;
    text = FatbinBytes(image);
  } else if (std::memcmp(bytes,
                         "\x7f"
                         "ELF",
                         4) == 0) {
    return CUDA_ERROR_INVALID_IMAGE;  // no bare cubins in hetrt's tests
  } else {
    text = static_cast<const char*>(image);
    if (text.find(".version") == std::string::npos) return CUDA_ERROR_INVALID_IMAGE;
    int version = 0;
    cuDriverGetVersion(&version);
    if (!PtxVersionSupported(text, version)) {
      WriteLog(n, options, values,
               "ptxas fatal: Unsupported .version; the fake driver reads PTX up to " +
                   std::to_string(version / 1000 - 4) + ".x");
      return CUDA_ERROR_UNSUPPORTED_PTX_VERSION;
    }
  }
  *module = new CUmod_st{t_current, std::move(text)};
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuModuleUnload(CUmodule module) {
  if (module == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (t_current != module->ctx) return CUDA_ERROR_INVALID_CONTEXT;
  Lock lock(S().mutex);
  DrainAll();  // queued launches of its functions run first
  delete module;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuModuleGetFunction(CUfunction* f, CUmodule module, const char* name) {
  if (module == nullptr || module->image.find(name) == std::string::npos) return CUDA_ERROR_NOT_FOUND;
  const FakeKernel* kernel = nullptr;
  for (const FakeKernel& k : kKernels)
    if (std::strcmp(k.name, name) == 0) kernel = &k;
  module->functions.push_back(std::make_unique<CUfunc_st>(CUfunc_st{module, kernel, name}));
  *f = module->functions.back().get();
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuFuncSetAttribute(CUfunction f, CUfunction_attribute attribute, int value) {
  if (attribute != CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) return CUDA_ERROR_INVALID_VALUE;
  if (value > 160 * 1024) return CUDA_ERROR_INVALID_VALUE;
  f->max_dynamic_shared = value;
  Log("attribute " + f->name + " max_dynamic_shared=" + std::to_string(value));
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                unsigned bz, unsigned shared, CUstream stream, void** params, void** extra) {
  if (CUresult r = NeedContext()) return r;
  if (f == nullptr || f->module->ctx != t_current || ContextOf(stream) != t_current) return CUDA_ERROR_INVALID_CONTEXT;
  if (!gx || !gy || !gz || !bx || !by || !bz || bx * by * bz > 1024 || extra != nullptr)
    return CUDA_ERROR_INVALID_VALUE;
  if (static_cast<int>(shared) > f->max_dynamic_shared) return CUDA_ERROR_INVALID_VALUE;
  Log("launch " + f->name + " grid=" + std::to_string(gx) + "," + std::to_string(gy) + "," + std::to_string(gz) +
      " block=" + std::to_string(bx) + "," + std::to_string(by) + "," + std::to_string(bz) +
      " shared=" + std::to_string(shared) + " stream=" + std::to_string(StreamId(stream)) +
      " cuda:" + std::to_string(t_current->device));
  if (f->kernel == nullptr || f->kernel->bind == nullptr) return CUDA_SUCCESS;
  Lock lock(S().mutex);  // queued work runs under it; kernels may look up allocations
  Enqueue(stream, [run = f->kernel->bind(params), grid = FakeDim3{gx, gy, gz}, block = FakeDim3{bx, by, bz}, shared] {
    std::vector<unsigned char> dynamic_shared(shared);
    fake_dynamic_shared = dynamic_shared.data();
    gridDim = grid;
    blockDim = block;
    for (unsigned z = 0; z < grid.z; ++z)
      for (unsigned y = 0; y < grid.y; ++y)
        for (unsigned x = 0; x < grid.x; ++x)
          for (unsigned tz = 0; tz < block.z; ++tz)
            for (unsigned ty = 0; ty < block.y; ++ty)
              for (unsigned tx = 0; tx < block.x; ++tx) {
                blockIdx = {x, y, z};
                threadIdx = {tx, ty, tz};
                run();
              }
    fake_dynamic_shared = nullptr;
  });
  return CUDA_SUCCESS;
}

// Every function above by its un-versioned name, as a 12.0+ driver answers.
CUresult CUDAAPI cuGetProcAddress(const char* symbol, void** fn, int, cuuint64_t,
                                  CUdriverProcAddressQueryResult* found) {
  *fn = nullptr;
  if (found) *found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  if (EnvInt("HETRT_FAKE_CUDA_NO_PROC_ADDRESS", 0)) return CUDA_ERROR_NOT_FOUND;
#define HETRT_FAKE_PROC(name) \
  if (std::strcmp(symbol, #name) == 0) *fn = reinterpret_cast<void*>(&name);
  HETRT_CUDA_DRIVER_FUNCTIONS(HETRT_FAKE_PROC)
#undef HETRT_FAKE_PROC
  if (*fn == nullptr) return CUDA_ERROR_NOT_FOUND;
  if (found) *found = CU_GET_PROC_ADDRESS_SUCCESS;
  return CUDA_SUCCESS;
}

}  // extern "C"
