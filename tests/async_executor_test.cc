// The asynchronous graph executor: its plan (property-tested on random graphs),
// and real runs across the CPU and OpenCL (PoCL): results equal to the
// sequential executor and to the CPU alone, a trace whose timestamps show
// overlap and respect every wait, no allocation in Run(), concurrency.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bitset>
#include <filesystem>
#include <new>
#include <random>
#include <thread>

#include "hetrt/base/dtype.h"
#include "hetrt/exec/factory_modules.h"
#include "hetrt/exec/graph_model.h"
#include "hetrt/exec/schedule_plan.h"
#include "hetrt/formats/graph.h"
#include "kernel_set.h"
#include "test_support.h"
#include "two_branch_model.h"
#include "two_stage_model.h"

// Counts operator new calls while armed, from any thread (Run() must not allocate).
// GCC cannot see that these replacements pair malloc with free.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
namespace {
std::atomic<bool> g_count_allocations{false};
std::atomic<int64_t> g_allocations{0};
}  // namespace

void* operator new(size_t size) {
  if (g_count_allocations.load(std::memory_order_relaxed)) g_allocations.fetch_add(1);
  if (void* p = std::malloc(size ? size : 1)) return p;
  throw std::bad_alloc();
}
void* operator new[](size_t size) { return operator new(size); }
void* operator new(size_t size, const std::nothrow_t&) noexcept {
  if (g_count_allocations.load(std::memory_order_relaxed)) g_allocations.fetch_add(1);
  return std::malloc(size ? size : 1);
}
void* operator new[](size_t size, const std::nothrow_t& tag) noexcept { return operator new(size, tag); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }

