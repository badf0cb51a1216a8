// TVM's language-model helper builtins (src/runtime/vm/lm_support.cc, v0.25):
// top-p sampling from logits or probabilities, multinomial sampling from a
// caller's uniform numbers, repetition / presence / frequency penalties and an
// in-place softmax with temperature. The VM registers them as
// vm.builtin.sample_top_p_from_logits, sample_top_p_from_prob,
// multinomial_from_uniform, apply_repetition_penalty,
// apply_presence_and_frequency_penalty and apply_softmax_with_temperature.
//
// Each builtin comes twice: on host float spans (the arithmetic, in TVM's
// float/double mix so results match TVM bit for bit), and on Tensors (the
// argument checks the builtin makes: float32 / int32, host, compact, shape).
// Where TVM has undefined or crashing behaviour hetrt returns an error instead:
// empty inputs, out-of-range token ids, mismatched sizes, NaN scalar arguments,
// NaN logits where TVM's sampling fails its own check. Ties in TVM's
// std::sort are unspecified; here the lower index sorts first.
//
// Thread contract: pure functions; concurrent calls on distinct outputs are safe.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "hetrt/base/status.h"
#include "hetrt/base/tensor.h"

namespace hetrt {

// ---- On host spans.

// vm.builtin.sample_top_p_from_logits over one row of logits.
// temperature < 1e-6 (float): the argmax (NaN entries never win; all NaN is an
// error). Otherwise p_i = exp((l_i - l_max) / temperature) / sum in float, in
// descending order of logit; top_p_sum adds each p while the running sum before
// it is < top_p; the result is the first index (in that order) whose cumulative
// p satisfies uniform < cum / top_p_sum. Past the end: the argmax when
// uniform <= p_max, else an error (uniform >= 1). NaN logits: an error.
Result<int64_t> SampleTopPFromLogits(std::span<const float> logits, double temperature, double top_p, double uniform);

// vm.builtin.sample_top_p_from_prob over one row of probabilities. When
// top_p < 1 it first looks only at entries p >= top_p / 1024 (float): sorted
// descending; uniform < p_max / top_p returns the argmax; the kept mass
// accumulates while the running sum is < top_p; if that mass stays < top_p it
// retries over every entry (cutoff 0, which never retries). The result is the
// first entry with uniform < cum / top_p_sum, else the last entry of the filtered list.
// NaN and negative entries are never candidates; all NaN (or nothing >= 0) is an error.
Result<int64_t> SampleTopPFromProb(std::span<const float> prob, double top_p, double uniform);

// vm.builtin.multinomial_from_uniform: `prob` is (batch, vocab) row-major,
// `uniform` one number per row. Row i yields the first j whose float running
// sum of p exceeds uniform[i] (strictly), else vocab - 1.
Result<std::vector<int64_t>> MultinomialFromUniform(std::span<const float> prob, int64_t batch, int64_t vocab,
                                                    std::span<const float> uniform);

// vm.builtin.apply_repetition_penalty, in place: for each listed id, a repeated
// one again, l <= 0 becomes l * penalty, else l / penalty. Ids index `logits`
// as a flat buffer; an id outside it is an error (nothing is changed then).
Status ApplyRepetitionPenalty(std::span<float> logits, std::span<const int32_t> token_ids, double penalty);

// vm.builtin.apply_presence_and_frequency_penalty, in place:
// l[id_i] -= freq_i * frequency + presence for each i (a repeated id again).
// token_freqs has one count per id; ids are checked as above.
Status ApplyPresenceAndFrequencyPenalty(std::span<float> logits, std::span<const int32_t> token_ids,
                                        std::span<const int32_t> token_freqs, double presence, double frequency);

// vm.builtin.apply_softmax_with_temperature, in place over all of `logits`
// (the Tensor form passes the first last-dim elements only): x = l * (1/T in
// float); an online max that starts at FLT_MIN (the smallest positive float,
// not -inf) and a double normaliser d; each l becomes exp(x - m) / d.
// temperature must be > 0 (TVM computes garbage otherwise).
Status ApplySoftmaxWithTemperature(std::span<float> logits, double temperature);

// ---- On tensors: the same, after the builtin's checks. Tensors are host
//      (cpu) and compact; float32 except the int32 ids and counts.

// Every dimension but the last must be 1.
Result<int64_t> SampleTopPFromLogits(const Tensor& logits, double temperature, double top_p, double uniform);
Result<int64_t> SampleTopPFromProb(const Tensor& prob, double top_p, double uniform);
// prob (B, 1..., V); uniform with B elements (B or (B, 1)); returns a fresh
// host int64 tensor (B, 1).
Result<Tensor> MultinomialFromUniform(const Tensor& prob, const Tensor& uniform);
// As TVM: the ids are the first last-dim elements of `token_ids`; the whole of
// `logits` is the flat buffer they index (one row in practice).
Status ApplyRepetitionPenalty(const Tensor& logits, const Tensor& token_ids, double penalty);
// token_freqs has the same last dimension as token_ids.
Status ApplyPresenceAndFrequencyPenalty(const Tensor& logits, const Tensor& token_ids, const Tensor& token_freqs,
                                        double presence, double frequency);
// Over the first V = last-dim elements only (later rows are left as they are).
Status ApplySoftmaxWithTemperature(const Tensor& logits, double temperature);

}  // namespace hetrt
