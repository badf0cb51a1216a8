// The OpenCL plugin on a real OpenCL device (PoCL in CI): TVM's heterogeneous
// fixtures, program builds, caches and failure paths. What every backend does
// (memory, copies, streams, events, instances) is the conformance kit (sdk/conformance/).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>

#include "fixture_runs.h"
#include "hetrt/base/dtype.h"
#include "hetrt/device/device.h"
#include "hetrt/exec/graph_model.h"
#include "hetrt/module/module_loader.h"
#include "test_support.h"

namespace hetrt {
namespace {

constexpr DLDevice kCl{kDLOpenCL, 0};

nlohmann::json ReadJson(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

using testing::ReadText;

// A fixture TVM built for OpenCL (one of its meta.json targets).
bool TargetsOpenCl(const std::string& model) {
  const auto meta = ReadJson(testing::TvmFixture(model) + "/meta.json");
  if (!meta.contains("targets")) return false;
  for (const auto& t : meta["targets"])
    if (t.get<std::string>().rfind("opencl", 0) == 0) return true;
  return false;
}

// The device list TVM's factory default() was called with (meta.json).
std::vector<DLDevice> FactoryDevices(const std::string& dir) {
  std::vector<DLDevice> devices;
  const auto meta = ReadJson(dir + "/meta.json");
  for (const auto& d : meta["device_order_for_factory_default"]) {
    std::string s = d.get<std::string>();  // "opencl(0)"
    s[s.find('(')] = ':';
    s.pop_back();
    devices.push_back(ParseDevice(s).value());
  }
  return devices;
}

using OpenClOnFixture = testing::PerFixtureTest;
HETRT_INSTANTIATE_PER_FIXTURE(Tvm, OpenClOnFixture,
                              testing::FixtureParams(testing::TvmFixtureModels(), "OpenCL fixtures", TargetsOpenCl));

TEST_P(OpenClOnFixture, MatchesTvmThroughApiAndCli) {
  HETRT_REQUIRE_OPENCL();
  const std::string dir = testing::TvmFixture(fixture());
  testing::ExpectFixtureMatchesInEveryMode(dir, FactoryDevices(dir));
  testing::ExpectCliRunMatches(HETRT_CLI, dir, FactoryDevices(dir));
}

TEST(OpenCl, InputsPlacedOnTheDeviceLiveInOpenClMemory) {
  HETRT_REQUIRE_OPENCL();
  HETRT_REQUIRE_FIXTURE(dir, "hetero_opencl_seed");
  GraphExecutor::Options options;
  options.devices = {{kDLCPU, 0}, kCl};
  HETRT_ASSERT_OK_AND_ASSIGN(GraphModel m, OpenGraphModel({dir + "/deploy.so"}, options));
  EXPECT_EQ(m.executor->InputTensor(m.executor->InputIndex("x")).device().device_type, kDLOpenCL);
  EXPECT_EQ(m.executor->OutputTensor(0).device().device_type, kDLCPU);
  // Without an OpenCL device in the list, the placement error says what to add.
  auto cpu_only = OpenGraphModel({dir + "/deploy.so"}, {});
  ASSERT_FALSE(cpu_only.ok());
  EXPECT_NE(cpu_only.status().message().find("add --device opencl"), std::string::npos) << cpu_only.status().message();
}

// An OpenCL module blob: fmt, one function, source.
std::vector<uint8_t> ClBlob(const std::string& kernel, const std::string& source) {
  ByteWriter w;
  w.WriteString("cl");
  w.WriteU64(1);
  w.WriteString(kernel);
  w.WriteString("");
  w.WriteU64(1);
  w.WritePod<uint8_t>(kDLOpaqueHandle);
  w.WritePod<uint8_t>(64);
  w.WritePod<uint16_t>(1);
  w.WriteU64(1);
  w.WriteString("threadIdx.x");
  w.WriteString(source);
  return w.Take();
}

Result<std::shared_ptr<Module>> LoadClModule(const std::vector<uint8_t>& blob) {
  ByteReader r(blob, "test opencl blob");
  HETRT_ASSIGN_OR_RETURN(Plugin * cl, PluginRegistry::Global().ForTypeKey("opencl"));
  return PluginModule::Load(cl, "opencl", r);
}

Status Launch(Module& m, const std::string& kernel, Tensor& buffer, int64_t threads) {
  return testing::CallKernel(m, kCl, kernel, {{.v_handle = buffer.data()}, {.v_int64 = threads}},
                             {HETRT_TYPE_HANDLE, HETRT_TYPE_INT});
}

Result<Tensor> ClFloats(int64_t count) {
  HETRT_ASSIGN_OR_RETURN(Plugin * cl, PluginRegistry::Global().ForDevice(kCl));
  return Tensor::Empty({count}, {kDLFloat, 32, 1}, cl->DeviceAllocator(kCl));
}

// Launching `kernel` of `m` on 4 floats fails with a message holding each of `parts`.
void ExpectLaunchFailsSaying(Module& m, const std::string& kernel, const std::vector<std::string>& parts) {
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor buf, ClFloats(4));
  Status s = Launch(m, kernel, buf, 4);
  ASSERT_FALSE(s.ok());
  for (const std::string& part : parts) EXPECT_NE(s.message().find(part), std::string::npos) << s.message();
}

TEST(OpenCl, KernelsFromABlobRunAndTheBlobSavesBackByteForByte) {
  HETRT_REQUIRE_OPENCL();
  const auto blob = ClBlob("twice", "__kernel void twice(__global float* a) { a[get_local_id(0)] *= 2.0f; }");
  HETRT_ASSERT_OK_AND_ASSIGN(auto m, LoadClModule(blob));
  EXPECT_EQ(m->ListFunctionNames(), std::vector<std::string>{"twice"});
  Plugin* cl = PluginRegistry::Global().ForDevice(kCl).value();
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor buf, Tensor::Empty({8}, {kDLFloat, 32, 1}, cl->DeviceAllocator(kCl)));
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor host, Tensor::EmptyHost({8}, {kDLFloat, 32, 1}));
  for (int i = 0; i < 8; ++i) host.data_as<float>()[i] = static_cast<float>(i);
  HETRT_ASSERT_OK(PluginRegistry::Global().CopyTensor(host, buf));
  HETRT_ASSERT_OK(Launch(*m, "twice", buf, 8));
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor out, PluginRegistry::Global().ToHost(buf));
  for (int i = 0; i < 8; ++i) EXPECT_EQ(out.data_as<float>()[i], 2.f * static_cast<float>(i));

  auto* pm = dynamic_cast<PluginModule*>(m.get());
  auto save = AbiArgs<hetrt_module_save_args_t>();
  save.module = pm->handle();
  HETRT_ASSERT_OK(cl->Consume(cl->module_api()->save(&save)));
  EXPECT_EQ(std::vector<uint8_t>(save.data, save.data + save.size), blob);
}

