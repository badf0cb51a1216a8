// Tests of the CPU plugin through its C ABI only: the shared object is dlopen'd
// from HETRT_TEST_PLUGIN_DIR exactly as the core would load it.
#include <dlfcn.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "hetrt/plugin_abi.h"

#ifndef HETRT_TEST_PLUGIN_DIR
#error "HETRT_TEST_PLUGIN_DIR must name the folder holding libhetrt_plugin_cpu.so"
#endif

namespace {

constexpr DLDevice kCpu{kDLCPU, 0};

// The host side of the ABI: set_last_error is thread-local, like the core's.
thread_local std::string t_last_error;

void SetLastError(const char* message) { t_last_error = message; }
void Log(hetrt_log_level_t, const char*, const char*) {}

constexpr hetrt_host_api_t kHost{
    .struct_size = sizeof(hetrt_host_api_t),
    .abi_major = HETRT_PLUGIN_ABI_MAJOR,
    .abi_minor = HETRT_PLUGIN_ABI_MINOR,
    .set_last_error = SetLastError,
    .log = Log,
};

int32_t AvailableCores() {
  cpu_set_t mask;
  if (sched_getaffinity(0, sizeof(mask), &mask) == 0) return CPU_COUNT(&mask);
  return static_cast<int32_t>(std::thread::hardware_concurrency());
}

bool IsAligned(const void* pointer, uint64_t alignment) {
  return reinterpret_cast<uintptr_t>(pointer) % alignment == 0;
}

class CpuPluginTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    handle_ = dlopen(HETRT_TEST_PLUGIN_DIR "/libhetrt_plugin_cpu.so", RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(handle_, nullptr) << dlerror();
    auto get_api =
        reinterpret_cast<hetrt_plugin_get_api_fn>(dlsym(handle_, HETRT_PLUGIN_ENTRY_SYMBOL));
    ASSERT_NE(get_api, nullptr) << dlerror();
    api_ = get_api();
    ASSERT_NE(api_, nullptr);
    ASSERT_EQ(Consume(api_->initialize(&kHost)), "");
  }

  static void TearDownTestSuite() {
    if (api_ != nullptr) api_->shutdown();
    if (handle_ != nullptr) dlclose(handle_);
    api_ = nullptr;
    handle_ = nullptr;
  }

  void SetUp() override { ASSERT_NE(api_, nullptr) << "the plugin did not load"; }

  // "" for success (NULL); otherwise the error's message. Releases the error.
  static std::string Consume(hetrt_error_t* error) {
    if (error == nullptr) return "";
    std::string message = api_->error_message(error);
    api_->error_destroy(error);
    return message.empty() ? "(error with an empty message)" : message;
  }

  static const hetrt_device_api_t& device() { return *api_->device; }
  static const hetrt_parallel_api_t& parallel() { return *api_->parallel; }

  static void SetThreads(int32_t count) {
    ASSERT_EQ(Consume(api_->set_option("num_threads", std::to_string(count).c_str())), "");
    ASSERT_EQ(parallel().num_threads(), count);
  }

  static void* Allocate(uint64_t nbytes, uint64_t alignment) {
    hetrt_allocate_args_t args{};
    args.struct_size = sizeof(args);
    args.device = kCpu;
    args.nbytes = nbytes;
    args.alignment = alignment;
    EXPECT_EQ(Consume(device().allocate(&args)), "");
    return args.data;
  }

  static std::string Copy(const void* src, uint64_t src_offset, void* dst, uint64_t dst_offset,
                          uint64_t nbytes, DLDevice src_device = kCpu,
                          DLDevice dst_device = kCpu) {
    hetrt_copy_args_t args{};
    args.struct_size = sizeof(args);
    args.src = src;
    args.src_offset = src_offset;
    args.src_device = src_device;
    args.dst = dst;
    args.dst_offset = dst_offset;
    args.dst_device = dst_device;
    args.nbytes = nbytes;
    return Consume(device().copy(&args));
  }

  static inline void* handle_ = nullptr;
  static inline const hetrt_plugin_api_t* api_ = nullptr;
};

// ---------------------------------------------------------------------------
// Plugin table and options.

