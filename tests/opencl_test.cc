// The OpenCL plugin on a real OpenCL device (PoCL in CI): TVM's heterogeneous
// fixtures, copies, program builds, caches and failure paths.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <time.h>

#include <fstream>
#include <thread>

#include "device_client.h"
#include "hetrt/base/dtype.h"
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
  const auto tol = ReadJson(dir + "/meta.json")["tolerances"]["self_check_same_device"];
  HETRT_ASSERT_OK_AND_ASSIGN(auto inputs, LoadParamDictFile(dir + "/inputs.params"));
  HETRT_ASSERT_OK_AND_ASSIGN(auto expected, LoadParamDictFile(dir + "/outputs.params"));
  // Every execution mode: asynchronous (default), TVM's sequential order,
  // and both with copies through the plugin instead of shared memory.
  for (int mode = 0; mode < 8; ++mode) {
    const bool triple = mode & 1, sequential = mode & 2, staged = mode & 4;
    SCOPED_TRACE(std::string(triple ? "triple" : "deploy.so") + (sequential ? " sequential" : " async") +
                 (staged ? " staged copies" : ""));
    GraphExecutor::Options options;
    options.devices = FactoryDevices(dir);
    options.sequential = sequential;
    options.staged_copies = staged;
    GraphModelFiles files{dir + (triple ? "/lib.so" : "/deploy.so")};
    if (triple) files.graph_json = dir + "/graph.json";
    if (triple && std::filesystem::exists(dir + "/params.params")) files.params = dir + "/params.params";
    HETRT_ASSERT_OK_AND_ASSIGN(GraphModel m, OpenGraphModel(files, options));
    for (const auto& p : inputs) HETRT_ASSERT_OK(m.executor->SetInput(p.name, p.tensor));
    HETRT_ASSERT_OK(m.executor->Run());
    for (size_t i = 0; i < expected.size(); ++i) {
      HETRT_ASSERT_OK_AND_ASSIGN(Tensor out, m.executor->GetOutput(static_cast<int>(i)));
      EXPECT_TRUE(testing::TensorsClose(out, FindParam(expected, "output_" + std::to_string(i))->tensor,
                                        tol["rtol"], tol["atol"]));
    }
  }
  std::string devices;
  for (const DLDevice& d : FactoryDevices(dir)) devices += " --device " + DeviceToString(d);
  const std::string saved = ::testing::TempDir() + "/hetrt_cl_out_" + fixture() + ".params";
  const std::string cmd = std::string(HETRT_CLI) + " run " + dir + "/deploy.so" + devices + " --inputs " + dir +
                          "/inputs.params --save-outputs " + saved + " > /dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  HETRT_ASSERT_OK_AND_ASSIGN(auto cli, LoadParamDictFile(saved));
  EXPECT_TRUE(testing::TensorsClose(cli[0].tensor, expected[0].tensor, tol["rtol"], tol["atol"]));
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