namespace hetrt {
namespace {

// ---------------------------------------------------------------- the plan

using Bits = std::bitset<64>;

// What must be complete before each step starts, derived only from what the
// run loop does: the host runs host steps in issue order and waits for events;
// a stream runs its steps in order after the host issued them and after the
// events it was told to wait for.
std::vector<Bits> HappensBefore(const std::vector<ScheduleStep>& steps, const SchedulePlan& plan) {
  std::vector<Bits> hb(steps.size());
  Bits host_knows;
  std::vector<int64_t> last_on_lane(8, -1);
  for (uint32_t i : plan.order) {
    for (uint32_t w : plan.host_waits[i]) host_knows |= hb[w] | Bits().set(w);
    Bits before = host_knows;
    const uint32_t lane = steps[i].lane;
    if (lane != kHostLane) {
      if (last_on_lane[lane] >= 0) before |= hb[last_on_lane[lane]] | Bits().set(last_on_lane[lane]);
      for (uint32_t w : plan.stream_waits[i]) before |= hb[w] | Bits().set(w);
    }
    hb[i] = before;
    last_on_lane[lane] = i;
    if (lane == kHostLane) host_knows.set(i);
  }
  return hb;
}

TEST(SchedulePlan, EveryHazardOnRandomGraphsIsOrderedByWaitsOrLaneOrder) {
  std::mt19937 rng(7);
  const std::vector<uint32_t> lane_group = {0, 1, 1, 2};  // lanes 1, 2 share a plugin; 3 is another
  int checked_pairs = 0;
  for (int graph = 0; graph < 300; ++graph) {
    const size_t n = 5 + rng() % 40;
    const uint32_t num_sids = 2 + rng() % 8;
    std::vector<ScheduleStep> steps(n);
    for (auto& s : steps) {
      s.lane = rng() % 4;
      for (uint32_t k = 0, r = 1 + rng() % 3; k < r; ++k) s.reads.push_back(rng() % num_sids);
      s.writes.push_back(rng() % num_sids);
    }
    for (bool keep_order : {false, true}) {
      const SchedulePlan plan = PlanSchedule(steps, lane_group, keep_order);
      ASSERT_EQ(plan.order.size(), n);
      std::vector<int> issued_at(n, -1);
      for (size_t k = 0; k < n; ++k) {
        ASSERT_EQ(issued_at[plan.order[k]], -1) << "issued twice";
        issued_at[plan.order[k]] = static_cast<int>(k);
      }
      for (uint32_t i = 0; i < n; ++i)
        for (uint32_t d : plan.deps[i]) EXPECT_LT(issued_at[d], issued_at[i]) << "a dependency issued later";
      // A stream waits only for events of its own plugin; the host for device events.
      for (uint32_t i = 0; i < n; ++i) {
        for (uint32_t w : plan.stream_waits[i]) {
          EXPECT_NE(steps[i].lane, kHostLane);
          EXPECT_EQ(lane_group[steps[w].lane], lane_group[steps[i].lane]);
          EXPECT_TRUE(plan.records_event[w]);
        }
        for (uint32_t w : plan.host_waits[i]) {
          EXPECT_NE(steps[w].lane, kHostLane);
          EXPECT_TRUE(plan.records_event[w]);
        }
      }
      const auto hb = HappensBefore(steps, plan);
      for (uint32_t b = 0; b < n; ++b)
        for (uint32_t a = 0; a < b; ++a) {
          bool hazard = false;
          for (uint32_t w : steps[a].writes) {
            for (uint32_t r : steps[b].reads) hazard |= r == w;
            for (uint32_t w2 : steps[b].writes) hazard |= w2 == w;
          }
          for (uint32_t r : steps[a].reads)
            for (uint32_t w : steps[b].writes) hazard |= r == w;
          if (!hazard) continue;
          ++checked_pairs;
          EXPECT_TRUE(hb[b].test(a)) << "graph " << graph << ": step " << b << " (lane " << steps[b].lane
                                     << ") may start before step " << a << " (lane " << steps[a].lane << ") ends";
        }
    }
  }
  EXPECT_GT(checked_pairs, 1000);
}

TEST(SchedulePlan, DeviceWorkIsIssuedBeforeIndependentHostWork) {
  // Graph order: host, host, device, device (independent branches).
  std::vector<ScheduleStep> steps(4);
  steps[0] = {kHostLane, {0}, {1}};
  steps[1] = {kHostLane, {1}, {2}};
  steps[2] = {1, {3}, {4}};
  steps[3] = {1, {4}, {5}};
  const SchedulePlan plan = PlanSchedule(steps, {0, 1}, false);
  EXPECT_EQ(plan.order, (std::vector<uint32_t>{2, 3, 0, 1}));
  for (const auto& w : plan.host_waits) EXPECT_TRUE(w.empty());
}

// ---------------------------------------------------------------- real runs

constexpr DLDevice kCpu{kDLCPU, 0};
constexpr DLDevice kCl{kDLOpenCL, 0};

std::string TempPath(const std::string& name) {
  return ::testing::TempDir() + "/hetrt_async_" + std::to_string(getpid()) + "_" + name;
}

// The two-branch model exported once per accelerator type into a deploy.so.
const std::string& TwoBranchLibrary(int32_t accel) {
  static std::map<int32_t, std::string> paths;
  auto& path = paths[accel];
  if (path.empty()) {
    auto built = kernels::BuildTwoBranchModel(accel);
    EXPECT_TRUE(built.ok()) << built.status().ToString();
    path = TempPath(std::string("two_branch_") + (accel == kDLCPU ? "cpu" : "cl") + ".so");
    Status s = kernels::ExportGraph(built->graph_json, built->params, accel == kDLOpenCL, path);
    EXPECT_TRUE(s.ok()) << s.ToString();
  }
  return path;
}

Tensor TwoBranchInput() {
  Tensor t = Tensor::EmptyHost({16, 256}, {kDLFloat, 32, 1}).value();
  for (int64_t i = 0; i < t.num_elements(); ++i)
    t.data_as<float>()[i] = static_cast<float>((i * 37) % 101) / 50.f - 1.f;
  return t;
}

// Opens `library` on the CPU (+ `accel`), sets "data", runs it twice (a second
// run reuses everything) and returns output 0.
Result<Tensor> RunLibrary(const std::string& library, int32_t accel, const Tensor& data,
                          GraphExecutor::Options options) {
  options.devices = {kCpu};
  if (accel != kDLCPU) options.devices.push_back({static_cast<DLDeviceType>(accel), 0});
  HETRT_ASSIGN_OR_RETURN(GraphModel m, OpenGraphModel({library}, options));
  HETRT_RETURN_IF_ERROR(m.executor->SetInput("data", data));
  HETRT_RETURN_IF_ERROR(m.executor->Run());
  HETRT_RETURN_IF_ERROR(m.executor->Run());
  return m.executor->GetOutput(0);
}

Result<Tensor> RunTwoBranch(int32_t accel, GraphExecutor::Options options) {
  return RunLibrary(TwoBranchLibrary(accel), accel, TwoBranchInput(), options);
}

TEST(AsyncExecutor, TwoBranchModelMatchesTheCpuInEveryMode) {
  HETRT_REQUIRE_OPENCL();
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor reference, RunTwoBranch(kDLCPU, {}));
  for (int mode = 0; mode < 4; ++mode) {
    GraphExecutor::Options options;
    options.sequential = mode & 1;
    options.staged_copies = mode & 2;
    SCOPED_TRACE(std::string(options.sequential ? "sequential" : "async") + (options.staged_copies ? " staged" : ""));
    HETRT_ASSERT_OK_AND_ASSIGN(Tensor out, RunTwoBranch(kDLOpenCL, options));
    EXPECT_TRUE(testing::TensorsClose(out, reference, 1e-4, 1e-4));
  }
}

// The serve bench's two-stage model (CPU stage feeding an OpenCL stage across a
// __copy) computes what the same layers compute on the CPU alone, run after run.
TEST(AsyncExecutor, TwoStageModelMatchesTheCpu) {
  HETRT_REQUIRE_OPENCL();
  kernels::TwoStageShape shape;
  shape.cpu_layers = 3;
  shape.accel_layers = 2;
  shape.rows = 8;
  shape.width = 64;
  Tensor input = Tensor::EmptyHost({shape.rows, shape.width}, {kDLFloat, 32, 1}).value();
  for (int64_t i = 0; i < input.num_elements(); ++i) input.data_as<float>()[i] = std::cos(0.01f * i);
  std::vector<Tensor> outputs;
  for (int32_t accel : {kDLCPU, kDLOpenCL}) {
    HETRT_ASSERT_OK_AND_ASSIGN(auto built, kernels::BuildTwoStageModel(accel, shape));
    const std::string path = TempPath(std::string("two_stage_") + (accel == kDLCPU ? "cpu" : "cl") + ".so");
    HETRT_ASSERT_OK(kernels::ExportGraph(built.graph_json, built.params, accel == kDLOpenCL, path));
    // The accelerator stage really is on the accelerator: a __copy feeds it.
    EXPECT_EQ(built.graph_json.find("__copy") != std::string::npos, accel != kDLCPU);
    HETRT_ASSERT_OK_AND_ASSIGN(Tensor out, RunLibrary(path, accel, input, {}));
    ASSERT_EQ(out.shape(), (std::vector<int64_t>{shape.rows, shape.width}));
    outputs.push_back(std::move(out));
  }
  double sum = 0;
  for (int64_t i = 0; i < outputs[0].num_elements(); ++i) sum += std::abs(outputs[0].data_as<float>()[i]);
  EXPECT_GT(sum, 0.0) << "relu left nothing: the comparison would prove little";
  EXPECT_TRUE(testing::TensorsClose(outputs[1], outputs[0], 1e-4, 1e-4));
}

struct Interval {
  uint64_t start, end;
};
bool Overlap(Interval a, Interval b) { return a.start < b.end && b.start < a.end; }

TEST(AsyncExecutor, TraceShowsBothDevicesBusyAtOnceAndEveryWaitRespected) {
  HETRT_REQUIRE_OPENCL();
  GraphExecutor::Options options;
  options.devices = {kCpu, kCl};
  HETRT_ASSERT_OK_AND_ASSIGN(GraphModel m, OpenGraphModel({TwoBranchLibrary(kDLOpenCL)}, options));
  HETRT_ASSERT_OK(m.executor->SetInput("data", TwoBranchInput()));
  HETRT_ASSERT_OK(m.executor->Run());  // builds the OpenCL program
  bool overlapped = false;
  // Timing on a shared 2-core machine is noisy: overlap must show within a few runs.
  for (int attempt = 0; attempt < 10 && !overlapped; ++attempt) {
    GraphExecutor::RunProfile run;
    HETRT_ASSERT_OK(m.executor->RunProfiled(&run));
    ASSERT_EQ(run.lanes[0], "host");
    ASSERT_GE(run.lanes.size(), 2u);
    std::map<uint32_t, Interval> by_node;
    std::map<uint32_t, std::vector<Interval>> by_lane;
    for (const auto& t : run.nodes) {
      ASSERT_LE(t.start_ns, t.end_ns);
      ASSERT_GE(t.start_ns + run.clock_uncertainty_ns, run.run_start_ns);
      by_node[t.node_id] = {t.start_ns, t.end_ns};
      by_lane[t.lane].push_back({t.start_ns, t.end_ns});
    }
    // Within one lane, nodes run one after another.
    for (auto& [lane, v] : by_lane) {
      std::sort(v.begin(), v.end(), [](Interval a, Interval b) { return a.start < b.start; });
      for (size_t k = 1; k < v.size(); ++k)
        EXPECT_GE(v[k].start + run.clock_uncertainty_ns, v[k - 1].end)
            << "lane " << run.lanes[lane] << " overlaps itself";
    }
    // A node never starts before the nodes it waited for have ended.
    for (const auto& t : run.nodes)
      for (uint32_t w : t.waited_for)
        EXPECT_GE(t.start_ns + 2 * run.clock_uncertainty_ns, by_node.at(w).end)
            << m.executor->graph().nodes[t.node_id].name << " started before " << m.executor->graph().nodes[w].name
            << " ended";
    if (std::getenv("HETRT_TEST_DUMP"))
      for (const auto& t : run.nodes)
        std::printf("%-16s lane %u submit %8.1f start %8.1f end %8.1f wait %6.1f\n",
                    m.executor->graph().nodes[t.node_id].name.c_str(), t.lane, (t.submit_ns - run.run_start_ns) / 1e3,
                    (t.start_ns - run.run_start_ns) / 1e3, (t.end_ns - run.run_start_ns) / 1e3, t.wait_ns / 1e3);
    const auto& host = by_lane[0];
    for (const auto& [lane, v] : by_lane) {
      if (lane == 0 || run.lanes[lane].find("opencl") == std::string::npos) continue;
      for (Interval a : host)
        for (Interval b : v) overlapped |= Overlap(a, b);
    }
  }
  EXPECT_TRUE(overlapped) << "no CPU node ran while an OpenCL node did in 10 profiled runs";
}

TEST(AsyncExecutor, RunAllocatesNothingOnCpuPlusOpenCl) {
  HETRT_REQUIRE_OPENCL();
  std::vector<std::pair<std::string, GraphExecutor::Options>> cases;
  std::vector<std::string> libraries = {TwoBranchLibrary(kDLOpenCL)};
  const std::string seed = testing::TvmFixture("hetero_opencl_seed");
  if (!seed.empty()) libraries.push_back(seed + "/deploy.so");
  for (const std::string& library : libraries)
    for (int mode = 0; mode < 4; ++mode) {
      SCOPED_TRACE(library + " mode " + std::to_string(mode));
      GraphExecutor::Options options;
      options.devices = {kCpu, kCl};
      options.sequential = mode & 1;
      options.staged_copies = mode & 2;
      HETRT_ASSERT_OK_AND_ASSIGN(GraphModel m, OpenGraphModel({library}, options));
      for (int i = 0; i < m.executor->NumInputs(); ++i) {
        const Tensor& in = m.executor->InputTensor(i);
        HETRT_ASSERT_OK_AND_ASSIGN(Tensor value, Tensor::EmptyHost(in.shape(), in.dtype()));
        std::memset(value.data(), 0, value.nbytes());
        HETRT_ASSERT_OK(m.executor->SetInput(i, value));
      }
      for (int warm = 0; warm < 3; ++warm) HETRT_ASSERT_OK(m.executor->Run());
      HETRT_ASSERT_OK(m.executor->Synchronize());
      g_allocations = 0;
      g_count_allocations = true;
      Status s;
      for (int r = 0; r < 20 && s.ok(); ++r) s = m.executor->Run();
      g_count_allocations = false;
      HETRT_ASSERT_OK(s);
      EXPECT_EQ(g_allocations.load(), 0) << "operator new calls in 20 runs";
      HETRT_ASSERT_OK(m.executor->Synchronize());
    }
}

TEST(AsyncExecutor, TwoExecutorsOnOneModuleRunOnTwoThreads) {
  HETRT_REQUIRE_OPENCL();
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor reference, RunTwoBranch(kDLCPU, {}));
  GraphExecutor::Options options;
  options.devices = {kCpu, kCl};
  HETRT_ASSERT_OK_AND_ASSIGN(GraphModel first, OpenGraphModel({TwoBranchLibrary(kDLOpenCL)}, options));
  // A second executor from the same loaded module (one OpenCL module, one set of params).
  auto* factory = dynamic_cast<GraphExecutorFactoryModule*>(first.root.get());
  ASSERT_NE(factory, nullptr);
  GraphModel second;
  HETRT_ASSERT_OK_AND_ASSIGN(second.executor, factory->CreateExecutor(options));
  std::atomic<int> mismatches{0}, failures{0};
  auto work = [&](GraphExecutor* ex) {
    if (!ex->SetInput("data", TwoBranchInput()).ok()) return void(failures++);
    for (int r = 0; r < 25; ++r) {
      if (!ex->Run().ok()) return void(failures++);
      auto out = ex->GetOutput(0);
      if (!out.ok()) return void(failures++);
      if (!testing::TensorsClose(*out, reference, 1e-4, 1e-4)) mismatches++;
    }
  };
  std::thread a(work, first.executor.get()), b(work, second.executor.get());
  a.join();
  b.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(mismatches.load(), 0);
}

