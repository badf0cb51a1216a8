// On a device (a GPU, or the fake driver tests/cuda/fake_*.cc that ctest
// also runs this suite on): fixtures, the kernel set, launches, streams and
// events as CUDA has them. What every backend does (memory, copies, streams,
// events, instances) is the conformance kit (sdk/conformance/), which runs on CUDA too.
#include <cmath>
#include <cstring>
#include <filesystem>
#include <thread>

#include "cuda_test_support.h"
#include "device_client.h"
#include "fixture_runs.h"
#include "hetrt/exec/graph_model.h"
#include "hetrt/exec/relax_executor.h"
#include "kernel_set.h"
#include "two_branch_model.h"

namespace hetrt::cuda_testing {
namespace {

using testing::Random;

TEST_F(CudaDevice, EveryCudaFixtureMatchesItsExpectedOutputsThroughApiAndCli) {
  std::string not_for_this_gpu;
  for (const char* model : kCudaFixtures) {
    HETRT_REQUIRE_FIXTURE(dir, model);
    SCOPED_TRACE(model);
    if (OnFakeDriver() && std::string(model) == "mlp_cuda") continue;  // the fake runs no TVM dense kernels
    // TVM's fixtures carry cubins for one architecture (sm_80): a GPU of
    // another major version cannot run them, as under TVM itself. hetrt must
    // say so; the fixture is then not a test of this GPU.
    GraphExecutor::Options options;
    options.devices = {{kDLCPU, 0}, kCu};
    HETRT_ASSERT_OK_AND_ASSIGN(GraphModel probe, OpenGraphModel({dir + "/deploy.so"}, options));
    if (Status s = probe.executor->Run(); !s.ok() && s.message().find("has no code for this GPU") != std::string::npos) {
      EXPECT_NE(s.message().find("CUDA_ERROR_NO_BINARY_FOR_GPU"), std::string::npos) << s.message();
      not_for_this_gpu += std::string(not_for_this_gpu.empty() ? "" : "; ") + model + ": " + s.message();
      continue;
    }
    testing::ExpectFixtureMatchesInEveryMode(dir, {{kDLCPU, 0}, kCu}, /*runs_per_mode=*/2);
    testing::ExpectCliRunMatches(HETRT_CLI, dir, {{kDLCPU, 0}, kCu});
  }
  if (!not_for_this_gpu.empty()) GTEST_SKIP() << "fixtures compiled for another GPU: " << not_for_this_gpu;
}

TEST_F(CudaDevice, FixtureKernelsLaunchWithTheGeometryTvmHostCodeGives) {
  if (!OnFakeDriver()) GTEST_SKIP() << "launches are recorded by the fake driver only";
  HETRT_REQUIRE_FIXTURE(dir, "hetero_cuda_seed");
  GraphExecutor::Options options;
  options.devices = {{kDLCPU, 0}, kCu};
  HETRT_ASSERT_OK_AND_ASSIGN(GraphModel m, OpenGraphModel({dir + "/deploy.so"}, options));
  const std::string log = FakeLog([&] { EXPECT_TRUE(m.executor->Run().ok()); });
  EXPECT_NE(log.find("launch tvmgen_default_fused_add_kernel grid=1,1,1 block=5,1,1 shared=0 stream="),
            std::string::npos)
      << log;
  EXPECT_EQ(log.find("stream=0 "), std::string::npos) << "a launch went to the legacy NULL stream:\n" << log;
  const size_t launch = log.find("launch tvmgen_default_fused_add_kernel");
  ASSERT_NE(launch, std::string::npos) << log;
  const size_t at = log.find("stream=", launch) + 7;
  const std::string kernel_stream = log.substr(at, log.find(' ', at) - at);
  if (Cu()->SharesHostMemory(kCu)) {
    // An integrated GPU: the CPU reads the output in place once the kernel's event is reached; nothing is copied.
    EXPECT_NE(log.find("record stream=" + kernel_stream + " ", launch), std::string::npos) << log;
    EXPECT_EQ(log.find("copy "), std::string::npos) << log;
    return;
  }
  // The __copy of its output to the CPU goes on a copy stream that first waits for the kernel's stream.
  const size_t wait = log.find(" for stream=" + kernel_stream + "\n", launch);
  ASSERT_NE(wait, std::string::npos) << log;
  const size_t w = log.rfind("wait stream=", wait) + 12;
  const std::string copy_stream = log.substr(w, wait - w);
  EXPECT_NE(copy_stream, kernel_stream);
  EXPECT_NE(log.find("copy 20 stream=" + copy_stream + "\n", wait), std::string::npos) << log;
}

Tensor TwoBranchInput() { return Random({16, 256}, 11); }

std::string TwoBranchLibrary(int32_t accel) {
  const std::string path =
      ::testing::TempDir() + "/hetrt_cuda_two_branch_" + std::to_string(getpid()) + "_" + std::to_string(accel) + ".so";
  if (std::filesystem::exists(path)) return path;
  auto built = kernels::BuildTwoBranchModel(accel);
  EXPECT_TRUE(built.ok()) << built.status().ToString();
  Status s = kernels::ExportGraph(built->graph_json, built->params, std::vector<int32_t>{accel}, path);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return path;
}

Result<Tensor> RunTwoBranch(int32_t accel, GraphExecutor::Options options,
                            GraphExecutor::RunProfile* profile = nullptr) {
  HETRT_ASSIGN_OR_RETURN(GraphModel m, OpenGraphModel({TwoBranchLibrary(accel)}, options));
  HETRT_RETURN_IF_ERROR(m.executor->SetInput("data", TwoBranchInput()));
  HETRT_RETURN_IF_ERROR(profile ? m.executor->RunProfiled(profile) : m.executor->Run());
  return m.executor->GetOutput(0);
}

TEST_F(CudaDevice, CpuPlusCudaModelOfTheKernelSetMatchesAllCpuInEveryExecutorMode) {
  HETRT_REQUIRE_CUDA_KERNEL_SET(*Cu(), kCu);
  GraphExecutor::Options cpu;
  cpu.devices = {{kDLCPU, 0}};
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor reference, RunTwoBranch(kDLCPU, cpu));
  for (int mode = 0; mode < 4; ++mode) {
    const bool sequential = mode & 1, staged = mode & 2;
    SCOPED_TRACE(std::string(sequential ? "sequential" : "async") + (staged ? " staged copies" : ""));
    GraphExecutor::Options options;
    options.devices = {{kDLCPU, 0}, kCu};
    options.sequential = sequential;
    options.staged_copies = staged;
    HETRT_ASSERT_OK_AND_ASSIGN(Tensor out, RunTwoBranch(kDLCUDA, options));
    EXPECT_TRUE(testing::TensorsClose(out, reference, 1e-5, 1e-5));
  }
  // Profiled: every CUDA node timed on the device clock, mapped onto the host's.
  GraphExecutor::Options options;
  options.devices = {{kDLCPU, 0}, kCu};
  GraphExecutor::RunProfile profile;
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor out, RunTwoBranch(kDLCUDA, options, &profile));
  EXPECT_TRUE(testing::TensorsClose(out, reference, 1e-5, 1e-5));
  int cuda_nodes = 0;
  for (const auto& t : profile.nodes) {
    if (t.device.device_type != kDLCUDA) continue;
    ++cuda_nodes;
    EXPECT_LE(t.start_ns, t.end_ns);
    EXPECT_GE(t.start_ns + 50'000'000, profile.run_start_ns) << "more than 50 ms before the run started";
    EXPECT_LE(t.end_ns, profile.run_end_ns + 50'000'000) << "more than 50 ms after the run ended";
  }
  EXPECT_GT(cuda_nodes, 0);
}