TEST(OpenCl, CopiesOfOddSizesAndOffsetsRoundTrip) {
  HETRT_REQUIRE_OPENCL();
  PluginRegistry& reg = PluginRegistry::Global();
  Plugin* cl = reg.ForDevice(kCl).value();
  const DLDataType u8{kDLUInt, 8, 1};
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor a, Tensor::Empty({4099}, u8, cl->DeviceAllocator(kCl)));
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor b, Tensor::Empty({4099}, u8, cl->DeviceAllocator(kCl)));
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor host, Tensor::EmptyHost({4099}, u8));
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor back, Tensor::EmptyHost({4099}, u8));
  for (int i = 0; i < 4099; ++i) host.data_as<uint8_t>()[i] = static_cast<uint8_t>(i * 7 + 3);
  struct Case {
    uint64_t src_off, dst_off, n;
  };
  for (const Case& c : {Case{0, 0, 1}, Case{3, 5, 3}, Case{1, 0, 4097}, Case{7, 11, 1000}, Case{0, 0, 4099}}) {
    SCOPED_TRACE(std::to_string(c.src_off) + "->" + std::to_string(c.dst_off) + " x" + std::to_string(c.n));
    std::memset(back.data(), 0, 4099);
    const DLDevice h{kDLCPU, 0};
    HETRT_ASSERT_OK(reg.CopyBytes(host.data(), c.src_off, h, a.data(), c.dst_off, kCl, c.n));    // host -> device
    HETRT_ASSERT_OK(reg.CopyBytes(a.data(), c.dst_off, kCl, b.data(), c.src_off, kCl, c.n));     // device -> device
    HETRT_ASSERT_OK(reg.CopyBytes(b.data(), c.src_off, kCl, back.data(), c.dst_off, h, c.n));    // device -> host
    EXPECT_EQ(std::memcmp(back.data_as<uint8_t>() + c.dst_off, host.data_as<uint8_t>() + c.src_off, c.n), 0);
  }
  Status s = reg.CopyBytes(host.data(), 0, {kDLCPU, 0}, a.data(), 4000, kCl, 200);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("exceeds the 4099-byte buffer"), std::string::npos) << s.message();
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
  const PackedFunc* set_device = GlobalFunctionRegistry::Get().Find("__tvm_set_device");
  if (set_device == nullptr) return NotFound("__tvm_set_device");
  hetrt_value_t dev[2] = {{.v_int64 = kDLOpenCL}, {.v_int64 = 0}};
  int32_t dev_codes[2] = {HETRT_TYPE_INT, HETRT_TYPE_INT};
  HETRT_RETURN_IF_ERROR(CallPackedFunc(*set_device, dev, dev_codes, 2));
  HETRT_ASSIGN_OR_RETURN(const PackedFunc* f, m.GetFunction(kernel));
  if (f == nullptr) return NotFound(kernel);
  hetrt_value_t args[2] = {{.v_handle = buffer.data()}, {.v_int64 = threads}};
  int32_t codes[2] = {HETRT_TYPE_HANDLE, HETRT_TYPE_INT};
  return CallPackedFunc(*f, args, codes, 2);
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
  HETRT_ASSERT_OK_AND_ASSIGN(auto m, LoadClModule(ClBlob("broken", "__kernel void broken(__global float* a) { this is not C; }")));
  Plugin* cl = PluginRegistry::Global().ForDevice(kCl).value();
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor buf, Tensor::Empty({4}, {kDLFloat, 32, 1}, cl->DeviceAllocator(kCl)));
  Status s = Launch(*m, "broken", buf, 4);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("kernel 'broken'"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("error"), std::string::npos) << s.message();  // the compiler's log
}

TEST(OpenCl, UnknownKernelsAndWrongCallsAreClearErrors) {
  HETRT_REQUIRE_OPENCL();
  // The function table names a kernel the source does not define.
  HETRT_ASSERT_OK_AND_ASSIGN(auto m, LoadClModule(ClBlob("ghost", "__kernel void other(__global float* a) {}")));
  Plugin* cl = PluginRegistry::Global().ForDevice(kCl).value();
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor buf, Tensor::Empty({4}, {kDLFloat, 32, 1}, cl->DeviceAllocator(kCl)));
  Status s = Launch(*m, "ghost", buf, 4);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("'ghost'"), std::string::npos) << s.message();
  // A name that is not in the module at all.
  HETRT_ASSERT_OK_AND_ASSIGN(const PackedFunc* none, m->GetFunction("nope"));
  EXPECT_EQ(none, nullptr);
  // A wrong argument count.
  HETRT_ASSERT_OK_AND_ASSIGN(auto ok, LoadClModule(ClBlob("k", "__kernel void k(__global float* a) {}")));
  HETRT_ASSERT_OK_AND_ASSIGN(const PackedFunc* k, ok->GetFunction("k"));
  hetrt_value_t args[1] = {{.v_handle = buf.data()}};
  int32_t codes[1] = {HETRT_TYPE_HANDLE};
  s = CallPackedFunc(*k, args, codes, 1);
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
  EXPECT_NE(ReadText(out).find("no opencl device is available: no OpenCL platform"), std::string::npos) << ReadText(out);
}


// ---------------------------------------------------------------- ABI 2.0 on PoCL

// The ABI calls on opencl:0, through the conformance kit's client.
template <class T>
T ValueOrFail(Result<T> result) {
  EXPECT_TRUE(result.ok()) << result.status().message();
  return result.ok() ? result.value() : T{};
}
hetrt_stream_t* NewStream(Plugin* cl, int32_t kind = HETRT_STREAM_COMPUTE) {
  return ValueOrFail(conformance::DeviceClient(cl, kCl).NewStream(kind));
}
void DestroyStream(Plugin* cl, hetrt_stream_t* stream) {
  const Status destroyed = conformance::DeviceClient(cl, kCl).DestroyStream(stream);
  EXPECT_TRUE(destroyed.ok()) << destroyed.message();
}
hetrt_event_t* NewEvent(Plugin* cl, uint32_t flags = 0) {
  return ValueOrFail(conformance::DeviceClient(cl, kCl).NewEvent(flags));
}
Status Record(Plugin* cl, hetrt_event_t* event, hetrt_stream_t* stream) {
  return conformance::DeviceClient(cl, kCl).Record(event, stream);
}
Status EventCall(Plugin* cl, hetrt_error_t* (*fn)(hetrt_event_args_t*), hetrt_event_t* event, int32_t* complete = nullptr) {
  return conformance::DeviceClient(cl, kCl).EventCall(fn, event, complete);
}
Status Copy(Plugin* cl, const void* src, DLDevice src_device, void* dst, DLDevice dst_device, uint64_t nbytes,
            hetrt_stream_t* stream, uint32_t flags) {
  return conformance::DeviceClient(cl, kCl).Copy(src, 0, src_device, dst, 0, dst_device, nbytes, stream, flags);
}

