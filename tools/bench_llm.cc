// `hetrt bench MODEL_DIR` on a language model: prefill time, per-token decode
// time, what one decode step spends per callee (kernels and builtins, per
// device lane), the KV cache's own share (begin_forward's bookkeeping, and
// attention minus the kernels it calls), and a Chrome trace of one step.
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "hetrt/base/host_clock.h"
#include "hetrt/llm/engine.h"
#include "hetrt/relax/paged_kv_cache.h"
#include "hetrt/relax/vm.h"

namespace hetrt::cli {
namespace {

double Us(uint64_t from, uint64_t to) { return static_cast<double>(to - from) / 1000.0; }

void PrintRow(const std::string& name, const std::string& lane, const std::vector<double>& v) {
  std::printf("  %-44s %-10s %9.2f %9.2f %9.2f\n", name.substr(0, 44).c_str(), lane.c_str(), Mean(v),
              Percentile(v, 0.5), Percentile(v, 0.99));
}

std::string LaneOf(DLDevice d) { return d.device_type == kDLCPU ? std::string("host") : DeviceToString(d); }

}  // namespace

int BenchLlm(const std::string& model_dir, const std::string& device, int repeat, int warmup,
             const std::string& trace) {
  LlmEngineOptions options;
  options.model_dir = model_dir;
  options.device = device;
  auto opened = LlmEngine::Open(options);
  if (!opened.ok()) return Fail(opened.status().ToString());
  LlmEngine& engine = **opened;
  const LlmModelInfo& info = engine.info();
  const RelaxExecutable& exe = engine.vm().executable();
  std::printf("%s on %s: vocabulary %lld, %zu weights (%.2f MiB) loaded in %.2f ms\n", info.library.c_str(),
              device.c_str(), static_cast<long long>(info.vocab_size), info.param_names.size(),
              info.weight_bytes / 1048576.0, info.load_seconds * 1e3);

  // Prefill of one prompt (as long as a chunk, at most 32 tokens).
  const int64_t prompt_length = std::min<int64_t>({32, info.prefill_chunk_size, info.context_window_size - 1});
  std::vector<int32_t> prompt;
  for (int64_t i = 0; i < prompt_length; ++i) prompt.push_back(static_cast<int32_t>((i * 37 + 11) % info.vocab_size));
  std::vector<double> prefill;
  for (int r = 0; r < warmup + repeat; ++r) {
    const uint64_t t0 = HostNowNs();
    if (auto l = engine.Logits(prompt); !l.ok()) return Fail(l.status().ToString());
    if (r >= warmup) prefill.push_back(Us(t0, HostNowNs()));
  }

  // Decode: one sequence holding the prompt, one token per step (taken back
  // with popn so every step sees the same cache).
  PagedKvCache& kv = engine.kv_cache();
  const int64_t seq = int64_t{1} << 40;
  const int64_t ids[] = {seq}, one[] = {1}, length[] = {prompt_length};
  const int32_t token[] = {prompt[0]};
  if (Status s = kv.AddSequence(seq); !s.ok()) return Fail(s.ToString());
  if (auto f = engine.Forward(ids, length, prompt); !f.ok()) return Fail(f.status().ToString());
  auto step = [&]() -> Status {
    HETRT_RETURN_IF_ERROR(engine.Forward(ids, one, token).status());
    return kv.PopN(seq, 1);
  };
  std::vector<double> decode, bookkeeping;
  for (int r = 0; r < warmup + repeat; ++r) {
    const uint64_t t0 = HostNowNs();
    if (Status s = step(); !s.ok()) return Fail(s.ToString());
    if (r >= warmup) decode.push_back(Us(t0, HostNowNs()));
  }
  for (int r = 0; r < repeat; ++r) {  // the cache's bookkeeping of a decode step
    const uint64_t t0 = HostNowNs();
    Status s = kv.BeginForward(ids, one);
    if (s.ok()) s = kv.EndForward();
    const uint64_t t1 = HostNowNs();
    if (s.ok()) s = kv.PopN(seq, 1);
    if (!s.ok()) return Fail(s.ToString());
    bookkeeping.push_back(Us(t0, t1));
  }

  // Profiled decode steps: every Call instruction, every KV-cache kernel.
  RelaxProfile vm_events;
  std::vector<BuiltinKernelEvent> kv_events;
  std::map<std::pair<std::string, std::string>, std::vector<double>> per_callee;  // (name, lane)
  std::vector<double> kv_own;
  RelaxProfile first_vm;
  std::vector<BuiltinKernelEvent> first_kv;
  engine.SetProfile(&vm_events, &kv_events);
  for (int r = 0; r < repeat; ++r) {
    vm_events.events.clear();
    kv_events.clear();
    if (Status s = step(); !s.ok()) {
      engine.SetProfile(nullptr, nullptr);
      return Fail(s.ToString());
    }
    std::map<std::pair<std::string, std::string>, double> this_step;
    double attention = 0, kv_kernels = 0;
    for (const RelaxTraceEvent& e : vm_events.events) {
      if (e.kind == RelaxTraceEvent::Kind::kVmCall) continue;
      const std::string& name = exe.functions[e.callee].name;
      const std::string lane = e.kind == RelaxTraceEvent::Kind::kKernel ? LaneOf(e.device) : "host";
      this_step[{name, lane}] += Us(e.start_ns, e.end_ns);
      if (name == "vm.builtin.attention_kv_cache_attention_with_fused_qkv") attention += Us(e.start_ns, e.end_ns);
    }
    for (const BuiltinKernelEvent& e : kv_events) {
      this_step[{std::string("kv cache: ") + e.slot, LaneOf(e.device)}] += Us(e.start_ns, e.end_ns);
      kv_kernels += Us(e.start_ns, e.end_ns);
    }
    for (const auto& [key, us] : this_step) per_callee[key].push_back(us);
    kv_own.push_back(attention - kv_kernels);
    if (r == 0) {
      first_vm = vm_events;
      first_kv = kv_events;
    }
  }
  engine.SetProfile(nullptr, nullptr);
  (void)kv.RemoveSequence(seq);

  std::printf("%-46s %-10s %9s %9s %9s\n", "", "lane", "mean us", "median us", "p99 us");
  PrintRow("prefill of " + std::to_string(prompt_length) + " tokens", "", prefill);
  PrintRow("decode step (one token)", "", decode);
  PrintRow("  KV cache: begin_forward + end_forward", "host", bookkeeping);
  PrintRow("  KV cache: attention minus its kernels", "host", kv_own);
  std::printf("one decode step, per callee (profiled; builtins include the kernels they call):\n");
  for (const auto& [key, v] : per_callee) PrintRow(key.first, key.second, v);
  if (!trace.empty()) {
    nlohmann::json events = nlohmann::json::array();
    events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", 0}, {"tid", 0}, {"args", {{"name", "host"}}}});
    const uint64_t origin = first_vm.start_ns;
    auto at = [&](uint64_t ns) { return static_cast<double>(ns - origin) / 1000.0; };
    for (const RelaxTraceEvent& e : first_vm.events)
      events.push_back({{"name", exe.functions[e.callee].name},
                        {"cat", e.kind == RelaxTraceEvent::Kind::kKernel ? "kernel" : "builtin"},
                        {"ph", "X"},
                        {"pid", 0},
                        {"tid", 0},
                        {"ts", at(e.start_ns)},
                        {"dur", Us(e.start_ns, e.end_ns)}});
    for (const BuiltinKernelEvent& e : first_kv)
      events.push_back({{"name", std::string("kv cache: ") + e.slot},
                        {"cat", "kernel"},
                        {"ph", "X"},
                        {"pid", 0},
                        {"tid", 0},
                        {"ts", at(e.start_ns)},
                        {"dur", Us(e.start_ns, e.end_ns)}});
    std::ofstream out(trace);
    out << nlohmann::json{{"traceEvents", events}}.dump(1);
    if (!out) return Fail("cannot write " + trace);
    std::printf("trace: %s (one decode step; open in chrome://tracing or ui.perfetto.dev)\n", trace.c_str());
  }
  return 0;
}

}  // namespace hetrt::cli