// A Relax VM executable of the same model (hetrt's own, RelaxExecutableFromGraph):
// its CUDA branch runs through the VM, storage from the pool on cuda:0, the
// branch's result and the CPU's weights crossing with to_device; it matches
// the CPU-only graph, every kernel call is timed on its lane when profiled,
// and a second call takes no memory from the plugin.
TEST_F(CudaDevice, ARelaxExecutableOfTheKernelSetRunsItsCudaBranchThroughTheVm) {
  HETRT_REQUIRE_CUDA_KERNEL_SET(*Cu(), kCu);
  GraphExecutor::Options cpu;
  cpu.devices = {{kDLCPU, 0}};
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor reference, RunTwoBranch(kDLCPU, cpu));
  HETRT_ASSERT_OK_AND_ASSIGN(auto built, kernels::BuildTwoBranchModel(kDLCUDA));
  const std::string path = ::testing::TempDir() + "/hetrt_cuda_relax_" + std::to_string(getpid()) + ".so";
  HETRT_ASSERT_OK_AND_ASSIGN(std::vector<DLDevice> devices, kernels::ExportRelax(built.graph_json, built.params, path));
  ASSERT_EQ(devices.size(), 2u);
  EXPECT_EQ(devices[0].device_type, kDLCUDA);
  GraphExecutor::Options options;
  options.devices = devices;
  HETRT_ASSERT_OK_AND_ASSIGN(Model m, OpenModel({path}, options));
  auto* relax = dynamic_cast<RelaxExecutor*>(m.executor.get());
  ASSERT_NE(relax, nullptr);
  HETRT_ASSERT_OK(relax->SetInput("data", TwoBranchInput()));
  HETRT_ASSERT_OK(relax->Run());
  const uint64_t allocations = relax->vm().PluginAllocations();
  RelaxProfile profile;
  HETRT_ASSERT_OK(relax->RunProfiled(&profile));
  EXPECT_EQ(relax->vm().PluginAllocations(), allocations);
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor out, relax->GetOutput(0));
  EXPECT_TRUE(testing::TensorsClose(out, reference, 1e-5, 1e-5));
  int cuda_kernels = 0;
  for (const RelaxTraceEvent& e : profile.events) {
    cuda_kernels += e.kind == RelaxTraceEvent::Kind::kKernel && e.device.device_type == kDLCUDA;
    EXPECT_LE(e.start_ns, e.end_ns);
  }
  EXPECT_EQ(cuda_kernels, 8);  // 4 dense + 4 relu in the CUDA branch
  std::remove(path.c_str());
}

