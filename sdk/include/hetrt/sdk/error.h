// Error values for plugins written in C++: a heap {code, message} that the core
// releases through error_destroy, plus the two error entries of the plugin
// table. Header-only: each plugin .so gets its own copy (symbols stay hidden).
#pragma once

#include <cstdarg>
#include <cstdio>
#include <exception>
#include <new>
#include <string>
#include <system_error>
#include <utility>

#include "hetrt/plugin_abi.h"

// The plugin-side definition of the ABI's opaque error (global namespace, as
// the ABI header declares it). A plugin using this header defines no other.
struct hetrt_error {
  hetrt_status_code_t code;
  std::string message;
};

namespace hetrt::sdk {

// What remains when even allocating an error fails: static, never deleted.
// Constructed when the plugin is loaded, so handing it out allocates nothing.
inline hetrt_error g_out_of_memory{HETRT_STATUS_RESOURCE_EXHAUSTED, "out of host memory in the plugin"};

// Never throws: returns the static out-of-memory error when the heap is full.
inline hetrt_error_t* MakeError(hetrt_status_code_t code, std::string message) noexcept {
  try {
    return new hetrt_error{code, std::move(message)};
  } catch (...) {
    return &g_out_of_memory;
  }
}

// printf-style; never throws.
inline hetrt_error_t* MakeErrorf(hetrt_status_code_t code, const char* format, ...) noexcept
    __attribute__((format(printf, 2, 3)));
inline hetrt_error_t* MakeErrorf(hetrt_status_code_t code, const char* format, ...) noexcept {
  va_list args;
  va_start(args, format);
  va_list again;
  va_copy(again, args);
  const int length = std::vsnprintf(nullptr, 0, format, args);
  va_end(args);
  hetrt_error_t* error = &g_out_of_memory;
  try {
    error = new hetrt_error{code, std::string(length > 0 ? static_cast<size_t>(length) : 0, '\0')};
    // The string owns length + 1 bytes, so vsnprintf may write the terminator.
    std::vsnprintf(error->message.data(), error->message.size() + 1, format, again);
  } catch (...) {
  }
  va_end(again);
  return error;
}

// The error for the exception being handled; call only inside a catch block.
// `label` names the plugin in the message ("OpenCL plugin: ...").
inline hetrt_error_t* CurrentExceptionError(const char* label) noexcept {
  try {
    throw;
  } catch (const std::bad_alloc&) {
    return &g_out_of_memory;
  } catch (const std::system_error& e) {
    // A thread or lock the system could not give: worth retrying with less.
    const bool exhausted = e.code() == std::errc::resource_unavailable_try_again;
    return MakeErrorf(exhausted ? HETRT_STATUS_RESOURCE_EXHAUSTED : HETRT_STATUS_INTERNAL, "%s: %s", label, e.what());
  } catch (const std::exception& e) {
    return MakeErrorf(HETRT_STATUS_INTERNAL, "%s: %s", label, e.what());
  } catch (...) {
    return MakeErrorf(HETRT_STATUS_INTERNAL, "%s: unknown exception", label);
  }
}

// The plugin table's error_message and error_destroy. Both "never fail": with
// unusable args there is nowhere to report anything, so they do nothing.
inline hetrt_error_t* ErrorMessage(hetrt_error_message_args_t* args) noexcept {
  if (!HETRT_ARGS_HAS(args, hetrt_error_message_args_t, code)) return nullptr;
  args->message = args->error != nullptr ? args->error->message.c_str() : "";
  args->code = args->error != nullptr ? args->error->code : HETRT_STATUS_OK;
  return nullptr;
}

inline hetrt_error_t* ErrorDestroy(hetrt_error_destroy_args_t* args) noexcept {
  if (HETRT_ARGS_HAS(args, hetrt_error_destroy_args_t, error) && args->error != &g_out_of_memory) delete args->error;
  return nullptr;
}

// Drops an error the plugin made and will not return (a best-effort part of a call).
inline void DiscardError(hetrt_error_t* error) noexcept {
  if (error != &g_out_of_memory) delete error;
}

}  // namespace hetrt::sdk
