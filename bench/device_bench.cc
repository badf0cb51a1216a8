// Device benchmarks: copy bandwidth host<->device against memcpy in the same
// run, and per-node device time of TVM's heterogeneous fixtures from events.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "hetrt/dtype.h"
#include "hetrt/graph_model.h"

namespace hetrt {
namespace {

constexpr int64_t kMinBytes = 4 << 10;
constexpr int64_t kMaxBytes = 256 << 20;

Tensor HostBuffer(int64_t bytes) {
  Tensor t = Tensor::EmptyHost({bytes}, {kDLUInt, 8, 1}).value();
  std::memset(t.data(), 1, static_cast<size_t>(bytes));  // fault the pages in before timing
  return t;
}

void BM_Memcpy(benchmark::State& state) {
  Tensor a = HostBuffer(state.range(0)), b = HostBuffer(state.range(0));
  for (auto _ : state) {
    std::memcpy(b.data(), a.data(), static_cast<size_t>(state.range(0)));
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_Memcpy)->RangeMultiplier(8)->Range(kMinBytes, kMaxBytes)->UseRealTime();

// direction 0: host -> device, 1: device -> host.
void CopyBench(benchmark::State& state, int32_t device_type, int direction) {
  const DLDevice dev{static_cast<DLDeviceType>(device_type), 0};
  auto plugin = PluginRegistry::Global().ForDevice(dev);
  if (!plugin.ok()) return state.SkipWithError(plugin.status().message().c_str());
  Tensor host = HostBuffer(state.range(0));
  auto device = Tensor::Empty({state.range(0)}, {kDLUInt, 8, 1}, (*plugin)->DeviceAllocator(dev));
  if (!device.ok()) return state.SkipWithError(device.status().message().c_str());
  for (auto _ : state) {
    Status s = direction == 0 ? PluginRegistry::Global().CopyTensor(host, *device)
                              : PluginRegistry::Global().CopyTensor(*device, host);
    if (!s.ok()) return state.SkipWithError(s.message().c_str());
  }
  state.SetBytesProcessed(state.iterations() * state.range(0));
}

void BM_OpenClHostToDevice(benchmark::State& state) { CopyBench(state, kDLOpenCL, 0); }
void BM_OpenClDeviceToHost(benchmark::State& state) { CopyBench(state, kDLOpenCL, 1); }
BENCHMARK(BM_OpenClHostToDevice)->RangeMultiplier(8)->Range(kMinBytes, kMaxBytes)->UseRealTime();
BENCHMARK(BM_OpenClDeviceToHost)->RangeMultiplier(8)->Range(kMinBytes, kMaxBytes)->UseRealTime();

// Per-node device time of the CPU+OpenCL fixture; one counter per node.
void BM_HeteroOpenClPerNode(benchmark::State& state) {
  const char* env = std::getenv("HETRT_FIXTURES");
  const std::string dir = std::string(env && *env ? env : HETRT_DEFAULT_FIXTURES_DIR) + "/tvm-0.18/hetero_opencl_seed";
  if (!std::filesystem::is_directory(dir)) return state.SkipWithError("fixture hetero_opencl_seed not found");
  GraphExecutor::Options options;
  options.devices = {{kDLCPU, 0}, {kDLOpenCL, 0}};
  auto m = OpenGraphModel({dir + "/deploy.so"}, options);
  if (!m.ok()) return state.SkipWithError(m.status().message().c_str());
  auto inputs = LoadParamDictFile(dir + "/inputs.params");
  for (const auto& p : *inputs) (void)m->executor->SetInput(p.name, p.tensor);
  (void)m->executor->Run();  // build the OpenCL program outside the timing
  GraphExecutor::RunProfile profile;
  std::vector<double> total;
  for (auto _ : state) {
    Status s = m->executor->RunProfiled(&profile);
    if (!s.ok()) return state.SkipWithError(s.message().c_str());
    total.resize(profile.nodes.size(), 0.0);
    for (size_t i = 0; i < profile.nodes.size(); ++i) total[i] += profile.nodes[i].ms();
  }
  const Graph& g = m->executor->graph();
  for (size_t i = 0; i < profile.nodes.size(); ++i)
    state.counters[g.nodes[profile.nodes[i].node_id].name + "@" +
                   DeviceTypeName(profile.nodes[i].device.device_type) + "_us"] =
        1000.0 * total[i] / static_cast<double>(state.iterations());
}
BENCHMARK(BM_HeteroOpenClPerNode)->UseRealTime();

}  // namespace
}  // namespace hetrt

BENCHMARK_MAIN();
