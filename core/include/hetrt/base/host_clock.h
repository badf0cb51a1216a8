// The host clock every timing in hetrt is on (CLOCK_MONOTONIC, ns): profiles,
// traces, and the device clocks that plugins map onto it.
#pragma once

#include <time.h>

#include <cstdint>

namespace hetrt {

inline uint64_t HostNowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace hetrt
