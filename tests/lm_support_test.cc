// TVM's LM helper builtins (hetrt/relax/lm_support.h) on hand-computed cases
// that pin TVM v0.25's exact rules, and the engine's sampler (hetrt/llm/sampler.h;
// its allocations once warm: steady_state_alloc_test).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <random>
#include <vector>

#include <nlohmann/json.hpp>

#include "hetrt/base/dtype.h"
#include "hetrt/base/tensor.h"
#include "hetrt/formats/npy.h"
#include "hetrt/llm/sampler.h"
#include "hetrt/relax/lm_support.h"
#include "test_support.h"

namespace hetrt {
namespace {

constexpr float kNan = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

bool Mentions(const Status& status, const std::string& text) {
  return status.message().find(text) != std::string::npos;
}

Tensor HostTensor(std::vector<int64_t> shape, const std::vector<float>& values) {
  auto t = Tensor::EmptyHost(std::move(shape), DLDataType{kDLFloat, 32, 1});
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  std::copy(values.begin(), values.end(), t->data_as<float>());
  return *t;
}

Tensor HostInt32(std::vector<int64_t> shape, const std::vector<int32_t>& values) {
  auto t = Tensor::EmptyHost(std::move(shape), DLDataType{kDLInt, 32, 1});
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  std::copy(values.begin(), values.end(), t->data_as<int32_t>());
  return *t;
}

// logits whose softmax at temperature 1 is {0.1, 0.2, 0.3, 0.4}.
std::vector<float> Logits1234() { return {std::log(1.0f), std::log(2.0f), std::log(3.0f), std::log(4.0f)}; }

// ---- vm.builtin.sample_top_p_from_logits

TEST(SampleTopPFromLogits, TemperatureBelowOneMillionthIsArgmaxLowestIndexOnTies) {
  const std::vector<float> logits = {1, 3, 3, 2};
  for (double t : {0.0, 1e-7, 9.9e-7}) {
    HETRT_ASSERT_OK_AND_ASSIGN(int64_t token, SampleTopPFromLogits(logits, t, 0.9, 0.99));
    EXPECT_EQ(token, 1) << t;
  }
  // The argmax path ignores uniform; at 1e-6 (not < 1e-6f) the sampling path
  // runs and rejects a uniform past the distribution.
  HETRT_ASSERT_OK_AND_ASSIGN(int64_t greedy, SampleTopPFromLogits(logits, 9.9e-7, 1.0, 1.5));
  EXPECT_EQ(greedy, 1);
  EXPECT_FALSE(SampleTopPFromLogits(logits, static_cast<double>(1e-6f), 1.0, 1.5).ok());
  EXPECT_FALSE(SampleTopPFromLogits(logits, 1e-6, 1.0, 1.5).ok());
}

TEST(SampleTopPFromLogits, FirstCumulativeOverTopPSumAboveUniform) {
  const std::vector<float> logits = Logits1234();
  // top_p = 1: cumulative {0.4, 0.7, 0.9, 1.0} over ids {3, 2, 1, 0}, top_p_sum = 1.
  const std::pair<double, int64_t> full[] = {{0.0, 3}, {0.35, 3}, {0.45, 2}, {0.75, 1}, {0.95, 0}};
  for (auto [u, want] : full) {
    HETRT_ASSERT_OK_AND_ASSIGN(int64_t token, SampleTopPFromLogits(logits, 1.0, 1.0, u));
    EXPECT_EQ(token, want) << "uniform " << u;
  }
  // top_p = 0.5: p is added while the sum before it is < 0.5: 0.4 (before: 0),
  // 0.3 (before: 0.4), not 0.2 (before: 0.7); top_p_sum = 0.7. Cumulative /
  // top_p_sum: 0.571, 1.0, ... so 0.6 and 0.99 land on id 2 and ids 1, 0 are
  // never drawn.
  const std::pair<double, int64_t> cut[] = {{0.5, 3}, {0.57, 3}, {0.6, 2}, {0.99, 2}};
  for (auto [u, want] : cut) {
    HETRT_ASSERT_OK_AND_ASSIGN(int64_t token, SampleTopPFromLogits(logits, 1.0, 0.5, u));
    EXPECT_EQ(token, want) << "uniform " << u;
  }
}

TEST(SampleTopPFromLogits, TemperatureScalesLogits) {
  const std::vector<float> logits = {0.0f, 2.0f * std::log(3.0f)};
  // T = 2: weights 1 and 3 -> p = {0.25, 0.75}; T = 1: {0.1, 0.9}.
  HETRT_ASSERT_OK_AND_ASSIGN(int64_t a, SampleTopPFromLogits(logits, 2.0, 1.0, 0.7));
  HETRT_ASSERT_OK_AND_ASSIGN(int64_t b, SampleTopPFromLogits(logits, 2.0, 1.0, 0.8));
  HETRT_ASSERT_OK_AND_ASSIGN(int64_t c, SampleTopPFromLogits(logits, 1.0, 1.0, 0.8));
  EXPECT_EQ(a, 1);
  EXPECT_EQ(b, 0);
  EXPECT_EQ(c, 1);
}

TEST(SampleTopPFromLogits, PastTheEndIsArgmaxOnlyWhenUniformIsWithinPMax) {
  // p = {1, 0}: cumulative {1, 1}; uniform 1 passes every "<" but TVM's check
  // uniform <= p_max holds, so the argmax; anything above fails it.
  const std::vector<float> logits = {0.0f, -1000.0f};
  HETRT_ASSERT_OK_AND_ASSIGN(int64_t token, SampleTopPFromLogits(logits, 1.0, 1.0, 1.0));
  EXPECT_EQ(token, 0);
  auto past = SampleTopPFromLogits(logits, 1.0, 1.0, 1.0001);
  ASSERT_FALSE(past.ok());
  EXPECT_TRUE(Mentions(past.status(), "uniform")) << past.status().ToString();
}

TEST(SampleTopPFromLogits, RejectsEmptyNanAndInfinity) {
  EXPECT_FALSE(SampleTopPFromLogits(std::span<const float>(), 1.0, 1.0, 0.5).ok());
  // Argmax skips a NaN; all NaN is an error; the sampling path rejects any NaN.
  HETRT_ASSERT_OK_AND_ASSIGN(int64_t greedy, SampleTopPFromLogits(std::vector<float>{kNan, 2, 5}, 0.0, 1.0, 0.5));
  EXPECT_EQ(greedy, 2);
  EXPECT_FALSE(SampleTopPFromLogits(std::vector<float>{kNan, kNan}, 0.0, 1.0, 0.5).ok());
  auto nan = SampleTopPFromLogits(std::vector<float>{1, kNan, 2}, 1.0, 1.0, 0.5);
  ASSERT_FALSE(nan.ok());
  EXPECT_TRUE(Mentions(nan.status(), "logits[1] is NaN")) << nan.status().ToString();
  EXPECT_FALSE(SampleTopPFromLogits(std::vector<float>{1, kInf}, 1.0, 1.0, 0.5).ok());
  EXPECT_FALSE(SampleTopPFromLogits(std::vector<float>{-kInf, -kInf}, 1.0, 1.0, 0.5).ok());
  EXPECT_FALSE(SampleTopPFromLogits(Logits1234(), 1.0, 1.0, std::nan("")).ok());
  // -inf entries are fine: probability 0.
  HETRT_ASSERT_OK_AND_ASSIGN(int64_t masked, SampleTopPFromLogits(std::vector<float>{-kInf, 0, -kInf}, 1.0, 1.0, 0.9));
  EXPECT_EQ(masked, 1);
}

TEST(SampleTopPFromLogits, TensorFormChecksShapeDtypeAndDevice) {
  Tensor row = HostTensor({1, 1, 4}, Logits1234());
  HETRT_ASSERT_OK_AND_ASSIGN(int64_t token, SampleTopPFromLogits(row, 1.0, 0.5, 0.6));
  EXPECT_EQ(token, 2);

  Tensor two_rows = HostTensor({2, 2}, Logits1234());
  auto rows = SampleTopPFromLogits(two_rows, 1.0, 1.0, 0.5);
  ASSERT_FALSE(rows.ok());
  EXPECT_TRUE(Mentions(rows.status(), "but the last must be 1")) << rows.status().ToString();

  Tensor ints = HostInt32({1, 4}, {1, 2, 3, 4});
  auto dtype = SampleTopPFromLogits(ints, 1.0, 1.0, 0.5);
  ASSERT_FALSE(dtype.ok());
  EXPECT_TRUE(Mentions(dtype.status(), "float32")) << dtype.status().ToString();

  std::vector<float> storage = Logits1234();
  Tensor on_gpu = Tensor::Borrow(storage.data(), DLDevice{kDLCUDA, 0}, {1, 4}, DLDataType{kDLFloat, 32, 1});
  auto device = SampleTopPFromLogits(on_gpu, 1.0, 1.0, 0.5);
  ASSERT_FALSE(device.ok());
  EXPECT_TRUE(Mentions(device.status(), "host")) << device.status().ToString();
}

// ---- vm.builtin.sample_top_p_from_prob

TEST(SampleTopPFromProb, ShortcutToArgmaxWhenUniformBelowPMaxOverTopP) {
  const std::vector<float> prob = {0.1f, 0.2f, 0.3f, 0.4f};
  // top_p 0.5: uniform < 0.4 / 0.5 = 0.8 is the argmax (the logits form would
  // give id 2 for 0.6: top_p_sum there is 0.7, not top_p).
  for (double u : {0.0, 0.6, 0.79}) {
    HETRT_ASSERT_OK_AND_ASSIGN(int64_t token, SampleTopPFromProb(prob, 0.5, u));
    EXPECT_EQ(token, 3) << u;
  }
  // Past the shortcut: kept {0.4, 0.3} (the sum before 0.2 is 0.7 >= 0.5),
  // top_p_sum 0.7: 0.4 / 0.7 = 0.57 < 0.85 <= 1.
  HETRT_ASSERT_OK_AND_ASSIGN(int64_t token, SampleTopPFromProb(prob, 0.5, 0.85));
  EXPECT_EQ(token, 2);
  // top_p 0 (or below): p / 0 is +inf, always the argmax.
  HETRT_ASSERT_OK_AND_ASSIGN(int64_t zero, SampleTopPFromProb(prob, 0.0, 0.99));
  EXPECT_EQ(zero, 3);
}

TEST(SampleTopPFromProb, PastTheKeptMassIsTheLastEntryOfTheFilteredList) {
  // top_p 0.5, cutoff 0.5 / 1024 = 0.000488: id 4 (0.00001) is filtered out.
  // A uniform of 1.5 passes every test, so TVM returns the smallest kept
  // entry of the filtered list (id 0), not id 4 and not an error.
  const std::vector<float> prob = {0.1f, 0.2f, 0.3f, 0.39999f, 0.00001f};
  HETRT_ASSERT_OK_AND_ASSIGN(int64_t token, SampleTopPFromProb(prob, 0.5, 1.5));
  EXPECT_EQ(token, 0);
  // top_p 1 takes the full pass at once (cutoff 0): id 4 is the last entry.
  HETRT_ASSERT_OK_AND_ASSIGN(int64_t full, SampleTopPFromProb(prob, 1.0, 1.5));
  EXPECT_EQ(full, 4);
}

TEST(SampleTopPFromProb, RetriesOverEveryEntryWhenTheFilteredMassFallsShort) {
  // top_p 0.9, cutoff 0.9 / 1024 = 0.00088: only ids 0 and 1 pass (mass 0.8 <
  // 0.9), so TVM retries over all: 0.5, 0.3, then 0.0005 each from id 2 on,
  // until the sum reaches 0.9 (top_p_sum ~0.9). uniform 0.9025 needs
  // cumulative > 0.81225: 0.8 + 0.0005 k for k = 25, id 26. Without the retry
  // it would be id 1 (0.8 / 0.8 = 1 > 0.9025).
  std::vector<float> prob = {0.5f, 0.3f};
  prob.resize(402, 0.0005f);
  HETRT_ASSERT_OK_AND_ASSIGN(int64_t token, SampleTopPFromProb(prob, 0.9, 0.9025));
  EXPECT_EQ(token, 26);
  // Below the shortcut (0.5 / 0.9 = 0.556) the filtered pass answers.
  HETRT_ASSERT_OK_AND_ASSIGN(int64_t head, SampleTopPFromProb(prob, 0.9, 0.55));
  EXPECT_EQ(head, 0);
}

TEST(SampleTopPFromProb, FullPassNormalisesByTheKeptMassAndNeverRetries) {
  // Mass 0.5 < top_p 1, but the full pass does not retry: top_p_sum = 0.5.
  const std::vector<float> prob = {0.2f, 0.3f};
  HETRT_ASSERT_OK_AND_ASSIGN(int64_t a, SampleTopPFromProb(prob, 1.0, 0.5));
  HETRT_ASSERT_OK_AND_ASSIGN(int64_t b, SampleTopPFromProb(prob, 1.0, 0.7));
  EXPECT_EQ(a, 1);  // 0.3 / 0.5 = 0.6 > 0.5
  EXPECT_EQ(b, 0);  // 0.5 / 0.5 = 1 > 0.7
}

TEST(SampleTopPFromProb, NanEntriesAreSkippedAllNanIsAnError) {
  HETRT_ASSERT_OK_AND_ASSIGN(int64_t token, SampleTopPFromProb(std::vector<float>{kNan, 0.5f, 0.5f}, 1.0, 0.75));
  EXPECT_EQ(token, 2);
  auto all_nan = SampleTopPFromProb(std::vector<float>{kNan, kNan}, 0.9, 0.5);
  ASSERT_FALSE(all_nan.ok());
  EXPECT_TRUE(Mentions(all_nan.status(), "NaN")) << all_nan.status().ToString();
  auto negative = SampleTopPFromProb(std::vector<float>{-1.0f, -2.0f}, 0.9, 0.5);
  ASSERT_FALSE(negative.ok());
  EXPECT_TRUE(Mentions(negative.status(), ">= 0")) << negative.status().ToString();
  EXPECT_FALSE(SampleTopPFromProb(std::span<const float>(), 0.9, 0.5).ok());
  EXPECT_FALSE(SampleTopPFromProb(std::vector<float>{1.0f}, std::nan(""), 0.5).ok());

  Tensor row = HostTensor({1, 4}, {0.1f, 0.2f, 0.3f, 0.4f});
  HETRT_ASSERT_OK_AND_ASSIGN(int64_t from_tensor, SampleTopPFromProb(row, 0.5, 0.85));
  EXPECT_EQ(from_tensor, 2);
  EXPECT_FALSE(SampleTopPFromProb(HostTensor({2, 2}, {0.1f, 0.2f, 0.3f, 0.4f}), 0.5, 0.85).ok());
}

// ---- vm.builtin.multinomial_from_uniform

TEST(MultinomialFromUniform, FirstIndexWhoseRunningSumExceedsUniformElseLast) {
  const std::vector<float> prob = {0.1f,  0.2f,  0.3f,  0.4f,   // row 0
                                   0.25f, 0.25f, 0.25f, 0.25f,  // row 1: 0.5 is not > 0.5
                                   0.1f,  0.1f,  0.1f,  0.1f,   // row 2: never reaches 0.5
                                   kNan,  0.5f,  0.5f,  0.0f};  // row 3: NaN sum
  const std::vector<float> uniform = {0.35f, 0.5f, 0.5f, 0.1f};
  HETRT_ASSERT_OK_AND_ASSIGN(std::vector<int64_t> ids, MultinomialFromUniform(prob, 4, 4, uniform));
  EXPECT_EQ(ids, (std::vector<int64_t>{2, 2, 3, 3}));
  HETRT_ASSERT_OK_AND_ASSIGN(std::vector<int64_t> first,
                             MultinomialFromUniform(std::span(prob).first(4), 1, 4, std::vector<float>{0.0f}));
  EXPECT_EQ(first, (std::vector<int64_t>{0}));

  EXPECT_FALSE(MultinomialFromUniform(prob, 3, 4, uniform).ok());                      // 16 != 12
  EXPECT_FALSE(MultinomialFromUniform(prob, 4, 4, std::vector<float>{0.5f}).ok());     // one uniform for 4 rows
  EXPECT_FALSE(MultinomialFromUniform(std::span<const float>(), 0, 0, uniform).ok());  // no vocabulary
}

TEST(MultinomialFromUniform, TensorFormReturnsBatchByOneInt64) {
  Tensor prob = HostTensor({2, 4}, {0.1f, 0.2f, 0.3f, 0.4f, 0.25f, 0.25f, 0.25f, 0.25f});
  Tensor uniform = HostTensor({2, 1}, {0.35f, 0.8f});
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor ids, MultinomialFromUniform(prob, uniform));
  EXPECT_EQ(ids.shape(), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(ids.dtype(), (DLDataType{kDLInt, 64, 1}));
  EXPECT_EQ(ids.device().device_type, kDLCPU);
  EXPECT_EQ(ids.data_as<int64_t>()[0], 2);
  EXPECT_EQ(ids.data_as<int64_t>()[1], 3);
  EXPECT_FALSE(MultinomialFromUniform(prob, HostTensor({3}, {0.1f, 0.2f, 0.3f})).ok());
  EXPECT_FALSE(MultinomialFromUniform(HostTensor({4}, {0.1f, 0.2f, 0.3f, 0.4f}), uniform).ok());
}

// ---- vm.builtin.apply_repetition_penalty

TEST(ApplyRepetitionPenalty, DividesPositiveMultipliesNonPositiveOncePerListedId) {
  std::vector<float> logits = {2.0f, -1.0f, 0.0f, 3.0f};
  // id 0 is listed twice: 2 / 2 / 2.
  HETRT_ASSERT_OK(ApplyRepetitionPenalty(logits, std::vector<int32_t>{0, 1, 0, 2}, 2.0));
  EXPECT_EQ(logits, (std::vector<float>{0.5f, -2.0f, 0.0f, 3.0f}));
}

TEST(ApplyRepetitionPenalty, RejectsIdsOutsideTheLogitsChangingNothing) {
  std::vector<float> logits = {2.0f, -1.0f};
  const std::vector<float> before = logits;
  auto high = ApplyRepetitionPenalty(logits, std::vector<int32_t>{0, 2}, 2.0);
  EXPECT_EQ(high.code(), StatusCode::kOutOfRange);
  EXPECT_TRUE(Mentions(high, "token_ids[1] = 2")) << high.ToString();
  EXPECT_EQ(ApplyRepetitionPenalty(logits, std::vector<int32_t>{-1}, 2.0).code(), StatusCode::kOutOfRange);
  EXPECT_EQ(logits, before);
}

TEST(ApplyRepetitionPenalty, TensorFormIndexesTheFlatBuffer) {
  Tensor logits = HostTensor({1, 4}, {2.0f, -1.0f, 0.0f, 3.0f});
  HETRT_ASSERT_OK(ApplyRepetitionPenalty(logits, HostInt32({1, 2}, {3, 1}), 1.5));
  const float* l = logits.data_as<float>();
  EXPECT_FLOAT_EQ(l[3], 2.0f);
  EXPECT_FLOAT_EQ(l[1], -1.5f);
  EXPECT_FALSE(ApplyRepetitionPenalty(logits, HostTensor({1}, {1.0f}), 1.5).ok());  // ids must be int32
}

// ---- vm.builtin.apply_presence_and_frequency_penalty

TEST(ApplyPresenceAndFrequencyPenalty, SubtractsFreqTimesFrequencyPlusPresencePerListedId) {
  std::vector<float> logits = {1.0f, 1.0f, 1.0f};
  // id 0 twice: 1 - (2 * 0.25 + 0.5) - (1 * 0.25 + 0.5) = -0.75; id 2: 1 - 0.75.
  HETRT_ASSERT_OK(ApplyPresenceAndFrequencyPenalty(logits, std::vector<int32_t>{0, 2, 0}, std::vector<int32_t>{2, 1, 1},
                                                   0.5, 0.25));
  EXPECT_EQ(logits, (std::vector<float>{-0.75f, 1.0f, 0.25f}));

  auto sizes = ApplyPresenceAndFrequencyPenalty(logits, std::vector<int32_t>{0, 1}, std::vector<int32_t>{1}, 0.5, 0.25);
  ASSERT_FALSE(sizes.ok());
  EXPECT_TRUE(Mentions(sizes, "frequencies")) << sizes.ToString();
  EXPECT_EQ(
      ApplyPresenceAndFrequencyPenalty(logits, std::vector<int32_t>{3}, std::vector<int32_t>{1}, 0.5, 0.25).code(),
      StatusCode::kOutOfRange);

  Tensor t = HostTensor({1, 3}, {1.0f, 1.0f, 1.0f});
  HETRT_ASSERT_OK(ApplyPresenceAndFrequencyPenalty(t, HostInt32({1}, {1}), HostInt32({1}, {3}), 0.0, 0.5));
  EXPECT_FLOAT_EQ(t.data_as<float>()[1], -0.5f);
}

// ---- vm.builtin.apply_softmax_with_temperature

TEST(ApplySoftmaxWithTemperature, SoftmaxOfLogitsOverTemperature) {
  std::vector<float> logits = {1.0f, 2.0f, 3.0f};
  HETRT_ASSERT_OK(ApplySoftmaxWithTemperature(logits, 0.5));
  // softmax({2, 4, 6})
  const double d = std::exp(2.0) + std::exp(4.0) + std::exp(6.0);
  EXPECT_NEAR(logits[0], std::exp(2.0) / d, 1e-7);
  EXPECT_NEAR(logits[1], std::exp(4.0) / d, 1e-7);
  EXPECT_NEAR(logits[2], std::exp(6.0) / d, 1e-7);
}

TEST(ApplySoftmaxWithTemperature, RunningMaxStartsAtFltMinNotMinusInfinity) {
  // Moderately negative logits: the max stays FLT_MIN, still a softmax.
  std::vector<float> moderate = {-1.0f, -2.0f};
  HETRT_ASSERT_OK(ApplySoftmaxWithTemperature(moderate, 1.0));
  EXPECT_NEAR(moderate[0], 1.0 / (1.0 + std::exp(-1.0)), 1e-6);
  // Far below 0, exp(x - FLT_MIN) underflows to 0 for every entry: d = 0 and
  // TVM writes 0 / 0. A -inf start would have given {0.731, 0.269}.
  std::vector<float> far = {-200.0f, -201.0f};
  HETRT_ASSERT_OK(ApplySoftmaxWithTemperature(far, 1.0));
  EXPECT_TRUE(std::isnan(far[0]) && std::isnan(far[1])) << far[0] << " " << far[1];
}

TEST(ApplySoftmaxWithTemperature, TensorFormTouchesOnlyTheFirstLastDimElements) {
  Tensor logits = HostTensor({2, 3}, {1.0f, 2.0f, 3.0f, 7.0f, 8.0f, 9.0f});
  HETRT_ASSERT_OK(ApplySoftmaxWithTemperature(logits, 1.0));
  const float* l = logits.data_as<float>();
  EXPECT_NEAR(l[0] + l[1] + l[2], 1.0, 1e-6);
  EXPECT_NEAR(l[2], std::exp(3.0) / (std::exp(1.0) + std::exp(2.0) + std::exp(3.0)), 1e-7);
  EXPECT_EQ(l[3], 7.0f);
  EXPECT_EQ(l[4], 8.0f);
  EXPECT_EQ(l[5], 9.0f);
}

TEST(ApplySoftmaxWithTemperature, RejectsEmptyAndNonPositiveTemperature) {
  std::vector<float> logits = {1.0f};
  EXPECT_FALSE(ApplySoftmaxWithTemperature(logits, 0.0).ok());
  EXPECT_FALSE(ApplySoftmaxWithTemperature(logits, -1.0).ok());
  EXPECT_FALSE(ApplySoftmaxWithTemperature(logits, std::nan("")).ok());
  EXPECT_FALSE(ApplySoftmaxWithTemperature(std::span<float>(), 1.0).ok());
}

// The tiny_llama fixture's softmax_with_temperature case: the model's own
// compiled softmax_with_temperature over single_prefill_logits at the
// recorded temperature; the builtin computes the same softmax.
TEST(ApplySoftmaxWithTemperature, MatchesTinyLlamaFixture) {
  const std::string dir = testing::FixturesRoot() + "/tvm-0.25-llm/tiny_llama";
  if (!std::filesystem::exists(dir + "/meta.json"))
    HETRT_MISSING("fixtures", "no " << dir << "/meta.json (set HETRT_FIXTURES or -DHETRT_FIXTURES_DIR)");
  std::ifstream in(dir + "/meta.json");
  const nlohmann::json meta = nlohmann::json::parse(in);
  const nlohmann::json* entry = nullptr;
  for (const auto& c : meta.at("cases"))
    if (c.value("name", "") == "softmax_with_temperature") entry = &c;
  if (entry == nullptr || !entry->contains("temperature") || !entry->contains("files") ||
      !entry->at("files").contains("logits") || !entry->at("files").contains("probs"))
    GTEST_SKIP() << "meta.json records no input logits and temperature for softmax_with_temperature";
  const nlohmann::json& t = entry->at("temperature");
  const double temperature = t.is_array() ? t.at(0).get<double>() : t.get<double>();

  HETRT_ASSERT_OK_AND_ASSIGN(Tensor logits,
                             LoadNpyFile(dir + "/" + entry->at("files").at("logits").get<std::string>()));
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor probs, LoadNpyFile(dir + "/" + entry->at("files").at("probs").get<std::string>()));
  ASSERT_EQ(logits.shape(), probs.shape());
  HETRT_ASSERT_OK(ApplySoftmaxWithTemperature(logits, temperature));
  const int64_t vocab = logits.shape().back();
  ASSERT_EQ(logits.num_elements(), vocab);
  double sum = 0;
  for (int64_t i = 0; i < vocab; ++i) {
    const float got = logits.data_as<float>()[i], want = probs.data_as<float>()[i];
    EXPECT_NEAR(got, want, 1e-8 + 1e-5 * std::abs(want)) << "probs[" << i << "]";
    sum += got;
  }
  EXPECT_NEAR(sum, 1.0, 1e-5);
}

// ---- The engine's sampler

SamplingParams Params(float temperature, uint64_t seed = 1) {
  SamplingParams p;
  p.temperature = temperature;
  p.seed = seed;
  p.has_seed = true;
  return p;
}

std::vector<float> RandomLogits(std::mt19937& rng, int vocab) {
  std::normal_distribution<float> normal(0.0f, 2.0f);
  std::vector<float> logits(vocab);
  for (float& l : logits) l = normal(rng);
  return logits;
}

int32_t Argmax(const std::vector<float>& v) {
  return static_cast<int32_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

TEST(SamplingParams, ValidateNamesTheBadField) {
  EXPECT_TRUE(SamplingParams{}.Validate(10).ok());
  struct Case {
    SamplingParams params;
    const char* field;
  };
  auto with = [](auto set) {
    SamplingParams p;
    set(p);
    return p;
  };
  const Case cases[] = {
      {with([](SamplingParams& p) { p.temperature = -0.5f; }), "temperature"},
      {with([](SamplingParams& p) { p.temperature = std::nanf(""); }), "temperature"},
      {with([](SamplingParams& p) { p.top_p = 0.0f; }), "top_p"},
      {with([](SamplingParams& p) { p.top_p = 1.5f; }), "top_p"},
      {with([](SamplingParams& p) { p.top_k = -1; }), "top_k"},
      {with([](SamplingParams& p) { p.repetition_penalty = 0.0f; }), "repetition_penalty"},
      {with([](SamplingParams& p) { p.repetition_penalty = -1.0f; }), "repetition_penalty"},
      {with([](SamplingParams& p) { p.presence_penalty = kInf; }), "presence_penalty"},
      {with([](SamplingParams& p) { p.frequency_penalty = std::nanf(""); }), "frequency_penalty"},
      {with([](SamplingParams& p) { p.presence_penalty = -2.5f; }), "presence_penalty"},
      {with([](SamplingParams& p) { p.frequency_penalty = 3e38f; }), "frequency_penalty"},
  };
  for (const Case& c : cases) {
    const Status s = c.params.Validate(10);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << c.field;
    EXPECT_TRUE(Mentions(s, c.field)) << s.ToString();
  }
  EXPECT_FALSE(SamplingParams{}.Validate(0).ok());
  SamplingParams top_k_over_vocab;
  top_k_over_vocab.top_k = 1000;  // off, not an error
  EXPECT_TRUE(top_k_over_vocab.Validate(10).ok());
}

TEST(Sampler, GreedyIsArgmaxLowestIndexOnTies) {
  Sampler sampler(SamplingParams{});
  const std::vector<float> logits = {0.5f, 4.0f, -1.0f, 4.0f};
  HETRT_ASSERT_OK_AND_ASSIGN(int32_t token, sampler.Sample(logits, {}));
  EXPECT_EQ(token, 1);
  std::mt19937 rng(3);
  for (int i = 0; i < 20; ++i) {
    const std::vector<float> random = RandomLogits(rng, 100);
    HETRT_ASSERT_OK_AND_ASSIGN(int32_t t, sampler.Sample(random, {}));
    EXPECT_EQ(t, Argmax(random));
  }
}

TEST(Sampler, SameSeedSameTokens) {
  SamplingParams p = Params(1.3f, 1234);
  p.top_p = 0.95f;
  p.top_k = 40;
  p.repetition_penalty = 1.1f;
  p.presence_penalty = 0.2f;
  p.frequency_penalty = 0.1f;
  auto run = [&](const SamplingParams& params) {
    Sampler sampler(params);
    std::mt19937 rng(99);
    std::vector<int32_t> history = {5, 6, 7};
    for (int step = 0; step < 64; ++step) {
      auto token = sampler.Sample(RandomLogits(rng, 200), history);
      EXPECT_TRUE(token.ok()) << token.status().ToString();
      if (!token.ok()) break;
      history.push_back(*token);
    }
    return history;
  };
  const std::vector<int32_t> a = run(p), b = run(p);
  EXPECT_EQ(a, b);
  SamplingParams other = p;
  other.seed = 4321;
  EXPECT_NE(run(other), a);
}

TEST(Sampler, TopKOneIsGreedyAtAnyTemperature) {
  std::mt19937 rng(5);
  for (float temperature : {0.1f, 1.0f, 5.0f, 100.0f}) {
    SamplingParams p = Params(temperature, 77);
    p.top_k = 1;
    Sampler sampler(p);
    for (int i = 0; i < 20; ++i) {
      const std::vector<float> logits = RandomLogits(rng, 50);
      HETRT_ASSERT_OK_AND_ASSIGN(int32_t token, sampler.Sample(logits, {}));
      EXPECT_EQ(token, Argmax(logits)) << "temperature " << temperature;
    }
  }
}

TEST(Sampler, TinyTopPIsGreedy) {
  std::mt19937 rng(6);
  SamplingParams p = Params(2.0f, 8);
  p.top_p = 1e-6f;
  Sampler sampler(p);
  for (int i = 0; i < 50; ++i) {
    const std::vector<float> logits = RandomLogits(rng, 50);
    HETRT_ASSERT_OK_AND_ASSIGN(int32_t token, sampler.Sample(logits, {}));
    EXPECT_EQ(token, Argmax(logits));
  }
}

// Draws `n` tokens and checks each frequency against `expected` (0 = never).
void ExpectFrequencies(const SamplingParams& params, const std::vector<float>& logits,
                       const std::vector<double>& expected, int n) {
  Sampler sampler(params);
  std::vector<int> counts(logits.size());
  for (int i = 0; i < n; ++i) {
    auto token = sampler.Sample(logits, {});
    ASSERT_TRUE(token.ok()) << token.status().ToString();
    ++counts[*token];
  }
  for (size_t i = 0; i < logits.size(); ++i) {
    const double f = static_cast<double>(counts[i]) / n, p = expected[i];
    if (p == 0) {
      EXPECT_EQ(counts[i], 0) << "token " << i;
      continue;
    }
    const double five_sigma = 5 * std::sqrt(p * (1 - p) / n);
    EXPECT_NEAR(f, p, five_sigma) << "token " << i;
  }
}

// softmax(l / T) over `keep` (others 0).
std::vector<double> Softmax(const std::vector<float>& logits, double temperature, const std::vector<int>& keep) {
  std::vector<double> p(logits.size(), 0.0);
  double total = 0;
  for (int i : keep) total += p[i] = std::exp(logits[i] / temperature);
  for (double& x : p) x /= total;
  return p;
}

TEST(Sampler, FrequenciesFollowTheSoftmax) {
  // l / 0.8 = {1.25, 2.5, 0.625, 3.75, -1.25}: p = {.058, .202, .031, .705, .005}.
  const std::vector<float> logits = {1.0f, 2.0f, 0.5f, 3.0f, -1.0f};
  constexpr int kDraws = 100000;
  ExpectFrequencies(Params(0.8f, 42), logits, Softmax(logits, 0.8, {0, 1, 2, 3, 4}), kDraws);
  // top_k 2 keeps ids 3 and 1, renormalised.
  SamplingParams top_k = Params(0.8f, 43);
  top_k.top_k = 2;
  ExpectFrequencies(top_k, logits, Softmax(logits, 0.8, {3, 1}), kDraws);
  // top_p 0.8: 0.705 falls short, 0.705 + 0.202 reaches it: the same two.
  SamplingParams top_p = Params(0.8f, 44);
  top_p.top_p = 0.8f;
  ExpectFrequencies(top_p, logits, Softmax(logits, 0.8, {3, 1}), kDraws);
  // top_k 3 then top_p 0.9 of the renormalised three (0.738, 0.211, 0.051): ids 3 and 1 again.
  SamplingParams both = Params(0.8f, 45);
  both.top_k = 3;
  both.top_p = 0.9f;
  ExpectFrequencies(both, logits, Softmax(logits, 0.8, {3, 1}), kDraws);
  // top_k 3, top_p 0.96: all three.
  both.top_p = 0.96f;
  ExpectFrequencies(both, logits, Softmax(logits, 0.8, {3, 1, 0}), kDraws);
}

TEST(Sampler, PenaltiesMoveTheArgmax) {
  const std::vector<float> logits = {2.0f, 1.2f, -1.0f, -1.2f};
  auto greedy = [&](SamplingParams p, std::vector<float> l, std::vector<int32_t> history) {
    Sampler sampler(p);
    auto token = sampler.Sample(l, history);
    EXPECT_TRUE(token.ok()) << token.status().ToString();
    return token.ok() ? *token : -1;
  };
  SamplingParams rep;
  rep.repetition_penalty = 1.5f;
  // 2 / 1.5 = 1.33 > 1.2, once however often id 0 repeats (twice would be 0.89).
  EXPECT_EQ(greedy(rep, logits, {0}), 0);
  EXPECT_EQ(greedy(rep, logits, {0, 0, 0}), 0);
  rep.repetition_penalty = 2.0f;  // 1.0 < 1.2
  EXPECT_EQ(greedy(rep, logits, {0}), 1);
  // Non-positive logits are multiplied: -1 * 1.5 = -1.5 < -1.2.
  rep.repetition_penalty = 1.5f;
  EXPECT_EQ(greedy(rep, {-1.0f, -1.2f}, {0}), 1);

  SamplingParams presence;
  presence.presence_penalty = 0.5f;  // once: 2 - 0.5 = 1.5 > 1.2; repeats change nothing
  EXPECT_EQ(greedy(presence, logits, {0, 0, 0, 0}), 0);
  presence.presence_penalty = 1.0f;  // 1.0 < 1.2
  EXPECT_EQ(greedy(presence, logits, {0}), 1);

  SamplingParams frequency;
  frequency.frequency_penalty = 0.3f;  // 2 - 0.3 * count: 1.7 (once), 1.1 (three times)
  EXPECT_EQ(greedy(frequency, logits, {0}), 0);
  EXPECT_EQ(greedy(frequency, logits, {0, 0, 0}), 1);

  // The caller's logits are left alone.
  std::vector<float> mine = logits;
  Sampler sampler(presence);
  HETRT_ASSERT_OK_AND_ASSIGN(int32_t token, sampler.Sample(mine, std::vector<int32_t>{0}));
  EXPECT_EQ(token, 1);
  EXPECT_EQ(mine, logits);
  // Counts do not leak into the next call.
  HETRT_ASSERT_OK_AND_ASSIGN(int32_t next, sampler.Sample(mine, {}));
  EXPECT_EQ(next, 0);
}

// As vLLM: the repetition penalty counts the prompt too, presence and
// frequency only what was generated (the ids past prompt_length).
TEST(Sampler, OnlyTheRepetitionPenaltyCountsThePrompt) {
  const std::vector<float> logits = {2.0f, 1.2f, -1.0f, -1.2f};
  auto greedy = [&](SamplingParams p, std::vector<int32_t> history, size_t prompt_length) {
    Sampler sampler(p);
    auto token = sampler.Sample(logits, history, prompt_length);
    EXPECT_TRUE(token.ok()) << token.status().ToString();
    return token.ok() ? *token : -1;
  };
  SamplingParams presence;
  presence.presence_penalty = 1.0f;              // 2 - 1 = 1.0 < 1.2 once id 0 was generated
  EXPECT_EQ(greedy(presence, {0, 0, 0}, 3), 0);  // all prompt
  EXPECT_EQ(greedy(presence, {0, 0, 0}, 2), 1);  // the last one generated
  SamplingParams frequency;
  frequency.frequency_penalty = 0.3f;  // 2 - 0.3 * generated: 1.7 (once), 1.1 (three times)
  EXPECT_EQ(greedy(frequency, {0, 0, 0, 0}, 1), 1);
  EXPECT_EQ(greedy(frequency, {0, 0, 0, 0}, 3), 0);
  EXPECT_EQ(greedy(frequency, {0, 0, 0, 0}, 4), 0);
  SamplingParams repetition;
  repetition.repetition_penalty = 2.0f;  // 2 / 2 = 1.0 < 1.2, from the prompt alone
  EXPECT_EQ(greedy(repetition, {0}, 1), 1);
}

TEST(Sampler, RejectsBadInput) {
  Sampler sampler(Params(1.0f));
  const std::vector<float> logits = {1.0f, 2.0f};
  EXPECT_EQ(sampler.Sample(logits, std::vector<int32_t>{2}).status().code(), StatusCode::kOutOfRange);
  EXPECT_EQ(sampler.Sample(logits, std::vector<int32_t>{-1}).status().code(), StatusCode::kOutOfRange);
  EXPECT_FALSE(sampler.Sample(std::span<const float>(), {}).ok());
  auto nan = sampler.Sample(std::vector<float>{1.0f, kNan}, {});
  ASSERT_FALSE(nan.ok());
  EXPECT_TRUE(Mentions(nan.status(), "logits[1] is NaN")) << nan.status().ToString();
  EXPECT_FALSE(sampler.Sample(std::vector<float>{-kInf, -kInf}, {}).ok());
  SamplingParams bad;
  bad.top_p = 2.0f;
  auto invalid = Sampler(bad).Sample(logits, {});
  ASSERT_FALSE(invalid.ok());
  EXPECT_TRUE(Mentions(invalid.status(), "top_p")) << invalid.status().ToString();
  // Masked (-inf) tokens are never drawn.
  Sampler masked(Params(1.0f, 9));
  for (int i = 0; i < 100; ++i) {
    HETRT_ASSERT_OK_AND_ASSIGN(int32_t token, masked.Sample(std::vector<float>{-kInf, 0.0f, -kInf, 0.0f}, {}));
    EXPECT_TRUE(token == 1 || token == 3) << token;
  }
  // Unseeded samplers work (their tokens are not reproducible).
  SamplingParams unseeded;
  unseeded.temperature = 1.0f;
  HETRT_ASSERT_OK_AND_ASSIGN(int32_t any, Sampler(unseeded).Sample(logits, {}));
  EXPECT_TRUE(any == 0 || any == 1);
}

}  // namespace
}  // namespace hetrt
