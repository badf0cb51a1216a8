// What memory_stats reports: allocate() minus free() of one device of one
// instance, the peak, and the frees that failed. Relaxed atomics: the
// counters order nothing.
#pragma once

#include <atomic>
#include <cstdint>

#include "hetrt/plugin_abi.h"

namespace hetrt::sdk {

class MemoryCounters {
 public:
  void Allocated(uint64_t nbytes) noexcept {
    const uint64_t now = bytes_in_use_.fetch_add(nbytes, std::memory_order_relaxed) + nbytes;
    num_allocations_.fetch_add(1, std::memory_order_relaxed);
    uint64_t peak = peak_bytes_.load(std::memory_order_relaxed);
    while (now > peak && !peak_bytes_.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
    }
  }
  void Freed(uint64_t nbytes) noexcept {
    bytes_in_use_.fetch_sub(nbytes, std::memory_order_relaxed);
    num_allocations_.fetch_sub(1, std::memory_order_relaxed);
  }
  // A free() that returned an error (DeviceTable counts them for plugins
  // built on CommonDeviceEntries).
  void FreeFailed() noexcept { failed_frees_.fetch_add(1, std::memory_order_relaxed); }
  // memory_stats' outputs; `limit` is the device's capacity (0: unknown).
  void Report(hetrt_memory_stats_args_t* args, uint64_t limit) const noexcept {
    args->bytes_in_use = bytes_in_use_.load(std::memory_order_relaxed);
    args->peak_bytes_in_use = peak_bytes_.load(std::memory_order_relaxed);
    args->bytes_limit = limit;
    args->num_allocations = num_allocations_.load(std::memory_order_relaxed);
    if (HETRT_ARGS_HAS(args, hetrt_memory_stats_args_t, failed_frees))  // a 2.3 caller
      args->failed_frees = failed_frees_.load(std::memory_order_relaxed);
  }

 private:
  alignas(64) std::atomic<uint64_t> bytes_in_use_{0};  // its own cache line: allocate() on every thread writes it
  std::atomic<uint64_t> peak_bytes_{0};
  std::atomic<uint64_t> num_allocations_{0};
  std::atomic<uint64_t> failed_frees_{0};
};

}  // namespace hetrt::sdk
