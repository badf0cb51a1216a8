// The generation engine: runs a language model TVM compiled the way MLC-LLM
// builds one (a Relax VM library with embed / prefill / decode /
// batch_prefill / batch_decode / create_tir_paged_kv_cache, weights in a
// tensor cache) for many sequences at once. Requests join and leave between
// steps (continuous batching): each step prefills the next chunk of waiting
// prompts and decodes every running sequence together. `hetrt generate`,
// Python's hetrt.llm and the server drive this one engine (docs/llm.md).
//
// Thread contract: thread-compatible; one thread at a time drives an engine.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "hetrt/base/status.h"
#include "hetrt/llm/sampler.h"
#include "hetrt/relax/profile.h"

namespace hetrt {

class PluginRegistry;
class RelaxVirtualMachine;
class PagedKvCache;

// Tokens per KV-cache page: what TVM's kernels for the paged cache are built for.
inline constexpr int32_t kLlmPageSize = 16;

struct LlmEngineOptions {
  // A model folder: the library (one .so) beside its weights (a tensor cache:
  // tensor-cache.json + shards, in the folder or in its params/). Or name the
  // two apart, as MLC-LLM's engine takes them.
  std::string model_dir;
  std::string library = {};
  std::string weights = {};
  std::string device = "cpu";  // "cpu", "opencl:0", "vulkan", "cuda:1"
  // 0: what the library's metadata says (context window, prefill chunk, batch).
  int64_t max_batch_size = 0;
  int64_t max_total_seq_len = 0;
  int64_t prefill_chunk_size = 0;
  PluginRegistry* plugins = nullptr;  // nullptr: PluginRegistry::Global()
  // Called while the weights load (bytes done, bytes in all).
  std::function<void(uint64_t, uint64_t)> load_progress = nullptr;
  // Replay the embedding and decode steps once a batch size repeats
  // (RelaxVirtualMachine::EnableReplay); false interprets every call.
  bool replay_steps = true;
};

// What the library and its metadata say, and what the engine chose.
struct LlmModelInfo {
  std::string library, weights;
  std::string model_type;  // "llama", ... ("" when the library has no _metadata)
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t context_window_size = 0;
  int64_t prefill_chunk_size = 0;
  int64_t max_batch_size = 0;
  int64_t max_total_seq_len = 0;  // the KV cache's token capacity
  int32_t page_size = kLlmPageSize;
  int64_t num_total_pages = 0;
  std::vector<std::string> functions;  // the LLM functions the library has
  std::vector<std::string> param_names;
  uint64_t weight_bytes = 0;
  double load_seconds = 0;
};

struct GenerationRequest {
  std::vector<int32_t> prompt;
  int64_t max_tokens = 16;
  SamplingParams sampling = {};
  std::vector<int32_t> stop_token_ids = {};
};

enum class FinishReason { kNone, kLength, kStop, kCancelled, kError };
const char* FinishReasonName(FinishReason reason);  // "length", "stop", "cancelled", "error"

// One token a step produced for one request (or the request's end).
struct TokenEvent {
  int64_t request = 0;
  int32_t token = -1;  // -1: no token (a request that ended without one)
  FinishReason finish = FinishReason::kNone;
  std::string error = {};  // with kError
};

struct GenerationResult {
  std::vector<int32_t> tokens;
  FinishReason finish = FinishReason::kNone;
  std::string error = {};  // with kError
  double time_to_first_token_s = 0;
  double seconds = 0;
};

// Time spent in each part of the steps so far (for `hetrt generate` and bench).
struct LlmStepStats {
  uint64_t prefill_steps = 0, decode_steps = 0;
  uint64_t prefill_tokens = 0, decode_tokens = 0;
  double prefill_seconds = 0, decode_seconds = 0;
};

class LlmEngine {
 public:
  static Result<std::unique_ptr<LlmEngine>> Open(const LlmEngineOptions& options);
  ~LlmEngine();
  LlmEngine(const LlmEngine&) = delete;
  LlmEngine& operator=(const LlmEngine&) = delete;

  const LlmModelInfo& info() const;

  // ---- continuous batching: add requests any time, step until idle.
  // A request is checked whole here (ids in the vocabulary, the prompt plus
  // max_tokens within the context, the sampling settings): a bad one is an
  // error for it alone. Returns the request's id.
  Result<int64_t> AddRequest(GenerationRequest request);
  // AddRequest's checks alone, for a caller that queues requests of its own
  // (the server): reads only what Open set, so any thread may call it.
  Status CheckRequest(const GenerationRequest& request) const;
  // KV-cache pages a request reserves while it runs (its prompt plus
  // max_tokens), and the pages no admitted request has reserved: a request
  // added when it fits those and the batch has room is admitted at the next Step.
  int64_t PagesFor(const GenerationRequest& request) const;
  int64_t unreserved_pages() const;
  // Ends a request now; its pages return to the cache. False when unknown.
  bool Cancel(int64_t request);
  // One step: admits waiting requests whose pages fit, prefills the next
  // chunk of prompts, decodes every running sequence once. Events in order.
  Result<std::vector<TokenEvent>> Step();
  bool HasWork() const;
  size_t num_running() const;
  size_t num_waiting() const;

  // ---- whole generations
  Result<std::vector<GenerationResult>> Generate(std::vector<GenerationRequest> requests,
                                                 const std::function<void(const TokenEvent&)>& on_token = nullptr);
  // The last position's logits after prefilling `prompt` (a sequence of its own, removed after).
  Result<std::vector<float>> Logits(std::span<const int32_t> prompt);

  // ---- one forward without the scheduler (benchmarks, tests): the sequences
  // must be in the KV cache (kv_cache().AddSequence); `tokens` holds each
  // one's new tokens in order, `lengths` how many. All lengths 1: decode.
  // Returns the logits, one row of vocab_size per sequence, on the host
  // (valid until the next forward).
  Result<const float*> Forward(std::span<const int64_t> seq_ids, std::span<const int64_t> lengths,
                               std::span<const int32_t> tokens);

  // Times every Call instruction of the model's functions into `vm` and every
  // KV-cache kernel into `kv_kernels` (nullptr: off), for `hetrt bench`.
  void SetProfile(RelaxProfile* vm, std::vector<BuiltinKernelEvent>* kv_kernels);

  // ---- the parts underneath (tests, bench)
  RelaxVirtualMachine& vm();
  PagedKvCache& kv_cache();
  const LlmStepStats& stats() const;

 private:
  struct Impl;
  explicit LlmEngine(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace hetrt
