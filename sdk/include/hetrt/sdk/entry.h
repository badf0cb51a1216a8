// The guard around every ABI entry point of a C++ plugin: the args struct is
// checked before the plugin sees it, and no C++ exception crosses the C
// boundary (std::bad_alloc becomes the static out-of-memory error).
//
//   inline constexpr char kLabel[] = "OpenCL plugin";
//   template <auto F> using Entry = hetrt::sdk::Entry<F, kLabel>;
//   ... Entry<Allocate>::Call ...   // in the device table
#pragma once

#include <string>

#include "hetrt/sdk/error.h"

namespace hetrt::sdk {

// NULL when `args` is usable: non-NULL, its struct_size covering every field of
// the ABI version the plugin was built against, and a non-NULL `self` where the
// struct has one. A plugin that reads a field a later minor appended checks it
// with HETRT_ARGS_HAS instead, so that older cores stay usable.
template <class Args>
hetrt_error_t* CheckArgs(const Args* args) noexcept {
  if (args == nullptr || args->struct_size < sizeof(Args))
    return MakeErrorf(HETRT_STATUS_INVALID_ARGUMENT, "NULL or too small args struct (struct_size < %zu)", sizeof(Args));
  if constexpr (requires { args->self; })
    if (args->self == nullptr) return MakeError(HETRT_STATUS_INVALID_ARGUMENT, "NULL instance (self)");
  return nullptr;
}

// Only the exception guard, for plugins that check their args themselves.
template <auto F, const char* Label>
struct Guard;
template <class Args, hetrt_error_t* (*F)(Args*), const char* Label>
struct Guard<F, Label> {
  static hetrt_error_t* Call(Args* args) noexcept {
    try {
      return F(args);
    } catch (...) {
      return CurrentExceptionError(Label);
    }
  }
};

// The args check, then the guard.
template <auto F, const char* Label>
struct Entry;
template <class Args, hetrt_error_t* (*F)(Args*), const char* Label>
struct Entry<F, Label> {
  static hetrt_error_t* Call(Args* args) noexcept {
    if (hetrt_error_t* e = CheckArgs(args)) return e;
    return Guard<F, Label>::Call(args);
  }
};

}  // namespace hetrt::sdk
