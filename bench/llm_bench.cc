// The LLM runtime against its kernels (tvm-0.25-llm/tiny_llama on the CPU):
//   - a decode step (begin_forward, embed, decode / batch_decode, end_forward,
//     then popn so the cache stays put) interleaved with the same step's
//     kernels called directly (kernel_floor.h: the VM's and the KV cache's):
//     the runtime's own share is the difference;
//   - the engine's decode step (the scheduler and sampling on top), and the
//     tokens per second it reaches, at batch 1, 2, 4 (tiny_llama is compiled
//     for at most 4 sequences per batch: the engine refuses more);
//   - prefill of a 7-token prompt, and opening the model (load time).
#include <benchmark/benchmark.h>
#include <cstdlib>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "hetrt/llm/engine.h"
#include "hetrt/plugin_host/plugin_registry.h"
#include "hetrt/relax/paged_kv_cache.h"
#include "hetrt/relax/tensor_cache.h"
#include "hetrt/relax/vm.h"
#include "interleaved.h"
#include "kernel_floor.h"

namespace hetrt {
namespace {

std::string ModelDir() {
  const char* env = std::getenv("HETRT_FIXTURES");
  return std::string(env && *env ? env : HETRT_DEFAULT_FIXTURES_DIR) + "/tvm-0.25-llm/tiny_llama";
}

Result<std::unique_ptr<LlmEngine>> OpenEngine(int64_t batch) {
  LlmEngineOptions o;
  o.model_dir = ModelDir();
  o.max_batch_size = batch;
  return LlmEngine::Open(o);
}

// `batch` sequences holding a 7-token prompt each, ready to decode.
struct DecodeSetup {
  std::unique_ptr<LlmEngine> engine;
  std::vector<int64_t> ids, ones;
  std::vector<int32_t> tokens;

