// Every path of the CUDA plugin that only a strict driver exercises, on a GPU
// or on the fake driver: memory an integrated GPU shares with the host, a
// bare cubin, events not reached yet, stream waits that order only up to
// their event, the clock's anchor renewal and its high-priority stream,
// running out of device memory, and a kernel fault that surfaces later.

#include <atomic>
#include <chrono>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "cuda_test_support.h"
#include "device_client.h"
#include "hetrt/sdk/clock.h"
#include "relax_test_support.h"

namespace hetrt::cuda_testing {
namespace {

using namespace std::chrono_literals;

class CudaPaths : public CudaDevice {};

// A gate in pinned host memory that hetrt_test_gate_kernel waits on; opened
// at the latest when it goes, so that a failing test never leaves a stream
// waiting forever.
class Gate {
 public:
  explicit Gate(const Device& cu) : cu_(cu) {
    auto gate = cu.Allocate(sizeof(int), 64, HETRT_MEMORY_HOST_PINNED);
    auto passed = cu.Allocate(sizeof(int));
    EXPECT_TRUE(gate.ok() && passed.ok());
    if (!gate.ok() || !passed.ok()) return;
    gate_ = static_cast<int*>(gate->data);
    passed_ = passed->data;
    __atomic_store_n(gate_, 0, __ATOMIC_RELEASE);
    const int zero = 0;
    EXPECT_TRUE(cu.Copy(&zero, 0, {kDLCPU, 0}, passed_, 0, kCu, sizeof zero).ok());
  }
  ~Gate() {
    Open();
    if (gate_) {
      EXPECT_TRUE(cu_.Free(gate_, HETRT_MEMORY_HOST_PINNED).ok());
    }
    if (passed_) {
      EXPECT_TRUE(cu_.Free(passed_).ok());  // waits for the gate kernel
    }
  }
  void Open() {
    if (gate_) __atomic_store_n(gate_, 1, __ATOMIC_RELEASE);
  }
  void* gate() const { return gate_; }
  void* passed() const { return passed_; }
  int Passed() const {
    int passed = -1;
    EXPECT_TRUE(cu_.Copy(passed_, 0, kCu, &passed, 0, {kDLCPU, 0}, sizeof passed).ok());
    return passed;
  }

