// The kernels the fake driver can run: host builds of hetrt's CUDA C
// (kernels/cuda_kernels.cu, tests/cuda/test_kernels.cu) and a stand-in for
// the TVM fixture's add kernel, each launched thread by thread on its stream's
// thread with its arguments copied at launch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "fake_driver.h"

namespace fake_cuda {

struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
};

// A kernel with its arguments copied, as cuLaunchKernel does.
struct BoundKernel {
  std::function<void()> thread;     // one thread (blockIdx, threadIdx set)
  std::vector<uintptr_t> pointers;  // its pointer arguments
};

struct FakeKernel {
  const char* name;
  BoundKernel (*from_params)(void** params);             // kernelParams: one pointer per parameter
  BoundKernel (*from_buffer)(const unsigned char* data);  // extra: one buffer of aligned parameters
  size_t buffer_size;                                     // the size that buffer must have
};

// The kernel of that name, or NULL: the fake has no host build of it.
const FakeKernel* FindKernel(const std::string& name);

// Runs every thread of a launch (on a stream's thread). A pointer argument
// `ctx`'s device cannot reach, or a checked store out of reach, is a fault:
// CUDA_ERROR_ILLEGAL_ADDRESS, as a GPU's memory protection reports it.
CUresult RunKernel(const CUctx_st* ctx, const BoundKernel& kernel, Dim3 grid, Dim3 block, unsigned shared_bytes);

}  // namespace fake_cuda