TEST_F(CpuPluginTest, EntrySymbolDescribesAnAbiVersion1HostPlugin) {
  EXPECT_EQ(api_->abi_major, HETRT_PLUGIN_ABI_MAJOR);
  EXPECT_GE(api_->struct_size, sizeof(hetrt_plugin_api_t));
  EXPECT_STREQ(api_->name, "cpu");
  ASSERT_EQ(api_->num_device_types, 1u);
  EXPECT_EQ(api_->device_types[0], kDLCPU);
  EXPECT_EQ(api_->num_type_keys, 0u);
  ASSERT_NE(api_->device, nullptr);
  ASSERT_NE(api_->parallel, nullptr);
  EXPECT_GE(device().struct_size, sizeof(hetrt_device_api_t));
  EXPECT_GE(parallel().struct_size, sizeof(hetrt_parallel_api_t));
}

TEST_F(CpuPluginTest, SecondInitializeIsRefused) {
  EXPECT_NE(Consume(api_->initialize(&kHost)), "");
}

TEST_F(CpuPluginTest, SetOptionNumThreadsResizesThePool) {
  SetThreads(3);
  EXPECT_EQ(parallel().num_threads(), 3);
  SetThreads(1);
  SetThreads(2);
}

TEST_F(CpuPluginTest, UnknownOptionIsAnErrorNamingTheKey) {
  hetrt_error_t* error = api_->set_option("num_fairies", "3");
  ASSERT_NE(error, nullptr);
  EXPECT_EQ(api_->error_code(error), HETRT_STATUS_NOT_FOUND);
  EXPECT_NE(std::string(api_->error_message(error)).find("num_fairies"), std::string::npos);
  api_->error_destroy(error);
}

TEST_F(CpuPluginTest, NumThreadsRejectsValuesThatAreNotAPositiveInteger) {
  SetThreads(2);
  for (const char* value : {"0", "-1", "abc", "3x", "", " 3", "2.5", "99999999999"}) {
    hetrt_error_t* error = api_->set_option("num_threads", value);
    ASSERT_NE(error, nullptr) << "accepted \"" << value << "\"";
    EXPECT_EQ(api_->error_code(error), HETRT_STATUS_INVALID_ARGUMENT);
    api_->error_destroy(error);
  }
  EXPECT_EQ(parallel().num_threads(), 2);
}

TEST_F(CpuPluginTest, DefaultThreadCountIsTheCoreCountAndHetrtNumThreadsOverridesIt) {
  api_->shutdown();
  EXPECT_EQ(parallel().num_threads(), 0);

  ASSERT_EQ(setenv("HETRT_NUM_THREADS", "2", 1), 0);
  EXPECT_EQ(Consume(api_->initialize(&kHost)), "");
  EXPECT_EQ(parallel().num_threads(), 2);
  api_->shutdown();

  ASSERT_EQ(setenv("HETRT_NUM_THREADS", "lots", 1), 0);
  const std::string message = Consume(api_->initialize(&kHost));
  EXPECT_NE(message.find("HETRT_NUM_THREADS"), std::string::npos) << message;

  ASSERT_EQ(unsetenv("HETRT_NUM_THREADS"), 0);
  ASSERT_EQ(Consume(api_->initialize(&kHost)), "");
  EXPECT_EQ(parallel().num_threads(), AvailableCores());
}

// ---------------------------------------------------------------------------
// Device: count, name, memory, copies, streams, events.

TEST_F(CpuPluginTest, DeviceCountIsOneForTheCpuDeviceType) {
  hetrt_device_count_args_t args{};
  args.struct_size = sizeof(args);
  args.device_type = kDLCPU;
  ASSERT_EQ(Consume(device().device_count(&args)), "");
  EXPECT_EQ(args.count, 1);
}

TEST_F(CpuPluginTest, DeviceCountRefusesADeviceTypeThePluginDoesNotServe) {
  hetrt_device_count_args_t args{};
  args.struct_size = sizeof(args);
  args.device_type = kDLOpenCL;
  EXPECT_NE(Consume(device().device_count(&args)), "");
}

TEST_F(CpuPluginTest, DeviceNameIncludesTheThreadCount) {
  SetThreads(3);
  char name[256];
  ASSERT_EQ(Consume(device().device_name(kCpu, name, sizeof(name))), "");
  EXPECT_NE(std::string(name).find("(3 threads)"), std::string::npos) << name;
}

