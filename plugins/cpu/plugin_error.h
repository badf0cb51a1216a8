// Error values handed across the ABI: a heap {code, message} that the core
// releases through error_destroy.
#pragma once

#include <exception>
#include <new>
#include <string>
#include <system_error>

#include "hetrt/plugin_abi.h"

struct hetrt_error {
  hetrt_status_code_t code;
  std::string message;
};

namespace hetrt::cpu {

// printf-style message. Never throws, so ABI entry points can return its
// result directly: when the heap is exhausted it returns a shared static error
// that ErrorDestroy knows not to delete.
hetrt_error_t* MakeError(hetrt_status_code_t code, const char* format, ...) noexcept
    __attribute__((format(printf, 2, 3)));

hetrt_error_t* ErrorMessage(hetrt_error_message_args_t* args) noexcept;
hetrt_error_t* ErrorDestroy(hetrt_error_destroy_args_t* args) noexcept;

// Wraps an entry point so that no C++ exception crosses the ABI; costs nothing
// on the path that does not throw.
template <auto Fn, typename Args>
hetrt_error_t* Guarded(Args* args) noexcept {
  try {
    return Fn(args);
  } catch (const std::bad_alloc&) {
    return MakeError(HETRT_STATUS_RESOURCE_EXHAUSTED, "cpu plugin: out of memory");
  } catch (const std::system_error& error) {
    return MakeError(HETRT_STATUS_RESOURCE_EXHAUSTED, "cpu plugin: %s", error.what());
  } catch (const std::exception& error) {
    return MakeError(HETRT_STATUS_INTERNAL, "cpu plugin: %s", error.what());
  } catch (...) {
    return MakeError(HETRT_STATUS_INTERNAL, "cpu plugin: unknown exception");
  }
}

}  // namespace hetrt::cpu
