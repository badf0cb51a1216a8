#include "hetrt/llm/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>

namespace hetrt {
namespace {

uint64_t RandomSeed() {
  std::random_device device;
  return (static_cast<uint64_t>(device()) << 32) ^ device();
}

std::string Number(double value) {
  std::string text = std::to_string(value);
  // "0.500000" -> "0.5"
  if (text.find('.') != std::string::npos) {
    text.erase(text.find_last_not_of('0') + 1);
    if (text.back() == '.') text.pop_back();
  }
  return text;
}

}  // namespace

Status SamplingParams::Validate(int64_t vocab_size) const {
  // Messages are built only on error: a valid call allocates nothing.
  auto bad = [](const std::string& what) { return InvalidArgument("sampling parameters: " + what); };
  if (vocab_size < 1) return bad("vocabulary size " + std::to_string(vocab_size) + " (must be >= 1)");
  if (!(temperature >= 0) || !std::isfinite(temperature))
    return bad("temperature " + Number(temperature) + " must be finite and >= 0 (0 is greedy)");
  if (!(top_p > 0 && top_p <= 1)) return bad("top_p " + Number(top_p) + " is outside (0, 1] (1 turns it off)");
  if (top_k < 0) return bad("top_k " + std::to_string(top_k) + " is negative (0 turns it off)");
  if (!(repetition_penalty > 0) || !std::isfinite(repetition_penalty))
    return bad("repetition_penalty " + Number(repetition_penalty) + " must be finite and > 0 (1 turns it off)");
  // [-2, 2], as OpenAI's API, vLLM and MLC-LLM: past it a penalty only breaks the distribution.
  if (!(presence_penalty >= -2 && presence_penalty <= 2))
    return bad("presence_penalty " + Number(presence_penalty) + " is outside [-2, 2] (0 turns it off)");
  if (!(frequency_penalty >= -2 && frequency_penalty <= 2))
    return bad("frequency_penalty " + Number(frequency_penalty) + " is outside [-2, 2] (0 turns it off)");
  return OkStatus();
}

Sampler::Sampler(const SamplingParams& params) : params_(params), rng_(params.has_seed ? params.seed : RandomSeed()) {}

Result<int32_t> Sampler::Sample(std::span<const float> logits, std::span<const int32_t> history, size_t prompt_length) {
  const int64_t vocab = static_cast<int64_t>(logits.size());
  HETRT_RETURN_IF_ERROR(params_.Validate(vocab), "sampler");
  if (vocab > std::numeric_limits<int32_t>::max())
    return InvalidArgument("sampler: vocabulary of " + std::to_string(vocab) + " does not fit int32 token ids");
  for (size_t i = 0; i < history.size(); ++i) {
    if (history[i] < 0 || history[i] >= vocab)
      return OutOfRange("sampler: history[" + std::to_string(i) + "] = " + std::to_string(history[i]) +
                        " is outside the vocabulary of " + std::to_string(vocab));
  }
  scratch_.assign(logits.begin(), logits.end());
  ApplyPenalties(history, prompt_length);
  for (int64_t i = 0; i < vocab; ++i) {
    if (std::isnan(scratch_[i])) return InvalidArgument("sampler: logits[" + std::to_string(i) + "] is NaN");
  }
  if (params_.temperature == 0 || params_.top_k == 1) {
    // First maximum: the lowest index on ties.
    return static_cast<int32_t>(std::max_element(scratch_.begin(), scratch_.end()) - scratch_.begin());
  }
  return Draw();
}

void Sampler::ApplyPenalties(std::span<const int32_t> history, size_t prompt_length) {
  const bool repetition = params_.repetition_penalty != 1.0f;
  const bool additive = params_.presence_penalty != 0.0f || params_.frequency_penalty != 0.0f;
  if (history.empty() || (!repetition && !additive)) return;
  if (counts_.size() != scratch_.size()) counts_.assign(scratch_.size(), 0);
  if (seen_.capacity() < scratch_.size()) seen_.reserve(scratch_.size());  // distinct ids never exceed it
  seen_.clear();
  for (size_t i = 0; i < history.size(); ++i) {
    int32_t& count = counts_[history[i]];
    if (count == 0) seen_.push_back(history[i]);
    count |= 1;
    if (i >= prompt_length) count += 2;
  }
  for (int32_t id : seen_) {
    float& l = scratch_[id];
    if (repetition) l = l > 0 ? l / params_.repetition_penalty : l * params_.repetition_penalty;
    const int32_t generated = counts_[id] >> 1;
    if (additive && generated > 0)
      l -= params_.presence_penalty + params_.frequency_penalty * static_cast<float>(generated);
    counts_[id] = 0;  // ready for the next call
  }
}

Result<int32_t> Sampler::Draw() {
  const int64_t vocab = static_cast<int64_t>(scratch_.size());
  const float max_logit = *std::max_element(scratch_.begin(), scratch_.end());
  if (!std::isfinite(max_logit))
    return InvalidArgument("sampler: the largest logit is " + std::to_string(max_logit) +
                           ": no distribution to sample");

  // Candidates: every token in index order, or, when top-k or top-p cut, the
  // best first (higher logit, then lower index).
  order_.resize(vocab);
  weights_.resize(vocab);
  std::iota(order_.begin(), order_.end(), 0);
  const bool top_k_cuts = params_.top_k > 0 && params_.top_k < vocab;
  const bool top_p_cuts = params_.top_p < 1;
  int64_t count = vocab;
  if (top_k_cuts || top_p_cuts) {
    auto better = [this](int32_t a, int32_t b) {
      return scratch_[a] > scratch_[b] || (scratch_[a] == scratch_[b] && a < b);
    };
    if (top_k_cuts) {
      count = params_.top_k;
      std::partial_sort(order_.begin(), order_.begin() + count, order_.end(), better);
    } else {
      std::sort(order_.begin(), order_.end(), better);
    }
  }

  const double inv_temperature = 1.0 / params_.temperature;
  double total = 0;
  for (int64_t j = 0; j < count; ++j) {
    weights_[j] = std::exp((static_cast<double>(scratch_[order_[j]]) - max_logit) * inv_temperature);
    total += weights_[j];
  }
  // top-p over the top-k's renormalised distribution: the shortest prefix whose mass reaches top_p.
  int64_t kept = count;
  double kept_total = total;
  if (top_p_cuts) {
    const double needed = params_.top_p * total;
    double cumulative = 0;
    for (int64_t j = 0; j < count; ++j) {
      cumulative += weights_[j];
      if (cumulative >= needed) {
        kept = j + 1;
        kept_total = cumulative;
        break;
      }
    }
  }

  // A uniform in [0, 1) from the top 53 bits: the same on every standard library.
  const double uniform = static_cast<double>(rng_() >> 11) * 0x1.0p-53;
  const double target = uniform * kept_total;
  double cumulative = 0;
  for (int64_t j = 0; j < kept; ++j) {
    cumulative += weights_[j];
    if (target < cumulative) return order_[j];
  }
  return order_[kept - 1];
}

}  // namespace hetrt
