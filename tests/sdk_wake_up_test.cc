// The SDK's poll-before-sleep budget (sdk/include/hetrt/sdk/wake_up.h): the
// measurement wakes a real sleeping thread, the budget follows the rule, and a
// budget the user fixed is used as given. No timing is asserted beyond what
// the rule itself bounds (header-only SDK, no core).
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "hetrt/sdk/wake_up.h"

namespace {

using hetrt::sdk::PollBudget;
using hetrt::sdk::PollBudgetUs;
using hetrt::sdk::WakeUpLatency;

TEST(WakeUp, MeasuringWakesARealThreadAndOrdersItsPercentiles) {
  const WakeUpLatency latency = hetrt::sdk::MeasureWakeUpLatency(8, std::chrono::microseconds(50));
  EXPECT_GT(latency.median_ns, 0u);  // a wake-up is never free
  EXPECT_GE(latency.p90_ns, latency.median_ns);
}

TEST(WakeUp, TheBudgetIsTheNinetiethPercentileKeptWithinItsBounds) {
  EXPECT_EQ(PollBudgetUs({.median_ns = 20'000, .p90_ns = 45'000}), 45);
  EXPECT_EQ(PollBudgetUs({.median_ns = 20'000, .p90_ns = 45'001}), 46);  // rounded up: never under the wake-up
  EXPECT_EQ(PollBudgetUs({.median_ns = 1'000, .p90_ns = 2'000}), 10);    // a fast machine still polls a little
  EXPECT_EQ(PollBudgetUs({.median_ns = 900'000, .p90_ns = 3'000'000}), 200);  // nor burns a CPU for milliseconds
}

TEST(WakeUp, AFixedBudgetIsUsedAsGivenAndAutoIsMeasuredOnceForAllThreads) {
  PollBudget budget;
  EXPECT_EQ(budget.Us(0), 0);
  EXPECT_EQ(budget.Us(75), 75);
  std::vector<int64_t> seen(4);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < seen.size(); ++i) threads.emplace_back([&, i] { seen[i] = budget.Us(PollBudget::kAuto); });
  for (std::thread& t : threads) t.join();
  EXPECT_GE(seen[0], 10);
  EXPECT_LE(seen[0], 200);
  for (int64_t s : seen) EXPECT_EQ(s, seen[0]);
  EXPECT_EQ(budget.Us(PollBudget::kAuto), seen[0]);
  EXPECT_EQ(budget.Us(5), 5);  // a fixed budget still wins after a measurement
}

}  // namespace
