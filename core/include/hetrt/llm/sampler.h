// The engine's host sampler: one next token from one row of logits, with the
// knobs MLC-LLM and vLLM (OpenAI's API) users know: temperature (0 = greedy),
// top-k, top-p, repetition / presence / frequency penalties and a seed.
//
// One Sample() call, in order:
//   1. penalties on a scratch copy of the logits, once per distinct token of
//      `history` (prompt, then generated ids), as vLLM: repetition first, for
//      every id of the history (l > 0 -> l / r, else l * r), then, for the
//      generated ids alone, l -= presence * (count > 0) + frequency * count
//      (OpenAI: how often the token was sampled so far);
//   2. temperature 0 or top_k 1: the argmax (the lowest index on ties);
//   3. otherwise p ∝ exp((l - l_max) / temperature); keep the top_k largest
//      logits (ties: lower index first), then the shortest prefix of those, in
//      descending order, whose mass reaches top_p of theirs; draw from what is
//      kept with a uniform in [0, 1) from the sampler's own std::mt19937_64.
// Same seed and same sequence of (logits, history) => same tokens, on every
// platform (the uniform is built from the generator's bits, not from a
// library distribution). Buffers are members: after the first call with a
// given vocabulary size a call allocates nothing.
//
// Thread contract: thread-compatible. A Sampler (its generator and buffers) is
// used by one thread at a time; give each sequence its own.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "hetrt/base/status.h"

namespace hetrt {

struct SamplingParams {
  float temperature = 0;         // >= 0; 0 = greedy (argmax)
  float top_p = 1;               // in (0, 1]; 1 = off
  int top_k = 0;                 // >= 0; 0 = off (as is any k >= the vocabulary)
  float repetition_penalty = 1;  // > 0; 1 = off
  float presence_penalty = 0;    // in [-2, 2]; 0 = off
  float frequency_penalty = 0;   // in [-2, 2]; 0 = off
  uint64_t seed = 0;             // used when has_seed
  bool has_seed = false;         // false: seeded from std::random_device

  // Errors name the field and its allowed range; vocab_size must be >= 1.
  Status Validate(int64_t vocab_size) const;
};

class Sampler {
 public:
  explicit Sampler(const SamplingParams& params);

  // The next token for `logits` (one row, the vocabulary); `history` holds the
  // ids the penalties count, its first `prompt_length` the prompt's (counted
  // by the repetition penalty only). Errors: invalid params for this
  // vocabulary, ids outside it, NaN logits (after penalties), no finite
  // largest logit when sampling.
  Result<int32_t> Sample(std::span<const float> logits, std::span<const int32_t> history, size_t prompt_length = 0);

  const SamplingParams& params() const { return params_; }

 private:
  void ApplyPenalties(std::span<const int32_t> history, size_t prompt_length);
  Result<int32_t> Draw();

  SamplingParams params_;
  std::mt19937_64 rng_;
  std::vector<float> scratch_;   // the penalised logits
  std::vector<int32_t> counts_;  // per token: 2 x generated count + 1 if in the history; all 0 between calls
  std::vector<int32_t> seen_;    // distinct ids of the current history
  std::vector<int32_t> order_;   // candidate ids, best first
  std::vector<double> weights_;  // exp((l - l_max) / T) of the candidates, in order_'s order
};

}  // namespace hetrt
