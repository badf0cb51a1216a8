// The device table for the host CPU (kDLCPU, one device): aligned host memory
// with per-instance statistics, memmove, synchronous streams, timestamp events.
#pragma once

#include "hetrt/plugin_abi.h"

namespace hetrt::cpu {

// Each allocation is aligned to at least this, what TVM-compiled code assumes.
inline constexpr uint64_t kMinAllocAlignment = 64;

const hetrt_device_api_t* CpuDeviceApi();

}  // namespace hetrt::cpu
