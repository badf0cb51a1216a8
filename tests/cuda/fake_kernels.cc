#include "fake_kernels.h"

#include <cstring>
#include <tuple>
#include <type_traits>
#include <utility>

#include "fake_cuda_shim.h"

// The kernels, compiled here as host code.
#include "../../kernels/cuda_kernels.cu"
#include "test_kernels.cu"

namespace fake_cuda {
namespace {

// The context whose device runs the current thread's kernel, and whether it
// touched memory out of its reach.
thread_local const CUctx_st* t_kernel_ctx = nullptr;
thread_local bool t_fault = false;

// TVM's tvmgen_default_fused_add_kernel of hetero_cuda_seed: T_add = p0 + p1,
// one thread per element (the output comes first, as TVM orders kernel
// buffers); TVM launches exactly one thread per element, so it has no bounds
// check of its own: an element out of reach is a fault.
void TvmFusedAddKernel(float* t_add, float* p0, float* p1) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (!fake_cuda_reachable(p0 + i, sizeof(float)) || !fake_cuda_reachable(p1 + i, sizeof(float))) return;
  fake_cuda_store(t_add + i, p0[i] + p1[i]);
}

// Parameters as the driver lays them out in a CU_LAUNCH_PARAM_BUFFER_POINTER
// buffer: each at the next multiple of its alignment.
template <class... A>
struct Layout {
  static constexpr std::array<size_t, sizeof...(A)> Offsets() {
    std::array<size_t, sizeof...(A)> offsets{};
    size_t at = 0, i = 0;
    ((at = (at + alignof(A) - 1) / alignof(A) * alignof(A), offsets[i++] = at, at += sizeof(A)), ...);
    return offsets;
  }
  static constexpr size_t Size() {
    size_t at = 0;
    ((at = (at + alignof(A) - 1) / alignof(A) * alignof(A) + sizeof(A)), ...);
    return at;
  }
};

template <class... A>
BoundKernel Bind(void (*f)(A...), std::tuple<A...> args) {
  BoundKernel k;
  std::apply(
      [&](const auto&... arg) {
        (
            [&] {
              if constexpr (std::is_pointer_v<std::decay_t<decltype(arg)>>)
                k.pointers.push_back(reinterpret_cast<uintptr_t>(arg));
            }(),
            ...);
      },
      args);
  k.thread = [f, args] { std::apply(f, args); };
  return k;
}

template <class... A, size_t... I>
BoundKernel FromParams(void (*f)(A...), void** params, std::index_sequence<I...>) {
  return Bind(f, std::tuple<A...>{*static_cast<A*>(params[I])...});
}

template <class T>
T ReadAt(const unsigned char* data, size_t offset) {
  T value;
  std::memcpy(&value, data + offset, sizeof(T));
  return value;
}
template <class... A, size_t... I>
BoundKernel FromBuffer(void (*f)(A...), const unsigned char* data, std::index_sequence<I...>) {
  constexpr auto offsets = Layout<A...>::Offsets();
  return Bind(f, std::tuple<A...>{ReadAt<A>(data, offsets[I])...});
}

template <class F>
struct Traits;
template <class... A>
struct Traits<void (*)(A...)> {
  using Indices = std::index_sequence_for<A...>;
  static constexpr size_t kBufferSize = Layout<A...>::Size();
};

template <auto F>
constexpr FakeKernel Kernel(const char* name) {
  using T = Traits<decltype(F)>;
  return {name, [](void** params) { return FromParams(F, params, typename T::Indices{}); },
          [](const unsigned char* data) { return FromBuffer(F, data, typename T::Indices{}); }, T::kBufferSize};
}

const FakeKernel kKernels[] = {
    Kernel<hetrt_cu_add_kernel>("hetrt_cu_add_kernel"),
    Kernel<hetrt_cu_mul_kernel>("hetrt_cu_mul_kernel"),
    Kernel<hetrt_cu_relu_kernel>("hetrt_cu_relu_kernel"),
    Kernel<hetrt_cu_dense_kernel>("hetrt_cu_dense_kernel"),
    Kernel<hetrt_cu_softmax_kernel>("hetrt_cu_softmax_kernel"),
    Kernel<hetrt_cu_conv2d_kernel>("hetrt_cu_conv2d_kernel"),
    Kernel<hetrt_cu_maxpool_kernel>("hetrt_cu_maxpool_kernel"),
    Kernel<hetrt_test_args_kernel>("hetrt_test_args_kernel"),
    Kernel<hetrt_test_shared_kernel>("hetrt_test_shared_kernel"),
    Kernel<hetrt_test_store_kernel>("hetrt_test_store_kernel"),
    Kernel<hetrt_test_gate_kernel>("hetrt_test_gate_kernel"),
    Kernel<TvmFusedAddKernel>("tvmgen_default_fused_add_kernel"),
};

}  // namespace

const FakeKernel* FindKernel(const std::string& name) {
  for (const FakeKernel& k : kKernels)
    if (name == k.name) return &k;
  return nullptr;
}

CUresult RunKernel(const CUctx_st* ctx, const BoundKernel& kernel, Dim3 grid, Dim3 block, unsigned shared_bytes) {
  {
    Lock lock(S().mutex);
    for (uintptr_t p : kernel.pointers)
      if (p != 0 && !Reachable(ctx, p, 1)) return CUDA_ERROR_ILLEGAL_ADDRESS;
  }
  std::vector<unsigned char> dynamic_shared(shared_bytes);
  fake_dynamic_shared = dynamic_shared.data();
  t_kernel_ctx = ctx;
  t_fault = false;
  gridDim = {grid.x, grid.y, grid.z};
  blockDim = {block.x, block.y, block.z};
  for (unsigned z = 0; z < grid.z; ++z)
    for (unsigned y = 0; y < grid.y; ++y)
      for (unsigned x = 0; x < grid.x; ++x)
        for (unsigned tz = 0; tz < block.z; ++tz)
          for (unsigned ty = 0; ty < block.y; ++ty)
            for (unsigned tx = 0; tx < block.x && !t_fault; ++tx) {
              blockIdx = {x, y, z};
              threadIdx = {tx, ty, tz};
              kernel.thread();
            }
  fake_dynamic_shared = nullptr;
  t_kernel_ctx = nullptr;
  return t_fault ? CUDA_ERROR_ILLEGAL_ADDRESS : CUDA_SUCCESS;
}

}  // namespace fake_cuda

bool fake_cuda_reachable(const volatile void* p, size_t n) {
  using namespace fake_cuda;
  Lock lock(S().mutex);
  if (t_kernel_ctx && Reachable(t_kernel_ctx, reinterpret_cast<uintptr_t>(p), n)) return true;
  t_fault = true;
  return false;
}
