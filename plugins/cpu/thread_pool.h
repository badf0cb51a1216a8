// Persistent worker threads behind parallel.launch (TVMBackendParallelLaunch).
//
// Launch path without locks or allocation: the launching thread writes the job,
// bumps an atomic generation counter that idle workers spin on (briefly) or
// sleep on (futex via std::atomic::wait), runs its own share of the tasks, then
// waits for a countdown of the workers to reach zero.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "hetrt/plugin_abi.h"
#include "launch_sizes.h"
#include "spin_wait.h"
#include "task_barrier.h"

namespace hetrt::cpu {

class ThreadPool {
 public:
  // `num_threads` counts the thread that calls Launch, so num_threads - 1
  // workers start here. Throws std::system_error when one cannot be started.
  explicit ThreadPool(int32_t num_threads);
  // Joins the workers; must not overlap a Launch.
  ~ThreadPool();

  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int32_t num_threads() const { return num_threads_; }

  // How long an idle worker (and a launch waiting for its workers) spins
  // before it sleeps: the cost of a wake-up saved per back-to-back launch,
  // against CPU burnt after the last one. 0 sleeps at once (a server whose
  // cores are busy with requests between runs wants that).
  void set_spin(std::chrono::microseconds spin) { spin_us_.store(spin.count(), std::memory_order_relaxed); }
  std::chrono::microseconds spin() const {
    return std::chrono::microseconds(spin_us_.load(std::memory_order_relaxed));
  }

  // A launch with num_task 0 whose work takes less than this on one thread
  // runs as one task on the calling thread: waking a sleeping worker costs
  // more than it would save, and a server whose cores are busy with other
  // requests gains nothing from splitting it. Measured per launch site (its
  // lambda): the first launch of a site, and every launch of a site found
  // larger, uses the workers and times the calling thread's share. 0: never.
  void set_serial_below(std::chrono::nanoseconds below) {
    serial_below_ns_.store(below.count(), std::memory_order_relaxed);
  }

  // Runs lambda(task_id, env, cdata) for every task_id in [0, num_task); 0 means
  // one task per thread; num_task must not be negative. Thread t runs task ids
  // t, t + num_threads, ... (round robin), the calling thread being thread 0, so
  // env->sync_handle (the barrier) is only set when num_task <= num_threads. A
  // launch that cannot get the pool (nested inside a task, or concurrent with
  // another thread's launch) runs its tasks serially on the calling thread
  // instead of waiting. Returns the id of a task that returned non-zero, or -1.
  int32_t Launch(hetrt_parallel_lambda_t lambda, void* cdata, int32_t num_task);

  // parallel.barrier: `env` is the one the task received. nullptr on success,
  // else a static message saying why the barrier cannot be used.
  static const char* Barrier(hetrt_parallel_group_env_t* env);

 private:
  struct Job {
    hetrt_parallel_lambda_t lambda = nullptr;
    void* cdata = nullptr;
    int32_t num_task = 0;
    TaskBarrier* barrier = nullptr;  // null when the tasks do not all run at once
  };

  void WorkerLoop(int32_t thread_index);
  void RunShareOfTasks(int32_t thread_index);
  void StopWorkers();

  const int32_t num_threads_;
  std::vector<std::thread> workers_;

  // Claimed by the thread whose launch owns the workers.
  alignas(64) std::atomic<bool> launch_in_progress_{false};

  // Written by the launching thread, then published to the workers by the
  // release increment of generation_; on one cache line, read together.
  alignas(64) Job job_;
  bool stopping_ = false;
  std::atomic<uint32_t> generation_{0};

  // Written by workers as they finish.
  alignas(64) std::atomic<int32_t> workers_running_{0};
  std::atomic<int64_t> spin_us_{kSpinBudget.count()};
  std::atomic<int64_t> serial_below_ns_{0};
  LaunchSizes sizes_;
  std::atomic<int32_t> failed_task_{-1};

  TaskBarrier barrier_;
};

}  // namespace hetrt::cpu
