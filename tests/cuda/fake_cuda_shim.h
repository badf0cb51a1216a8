// Lets CUDA C kernels (kernels/cuda_kernels.cu, tests/cuda/test_kernels.cu)
// compile as host C++ for the fake driver: the built-in index variables
// become thread-locals the fake sets before running each thread in turn.
#pragma once

#include <math.h>

#include <cstddef>

struct FakeDim3 {
  unsigned x = 0, y = 0, z = 0;
};
inline thread_local FakeDim3 blockIdx, threadIdx, blockDim, gridDim;
// The dynamic shared memory of the launch being run.
inline thread_local unsigned char* fake_dynamic_shared = nullptr;

// Whether the device running the kernel can reach [p, p + n); a fault when
// not (fake_kernels.cc).
bool fake_cuda_reachable(const volatile void* p, size_t n);
template <class T>
void fake_cuda_store(T* p, T value) {
  if (fake_cuda_reachable(p, sizeof(T))) *p = value;
}

#define __global__
#define __device__
#define __syncthreads() ((void)0)  // threads run one after another: only own-slot kernels are correct
#define HETRT_DYNAMIC_SHARED(type, name) type* name = reinterpret_cast<type*>(fake_dynamic_shared)
#define HETRT_CHECKED_STORE(pointer, value) fake_cuda_store(pointer, value)
#define HETRT_ATOMIC_LOAD(pointer) __atomic_load_n(pointer, __ATOMIC_ACQUIRE)
