// The state of one plugin instance. Everything mutable lives here, so two
// registries (two instances) of the same loaded plugin never share a pool,
// statistics or a name.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

#include "hetrt/plugin_abi.h"
#include "hetrt/sdk/memory_counters.h"
#include "hetrt/sdk/wake_up.h"
#include "plugin_error.h"
#include "thread_pool.h"

struct hetrt_instance {
  // Cleared by instance_destroy, so a call that races with it (or a stray
  // pointer) is refused rather than trusted. Best effort: not a lifetime guard.
  static constexpr uint64_t kLiveTag = 0x68657472742d6370;  // "hetrt-cp"
  std::atomic<uint64_t> tag{kLiveTag};
  // Unique for the life of the process: keys the thread-local current streams,
  // where a reused instance address must not inherit a stale stream.
  uint64_t id = 0;
  const hetrt_host_api_t* host = nullptr;

  // Parallel launch. Launches may run on any thread while the pool is resized,
  // so the pointer is swapped atomically and an old pool is deleted only once
  // no launch that may have loaded it is left. Launches count themselves in the
  // slot of the current epoch; a swap flips the epoch and waits only for the
  // old slot to drain, so a thread that launches back to back cannot starve it.
  alignas(64) std::atomic<hetrt::cpu::ThreadPool*> pool{nullptr};
  std::atomic<uint32_t> pool_epoch{0};
  std::atomic<int32_t> launches_in_flight[2] = {0, 0};
  // The pool's size, readable without touching a pool that may be deleted.
  std::atomic<int32_t> num_threads{0};
  // The pools' spin before sleeping (option spin_us, HETRT_CPU_SPIN_US), kept
  // here so that a resized pool gets it too.
  std::atomic<int64_t> spin_us{hetrt::cpu::kSpinBudget.count()};
  // Launch sites whose work is shorter run on the calling thread (option
  // serial_below_us, resolved: -1 measures the wake-up); 0: never.
  std::atomic<int64_t> serial_below_us{0};
  hetrt::sdk::PollBudget wake_up;
  std::mutex resize_mutex;  // one resize at a time keeps pool, size and name in step

  // memory_stats: bytes as requested by allocate (its own cache line inside).
  hetrt::sdk::MemoryCounters memory_counters;

  // HETRT_DEVICE_ATTR_NAME, rebuilt when the thread count changes.
  alignas(64) std::mutex name_mutex;
  std::string cpu_model;
  std::string name;
};

// Every entry point (hetrt/sdk/entry.h) refuses an instance whose tag
// instance_destroy has cleared.
template <>
struct hetrt::sdk::InstanceLiveness<hetrt_instance> {
  static bool IsLive(const hetrt_instance* self) noexcept {
    return self->tag.load(std::memory_order_relaxed) == hetrt_instance::kLiveTag;
  }
};

namespace hetrt::cpu {

// Caps set_option and HETRT_NUM_THREADS against values that would only exhaust
// the process's threads.
inline constexpr int32_t kMaxThreads = 1024;

void Log(const hetrt_instance_t* self, hetrt_log_level_t level, const char* message);

}  // namespace hetrt::cpu
