// CUDA benchmarks: copy bandwidth through the plugin (host<->device from
// pageable and pinned memory, device<->device) against the driver's own
// cuMemcpy* in the same run, 4 KiB .. 1 GiB; per-node device time of the CUDA
// fixtures and of hetrt's kernel set; whole-model latency of the CUDA
// fixtures. Every benchmark skips (with the reason) without a CUDA device.
#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "bench_support.h"
#include "cuda_driver.h"

namespace hetrt {
namespace {

using namespace cuda_api;  // the driver API (plugins/cuda/cuda_driver_api.h)

constexpr DLDevice kCu{kDLCUDA, 0};
constexpr DLDevice kHost{kDLCPU, 0};
constexpr DLDataType kU8{kDLUInt, 8, 1};
constexpr int64_t kMinBytes = 4 << 10;
constexpr int64_t kMaxBytes = int64_t{1} << 30;

enum Direction { kHostToDevice = 0, kDeviceToHost = 1, kDeviceToDevice = 2 };

// The driver's plain copies, from the library the plugin opened, with the
// device's primary context current (the one the plugin allocates in).
struct RawDriver {
  PFN_cuMemcpyHtoD_v3020 htod = nullptr;  // cuMemcpyHtoD_v2
  PFN_cuMemcpyDtoH_v3020 dtoh = nullptr;  // cuMemcpyDtoH_v2
  PFN_cuMemcpyDtoD_v3020 dtod = nullptr;  // cuMemcpyDtoD_v2
  // cuMemcpyDtoD returns before the copy is done (the driver documents it as
  // asynchronous to the host): the reference waits for the context after it.
  PFN_cuCtxSynchronize_v2000 synchronize = nullptr;
  std::string error;
};

const RawDriver& Raw() {
  static const RawDriver raw = [] {
    RawDriver r;
    const cuda::DriverProbe probe = cuda::ProbeDriver(cuda::DefaultDriverLibrary());
    if (probe.driver == nullptr) {
      r.error = probe.reason;
      return r;
    }
    void* handle = dlopen(probe.driver->library.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      r.error = "cannot reopen " + probe.driver->library;
      return r;
    }
    r.htod = reinterpret_cast<decltype(r.htod)>(dlsym(handle, "cuMemcpyHtoD_v2"));
    r.dtoh = reinterpret_cast<decltype(r.dtoh)>(dlsym(handle, "cuMemcpyDtoH_v2"));
    r.dtod = reinterpret_cast<decltype(r.dtod)>(dlsym(handle, "cuMemcpyDtoD_v2"));
    r.synchronize = reinterpret_cast<decltype(r.synchronize)>(dlsym(handle, "cuCtxSynchronize"));
    CUcontext ctx = nullptr;
    CUdevice device = 0;
    if (!r.htod || !r.dtoh || !r.dtod || !r.synchronize)
      r.error = "the driver lacks cuMemcpy*_v2 or cuCtxSynchronize";
    else if (probe.driver->cuDeviceGet(&device, 0) || probe.driver->cuDevicePrimaryCtxRetain(&ctx, device))
      r.error = "cannot retain the primary context of cuda:0";
    return r;
  }();
  return raw;
}

// Makes cuda:0's primary context current on this thread (benchmark threads vary).
bool BindContext() {
  const cuda::DriverProbe probe = cuda::ProbeDriver(cuda::DefaultDriverLibrary());
  CUdevice device = 0;
  CUcontext ctx = nullptr;
  return probe.driver && !probe.driver->cuDeviceGet(&device, 0) &&
         !probe.driver->cuDevicePrimaryCtxRetain(&ctx, device) && !probe.driver->cuCtxSetCurrent(ctx) &&
         !probe.driver->cuDevicePrimaryCtxRelease(device);
}

struct Buffers {
  Tensor host, device, device2;
};

// state.range: 0 direction, 1 pinned host memory, 2 bytes.
Result<Buffers> MakeBuffers(benchmark::State& state) {
  HETRT_ASSIGN_OR_RETURN(Plugin * cu, PluginRegistry::Global().ForDevice(kCu));
  const int64_t bytes = state.range(2);
  Buffers b;
  if (state.range(1)) {
    HETRT_ASSIGN_OR_RETURN(b.host, Tensor::Empty({bytes}, kU8, cu->DeviceAllocator(kCu, HETRT_MEMORY_HOST_PINNED)));
  } else {
    HETRT_ASSIGN_OR_RETURN(b.host, Tensor::EmptyHost({bytes}, kU8));
  }
  std::memset(b.host.data(), 1, static_cast<size_t>(bytes));  // fault the pages in before timing
  HETRT_ASSIGN_OR_RETURN(b.device, Tensor::Empty({bytes}, kU8, cu->DeviceAllocator(kCu)));
  if (state.range(0) == kDeviceToDevice) {
    HETRT_ASSIGN_OR_RETURN(b.device2, Tensor::Empty({bytes}, kU8, cu->DeviceAllocator(kCu)));
  }
  return b;
}

// Through the plugin: the registry's blocking copy, as get_output/set_input do.
void BM_CudaCopy(benchmark::State& state) {
  auto b = MakeBuffers(state);
  if (!b.ok()) return state.SkipWithError(b.status().message().c_str());
  const uint64_t n = static_cast<uint64_t>(state.range(2));
  PluginRegistry& reg = PluginRegistry::Global();
  for (auto _ : state) {
    Status s = state.range(0) == kHostToDevice ? reg.CopyBytes(b->host.data(), 0, kHost, b->device.data(), 0, kCu, n)
               : state.range(0) == kDeviceToHost
                   ? reg.CopyBytes(b->device.data(), 0, kCu, b->host.data(), 0, kHost, n)
                   : reg.CopyBytes(b->device.data(), 0, kCu, b->device2.data(), 0, kCu, n);
    if (!s.ok()) return state.SkipWithError(s.message().c_str());
  }
  state.SetBytesProcessed(state.iterations() * state.range(2));
}

// The driver's cuMemcpy* on the same buffers, waited for: the reference.
void BM_CuMemcpy(benchmark::State& state) {
  auto b = MakeBuffers(state);
  if (!b.ok()) return state.SkipWithError(b.status().message().c_str());
  const RawDriver& raw = Raw();
  if (!raw.error.empty()) return state.SkipWithError(raw.error.c_str());
  if (!BindContext()) return state.SkipWithError("cannot make cuda:0's primary context current");
  const size_t n = static_cast<size_t>(state.range(2));
  const auto device = reinterpret_cast<CUdeviceptr>(b->device.data());
  for (auto _ : state) {
    CUresult r = state.range(0) == kHostToDevice ? raw.htod(device, b->host.data(), n)
                       : state.range(0) == kDeviceToHost
                           ? raw.dtoh(b->host.data(), device, n)
                           : raw.dtod(reinterpret_cast<CUdeviceptr>(b->device2.data()), device, n);
    if (r == CUDA_SUCCESS && state.range(0) == kDeviceToDevice) r = raw.synchronize();
    if (r != CUDA_SUCCESS) return state.SkipWithError(("cuMemcpy failed: " + std::to_string(r)).c_str());
  }
  state.SetBytesProcessed(state.iterations() * state.range(2));
}

void CopyArgs(benchmark::internal::Benchmark* b) {
  b->ArgNames({"dir", "pinned", "bytes"});
  for (int64_t bytes = kMinBytes; bytes <= kMaxBytes; bytes *= 8) {
    for (int direction : {kHostToDevice, kDeviceToHost})
      for (int pinned : {0, 1}) b->Args({direction, pinned, bytes});
    b->Args({kDeviceToDevice, 0, bytes});
  }
  b->UseRealTime();
}
BENCHMARK(BM_CudaCopy)->Apply(CopyArgs);
BENCHMARK(BM_CuMemcpy)->Apply(CopyArgs);

std::string Fixture(const std::string& model) {
  const char* env = std::getenv("HETRT_FIXTURES");
  return std::string(env && *env ? env : HETRT_DEFAULT_FIXTURES_DIR) + "/tvm-0.18/" + model;
}

// A CUDA fixture on the CPU and cuda:0 with its inputs set, warmed up (modules loaded).
Result<GraphModel> OpenFixture(const std::string& model, bool sequential) {
  const std::string dir = Fixture(model);
  if (!std::filesystem::is_directory(dir)) return NotFound("fixture " + dir + " not found");
  HETRT_RETURN_IF_ERROR(PluginRegistry::Global().ForDevice(kCu).status());
  GraphExecutor::Options options;
  options.devices = {kHost, kCu};
  options.sequential = sequential;
  HETRT_ASSIGN_OR_RETURN(GraphModel m, OpenGraphModel({dir + "/deploy.so"}, options));
  HETRT_ASSIGN_OR_RETURN(auto inputs, LoadParamDictFile(dir + "/inputs.params"));
  for (const auto& p : inputs) HETRT_RETURN_IF_ERROR(m.executor->SetInput(p.name, p.tensor));
  HETRT_RETURN_IF_ERROR(m.executor->Run());
  HETRT_RETURN_IF_ERROR(m.executor->Synchronize());
  return m;
}

// Whole-model latency: Run() to the outputs on the host. Arg: 1 = sequential executor.
void ModelLatency(benchmark::State& state, const std::string& model) {
  auto m = OpenFixture(model, state.range(0) == 1);
  if (!m.ok()) return state.SkipWithError(m.status().message().c_str());
  for (auto _ : state) {
    Status s = m->executor->Run();
    if (s.ok()) s = m->executor->Synchronize();
    if (!s.ok()) return state.SkipWithError(s.message().c_str());
  }
}
void BM_MlpCuda(benchmark::State& state) { ModelLatency(state, "mlp_cuda"); }
void BM_HeteroCudaSeed(benchmark::State& state) { ModelLatency(state, "hetero_cuda_seed"); }
BENCHMARK(BM_MlpCuda)->Arg(0)->Arg(1)->UseRealTime();
BENCHMARK(BM_HeteroCudaSeed)->Arg(0)->Arg(1)->UseRealTime();

void FixturePerNode(benchmark::State& state, const std::string& model) {
  auto m = OpenFixture(model, false);
  if (!m.ok()) return state.SkipWithError(m.status().message().c_str());
  ProfileNodes(state, *m->executor);
}
void BM_MlpCudaPerNode(benchmark::State& state) { FixturePerNode(state, "mlp_cuda"); }
void BM_HeteroCudaSeedPerNode(benchmark::State& state) { FixturePerNode(state, "hetero_cuda_seed"); }
BENCHMARK(BM_MlpCudaPerNode)->UseRealTime();
BENCHMARK(BM_HeteroCudaSeedPerNode)->UseRealTime();

// hetrt's kernel set: the two-branch model (16x256, dense+relu x4 per branch)
// with its accelerator branch on CUDA, per node (the first run, outside the
// timing, JIT-compiles the PTX).
void BM_TwoBranchCudaPerNode(benchmark::State& state) {
  auto m = OpenTwoBranch(kDLCUDA);
  if (!m.ok()) return state.SkipWithError(m.status().message().c_str());
  ProfileNodes(state, *m->executor);
}
BENCHMARK(BM_TwoBranchCudaPerNode)->UseRealTime();

// The same model, whole call: graph executor (asynchronous, sequential)
// against the Relax VM over the same kernels (TwoBranchWholeCall).
void BM_TwoBranchCuda(benchmark::State& state) { TwoBranchWholeCall(state, kDLCUDA); }
BENCHMARK(BM_TwoBranchCuda)->Arg(0)->Arg(1)->Arg(2)->UseRealTime();

}  // namespace
}  // namespace hetrt

BENCHMARK_MAIN();
