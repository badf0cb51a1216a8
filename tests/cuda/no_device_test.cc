// Without a device: the plugin loads and says why there is none (no driver,
// the toolkit's stub, ...); running a CUDA model fails with that reason and
// exit code 1.
#include <filesystem>

#include "cuda_driver.h"
#include "cuda_test_support.h"

namespace hetrt::cuda_testing {
namespace {

// ------------------------------------------------------------ no device

TEST(CudaDriver, ProbingNamesWhatIsMissing) {
  auto missing = cuda::ProbeDriver("/nonexistent/libcuda.so.1");
  EXPECT_EQ(missing.driver, nullptr);
  EXPECT_NE(missing.reason.find("CUDA driver '/nonexistent/libcuda.so.1' could not be opened"), std::string::npos)
      << missing.reason;
  const std::string stub = "/usr/local/cuda/lib64/stubs/libcuda.so";
  if (!std::filesystem::exists(stub)) GTEST_SKIP() << "no toolkit stub at " << stub;
  auto stubbed = cuda::ProbeDriver(stub);
  EXPECT_EQ(stubbed.driver, nullptr);
  EXPECT_EQ(stubbed.reason.rfind("the CUDA driver is the toolkit's stub library", 0), 0u) << stubbed.reason;
}

TEST(CudaNoDevice, PluginsNamesTheReasonForEachWayOfHavingNoDevice) {
  // Unset HETRT_CUDA_DRIVER: ctest runs this suite on a fake driver too.
  const std::string env = "env -u HETRT_CUDA_DRIVER";
  const Outcome listed = RunCli("plugins", env);
  ASSERT_EQ(listed.exit_code, 0) << listed.output;
  const std::string abi =
      "(ABI " + std::to_string(HETRT_PLUGIN_ABI_MAJOR) + "." + std::to_string(HETRT_PLUGIN_ABI_MINOR) + ")";
  EXPECT_NE(listed.output.find("cuda 0.1.0 " + abi), std::string::npos) << listed.output;
  EXPECT_NE(listed.output.find("type_keys: cuda"), std::string::npos) << listed.output;
  if (cuda::ProbeDriver("libcuda.so.1").driver == nullptr && getenv("LD_LIBRARY_PATH") == nullptr) {
    EXPECT_NE(listed.output.find("device cuda: 0 device(s) - libcuda.so.1 not found (no NVIDIA driver installed)"),
              std::string::npos)
        << listed.output;
  }
  const std::string stub = StubDriverFolder();
  if (!stub.empty()) {
    const Outcome o = RunCli("plugins", env + " LD_LIBRARY_PATH=" + stub);
    EXPECT_NE(o.output.find("device cuda: 0 device(s) - the CUDA driver is the toolkit's stub library"),
              std::string::npos)
        << o.output;
  }
  const Outcome o = RunCli("plugins", "HETRT_CUDA_DRIVER=/nonexistent/libcuda.so.1");
  EXPECT_NE(o.output.find("device cuda: 0 device(s) - CUDA driver '/nonexistent/libcuda.so.1' could not be opened"),
            std::string::npos)
      << o.output;
}

TEST(CudaNoDevice, InspectShowsTheModuleAndWhyItCannotRunHere) {
  const std::string stub = StubDriverFolder();
  if (stub.empty()) GTEST_SKIP() << "no toolkit stub to stand in for a machine without a driver";
  const std::string env = "env -u HETRT_CUDA_DRIVER LD_LIBRARY_PATH=" + stub;
  for (const char* model : kCudaFixtures) {
    HETRT_REQUIRE_FIXTURE(dir, model);
    const Outcome o = RunCli("inspect " + dir + "/deploy.so", env);
    ASSERT_EQ(o.exit_code, 0) << o.output;
    EXPECT_NE(o.output.find("- cuda: from plugin 'cuda'"), std::string::npos) << o.output;
    EXPECT_NE(o.output.find("_kernel"), std::string::npos) << o.output;
    EXPECT_NE(o.output.find("not available here: device cuda:0 not available from plugin 'cuda': no cuda device is "
                            "available: the CUDA driver is the toolkit's stub library"),
              std::string::npos)
        << o.output;
  }
}

TEST(CudaNoDevice, RunningACudaModelFailsWithTheReasonAndExitCode1) {
  const std::string stub = StubDriverFolder();
  for (const char* model : kCudaFixtures) {
    HETRT_REQUIRE_FIXTURE(dir, model);
    for (const std::string& env : {std::string("HETRT_CUDA_DRIVER=/nonexistent/libcuda.so.1"),
                                   stub.empty() ? "" : "env -u HETRT_CUDA_DRIVER LD_LIBRARY_PATH=" + stub}) {
      if (env.empty()) continue;
      SCOPED_TRACE(std::string(model) + " with " + env);
      const Outcome o =
          RunCli("run " + dir + "/deploy.so --device cpu --device cuda --inputs " + dir + "/inputs.params", env);
      EXPECT_EQ(o.exit_code, 1) << o.output;
      EXPECT_NE(o.output.find("device cuda:0 not available from plugin 'cuda': no cuda device is available: "),
                std::string::npos)
          << o.output;
      // So does bench, and a run that names no CUDA device says what to add.
      EXPECT_EQ(RunCli("bench " + dir + "/deploy.so --device cpu --device cuda --repeat 1", env).exit_code, 1);
    }
  }
}

TEST(CudaNoDevice, KernelsAndDeviceCallsFailWithTheReasonNotACrash) {
  if (HaveCudaDevice()) GTEST_SKIP() << "a CUDA device is present";
  HETRT_REQUIRE_FIXTURE(dir, "hetero_cuda_seed");
  Plugin* plugin = PluginRegistry::Global().ForTypeKey("cuda").value();
  HETRT_ASSERT_OK_AND_ASSIGN(auto count, plugin->CountDevices(kDLCUDA));
  EXPECT_EQ(count.count, 0);
  EXPECT_FALSE(count.unavailable_reason.empty());
  // The module loads (lazily: nothing touches a device until a kernel runs)...
  const auto bytes = CudaModuleBytesIn(ReadFile(dir + "/deploy.so"));
  HETRT_ASSERT_OK_AND_ASSIGN(auto m, LoadCudaBlob(bytes));
  EXPECT_EQ(m->ListFunctionNames(), std::vector<std::string>{"tvmgen_default_fused_add_kernel"});
  HETRT_ASSERT_OK_AND_ASSIGN(const PackedFunc* f, m->GetFunction("tvmgen_default_fused_add_kernel"));
  ASSERT_NE(f, nullptr);
  // ... and a launch says there is no device, and why.
  hetrt_value_t args[5] = {
      {.v_handle = nullptr}, {.v_handle = nullptr}, {.v_handle = nullptr}, {.v_int64 = 1}, {.v_int64 = 5}};
  int32_t codes[5] = {HETRT_TYPE_NULL, HETRT_TYPE_NULL, HETRT_TYPE_NULL, HETRT_TYPE_INT, HETRT_TYPE_INT};
  Status s = CallPackedFunc(*f, args, codes, 5);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("CUDA kernel 'tvmgen_default_fused_add_kernel': no CUDA device 0 (" +
                             count.unavailable_reason + ")"),
            std::string::npos)
      << s.message();
  // Device calls name the reason too.
  auto alloc = Tensor::Empty({4}, kF32, plugin->DeviceAllocator(kCu));
  ASSERT_FALSE(alloc.ok());
  EXPECT_NE(alloc.status().message().find(count.unavailable_reason), std::string::npos) << alloc.status().message();
  EXPECT_FALSE(plugin->CanCopy({kDLCPU, 0}, kCu));
}

}  // namespace
}  // namespace hetrt::cuda_testing