TEST_F(CudaDevice, DemoPlacesLayersOnCudaAndMatchesTheCpu) {
  HETRT_REQUIRE_CUDA_KERNEL_SET(*Cu(), kCu);
  const Outcome o = RunCli("demo", CpuAndCudaPluginsOnly());
  EXPECT_NE(o.output.find("device opencl: not used (no plugin provides"), std::string::npos) << o.output;
  EXPECT_EQ(o.exit_code, 0) << o.output;
  EXPECT_NE(o.output.find("cpu + cuda:"), std::string::npos) << o.output;
  EXPECT_EQ(o.output.find("MISMATCH"), std::string::npos) << o.output;
}

TEST_F(CudaDevice, TwoDevicesCopyToEachOtherDirectly) {
  HETRT_ASSERT_OK_AND_ASSIGN(auto count, Cu()->CountDevices(kDLCUDA));
  if (count.count < 2) GTEST_SKIP() << "one CUDA device";
  const DLDevice second{kDLCUDA, 1};
  PluginRegistry& reg = PluginRegistry::Global();
  const Tensor host = Random({1000}, 3);
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor a, Tensor::Empty({1000}, kF32, Cu()->DeviceAllocator(kCu)));
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor b, Tensor::Empty({1000}, kF32, Cu()->DeviceAllocator(second)));
  HETRT_ASSERT_OK(reg.CopyTensor(host, a));
  EXPECT_TRUE(Cu()->CanCopy(kCu, second));
  const std::string log = FakeLog([&] { EXPECT_TRUE(reg.CopyTensor(a, b).ok()); });
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor back, reg.ToHost(b));
  EXPECT_EQ(std::memcmp(back.data(), host.data(), 4000), 0);
  if (OnFakeDriver()) {
    EXPECT_NE(log.find("peer copy 4000 cuda:0 -> cuda:1"), std::string::npos) << log;
  }
}