TEST_F(CpuPluginTest, DeviceNameIsTruncatedToASmallBuffer) {
  char name[4];
  ASSERT_EQ(Consume(device().device_name(kCpu, name, sizeof(name))), "");
  EXPECT_EQ(std::strlen(name), 3u);
}

TEST_F(CpuPluginTest, AllocateHonorsAlignment64And4096AndMemoryIsWritable) {
  for (uint64_t alignment : {64, 4096}) {
    for (uint64_t nbytes : {1, 100, 4097, 1 << 20}) {
      void* data = Allocate(nbytes, alignment);
      ASSERT_NE(data, nullptr);
      EXPECT_TRUE(IsAligned(data, alignment)) << data << " for alignment " << alignment;
      std::memset(data, 0xAB, nbytes);
      EXPECT_EQ(static_cast<unsigned char*>(data)[nbytes - 1], 0xAB);
      EXPECT_EQ(Consume(device().free(kCpu, data)), "");
    }
  }
}

TEST_F(CpuPluginTest, AllocateRaisesSmallAlignmentsTo64) {
  void* data = Allocate(10, 1);
  ASSERT_NE(data, nullptr);
  EXPECT_TRUE(IsAligned(data, 64));
  EXPECT_EQ(Consume(device().free(kCpu, data)), "");
}

TEST_F(CpuPluginTest, AllocateRejectsAnAlignmentThatIsNotAPowerOfTwo) {
  hetrt_allocate_args_t args{};
  args.struct_size = sizeof(args);
  args.device = kCpu;
  args.nbytes = 64;
  args.alignment = 48;
  hetrt_error_t* error = device().allocate(&args);
  ASSERT_NE(error, nullptr);
  EXPECT_EQ(api_->error_code(error), HETRT_STATUS_INVALID_ARGUMENT);
  api_->error_destroy(error);
}

TEST_F(CpuPluginTest, AllocateRejectsADeviceOtherThanCpu0) {
  hetrt_allocate_args_t args{};
  args.struct_size = sizeof(args);
  args.device = DLDevice{kDLCPU, 1};
  args.nbytes = 64;
  args.alignment = 64;
  EXPECT_NE(Consume(device().allocate(&args)), "");
}

TEST_F(CpuPluginTest, CopyWithOffsetsRoundTripsOddSizesExactly) {
  constexpr uint64_t kSrcOffset = 5;
  constexpr uint64_t kDstOffset = 7;
  constexpr unsigned char kGuard = 0xEE;
  for (uint64_t nbytes : {1, 3, 4097}) {
    std::vector<unsigned char> source(nbytes + kSrcOffset);
    for (size_t i = 0; i < source.size(); ++i) source[i] = static_cast<unsigned char>(i * 31 + 7);
    auto* on_device = static_cast<unsigned char*>(Allocate(nbytes + kDstOffset + 1, 64));
    ASSERT_NE(on_device, nullptr);
    std::memset(on_device, kGuard, nbytes + kDstOffset + 1);

    ASSERT_EQ(Copy(source.data(), kSrcOffset, on_device, kDstOffset, nbytes), "");
    EXPECT_EQ(on_device[kDstOffset - 1], kGuard) << "wrote before the destination range";
    EXPECT_EQ(on_device[kDstOffset + nbytes], kGuard) << "wrote past the destination range";

    std::vector<unsigned char> back(nbytes + 2, kGuard);
    ASSERT_EQ(Copy(on_device, kDstOffset, back.data(), 1, nbytes), "");
    EXPECT_EQ(std::memcmp(back.data() + 1, source.data() + kSrcOffset, nbytes), 0)
        << nbytes << " bytes did not round-trip";
    EXPECT_EQ(back.front(), kGuard);
    EXPECT_EQ(back.back(), kGuard);
    EXPECT_EQ(Consume(device().free(kCpu, on_device)), "");
  }
}

TEST_F(CpuPluginTest, CopyRefusesADeviceThatIsNotTheCpu) {
  char source[8] = {};
  char destination[8] = {};
  EXPECT_NE(Copy(source, 0, destination, 0, sizeof(source), DLDevice{kDLCUDA, 0}, kCpu), "");
  EXPECT_NE(Copy(source, 0, destination, 0, sizeof(source), kCpu, DLDevice{kDLOpenCL, 0}), "");
}