struct NoKernels final : Module {
  NoKernels() : Module("library") {}
  Result<const PackedFunc*> GetOwnFunction(std::string_view) override {
    return static_cast<const PackedFunc*>(nullptr);
  }
};

// x (OpenCL) -> __copy -> CPU output: with copies through the plugin, the copy
// runs on a device stream; Run() must still return with the CPU output final.
TEST(AsyncExecutor, RunReturnsWithHostMemoryFinal) {
  HETRT_REQUIRE_OPENCL();
  const std::string json = R"({"nodes": [{"op": "null", "name": "x", "inputs": []},
    {"op": "tvm_op", "name": "__copy", "attrs": {"func_name": "__copy", "num_inputs": "1", "num_outputs": "1",
     "flatten_data": "0"}, "inputs": [[0, 0, 0]]}],
   "arg_nodes": [0], "heads": [[1, 0, 0]], "node_row_ptr": [0, 1, 2],
   "attrs": {"shape": ["list_shape", [[262144], [262144]]], "dltype": ["list_str", ["float32", "float32"]],
             "storage_id": ["list_int", [0, 1]], "device_index": ["list_int", [4, 1]]}})";
  for (bool staged : {true, false}) {
    GraphExecutor::Options options;
    options.devices = {kCpu, kCl};
    options.staged_copies = staged;
    HETRT_ASSERT_OK_AND_ASSIGN(auto ex, GraphExecutor::Create(json, std::make_shared<NoKernels>(), options));
    for (int round = 0; round < 5; ++round) {
      HETRT_ASSERT_OK_AND_ASSIGN(Tensor x, Tensor::EmptyHost({262144}, {kDLFloat, 32, 1}));
      for (int64_t i = 0; i < x.num_elements(); ++i) x.data_as<float>()[i] = static_cast<float>(i + round);
      HETRT_ASSERT_OK(ex->SetInput(0, x));
      HETRT_ASSERT_OK(ex->Run());
      const Tensor& out = ex->OutputTensor(0);  // a view of CPU storage, read without Synchronize
      ASSERT_EQ(out.device().device_type, kDLCPU);
      EXPECT_EQ(std::memcmp(out.data(), x.data(), x.nbytes()), 0)
          << (staged ? "staged" : "shared") << " round " << round;
    }
  }
}

