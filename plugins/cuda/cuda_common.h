// Shared pieces of the CUDA plugin: errors and the guard every entry point is
// wrapped in (from the SDK).
#pragma once

#include <string>

#include "cuda_driver.h"
#include "hetrt/plugin_abi.h"
#include "hetrt/sdk/plugin.h"

namespace hetrt::cuda {

inline constexpr char kLabel[] = "CUDA plugin";
// Every entry point is wrapped: args checked, no exception crosses the ABI.
template <auto F>
using Entry = sdk::Entry<F, kLabel>;
using sdk::MakeError;

}  // namespace hetrt::cuda