TEST_F(CpuPluginTest, StreamsAreTheSynchronousDefaultStream) {
  hetrt_stream_t* stream = reinterpret_cast<hetrt_stream_t*>(0x1);
  ASSERT_EQ(Consume(device().stream_create(kCpu, &stream)), "");
  EXPECT_EQ(stream, nullptr);
  EXPECT_EQ(Consume(device().synchronize(kCpu, stream)), "");
  EXPECT_EQ(Consume(device().stream_destroy(kCpu, stream)), "");
}

TEST_F(CpuPluginTest, EventElapsedMsMeasuresTheTimeBetweenRecords) {
  hetrt_event_t* start = nullptr;
  hetrt_event_t* end = nullptr;
  ASSERT_EQ(Consume(device().event_create(kCpu, &start)), "");
  ASSERT_EQ(Consume(device().event_create(kCpu, &end)), "");
  double elapsed_ms = -1;
  EXPECT_NE(Consume(device().event_elapsed_ms(kCpu, start, end, &elapsed_ms)), "")
      << "events that were never recorded have no elapsed time";

  ASSERT_EQ(Consume(device().event_record(kCpu, start, nullptr)), "");
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_EQ(Consume(device().event_record(kCpu, end, nullptr)), "");
  ASSERT_EQ(Consume(device().event_elapsed_ms(kCpu, start, end, &elapsed_ms)), "");
  EXPECT_GE(elapsed_ms, 5.0);
  EXPECT_LT(elapsed_ms, 5000.0);

  EXPECT_EQ(Consume(device().event_destroy(kCpu, start)), "");
  EXPECT_EQ(Consume(device().event_destroy(kCpu, end)), "");
}

// ---------------------------------------------------------------------------
// Parallel launch.

// What the tasks of one launch saw; shared by all of them.
struct LaunchRecord {
  explicit LaunchRecord(int32_t max_tasks) : runs(max_tasks), num_task_seen(max_tasks) {}
  std::vector<std::atomic<int32_t>> runs;
  std::vector<std::atomic<int32_t>> num_task_seen;
};

int32_t CountRun(int32_t task_id, hetrt_parallel_group_env_t* env, void* cdata) {
  auto* record = static_cast<LaunchRecord*>(cdata);
  record->runs.at(task_id).fetch_add(1);
  record->num_task_seen.at(task_id).store(env->num_task);
  return 0;
}

TEST_F(CpuPluginTest, LaunchWithZeroTasksRunsEachTaskIdOnceOnePerThread) {
  SetThreads(3);
  LaunchRecord record(16);
  ASSERT_EQ(parallel().launch(CountRun, &record, 0), 0);
  for (int32_t task_id = 0; task_id < 16; ++task_id) {
    const int32_t expected = task_id < 3 ? 1 : 0;
    EXPECT_EQ(record.runs[task_id].load(), expected) << "task " << task_id;
    if (task_id < 3) {
      EXPECT_EQ(record.num_task_seen[task_id].load(), 3);
    }
  }
}

TEST_F(CpuPluginTest, LaunchWithMoreTasksThanThreadsRunsIds0To6Once) {
  SetThreads(3);
  LaunchRecord record(16);
  ASSERT_EQ(parallel().launch(CountRun, &record, 7), 0);
  for (int32_t task_id = 0; task_id < 16; ++task_id) {
    EXPECT_EQ(record.runs[task_id].load(), task_id < 7 ? 1 : 0) << "task " << task_id;
    if (task_id < 7) {
      EXPECT_EQ(record.num_task_seen[task_id].load(), 7);
    }
  }
}

TEST_F(CpuPluginTest, LaunchWithFewerTasksThanThreadsRunsOnlyThoseIds) {
  SetThreads(4);
  for (int32_t num_task : {1, 2, 3}) {
    LaunchRecord record(8);
    ASSERT_EQ(parallel().launch(CountRun, &record, num_task), 0);
    for (int32_t task_id = 0; task_id < 8; ++task_id) {
      EXPECT_EQ(record.runs[task_id].load(), task_id < num_task ? 1 : 0)
          << "task " << task_id << " of " << num_task;
    }
  }
}

struct ThreadRecord {
  std::mutex mutex;
  std::vector<std::thread::id> thread_of_task = std::vector<std::thread::id>(64);
  std::set<pid_t> kernel_thread_ids;
};

