// Drivers the fake stands in for (tests/cuda/fake_*.cc): an old driver, a
// driver without devices, a GPU the fixture has no code for, and each driver
// version the plugin claims to load on: ctest runs CudaPersonality.* once per
// fake driver personality (fake_driver.personality_<version>: 11.4, 12.0,
// 12.4, 12.8, 13.0, each a library exporting only what that driver had).
#include <dlfcn.h>

#include <cstdlib>

#include "cuda_driver.h"
#include "cuda_test_support.h"
#include "device_client.h"
#include "kernel_set.h"

namespace hetrt::cuda_testing {
namespace {

using namespace cuda_api;  // the driver API (plugins/cuda/cuda_driver_api.h)

TEST(CudaFakeDriver, EachWayOfHavingNoDeviceIsNamed) {
  const std::pair<std::string, std::string> cases[] = {
      {"HETRT_CUDA_DRIVER=" + FakeDriver("11.4"), "the CUDA driver is version 11.4 (" + FakeDriver("11.4") + ")"},
      {"HETRT_CUDA_DRIVER=" + FakeDriver("11.4"), "); the CUDA plugin needs 12.0 or newer"},
      {"HETRT_FAKE_CUDA_INIT=100", "no CUDA-capable device (the driver 13.0 found none)"},
      {"HETRT_FAKE_CUDA_DEVICES=0", "no CUDA-capable device"},
      {"HETRT_FAKE_CUDA_INIT=34", "the CUDA driver is the toolkit's stub library"},
      {"HETRT_FAKE_CUDA_INIT=999", "cuInit failed: CUresult (999)"},
  };
  for (const auto& [env, reason] : cases) {
    const Outcome o = env.starts_with("HETRT_CUDA_DRIVER=") ? RunCli("plugins", env) : RunOnFake("plugins", env);
    EXPECT_NE(o.output.find("device cuda: 0 device(s) - " + (reason[0] == ')' ? "" : reason)), std::string::npos)
        << env << "\n"
        << o.output;
    EXPECT_NE(o.output.find(reason), std::string::npos) << env << "\n" << o.output;
  }
  // Entry points found by dlsym where cuGetProcAddress finds none.
  const Outcome o = RunOnFake("plugins", "HETRT_FAKE_CUDA_NO_PROC_ADDRESS=1");
  EXPECT_NE(o.output.find("cuda:0: hetrt fake CUDA device 0, compute 8.0, 4 SMs, driver 13.0"), std::string::npos)
      << o.output;
}

TEST(CudaFakeDriver, DemoLeavesCudaOutWhenTheDriverCannotCompileTheKernelSet) {
  if (Status built = kernels::FunctionName(kernels::Op::kAdd, kDLCUDA).status(); !built.ok())
    HETRT_MISSING("cuda-toolkit", built.message());
  const Outcome o = RunCli("demo", CpuAndCudaPluginsOnly() + " HETRT_CUDA_DRIVER=" + FakeDriver("12.4"));
  EXPECT_EQ(o.exit_code, 0) << o.output;
  EXPECT_NE(o.output.find("device cuda: not used (hetrt's CUDA kernels are PTX 9.x, which needs a CUDA 13 driver; "
                          "cuda:0 has 12.4)"),
            std::string::npos)
      << o.output;
}

TEST(CudaFakeDriver, ModulesWithoutCodeForTheGpuSaySo) {
  HETRT_REQUIRE_FIXTURE(dir, "hetero_cuda_seed");
  const Outcome o = RunOnFake("run " + dir + "/deploy.so --device cpu --device cuda --inputs " + dir + "/inputs.params",
                              "HETRT_FAKE_CUDA_SM=90");
  EXPECT_EQ(o.exit_code, 1) << o.output;
  EXPECT_NE(o.output.find("cuda:0 (hetrt fake CUDA device 0): loading the module of kernel "
                          "'tvmgen_default_fused_add_kernel' (fatbin: sm_80 cubin): it has no code for this GPU "
                          "(compute 9.0): CUDA_ERROR_NO_BINARY_FOR_GPU (209)"),
            std::string::npos)
      << o.output;
}

// ------------------------------------------------------------ one personality

// The fake driver personality this process runs on ($HETRT_CUDA_DRIVER).
class CudaPersonality : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* library = std::getenv("HETRT_CUDA_DRIVER");
    if (library == nullptr || !std::string(library).starts_with(HETRT_FAKE_CUDA_DIR))
      GTEST_SKIP() << "runs on a fake driver personality (ctest: fake_driver.personality_<version>)";
    library_ = library;
    handle_ = dlopen(library, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(handle_, nullptr) << dlerror();
    auto get_version = reinterpret_cast<PFN_cuDriverGetVersion_v2020>(dlsym(handle_, "cuDriverGetVersion"));
    ASSERT_NE(get_version, nullptr);
    ASSERT_EQ(get_version(&version_), CUDA_SUCCESS);
    ASSERT_NE(library_.find("/" + cuda::VersionString(version_) + "/"), std::string::npos)
        << library_ << " says it is " << version_;
  }
  void TearDown() override {
    if (handle_) dlclose(handle_);
  }
  void* Symbol(const char* name) const { return dlsym(handle_, name); }

