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

// Wraps an entry point so that no C++ exception crosses the ABI; costs nothing
// on the path that does not throw. (The CPU plugin checks its args struct
// field by field itself: HETRT_CPU_CHECK_CALL.)
template <auto Fn, typename Args>
hetrt_error_t* Guarded(Args* args) noexcept {
  return sdk::Guard<Fn, kLabel>::Call(args);
}

}  // namespace hetrt::cpu
