// Waiting on an atomic word the way a low-latency pool needs: spin for a short,
// bounded time (a hand-off between running threads takes well under a
// microsecond), then sleep on the futex behind C++20 std::atomic::wait so that
// idle threads cost no CPU.
#pragma once

#include <atomic>
#include <chrono>
#include <thread>

namespace hetrt::cpu {

// Long enough to bridge the gap between back-to-back operator launches, short
// enough that an idle pool stops competing with other processes almost at once.
inline constexpr std::chrono::microseconds kSpinBudget{200};

// Tells the core that this is a spin loop: saves power and frees execution
// resources for a hyper-thread sibling.
inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

// Returns the first value of `word` (loaded with acquire) for which `done` holds,
// spinning for up to `budget` first (0: sleep at once). Whoever changes `word`
// towards `done` must call notify_one/notify_all on it.
template <typename T, typename Predicate>
T SpinThenWait(const std::atomic<T>& word, Predicate done, std::chrono::microseconds budget = kSpinBudget) {
  // Pausing alone catches a hand-off between running threads fastest. After a
  // few pauses, yield instead: when threads outnumber free cores, the thread
  // being waited for may be one that needs this core (measured on 2 cores with 3
  // threads: ~1 us per launch with yields, ~400 us with pauses only).
  constexpr unsigned kPausesBeforeYielding = 16;
  // Reading the clock costs about as much as a pause: check it only now and then,
  // and not at all when the wait ends early.
  constexpr unsigned kSpinsPerClockCheck = 64;
  std::chrono::steady_clock::time_point deadline{};
  T value = word.load(std::memory_order_acquire);
  for (unsigned spins = 1; budget.count() > 0 && !done(value); ++spins) {
    if (spins < kPausesBeforeYielding) {
      CpuRelax();
    } else {
      std::this_thread::yield();
    }
    if (spins % kSpinsPerClockCheck == 0) {
      const auto now = std::chrono::steady_clock::now();
      if (spins == kSpinsPerClockCheck) {
        deadline = now + budget;
      } else if (now > deadline) {
        break;
      }
    }
    value = word.load(std::memory_order_acquire);
  }
  while (!done(value)) {
    word.wait(value, std::memory_order_acquire);
    value = word.load(std::memory_order_acquire);
  }
  return value;
}

}  // namespace hetrt::cpu
