// The per-instance thread pool and the parallel table that exposes it.
#pragma once

#include <chrono>
#include <cstdint>

#include "cpu_instance.h"
#include "hetrt/plugin_abi.h"

namespace hetrt::cpu {

// Starts a pool of `num_threads` (the launching thread included) that replaces
// the instance's running one, and renames the device; on failure the running
// one stays. Waits for launches that still use the old pool, so it must not be
// called from inside a task of this instance.
hetrt_error_t* StartThreadPool(hetrt_instance_t* self, int32_t num_threads);
// The spin of the running pool and of every later one.
void SetPoolSpin(hetrt_instance_t* self, std::chrono::microseconds spin);
// The serial threshold (ThreadPool::set_serial_below) of the running pool and
// of every later one.
void SetPoolSerialBelow(hetrt_instance_t* self, std::chrono::microseconds below);
// Stops the pool; later launches of the instance fail.
void StopThreadPool(hetrt_instance_t* self);

const hetrt_parallel_api_t* ParallelApi();

}  // namespace hetrt::cpu
