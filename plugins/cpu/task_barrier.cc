#include "task_barrier.h"

#include "spin_wait.h"

namespace hetrt::cpu {

void TaskBarrier::ArriveAndWait(int32_t participants) {
  // Read before arriving: the round cannot end until this task has arrived.
  const uint32_t phase = phase_.load(std::memory_order_acquire);
  // acq_rel chains every arrival's earlier writes to the last arriver, whose
  // release of the next phase passes them on to all waiters.
  if (arrived_.fetch_add(1, std::memory_order_acq_rel) + 1 == participants) {
    arrived_.store(0, std::memory_order_relaxed);
    phase_.store(phase + 1, std::memory_order_release);
    phase_.notify_all();
    return;
  }
  SpinThenWait(phase_, [phase](uint32_t current) { return current != phase; });
}

}  // namespace hetrt::cpu