// (Memory kinds and statistics, copies: the conformance kit (sdk/conformance/), which runs on
// CUDA too.)
TEST_F(CudaDevice, Attributes) {
  Plugin* cu = Cu();
  HETRT_ASSERT_OK_AND_ASSIGN(std::string compute, cu->AttributeString(kCu, HETRT_DEVICE_ATTR_COMPUTE_VERSION));
  EXPECT_NE(compute.find('.'), std::string::npos);
  HETRT_ASSERT_OK_AND_ASSIGN(std::string driver, cu->AttributeString(kCu, HETRT_DEVICE_ATTR_DRIVER_VERSION));
  EXPECT_NE(cu->DeviceName(kCu).find("driver " + driver), std::string::npos) << cu->DeviceName(kCu);
  for (int32_t attribute :
       {HETRT_DEVICE_ATTR_TOTAL_MEMORY, HETRT_DEVICE_ATTR_MAX_THREADS_PER_BLOCK, HETRT_DEVICE_ATTR_WARP_SIZE,
        HETRT_DEVICE_ATTR_MAX_SHARED_MEMORY_PER_BLOCK, HETRT_DEVICE_ATTR_MULTIPROCESSOR_COUNT}) {
    HETRT_ASSERT_OK_AND_ASSIGN(int64_t v, cu->AttributeInt(kCu, attribute));
    EXPECT_GT(v, 0) << "attribute " << attribute;
  }
  EXPECT_EQ(cu->AttributeInt(kCu, 0x7777).status().code(), StatusCode::kNotFound);
}

// A launch of hetrt_test_args_kernel(out, i32, u32, i64, f32, f64) on one
// thread (grid and block 1, the launch values last), each scalar passed as TVM
// host code passes it: integers as INT, floats as FLOAT. A test may change an
// argument before Run to pass it wrongly.
struct ArgsKernelLaunch {
  std::vector<hetrt_value_t> values;
  std::vector<int32_t> codes;

  ArgsKernelLaunch(void* out, int64_t i32, int64_t u32, int64_t i64, double f32, double f64)
      : values{{.v_handle = out},  {.v_int64 = i32},   {.v_int64 = u32}, {.v_int64 = i64},
               {.v_float64 = f32}, {.v_float64 = f64}, {.v_int64 = 1},   {.v_int64 = 1}},
        codes{HETRT_TYPE_HANDLE, HETRT_TYPE_INT,   HETRT_TYPE_INT, HETRT_TYPE_INT,
              HETRT_TYPE_FLOAT,  HETRT_TYPE_FLOAT, HETRT_TYPE_INT, HETRT_TYPE_INT} {}

  Status Run(Module& m) const { return Launch(m, "hetrt_test_args_kernel", values, codes); }
};

TEST_F(CudaDevice, ScalarsReachTheKernelAtTheWidthsOfTheFunctionInfo) {
  HETRT_REQUIRE_CUDA_TEST_KERNELS();
  HETRT_ASSERT_OK_AND_ASSIGN(auto m, TestKernels());
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor out, Tensor::Empty({5}, kF64, Cu()->DeviceAllocator(kCu)));
  HETRT_ASSERT_OK(ArgsKernelLaunch(out.data(), -7, 4000000000LL, int64_t{1} << 40, 1.25, -3.5).Run(*m));
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor host, PluginRegistry::Global().ToHost(out));
  const double* v = host.data_as<double>();
  EXPECT_EQ(v[0], -7);
  EXPECT_EQ(v[1], 4000000000.0);
  EXPECT_EQ(v[2], std::ldexp(1.0, 40));
  EXPECT_EQ(v[3], 1.25);  // a float32 parameter got float32 bits, not a double's low half
  EXPECT_EQ(v[4], -3.5);
  // Wrong calls are errors naming the kernel.
  Status s = Launch(*m, "hetrt_test_args_kernel", {{.v_handle = out.data()}}, {HETRT_TYPE_HANDLE});
  EXPECT_NE(s.message().find("CUDA kernel 'hetrt_test_args_kernel' takes 8 arguments (6 kernel arguments + 2 launch "
                             "values), got 1"),
            std::string::npos)
      << s.message();
  ArgsKernelLaunch float_for_int(out.data(), 1, 1, 1, 1, 1);
  float_for_int.values[1] = {.v_float64 = 1};
  float_for_int.codes[1] = HETRT_TYPE_FLOAT;
  s = float_for_int.Run(*m);
  EXPECT_NE(s.message().find("argument 1 has type code 2, which does not fit its parameter (a scalar)"),
            std::string::npos)
      << s.message();
}