int32_t RecordThread(int32_t task_id, hetrt_parallel_group_env_t*, void* cdata) {
  auto* record = static_cast<ThreadRecord*>(cdata);
  std::lock_guard<std::mutex> lock(record->mutex);
  record->thread_of_task.at(task_id) = std::this_thread::get_id();
  record->kernel_thread_ids.insert(static_cast<pid_t>(syscall(SYS_gettid)));
  return 0;
}

TEST_F(CpuPluginTest, CallingThreadRunsTaskZeroAndOtherTasksRunOnOtherThreads) {
  SetThreads(3);
  ThreadRecord record;
  ASSERT_EQ(parallel().launch(RecordThread, &record, 0), 0);
  EXPECT_EQ(record.thread_of_task[0], std::this_thread::get_id());
  EXPECT_EQ(record.kernel_thread_ids.size(), 3u) << "each of the 3 tasks on its own thread";
}

TEST_F(CpuPluginTest, WorkersPersistAcrossLaunches) {
  SetThreads(3);
  ThreadRecord record;
  for (int launch = 0; launch < 200; ++launch) {
    ASSERT_EQ(parallel().launch(RecordThread, &record, 0), 0);
  }
  // Kernel thread ids are handed out afresh, so new threads would show up here.
  EXPECT_EQ(record.kernel_thread_ids.size(), 3u);
}

int32_t FailOnTask1(int32_t task_id, hetrt_parallel_group_env_t*, void*) {
  return task_id == 1 ? -1 : 0;
}

int32_t AlwaysFail(int32_t, hetrt_parallel_group_env_t*, void*) { return -1; }

TEST_F(CpuPluginTest, FailingTaskMakesLaunchReturnNonZero) {
  SetThreads(3);
  EXPECT_NE(parallel().launch(FailOnTask1, nullptr, 0), 0);
  EXPECT_NE(parallel().launch(FailOnTask1, nullptr, 7), 0);
  EXPECT_NE(parallel().launch(AlwaysFail, nullptr, 1), 0) << "the serial path too";
  LaunchRecord record(4);
  EXPECT_EQ(parallel().launch(CountRun, &record, 0), 0) << "a failure does not stick";
}

// Each round: every task writes its slot, barrier, checks every slot, barrier
// (so that nobody overwrites a slot that another task is still checking).
struct BarrierRecord {
  static constexpr int64_t kRounds = 200;
  const hetrt_parallel_api_t* parallel = nullptr;
  std::vector<int64_t> slots = std::vector<int64_t>(64);  // plain memory on purpose
  std::atomic<int32_t> stale_reads{0};
  std::atomic<int32_t> barrier_failures{0};
};

int32_t WriteBarrierCheck(int32_t task_id, hetrt_parallel_group_env_t* env, void* cdata) {
  auto* record = static_cast<BarrierRecord*>(cdata);
  for (int64_t round = 1; round <= BarrierRecord::kRounds; ++round) {
    record->slots[task_id] = round * 1000 + task_id;
    if (record->parallel->barrier(task_id, env) != 0) record->barrier_failures.fetch_add(1);
    for (int32_t other = 0; other < env->num_task; ++other) {
      if (record->slots[other] != round * 1000 + other) record->stale_reads.fetch_add(1);
    }
    if (record->parallel->barrier(task_id, env) != 0) record->barrier_failures.fetch_add(1);
  }
  return 0;
}

TEST_F(CpuPluginTest, BarrierMakesEveryTasksEarlierWritesVisibleToAllTasks) {
  for (int32_t threads : {2, 3}) {
    SetThreads(threads);
    for (int32_t num_task : {0, threads}) {
      BarrierRecord record;
      record.parallel = api_->parallel;
      ASSERT_EQ(parallel().launch(WriteBarrierCheck, &record, num_task), 0);
      EXPECT_EQ(record.barrier_failures.load(), 0);
      EXPECT_EQ(record.stale_reads.load(), 0);
    }
  }
}

struct BarrierResult {
  const hetrt_parallel_api_t* parallel = nullptr;
  std::atomic<int32_t> failures{0};
  std::atomic<int32_t> failures_with_message{0};
};