// Outputs of the asynchronous executor are those of the sequential one, bit
// for bit, on each TVM graph fixture this machine can run.
using AsyncExecutorOnFixture = testing::PerFixtureTest;
HETRT_INSTANTIATE_PER_FIXTURE(
    Tvm, AsyncExecutorOnFixture,
    testing::FixtureParams(testing::TvmFixtureModels(), "graph fixtures with inputs", [](const std::string& model) {
      const std::string dir = testing::TvmFixture(model);
      for (const char* file : {"/deploy.so", "/inputs.params", "/graph.json"})
        if (!std::filesystem::exists(dir + file)) return false;
      return true;
    }));

// The devices a fixture's graph places nodes on (its device_index holds
// device types), the CPU first.
std::vector<DLDevice> GraphDevices(const std::string& graph_json) {
  std::vector<DLDevice> devices = {kCpu};
  auto graph = ParseGraphJson(testing::ReadText(graph_json), graph_json);
  if (!graph.ok()) return devices;
  for (const int32_t type : graph->device_types) {
    const bool known =
        std::any_of(devices.begin(), devices.end(), [&](const DLDevice& d) { return d.device_type == type; });
    if (!known) devices.push_back(DLDevice{static_cast<DLDeviceType>(type), 0});
  }
  return devices;
}

