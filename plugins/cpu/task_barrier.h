// The barrier behind parallel.barrier (TVMBackendParallelBarrier): the tasks of
// one launch wait for each other, and every write made before the barrier is
// visible to every task after it.
#pragma once

#include <atomic>
#include <cstdint>

namespace hetrt::cpu {

// Reusable (one instance serves every barrier round of every launch) because
// the last task to arrive resets the count before it releases the others.
// Only valid when all `participants` tasks run at the same time, each on its
// own thread: a task queued behind another on the same thread could never arrive.
class TaskBarrier {
 public:
  void ArriveAndWait(int32_t participants);

 private:
  // Separate cache lines: arrivals bounce `arrived_` while waiters poll `phase_`.
  alignas(64) std::atomic<int32_t> arrived_{0};
  alignas(64) std::atomic<uint32_t> phase_{0};
};

}  // namespace hetrt::cpu