  std::string library_;
  void* handle_ = nullptr;
  int version_ = 0;
};

// A driver has every variant introduced up to its version, and no later one.
TEST_F(CudaPersonality, ExportsOnlyTheVariantsItsVersionHad) {
  const std::pair<const char*, int> variants[] = {
      {"cuInit", 2000},           {"cuMemAlloc", 2000},        {"cuMemAlloc_v2", 3020},
      {"cuEventElapsedTime", 2000}, {"cuGetProcAddress", 11030}, {"cuGetProcAddress_v2", 12000},
      {"cuEventElapsedTime_v2", 12080},
  };
  for (const auto& [symbol, introduced] : variants)
    EXPECT_EQ(Symbol(symbol) != nullptr, introduced <= version_) << symbol << " in " << version_;
  // Nothing but the driver API: the fake's own functions stay inside.
  EXPECT_EQ(Symbol("cuStreamBeginCapture_v2"), nullptr);
  EXPECT_EQ(Symbol("fake_cuda_reachable"), nullptr);
  EXPECT_EQ(Symbol("_ZN9fake_cuda13DriverVersionEv"), nullptr);
}

// NVIDIA's rules for cuGetProcAddress (cuda_driver.h quotes them).
TEST_F(CudaPersonality, GetProcAddressFollowsTheDocumentedVersionRules) {
  if (version_ < 12000) {
    EXPECT_EQ(Symbol("cuGetProcAddress_v2"), nullptr);
    auto v1 = reinterpret_cast<PFN_cuGetProcAddress_v11030>(Symbol("cuGetProcAddress"));
    ASSERT_NE(v1, nullptr);
    void* fn = nullptr;
    EXPECT_EQ(v1("cuMemAlloc", &fn, 3020, CU_GET_PROC_ADDRESS_LEGACY_STREAM), CUDA_SUCCESS);
    EXPECT_EQ(fn, Symbol("cuMemAlloc_v2"));
    return;
  }
  auto get = reinterpret_cast<PFN_cuGetProcAddress_v12000>(Symbol("cuGetProcAddress_v2"));
  ASSERT_NE(get, nullptr);
  struct Case {
    const char* name;
    int cuda_version;
    CUresult result;
    CUdriverProcAddressQueryResult status;
    const char* symbol;  // what pfn must be; NULL: NULL
  };
  const bool has_v2_elapsed = version_ >= 12080;
  const Case cases[] = {
      // The newest variant introduced at or before the version asked for.
      {"cuMemAlloc", 3020, CUDA_SUCCESS, CU_GET_PROC_ADDRESS_SUCCESS, "cuMemAlloc_v2"},
      {"cuMemAlloc", 2000, CUDA_SUCCESS, CU_GET_PROC_ADDRESS_SUCCESS, "cuMemAlloc"},
      {"cuMemAlloc", 12000, CUDA_SUCCESS, CU_GET_PROC_ADDRESS_SUCCESS, "cuMemAlloc_v2"},
      {"cuEventElapsedTime", 2000, CUDA_SUCCESS, CU_GET_PROC_ADDRESS_SUCCESS, "cuEventElapsedTime"},
      {"cuEventElapsedTime", version_, CUDA_SUCCESS, CU_GET_PROC_ADDRESS_SUCCESS,
       has_v2_elapsed ? "cuEventElapsedTime_v2" : "cuEventElapsedTime"},
      // Older than the first variant; a name no driver has.
      {"cuFuncSetAttribute", 8000, CUDA_SUCCESS, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT, nullptr},
      {"cuNoSuchFunction", 12000, CUDA_SUCCESS, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND, nullptr},
      // Newer than the driver: refused where the documentation says so (13.0),
      // answered for the driver's own version before.
      {"cuEventElapsedTime", 13010, version_ >= 13000 ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS,
       version_ >= 13000 ? CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND : CU_GET_PROC_ADDRESS_SUCCESS,
       version_ >= 13000 ? nullptr : has_v2_elapsed ? "cuEventElapsedTime_v2" : "cuEventElapsedTime"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.name) + " at " + std::to_string(c.cuda_version) + " on " + std::to_string(version_));
    void* fn = reinterpret_cast<void*>(1);
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    EXPECT_EQ(get(c.name, &fn, c.cuda_version, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &status), c.result);
    EXPECT_EQ(fn, c.symbol ? Symbol(c.symbol) : nullptr);
    if (c.result == CUDA_SUCCESS) {
      EXPECT_EQ(status, c.status);
    }
  }
}

