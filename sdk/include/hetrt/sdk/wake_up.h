// How long a wait should poll before it sleeps in the driver, sized from what
// a wake-up costs on this machine.
//
// A thread that sleeps until device work ends pays the machine's wake-up
// latency after the work is done: a few microseconds on a machine whose idle
// CPUs stay awake, tens to hundreds where an idle vCPU halts and needs an
// interrupt to run again. Polling first sees work that ends within the budget
// at once, at the price of a CPU for the budget. Polling for as long as a
// wake-up costs, then sleeping, is the ski-rental rule: a wait never costs more
// than twice what the better of "sleep at once" and "poll until done" would
// have, on fast and slow machines alike, and a wait burns at most one
// wake-up's worth of CPU. Plugins (OpenCL, Vulkan) measure once per instance,
// at their first wait, unless the user fixes the budget (option wait_poll_us).
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace hetrt::sdk {

struct WakeUpLatency {
  uint64_t median_ns = 0;
  uint64_t p90_ns = 0;
};

// Wakes a thread sleeping on a condition variable (a futex, as drivers'
// blocking waits are) `rounds` times, each after it has slept for `asleep`, and
// times notify -> running. About rounds x (asleep + latency): 3 ms by default.
inline WakeUpLatency MeasureWakeUpLatency(int rounds = 24,
                                          std::chrono::microseconds asleep = std::chrono::microseconds(100)) {
  using Clock = std::chrono::steady_clock;
  std::mutex mutex;
  std::condition_variable cv;
  bool go = false, stop = false;
  Clock::time_point notified;
  std::atomic<int64_t> woke_ns{-1};
  std::thread sleeper([&] {
    std::unique_lock<std::mutex> lock(mutex);
    for (;;) {
      cv.wait(lock, [&] { return go || stop; });
      if (stop) return;
      go = false;
      woke_ns.store(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - notified).count(),
                    std::memory_order_release);
    }
  });
  std::vector<uint64_t> samples;
  for (int i = 0; i < rounds; ++i) {
    std::this_thread::sleep_for(asleep);  // the sleeper is parked by now, its CPU idle
    woke_ns.store(-1, std::memory_order_relaxed);
    {
      std::lock_guard<std::mutex> lock(mutex);
      go = true;
      notified = Clock::now();
    }
    cv.notify_one();
    int64_t ns;
    while ((ns = woke_ns.load(std::memory_order_acquire)) < 0) std::this_thread::yield();
    samples.push_back(static_cast<uint64_t>(ns));
  }
  {
    std::lock_guard<std::mutex> lock(mutex);
    stop = true;
  }
  cv.notify_one();
  sleeper.join();
  std::sort(samples.begin(), samples.end());
  return {samples[samples.size() / 2], samples[samples.size() * 9 / 10]};
}

// The ski-rental budget for a measured latency, in microseconds: the wake-up
// that a sleep costs more often than not (its 90th percentile), kept within
// [kLeast, kMost] so that a lucky or noisy measurement neither drops polling
// nor makes a wait burn a CPU for long.
inline int64_t PollBudgetUs(const WakeUpLatency& latency) {
  constexpr int64_t kLeast = 10, kMost = 200;
  return std::clamp<int64_t>(static_cast<int64_t>((latency.p90_ns + 999) / 1000), kLeast, kMost);
}

// One plugin instance's budget: the user's (option wait_poll_us >= 0) or,
// when the option is kAuto, measured at the first wait that asks.
// Thread contract: thread-safe.
class PollBudget {
 public:
  static constexpr int64_t kAuto = -1;

  int64_t Us(int64_t option) {
    if (option >= 0) return option;
    std::call_once(measured_, [this] { measured_us_ = PollBudgetUs(MeasureWakeUpLatency()); });
    return measured_us_;
  }

 private:
  std::once_flag measured_;
  int64_t measured_us_ = 0;
};

}  // namespace hetrt::sdk
