// Device checks the kit runs (checks_memory.cc, checks_streams.cc) and a
// backend's own test file runs again under its own options (vulkan_test.cc:
// staged copies, the sampled clock).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "conformance.h"
#include "device_client.h"
#include "hetrt/plugin_host/plugin_registry.h"

namespace hetrt::conformance {

inline constexpr DLDevice kHost{kDLCPU, 0};
inline constexpr DLDataType kU8{kDLUInt, 8, 1};

// Bytes i*7+3 (mod 256), the pattern the copy checks move around.
std::vector<uint8_t> Pattern(size_t n);

// CLOCK_MONOTONIC in ns, the host clock device clocks are mapped onto.
int64_t HostNowNs();

// ---- Checks shared with the backends' own files (their quirks run them
//      under other options).

// Host -> device -> device -> pinned host -> host copies of odd sizes at odd
// offsets through `reg`, in `memory` of `device`; then an out-of-range copy
// is refused naming the buffer size.
void CheckCopiesRoundTrip(PluginRegistry& reg, Plugin* plugin, DLDevice device, Allocator& memory,
                          bool pinned_labelled_as_device = true);

// Two events recorded around a large asynchronous copy on one stream: their
// timestamps are ordered and, through device_clock's offset, fall between host
// readings taken around them; elapsed time is not negative. The copy goes to
// `nbytes` of device memory at `device_buffer`.
void CheckTimestampsOnTheHostClock(const conformance::DeviceClient& client, void* device_buffer, size_t nbytes);

}  // namespace hetrt::conformance