int32_t CallBarrierOnce(int32_t task_id, hetrt_parallel_group_env_t* env, void* cdata) {
  auto* result = static_cast<BarrierResult*>(cdata);
  t_last_error.clear();
  if (result->parallel->barrier(task_id, env) != 0) {
    result->failures.fetch_add(1);
    if (!t_last_error.empty()) result->failures_with_message.fetch_add(1);
  }
  return 0;
}

TEST_F(CpuPluginTest, BarrierFailsInsteadOfHangingWhenTasksOutnumberThreads) {
  SetThreads(3);
  BarrierResult result;
  result.parallel = api_->parallel;
  ASSERT_EQ(parallel().launch(CallBarrierOnce, &result, 7), 0);
  EXPECT_EQ(result.failures.load(), 7);
  EXPECT_EQ(result.failures_with_message.load(), 7);
}

TEST_F(CpuPluginTest, TenThousandRepeatedLaunchesRunEveryTaskExactlyOnce) {
  SetThreads(3);
  constexpr int kLaunches = 10000;
  LaunchRecord record(8);
  for (int launch = 0; launch < kLaunches; ++launch) {
    ASSERT_EQ(parallel().launch(CountRun, &record, 0), 0) << "launch " << launch;
  }
  for (int32_t task_id = 0; task_id < 8; ++task_id) {
    EXPECT_EQ(record.runs[task_id].load(), task_id < 3 ? kLaunches : 0) << "task " << task_id;
  }
}

TEST_F(CpuPluginTest, RepeatedLaunchesOfMixedTaskCountsStayCorrect) {
  SetThreads(3);
  constexpr int32_t kTaskCounts[] = {0, 1, 2, 3, 5, 7};
  constexpr int kRepeats = 1000;
  LaunchRecord record(8);
  for (int repeat = 0; repeat < kRepeats; ++repeat) {
    for (int32_t num_task : kTaskCounts) {
      ASSERT_EQ(parallel().launch(CountRun, &record, num_task), 0);
    }
  }
  for (int32_t task_id = 0; task_id < 8; ++task_id) {
    int32_t expected = 0;
    for (int32_t num_task : kTaskCounts) expected += task_id < (num_task == 0 ? 3 : num_task);
    EXPECT_EQ(record.runs[task_id].load(), expected * kRepeats) << "task " << task_id;
  }
}

TEST_F(CpuPluginTest, ResizingThePoolBetweenLaunchesKeepsLaunchesCorrect) {
  for (int32_t threads : {3, 1, 4, 2, 2, 3}) {
    SetThreads(threads);
    LaunchRecord record(8);
    ASSERT_EQ(parallel().launch(CountRun, &record, 0), 0);
    for (int32_t task_id = 0; task_id < 8; ++task_id) {
      EXPECT_EQ(record.runs[task_id].load(), task_id < threads ? 1 : 0)
          << "task " << task_id << " with " << threads << " threads";
    }
  }
}

struct NestedRecord {
  const hetrt_parallel_api_t* parallel = nullptr;
  int32_t inner_num_task = 0;
  std::vector<LaunchRecord*> inner;  // one per outer task
  std::atomic<int32_t> failures{0};
};

int32_t LaunchInsideTask(int32_t task_id, hetrt_parallel_group_env_t*, void* cdata) {
  auto* record = static_cast<NestedRecord*>(cdata);
  if (record->parallel->launch(CountRun, record->inner.at(task_id), record->inner_num_task) != 0) {
    record->failures.fetch_add(1);
  }
  return 0;
}

TEST_F(CpuPluginTest, NestedLaunchRunsSeriallyOnTheCallingTaskWithoutDeadlock) {
  SetThreads(3);
  for (int32_t inner_num_task : {0, 4}) {
    std::vector<LaunchRecord> inner;
    for (int i = 0; i < 3; ++i) inner.emplace_back(8);
    NestedRecord record;
    record.parallel = api_->parallel;
    record.inner_num_task = inner_num_task;
    for (LaunchRecord& launch : inner) record.inner.push_back(&launch);

    ASSERT_EQ(parallel().launch(LaunchInsideTask, &record, 0), 0);
    EXPECT_EQ(record.failures.load(), 0);
    // A nested launch cannot use the busy workers: num_task 0 becomes one task.
    const int32_t expected_tasks = inner_num_task == 0 ? 1 : inner_num_task;
    for (const LaunchRecord& launch : inner) {
      for (int32_t task_id = 0; task_id < 8; ++task_id) {
        EXPECT_EQ(launch.runs[task_id].load(), task_id < expected_tasks ? 1 : 0);
        if (task_id < expected_tasks) {
          EXPECT_EQ(launch.num_task_seen[task_id].load(), expected_tasks);
        }
      }
    }
  }
}

