// The plugin's one thread pool and the parallel table that exposes it.
#pragma once

#include <cstdint>

#include "hetrt/plugin_abi.h"

namespace hetrt::cpu {

// Caps set_option and HETRT_NUM_THREADS against values that would only exhaust
// the process's threads.
inline constexpr int32_t kMaxThreads = 1024;

// Starts a pool of `num_threads` (the launching thread included) that replaces
// the running one; on failure the running one stays. Must not overlap a launch.
hetrt_error_t* StartThreadPool(int32_t num_threads);
void StopThreadPool();
// 0 while no pool runs.
int32_t ThreadPoolSize();

const hetrt_parallel_api_t* ParallelApi();

}  // namespace hetrt::cpu