  static Result<DecodeSetup> Make(int64_t batch) {
    DecodeSetup d;
    HETRT_ASSIGN_OR_RETURN(d.engine, OpenEngine(batch));
    const std::vector<int32_t> prompt = {197, 93, 168, 51, 241, 22, 67};
    for (int64_t i = 0; i < batch; ++i) {
      const int64_t id = 1000 + i;
      HETRT_RETURN_IF_ERROR(d.engine->kv_cache().AddSequence(id));
      const int64_t id_span[] = {id}, length[] = {7};
      HETRT_RETURN_IF_ERROR(d.engine->Forward(id_span, length, prompt).status());
      d.ids.push_back(id);
      d.ones.push_back(1);
      d.tokens.push_back(static_cast<int32_t>(22 + i));
    }
    return d;
  }
  Status Step() {
    HETRT_RETURN_IF_ERROR(engine->Forward(ids, ones, tokens).status());
    for (int64_t id : ids) HETRT_RETURN_IF_ERROR(engine->kv_cache().PopN(id, 1));
    return OkStatus();
  }
};

void BM_DecodeStepVsKernels(benchmark::State& state) {
  const int64_t batch = state.range(0);
  auto setup = DecodeSetup::Make(batch);
  if (!setup.ok()) return state.SkipWithError(setup.status().ToString().c_str());
  for (int i = 0; i < 20; ++i)  // warm: pools filled, pages touched
    if (Status s = setup->Step(); !s.ok()) return state.SkipWithError(s.ToString().c_str());
  KernelFloor floor(KernelFloor::Buffers::kInPlace);
  setup->engine->vm().SetKernelObserver(floor.Observer());
  setup->engine->kv_cache().SetKernelObserver(floor.Observer());
  Status recorded = setup->Step();
  setup->engine->vm().SetKernelObserver(nullptr);
  setup->engine->kv_cache().SetKernelObserver(nullptr);
  if (!recorded.ok() || !floor.status().ok())
    return state.SkipWithError((recorded.ok() ? floor.status() : recorded).ToString().c_str());
  const uint64_t allocations = setup->engine->vm().PluginAllocations();
  Status failed;
  // HETRT_BENCH_DECODE_REPS: steps per iteration (default 50). Two callgrind
  // runs with different counts, differenced, give one replayed step's
  // instructions without the warm-up's interpreted and recorded steps.
  const char* reps_env = std::getenv("HETRT_BENCH_DECODE_REPS");
  const int reps = reps_env != nullptr && std::atoi(reps_env) > 0 ? std::atoi(reps_env) : 50;
  const InterleavedNs ns = TimeInterleaved(
      state, reps,
      [&] {
        if (Status s = setup->Step(); !s.ok()) failed = s;
      },
      [&] { floor.Run(); });
  if (!failed.ok()) return state.SkipWithError(failed.ToString().c_str());
  state.counters["step_us"] = ns.measured / 1e3;
  state.counters["kernels_us"] = ns.floor / 1e3;
  state.counters["runtime_us"] = (ns.measured - ns.floor) / 1e3;
  state.counters["kernel_calls"] = static_cast<double>(floor.num_calls());
  state.counters["tokens_per_s"] = static_cast<double>(batch) * 1e9 / ns.measured;
  state.counters["plugin_allocations_in_steps"] =
      static_cast<double>(setup->engine->vm().PluginAllocations() - allocations);
}
BENCHMARK(BM_DecodeStepVsKernels)->Arg(1)->Arg(2)->Arg(4)->Unit(benchmark::kMicrosecond);

// The engine generating: `batch` requests decoding together, greedy; a step
// per iteration (requests are topped up as they finish).
void BM_EngineDecode(benchmark::State& state) {
  const int64_t batch = state.range(0);
  auto engine = OpenEngine(batch);
  if (!engine.ok()) return state.SkipWithError(engine.status().ToString().c_str());
  auto request = [] {
    GenerationRequest r;
    r.prompt = {197, 93, 168, 51, 241, 22, 67};
    r.max_tokens = 100;
    return r;
  };
  uint64_t tokens = 0;
  for (auto _ : state) {
    while ((*engine)->num_running() + (*engine)->num_waiting() < static_cast<size_t>(batch))
      if (auto id = (*engine)->AddRequest(request()); !id.ok())
        return state.SkipWithError(id.status().ToString().c_str());
    auto events = (*engine)->Step();
    if (!events.ok()) return state.SkipWithError(events.status().ToString().c_str());
    tokens += events->size();
  }
  state.counters["tokens_per_s"] = benchmark::Counter(static_cast<double>(tokens), benchmark::Counter::kIsRate);
  state.counters["decode_tokens_per_s"] =
      (*engine)->stats().decode_seconds > 0
          ? static_cast<double>((*engine)->stats().decode_tokens) / (*engine)->stats().decode_seconds
          : 0;
}
BENCHMARK(BM_EngineDecode)->Arg(1)->Arg(2)->Arg(4)->Unit(benchmark::kMicrosecond);

void BM_Prefill7(benchmark::State& state) {
  auto engine = OpenEngine(1);
  if (!engine.ok()) return state.SkipWithError(engine.status().ToString().c_str());
  const std::vector<int32_t> prompt = {197, 93, 168, 51, 241, 22, 67};
  for (auto _ : state)
    if (auto l = (*engine)->Logits(prompt); !l.ok()) return state.SkipWithError(l.status().ToString().c_str());
}
BENCHMARK(BM_Prefill7)->Unit(benchmark::kMicrosecond);

// Opening the model: the library, the VM, the weights (memory-mapped), the KV cache.
void BM_OpenModel(benchmark::State& state) {
  uint64_t weight_bytes = 0;
  for (auto _ : state) {
    auto engine = OpenEngine(4);
    if (!engine.ok()) return state.SkipWithError(engine.status().ToString().c_str());
    weight_bytes = (*engine)->info().weight_bytes;
  }
  state.counters["weight_bytes"] = static_cast<double>(weight_bytes);
}
BENCHMARK(BM_OpenModel)->Unit(benchmark::kMillisecond);

// Loading weights: a tensor cache of range(0) MiB (float32 records of 8 MiB in
// shards of 32 MiB, written once) loaded onto the CPU in a child process: the
// time, and the child's peak RSS growth while loading against the weights'
// size (memory-mapped shards whose pages are dropped once decoded: ~1x).
void BM_LoadTensorCache(benchmark::State& state) {
  const int64_t mib = state.range(0);
  const std::string dir =
      (std::filesystem::temp_directory_path() / ("hetrt_llm_bench_cache_" + std::to_string(mib))).string();
  constexpr int64_t kRecord = 8 << 20, kShard = 32 << 20;
  if (!std::filesystem::exists(dir + "/tensor-cache.json")) {
    std::filesystem::create_directories(dir);
    nlohmann::json shards = nlohmann::json::array();
    std::vector<char> bytes(kRecord, 1);
    int record = 0;
    for (int64_t shard = 0; shard * kShard < mib << 20; ++shard) {
      const std::string name = "params_shard_" + std::to_string(shard) + ".bin";
      std::ofstream out(dir + "/" + name, std::ios::binary);
      nlohmann::json records = nlohmann::json::array();
      for (int64_t at = 0; at < kShard && shard * kShard + at < mib << 20; at += kRecord) {
        out.write(bytes.data(), kRecord);
        records.push_back({{"name", "w" + std::to_string(record++)},
                           {"shape", {kRecord / 4}},
                           {"dtype", "float32"},
                           {"format", "raw"},
                           {"nbytes", kRecord},
                           {"byteOffset", at}});
      }
      out.close();
      shards.push_back({{"dataPath", name},
                        {"format", "raw-shard"},
                        {"nbytes", std::filesystem::file_size(dir + "/" + name)},
                        {"records", records}});
    }
    std::ofstream(dir + "/tensor-cache.json")
        << nlohmann::json{{"metadata", nlohmann::json::object()}, {"records", shards}}.dump();
  }
  auto cpu = PluginRegistry::Global().DeviceFor({kDLCPU, 0});
  if (!cpu.ok()) return state.SkipWithError(cpu.status().ToString().c_str());
  double seconds = 0, growth = 0;
  for (auto _ : state) {
    int fds[2];
    if (pipe(fds) != 0) return state.SkipWithError("pipe");
    const pid_t pid = fork();
    if (pid == 0) {
      rusage before{}, after{};
      getrusage(RUSAGE_SELF, &before);
      const auto t0 = std::chrono::steady_clock::now();
      auto index = TensorCacheIndex::Open(dir);
      auto tensors = index.ok() ? LoadAll(*index, *cpu) : Result<std::vector<Tensor>>(index.status());
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      getrusage(RUSAGE_SELF, &after);
      const double result[2] = {tensors.ok() ? s : -1, (after.ru_maxrss - before.ru_maxrss) * 1024.0};
      (void)!write(fds[1], result, sizeof(result));
      _exit(0);
    }
    close(fds[1]);
    double result[2] = {-1, 0};
    (void)!read(fds[0], result, sizeof(result));
    close(fds[0]);
    waitpid(pid, nullptr, 0);
    if (result[0] < 0) return state.SkipWithError("loading the synthetic tensor cache failed");
    seconds += result[0];
    growth += result[1];
  }
  const double n = static_cast<double>(state.iterations());
  state.counters["load_ms"] = seconds / n * 1e3;
  state.counters["GB_per_s"] = static_cast<double>(mib << 20) / (seconds / n) / 1e9;
  state.counters["peak_rss_growth_over_weights"] = growth / n / static_cast<double>(mib << 20);
}
BENCHMARK(BM_LoadTensorCache)->Arg(128)->Iterations(3)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace hetrt

BENCHMARK_MAIN();
