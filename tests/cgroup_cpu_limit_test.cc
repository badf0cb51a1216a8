// The CPU plugin's reading of a container's CPU limit, on made-up /proc and
// /sys/fs/cgroup trees shaped as cgroup v2 and v1 hosts and containers show them.
#include "../plugins/cpu/cgroup_cpu_limit.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace {

namespace fs = std::filesystem;
using hetrt::cpu::CgroupCpuLimit;

class CgroupCpuLimitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("hetrt-cgroup-" + std::to_string(::getpid()) + "-" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
  }
  void TearDown() override { fs::remove_all(root_); }

  void Write(const std::string& path, const std::string& text) {
    const fs::path file = root_ / path.substr(1);
    fs::create_directories(file.parent_path());
    std::ofstream(file) << text;
  }
  int32_t Limit() { return CgroupCpuLimit(root_.string()); }

  fs::path root_;
};

constexpr char kV2Mount[] = "30 23 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n";

TEST_F(CgroupCpuLimitTest, AContainerOnCgroupV2SeesItsQuotaRoundedUp) {
  Write("/proc/self/mountinfo", std::string("22 1 0:21 / / rw - overlay overlay rw\n") + kV2Mount);
  Write("/proc/self/cgroup", "0::/\n");
  Write("/sys/fs/cgroup/cpu.max", "150000 100000\n");
  EXPECT_EQ(Limit(), 2);
  Write("/sys/fs/cgroup/cpu.max", "100000 100000\n");
  EXPECT_EQ(Limit(), 1);
  Write("/sys/fs/cgroup/cpu.max", "10000 100000\n");  // a tenth of a CPU still runs one thread
  EXPECT_EQ(Limit(), 1);
}

TEST_F(CgroupCpuLimitTest, NoQuotaIsNoLimit) {
  Write("/proc/self/mountinfo", kV2Mount);
  Write("/proc/self/cgroup", "0::/\n");
  Write("/sys/fs/cgroup/cpu.max", "max 100000\n");
  EXPECT_EQ(Limit(), 0);
}

TEST_F(CgroupCpuLimitTest, TheTightestAncestorOnTheHostWins) {
  Write("/proc/self/mountinfo", kV2Mount);
  Write("/proc/self/cgroup", "0::/kubepods/pod1/ctr\n");
  Write("/sys/fs/cgroup/kubepods/pod1/ctr/cpu.max", "max 100000\n");
  Write("/sys/fs/cgroup/kubepods/pod1/cpu.max", "300000 100000\n");
  Write("/sys/fs/cgroup/kubepods/cpu.max", "800000 100000\n");
  EXPECT_EQ(Limit(), 3);
}

TEST_F(CgroupCpuLimitTest, CgroupV1ReadsTheCfsQuotaOfTheCpuHierarchy) {
  Write("/proc/self/mountinfo",
        "35 25 0:30 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"
        "36 25 0:31 /docker/abc /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n");
  Write("/proc/self/cgroup", "5:memory:/docker/abc\n4:cpu,cpuacct:/docker/abc\n");
  // The mount shows /docker/abc at its mount point: the path below it is "".
  Write("/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "250000\n");
  Write("/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us", "100000\n");
  EXPECT_EQ(Limit(), 3);
  Write("/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "-1\n");
  EXPECT_EQ(Limit(), 0);
}

TEST_F(CgroupCpuLimitTest, UnreadableOrMalformedFilesAreNoLimit) {
  EXPECT_EQ(Limit(), 0);  // no /proc at all
  Write("/proc/self/mountinfo", kV2Mount);
  Write("/proc/self/cgroup", "0::/\n");
  for (const char* text : {"", "abc 100000", "100000", "100000 0", "-5 100000", "99999999999999999999 1"}) {
    Write("/sys/fs/cgroup/cpu.max", text);
    EXPECT_EQ(Limit(), 0) << "cpu.max: \"" << text << "\"";
  }
  Write("/proc/self/cgroup", "0::/../../etc\n");
  EXPECT_EQ(Limit(), 0);
}

}  // namespace