TEST(OpenCl, BuildFailureShowsTheKernelNameAndTheCompilerLog) {
  HETRT_REQUIRE_OPENCL();
  HETRT_ASSERT_OK_AND_ASSIGN(
      auto m, LoadClModule(ClBlob("broken", "__kernel void broken(__global float* a) { this is not C; }")));
  ExpectLaunchFailsSaying(*m, "broken", {"kernel 'broken'", "error" /* the compiler's log */});
}

TEST(OpenCl, UnknownKernelsAndWrongCallsAreClearErrors) {
  HETRT_REQUIRE_OPENCL();
  // The function table names a kernel the source does not define.
  HETRT_ASSERT_OK_AND_ASSIGN(auto m, LoadClModule(ClBlob("ghost", "__kernel void other(__global float* a) {}")));
  ASSERT_NO_FATAL_FAILURE(ExpectLaunchFailsSaying(*m, "ghost", {"'ghost'"}));
  // A name that is not in the module at all.
  HETRT_ASSERT_OK_AND_ASSIGN(const PackedFunc* none, m->GetFunction("nope"));
  EXPECT_EQ(none, nullptr);
  // A wrong argument count.
  HETRT_ASSERT_OK_AND_ASSIGN(auto ok, LoadClModule(ClBlob("k", "__kernel void k(__global float* a) {}")));
  HETRT_ASSERT_OK_AND_ASSIGN(const PackedFunc* k, ok->GetFunction("k"));
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor buf, ClFloats(4));
  hetrt_value_t args[1] = {{.v_handle = buf.data()}};
  int32_t codes[1] = {HETRT_TYPE_HANDLE};
  Status s = CallPackedFunc(*k, args, codes, 1);
  EXPECT_NE(s.message().find("takes 2 arguments"), std::string::npos) << s.message();
}