 private:
  const Device& cu_;
  int* gate_ = nullptr;
  void* passed_ = nullptr;
};

bool Complete(const Device& cu, hetrt_event_t* event) {
  int32_t complete = -1;
  EXPECT_TRUE(cu.EventCall(cu.api()->event_query, event, &complete).ok());
  return complete == 1;
}

// Polls until the event completes; false after 10 s.
bool CompletesSoon(const Device& cu, hetrt_event_t* event) {
  for (auto deadline = std::chrono::steady_clock::now() + 10s; std::chrono::steady_clock::now() < deadline;) {
    if (Complete(cu, event)) return true;
    std::this_thread::sleep_for(1ms);
  }
  return false;
}

// ------------------------------------------------------------ memory

// ctest runs this on a discrete fake GPU (fake_driver.*) and an integrated
// one (fake_driver_integrated.*).
TEST_F(CudaPaths, HostVisibleMemoryIsSharedWithTheHostOnIntegratedGpusOnly) {
  const Device cu(Cu(), kCu);
  const bool integrated = cu.SharesHostMemory();
  if (OnFakeDriver()) {
    EXPECT_EQ(integrated, std::getenv("HETRT_FAKE_CUDA_INTEGRATED") != nullptr);
  }
  if (integrated) HETRT_REQUIRE_CUDA_TEST_KERNELS();  // the integrated half launches one
  auto allocation = cu.Allocate(64 * sizeof(float), 256, HETRT_MEMORY_HOST_VISIBLE);
  if (!integrated) {
    ASSERT_FALSE(allocation.ok());
    EXPECT_EQ(allocation.status().code(), StatusCode::kUnimplemented);
    EXPECT_NE(allocation.status().message().find("HOST_VISIBLE memory needs an integrated GPU that maps host memory; " +
                                                 cu.Name() + " is a discrete GPU"),
              std::string::npos)
        << allocation.status().message();
    return;
  }
  ASSERT_TRUE(allocation.ok()) << allocation.status().message();
  auto* host = static_cast<float*>(allocation->host_pointer);
  ASSERT_NE(host, nullptr);
  for (int i = 0; i < 64; ++i) host[i] = static_cast<float>(i);
  // A kernel writes through the device address; the host reads it in place.
  HETRT_ASSERT_OK_AND_ASSIGN(auto m, TestKernels());
  HETRT_ASSERT_OK(LaunchStore(*m, allocation->data, 3, 7.5));
  HETRT_ASSERT_OK(cu.Synchronize(nullptr));
  EXPECT_EQ(host[3], 7.5f);
  EXPECT_EQ(host[4], 4.0f);
  // Copies treat it as device memory of this GPU.
  float back[64] = {};
  HETRT_ASSERT_OK(cu.Copy(allocation->data, 0, kCu, back, 0, {kDLCPU, 0}, sizeof back));
  EXPECT_EQ(back[3], 7.5f);
  EXPECT_FALSE(cu.Free(allocation->data, HETRT_MEMORY_DEVICE).ok()) << "freed as another kind";
  HETRT_ASSERT_OK(cu.Free(allocation->data, HETRT_MEMORY_HOST_VISIBLE));
}

TEST_F(CudaPaths, RunningOutOfDeviceMemoryIsResourceExhaustedNamingTheDriversError) {
  auto own = OwnRegistry();
  HETRT_ASSERT_OK_AND_ASSIGN(Plugin * plugin, own->ForDevice(kCu));
  const Device cu(plugin, kCu);
  HETRT_ASSERT_OK_AND_ASSIGN(int64_t total, cu.AttributeInt(HETRT_DEVICE_ATTR_TOTAL_MEMORY));
  ASSERT_GT(total, 0);
  const uint64_t too_much = static_cast<uint64_t>(total) + 1;
  auto refused = cu.Allocate(too_much);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(refused.status().message().find("allocating " + std::to_string(too_much) +
                                            " bytes (cuMemAlloc): CUDA_ERROR_OUT_OF_MEMORY (2)"),
            std::string::npos)
      << refused.status().message();
  // Quarters until the device is full: the failure is counted nowhere.
  std::vector<void*> held;
  Status full;
  while (full.ok() && held.size() < 8) {
    auto quarter = cu.Allocate(static_cast<uint64_t>(total) / 4);
    if (quarter.ok())
      held.push_back(quarter->data);
    else
      full = quarter.status();
  }
  EXPECT_EQ(full.code(), StatusCode::kResourceExhausted) << full.message();
  EXPECT_LE(held.size(), 4u);
  HETRT_ASSERT_OK_AND_ASSIGN(auto stats, cu.MemoryStats());
  EXPECT_EQ(stats.num_allocations, held.size());
  // Workspace too: its message says what it was for.
  auto ws = CuArgs<hetrt_workspace_args_t>(plugin);
  ws.nbytes = static_cast<uint64_t>(total);
  Status workspace = plugin->Consume(plugin->device_api()->workspace_alloc(&ws));
  EXPECT_EQ(workspace.code(), StatusCode::kResourceExhausted) << workspace.message();
  EXPECT_NE(workspace.message().find("bytes of workspace: CUDA_ERROR_OUT_OF_MEMORY"), std::string::npos)
      << workspace.message();
  // Freed memory is the driver's again.
  for (void* data : held) HETRT_ASSERT_OK(cu.Free(data));
  HETRT_ASSERT_OK_AND_ASSIGN(auto half, cu.Allocate(static_cast<uint64_t>(total) / 2));
  HETRT_ASSERT_OK(cu.Free(half.data));
}

// ------------------------------------------------------------ images

TEST_F(CudaPaths, ABareCubinRunsAndOneForAnotherGpuSaysSo) {
  HETRT_REQUIRE_CUDA_TEST_KERNELS();
  HETRT_ASSERT_OK_AND_ASSIGN(std::string compute, Cu()->AttributeString(kCu, HETRT_DEVICE_ATTR_COMPUTE_VERSION));
  const int sm = compute == "9.0" ? 90 : 80;
  if (!OnFakeDriver() && compute[0] != '8' && compute != "9.0") GTEST_SKIP() << "cubins for sm_80 and sm_90 only";
  HETRT_ASSERT_OK_AND_ASSIGN(auto cubin, TestKernelsCubin(sm));
  const std::string_view data(reinterpret_cast<const char*>(cubin.data()), cubin.size());
  HETRT_ASSERT_OK_AND_ASSIGN(auto m, LoadCudaBlob(CudaBlob("cubin", TestKernelFunctions(), data)));
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor y, Tensor::Empty({4}, kF32, Cu()->DeviceAllocator(kCu)));
  HETRT_ASSERT_OK(LaunchStore(*m, y.data(), 2, 5.0));
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor host, PluginRegistry::Global().ToHost(y));
  EXPECT_EQ(host.data_as<float>()[2], 5.0f);
  // The other GPU's cubin: its load names the image and the GPU.
  const int other = sm == 80 ? 90 : 80;
  HETRT_ASSERT_OK_AND_ASSIGN(auto foreign, TestKernelsCubin(other));
  const std::string_view foreign_data(reinterpret_cast<const char*>(foreign.data()), foreign.size());
  HETRT_ASSERT_OK_AND_ASSIGN(auto n, LoadCudaBlob(CudaBlob("cubin", TestKernelFunctions(), foreign_data)));
  const Status s = LaunchStore(*n, y.data(), 2, 5.0);
  EXPECT_NE(s.message().find("loading the module of kernel 'hetrt_test_store_kernel' (cubin for sm_" +
                             std::to_string(other) + "): it has no code for this GPU (compute " + compute +
                             "): CUDA_ERROR_NO_BINARY_FOR_GPU"),
            std::string::npos)
      << s.message();
}

