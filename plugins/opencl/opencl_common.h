// Shared pieces of the OpenCL plugin: errors, the entry-point guard (from the
// SDK), and the buffer descriptor that DLTensor.data points to for OpenCL memory.
#pragma once

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>

#include <string>

#include "hetrt/plugin_abi.h"
#include "hetrt/sdk/plugin.h"

namespace hetrt::opencl {

// Every entry point is wrapped: args checked, no exception crosses the ABI.
HETRT_SDK_PLUGIN_LABEL("OpenCL plugin");

// "clCreateBuffer failed: CL_MEM_OBJECT_ALLOCATION_FAILURE (-4)"
hetrt_error_t* ClError(const char* call, cl_int status);
const char* ClErrorName(cl_int status);

// What an OpenCL tensor's `data` points to: TVM's host code hands this pointer
// to the kernel launcher, which passes `buffer` to clSetKernelArg.
struct BufferDescriptor {
  cl_mem buffer = nullptr;
  size_t size = 0;
  int device_id = 0;
  void* host = nullptr;  // HOST_VISIBLE: the persistent mapping, unmapped at free
  // The instance whose allocate() made it, until free: free refuses a pointer
  // of another instance, a workspace buffer or bytes that are no descriptor.
  const void* allocated_by = nullptr;
};

}  // namespace hetrt::opencl