// The plugin's probe (the same code, linked into this test) gets exactly the
// variant its table names for every entry point, asking at that variant's
// version; a driver older than 12.0 is refused naming both versions.
TEST_F(CudaPersonality, ThePluginResolvesExactlyTheVariantsItNames) {
  cuda::DriverProbe probe;
  const std::string log = FakeLog([&] { probe = cuda::ProbeDriver(library_); });
  if (version_ < cuda::kMinDriverVersion) {
    EXPECT_EQ(probe.driver, nullptr);
    EXPECT_EQ(probe.reason, "the CUDA driver is version " + cuda::VersionString(version_) + " (" + library_ +
                                "); the CUDA plugin needs 12.0 or newer");
    return;
  }
  ASSERT_NE(probe.driver, nullptr) << probe.reason;
  EXPECT_EQ(probe.driver->version, version_);
  EXPECT_EQ(probe.device_count, 2);
#define HETRT_CHECK_VARIANT(name, symbol, version)                                                            \
  EXPECT_EQ(reinterpret_cast<void*>(probe.driver->name), Symbol(#symbol)) << #name " is not " #symbol;        \
  if (!log.empty()) {                                                                                         \
    EXPECT_NE(log.find("proc " #name " " #version " -> " #symbol "\n"), std::string::npos) << #name << log; \
  }
  HETRT_CUDA_DRIVER_FUNCTIONS(HETRT_CHECK_VARIANT)
#undef HETRT_CHECK_VARIANT
}

// What the plugin claims for each driver it accepts: it loads there, lists
// the devices, runs a kernel between two timing events and times it.
TEST_F(CudaPersonality, LoadsListsItsDevicesRunsAKernelAndTimesIt) {
  Plugin* plugin = PluginRegistry::Global().ForTypeKey("cuda").value();
  HETRT_ASSERT_OK_AND_ASSIGN(auto count, plugin->CountDevices(kDLCUDA));
  if (version_ < cuda::kMinDriverVersion) {
    EXPECT_EQ(count.count, 0);
    EXPECT_NE(count.unavailable_reason.find("the CUDA plugin needs 12.0 or newer"), std::string::npos)
        << count.unavailable_reason;
    return;
  }
  ASSERT_EQ(count.count, 2) << count.unavailable_reason;
  for (int id = 0; id < 2; ++id)
    EXPECT_EQ(plugin->DeviceName({kDLCUDA, id}), "hetrt fake CUDA device " + std::to_string(id) +
                                                     ", compute 8.0, 4 SMs, driver " + cuda::VersionString(version_));
  // The plugin's own sample (c = a + b, PTX 6.0 that every driver reads).
  auto sample = AbiArgs<hetrt_module_sample_args_t>();
  sample.self = plugin->instance();
  sample.device = kCu;
  HETRT_ASSERT_OK(plugin->Consume(plugin->module_api()->sample(&sample)));
  HETRT_ASSERT_OK_AND_ASSIGN(auto module, LoadCudaBlob({sample.data, sample.data + sample.size}));
  constexpr int kCount = 1000;
  const Device cu(plugin, kCu);
  std::vector<float> a(kCount), b(kCount), c(kCount);
  for (int i = 0; i < kCount; ++i) a[i] = 0.5f * static_cast<float>(i), b[i] = static_cast<float>(i % 7);
  void* buffers[3] = {};
  for (void*& buffer : buffers) {
    HETRT_ASSERT_OK_AND_ASSIGN(auto allocation, cu.Allocate(kCount * sizeof(float)));
    buffer = allocation.data;
  }
  HETRT_ASSERT_OK(cu.Copy(a.data(), 0, {kDLCPU, 0}, buffers[0], 0, kCu, kCount * sizeof(float)));
  HETRT_ASSERT_OK(cu.Copy(b.data(), 0, {kDLCPU, 0}, buffers[1], 0, kCu, kCount * sizeof(float)));
  HETRT_ASSERT_OK_AND_ASSIGN(hetrt_event_t * start, cu.NewEvent(HETRT_EVENT_TIMING));
  HETRT_ASSERT_OK_AND_ASSIGN(hetrt_event_t * end, cu.NewEvent(HETRT_EVENT_TIMING));
  double ms = -1;
  const std::string log = FakeLog([&] {
    EXPECT_TRUE(cu.Record(start, nullptr).ok());
    EXPECT_TRUE(Launch(*module, sample.function_name,
                       {{.v_handle = buffers[0]},
                        {.v_handle = buffers[1]},
                        {.v_handle = buffers[2]},
                        {.v_int64 = kCount},
                        {.v_int64 = 4},
                        {.v_int64 = 256}},
                       {HETRT_TYPE_HANDLE, HETRT_TYPE_HANDLE, HETRT_TYPE_HANDLE, HETRT_TYPE_INT, HETRT_TYPE_INT,
                        HETRT_TYPE_INT})
                    .ok());
    EXPECT_TRUE(cu.Record(end, nullptr).ok());
    auto elapsed = cu.ElapsedMs(start, end);
    EXPECT_TRUE(elapsed.ok()) << elapsed.status().message();
    if (elapsed.ok()) ms = *elapsed;
  });
  EXPECT_GE(ms, 0);
  EXPECT_NE(log.find("launch hetrt_cu_add_kernel grid=4,1,1 block=256,1,1"), std::string::npos) << log;
  EXPECT_NE(log.find("elapsed cuEventElapsedTime start="), std::string::npos) << "not the 2.0 variant:\n" << log;
  EXPECT_EQ(log.find("old variant called"), std::string::npos) << log;
  HETRT_ASSERT_OK(cu.Copy(buffers[2], 0, kCu, c.data(), 0, {kDLCPU, 0}, kCount * sizeof(float)));
  for (int i = 0; i < kCount; ++i) ASSERT_EQ(c[i], a[i] + b[i]) << i;
  for (hetrt_event_t* e : {start, end}) HETRT_ASSERT_OK(cu.DestroyEvent(e));
  for (void* buffer : buffers) HETRT_ASSERT_OK(cu.Free(buffer));
}

}  // namespace
}  // namespace hetrt::cuda_testing
