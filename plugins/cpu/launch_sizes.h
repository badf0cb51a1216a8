// How long each parallel launch site's work takes on one thread, so that a
// pool can run work too small to pay for waking a worker on the calling thread.
//
// A site is its lambda (one per parallel loop of a kernel). The table is a
// fixed array of slots found by hashing the lambda's address: no allocation,
// no lock. Two sites that share a slot overwrite each other's estimate; a
// wrong estimate only picks the slower of two correct ways to run a launch,
// for one launch, until the next measurement.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>

#include "hetrt/plugin_abi.h"

namespace hetrt::cpu {

class LaunchSizes {
 public:
  // The site's work on one thread in ns, or -1 when not measured yet.
  int64_t SerialNs(hetrt_parallel_lambda_t lambda) const {
    const Slot& slot = SlotOf(lambda);
    if (slot.lambda.load(std::memory_order_relaxed) != lambda) return -1;
    return slot.serial_ns.load(std::memory_order_relaxed);
  }
  // A measurement counts as the median of it and the site's two before: a
  // launch the OS preempted (a busy server's core is shared) reads as long
  // once, where a site that grew, or one whose size alternates, reads long in
  // two of its last three launches. A longer count replaces the estimate at
  // once; a shorter one only wears it down by an eighth per launch. A site
  // whose size varies (a symbolic batch) is thus taken at its recent largest,
  // and goes serial only after a run of short launches, rather than running
  // every large launch after a small one on one thread.
  void Record(hetrt_parallel_lambda_t lambda, int64_t measured_ns) {
    Slot& slot = SlotOf(lambda);
    int64_t estimate = measured_ns;
    if (slot.lambda.load(std::memory_order_relaxed) == lambda) {
      const int64_t last = slot.last_ns.load(std::memory_order_relaxed);
      const int64_t before_last = slot.before_last_ns.load(std::memory_order_relaxed);
      const int64_t count =
          Median(measured_ns, last < 0 ? measured_ns : last, before_last < 0 ? measured_ns : before_last);
      const int64_t before = slot.serial_ns.load(std::memory_order_relaxed);
      estimate = std::max(count, before - before / 8);
      slot.before_last_ns.store(last, std::memory_order_relaxed);
    } else {
      slot.before_last_ns.store(-1, std::memory_order_relaxed);  // a new site in the slot
    }
    slot.last_ns.store(measured_ns, std::memory_order_relaxed);
    slot.serial_ns.store(estimate, std::memory_order_relaxed);
    slot.lambda.store(lambda, std::memory_order_relaxed);
  }

 private:
  struct Slot {
    std::atomic<hetrt_parallel_lambda_t> lambda{nullptr};
    std::atomic<int64_t> serial_ns{-1};
    std::atomic<int64_t> last_ns{-1};         // the latest measurement
    std::atomic<int64_t> before_last_ns{-1};  // the one before it
  };
  static int64_t Median(int64_t a, int64_t b, int64_t c) {
    return std::max(std::min(a, b), std::min(std::max(a, b), c));
  }
  static constexpr size_t kSlots = 256;  // a model's parallel loops, with room to spare

  static size_t Index(hetrt_parallel_lambda_t lambda) {
    // Functions are at least 16-byte aligned: drop the bits that never change.
    return (reinterpret_cast<uintptr_t>(lambda) >> 4) * 0x9E3779B97F4A7C15ull >> 56 & (kSlots - 1);
  }
  Slot& SlotOf(hetrt_parallel_lambda_t lambda) { return slots_[Index(lambda)]; }
  const Slot& SlotOf(hetrt_parallel_lambda_t lambda) const { return slots_[Index(lambda)]; }

  Slot slots_[kSlots];
};

}  // namespace hetrt::cpu