// ------------------------------------------------------------ streams and events

TEST_F(CudaPaths, EventsAreNotReadyUntilTheirStreamReachesThem) {
  HETRT_REQUIRE_CUDA_TEST_KERNELS();
  const Device cu(Cu(), kCu);
  HETRT_ASSERT_OK_AND_ASSIGN(auto m, TestKernels());
  Gate gate(cu);
  HETRT_ASSERT_OK_AND_ASSIGN(hetrt_event_t * reached, cu.NewEvent());
  HETRT_ASSERT_OK_AND_ASSIGN(hetrt_event_t * after, cu.NewEvent());
  HETRT_ASSERT_OK_AND_ASSIGN(hetrt_stream_t * other, cu.NewStream());
  HETRT_ASSERT_OK(LaunchGate(*m, gate.gate(), gate.passed()));  // the default stream waits at the gate
  HETRT_ASSERT_OK(cu.Record(reached, nullptr));
  HETRT_ASSERT_OK(cu.WaitEvent(other, reached));
  HETRT_ASSERT_OK(cu.Record(after, other));  // behind `reached` through the wait
  std::this_thread::sleep_for(20ms);
  EXPECT_FALSE(Complete(cu, reached));
  EXPECT_FALSE(Complete(cu, after));
  gate.Open();
  HETRT_ASSERT_OK(cu.SynchronizeEvent(reached));
  EXPECT_TRUE(Complete(cu, reached));
  EXPECT_EQ(gate.Passed(), 1);
  HETRT_ASSERT_OK(cu.Synchronize(other));
  EXPECT_TRUE(Complete(cu, after));
  for (hetrt_event_t* e : {reached, after}) HETRT_ASSERT_OK(cu.DestroyEvent(e));
  HETRT_ASSERT_OK(cu.DestroyStream(other));
}