TEST(OpenClAbi, HostVisibleMemoryIsSharedWithKernelsAtEventBoundaries) {
  HETRT_REQUIRE_OPENCL();
  Plugin* cl = PluginRegistry::Global().ForDevice(kCl).value();
  if (!cl->SharesHostMemory(kCl)) GTEST_SKIP() << "this OpenCL device does not share host memory";
  Allocator& visible = cl->DeviceAllocator(kCl, HETRT_MEMORY_HOST_VISIBLE);
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor buf, Tensor::Empty({64}, {kDLFloat, 32, 1}, visible));
  auto* host = static_cast<float*>(visible.HostPointer(buf.data()));
  ASSERT_NE(host, nullptr);
  for (int i = 0; i < 64; ++i) host[i] = static_cast<float>(i);  // written by the host ...
  HETRT_ASSERT_OK_AND_ASSIGN(auto m, LoadClModule(ClBlob("twice", "__kernel void twice(__global float* a) { a[get_local_id(0)] *= 2.0f; }")));
  HETRT_ASSERT_OK(Launch(*m, "twice", buf, 64));  // ... doubled by a kernel ...
  auto sync = AbiArgs<hetrt_stream_args_t>();
  sync.self = cl->instance();
  sync.device = kCl;
  HETRT_ASSERT_OK(cl->Consume(cl->device_api()->stream_synchronize(&sync)));
  for (int i = 0; i < 64; ++i) EXPECT_EQ(host[i], 2.f * static_cast<float>(i));  // ... read back in place
}

TEST(OpenClAbi, MemoryStatsFollowAllocations) {
  HETRT_REQUIRE_OPENCL();
  Plugin* cl = PluginRegistry::Global().ForDevice(kCl).value();
  HETRT_ASSERT_OK_AND_ASSIGN(DeviceMemoryStats before, cl->MemoryStats(kCl));
  {
    HETRT_ASSERT_OK_AND_ASSIGN(Tensor a, Tensor::Empty({1 << 20}, {kDLUInt, 8, 1}, cl->DeviceAllocator(kCl)));
    HETRT_ASSERT_OK_AND_ASSIGN(DeviceMemoryStats during, cl->MemoryStats(kCl));
    EXPECT_EQ(during.bytes_in_use, before.bytes_in_use + (1 << 20));
    EXPECT_EQ(during.num_allocations, before.num_allocations + 1);
    EXPECT_GE(during.peak_bytes_in_use, during.bytes_in_use);
    EXPECT_GT(during.bytes_limit, 0u);
  }
  HETRT_ASSERT_OK_AND_ASSIGN(DeviceMemoryStats after, cl->MemoryStats(kCl));
  EXPECT_EQ(after.bytes_in_use, before.bytes_in_use);
  EXPECT_GE(after.peak_bytes_in_use, before.bytes_in_use + (1 << 20));
}