TEST_P(AsyncExecutorOnFixture, GivesTheSequentialOutputsBitForBit) {
  const std::string dir = testing::TvmFixture(fixture());
  const std::vector<DLDevice> devices = GraphDevices(dir + "/graph.json");
  for (const DLDevice& device : devices) {
    auto plugin = PluginRegistry::Global().ForDevice(device);
    if (plugin.ok()) continue;
    if (device.device_type == kDLCUDA) GTEST_SKIP() << "no CUDA device: " << plugin.status().message();
    const std::string name = DeviceTypeName(device.device_type);
    HETRT_MISSING(name, "the graph places nodes on " << name << ": " << plugin.status().message());
  }
  std::vector<Tensor> outputs[2];
  for (int sequential = 0; sequential < 2; ++sequential) {
    GraphExecutor::Options options;
    options.devices = devices;
    options.sequential = sequential;
    HETRT_ASSERT_OK_AND_ASSIGN(auto m, OpenGraphModel({dir + "/deploy.so"}, options));
    HETRT_ASSERT_OK_AND_ASSIGN(auto inputs, LoadParamDictFile(dir + "/inputs.params"));
    for (const auto& p : inputs)
      if (m.executor->InputIndex(p.name) >= 0) HETRT_ASSERT_OK(m.executor->SetInput(p.name, p.tensor));
    HETRT_ASSERT_OK(m.executor->Run());
    for (int i = 0; i < m.executor->NumOutputs(); ++i) {
      HETRT_ASSERT_OK_AND_ASSIGN(Tensor out, m.executor->GetOutput(i));
      outputs[sequential].push_back(std::move(out));
    }
  }
  ASSERT_EQ(outputs[0].size(), outputs[1].size());
  for (size_t i = 0; i < outputs[0].size(); ++i) {
    ASSERT_EQ(outputs[0][i].nbytes(), outputs[1][i].nbytes());
    EXPECT_EQ(std::memcmp(outputs[0][i].data(), outputs[1][i].data(), outputs[0][i].nbytes()), 0) << "output " << i;
  }
}