// A Relax to_device between two GPUs is queued behind the source's work and
// ordered before the target's by an event: the VM call returns while the
// source's stream is held at a gate (the host does not wait for the device).
TEST_F(CudaPaths, RelaxToDeviceBetweenGpusIsQueuedNotWaitedFor) {
  HETRT_REQUIRE_CUDA_TEST_KERNELS();
  HETRT_ASSERT_OK_AND_ASSIGN(auto count, Cu()->CountDevices(kDLCUDA));
  if (count.count < 2) GTEST_SKIP() << "one CUDA device";
  const Device cu(Cu(), kCu);
  const DLDevice second{kDLCUDA, 1};
  HETRT_ASSERT_OK_AND_ASSIGN(auto m, TestKernels());
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor y, Tensor::Empty({4}, kF32, Cu()->DeviceAllocator(kCu)));
  HETRT_ASSERT_OK(LaunchStore(*m, y.data(), 0, 0.0));  // loads the kernels (lazy loading synchronizes)
  HETRT_ASSERT_OK(cu.Synchronize(nullptr));
  testing::RelaxProgram p;
  const auto [to_device] = p.Builtins("to_device");
  p.Function("main", {"x"}, 2);
  p.Call(to_device, 1, {p.Reg(0), p.Imm(kDLCUDA), p.Imm(1)});
  p.Ret(1);
  p.End();
  RelaxVirtualMachine::Options options;
  options.devices = {kCu, second, {kDLCPU, 0}};
  HETRT_ASSERT_OK_AND_ASSIGN(auto vm, p.Build(options));
  const Tensor host = testing::Random({1000}, 5);
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor x, Tensor::Empty({1000}, kF32, Cu()->DeviceAllocator(kCu)));
  HETRT_ASSERT_OK(PluginRegistry::Global().CopyTensor(host, x));
  const std::vector<RelaxValue> args{RelaxValue::FromTensor(x)};
  Gate gate(cu);
  HETRT_ASSERT_OK(LaunchGate(*m, gate.gate(), gate.passed()));  // cuda:0's default stream waits at the gate
  std::atomic<bool> returned{false}, opened_by_watchdog{false};
  std::thread watchdog([&] {  // a VM that waits for the device would wait for ever
    for (int i = 0; i < 1000 && !returned; ++i) std::this_thread::sleep_for(10ms);
    if (!returned) opened_by_watchdog = true, gate.Open();
  });
  auto moved = vm->Invoke("main", args);
  returned = true;
  watchdog.join();
  EXPECT_FALSE(opened_by_watchdog) << "the VM waited for cuda:0 before copying to cuda:1";
  gate.Open();
  HETRT_ASSERT_OK(moved.status());
  HETRT_ASSERT_OK(vm->Synchronize());
  const Tensor& out = moved->tensor();
  EXPECT_EQ(out.device().device_id, 1);
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor back, PluginRegistry::Global().ToHost(out));
  EXPECT_EQ(std::memcmp(back.data(), host.data(), host.nbytes()), 0);
}

// A stream waiting for an event waits for the work before it only: the work
// its stream got after the event does not hold it up.
TEST_F(CudaPaths, AStreamWaitOrdersOnlyUpToItsEvent) {
  HETRT_REQUIRE_CUDA_TEST_KERNELS();
  const Device cu(Cu(), kCu);
  HETRT_ASSERT_OK_AND_ASSIGN(auto m, TestKernels());
  Gate gate(cu);
  HETRT_ASSERT_OK_AND_ASSIGN(hetrt_stream_t * first, cu.NewStream());
  HETRT_ASSERT_OK_AND_ASSIGN(hetrt_stream_t * second, cu.NewStream());
  HETRT_ASSERT_OK_AND_ASSIGN(hetrt_event_t * before_gate, cu.NewEvent());
  HETRT_ASSERT_OK_AND_ASSIGN(hetrt_event_t * done, cu.NewEvent());
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor y, Tensor::Empty({4}, kF32, Cu()->DeviceAllocator(kCu)));
  // Both kernels run once first: a driver that loads functions lazily (CUDA
  // 12.2+'s default) synchronizes the context to load one, which would wait
  // for the gate and say nothing of the stream wait this test is about.
  HETRT_ASSERT_OK(LaunchStore(*m, y.data(), 0, 0.0));
  HETRT_ASSERT_OK(cu.Synchronize(nullptr));
  HETRT_ASSERT_OK(cu.Record(before_gate, first));
  HETRT_ASSERT_OK(cu.SetCurrentStream(first));
  HETRT_ASSERT_OK(LaunchGate(*m, gate.gate(), gate.passed()));
  HETRT_ASSERT_OK(cu.WaitEvent(second, before_gate));
  HETRT_ASSERT_OK(cu.SetCurrentStream(second));
  HETRT_ASSERT_OK(LaunchStore(*m, y.data(), 0, 1.0));
  HETRT_ASSERT_OK(cu.Record(done, second));
  HETRT_ASSERT_OK(cu.SetCurrentStream(nullptr));
  EXPECT_TRUE(CompletesSoon(cu, done)) << "the second stream waited for the gate behind the event";
  gate.Open();
  HETRT_ASSERT_OK(cu.Synchronize(first));
  for (hetrt_event_t* e : {before_gate, done}) HETRT_ASSERT_OK(cu.DestroyEvent(e));
  for (hetrt_stream_t* s : {first, second}) HETRT_ASSERT_OK(cu.DestroyStream(s));
}

// ------------------------------------------------------------ the device clock