// Work on one stream that waits for an event of another starts only after it:
// a large copy on a copy stream, then a small overwrite on a compute stream
// that waits for it, must leave the small write's bytes.
TEST(OpenClAbi, AStreamWaitingForAnEventOrdersWorkAcrossStreams) {
  HETRT_REQUIRE_OPENCL();
  Plugin* cl = PluginRegistry::Global().ForDevice(kCl).value();
  constexpr size_t kBytes = 32 << 20;
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor dev, Tensor::Empty({kBytes}, {kDLUInt, 8, 1}, cl->DeviceAllocator(kCl)));
  std::vector<uint8_t> big(kBytes, 1), small(4096, 7), back(kBytes, 0);
  hetrt_stream_t* copy = NewStream(cl, HETRT_STREAM_COPY);
  hetrt_stream_t* compute = NewStream(cl);
  hetrt_event_t* done = NewEvent(cl);
  for (int round = 0; round < 5; ++round) {
    HETRT_ASSERT_OK(Copy(cl, big.data(), {kDLCPU, 0}, dev.data(), kCl, kBytes, copy, 0));
    HETRT_ASSERT_OK(Record(cl, done, copy));
    auto wait = AbiArgs<hetrt_stream_wait_event_args_t>();
    wait.self = cl->instance();
    wait.device = kCl;
    wait.stream = compute;
    wait.event = done;
    HETRT_ASSERT_OK(cl->Consume(cl->device_api()->stream_wait_event(&wait)));
    HETRT_ASSERT_OK(Copy(cl, small.data(), {kDLCPU, 0}, dev.data(), kCl, small.size(), compute, 0));
    HETRT_ASSERT_OK(Copy(cl, dev.data(), kCl, back.data(), {kDLCPU, 0}, kBytes, compute, HETRT_COPY_BLOCKING));
    EXPECT_EQ(back[0], 7);
    EXPECT_EQ(back[4095], 7);
    EXPECT_EQ(back[4096], 1);
    EXPECT_EQ(back[kBytes - 1], 1);
  }
  int32_t complete = 0;
  HETRT_ASSERT_OK(EventCall(cl, cl->device_api()->event_query, done, &complete));
  EXPECT_EQ(complete, 1);
  HETRT_ASSERT_OK(EventCall(cl, cl->device_api()->event_destroy, done));
  DestroyStream(cl, copy);
  DestroyStream(cl, compute);
}

// Timestamps of events on one stream increase in record order and, mapped with
// the device clock, fall between host readings taken around them.
TEST(OpenClAbi, EventTimestampsMapOntoTheHostClock) {
  HETRT_REQUIRE_OPENCL();
  Plugin* cl = PluginRegistry::Global().ForDevice(kCl).value();
  auto host_now = [] {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
  };
  auto clock = AbiArgs<hetrt_device_clock_args_t>();
  clock.self = cl->instance();
  clock.device = kCl;
  HETRT_ASSERT_OK(cl->Consume(cl->device_api()->device_clock(&clock)));
  const int64_t offset = static_cast<int64_t>(clock.host_ns) - static_cast<int64_t>(clock.device_ns);
  hetrt_stream_t* stream = NewStream(cl);
  hetrt_event_t* a = NewEvent(cl, HETRT_EVENT_TIMING);
  hetrt_event_t* b = NewEvent(cl, HETRT_EVENT_TIMING);
  const int64_t before = host_now();
  HETRT_ASSERT_OK(Record(cl, a, stream));
  std::vector<uint8_t> host(8 << 20, 3);
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor dev, Tensor::Empty({8 << 20}, {kDLUInt, 8, 1}, cl->DeviceAllocator(kCl)));
  HETRT_ASSERT_OK(Copy(cl, host.data(), {kDLCPU, 0}, dev.data(), kCl, host.size(), stream, 0));
  HETRT_ASSERT_OK(Record(cl, b, stream));
  HETRT_ASSERT_OK(EventCall(cl, cl->device_api()->event_synchronize, b));
  const int64_t after = host_now();
  uint64_t stamp[2];
  hetrt_event_t* events[2] = {a, b};
  for (int i = 0; i < 2; ++i) {
    auto ts = AbiArgs<hetrt_event_timestamp_args_t>();
    ts.self = cl->instance();
    ts.device = kCl;
    ts.event = events[i];
    HETRT_ASSERT_OK(cl->Consume(cl->device_api()->event_timestamp(&ts)));
    stamp[i] = ts.device_ns;
  }
  EXPECT_LE(stamp[0], stamp[1]);
  const auto slack = static_cast<int64_t>(clock.uncertainty_ns);
  EXPECT_GE(static_cast<int64_t>(stamp[0]) + offset + slack, before);
  EXPECT_LE(static_cast<int64_t>(stamp[1]) + offset - slack, after);
  auto elapsed = AbiArgs<hetrt_event_elapsed_args_t>();
  elapsed.self = cl->instance();
  elapsed.device = kCl;
  elapsed.start = a;
  elapsed.end = b;
  HETRT_ASSERT_OK(cl->Consume(cl->device_api()->event_elapsed_ms(&elapsed)));
  EXPECT_GE(elapsed.milliseconds, 0.0);
  for (hetrt_event_t* e : events) HETRT_ASSERT_OK(EventCall(cl, cl->device_api()->event_destroy, e));
  DestroyStream(cl, stream);
}

