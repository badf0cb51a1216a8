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

#include <chrono>
#include <filesystem>

#include "hetrt/llm/engine.h"
#include "hetrt/relax/paged_kv_cache.h"
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
  const InterleavedNs ns = TimeInterleaved(
      state, /*reps=*/50,
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
      if (auto id = (*engine)->AddRequest(request()); !id.ok()) return state.SkipWithError(id.status().ToString().c_str());
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

}  // namespace
}  // namespace hetrt

BENCHMARK_MAIN();
