// `hetrt generate`: a language model's tokens for one or more prompts of token
// ids, through the LLM engine (continuous batching when several are given),
// with the time to first token and the decode rate.
#include <unistd.h>

#include <cstdio>
#include <sstream>

#include "commands.h"
#include "hetrt/llm/engine.h"

namespace hetrt::cli {
namespace {

struct GenerateArgs {
  LlmEngineOptions engine;
  std::vector<std::string> prompts;  // "1,2,3", one per sequence
  int64_t max_tokens = 16;
  double temperature = 0, top_p = 1;
  int top_k = 0;
  double repetition_penalty = 1, presence_penalty = 0, frequency_penalty = 0;
  int64_t seed = -1;
  std::string stop;
};

Result<std::vector<int32_t>> ParseIds(const std::string& text, const std::string& option) {
  std::vector<int32_t> ids;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    size_t used = 0;
    long long v = 0;
    try {
      v = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != item.size() || v < INT32_MIN || v > INT32_MAX)
      return InvalidArgument(option + " takes comma-separated token ids, got '" + item + "'");
    ids.push_back(static_cast<int32_t>(v));
  }
  return ids;
}

int Run(const GenerateArgs& a) {
  LlmEngineOptions options = a.engine;
  const bool terminal = isatty(STDERR_FILENO) != 0;
  if (terminal)
    options.load_progress = [](uint64_t done, uint64_t total) {
      std::fprintf(stderr, "\rloading weights: %3.0f%% of %.1f MiB", total ? 100.0 * done / total : 100.0,
                   total / 1048576.0);
      if (done == total) std::fprintf(stderr, "\n");
    };
  auto engine = LlmEngine::Open(options);
  if (!engine.ok()) return Fail(engine.status().ToString());
  const LlmModelInfo& info = (*engine)->info();
  std::vector<GenerationRequest> requests;
  for (const std::string& text : a.prompts) {
    GenerationRequest r;
    auto ids = ParseIds(text, "--prompt-ids");
    if (!ids.ok()) return Fail(ids.status().ToString());
    r.prompt = *ids;
    r.max_tokens = a.max_tokens;
    r.sampling.temperature = static_cast<float>(a.temperature);
    r.sampling.top_p = static_cast<float>(a.top_p);
    r.sampling.top_k = a.top_k;
    r.sampling.repetition_penalty = static_cast<float>(a.repetition_penalty);
    r.sampling.presence_penalty = static_cast<float>(a.presence_penalty);
    r.sampling.frequency_penalty = static_cast<float>(a.frequency_penalty);
    if (a.seed >= 0) {
      r.sampling.seed = static_cast<uint64_t>(a.seed);
      r.sampling.has_seed = true;
    }
    if (!a.stop.empty()) {
      auto stop = ParseIds(a.stop, "--stop-token-ids");
      if (!stop.ok()) return Fail(stop.status().ToString());
      r.stop_token_ids = *stop;
    }
    requests.push_back(std::move(r));
  }
  std::printf("model: %s (%s), vocabulary %lld, context %lld, %zu weights %.1f MiB loaded in %.3f s\n",
              info.library.c_str(), info.model_type.empty() ? "no metadata" : info.model_type.c_str(),
              static_cast<long long>(info.vocab_size), static_cast<long long>(info.context_window_size),
              info.param_names.size(), info.weight_bytes / 1048576.0, info.load_seconds);
  auto results = (*engine)->Generate(std::move(requests));
  if (!results.ok()) return Fail(results.status().ToString());
  int failed = 0;
  for (size_t i = 0; i < results->size(); ++i) {
    const GenerationResult& r = (*results)[i];
    std::string tokens;
    for (int32_t t : r.tokens) tokens += (tokens.empty() ? "" : ",") + std::to_string(t);
    std::printf("sequence %zu: %s\n", i, tokens.c_str());
    const double decode = r.seconds - r.time_to_first_token_s;
    std::printf("  finish: %s, %zu tokens, time to first token %.3f ms, %.1f tokens/s after it\n",
                FinishReasonName(r.finish), r.tokens.size(), r.time_to_first_token_s * 1e3,
                r.tokens.size() > 1 && decode > 0 ? (r.tokens.size() - 1) / decode : 0.0);
    if (r.finish == FinishReason::kError) {
      std::fprintf(stderr, "hetrt generate: sequence %zu: %s\n", i, r.error.c_str());
      ++failed;
    }
  }
  const LlmStepStats& s = (*engine)->stats();
  std::printf("steps: %llu prefill (%llu tokens, %.3f ms), %llu decode (%llu tokens, %.1f tokens/s)\n",
              static_cast<unsigned long long>(s.prefill_steps), static_cast<unsigned long long>(s.prefill_tokens),
              s.prefill_seconds * 1e3, static_cast<unsigned long long>(s.decode_steps),
              static_cast<unsigned long long>(s.decode_tokens),
              s.decode_seconds > 0 ? s.decode_tokens / s.decode_seconds : 0.0);
  return failed > 0 ? 1 : 0;
}

}  // namespace

Command AddGenerateCommand(CLI::App& app) {
  auto args = std::make_shared<GenerateArgs>();
  auto* cmd =
      app.add_subcommand("generate", "Generate tokens with a language model (a library beside its tensor cache)");
  cmd->add_option("model_dir", args->engine.model_dir,
                  "model folder: one .so and tensor-cache.json (in it or in params/)");
  cmd->add_option("--library", args->engine.library, "the model library, when not in the folder");
  cmd->add_option("--weights", args->engine.weights, "the tensor-cache folder, when not in the model folder");
  cmd->add_option("--prompt-ids", args->prompts, "comma-separated token ids; repeat for several sequences")->required();
  cmd->add_option("--device", args->engine.device, "the device the model runs on (cpu, opencl:0, vulkan, cuda)");
  cmd->add_option("--max-tokens", args->max_tokens, "tokens to generate per sequence")
      ->check(IntInRange("--max-tokens", 0, 1 << 20));
  cmd->add_option("--temperature", args->temperature, "0: greedy (default)");
  cmd->add_option("--top-p", args->top_p, "nucleus sampling mass (default 1)");
  cmd->add_option("--top-k", args->top_k, "sample among the k most likely (0: off)");
  cmd->add_option("--repetition-penalty", args->repetition_penalty, "default 1 (off)");
  cmd->add_option("--presence-penalty", args->presence_penalty, "default 0 (off)");
  cmd->add_option("--frequency-penalty", args->frequency_penalty, "default 0 (off)");
  cmd->add_option("--seed", args->seed, "seed of the sampler (default: random)");
  cmd->add_option("--stop-token-ids", args->stop, "comma-separated ids that end a sequence");
  cmd->add_option("--max-batch-size", args->engine.max_batch_size,
                  "sequences decoded together (default: the library's)");
  cmd->add_option("--max-total-seq-len", args->engine.max_total_seq_len,
                  "the KV cache's tokens (default: context x batch)");
  cmd->add_option("--prefill-chunk-size", args->engine.prefill_chunk_size,
                  "tokens per prefill forward (default: the library's)");
  return [args] {
    if (args->engine.model_dir.empty() && (args->engine.library.empty() || args->engine.weights.empty()))
      return Fail("name a model folder, or --library and --weights");
    return Run(*args);
  };
}

}  // namespace hetrt::cli
