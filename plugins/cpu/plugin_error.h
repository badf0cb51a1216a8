// Error objects handed across the ABI: a heap {code, message} that the core
// releases through error_destroy.
#pragma once

#include <string>

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

const char* ErrorMessage(const hetrt_error_t* error);
hetrt_status_code_t ErrorCode(const hetrt_error_t* error);
void ErrorDestroy(hetrt_error_t* error);

}  // namespace hetrt::cpu