TEST_F(CpuPluginTest, LaunchesFromTwoThreadsAtOnceBothComplete) {
  SetThreads(2);
  constexpr int kLaunches = 2000;
  LaunchRecord first(8);
  LaunchRecord second(8);
  std::atomic<int32_t> failures{0};
  auto launch_many = [&](LaunchRecord* record) {
    for (int launch = 0; launch < kLaunches; ++launch) {
      if (parallel().launch(CountRun, record, 2) != 0) failures.fetch_add(1);
    }
  };
  std::thread other(launch_many, &second);
  launch_many(&first);
  other.join();
  EXPECT_EQ(failures.load(), 0);
  for (const LaunchRecord* record : {&first, &second}) {
    EXPECT_EQ(record->runs[0].load(), kLaunches);
    EXPECT_EQ(record->runs[1].load(), kLaunches);
    EXPECT_EQ(record->runs[2].load(), 0);
  }
}

// ---------------------------------------------------------------------------
// Workspace.

TEST_F(CpuPluginTest, WorkspaceAllocReturns64ByteAlignedWritableMemory) {
  std::vector<void*> blocks;
  for (uint64_t nbytes : {1, 3, 64, 100, 4097, 200000, 1 << 20}) {
    void* data = device().workspace_alloc(kCpu, nbytes);
    ASSERT_NE(data, nullptr) << nbytes;
    EXPECT_TRUE(IsAligned(data, 64)) << data;
    std::memset(data, 0x5A, nbytes);
    blocks.push_back(data);
  }
  for (auto data = blocks.rbegin(); data != blocks.rend(); ++data) {
    EXPECT_EQ(device().workspace_free(kCpu, *data), 0);
  }
}

TEST_F(CpuPluginTest, WorkspaceLifoFreesReuseTheSameMemory) {
  void* first = device().workspace_alloc(kCpu, 1000);
  void* second = device().workspace_alloc(kCpu, 2000);
  ASSERT_NE(first, nullptr);
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(device().workspace_free(kCpu, second), 0);
  EXPECT_EQ(device().workspace_free(kCpu, first), 0);
  EXPECT_EQ(device().workspace_alloc(kCpu, 1000), first);
  EXPECT_EQ(device().workspace_free(kCpu, first), 0);
}

TEST_F(CpuPluginTest, WorkspaceNonLifoFreesKeepLiveDataAndReleaseEverything) {
  constexpr uint64_t kBytes = 3000;
  auto* a = static_cast<unsigned char*>(device().workspace_alloc(kCpu, kBytes));
  auto* b = static_cast<unsigned char*>(device().workspace_alloc(kCpu, kBytes));
  auto* c = static_cast<unsigned char*>(device().workspace_alloc(kCpu, kBytes));
  ASSERT_TRUE(a && b && c);
  std::memset(a, 0xA1, kBytes);
  std::memset(b, 0xB2, kBytes);
  std::memset(c, 0xC3, kBytes);

  EXPECT_EQ(device().workspace_free(kCpu, a), 0) << "bottom first";
  auto* d = static_cast<unsigned char*>(device().workspace_alloc(kCpu, kBytes));
  ASSERT_NE(d, nullptr);
  std::memset(d, 0xD4, kBytes);
  EXPECT_EQ(device().workspace_free(kCpu, c), 0) << "middle while d is above it";
  for (uint64_t i = 0; i < kBytes; ++i) {
    ASSERT_EQ(b[i], 0xB2) << "b overwritten at " << i;
    ASSERT_EQ(d[i], 0xD4) << "d overwritten at " << i;
  }
  EXPECT_EQ(device().workspace_free(kCpu, d), 0);
  EXPECT_EQ(device().workspace_free(kCpu, b), 0);
  // Every allocation is gone, so the stack starts again at the bottom.
  EXPECT_EQ(device().workspace_alloc(kCpu, kBytes), a);
  EXPECT_EQ(device().workspace_free(kCpu, a), 0);
}