TEST(OpenCl, MalformedBlobsAreRefused) {
  HETRT_REQUIRE_OPENCL();
  auto blob = ClBlob("k", "__kernel void k(__global float* a) {}");
  for (size_t n = 0; n < blob.size(); n += 3) {
    std::vector<uint8_t> cut(blob.begin(), blob.begin() + static_cast<long>(n));
    EXPECT_FALSE(LoadClModule(cut).ok()) << n;
  }
  auto spirv = blob;
  spirv[8] = 'x';  // fmt "xl"
  auto r = LoadClModule(spirv);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("format 'xl'"), std::string::npos) << r.status().message();
}

TEST(OpenCl, ProgramBinariesAreCachedOnDiskWhenAsked) {
  HETRT_REQUIRE_OPENCL();
  HETRT_REQUIRE_FIXTURE(dir, "hetero_opencl_seed");
  const std::string cache = ::testing::TempDir() + "/hetrt_cl_cache";
  std::filesystem::remove_all(cache);
  std::filesystem::create_directories(cache);
  const std::string cmd = "HETRT_OPENCL_CACHE_DIR=" + cache + " " + HETRT_CLI + " run " + dir +
                          "/deploy.so --device cpu --device opencl --inputs " + dir + "/inputs.params > /dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  int binaries = 0;
  for (const auto& e : std::filesystem::directory_iterator(cache)) binaries += e.path().extension() == ".clbin";
  EXPECT_EQ(binaries, 1);
  ASSERT_EQ(std::system(cmd.c_str()), 0);  // second run loads the binary
}

TEST(OpenCl, NoPlatformIsReportedWithTheReason) {
  HETRT_REQUIRE_OPENCL();  // the plugin is built; hide the drivers from a child process
  const std::string out = ::testing::TempDir() + "/hetrt_no_icd.txt";
  const std::string cmd = std::string("OCL_ICD_VENDORS=/nonexistent-icd-dir ") + HETRT_CLI + " plugins > " + out;
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  const std::string text = ReadText(out);
  EXPECT_NE(text.find("device opencl: 0 device(s) - no OpenCL platform"), std::string::npos) << text;
  HETRT_REQUIRE_FIXTURE(dir, "hetero_opencl_seed");
  const std::string run = std::string("OCL_ICD_VENDORS=/nonexistent-icd-dir ") + HETRT_CLI + " run " + dir +
                          "/deploy.so --device cpu --device opencl 2> " + out;
  EXPECT_NE(std::system(run.c_str()), 0);
  EXPECT_NE(ReadText(out).find("no opencl device is available: no OpenCL platform"), std::string::npos)
      << ReadText(out);
}

// ---------------------------------------------------------------- ABI 2.0 on PoCL

TEST(OpenClAbi, HostVisibleMemoryIsSharedWithKernelsAtEventBoundaries) {
  HETRT_REQUIRE_OPENCL();
  Plugin* cl = PluginRegistry::Global().ForDevice(kCl).value();
  if (!cl->SharesHostMemory(kCl)) GTEST_SKIP() << "this OpenCL device does not share host memory";
  Allocator& visible = cl->DeviceAllocator(kCl, HETRT_MEMORY_HOST_VISIBLE);
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor buf, Tensor::Empty({64}, {kDLFloat, 32, 1}, visible));
  auto* host = static_cast<float*>(visible.HostPointer(buf.data()));
  ASSERT_NE(host, nullptr);
  for (int i = 0; i < 64; ++i) host[i] = static_cast<float>(i);  // written by the host ...
  HETRT_ASSERT_OK_AND_ASSIGN(
      auto m, LoadClModule(ClBlob("twice", "__kernel void twice(__global float* a) { a[get_local_id(0)] *= 2.0f; }")));
  HETRT_ASSERT_OK(Launch(*m, "twice", buf, 64));  // ... doubled by a kernel ...
  auto sync = AbiArgs<hetrt_stream_args_t>();
  sync.self = cl->instance();
  sync.device = kCl;
  HETRT_ASSERT_OK(cl->Consume(cl->device_api()->stream_synchronize(&sync)));
  for (int i = 0; i < 64; ++i) EXPECT_EQ(host[i], 2.f * static_cast<float>(i));  // ... read back in place
}

