// What the host processor offers: usable core count and a display name.
#pragma once

#include <cstdint>
#include <string>

namespace hetrt::cpu {

// Cores this process may run on: its affinity mask (a taskset or cgroup cpuset
// limit), narrowed to its cgroup's CPU quota (a container CPU limit); at least 1.
int32_t AvailableCoreCount();

// "model name" from /proc/cpuinfo, or "CPU" where the kernel does not report one.
std::string CpuModelName();

}  // namespace hetrt::cpu
