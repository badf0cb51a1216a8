// Device benchmarks: copy bandwidth host<->device against memcpy in the same
// run, per-node device time of TVM's heterogeneous fixtures from events, and
// hetrt's two-branch model on CPU+Vulkan against the CPU alone.
#include <benchmark/benchmark.h>

#include <unistd.h>
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "bench_support.h"
#include "hetrt/base/dtype.h"
#include "hetrt/exec/graph_model.h"
#include "hetrt/module/module.h"
#include "kernel_set.h"

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

// Vulkan: device memory mapped on host-visible memory (lavapipe, integrated
// GPUs: a copy is a memcpy), and staged through host-visible memory and the
// queue as on a discrete GPU (plugin option direct_mapping=0).
void VulkanCopy(benchmark::State& state, int direction, bool staged) {
  auto plugin = PluginRegistry::Global().ForDevice({kDLVulkan, 0});
  if (!plugin.ok()) return state.SkipWithError(plugin.status().message().c_str());
  if (staged) (void)(*plugin)->SetOption("direct_mapping", "0");  // read at allocation
  CopyBench(state, kDLVulkan, direction);
  if (staged) (void)(*plugin)->SetOption("direct_mapping", "1");
}
void BM_VulkanHostToDevice(benchmark::State& state) { VulkanCopy(state, 0, false); }
void BM_VulkanDeviceToHost(benchmark::State& state) { VulkanCopy(state, 1, false); }
void BM_VulkanHostToDeviceStaged(benchmark::State& state) { VulkanCopy(state, 0, true); }
void BM_VulkanDeviceToHostStaged(benchmark::State& state) { VulkanCopy(state, 1, true); }
BENCHMARK(BM_VulkanHostToDevice)->RangeMultiplier(8)->Range(kMinBytes, kMaxBytes)->UseRealTime();
BENCHMARK(BM_VulkanDeviceToHost)->RangeMultiplier(8)->Range(kMinBytes, kMaxBytes)->UseRealTime();
BENCHMARK(BM_VulkanHostToDeviceStaged)->RangeMultiplier(8)->Range(kMinBytes, kMaxBytes)->UseRealTime();
BENCHMARK(BM_VulkanDeviceToHostStaged)->RangeMultiplier(8)->Range(kMinBytes, kMaxBytes)->UseRealTime();

// One Vulkan kernel of hetrt's set launched as TVM host code launches it, 32
// times into one batch, then the stream synchronized: the time per dispatch.
// Arg 0: relu over 4096 floats (dispatch cost); 1: dense 16x256 by 256x256.
void BM_VulkanDispatch(benchmark::State& state) {
  const DLDevice vk{kDLVulkan, 0};
  auto plugin = PluginRegistry::Global().ForDevice(vk);
  if (!plugin.ok()) return state.SkipWithError(plugin.status().message().c_str());
  auto module = kernels::LoadVulkanModule(PluginRegistry::Global());
  if (!module.ok()) return state.SkipWithError(module.status().message().c_str());
  const bool dense = state.range(0) == 1;
  auto fn = (*module)->GetFunction(dense ? "hetrt_vk_dense_kernel" : "hetrt_vk_relu_kernel");
  const PackedFunc* set_device = GlobalFunctionRegistry::Get().Find("__tvm_set_device");
  if (!fn.ok() || *fn == nullptr || set_device == nullptr)
    return state.SkipWithError("kernel or __tvm_set_device missing");
  hetrt_value_t dev[2] = {{.v_int64 = kDLVulkan}, {.v_int64 = 0}};
  int32_t dev_codes[2] = {HETRT_TYPE_INT, HETRT_TYPE_INT};
  if (!CallPackedFunc(*set_device, dev, dev_codes, 2).ok()) return state.SkipWithError("__tvm_set_device failed");
  std::vector<Tensor> buffers;
  for (int64_t n :
       dense ? std::vector<int64_t>{16 * 256, 256 * 256, 256, 16 * 256} : std::vector<int64_t>{4096, 4096}) {
    auto t = Tensor::Empty({n}, {kDLFloat, 32, 1}, (*plugin)->DeviceAllocator(vk));
    if (!t.ok()) return state.SkipWithError(t.status().message().c_str());
    buffers.push_back(std::move(t).value());
  }
  std::vector<hetrt_value_t> args;
  for (Tensor& t : buffers) args.push_back({.v_handle = t.data()});
  const std::vector<int64_t> sizes = dense ? std::vector<int64_t>{16, 256, 256} : std::vector<int64_t>{4096};
  for (int64_t v : sizes) args.push_back({.v_int64 = v});
  const int64_t work = dense ? 16 * 256 : 4096;
  args.push_back({.v_int64 = (work + 63) / 64});
  args.push_back({.v_int64 = 64});
  std::vector<int32_t> codes(args.size(), HETRT_TYPE_INT);
  std::fill_n(codes.begin(), buffers.size(), HETRT_TYPE_HANDLE);
  constexpr int kBatch = 32;
  for (auto _ : state) {
    for (int i = 0; i < kBatch; ++i) {
      Status s = CallPackedFunc(**fn, args.data(), codes.data(), static_cast<int32_t>(args.size()));
      if (!s.ok()) return state.SkipWithError(s.message().c_str());
    }
    if (Status s = Device(*plugin, vk).Synchronize(nullptr); !s.ok()) return state.SkipWithError(s.message().c_str());
  }
  state.SetItemsProcessed(state.iterations() * kBatch);  // dispatches per second
}
BENCHMARK(BM_VulkanDispatch)->Arg(0)->Arg(1)->UseRealTime();

