// Shared pieces of the OpenCL plugin: error values, the host services, and the
// buffer descriptor that DLTensor.data points to for OpenCL memory.
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

// Set by initialize(); packed functions report failures through it.
extern const hetrt_host_api_t* g_host;
void ReportError(const std::string& message);

// What an OpenCL tensor's `data` points to: TVM's host code hands this pointer
// to the kernel launcher, which passes `buffer` to clSetKernelArg.
struct BufferDescriptor {
  cl_mem buffer = nullptr;
  size_t size = 0;
  int device_id = 0;
};

}  // namespace hetrt::opencl
