// What must take nothing from the heap once warm, counted on the real
// allocator (this program replaces operator new): the engine's sampler per
// token, the paged KV cache's bookkeeping per decode step, a whole replayed
// decode step of tiny_llama. Built in
// uninstrumented trees only (a sanitizer brings its own allocator); the same
// code's other checks are lm_support_test's and paged_kv_layout_test's.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <new>
#include <random>
#include <vector>

#include "hetrt/llm/engine.h"
#include "hetrt/llm/sampler.h"
#include "hetrt/relax/paged_kv_cache.h"
#include "hetrt/relax/paged_kv_layout.h"
#include "test_support.h"

namespace {
std::atomic<bool> g_count_allocations{false};
std::atomic<int64_t> g_allocations{0};

void* CountedAlloc(std::size_t n) {
  if (g_count_allocations.load(std::memory_order_relaxed)) g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}

// Counts what `work` allocates.
template <typename Work>
int64_t AllocationsOf(Work&& work) {
  g_allocations = 0;
  g_count_allocations = true;
  work();
  g_count_allocations = false;
  return g_allocations.load();
}
}  // namespace

// GCC pairs the free() below with every inlined `new` it sees and warns; they
// are this file's own matched pair.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
void* operator new(std::size_t n) { return CountedAlloc(n); }
void* operator new[](std::size_t n) { return CountedAlloc(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }

namespace hetrt {
namespace {

std::vector<float> RandomLogits(std::mt19937& rng, int vocab) {
  std::normal_distribution<float> normal(0.0f, 2.0f);
  std::vector<float> logits(vocab);
  for (float& l : logits) l = normal(rng);
  return logits;
}

TEST(Sampler, AllocatesNothingPerTokenOnceWarm) {
  SamplingParams p;
  p.temperature = 0.9f;
  p.seed = 11;
  p.has_seed = true;
  p.top_k = 20;
  p.top_p = 0.9f;
  p.repetition_penalty = 1.2f;
  p.frequency_penalty = 0.3f;
  Sampler sampler(p);
  std::mt19937 rng(12);
  std::vector<std::vector<float>> steps;
  for (int i = 0; i < 16; ++i) steps.push_back(RandomLogits(rng, 1000));
  std::vector<int32_t> history;
  history.reserve(64);
  history.push_back(1);
  HETRT_ASSERT_OK_AND_ASSIGN(int32_t first, sampler.Sample(steps[0], history));  // warms the buffers
  history.push_back(first);
  SamplingParams no_top_k = p;  // the full-sort path too
  no_top_k.top_k = 0;
  Sampler full(no_top_k);
  HETRT_ASSERT_OK_AND_ASSIGN(int32_t warm, full.Sample(steps[0], history));
  (void)warm;

  const int64_t allocations = AllocationsOf([&] {
    for (size_t i = 1; i < steps.size(); ++i) {
      auto token = sampler.Sample(steps[i], history);
      auto other = full.Sample(steps[i], history);
      if (!token.ok() || !other.ok()) break;
      history.push_back(*token);
    }
  });
  EXPECT_EQ(allocations, 0);
  EXPECT_EQ(history.size(), steps.size() + 1);
}

TEST(PagedKvLayoutTest, WarmDecodeAllocatesNothing) {
  PagedKvLayout layout(64, 16, 4, 64);
  std::vector<PageCopy> copies;
  // The counter sees the layout's own allocations (a new sequence's map node).
  Status added;
  EXPECT_GT(AllocationsOf([&] { added = layout.AddSequence(0); }), 0);
  HETRT_ASSERT_OK(added);
  HETRT_ASSERT_OK(layout.AddSequence(1));
  const std::vector<int64_t> two{0, 1}, prompt{20, 5};
  HETRT_ASSERT_OK(layout.BeginForward(two, prompt));
  HETRT_ASSERT_OK(layout.ForkSequence(0, 2, 18, &copies));
  HETRT_ASSERT_OK(layout.ForkSequence(2, 3, -1, &copies));
  const std::vector<int64_t> ids{0, 1, 2, 3}, ones{1, 1, 1, 1};
  HETRT_ASSERT_OK(layout.BeginForward(ids, ones));  // warm-up
  Status s;
  const int64_t allocations = AllocationsOf([&] {
    for (int step = 0; step < 40 && s.ok(); ++step) s = layout.BeginForward(ids, ones);  // crosses pages
  });
  HETRT_ASSERT_OK(s);
  EXPECT_EQ(layout.plan().num_depths, 2);
  EXPECT_EQ(allocations, 0);
}

// A decode step of tiny_llama once its batch size is recorded: embed and
// decode replayed, the KV cache's forward begun and ended, the logits read.
TEST(LlmEngineSteadyState, AReplayedDecodeStepAllocatesNothing) {
  const std::string dir = testing::FixturesRoot() + "/tvm-0.25-llm/tiny_llama";
  if (!std::filesystem::exists(dir + "/model.so")) HETRT_MISSING("fixtures", "no tiny_llama under " << dir);
  LlmEngineOptions options;
  options.model_dir = dir;
  HETRT_ASSERT_OK_AND_ASSIGN(auto engine, LlmEngine::Open(options));
  for (int64_t batch : {1, 3}) {
    SCOPED_TRACE("batch " + std::to_string(batch));
    std::vector<int64_t> ids, ones(static_cast<size_t>(batch), 1);
    std::vector<int32_t> tokens;
    for (int64_t i = 0; i < batch; ++i) {
      ids.push_back(100 + batch * 10 + i);
      tokens.push_back(static_cast<int32_t>(5 + i));
      HETRT_ASSERT_OK(engine->kv_cache().AddSequence(ids.back()));
    }
    auto step = [&]() -> Status {
      HETRT_RETURN_IF_ERROR(engine->Forward(ids, ones, tokens).status());
      for (int64_t id : ids) HETRT_RETURN_IF_ERROR(engine->kv_cache().PopN(id, 1));
      return OkStatus();
    };
    for (int i = 0; i < 3; ++i) HETRT_ASSERT_OK(step());  // interpreted, recorded, replayed
    Status s;
    const int64_t allocations = AllocationsOf([&] {
      for (int i = 0; i < 5 && s.ok(); ++i) s = step();
    });
    HETRT_ASSERT_OK(s);
    EXPECT_EQ(allocations, 0);
    for (int64_t id : ids) HETRT_ASSERT_OK(engine->kv_cache().RemoveSequence(id));
  }
}

}  // namespace
}  // namespace hetrt
