// How long a wait should poll before it sleeps in the driver, sized from what
// a wake-up costs on this machine.
//
// A thread that sleeps until device work ends pays the machine's wake-up
// latency after the work is done: a few microseconds on a machine whose idle
// CPUs stay awake, tens to hundreds where an idle vCPU halts and needs an
// interrupt to run again. Polling first sees work that ends within the budget
// at once, at the price of a CPU for the budget. Polling for as long as a
// wake-up costs, then sleeping, is the ski-rental rule: within the budget's
// bounds (10-200 us), a wait costs at most about twice what the better of
// "sleep at once" and "poll until done" would have, on fast and slow machines
// alike, and burns at most one wake-up's worth of CPU. Plugins (OpenCL,
// Vulkan) measure once per instance, when they discover their devices (before
// any work runs), unless the user fixes the budget (option wait_poll_us).
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
inline WakeUpLatency MeasureWakeUpLatency(int rounds = 24,
                                          std::chrono::microseconds asleep = std::chrono::microseconds(100));
inline int64_t PollBudgetUs(const WakeUpLatency& latency);

// One plugin instance's budget: the user's (option wait_poll_us >= 0) or,
// when the option is kAuto, measured once (Measure, or the first Us that asks).
// Thread contract: thread-safe.
class PollBudget {
 public:
  static constexpr int64_t kAuto = -1;
  // Used when the machine cannot be measured (no thread could be started).
  static constexpr int64_t kUnmeasuredUs = 50;

  int64_t Us(int64_t option) {
    if (option >= 0) return option;
    Measure();
    return measured_us_;
  }
  // Measures now (at device discovery: an idle machine, no work waiting).
  void Measure() {
    std::call_once(measured_, [this] {
      try {
        measured_us_ = PollBudgetUs(MeasureWakeUpLatency());
      } catch (...) {  // std::system_error: no thread to wake
        measured_us_ = kUnmeasuredUs;
      }
    });
  }

 private:
  std::once_flag measured_;
  int64_t measured_us_ = kUnmeasuredUs;
};

// The ski-rental budget for a measured latency, in microseconds: the wake-up
// that nine sleeps in ten cost at most (its 90th percentile), kept within
// [kLeast, kMost] so that a lucky or noisy measurement neither drops polling
// nor makes a wait burn a CPU for long.
inline int64_t PollBudgetUs(const WakeUpLatency& latency) {
  constexpr int64_t kLeast = 10, kMost = 200;
  return std::clamp<int64_t>(static_cast<int64_t>((latency.p90_ns + 999) / 1000), kLeast, kMost);
}

// Wakes a thread sleeping on a condition variable (a futex, as drivers'
// blocking waits are) `rounds` times, each after it has slept for `asleep`, and
// times notify -> running. About rounds x (asleep + latency): 3 ms by default.
// Throws std::system_error when no thread can be started.
inline WakeUpLatency MeasureWakeUpLatency(int rounds, std::chrono::microseconds asleep) {
  using Clock = std::chrono::steady_clock;
  rounds = std::max(rounds, 1);
  std::vector<uint64_t> samples;
  samples.reserve(static_cast<size_t>(rounds));  // nothing below throws once the sleeper runs
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

}  // namespace hetrt::sdk
