// The guard around every ABI entry point of a C++ plugin: the args struct is
// checked before the plugin sees it, and no C++ exception crosses the C
// boundary (std::bad_alloc becomes the static out-of-memory error).
//
// Args structs evolve both ways (docs/plugin-abi.md, "ABI evolution"): a newer
// core's larger struct is passed through as it is (the plugin reads the fields
// it knows); an older core's smaller one (at least the struct's size in the
// minor that introduced it, args_size.h) reaches the plugin as a full struct
// whose missing fields are zero, and the outputs the caller has room for are
// copied back. struct_size stays the caller's, so HETRT_ARGS_HAS still tells a
// missing field from a zero one.
//
//   HETRT_SDK_PLUGIN_LABEL("OpenCL plugin");  // in the plugin's namespace
//   ... Entry<Allocate>::Call ...            // in the device table
#pragma once

#include <cstring>
#include <string>
#include <type_traits>

#include "hetrt/sdk/args_size.h"
#include "hetrt/sdk/error.h"

namespace hetrt::sdk {

// A plugin whose instances can tell a live one from a destroyed one (a tag
// its instance_destroy clears) specializes this for its hetrt_instance, in
// the header that defines it, so that every Entry refuses a `self` that is
// not live instead of using freed memory:
//   template <> struct hetrt::sdk::InstanceLiveness<hetrt_instance> {
//     static bool IsLive(const hetrt_instance* self) noexcept;
//   };
template <class Instance>
struct InstanceLiveness {};

// NULL when `args` is usable: non-NULL, its struct_size covering at least the
// fields the struct had in the minor that introduced it, and a non-NULL (and,
// where the plugin can tell, live) `self` where the struct has one.
template <class Args>
hetrt_error_t* CheckArgs(const Args* args) noexcept {
  if (args == nullptr) return MakeError(HETRT_STATUS_INVALID_ARGUMENT, "NULL args struct");
  if (args->struct_size < kArgsMinSize<Args>)
    return MakeErrorf(HETRT_STATUS_INVALID_ARGUMENT,
                      "args struct too small: struct_size %zu < %zu (its size in the ABI minor that introduced it)",
                      args->struct_size, kArgsMinSize<Args>);
  if constexpr (requires { args->self; }) {
    if (args->self == nullptr) return MakeError(HETRT_STATUS_INVALID_ARGUMENT, "NULL instance (self)");
    using Liveness = InstanceLiveness<std::remove_cvref_t<decltype(*args->self)>>;
    if constexpr (requires { Liveness::IsLive(args->self); })
      if (!Liveness::IsLive(args->self))
        return MakeError(HETRT_STATUS_INVALID_ARGUMENT, "self is not a live instance of this plugin (destroyed?)");
  }
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

// The args check, then the guard; an older caller's smaller struct is widened
// (missing fields zero) for the call and its outputs copied back.
template <auto F, const char* Label>
struct Entry;
template <class Args, hetrt_error_t* (*F)(Args*), const char* Label>
struct Entry<F, Label> {
  static_assert(std::is_trivially_copyable_v<Args>, "ABI args structs are plain C structs");
  static hetrt_error_t* Call(Args* args) noexcept {
    if (hetrt_error_t* e = CheckArgs(args)) return e;
    // (args is never NULL past CheckArgs; the test tells the compiler so.)
    if (args == nullptr || args->struct_size >= sizeof(Args)) return Guard<F, Label>::Call(args);
    Args widened{};
    std::memcpy(&widened, args, args->struct_size);
    hetrt_error_t* error = Guard<F, Label>::Call(&widened);
    std::memcpy(static_cast<void*>(args), &widened, args->struct_size);
    return error;
  }
};

}  // namespace hetrt::sdk

// In a plugin's namespace: kLabel, the name its errors start with; Entry<F>,
// the guard above with that label; and MakeError.
#define HETRT_SDK_PLUGIN_LABEL(text)           \
  inline constexpr char kLabel[] = text;        \
  template <auto F>                             \
  using Entry = ::hetrt::sdk::Entry<F, kLabel>; \
  using ::hetrt::sdk::MakeError