// Arg 0: all on the CPU; 1: CPU + Vulkan (asynchronous executor).
void BM_TwoBranchModel(benchmark::State& state) {
  auto m = OpenTwoBranch(state.range(0) ? kDLVulkan : kDLCPU);
  if (!m.ok()) return state.SkipWithError(m.status().message().c_str());
  for (auto _ : state) {
    Status s = m->executor->Run();
    if (s.ok()) s = m->executor->Synchronize();
    if (!s.ok()) return state.SkipWithError(s.message().c_str());
  }
}
BENCHMARK(BM_TwoBranchModel)->Arg(0)->Arg(1)->UseRealTime();

// One whole call of the two-branch model, graph executor against the Relax VM
// over the same kernels (TwoBranchWholeCall): all on the CPU, CPU + OpenCL,
// CPU + Vulkan.
void BM_TwoBranchWholeCallCpu(benchmark::State& state) { TwoBranchWholeCall(state, kDLCPU); }
void BM_TwoBranchWholeCallOpenCl(benchmark::State& state) { TwoBranchWholeCall(state, kDLOpenCL); }
void BM_TwoBranchWholeCallVulkan(benchmark::State& state) { TwoBranchWholeCall(state, kDLVulkan); }
BENCHMARK(BM_TwoBranchWholeCallCpu)->Arg(0)->Arg(1)->Arg(2)->UseRealTime();
BENCHMARK(BM_TwoBranchWholeCallOpenCl)->Arg(0)->Arg(1)->Arg(2)->UseRealTime();
BENCHMARK(BM_TwoBranchWholeCallVulkan)->Arg(0)->Arg(1)->Arg(2)->UseRealTime();

// Per-node device time of the CPU+Vulkan model, from timestamp queries.
void BM_TwoBranchVulkanPerNode(benchmark::State& state) {
  auto m = OpenTwoBranch(kDLVulkan);
  if (!m.ok()) return state.SkipWithError(m.status().message().c_str());
  ProfileNodes(state, *m->executor);
}
BENCHMARK(BM_TwoBranchVulkanPerNode)->UseRealTime();

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
  ProfileNodes(state, *m->executor);
}
BENCHMARK(BM_HeteroOpenClPerNode)->UseRealTime();

}  // namespace
}  // namespace hetrt

BENCHMARK_MAIN();