// The clock samples on a stream of the greatest priority; streams made
// through the ABI have the default one.
TEST_F(CudaPaths, TheClockStreamHasTheGreatestPriority) {
  if (!OnFakeDriver()) GTEST_SKIP() << "stream priorities are read from the fake driver's log";
  auto own = OwnRegistry();  // a fresh instance: its streams are made below
  HETRT_ASSERT_OK_AND_ASSIGN(Plugin * plugin, own->ForDevice(kCu));
  const Device cu(plugin, kCu);
  hetrt_stream_t* user = nullptr;
  const std::string log = FakeLog([&] {
    EXPECT_TRUE(cu.Clock().ok());
    auto stream = cu.NewStream();
    EXPECT_TRUE(stream.ok());
    user = stream.ok() ? *stream : nullptr;
  });
  // "stream <id> cuda:0 priority=<p> ..." for each stream made; the clock's
  // sample is the first event recorded ("record stream=<id> event=<e>").
  const size_t record = log.find("record stream=");
  ASSERT_NE(record, std::string::npos) << log;
  const std::string clock_stream = log.substr(record + 14, log.find(' ', record + 14) - record - 14);
  EXPECT_NE(log.find("stream " + clock_stream + " cuda:0 priority=-5 "), std::string::npos) << log;
  EXPECT_EQ(Count(log, "priority=-5"), 1u) << log;
  EXPECT_EQ(Count(log, "priority=0 non-blocking"), 2u) << "the default stream and the ABI's:\n" << log;
  HETRT_ASSERT_OK(cu.DestroyStream(user));
}

// Event times are float milliseconds after an anchor event, renewed (chained)
// once older than 4 seconds by whatever reads a time first: event_timestamp
// alone keeps its resolution, and the device clock goes on without a jump.

// "elapsed cuEventElapsedTime start=<a> end=<b>" lines of the fake's log, as (a, b).
std::vector<std::pair<std::string, std::string>> Elapsed(const std::string& log) {
  std::vector<std::pair<std::string, std::string>> pairs;
  for (size_t at = log.find("elapsed cuEventElapsedTime start="); at != std::string::npos;
       at = log.find("elapsed cuEventElapsedTime start=", at + 1)) {
    const size_t start = at + 33, end = log.find(" end=", start);
    pairs.emplace_back(log.substr(start, end - start), log.substr(end + 5, log.find('\n', end) - end - 5));
  }
  return pairs;
}

TEST_F(CudaPaths, EventTimestampsRenewTheAnchorAndTheDeviceClockGoesOnWithoutAJump) {
  auto own = OwnRegistry();  // a fresh anchor
  HETRT_ASSERT_OK_AND_ASSIGN(Plugin * plugin, own->ForDevice(kCu));
  const Device cu(plugin, kCu);
  HETRT_ASSERT_OK_AND_ASSIGN(hetrt_event_t * early, cu.NewEvent(HETRT_EVENT_TIMING));
  HETRT_ASSERT_OK_AND_ASSIGN(hetrt_event_t * late, cu.NewEvent(HETRT_EVENT_TIMING));
  HETRT_ASSERT_OK(cu.Record(early, nullptr));
  HETRT_ASSERT_OK_AND_ASSIGN(uint64_t early_ns, cu.Timestamp(early));
  std::this_thread::sleep_for(4100ms);
  uint64_t host_before = 0, host_after = 0, late_ns = 0, early_again = 0;
  const std::string log = FakeLog([&] {
    host_before = sdk::MonotonicNs();
    EXPECT_TRUE(cu.Record(late, nullptr).ok());
    EXPECT_TRUE(cu.SynchronizeEvent(late).ok());
    host_after = sdk::MonotonicNs();
    auto t = cu.Timestamp(late);  // renews the anchor first
    EXPECT_TRUE(t.ok());
    late_ns = t.ok() ? *t : 0;
    auto e = cu.Timestamp(early);
    EXPECT_TRUE(e.ok());
    early_again = e.ok() ? *e : 0;
  });
  EXPECT_NEAR(static_cast<double>(early_again), static_cast<double>(early_ns), 2000.0)
      << "the device clock jumped at the renewal";
  // Mapped onto the host clock, `late` completed while the host waited for it.
  HETRT_ASSERT_OK_AND_ASSIGN(auto clock, cu.Clock());
  const double host_late = static_cast<double>(late_ns) - static_cast<double>(clock.device_ns) +
                           static_cast<double>(clock.host_ns);
  const double margin = static_cast<double>(clock.uncertainty_ns) + 100'000;
  EXPECT_GE(host_late, static_cast<double>(host_before) - margin);
  EXPECT_LE(host_late, static_cast<double>(host_after) + margin);
  if (OnFakeDriver()) {
    // The new anchor (the clock stream's record) timed from the old one, then both events from it.
    const size_t renewal = log.find(" event=", log.find("record stream=", log.find("record stream=") + 1));
    ASSERT_NE(renewal, std::string::npos) << log;
    const std::string anchor = log.substr(renewal + 7, log.find('\n', renewal) - renewal - 7);
    const auto pairs = Elapsed(log);
    ASSERT_EQ(pairs.size(), 3u) << log;
    EXPECT_EQ(pairs[0].second, anchor) << log;
    EXPECT_EQ(pairs[1].first, anchor) << log;
    EXPECT_EQ(pairs[2].first, anchor) << log;
  }
  for (hetrt_event_t* e : {early, late}) HETRT_ASSERT_OK(cu.DestroyEvent(e));
}

