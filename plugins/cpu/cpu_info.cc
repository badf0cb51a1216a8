#include "cpu_info.h"

#include "cgroup_cpu_limit.h"

#include <sched.h>

#include <algorithm>

#include <fstream>
#include <thread>

namespace hetrt::cpu {

int32_t AvailableCoreCount() {
  int32_t cores = 0;
  cpu_set_t mask;
  if (sched_getaffinity(0, sizeof(mask), &mask) == 0) cores = CPU_COUNT(&mask);
  if (cores <= 0) cores = static_cast<int32_t>(std::thread::hardware_concurrency());
  if (cores <= 0) cores = 1;
  const int32_t quota = CgroupCpuLimit();
  return quota > 0 ? std::min(cores, quota) : cores;
}

std::string CpuModelName() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    const size_t start = line.find_first_not_of(" \t", colon + 1);
    if (start != std::string::npos) return line.substr(start);
  }
  return "CPU";
}

}  // namespace hetrt::cpu
