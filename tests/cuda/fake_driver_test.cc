// The fake driver is as strict as a driver where it matters to the plugin,
// checked here through its C API (ctest: fake_driver.FakeCudaDriver.*): work
// queued on a stream runs later and in order, the legacy NULL stream orders
// itself with blocking streams only, unknown kernels and wrong parameter
// buffers are refused, unknown memory is not freed, device memory runs out.
#include <chrono>
#include <cstring>
#include <thread>

#include "cuda_driver.h"
#include "cuda_test_support.h"

namespace hetrt::cuda_testing {
namespace {

using namespace cuda_api;  // the driver API (plugins/cuda/cuda_driver_api.h)
using namespace std::chrono_literals;

// The default fake driver (13.0) with cuda:0's primary context current and
// the test kernels loaded.
class FakeCudaDriver : public ::testing::Test {
 protected:
  void SetUp() override {
    HETRT_REQUIRE_CUDA_TEST_KERNELS();
    const cuda::DriverProbe probe = cuda::ProbeDriver(FakeDriver());
    ASSERT_NE(probe.driver, nullptr) << probe.reason;
    cu_ = probe.driver;
    ASSERT_EQ(cu_->cuDevicePrimaryCtxRetain(&ctx_, 0), CUDA_SUCCESS);
    ASSERT_EQ(cu_->cuCtxSetCurrent(ctx_), CUDA_SUCCESS);
    HETRT_ASSERT_OK_AND_ASSIGN(ptx_, TestKernelsPtx());
    ASSERT_EQ(cu_->cuModuleLoadDataEx(&module_, ptx_.c_str(), 0, nullptr, nullptr), CUDA_SUCCESS);
  }
  void TearDown() override {
    if (module_) {
      EXPECT_EQ(cu_->cuModuleUnload(module_), CUDA_SUCCESS);
    }
    if (ctx_) {
      EXPECT_EQ(cu_->cuDevicePrimaryCtxRelease(0), CUDA_SUCCESS);
    }
  }
  CUfunction Function(const char* name) {
    CUfunction f = nullptr;
    EXPECT_EQ(cu_->cuModuleGetFunction(&f, module_, name), CUDA_SUCCESS) << name;
    return f;
  }
  CUdeviceptr Alloc(size_t bytes) {
    CUdeviceptr p = 0;
    EXPECT_EQ(cu_->cuMemAlloc(&p, bytes), CUDA_SUCCESS);
    return p;
  }
  // hetrt_test_gate_kernel on `stream`, waiting for *gate.
  void LaunchGate(CUstream stream, int* gate, CUdeviceptr passed) {
    void* params[] = {&gate, &passed};
    EXPECT_EQ(cu_->cuLaunchKernel(Function("hetrt_test_gate_kernel"), 1, 1, 1, 1, 1, 1, 0, stream, params, nullptr),
              CUDA_SUCCESS);
  }
  bool CompletesSoon(CUevent event) {
    for (auto deadline = std::chrono::steady_clock::now() + 10s; std::chrono::steady_clock::now() < deadline;) {
      const CUresult r = cu_->cuEventQuery(event);
      if (r != CUDA_ERROR_NOT_READY) return r == CUDA_SUCCESS;
      std::this_thread::sleep_for(1ms);
    }
    return false;
  }

