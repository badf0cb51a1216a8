// Kernels the CUDA tests launch through hand-written module blobs: one that
// writes back every scalar it was given (argument widths), and one that needs
// more than 48 KiB of dynamic shared memory. nvcc compiles them to PTX for a
// real GPU; the fake driver runs them as host code (tests/cuda/fake_cuda_shim.h).
#ifndef HETRT_DYNAMIC_SHARED
#define HETRT_DYNAMIC_SHARED(type, name) extern __shared__ type name[]
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
