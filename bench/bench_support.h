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
inline Result<GraphModel> OpenTwoBranch(int32_t accel) {
  const std::string path =
      "/tmp/hetrt_device_bench_two_branch_" + std::to_string(getpid()) + "_" + std::to_string(accel) + ".so";
  if (!std::filesystem::exists(path)) {
    HETRT_ASSIGN_OR_RETURN(auto built, kernels::BuildTwoBranchModel(accel));
    HETRT_RETURN_IF_ERROR(kernels::ExportGraph(built.graph_json, built.params, std::vector<int32_t>{accel}, path));
  }
  GraphExecutor::Options options;
  options.devices = {{kDLCPU, 0}};
  if (accel != kDLCPU) options.devices.push_back({static_cast<DLDeviceType>(accel), 0});
  HETRT_ASSIGN_OR_RETURN(GraphModel m, OpenGraphModel({path}, options));
  Tensor x = Tensor::EmptyHost({16, 256}, {kDLFloat, 32, 1}).value();
  std::fill_n(x.data_as<float>(), x.num_elements(), 0.5f);
  HETRT_RETURN_IF_ERROR(m.executor->SetInput("data", x));
  HETRT_RETURN_IF_ERROR(m.executor->Run());  // builds pipelines outside the timing
  HETRT_RETURN_IF_ERROR(m.executor->Synchronize());
  return m;
}

}  // namespace hetrt
