// Error values handed across the ABI, from the SDK (hetrt/sdk/error.h): a heap
// {code, message} that the core releases through error_destroy.
#pragma once

#include "hetrt/plugin_abi.h"
#include "hetrt/sdk/entry.h"
#include "hetrt/sdk/error.h"

namespace hetrt::cpu {

inline constexpr char kLabel[] = "cpu plugin";

// printf-style message. Never throws, so ABI entry points can return its
// result directly: when the heap is exhausted it returns a shared static error
// that ErrorDestroy knows not to delete.
using sdk::ErrorDestroy;
using sdk::ErrorMessage;
using sdk::MakeErrorf;

// Every entry point of the plugin's tables: its args struct checked (size at
// the minor that introduced it, a live `self`) and no C++ exception crossing
// the ABI, as in every plugin built on the SDK.
template <auto F>
using Entry = sdk::Entry<F, kLabel>;

}  // namespace hetrt::cpu
