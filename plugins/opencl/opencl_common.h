// Shared pieces of the OpenCL plugin: error values, the entry-point guard, and
// the buffer descriptor that DLTensor.data points to for OpenCL memory.
#pragma once

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>

#include <string>

#include "hetrt/plugin_abi.h"

struct hetrt_error {
  hetrt_status_code_t code;
  std::string message;
};

namespace hetrt::opencl {

hetrt_error_t* MakeError(hetrt_status_code_t code, std::string message);
// "clCreateBuffer failed: CL_MEM_OBJECT_ALLOCATION_FAILURE (-4)"
hetrt_error_t* ClError(const char* call, cl_int status);
const char* ClErrorName(cl_int status);
// The error for the exception being handled (call only inside a catch block).
hetrt_error_t* CurrentExceptionError() noexcept;
// A static error that error_destroy leaves alone: what remains when even
// allocating an error value fails.
extern hetrt_error kOutOfMemory;

// Wraps an entry point: checks the args struct holds every field of this ABI
// version (and `self` where the struct has one), and turns any C++ exception
// into an error value so that none crosses the C boundary.
template <auto F>
struct Entry;
template <class A, hetrt_error_t* (*F)(A*)>
struct Entry<F> {
  static hetrt_error_t* Call(A* args) noexcept {
    try {
      if (args == nullptr || args->struct_size < sizeof(A))
        return MakeError(HETRT_STATUS_INVALID_ARGUMENT, "NULL or too small args struct (struct_size < " +
                                                            std::to_string(sizeof(A)) + ")");
      if constexpr (requires { args->self; })
        if (args->self == nullptr) return MakeError(HETRT_STATUS_INVALID_ARGUMENT, "NULL instance (self)");
      return F(args);
    } catch (...) {
      return CurrentExceptionError();
    }
  }
};

// What an OpenCL tensor's `data` points to: TVM's host code hands this pointer
// to the kernel launcher, which passes `buffer` to clSetKernelArg.
struct BufferDescriptor {
  cl_mem buffer = nullptr;
  size_t size = 0;
  int device_id = 0;
  void* host = nullptr;  // HOST_VISIBLE: the persistent mapping, unmapped at free
  // Workspace: the queue it was last freed on. TVM host code frees workspace
  // right after enqueuing the kernel that uses it, so a buffer is reused only
  // on that same in-order queue, never by work on another one.
  cl_command_queue freed_on = nullptr;
};

}  // namespace hetrt::opencl
