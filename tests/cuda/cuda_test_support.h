// What the CUDA tests (tests/cuda/*_test.cc, one cuda_test binary) share:
// module blobs in TVM's layout, the test kernels, the CLI, the fake driver's
// log and personalities, and the device under test.
//
// ctest runs the binary several ways: without a driver (cuda.* names: device
// tests skip "no CUDA device"), on the fake driver tests/cuda/fake_*.cc
// (fake_driver.*, fake_driver_integrated.*), and once per fake driver
// personality (fake_driver.personality_<version>).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cuda_format.h"
#include "hetrt/device/device.h"
#include "hetrt/module/module_loader.h"
#include "hetrt/plugin_host/plugin_registry.h"
#include "kernel_set.h"
#include "test_support.h"

namespace hetrt::cuda_testing {

inline constexpr DLDevice kCu{kDLCUDA, 0};
inline constexpr DLDataType kHandle{kDLOpaqueHandle, 64, 1}, kI32{kDLInt, 32, 1}, kU32{kDLUInt, 32, 1},
    kI64{kDLInt, 64, 1}, kF32{kDLFloat, 32, 1}, kF64{kDLFloat, 64, 1};

std::vector<uint8_t> Bytes(std::string_view s);
std::vector<uint8_t> ReadFile(const std::string& path);

// A CUDA module blob in TVM's layout (the writer is checked against TVM's own
// files in FixtureBlobsRoundTripByteForByte).
struct FunctionSpec {
  std::string name;
  std::vector<DLDataType> args;
  std::vector<std::string> tags{"blockIdx.x", "threadIdx.x"};
  std::string info_name = {};  // TVM writes it empty
};
std::vector<uint8_t> CudaBlob(const std::string& fmt, const std::vector<FunctionSpec>& functions,
                              std::string_view data);
// PTX text declaring `kernel` (what TVM's fmt "ptx" data looks like).
std::string Ptx(const std::string& kernel, const std::string& version = "8.0");
// The `cuda` module inside a TVM library: the bytes after the type key that
// parse as a blob.
std::vector<uint8_t> CudaModuleBytesIn(const std::vector<uint8_t>& file);
// Through the global registry's CUDA plugin.
Result<std::shared_ptr<Module>> LoadCudaBlob(const std::vector<uint8_t>& blob);

inline const char* const kCudaFixtures[] = {"mlp_cuda", "hetero_cuda_seed"};

// The test kernels (tests/cuda/test_kernels.cu) as PTX and as cubins for sm
// 80 / 90 (nvcc at build time; UNIMPLEMENTED without it), as one module.
bool HaveTestKernels();
Result<std::string> TestKernelsPtx();
Result<std::vector<uint8_t>> TestKernelsCubin(int sm);
std::vector<FunctionSpec> TestKernelFunctions();
Result<std::shared_ptr<Module>> TestKernels();
// Calls a kernel as TVM host code does: __tvm_set_device, then the packed
// function (its launch values last).
Status Launch(Module& m, const std::string& kernel, std::vector<hetrt_value_t> args, std::vector<int32_t> codes);
// hetrt_test_store_kernel: y[index] = value.
Status LaunchStore(Module& m, void* y, int64_t index, double value);
// hetrt_test_gate_kernel: waits for *gate, then *passed = 1.
Status LaunchGate(Module& m, void* gate, void* passed);

// ---- The CLI

struct Outcome {
  int exit_code = -1;
  std::string output;  // stdout + stderr
};
Outcome RunCli(const std::string& args, const std::string& env = "");
// With HETRT_CUDA_DRIVER set to the fake driver (13.0).
Outcome RunOnFake(const std::string& args, const std::string& env);
// A folder whose libcuda.so.1 is the toolkit's stub, or "" without one.
std::string StubDriverFolder();
// Environment for a CLI whose core finds only the CPU and CUDA plugins.
std::string CpuAndCudaPluginsOnly();

// ---- The fake driver

// Its library of one personality ("12.4"); "" is the default one (13.0).
std::string FakeDriver(const std::string& personality = "");
// The fake driver's record of launches, copies, waits, ... during `work`.
std::string FakeLog(const std::function<void()>& work);
size_t Count(const std::string& text, const std::string& what);

// ---- The device under test

Plugin* Cu();
bool HaveCudaDevice();
bool OnFakeDriver();
// A zeroed ABI args struct for cuda:0 of `plugin`'s instance (the global one by default).
template <class A>
A CuArgs(Plugin* plugin = nullptr) {
  auto args = AbiArgs<A>();
  args.self = (plugin ? plugin : Cu())->instance();
  args.device = kCu;
  return args;
}
// A registry of its own: another instance of the CUDA plugin (its own
// streams, its own statistics; devices discovered again).
std::unique_ptr<PluginRegistry> OwnRegistry();

// What a test needs that nvcc makes at build time: without the CUDA toolkit
// it is missing ("cuda-toolkit": skipped with the reason, or failed where the
// run requires the toolkit, HETRT_REQUIRE), never a failure of the plugin.
// The test kernels (PTX and cubins of tests/cuda/test_kernels.cu):
#define HETRT_REQUIRE_CUDA_TEST_KERNELS()                                     \
  do {                                                                        \
    if (!::hetrt::cuda_testing::HaveTestKernels())                            \
      HETRT_MISSING("cuda-toolkit",                                           \
                    "built without nvcc (the CUDA toolkit): no test kernels " \
                    "(tests/cuda/test_kernels.cu as PTX and cubins)");        \
  } while (0)
// hetrt's kernel set (kernels/cuda_kernels.cu as PTX) on `device` of
// `plugin`; skipped where that driver cannot compile its PTX.
#define HETRT_REQUIRE_CUDA_KERNEL_SET(plugin, device)                                                          \
  do {                                                                                                         \
    if (::hetrt::Status built_ = ::hetrt::kernels::FunctionName(::hetrt::kernels::Op::kAdd, kDLCUDA).status(); \
        !built_.ok())                                                                                          \
      HETRT_MISSING("cuda-toolkit", built_.message());                                                         \
    if (::hetrt::Status usable_ = ::hetrt::kernels::CudaKernelsRunOn(plugin, device); !usable_.ok())           \
      GTEST_SKIP() << usable_.message();                                                                       \
  } while (0)

// Runs on a GPU, or on the fake driver (ctest's fake_driver.* tests); skips
// without either.
class CudaDevice : public ::testing::Test {
 protected:
  void SetUp() override;
};

}  // namespace hetrt::cuda_testing