TEST_F(CudaDevice, DynamicSharedMemoryAbove48KiBRaisesTheFunctionsLimitOnce) {
  HETRT_REQUIRE_CUDA_TEST_KERNELS();
  HETRT_ASSERT_OK_AND_ASSIGN(auto m, TestKernels());
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor y, Tensor::Empty({64}, kF32, Cu()->DeviceAllocator(kCu)));
  constexpr int64_t kBytes = 64 * 1024;
  auto launch = [&](int64_t bytes) {
    return Launch(*m, "hetrt_test_shared_kernel",
                  {{.v_handle = y.data()}, {.v_int64 = bytes / 4}, {.v_int64 = 1}, {.v_int64 = 64}, {.v_int64 = bytes}},
                  {HETRT_TYPE_HANDLE, HETRT_TYPE_INT, HETRT_TYPE_INT, HETRT_TYPE_INT, HETRT_TYPE_INT});
  };
  const std::string log = FakeLog([&] {
    EXPECT_TRUE(launch(kBytes).ok());
    EXPECT_TRUE(launch(kBytes).ok());
  });
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor host, PluginRegistry::Global().ToHost(y));
  for (int t = 0; t < 64; ++t) EXPECT_EQ(host.data_as<float>()[t], static_cast<float>(t));
  if (OnFakeDriver()) {
    EXPECT_EQ(Count(log, "attribute hetrt_test_shared_kernel max_dynamic_shared=65536"), 1u) << log;
    EXPECT_EQ(Count(log, "launch hetrt_test_shared_kernel grid=1,1,1 block=64,1,1 shared=65536"), 2u) << log;
  }
  Status s = launch(int64_t{16} << 20);
  EXPECT_NE(s.message().find("CUDA kernel 'hetrt_test_shared_kernel' asks for 16777216 bytes of dynamic shared "
                             "memory; cuda:0 allows"),
            std::string::npos)
      << s.message();
}

