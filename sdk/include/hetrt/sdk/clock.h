// The host clock that device clocks are sampled against (device_clock's host_ns).
#pragma once

#include <time.h>

#include <cstdint>

namespace hetrt::sdk {

inline uint64_t MonotonicNs() noexcept {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ULL + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace hetrt::sdk
