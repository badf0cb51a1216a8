// Shared pieces of the CUDA plugin: error values and the guard every entry
// point is wrapped in.
#pragma once

#include <string>

#include "cuda_driver.h"
#include "hetrt/plugin_abi.h"

struct hetrt_error {
  hetrt_status_code_t code;
  std::string message;
};

namespace hetrt::cuda {

hetrt_error_t* MakeError(hetrt_status_code_t code, std::string message);
// The error for the exception being handled (call only inside a catch block).
hetrt_error_t* CurrentExceptionError() noexcept;
// Static: what error_destroy leaves alone (allocating an error failed).
extern hetrt_error kOutOfMemory;

// Wraps an entry point: the args struct must hold every field of this ABI
// version (and a `self` where it has one); no C++ exception crosses the C
// boundary.
template <auto F>
struct Entry;
template <class A, hetrt_error_t* (*F)(A*)>
struct Entry<F> {
  static hetrt_error_t* Call(A* args) noexcept {
    try {
      if (args == nullptr || args->struct_size < sizeof(A))
        return MakeError(HETRT_STATUS_INVALID_ARGUMENT,
                         "NULL or too small args struct (struct_size < " + std::to_string(sizeof(A)) + ")");
      if constexpr (requires { args->self; })
        if (args->self == nullptr) return MakeError(HETRT_STATUS_INVALID_ARGUMENT, "NULL instance (self)");
      return F(args);
    } catch (...) {
      return CurrentExceptionError();
    }
  }
};

}  // namespace hetrt::cuda
