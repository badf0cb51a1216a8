#include "parallel_api.h"

#include <atomic>
#include <new>
#include <string>
#include <system_error>
#include <thread>
#include <utility>

#include "plugin_error.h"
#include "thread_pool.h"

namespace hetrt::cpu {
namespace {

// Counts a launch in flight, in the slot of the epoch it saw, for as long as
// it may use the pool it loads after this.
class InFlight {
 public:
  explicit InFlight(hetrt_instance_t* self) {
    for (;;) {
      const uint32_t epoch = self->pool_epoch.load();
      count_ = &self->launches_in_flight[epoch & 1];
      count_->fetch_add(1);
      // Unchanged epoch: the swap that next flips it will see this count.
      if (self->pool_epoch.load() == epoch) return;
      count_->fetch_sub(1);
    }
  }
  ~InFlight() { count_->fetch_sub(1); }
  InFlight(const InFlight&) = delete;
  InFlight& operator=(const InFlight&) = delete;

 private:
  std::atomic<int32_t>* count_;
};

// Replaces the pool; waits until launches that may still use the old one end.
// All seq_cst. A launch counted under the old epoch may hold the old pool (or
// one a still-running earlier swap installed: swaps are serialised by
// resize_mutex, so that one has already waited); a launch counted under the
// new epoch loads the pool after the exchange, so it sees `next`.
void SwapPool(hetrt_instance_t* self, ThreadPool* next) {
  ThreadPool* old = self->pool.exchange(next);
  const uint32_t epoch = self->pool_epoch.fetch_add(1);
  while (self->launches_in_flight[epoch & 1].load() != 0) std::this_thread::yield();
  delete old;
}

hetrt_error_t* Launch(hetrt_parallel_launch_args_t* args) {
  args->failed_task = -1;
  if (args->lambda == nullptr || args->num_task < 0) {
    return MakeErrorf(HETRT_STATUS_INVALID_ARGUMENT, "cpu plugin: parallel launch with a null lambda or num_task %d",
                      static_cast<int>(args->num_task));
  }
  InFlight in_flight(args->self);
  ThreadPool* pool = args->self->pool.load();
  if (pool == nullptr) {
    return MakeErrorf(HETRT_STATUS_FAILED_PRECONDITION,
                      "cpu plugin: parallel launch on an instance with no thread pool "
                      "(not created yet, or being destroyed)");
  }
  args->failed_task = pool->Launch(args->lambda, args->cdata, args->num_task);
  return nullptr;
}

hetrt_error_t* Barrier(hetrt_parallel_barrier_args_t* args) {
  if (const char* message = ThreadPool::Barrier(args->env)) {
    return MakeErrorf(HETRT_STATUS_FAILED_PRECONDITION, "%s", message);
  }
  return nullptr;
}

hetrt_error_t* NumThreads(hetrt_parallel_num_threads_args_t* args) {
  args->num_threads = args->self->num_threads.load();
  return nullptr;
}

constexpr hetrt_parallel_api_t kParallelApi{
    .struct_size = sizeof(hetrt_parallel_api_t),
    .launch = Entry<Launch>::Call,
    .barrier = Entry<Barrier>::Call,
    .num_threads = Entry<NumThreads>::Call,
};

}  // namespace

void SetPoolSpin(hetrt_instance_t* self, std::chrono::microseconds spin) {
  std::lock_guard<std::mutex> resize(self->resize_mutex);  // no pool swap meanwhile
  self->spin_us.store(spin.count());
  if (ThreadPool* pool = self->pool.load()) pool->set_spin(spin);
}

void SetPoolSerialBelow(hetrt_instance_t* self, std::chrono::microseconds below) {
  std::lock_guard<std::mutex> resize(self->resize_mutex);
  self->serial_below_us.store(below.count());
  if (ThreadPool* pool = self->pool.load()) pool->set_serial_below(below);
}

hetrt_error_t* StartThreadPool(hetrt_instance_t* self, int32_t num_threads) {
  if (num_threads < 1 || num_threads > kMaxThreads) {
    return MakeErrorf(HETRT_STATUS_INVALID_ARGUMENT, "cpu plugin: thread count %d is not in [1, %d]",
                      static_cast<int>(num_threads), static_cast<int>(kMaxThreads));
  }
  std::lock_guard<std::mutex> resize(self->resize_mutex);
  if (self->num_threads.load() == num_threads) return nullptr;
  // Everything that can fail comes before the swap, so failure changes nothing.
  std::string name = self->cpu_model + " (" + std::to_string(num_threads) + " threads)";
  ThreadPool* pool = nullptr;
  try {
    pool = new ThreadPool(num_threads);
  } catch (const std::system_error& error) {
    return MakeErrorf(HETRT_STATUS_RESOURCE_EXHAUSTED, "cpu plugin: cannot start %d threads: %s",
                      static_cast<int>(num_threads), error.what());
  } catch (const std::bad_alloc&) {
    return MakeErrorf(HETRT_STATUS_RESOURCE_EXHAUSTED, "cpu plugin: out of memory starting %d threads",
                      static_cast<int>(num_threads));
  }
  pool->set_spin(std::chrono::microseconds(self->spin_us.load()));
  pool->set_serial_below(std::chrono::microseconds(self->serial_below_us.load()));
  SwapPool(self, pool);
  self->num_threads.store(num_threads);
  std::lock_guard<std::mutex> name_lock(self->name_mutex);
  self->name.swap(name);
  return nullptr;
}

void StopThreadPool(hetrt_instance_t* self) {
  std::lock_guard<std::mutex> resize(self->resize_mutex);
  SwapPool(self, nullptr);
  self->num_threads.store(0);
}

const hetrt_parallel_api_t* ParallelApi() { return &kParallelApi; }

}  // namespace hetrt::cpu
