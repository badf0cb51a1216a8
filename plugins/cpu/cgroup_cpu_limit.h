// The CPU limit a container runtime puts on this process: a CFS quota (a
// Kubernetes `limits.cpu`, `docker run --cpus`) narrows how much CPU time the
// process gets without narrowing its affinity mask, so a pool sized from the
// mask alone would run more threads than it has CPUs and lose time to throttling.
#pragma once

#include <cstdint>
#include <string>

namespace hetrt::cpu {

// ceil(quota / period) of the tightest CPU quota on this process's cgroup or
// any of its ancestors (cgroup v2 `cpu.max`, v1 `cpu.cfs_quota_us` /
// `cpu.cfs_period_us`), found through /proc/self/cgroup and
// /proc/self/mountinfo; 0 when there is none or it cannot be read.
// `root` prefixes every path read (tests point it at a made-up tree).
int32_t CgroupCpuLimit(const std::string& root = "");

}  // namespace hetrt::cpu