TEST(AsyncExecutor, HeteroFixtureProfileNamesLanesAndCopies) {
  HETRT_REQUIRE_OPENCL();
  HETRT_REQUIRE_FIXTURE(dir, "hetero_opencl_seed");
  GraphExecutor::Options options;
  options.devices = {kCpu, kCl};
  HETRT_ASSERT_OK_AND_ASSIGN(GraphModel m, OpenGraphModel({dir + "/deploy.so"}, options));
  HETRT_ASSERT_OK_AND_ASSIGN(auto inputs, LoadParamDictFile(dir + "/inputs.params"));
  for (const auto& p : inputs) HETRT_ASSERT_OK(m.executor->SetInput(p.name, p.tensor));
  GraphExecutor::RunProfile run;
  HETRT_ASSERT_OK(m.executor->RunProfiled(&run));
  HETRT_ASSERT_OK_AND_ASSIGN(auto expected, LoadParamDictFile(dir + "/outputs.params"));
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor out, m.executor->GetOutput(0));
  EXPECT_TRUE(testing::TensorsClose(out, expected[0].tensor, 1e-5, 1e-5));
  int copies = 0;
  for (const auto& t : run.nodes)
    if (m.executor->graph().nodes[t.node_id].func_name == kCopyFunction) {
      ++copies;
      EXPECT_GT(t.bytes, 0u);
    }
  EXPECT_GE(copies, 1);
  bool device_lane = false;
  for (const auto& lane : run.lanes) device_lane |= lane.find("opencl:0") != std::string::npos;
  EXPECT_TRUE(device_lane);
}

}  // namespace
}  // namespace hetrt
