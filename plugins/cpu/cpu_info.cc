#include "cpu_info.h"

#include <sched.h>

#include <fstream>
#include <thread>

namespace hetrt::cpu {

int32_t AvailableCoreCount() {
  cpu_set_t mask;
  if (sched_getaffinity(0, sizeof(mask), &mask) == 0) {
    const int count = CPU_COUNT(&mask);
    if (count > 0) return count;
  }
  const unsigned hardware_threads = std::thread::hardware_concurrency();
  return hardware_threads > 0 ? static_cast<int32_t>(hardware_threads) : 1;
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
