// The cost of one parallel launch as TVM-generated CPU code makes it:
// TVMBackendParallelLaunch with empty tasks, through the core's backend ABI
// into the CPU plugin's thread pool. What remains is the pool's hand-off
// (publish the job, wake or catch the spinning workers, wait for them).
#include <benchmark/benchmark.h>

#include <atomic>
#include <mutex>
#include <set>
#include <thread>

#include "hetrt/plugin_abi.h"
#include "hetrt/plugin_host/plugin_registry.h"

extern "C" int TVMBackendParallelLaunch(hetrt_parallel_lambda_t lambda, void* cdata, int num_task) noexcept;

namespace hetrt {
namespace {

struct TaskLog {
  std::atomic<int64_t> tasks{0};
  std::mutex mutex;
  std::set<std::thread::id> threads;  // filled on the first launch only
  bool record_threads = true;
};

int32_t EmptyTask(int32_t, hetrt_parallel_group_env_t*, void* cdata) {
  auto* log = static_cast<TaskLog*>(cdata);
  log->tasks.fetch_add(1, std::memory_order_relaxed);
  if (log->record_threads) {
    std::lock_guard lock(log->mutex);
    log->threads.insert(std::this_thread::get_id());
  }
  return 0;
}

// Arg: number of tasks per launch.
void BM_ParallelLaunchEmpty(benchmark::State& state) {
  auto cpu = PluginRegistry::Global().ForDeviceType(kDLCPU);  // loads the CPU plugin and its pool
  if (!cpu.ok()) return state.SkipWithError(cpu.status().message().c_str());
  const int num_task = static_cast<int>(state.range(0));
  TaskLog log;
  if (TVMBackendParallelLaunch(EmptyTask, &log, num_task) != 0) return state.SkipWithError("launch failed");
  log.record_threads = false;
  for (auto _ : state) {
    if (TVMBackendParallelLaunch(EmptyTask, &log, num_task) != 0) return state.SkipWithError("launch failed");
  }
  if (log.tasks.load() != num_task * (state.iterations() + 1)) return state.SkipWithError("tasks went missing");
  // >1 shows the launches reached the pool rather than a serial fallback.
  state.counters["threads_used"] = static_cast<double>(log.threads.size());
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ParallelLaunchEmpty)->ArgName("tasks")->Arg(2)->UseRealTime();

}  // namespace
}  // namespace hetrt

BENCHMARK_MAIN();
