// Shared pieces of the CUDA plugin: errors and the guard every entry point is
// wrapped in (from the SDK).
#pragma once

#include <string>

#include "cuda_driver.h"
#include "hetrt/plugin_abi.h"
#include "hetrt/sdk/device_facts.h"
#include "hetrt/sdk/plugin.h"

// The driver API's names (cuda_driver_api.h) for all of the plugin's code,
// the ABI objects (hetrt_instance, hetrt_stream, ...) outside any namespace
// included, as cuda.h would give them. Plugin-private: nothing else includes
// this header.
using namespace hetrt::cuda_api;

namespace hetrt::cuda {

// Every entry point is wrapped: args checked, no exception crosses the ABI.
HETRT_SDK_PLUGIN_LABEL("CUDA plugin");

}  // namespace hetrt::cuda