  const cuda::Driver* cu_ = nullptr;
  CUcontext ctx_ = nullptr;
  CUmodule module_ = nullptr;
  std::string ptx_;
};

TEST_F(FakeCudaDriver, KernelsTheImageLacksOrTheFakeCannotRunAreNotFound) {
  CUfunction f = nullptr;
  EXPECT_EQ(cu_->cuModuleGetFunction(&f, module_, "hetrt_test_absent_kernel"), CUDA_ERROR_NOT_FOUND);
  CUmodule other = nullptr;
  const std::string ptx = Ptx("tvmgen_default_fused_dense_kernel", "9.0");
  ASSERT_EQ(cu_->cuModuleLoadDataEx(&other, ptx.c_str(), 0, nullptr, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(cu_->cuModuleGetFunction(&f, other, "tvmgen_default_fused_dense_kernel"), CUDA_ERROR_NOT_FOUND);
  EXPECT_EQ(cu_->cuModuleGetFunction(&f, other, "tvmgen_default_fused"), CUDA_ERROR_NOT_FOUND) << "a prefix";
  EXPECT_EQ(cu_->cuModuleUnload(other), CUDA_SUCCESS);
  EXPECT_EQ(cu_->cuModuleGetFunction(&f, module_, "hetrt_test_store_kernel"), CUDA_SUCCESS);
}

// Parameters in one buffer (`extra`) must take exactly the kernel's size.
TEST_F(FakeCudaDriver, ParameterBuffersMustHaveTheKernelsSize) {
  CUfunction store = Function("hetrt_test_store_kernel");  // (float* y, int index, float value): 16 bytes
  const CUdeviceptr y = Alloc(4 * sizeof(float));
  unsigned char buffer[16] = {};
  const int index = 2;
  const float value = 3.5f;
  std::memcpy(buffer, &y, 8);
  std::memcpy(buffer + 8, &index, 4);
  std::memcpy(buffer + 12, &value, 4);
  for (size_t size : {size_t{12}, size_t{20}, size_t{16}}) {
    void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, buffer, CU_LAUNCH_PARAM_BUFFER_SIZE, &size, CU_LAUNCH_PARAM_END};
    EXPECT_EQ(cu_->cuLaunchKernel(store, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, extra),
              size == 16 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE)
        << size << " bytes";
  }
  float back[4] = {};
  ASSERT_EQ(cu_->cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(back), y, sizeof back, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(back[2], 3.5f);
  // Both ways at once, or neither.
  void* params[] = {&buffer, &buffer, &buffer};
  size_t size = 16;
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, buffer, CU_LAUNCH_PARAM_BUFFER_SIZE, &size, CU_LAUNCH_PARAM_END};
  EXPECT_EQ(cu_->cuLaunchKernel(store, 1, 1, 1, 1, 1, 1, 0, nullptr, params, extra), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cu_->cuLaunchKernel(store, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cu_->cuMemFree(y), CUDA_SUCCESS);
}

TEST_F(FakeCudaDriver, FreeingMemoryItDidNotAllocateFails) {
  int host = 0;
  EXPECT_EQ(cu_->cuMemFree(reinterpret_cast<CUdeviceptr>(&host)), CUDA_ERROR_INVALID_VALUE);
  const CUdeviceptr y = Alloc(64);
  EXPECT_EQ(cu_->cuMemFreeHost(reinterpret_cast<void*>(y)), CUDA_ERROR_INVALID_VALUE) << "device memory as host";
  EXPECT_EQ(cu_->cuMemFree(y + 16), CUDA_ERROR_INVALID_VALUE) << "inside an allocation";
  EXPECT_EQ(cu_->cuMemFree(y), CUDA_SUCCESS);
  EXPECT_EQ(cu_->cuMemFree(y), CUDA_ERROR_INVALID_VALUE) << "twice";
}

TEST_F(FakeCudaDriver, DeviceMemoryRunsOutAtItsTotal) {
  size_t free = 0, total = 0;
  ASSERT_EQ(cu_->cuMemGetInfo(&free, &total), CUDA_SUCCESS);
  CUdeviceptr p = 0;
  EXPECT_EQ(cu_->cuMemAlloc(&p, total + 1), CUDA_ERROR_OUT_OF_MEMORY);
  const CUdeviceptr half = Alloc(free / 2);
  size_t after = 0;
  ASSERT_EQ(cu_->cuMemGetInfo(&after, &total), CUDA_SUCCESS);
  EXPECT_LE(after, free - free / 2);
  EXPECT_EQ(cu_->cuMemAlloc(&p, free / 2 + 4096), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(cu_->cuMemFree(half), CUDA_SUCCESS);
}

// A context is needed, per thread, for what belongs to one.
TEST_F(FakeCudaDriver, CallsWithoutACurrentContextAreRefused) {
  std::thread([&] {
    CUdeviceptr p = 0;
    EXPECT_EQ(cu_->cuMemAlloc(&p, 64), CUDA_ERROR_INVALID_CONTEXT);
    CUstream s = nullptr;
    EXPECT_EQ(cu_->cuStreamCreate(&s, 0), CUDA_ERROR_INVALID_CONTEXT);
  }).join();
}

// The legacy NULL stream waits for, and is waited for by, blocking streams
// only: a non-blocking stream runs past work held up on it.
TEST_F(FakeCudaDriver, TheLegacyStreamOrdersBlockingStreamsOnly) {
  void* gate_memory = nullptr;
  ASSERT_EQ(cu_->cuMemHostAlloc(&gate_memory, sizeof(int), CU_MEMHOSTALLOC_PORTABLE), CUDA_SUCCESS);
  int* gate = static_cast<int*>(gate_memory);
  __atomic_store_n(gate, 0, __ATOMIC_RELEASE);
  const CUdeviceptr passed = Alloc(sizeof(int));
  CUstream blocking = nullptr, non_blocking = nullptr;
  ASSERT_EQ(cu_->cuStreamCreate(&blocking, 0), CUDA_SUCCESS);
  ASSERT_EQ(cu_->cuStreamCreate(&non_blocking, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  CUevent on_blocking = nullptr, on_non_blocking = nullptr;
  ASSERT_EQ(cu_->cuEventCreate(&on_blocking, 0), CUDA_SUCCESS);
  ASSERT_EQ(cu_->cuEventCreate(&on_non_blocking, 0), CUDA_SUCCESS);
  LaunchGate(nullptr, gate, passed);  // the legacy stream waits at the gate
  ASSERT_EQ(cu_->cuEventRecord(on_blocking, blocking), CUDA_SUCCESS);
  ASSERT_EQ(cu_->cuEventRecord(on_non_blocking, non_blocking), CUDA_SUCCESS);
  EXPECT_TRUE(CompletesSoon(on_non_blocking));
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(cu_->cuEventQuery(on_blocking), CUDA_ERROR_NOT_READY);
  __atomic_store_n(gate, 1, __ATOMIC_RELEASE);
  EXPECT_EQ(cu_->cuEventSynchronize(on_blocking), CUDA_SUCCESS);
  int ran = 0;
  ASSERT_EQ(cu_->cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(&ran), passed, sizeof ran, blocking), CUDA_SUCCESS);
  EXPECT_EQ(ran, 1);
  for (CUevent e : {on_blocking, on_non_blocking}) EXPECT_EQ(cu_->cuEventDestroy(e), CUDA_SUCCESS);
  for (CUstream s : {blocking, non_blocking}) EXPECT_EQ(cu_->cuStreamDestroy(s), CUDA_SUCCESS);
  EXPECT_EQ(cu_->cuMemFree(passed), CUDA_SUCCESS);
  EXPECT_EQ(cu_->cuMemFreeHost(gate_memory), CUDA_SUCCESS);
}

// Work runs on the stream's own thread, after the call returned: the copy
// into device memory lands only once the stream gets past the gate.
TEST_F(FakeCudaDriver, StreamWorkRunsLaterAndInOrder) {
  void* gate_memory = nullptr;
  ASSERT_EQ(cu_->cuMemHostAlloc(&gate_memory, 2 * sizeof(int), CU_MEMHOSTALLOC_PORTABLE), CUDA_SUCCESS);
  int* gate = static_cast<int*>(gate_memory);
  __atomic_store_n(gate, 0, __ATOMIC_RELEASE);
  CUstream stream = nullptr;
  ASSERT_EQ(cu_->cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  const CUdeviceptr passed = Alloc(sizeof(int));
  LaunchGate(stream, gate, passed);
  const int seven = 7;
  ASSERT_EQ(cu_->cuMemcpyAsync(passed, reinterpret_cast<CUdeviceptr>(&seven), sizeof seven, stream), CUDA_SUCCESS);
  CUevent copied = nullptr;
  ASSERT_EQ(cu_->cuEventCreate(&copied, 0), CUDA_SUCCESS);
  ASSERT_EQ(cu_->cuEventRecord(copied, stream), CUDA_SUCCESS);
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(cu_->cuEventQuery(copied), CUDA_ERROR_NOT_READY);
  __atomic_store_n(gate, 1, __ATOMIC_RELEASE);
  ASSERT_EQ(cu_->cuStreamSynchronize(stream), CUDA_SUCCESS);
  EXPECT_EQ(cu_->cuEventQuery(copied), CUDA_SUCCESS);
  int value = 0;
  ASSERT_EQ(cu_->cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(&value), passed, sizeof value, stream), CUDA_SUCCESS);
  EXPECT_EQ(value, 7) << "the gate kernel's 1 landed after the copy";
  EXPECT_EQ(cu_->cuEventDestroy(copied), CUDA_SUCCESS);
  EXPECT_EQ(cu_->cuStreamDestroy(stream), CUDA_SUCCESS);
  EXPECT_EQ(cu_->cuMemFree(passed), CUDA_SUCCESS);
  EXPECT_EQ(cu_->cuMemFreeHost(gate_memory), CUDA_SUCCESS);
}

}  // namespace
}  // namespace hetrt::cuda_testing