// ------------------------------------------------------------ asynchronous errors

// A kernel that stores out of its buffer: the launch succeeds (the fault
// happens later, on the device), the next synchronizing call reports it by
// name, and so does every later call on that device, as on a GPU. In a child
// process (a fault poisons the process's context for good).
// The sticky error a fault leaves, as the plugin names it ("CUDA_ERROR_X (NNN)").
// The fake reports an illegal address; a real GPU names the fault it saw (an
// H100 reports a store 1 GiB past an allocation as INVALID_ADDRESS_SPACE).
std::string StickyFaultName(const Status& s) {
  for (const char* fault : {"CUDA_ERROR_ILLEGAL_ADDRESS (700)", "CUDA_ERROR_MISALIGNED_ADDRESS (716)",
                            "CUDA_ERROR_INVALID_ADDRESS_SPACE (717)", "CUDA_ERROR_LAUNCH_FAILED (719)"})
    if (s.message().find(fault) != std::string::npos) return fault;
  return {};
}

std::string FaultAndReport() {
  std::string failures, fault = OnFakeDriver() ? "CUDA_ERROR_ILLEGAL_ADDRESS (700)" : "";
  auto expect = [&](const Status& s, const std::string& what) {
    if (fault.empty()) fault = StickyFaultName(s);  // the first report names it
    if (s.ok() || fault.empty() || s.message().find(fault) == std::string::npos)
      failures += what + ": " + (s.ok() ? std::string("ok") : s.message()) + " (expected " +
                  (fault.empty() ? std::string("a sticky fault") : fault) + ")\n";
  };
  const Device cu(Cu(), kCu);
  auto m = TestKernels();
  auto y = cu.Allocate(4 * sizeof(float));
  if (!m.ok() || !y.ok()) return "setup failed";
  if (Status launched = LaunchStore(**m, y->data, int64_t{1} << 28, 1.0); !launched.ok())
    failures += "the launch itself failed: " + launched.message() + "\n";
  const Status synced = cu.Synchronize(nullptr);
  expect(synced, "stream_synchronize");
  if (synced.message().find("cuda:0 (" + std::string("hetrt fake CUDA device 0") + "): work on the stream failed") ==
          std::string::npos &&
      OnFakeDriver())
    failures += "the synchronize does not say what failed: " + synced.message() + "\n";
  expect(cu.Allocate(64).status(), "allocate");
  float host[4] = {};
  expect(cu.Copy(host, 0, {kDLCPU, 0}, y->data, 0, kCu, sizeof host), "copy");
  expect(LaunchStore(**m, y->data, 0, 1.0), "a later launch");
  auto event = cu.NewEvent();
  expect(event.status(), "event_create");
  expect(cu.Synchronize(nullptr), "a second synchronize");
  return failures;
}

TEST_F(CudaPaths, AKernelFaultIsReportedByTheNextSynchronizationAndEveryLaterCall) {
  HETRT_REQUIRE_CUDA_TEST_KERNELS();
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        const std::string failures = FaultAndReport();
        std::fprintf(stderr, "%s", failures.empty() ? "every call named the fault\n" : failures.c_str());
        std::_Exit(failures.empty() ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "every call named the fault");
}

}  // namespace
}  // namespace hetrt::cuda_testing
