// Graph-executor benchmarks on TVM-made models: dispatch overhead against the
// direct-call floor, whole-model latency per thread count, load + create time,
// and the peak memory of `hetrt run`.
#include <benchmark/benchmark.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>

#include "hetrt/sdk/byte_stream.h"
#include "hetrt/exec/factory_modules.h"
#include "hetrt/exec/graph_model.h"
#include "hetrt/module/module_loader.h"
#include "interleaved.h"

namespace hetrt {
namespace {

std::string Fixture(const std::string& model) {
  const char* env = std::getenv("HETRT_FIXTURES");
  std::string dir = std::string(env && *env ? env : HETRT_DEFAULT_FIXTURES_DIR) + "/tvm-0.18/" + model;
  return std::filesystem::is_directory(dir) ? dir : std::string();
}

// Opens a deploy.so with its inputs bound, or explains why not.
bool OpenWithInputs(benchmark::State& state, const std::string& model, GraphModel* out) {
  const std::string dir = Fixture(model);
  if (dir.empty()) {
    state.SkipWithError(("fixture " + model + " not found (set HETRT_FIXTURES)").c_str());
    return false;
  }
  auto m = OpenGraphModel({dir + "/deploy.so"}, {});
  auto inputs = LoadParamDictFile(dir + "/inputs.params");
  if (!m.ok() || !inputs.ok()) {
    state.SkipWithError((m.ok() ? inputs.status() : m.status()).ToString().c_str());
    return false;
  }
  for (const auto& p : *inputs) (void)m->executor->SetInput(p.name, p.tensor);
  *out = std::move(m).value();
  return true;
}

void SetThreads(int threads) {
  auto cpu = PluginRegistry::Global().ForDeviceType(kDLCPU);
  if (cpu.ok()) (void)(*cpu)->SetOption("num_threads", std::to_string(threads));
}

// The floor: the graph's kernels called in a plain loop with prepared
// arguments, one buffer per entry, nothing else.
struct DirectCalls {
  struct Call {  // argument pointers resolved up front: the tightest loop there is
    hetrt_packed_cfunc_t fn;
    hetrt_value_t* args;
    int32_t* codes;
    int32_t num_args;
  };
  std::vector<Tensor> entries;
  std::vector<hetrt_value_t> args;  // all calls' arguments, contiguous
  std::vector<int32_t> codes;
  std::vector<Call> calls;
  std::vector<uint32_t> begins;

