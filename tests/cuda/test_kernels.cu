// Kernels the CUDA tests launch through hand-written module blobs: one that
// writes back every scalar it was given (argument widths), one that needs more
// than 48 KiB of dynamic shared memory, one that stores where it is told (a
// fault when that is out of its buffer) and one that holds its stream until
// the host opens a gate. nvcc compiles them to PTX and cubins for a real GPU;
// the fake driver runs them as host code (tests/cuda/fake_cuda_shim.h).
#ifndef HETRT_DYNAMIC_SHARED
#define HETRT_DYNAMIC_SHARED(type, name) extern __shared__ type name[]
#endif
#ifndef HETRT_CHECKED_STORE
#define HETRT_CHECKED_STORE(pointer, value) (*(pointer) = (value))
#endif
#ifndef HETRT_ATOMIC_LOAD
#define HETRT_ATOMIC_LOAD(pointer) (*(pointer))
#endif

extern "C" __global__ void hetrt_test_args_kernel(double* out, int i32, unsigned u32, long long i64, float f32,
                                                  double f64) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  out[0] = i32;
  out[1] = u32;
  out[2] = static_cast<double>(i64);
  out[3] = f32;
  out[4] = f64;
}

// Thread t stores t at the far end of the shared memory the launch asked for
// (`floats` of them) and reads it back: only a launch that got all of it works.
extern "C" __global__ void hetrt_test_shared_kernel(float* y, int floats) {
  HETRT_DYNAMIC_SHARED(float, shared);
  const int t = threadIdx.x;
  shared[floats - 1 - t] = static_cast<float>(t);
  __syncthreads();
  y[t] = shared[floats - 1 - t];
}

// y[index] = value, wherever that is: past the end of y it is an illegal
// address, which a GPU reports at the next synchronization and ever after.
extern "C" __global__ void hetrt_test_store_kernel(float* y, int index, float value) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  HETRT_CHECKED_STORE(y + index, value);
}

// Waits until the host sets *gate (mapped pinned memory), then sets *passed:
// work queued behind it on its stream waits too.
extern "C" __global__ void hetrt_test_gate_kernel(volatile int* gate, int* passed) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  while (HETRT_ATOMIC_LOAD(gate) == 0) {
  }
  *passed = 1;
}