TEST_F(CudaDevice, KernelsGoToTheCurrentStreamOfTheCallingThread) {
  HETRT_REQUIRE_CUDA_TEST_KERNELS();
  Plugin* cu = Cu();
  const hetrt_device_api_t* api = cu->device_api();
  hetrt_stream_t* streams[2] = {};
  for (auto& stream : streams) {
    auto args = CuArgs<hetrt_stream_create_args_t>();
    HETRT_ASSERT_OK(cu->Consume(api->stream_create(&args)));
    stream = args.stream;
  }
  HETRT_ASSERT_OK_AND_ASSIGN(auto m, TestKernels());
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor out0, Tensor::Empty({5}, kF64, cu->DeviceAllocator(kCu)));
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor out1, Tensor::Empty({5}, kF64, cu->DeviceAllocator(kCu)));
  auto work = [&](int k, Tensor& out) {
    auto set = CuArgs<hetrt_stream_current_args_t>();
    set.stream = streams[k];
    EXPECT_TRUE(cu->Consume(api->stream_set_current(&set)).ok());
    EXPECT_TRUE(ArgsKernelLaunch(out.data(), k, 0, 0, 0, 0).Run(*m).ok());
    auto sync = CuArgs<hetrt_stream_args_t>();
    sync.stream = streams[k];
    EXPECT_TRUE(cu->Consume(api->stream_synchronize(&sync)).ok());
    set.stream = nullptr;
    EXPECT_TRUE(cu->Consume(api->stream_set_current(&set)).ok());
    EXPECT_EQ(set.previous, streams[k]);
  };
  const std::string log = FakeLog([&] {
    std::thread a([&] { work(0, out0); });
    a.join();
    std::thread b([&] { work(1, out1); });
    b.join();
  });
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor h1, PluginRegistry::Global().ToHost(out1));
  EXPECT_EQ(h1.data_as<double>()[0], 1.0);
  // This thread's current stream was never set: still the default.
  auto get = CuArgs<hetrt_stream_current_args_t>();
  HETRT_ASSERT_OK(cu->Consume(api->stream_get_current(&get)));
  EXPECT_EQ(get.stream, nullptr);
  if (OnFakeDriver()) {
    // The two launches went to two different streams, neither the NULL one.
    std::vector<std::string> ids;
    for (size_t at = log.find("launch hetrt_test_args_kernel"); at != std::string::npos;
         at = log.find("launch hetrt_test_args_kernel", at + 1))
      ids.push_back(
          log.substr(log.find("stream=", at), log.find(' ', log.find("stream=", at)) - log.find("stream=", at)));
    ASSERT_EQ(ids.size(), 2u) << log;
    EXPECT_NE(ids[0], ids[1]) << log;
    EXPECT_NE(ids[0], "stream=0");
  }
  for (hetrt_stream_t* stream : streams) {
    auto args = CuArgs<hetrt_stream_args_t>();
    args.stream = stream;
    HETRT_ASSERT_OK(cu->Consume(api->stream_destroy(&args)));
  }
}

// Elapsed time agrees with the timestamps, and timing an event created
// without HETRT_EVENT_TIMING is refused with the reason. (Ordering, events
// never recorded, timestamps on the host clock: the conformance kit (sdk/conformance/).)
TEST_F(CudaDevice, ElapsedTimeAgreesWithTimestampsOfTimingEventsOnly) {
  const conformance::DeviceClient c(Cu(), kCu);
  HETRT_ASSERT_OK_AND_ASSIGN(hetrt_event_t * start, c.NewEvent(HETRT_EVENT_TIMING));
  HETRT_ASSERT_OK_AND_ASSIGN(hetrt_event_t * end, c.NewEvent(HETRT_EVENT_TIMING));
  HETRT_ASSERT_OK_AND_ASSIGN(hetrt_event_t * plain, c.NewEvent(0));
  HETRT_ASSERT_OK(c.Record(start, nullptr));
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor d, Tensor::Empty({1 << 20}, kF32, Cu()->DeviceAllocator(kCu)));
  HETRT_ASSERT_OK(PluginRegistry::Global().CopyTensor(Random({1 << 20}, 5), d));
  HETRT_ASSERT_OK(c.Record(end, nullptr));
  HETRT_ASSERT_OK(c.Record(plain, nullptr));
  HETRT_ASSERT_OK_AND_ASSIGN(double elapsed_ms, c.ElapsedMs(start, end));
  HETRT_ASSERT_OK_AND_ASSIGN(uint64_t start_ns, c.Timestamp(start));
  HETRT_ASSERT_OK_AND_ASSIGN(uint64_t end_ns, c.Timestamp(end));
  EXPECT_NEAR(static_cast<double>(end_ns - start_ns) / 1e6, elapsed_ms, 0.01);
  const Status untimed = c.ElapsedMs(start, plain).status();
  EXPECT_NE(untimed.message().find("needs events created with HETRT_EVENT_TIMING"), std::string::npos)
      << untimed.message();
  for (hetrt_event_t* e : {start, end, plain}) HETRT_ASSERT_OK(c.EventCall(c.api()->event_destroy, e));
}