TEST_F(CpuPluginTest, WorkspaceAddressesRepeatOnceTheBlocksAreWarm) {
  // Larger than one initial block, so the first pass has to grow the stack.
  constexpr uint64_t kSizes[] = {60000, 100000, 1 << 20, 5};
  auto run_pass = [&] {
    std::vector<void*> pointers;
    for (uint64_t nbytes : kSizes) pointers.push_back(device().workspace_alloc(kCpu, nbytes));
    for (auto data = pointers.rbegin(); data != pointers.rend(); ++data) {
      EXPECT_EQ(device().workspace_free(kCpu, *data), 0);
    }
    return pointers;
  };
  run_pass();
  const std::vector<void*> warm = run_pass();
  EXPECT_EQ(run_pass(), warm);
}

TEST_F(CpuPluginTest, WorkspaceFreeOfAPointerItDidNotHandOutFails) {
  int not_workspace = 0;
  t_last_error.clear();
  EXPECT_NE(device().workspace_free(kCpu, &not_workspace), 0);
  EXPECT_FALSE(t_last_error.empty());

  void* data = device().workspace_alloc(kCpu, 128);
  ASSERT_NE(data, nullptr);
  EXPECT_EQ(device().workspace_free(kCpu, data), 0);
  EXPECT_NE(device().workspace_free(kCpu, data), 0) << "double free";
}

TEST_F(CpuPluginTest, WorkspaceFreeFromAnotherThreadFails) {
  void* data = device().workspace_alloc(kCpu, 128);
  ASSERT_NE(data, nullptr);
  int32_t status_elsewhere = 0;
  std::thread([&] { status_elsewhere = device().workspace_free(kCpu, data); }).join();
  EXPECT_NE(status_elsewhere, 0);
  EXPECT_EQ(device().workspace_free(kCpu, data), 0);
}

TEST_F(CpuPluginTest, WorkspaceAllocForAnotherDeviceFailsWithAMessage) {
  t_last_error.clear();
  EXPECT_EQ(device().workspace_alloc(DLDevice{kDLOpenCL, 0}, 64), nullptr);
  EXPECT_FALSE(t_last_error.empty());
}

struct WorkspaceStress {
  const hetrt_device_api_t* device = nullptr;
  std::atomic<int32_t> failures{0};
};

// Nested allocations of mixed sizes, each filled with a task-specific byte and
// checked before it is freed; every third round frees out of order.
int32_t StressWorkspace(int32_t task_id, hetrt_parallel_group_env_t*, void* cdata) {
  auto* stress = static_cast<WorkspaceStress*>(cdata);
  constexpr uint64_t kSizes[] = {64, 1000, 70000, 3, 4096};
  const auto fill = static_cast<unsigned char>(0x10 + task_id);
  for (int round = 0; round < 300; ++round) {
    std::vector<unsigned char*> live;
    for (uint64_t nbytes : kSizes) {
      auto* data = static_cast<unsigned char*>(stress->device->workspace_alloc(kCpu, nbytes));
      if (data == nullptr || !IsAligned(data, 64)) {
        stress->failures.fetch_add(1);
        return -1;
      }
      std::memset(data, fill, nbytes);
      live.push_back(data);
    }
    for (size_t i = 0; i < live.size(); ++i) {
      for (uint64_t byte = 0; byte < kSizes[i]; ++byte) {
        if (live[i][byte] != fill) {
          stress->failures.fetch_add(1);
          break;
        }
      }
    }
    if (round % 3 == 0) std::swap(live[1], live[3]);
    for (auto data = live.rbegin(); data != live.rend(); ++data) {
      if (stress->device->workspace_free(kCpu, *data) != 0) stress->failures.fetch_add(1);
    }
  }
  return 0;
}

TEST_F(CpuPluginTest, WorkspaceServesSeveralThreadsAtOnce) {
  SetThreads(3);
  WorkspaceStress stress;
  stress.device = api_->device;
  ASSERT_EQ(parallel().launch(StressWorkspace, &stress, 0), 0);
  ASSERT_EQ(parallel().launch(StressWorkspace, &stress, 7), 0);
  EXPECT_EQ(stress.failures.load(), 0);
}

}  // namespace
