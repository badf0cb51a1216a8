#include "thread_pool.h"

#include <pthread.h>

#include <chrono>
#include <string>

#include "spin_wait.h"

namespace hetrt::cpu {
namespace {

int32_t RunSerially(hetrt_parallel_lambda_t lambda, void* cdata, int32_t num_task) {
  // No barrier: tasks that run one after another cannot wait for each other.
  hetrt_parallel_group_env_t env{nullptr, num_task};
  int32_t failed_task = -1;
  for (int32_t task_id = 0; task_id < num_task; ++task_id) {
    if (lambda(task_id, &env, cdata) != 0 && failed_task < 0) failed_task = task_id;
  }
  return failed_task;
}

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

ThreadPool::ThreadPool(int32_t num_threads) : num_threads_(num_threads) {
  workers_.reserve(num_threads - 1);
  try {
    for (int32_t thread_index = 1; thread_index < num_threads; ++thread_index) {
      workers_.emplace_back([this, thread_index] { WorkerLoop(thread_index); });
      // Named for profilers and debuggers; the kernel keeps 15 characters.
      const std::string name = "hetrt-cpu-" + std::to_string(thread_index);
      pthread_setname_np(workers_.back().native_handle(), name.substr(0, 15).c_str());
    }
  } catch (...) {
    StopWorkers();
    throw;
  }
}

ThreadPool::~ThreadPool() { StopWorkers(); }

void ThreadPool::StopWorkers() {
  stopping_ = true;
  generation_.fetch_add(1, std::memory_order_release);
  generation_.notify_all();
  for (std::thread& worker : workers_) worker.join();
  workers_.clear();
}

int32_t ThreadPool::Launch(hetrt_parallel_lambda_t lambda, void* cdata, int32_t num_task) {
  const int64_t serial_below = num_task == 0 ? serial_below_ns_.load(std::memory_order_relaxed) : 0;
  if (serial_below > 0) {
    const int64_t serial_ns = sizes_.SerialNs(lambda);
    if (serial_ns >= 0 && serial_ns < serial_below) {
      const int64_t start = NowNs();
      const int32_t failed_task = RunSerially(lambda, cdata, 1);
      sizes_.Record(lambda, NowNs() - start);
      return failed_task;
    }
  }
  const bool use_workers =
      num_task != 1 && !workers_.empty() && !launch_in_progress_.exchange(true, std::memory_order_acquire);
  if (!use_workers) return RunSerially(lambda, cdata, num_task == 0 ? 1 : num_task);

  const int32_t task_count = num_task == 0 ? num_threads_ : num_task;
  job_ = Job{lambda, cdata, task_count, task_count <= num_threads_ ? &barrier_ : nullptr};
  failed_task_.store(-1, std::memory_order_relaxed);
  // Every worker reports back, even one with no task in this job: only then may
  // the next launch overwrite job_.
  workers_running_.store(static_cast<int32_t>(workers_.size()), std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_release);
  generation_.notify_all();  // no system call while every worker is still spinning

  if (serial_below > 0) {
    // Its share times the thread count: the site's work on one thread, without
    // the workers' wake-up.
    const int64_t start = NowNs();
    RunShareOfTasks(0);
    sizes_.Record(lambda, (NowNs() - start) * num_threads_);
  } else {
    RunShareOfTasks(0);
  }
  SpinThenWait(workers_running_, [](int32_t running) { return running == 0; }, spin());

  const int32_t failed_task = failed_task_.load(std::memory_order_relaxed);
  launch_in_progress_.store(false, std::memory_order_release);
  return failed_task;
}

void ThreadPool::WorkerLoop(int32_t thread_index) {
  uint32_t seen_generation = 0;  // the value generation_ starts with
  for (;;) {
    seen_generation =
        SpinThenWait(generation_, [seen_generation](uint32_t current) { return current != seen_generation; }, spin());
    if (stopping_) return;
    RunShareOfTasks(thread_index);
    if (workers_running_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      workers_running_.notify_one();
    }
  }
}

void ThreadPool::RunShareOfTasks(int32_t thread_index) {
  const Job job = job_;
  // A copy per thread: the lambda gets a mutable env and must not disturb others.
  hetrt_parallel_group_env_t env{job.barrier, job.num_task};
  // 64-bit so that stepping past a num_task near INT32_MAX cannot overflow.
  for (int64_t task_id = thread_index; task_id < job.num_task; task_id += num_threads_) {
    if (job.lambda(static_cast<int32_t>(task_id), &env, job.cdata) != 0) {
      // Any failing task will do; workers_running_ orders this before the read.
      failed_task_.store(static_cast<int32_t>(task_id), std::memory_order_relaxed);
    }
  }
}

const char* ThreadPool::Barrier(hetrt_parallel_group_env_t* env) {
  if (env == nullptr) return "cpu plugin: parallel barrier called without the task's env";
  if (env->num_task <= 1) return nullptr;
  if (env->sync_handle == nullptr) {
    return "cpu plugin: parallel barrier in a launch whose tasks do not all run at once "
           "(num_task above the thread count, or a nested launch run serially)";
  }
  static_cast<TaskBarrier*>(env->sync_handle)->ArriveAndWait(env->num_task);
  return nullptr;
}

}  // namespace hetrt::cpu
