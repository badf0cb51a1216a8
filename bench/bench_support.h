// Helpers the device benchmarks share: per-node time counters of profiled
// runs, and hetrt's two-branch model opened on the CPU and an accelerator.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "hetrt/base/dtype.h"
#include "hetrt/exec/graph_model.h"
#include "hetrt/plugin_host/plugin_registry.h"
#include "kernel_set.h"
#include "two_branch_model.h"

namespace hetrt {

// Per-node time counters ("<node>@<device>_us") of profiled runs.
inline void ProfileNodes(benchmark::State& state, GraphExecutor& ex) {
  GraphExecutor::RunProfile profile;
  std::vector<double> total;
  for (auto _ : state) {
    Status s = ex.RunProfiled(&profile);
    if (!s.ok()) return state.SkipWithError(s.message().c_str());
    total.resize(profile.nodes.size(), 0.0);
    for (size_t i = 0; i < profile.nodes.size(); ++i) total[i] += profile.nodes[i].ms();
  }
  const Graph& g = ex.graph();
  for (size_t i = 0; i < profile.nodes.size(); ++i)
    state.counters[g.nodes[profile.nodes[i].node_id].name + "@" + DeviceTypeName(profile.nodes[i].device.device_type) +
                   "_us"] = 1000.0 * total[i] / static_cast<double>(state.iterations());
}

// hetrt's two-branch model (16x256, dense+relu x4 per branch, joined on the
// CPU) with its accelerator branch on `accel`, exported once, opened on the
// CPU and that device.
inline Result<GraphModel> OpenTwoBranch(int32_t accel, bool sequential = false) {
  const std::string path =
      "/tmp/hetrt_device_bench_two_branch_" + std::to_string(getpid()) + "_" + std::to_string(accel) + ".so";
  if (!std::filesystem::exists(path)) {
    HETRT_ASSIGN_OR_RETURN(auto built, kernels::BuildTwoBranchModel(accel));
    HETRT_RETURN_IF_ERROR(kernels::ExportGraph(built.graph_json, built.params, std::vector<int32_t>{accel}, path));
  }
  GraphExecutor::Options options;
  options.devices = {{kDLCPU, 0}};
  if (accel != kDLCPU) options.devices.push_back({static_cast<DLDeviceType>(accel), 0});
  options.sequential = sequential;
  HETRT_ASSIGN_OR_RETURN(GraphModel m, OpenGraphModel({path}, options));
  Tensor x = Tensor::EmptyHost({16, 256}, {kDLFloat, 32, 1}).value();
  std::fill_n(x.data_as<float>(), x.num_elements(), 0.5f);
  HETRT_RETURN_IF_ERROR(m.executor->SetInput("data", x));
  HETRT_RETURN_IF_ERROR(m.executor->Run());  // builds pipelines outside the timing
  HETRT_RETURN_IF_ERROR(m.executor->Synchronize());
  return m;
}

// The two-branch model on the CPU and `accel`, one whole call to the output
// on the host, in the executor arg 0 names: 0 the graph executor
// (asynchronous), 1 the graph executor (sequential), 2 the Relax VM over the
// same kernels (the bytecode relax.build emits for the graph, exported as
// kernels::ExportRelax does). The three in one run, on one machine.
inline void TwoBranchWholeCall(benchmark::State& state, int32_t accel) {
  Model model;  // the root keeps the kernels loaded
  if (state.range(0) < 2) {
    auto graph = OpenTwoBranch(accel, /*sequential=*/state.range(0) == 1);
    if (!graph.ok()) return state.SkipWithError(graph.status().message().c_str());
    model = Model{graph->root, std::move(graph->executor)};
  } else {
    const std::string path = "/tmp/hetrt_bench_two_branch_relax_" + std::to_string(getpid()) + ".so";
    auto built = kernels::BuildTwoBranchModel(accel);
    if (!built.ok()) return state.SkipWithError(built.status().message().c_str());
    auto devices = kernels::ExportRelax(built->graph_json, built->params, path);
    if (!devices.ok()) return state.SkipWithError(devices.status().message().c_str());
    GraphExecutor::Options options;
    options.devices = *devices;
    auto opened = OpenModel({path}, options);
    std::remove(path.c_str());
    if (!opened.ok()) return state.SkipWithError(opened.status().message().c_str());
    model = std::move(*opened);
    Tensor x = Tensor::EmptyHost({16, 256}, {kDLFloat, 32, 1}).value();
    std::fill_n(x.data_as<float>(), x.num_elements(), 0.5f);
    Status s = model.executor->SetInput(0, x);
    if (s.ok()) s = model.executor->Run();  // first call: pools and pipelines, outside the timing
    if (s.ok()) s = model.executor->Synchronize();
    if (!s.ok()) return state.SkipWithError(s.message().c_str());
  }
  Executor* executor = model.executor.get();
  for (auto _ : state) {
    Status s = executor->Run();
    if (s.ok()) s = executor->Synchronize();
    Result<Tensor> out = s.ok() ? executor->GetOutput(0) : Result<Tensor>(s);
    if (out.ok() && out->device().device_type != kDLCPU) out = PluginRegistry::Global().ToHost(*out);
    if (!out.ok()) return state.SkipWithError(out.status().message().c_str());
    benchmark::DoNotOptimize(out->data());
  }
}

}  // namespace hetrt