TEST_F(CudaDevice, WorkspaceIsReusedOnTheStreamThatFreedItOnly) {
  Plugin* cu = Cu();
  const hetrt_device_api_t* api = cu->device_api();
  auto ws = [&](void* data, bool alloc) {
    auto args = CuArgs<hetrt_workspace_args_t>();
    args.nbytes = 3000;
    args.data = data;
    EXPECT_TRUE(cu->Consume(alloc ? api->workspace_alloc(&args) : api->workspace_free(&args)).ok());
    return args.data;
  };
  void* first = ws(nullptr, true);
  ws(first, false);
  EXPECT_EQ(ws(nullptr, true), first);  // same (default) stream: reused
  ws(first, false);
  auto create = CuArgs<hetrt_stream_create_args_t>();
  HETRT_ASSERT_OK(cu->Consume(api->stream_create(&create)));
  auto set = CuArgs<hetrt_stream_current_args_t>();
  set.stream = create.stream;
  HETRT_ASSERT_OK(cu->Consume(api->stream_set_current(&set)));
  void* other = ws(nullptr, true);  // another stream: the default stream's kernel may still use `first`
  EXPECT_NE(other, first);
  ws(other, false);
  set.stream = nullptr;
  HETRT_ASSERT_OK(cu->Consume(api->stream_set_current(&set)));
  auto destroy = CuArgs<hetrt_stream_args_t>();
  destroy.stream = create.stream;
  HETRT_ASSERT_OK(cu->Consume(api->stream_destroy(&destroy)));
  // Its stream gone, `other` serves the default stream too.
  void* a = ws(nullptr, true);
  void* b = ws(nullptr, true);
  EXPECT_TRUE((a == first && b == other) || (a == other && b == first));
  ws(a, false);
  ws(b, false);
  auto bad = CuArgs<hetrt_workspace_args_t>();
  int not_workspace = 0;
  bad.data = &not_workspace;
  EXPECT_FALSE(cu->Consume(api->workspace_free(&bad)).ok());
}

TEST_F(CudaDevice, ModuleErrorsNameTheKernelTheImageAndTheDriver) {
  // PTX of an ISA no driver knows yet.
  HETRT_ASSERT_OK_AND_ASSIGN(auto m, LoadCudaBlob(CudaBlob("ptx", {{"k", {kHandle}}}, Ptx("k", "99.0"))));
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor y, Tensor::Empty({4}, kF32, Cu()->DeviceAllocator(kCu)));
  Status s = Launch(*m, "k", {{.v_handle = y.data()}, {.v_int64 = 1}, {.v_int64 = 1}},
                    {HETRT_TYPE_HANDLE, HETRT_TYPE_INT, HETRT_TYPE_INT});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("loading the module of kernel 'k' (PTX 99.0 for sm_75)"), std::string::npos)
      << s.message();
  if (OnFakeDriver()) {
    EXPECT_NE(s.message().find("its PTX is newer than the driver (13.0) compiles; a newer NVIDIA driver is needed"),
              std::string::npos)
        << s.message();
    EXPECT_NE(s.message().find("JIT log: ptxas fatal: Unsupported .version"), std::string::npos) << s.message();
  }
  // A kernel the FunctionInfo lists but the image does not hold.
  HETRT_ASSERT_OK_AND_ASSIGN(auto missing, LoadCudaBlob(CudaBlob("ptx", {{"absent", {kHandle}}}, Ptx("k"))));
  s = Launch(*missing, "absent", {{.v_handle = y.data()}, {.v_int64 = 1}, {.v_int64 = 1}},
             {HETRT_TYPE_HANDLE, HETRT_TYPE_INT, HETRT_TYPE_INT});
  EXPECT_NE(s.message().find("CUDA kernel 'absent' is not in its module (PTX 8.0 for sm_75): CUDA_ERROR_NOT_FOUND"),
            std::string::npos)
      << s.message();
}

}  // namespace
}  // namespace hetrt::cuda_testing
