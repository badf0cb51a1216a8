// The CPU plugin's estimate of each launch site's serial work, fed made-up
// measurements: which launches a pool would then run on the calling thread is
// decided here, without timing anything (the pool-level tests in
// cpu_plugin_test.cc only assert what no preemption can change).
#include "../plugins/cpu/launch_sizes.h"

#include <gtest/gtest.h>

#include <memory>

namespace {

using hetrt::cpu::LaunchSizes;

// Two launch sites; their bodies differ so that no identical-code folding gives them one address.
int32_t SiteA(int32_t, hetrt_parallel_group_env_t*, void*) { return 1; }
int32_t SiteB(int32_t, hetrt_parallel_group_env_t*, void*) { return 2; }

class LaunchSizesTest : public ::testing::Test {
 protected:
  // Heap-allocated: the table is 256 slots of four atomics.
  std::unique_ptr<LaunchSizes> sizes_ = std::make_unique<LaunchSizes>();
};

TEST_F(LaunchSizesTest, AnUnmeasuredSiteHasNoEstimateAndItsFirstMeasurementIsTakenAsIs) {
  EXPECT_EQ(sizes_->SerialNs(SiteA), -1);
  sizes_->Record(SiteA, 700);
  EXPECT_EQ(sizes_->SerialNs(SiteA), 700);
  EXPECT_EQ(sizes_->SerialNs(SiteB), -1) << "a site's estimate is its own";
}

TEST_F(LaunchSizesTest, OneLongLaunchAmongShortOnesLeavesTheEstimateShort) {
  for (int i = 0; i < 3; ++i) sizes_->Record(SiteA, 100);
  sizes_->Record(SiteA, 1'000'000);  // preempted once
  EXPECT_EQ(sizes_->SerialNs(SiteA), 100);
  sizes_->Record(SiteA, 100);
  EXPECT_EQ(sizes_->SerialNs(SiteA), 100);
}

TEST_F(LaunchSizesTest, ASiteLongInTwoOfItsLastThreeLaunchesIsTakenAtItsLongSize) {
  for (int i = 0; i < 3; ++i) sizes_->Record(SiteA, 100);
  sizes_->Record(SiteA, 2000);
  sizes_->Record(SiteA, 2000);
  EXPECT_EQ(sizes_->SerialNs(SiteA), 2000) << "a site that grew";
  // Alternating sizes: long in two of every three launches.
  for (int i = 0; i < 3; ++i) sizes_->Record(SiteB, 100);
  sizes_->Record(SiteB, 3000);
  sizes_->Record(SiteB, 100);
  sizes_->Record(SiteB, 3000);
  EXPECT_EQ(sizes_->SerialNs(SiteB), 3000);
}

TEST_F(LaunchSizesTest, ShorterLaunchesWearALongEstimateDownByAnEighthEach) {
  sizes_->Record(SiteA, 8000);
  sizes_->Record(SiteA, 8000);
  sizes_->Record(SiteA, 0);
  EXPECT_EQ(sizes_->SerialNs(SiteA), 8000) << "the median of 0, 8000, 8000";
  sizes_->Record(SiteA, 0);
  EXPECT_EQ(sizes_->SerialNs(SiteA), 7000);
  sizes_->Record(SiteA, 0);
  EXPECT_EQ(sizes_->SerialNs(SiteA), 6125);
  // Each further short launch takes an eighth off, until the short size is reached.
  for (int64_t before = 6125; before > 0; before -= before / 8) {
    ASSERT_EQ(sizes_->SerialNs(SiteA), before);
    sizes_->Record(SiteA, 0);
    if (before < 8) break;  // an eighth rounds to 0: the estimate stays
  }
  sizes_->Record(SiteA, 100);
  sizes_->Record(SiteA, 100);
  EXPECT_EQ(sizes_->SerialNs(SiteA), 100) << "a longer count replaces the estimate at once";
}

}  // namespace