TEST(OpenClAbi, CurrentStreamIsPerThread) {
  HETRT_REQUIRE_OPENCL();
  Plugin* cl = PluginRegistry::Global().ForDevice(kCl).value();
  hetrt_stream_t* mine = NewStream(cl);
  auto set = AbiArgs<hetrt_stream_current_args_t>();
  set.self = cl->instance();
  set.device = kCl;
  set.stream = mine;
  HETRT_ASSERT_OK(cl->Consume(cl->device_api()->stream_set_current(&set)));
  auto get = AbiArgs<hetrt_stream_current_args_t>();
  get.self = cl->instance();
  get.device = kCl;
  HETRT_ASSERT_OK(cl->Consume(cl->device_api()->stream_get_current(&get)));
  EXPECT_EQ(get.stream, mine);
  hetrt_stream_t* seen_elsewhere = mine;
  std::thread([&] {
    auto other = AbiArgs<hetrt_stream_current_args_t>();
    other.self = cl->instance();
    other.device = kCl;
    if (cl->Consume(cl->device_api()->stream_get_current(&other)).ok()) seen_elsewhere = other.stream;
  }).join();
  EXPECT_EQ(seen_elsewhere, nullptr);  // another thread still has the default stream
  set.stream = set.previous;
  HETRT_ASSERT_OK(cl->Consume(cl->device_api()->stream_set_current(&set)));
  DestroyStream(cl, mine);
}

TEST(OpenClAbi, OptionsAndAttributesAreChecked) {
  HETRT_REQUIRE_OPENCL();
  Plugin* cl = PluginRegistry::Global().ForDevice(kCl).value();
  EXPECT_TRUE(cl->SetOption("wait_poll_us", "20").ok());
  Status bad = cl->SetOption("wait_poll_us", "-3");
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument) << bad.message();
  EXPECT_EQ(cl->SetOption("no_such_option", "1").code(), StatusCode::kNotFound);
  EXPECT_TRUE(cl->SetOption("wait_poll_us", "50").ok());
  HETRT_ASSERT_OK_AND_ASSIGN(std::string name, cl->AttributeString(kCl, HETRT_DEVICE_ATTR_NAME));
  EXPECT_FALSE(name.empty());
  HETRT_ASSERT_OK_AND_ASSIGN(int64_t total, cl->AttributeInt(kCl, HETRT_DEVICE_ATTR_TOTAL_MEMORY));
  EXPECT_GT(total, 0);
  EXPECT_EQ(cl->AttributeInt(kCl, 999).status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(cl->CanCopy({kDLCPU, 0}, kCl));
  EXPECT_FALSE(cl->CanCopy({kDLCUDA, 0}, kCl));
}

// Two registries hold two instances of the OpenCL plugin, each with its own
// contexts and queues; both run kernels, and destroying one leaves the other.
TEST(OpenClAbi, TwoRegistriesHoldIndependentInstances) {
  HETRT_REQUIRE_OPENCL();
  PluginRegistry::Options options;
  options.search_paths = PluginRegistry::DefaultSearchPaths();
  auto own = PluginRegistry::Discover(options);
  HETRT_ASSERT_OK_AND_ASSIGN(Plugin * mine, own->ForDevice(kCl));
  Plugin* global = PluginRegistry::Global().ForDevice(kCl).value();
  EXPECT_NE(mine->instance(), global->instance());
  {
    HETRT_ASSERT_OK_AND_ASSIGN(Tensor a, Tensor::Empty({16}, {kDLFloat, 32, 1}, mine->DeviceAllocator(kCl)));
    std::vector<float> in(16, 3.f), out(16, 0.f);
    HETRT_ASSERT_OK(own->CopyBytes(in.data(), 0, {kDLCPU, 0}, a.data(), 0, kCl, 64));
    HETRT_ASSERT_OK(own->CopyBytes(a.data(), 0, kCl, out.data(), 0, {kDLCPU, 0}, 64));
    EXPECT_EQ(out, in);
  }
  own.reset();  // destroys its instance (contexts, queues)
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor b, Tensor::Empty({16}, {kDLFloat, 32, 1}, global->DeviceAllocator(kCl)));
  std::vector<float> in(16, 5.f), out(16, 0.f);
  HETRT_ASSERT_OK(PluginRegistry::Global().CopyBytes(in.data(), 0, {kDLCPU, 0}, b.data(), 0, kCl, 64));
  HETRT_ASSERT_OK(PluginRegistry::Global().CopyBytes(b.data(), 0, kCl, out.data(), 0, {kDLCPU, 0}, 64));
  EXPECT_EQ(out, in);
}

}  // namespace
}  // namespace hetrt
