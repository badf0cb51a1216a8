// Shared pieces of the CUDA plugin: errors and the guard every entry point is
// wrapped in (from the SDK).
#pragma once

#include <string>

#include "cuda_driver.h"
#include "hetrt/plugin_abi.h"
#include "hetrt/sdk/device_facts.h"
#include "hetrt/sdk/plugin.h"

namespace hetrt::cuda {

// Every entry point is wrapped: args checked, no exception crosses the ABI.
HETRT_SDK_PLUGIN_LABEL("CUDA plugin");

}  // namespace hetrt::cuda