// Device memory of another instance (another registry) is refused, not
// released, and counted in failed_frees by the instance that refused it; so
// is device memory freed as if it were pinned. (Bytes no instance allocated:
// the conformance kit (sdk/conformance/), Memory.RefusedFreesAreCountedAndLogged.)
TEST(OpenClAbi, FreesOfMemoryThisInstanceDidNotAllocateAreRefusedAndCounted) {
  HETRT_REQUIRE_OPENCL();
  Plugin* cl = PluginRegistry::Global().ForDevice(kCl).value();
  PluginRegistry::Options options;
  options.search_paths = {cl->path()};
  auto other_registry = PluginRegistry::Discover(options);
  HETRT_ASSERT_OK_AND_ASSIGN(Plugin * other, other_registry->ForDevice(kCl));
  ASSERT_NE(other->instance(), cl->instance());
  const Device mine(cl, kCl), theirs(other, kCl);
  HETRT_ASSERT_OK_AND_ASSIGN(DeviceMemoryStats before, cl->MemoryStats(kCl));
  HETRT_ASSERT_OK_AND_ASSIGN(Device::Allocation buffer, theirs.Allocate(256, 64, HETRT_MEMORY_DEVICE));
  Status refused = mine.Free(buffer.data);
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument) << refused.message();
  EXPECT_NE(refused.message().find("not memory this OpenCL instance allocated"), std::string::npos)
      << refused.message();
  refused = mine.Free(buffer.data, HETRT_MEMORY_HOST_PINNED);
  EXPECT_NE(refused.message().find("not HOST_PINNED memory of this OpenCL instance"), std::string::npos)
      << refused.message();
  const std::vector<uint8_t> bytes(256, 7);
  std::vector<uint8_t> back(256, 0);
  HETRT_ASSERT_OK(theirs.Copy(bytes.data(), 0, {kDLCPU, 0}, buffer.data, 0, kCl, 256, nullptr, HETRT_COPY_BLOCKING));
  HETRT_ASSERT_OK(theirs.Copy(buffer.data, 0, kCl, back.data(), 0, {kDLCPU, 0}, 256, nullptr, HETRT_COPY_BLOCKING));
  EXPECT_EQ(back, bytes) << "the owner's buffer survived";
  HETRT_ASSERT_OK(theirs.Free(buffer.data));
  HETRT_ASSERT_OK_AND_ASSIGN(DeviceMemoryStats after, cl->MemoryStats(kCl));
  ASSERT_TRUE(before.failed_frees.has_value() && after.failed_frees.has_value());
  EXPECT_EQ(*after.failed_frees, *before.failed_frees + 2);
  HETRT_ASSERT_OK_AND_ASSIGN(DeviceMemoryStats owners, other->MemoryStats(kCl));
  EXPECT_EQ(owners.failed_frees, std::optional<uint64_t>(0));
  EXPECT_EQ(owners.num_allocations, 0u);
}

// (Memory, copies, streams, events, clocks, the current stream, attributes
// and two registries: the conformance kit (sdk/conformance/), which runs on OpenCL too.)
TEST(OpenClAbi, OptionsAreChecked) {
  HETRT_REQUIRE_OPENCL();
  Plugin* cl = PluginRegistry::Global().ForDevice(kCl).value();
  EXPECT_TRUE(cl->SetOption("wait_poll_us", "20").ok());
  Status bad = cl->SetOption("wait_poll_us", "-3");
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument) << bad.message();
  EXPECT_EQ(cl->SetOption("no_such_option", "1").code(), StatusCode::kNotFound);
  EXPECT_TRUE(cl->SetOption("wait_poll_us", "-1").ok());  // back to the default: measured
  EXPECT_FALSE(cl->CanCopy({kDLCUDA, 0}, kCl));
}

}  // namespace
}  // namespace hetrt
