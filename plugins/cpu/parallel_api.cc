#include "parallel_api.h"

#include <atomic>
#include <new>
#include <thread>
#include <system_error>

#include "host_services.h"
#include "plugin_error.h"
#include "thread_pool.h"

namespace hetrt::cpu {
namespace {

// A raw pointer rather than a static unique_ptr: joining threads from a static
// destructor at exit can hang, and shutdown is the place to end the pool.
// Launches may run on any thread while the pool is resized, so the pointer is
// swapped atomically and an old pool is deleted only once no launch uses it.
std::atomic<ThreadPool*> g_pool{nullptr};
std::atomic<int32_t> g_launches_in_flight{0};

int32_t Launch(hetrt_parallel_lambda_t lambda, void* cdata, int32_t num_task) {
  g_launches_in_flight.fetch_add(1);
  ThreadPool* pool = g_pool.load();
  int32_t rc = -1;
  if (pool == nullptr) {
    ReportLastError("cpu plugin: parallel launch before initialize");
  } else {
    rc = pool->Launch(lambda, cdata, num_task);
  }
  g_launches_in_flight.fetch_sub(1);
  return rc;
}

// Replaces the pool; waits until launches that may still use the old one end.
void SwapPool(ThreadPool* next) {
  ThreadPool* old = g_pool.exchange(next);
  while (g_launches_in_flight.load() != 0) std::this_thread::yield();
  delete old;
}

int32_t Barrier(int32_t /*task_id*/, hetrt_parallel_group_env_t* env) {
  return ThreadPool::Barrier(env);
}

int32_t NumThreads() { return ThreadPoolSize(); }

constexpr hetrt_parallel_api_t kParallelApi{
    .struct_size = sizeof(hetrt_parallel_api_t),
    .launch = Launch,
    .barrier = Barrier,
    .num_threads = NumThreads,
};

}  // namespace

hetrt_error_t* StartThreadPool(int32_t num_threads) {
  if (num_threads < 1 || num_threads > kMaxThreads) {
    return MakeError(HETRT_STATUS_INVALID_ARGUMENT, "cpu plugin: thread count %d is not in [1, %d]",
                     static_cast<int>(num_threads), static_cast<int>(kMaxThreads));
  }
  ThreadPool* pool = nullptr;
  try {
    pool = new ThreadPool(num_threads);
  } catch (const std::system_error& error) {
    return MakeError(HETRT_STATUS_RESOURCE_EXHAUSTED, "cpu plugin: cannot start %d threads: %s",
                     static_cast<int>(num_threads), error.what());
  } catch (const std::bad_alloc&) {
    return MakeError(HETRT_STATUS_RESOURCE_EXHAUSTED,
                     "cpu plugin: out of memory starting %d threads", static_cast<int>(num_threads));
  }
  SwapPool(pool);
  return nullptr;
}

void StopThreadPool() { SwapPool(nullptr); }

int32_t ThreadPoolSize() {
  ThreadPool* pool = g_pool.load();
  return pool != nullptr ? pool->num_threads() : 0;
}

const hetrt_parallel_api_t* ParallelApi() { return &kParallelApi; }

}  // namespace hetrt::cpu
