// The asynchronous executor against today's behaviour, in one run on one
// machine: every mode of the same model, timed back to back.
//   mode 0: sequential + staged copies  (TVM's order, copies through the plugin)
//   mode 1: sequential                  (shared-memory copies)
//   mode 2: asynchronous + staged copies
//   mode 3: asynchronous                (the default)
// Each iteration is Run() + Synchronize() of every variant in turn (so all
// see the same machine noise); counters give mean, p50, p99 and mean ratios.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <random>

#include "hetrt/device/event.h"
#include "hetrt/device/stream.h"
#include "hetrt/exec/graph_model.h"
#include "hetrt/sdk/wake_up.h"
#include "kernel_set.h"
#include "two_branch_model.h"

namespace hetrt {
namespace {

constexpr DLDevice kCpu{kDLCPU, 0};
constexpr DLDevice kCl{kDLOpenCL, 0};

const char* ModeName(int mode) {
  static const char* names[] = {"sequential+staged", "sequential", "async+staged", "async"};
  return names[mode];
}

GraphExecutor::Options ModeOptions(int mode) {
  GraphExecutor::Options options;
  options.devices = {kCpu, kCl};
  options.sequential = mode < 2;
  options.staged_copies = mode % 2 == 0;
  return options;
}

struct Stats {
  double mean = 0, p50 = 0, p99 = 0;
};
Stats Summarize(std::vector<double> us) {
  std::sort(us.begin(), us.end());
  Stats st;
  for (double x : us) st.mean += x;
  st.mean /= static_cast<double>(std::max<size_t>(us.size(), 1));
  st.p50 = us.empty() ? 0 : us[us.size() / 2];
  st.p99 = us.empty() ? 0 : us[std::min(us.size() - 1, us.size() * 99 / 100)];
  return st;
}

using Variant = std::pair<std::string, std::function<Status()>>;

Variant RunAndSync(std::string name, GraphExecutor* ex) {
  return {std::move(name), [ex] {
            Status s = ex->Run();
            return s.ok() ? ex->Synchronize() : s;
          }};
}

// Each iteration runs every variant once, in a shuffled order, so all see the
// same machine noise; counters give each one's mean / p50 / p99 in us and its
// mean relative to the first variant (the baseline).
void TimeInterleaved(benchmark::State& state, const std::vector<Variant>& variants) {
  std::vector<std::vector<double>> us(variants.size());
  for (const auto& [name, run] : variants)
    for (int i = 0; i < 5; ++i) (void)run();  // programs built, caches warm
  std::vector<size_t> order(variants.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::mt19937 rng(1);
  for (auto _ : state) {
    std::shuffle(order.begin(), order.end(), rng);  // no variant always follows the same one
    for (size_t k : order) {
      const auto t0 = std::chrono::steady_clock::now();
      Status s = variants[k].second();
      us[k].push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
      if (!s.ok()) return state.SkipWithError(s.message().c_str());
    }
  }
  const Stats base = Summarize(us[0]);
  for (size_t k = 0; k < variants.size(); ++k) {
    const Stats st = Summarize(us[k]);
    const std::string& name = variants[k].first;
    state.counters[name + "_mean_us"] = st.mean;
    state.counters[name + "_p50_us"] = st.p50;
    state.counters[name + "_p99_us"] = st.p99;
    if (k > 0) state.counters[name + "_mean_ratio"] = st.mean / base.mean;
  }
}

// The floor for any executor on this device: record an event on a stream and
// wait for it (one driver round trip, with the plugin's polling wait).
Variant DeviceRoundTrip(const Stream& stream, const Event& event) {
  return {"device_round_trip", [&stream, &event] {
            HETRT_RETURN_IF_ERROR(event.Record(stream.handle()));
            return event.Synchronize();
          }};
}

std::string Fixture(const std::string& name) {
  const char* env = std::getenv("HETRT_FIXTURES");
  return std::string(env && *env ? env : HETRT_DEFAULT_FIXTURES_DIR) + "/tvm-0.18/" + name;
}

void BM_HeteroOpenClSeed(benchmark::State& state) {
  const std::string dir = Fixture("hetero_opencl_seed");
  if (!std::filesystem::is_directory(dir)) return state.SkipWithError("fixture hetero_opencl_seed not found");
  auto inputs = LoadParamDictFile(dir + "/inputs.params");
  if (!inputs.ok()) return state.SkipWithError(inputs.status().message().c_str());
  std::vector<GraphModel> models;
  std::vector<Variant> variants;
  for (int mode = 0; mode < 4; ++mode) {
    auto m = OpenGraphModel({dir + "/deploy.so"}, ModeOptions(mode));
    if (!m.ok()) return state.SkipWithError(m.status().message().c_str());
    for (const auto& p : *inputs) (void)m->executor->SetInput(p.name, p.tensor);
    models.push_back(std::move(m).value());
    variants.push_back(RunAndSync(ModeName(mode), models.back().executor.get()));
  }
  auto cl = PluginRegistry::Global().DeviceFor(kCl);
  if (!cl.ok()) return state.SkipWithError(cl.status().message().c_str());
  auto stream = Stream::Create(*cl);
  auto event = Event::Create(*cl);
  if (!stream.ok() || !event.ok()) return state.SkipWithError("no OpenCL stream or event");
  variants.push_back(DeviceRoundTrip(*stream, *event));
  TimeInterleaved(state, variants);
}
BENCHMARK(BM_HeteroOpenClSeed)->UseRealTime()->MinTime(4.0);

// How the host waits for the device (the OpenCL plugin's wait_poll_us), on
// hetero_opencl_seed in the same run: blocking at once (TVM's clFinish-style
// wait), a fixed 50 us poll (hetrt's earlier default) and the default, a
// budget measured from this machine's wake-up latency (hetrt/sdk/wake_up.h),
// against the sequential executor. The wake-up latency measured here is
// reported beside them (wakeup_median_us, wakeup_p90_us), and the budget it gives (auto_budget_us).
void BM_HeteroOpenClSeedWaitPolicy(benchmark::State& state) {
  const std::string dir = Fixture("hetero_opencl_seed");
  if (!std::filesystem::is_directory(dir)) return state.SkipWithError("fixture hetero_opencl_seed not found");
  auto inputs = LoadParamDictFile(dir + "/inputs.params");
  if (!inputs.ok()) return state.SkipWithError(inputs.status().message().c_str());
  auto plugin = PluginRegistry::Global().ForDevice(kCl);
  if (!plugin.ok()) return state.SkipWithError(plugin.status().message().c_str());
  std::vector<GraphModel> models;
  for (int mode : {1, 3}) {
    auto m = OpenGraphModel({dir + "/deploy.so"}, ModeOptions(mode));
    if (!m.ok()) return state.SkipWithError(m.status().message().c_str());
    for (const auto& p : *inputs) (void)m->executor->SetInput(p.name, p.tensor);
    models.push_back(std::move(m).value());
  }
  // Each variant sets its policy before its run (an atomic store in the plugin).
  auto with_poll = [&](std::string name, GraphExecutor* ex, const char* poll_us) -> Variant {
    Variant run = RunAndSync(std::move(name), ex);
    return {run.first, [p = *plugin, poll_us, run = run.second] {
              HETRT_RETURN_IF_ERROR(p->SetOption("wait_poll_us", poll_us));
              return run();
            }};
  };
  const std::vector<Variant> variants = {
      with_poll("sequential", models[0].executor.get(), "-1"),
      with_poll("async_block", models[1].executor.get(), "0"),
      with_poll("async_poll50", models[1].executor.get(), "50"),
      with_poll("async_auto", models[1].executor.get(), "-1"),
  };
  const sdk::WakeUpLatency wake = sdk::MeasureWakeUpLatency(64);
  TimeInterleaved(state, variants);
  state.counters["wakeup_median_us"] = static_cast<double>(wake.median_ns) / 1e3;
  state.counters["wakeup_p90_us"] = static_cast<double>(wake.p90_ns) / 1e3;
  state.counters["auto_budget_us"] = static_cast<double>(sdk::PollBudgetUs(wake));
  (void)(*plugin)->SetOption("wait_poll_us", "-1");
}
BENCHMARK(BM_HeteroOpenClSeedWaitPolicy)->UseRealTime()->MinTime(4.0);

// A graph that is one 4 KiB __copy: host -> OpenCL (direction 0) or back (1).
std::string CopyGraphJson(int direction, int64_t floats) {
  const int from = direction == 0 ? kDLCPU : kDLOpenCL, to = direction == 0 ? kDLOpenCL : kDLCPU;
  const std::string n = std::to_string(floats);
  return R"({"nodes": [{"op": "null", "name": "x", "inputs": []},
    {"op": "tvm_op", "name": "__copy", "attrs": {"func_name": "__copy", "num_inputs": "1", "num_outputs": "1",
     "flatten_data": "0"}, "inputs": [[0, 0, 0]]}],
   "arg_nodes": [0], "heads": [[1, 0, 0]], "node_row_ptr": [0, 1, 2],
   "attrs": {"shape": ["list_shape", [[)" +
         n + "], [" + n + R"(]]], "dltype": ["list_str", ["float32", "float32"]],
             "storage_id": ["list_int", [0, 1]], "device_index": ["list_int", [)" +
         std::to_string(from) + ", " + std::to_string(to) + "]]}}";
}

struct NoKernels final : Module {
  NoKernels() : Module("library") {}
  Result<const PackedFunc*> GetOwnFunction(std::string_view) override {
    return static_cast<const PackedFunc*>(nullptr);
  }
};

// range(0): direction. Staged (through the plugin) against shared-memory copies.
void BM_Copy4KiB(benchmark::State& state) {
  const int direction = static_cast<int>(state.range(0));
  std::vector<std::unique_ptr<GraphExecutor>> owned;
  std::vector<Variant> executors;
  Tensor x = Tensor::EmptyHost({1024}, {kDLFloat, 32, 1}).value();
  std::fill_n(x.data_as<float>(), 1024, 1.f);
  for (int mode : {0, 2, 1, 3}) {
    auto ex = GraphExecutor::Create(CopyGraphJson(direction, 1024), std::make_shared<NoKernels>(), ModeOptions(mode));
    if (!ex.ok()) return state.SkipWithError(ex.status().message().c_str());
    if (Status s = (*ex)->SetInput(0, x); !s.ok()) return state.SkipWithError(s.message().c_str());
    owned.push_back(std::move(ex).value());
    executors.push_back(RunAndSync(ModeName(mode), owned.back().get()));
  }
  TimeInterleaved(state, executors);
  state.SetLabel(direction == 0 ? "host->opencl" : "opencl->host");
}
BENCHMARK(BM_Copy4KiB)->Arg(0)->Arg(1)->UseRealTime()->MinTime(2.0);

// The two-branch model (CPU branch || OpenCL branch, joined), and each branch alone.
const std::string& TwoBranchLibrary(int which) {  // 0 both, 1 CPU branch, 2 OpenCL branch
  static std::map<int, std::string> paths;
  std::string& path = paths[which];
  if (path.empty()) {
    kernels::TwoBranchShape shape;
    shape.accel_branch = which != 1;
    shape.cpu_branch = which != 2;
    auto built = kernels::BuildTwoBranchModel(kDLOpenCL, shape);
    path = "/tmp/hetrt_two_branch_" + std::to_string(getpid()) + "_" + std::to_string(which) + ".so";
    if (!built.ok() || !kernels::ExportGraph(built->graph_json, built->params, shape.accel_branch, path).ok())
      path = "";
  }
  return path;
}

// Sequential, asynchronous, and each branch alone (asynchronous), interleaved.
void BM_TwoBranch(benchmark::State& state) {
  Tensor x = Tensor::EmptyHost({16, 256}, {kDLFloat, 32, 1}).value();
  std::fill_n(x.data_as<float>(), x.num_elements(), 0.5f);
  std::vector<GraphModel> models;
  std::vector<Variant> executors;
  const std::pair<const char*, std::pair<int, int>> variants[] = {
      {"sequential", {0, 1}}, {"async", {0, 3}}, {"cpu_branch_alone", {1, 3}}, {"opencl_branch_alone", {2, 3}}};
  for (const auto& [name, which_mode] : variants) {
    const std::string& lib = TwoBranchLibrary(which_mode.first);
    if (lib.empty()) return state.SkipWithError("exporting the two-branch model failed");
    auto m = OpenGraphModel({lib}, ModeOptions(which_mode.second));
    if (!m.ok()) return state.SkipWithError(m.status().message().c_str());
    if (Status s = m->executor->SetInput("data", x); !s.ok()) return state.SkipWithError(s.message().c_str());
    models.push_back(std::move(m).value());
    executors.push_back(RunAndSync(name, models.back().executor.get()));
  }
  TimeInterleaved(state, executors);
}
BENCHMARK(BM_TwoBranch)->UseRealTime()->MinTime(4.0);

}  // namespace
}  // namespace hetrt

BENCHMARK_MAIN();