  static Result<DirectCalls> Prepare(const std::string& dir, Module& lib) {
    HETRT_ASSIGN_OR_RETURN(auto bytes, ReadFileBytes(dir + "/graph.json"));
    HETRT_ASSIGN_OR_RETURN(Graph g, ParseGraphJson(std::string(bytes.begin(), bytes.end()), "graph"));
    DirectCalls d;
    for (uint32_t e = 0; e < g.num_entries(); ++e) {
      HETRT_ASSIGN_OR_RETURN(Tensor t, Tensor::EmptyHost(g.shapes[e], g.dtypes[e]));
      std::memset(t.data(), 0, t.nbytes());
      d.entries.push_back(std::move(t));
    }
    for (uint32_t nid = 0; nid < g.nodes.size(); ++nid) {
      const GraphNode& n = g.nodes[nid];
      if (n.kind != GraphNode::Kind::kOp) continue;
      HETRT_ASSIGN_OR_RETURN(const PackedFunc* f, lib.GetFunction(n.func_name));
      if (f == nullptr) return NotFound(n.func_name);
      const auto begin = static_cast<uint32_t>(d.args.size());
      for (const auto& in : n.inputs) d.args.push_back({.v_handle = d.entries[g.entry_id(in)].dl()});
      for (uint32_t k = 0; k < n.num_outputs; ++k) d.args.push_back({.v_handle = d.entries[g.entry_id(nid, k)].dl()});
      d.codes.resize(d.args.size(), HETRT_TYPE_DLTENSOR);
      d.calls.push_back({f->call, nullptr, nullptr, static_cast<int32_t>(d.args.size() - begin)});
      d.begins.push_back(begin);
    }
    for (size_t i = 0; i < d.calls.size(); ++i) {  // the vectors no longer move
      d.calls[i].args = &d.args[d.begins[i]];
      d.calls[i].codes = &d.codes[d.begins[i]];
    }
    return d;
  }
  void Run() {
    hetrt_value_t ret;
    int32_t ret_code;
    for (const Call& c : calls) c.fn(c.args, c.codes, c.num_args, &ret, &ret_code, nullptr);
  }
};

// chain200 with its inputs bound, and the floor's direct calls into its kernels;
// false (the state says why) when either cannot be had.
bool OpenChain200WithFloor(benchmark::State& state, GraphModel* m, DirectCalls* direct) {
  if (!OpenWithInputs(state, "chain200", m)) return false;
  auto prepared = DirectCalls::Prepare(Fixture("chain200"), *m->root);
  if (!prepared.ok()) {
    state.SkipWithError(prepared.status().ToString().c_str());
    return false;
  }
  *direct = std::move(prepared).value();
  return true;
}

void BM_Chain200_Executor(benchmark::State& state) {
  GraphModel m;
  if (!OpenWithInputs(state, "chain200", &m)) return;
  for (auto _ : state) benchmark::DoNotOptimize(m.executor->Run());
}
BENCHMARK(BM_Chain200_Executor);

void BM_Chain200_DirectCallFloor(benchmark::State& state) {
  GraphModel m;
  DirectCalls direct;
  if (!OpenChain200WithFloor(state, &m, &direct)) return;
  for (auto _ : state) direct.Run();
}
BENCHMARK(BM_Chain200_DirectCallFloor);

// Both loops interleaved in one run (TimeInterleaved).
void BM_Chain200_RatioToFloor(benchmark::State& state) {
  GraphModel m;
  DirectCalls direct;
  if (!OpenChain200WithFloor(state, &m, &direct)) return;
  const InterleavedNs ns = TimeInterleaved(
      state, /*reps=*/200, [&] { (void)m.executor->Run(); }, [&] { direct.Run(); });
  state.counters["executor_us"] = ns.measured / 1000.0;
  state.counters["floor_us"] = ns.floor / 1000.0;
  state.counters["ratio"] = ns.measured / ns.floor;
}
BENCHMARK(BM_Chain200_RatioToFloor)->Unit(benchmark::kMillisecond);

void BM_Resnet18(benchmark::State& state) {
  SetThreads(static_cast<int>(state.range(0)));
  GraphModel m;
  if (!OpenWithInputs(state, "resnet18", &m)) return;
  (void)m.executor->Run();  // warm caches and workspaces
  for (auto _ : state) benchmark::DoNotOptimize(m.executor->Run());
  SetThreads(static_cast<int>(std::thread::hardware_concurrency()));
}
BENCHMARK(BM_Resnet18)->ArgName("threads")->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_Resnet18_LoadAndCreate(benchmark::State& state) {
  const std::string dir = Fixture("resnet18");
  if (dir.empty()) return state.SkipWithError("fixture resnet18 not found");
  for (auto _ : state) {
    auto m = OpenGraphModel({dir + "/deploy.so"}, {});
    if (!m.ok()) return state.SkipWithError(m.status().ToString().c_str());
    benchmark::DoNotOptimize(m->executor.get());
  }
}
BENCHMARK(BM_Resnet18_LoadAndCreate)->Unit(benchmark::kMillisecond)->UseRealTime();

// Peak resident memory of a whole `hetrt run` process on resnet18.
void BM_Resnet18_HetrtRunPeakMemory(benchmark::State& state) {
  const std::string dir = Fixture("resnet18");
  if (dir.empty()) return state.SkipWithError("fixture resnet18 not found");
  long max_kb = 0;
  for (auto _ : state) {
    pid_t pid = fork();
    if (pid == 0) {
      int null = open("/dev/null", 1);
      dup2(null, 1);
      const std::string model = dir + "/deploy.so", inputs = dir + "/inputs.params";
      execl(HETRT_CLI, HETRT_CLI, "run", model.c_str(), "--inputs", inputs.c_str(), nullptr);
      _exit(127);
    }
    int status = 0;
    rusage usage{};
    wait4(pid, &status, 0, &usage);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return state.SkipWithError("hetrt run failed");
    max_kb = std::max(max_kb, usage.ru_maxrss);
  }
  state.counters["peak_rss_MB"] = static_cast<double>(max_kb) / 1024.0;
}
BENCHMARK(BM_Resnet18_HetrtRunPeakMemory)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);

}  // namespace
}  // namespace hetrt

BENCHMARK_MAIN();
