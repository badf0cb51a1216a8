// Tests of the CPU plugin through its C ABI only: the shared object is dlopen'd
// from HETRT_TEST_PLUGIN_DIR exactly as the core would load it. What is the
// CPU's own: instances and options, the thread pool and parallel launch, the
// workspace stack, host clocks, and the stricter checks only it makes (bad
// alignments, foreign memory, streams and events, double frees). What every
// backend does (memory, copies, streams, events) is the conformance kit (sdk/conformance/),
// which runs on the CPU too.
#include <dlfcn.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
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

const hetrt_plugin_api_t* g_api = nullptr;

int32_t AvailableCores() {
  cpu_set_t mask;
  if (sched_getaffinity(0, sizeof(mask), &mask) == 0) return CPU_COUNT(&mask);
  return static_cast<int32_t>(std::thread::hardware_concurrency());
}

uint64_t MonotonicNs() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<uint64_t>(now.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(now.tv_nsec);
}

bool IsAligned(const void* pointer, uint64_t alignment) {
  return reinterpret_cast<uintptr_t>(pointer) % alignment == 0;
}

// ---------------------------------------------------------------------------
// Thin wrappers over the ABI calls.

// "" for success (NULL); otherwise the error's message. Releases the error.
std::string Consume(hetrt_error_t* error) {
  if (error == nullptr) return "";
  hetrt_error_message_args_t message{};
  message.struct_size = sizeof(message);
  message.error = error;
  EXPECT_EQ(g_api->error_message(&message), nullptr);
  std::string text = message.message != nullptr ? message.message : "(null message)";
  hetrt_error_destroy_args_t destroy{};
  destroy.struct_size = sizeof(destroy);
  destroy.error = error;
  EXPECT_EQ(g_api->error_destroy(&destroy), nullptr);
  return text.empty() ? "(error with an empty message)" : text;
}

// The status of `error` (OK for NULL); releases it. Allocates nothing, so it
// is fit for use inside tasks.
hetrt_status_code_t CodeOf(hetrt_error_t* error) {
  if (error == nullptr) return HETRT_STATUS_OK;
  hetrt_error_message_args_t message{};
  message.struct_size = sizeof(message);
  message.error = error;
  g_api->error_message(&message);
  const auto code = static_cast<hetrt_status_code_t>(message.code);
  hetrt_error_destroy_args_t destroy{};
  destroy.struct_size = sizeof(destroy);
  destroy.error = error;
  g_api->error_destroy(&destroy);
  return code;
}

// A zeroed args struct of the caller's (this test's) ABI version.
template <typename T>
T Args(hetrt_instance_t* self) {
  T args{};
  args.struct_size = sizeof(T);
  args.self = self;
  return args;
}

const hetrt_device_api_t& Device() { return *g_api->device; }
const hetrt_parallel_api_t& Parallel() { return *g_api->parallel; }

hetrt_instance_t* CreateInstance(std::vector<hetrt_option_t> options = {}, std::string* error = nullptr) {
  hetrt_instance_create_args_t args{};
  args.struct_size = sizeof(args);
  args.host = &kHost;
  args.options = options.data();
  args.num_options = options.size();
  const std::string message = Consume(g_api->instance_create(&args));
  if (error != nullptr) {
    *error = message;
  } else {
    EXPECT_EQ(message, "");
  }
  if (!message.empty()) {
    EXPECT_EQ(args.instance, nullptr) << "an instance with an error";
  }
  return args.instance;
}

void DestroyInstance(hetrt_instance_t* self) {
  auto args = Args<hetrt_instance_destroy_args_t>(self);
  EXPECT_EQ(Consume(g_api->instance_destroy(&args)), "");
}

hetrt_error_t* SetOption(hetrt_instance_t* self, const char* key, const char* value) {
  auto args = Args<hetrt_set_option_args_t>(self);
  args.key = key;
  args.value = value;
  return g_api->set_option(&args);
}

int32_t NumThreads(hetrt_instance_t* self) {
  auto args = Args<hetrt_parallel_num_threads_args_t>(self);
  EXPECT_EQ(Consume(Parallel().num_threads(&args)), "");
  return args.num_threads;
}

void SetThreads(hetrt_instance_t* self, int32_t count) {
  ASSERT_EQ(Consume(SetOption(self, "num_threads", std::to_string(count).c_str())), "");
  ASSERT_EQ(NumThreads(self), count);
}

// The error of the call as a message; the failing task (or -1) in *failed_task.
std::string Launch(hetrt_instance_t* self, hetrt_parallel_lambda_t lambda, void* cdata, int32_t num_task,
                   int32_t* failed_task = nullptr) {
  auto args = Args<hetrt_parallel_launch_args_t>(self);
  args.lambda = lambda;
  args.cdata = cdata;
  args.num_task = num_task;
  args.failed_task = -7;  // the plugin must overwrite it
  std::string error = Consume(Parallel().launch(&args));
  if (failed_task != nullptr) *failed_task = args.failed_task;
  if (error.empty() && failed_task == nullptr && args.failed_task != -1) {
    error = "task " + std::to_string(args.failed_task) + " failed";
  }
  return error;
}

// Launch that must succeed with every task returning 0; allocates nothing on
// success, so it can run inside tasks.
bool LaunchOk(hetrt_instance_t* self, hetrt_parallel_lambda_t lambda, void* cdata, int32_t num_task) {
  auto args = Args<hetrt_parallel_launch_args_t>(self);
  args.lambda = lambda;
  args.cdata = cdata;
  args.num_task = num_task;
  return CodeOf(Parallel().launch(&args)) == HETRT_STATUS_OK && args.failed_task == -1;
}

hetrt_status_code_t Barrier(hetrt_instance_t* self, int32_t task_id, hetrt_parallel_group_env_t* env) {
  auto args = Args<hetrt_parallel_barrier_args_t>(self);
  args.task_id = task_id;
  args.env = env;
  return CodeOf(Parallel().barrier(&args));
}

hetrt_allocate_args_t AllocateArgs(hetrt_instance_t* self, uint64_t nbytes, uint64_t alignment,
                                   hetrt_memory_kind_t kind = HETRT_MEMORY_DEVICE) {
  auto args = Args<hetrt_allocate_args_t>(self);
  args.device = kCpu;
  args.nbytes = nbytes;
  args.alignment = alignment;
  args.kind = kind;
  return args;
}

void* Allocate(hetrt_instance_t* self, uint64_t nbytes, uint64_t alignment = 64,
               hetrt_memory_kind_t kind = HETRT_MEMORY_DEVICE) {
  hetrt_allocate_args_t args = AllocateArgs(self, nbytes, alignment, kind);
  EXPECT_EQ(Consume(Device().allocate(&args)), "");
  EXPECT_EQ(args.host_pointer, args.data) << "CPU memory is host memory";
  return args.data;
}

hetrt_error_t* Free(hetrt_instance_t* self, void* data, hetrt_memory_kind_t kind = HETRT_MEMORY_DEVICE) {
  auto args = Args<hetrt_free_args_t>(self);
  args.device = kCpu;
  args.data = data;
  args.kind = kind;
  return Device().free(&args);
}

hetrt_memory_stats_args_t MemoryStats(hetrt_instance_t* self) {
  auto args = Args<hetrt_memory_stats_args_t>(self);
  args.device = kCpu;
  EXPECT_EQ(Consume(Device().memory_stats(&args)), "");
  return args;
}

// Host to host on the CPU device.
hetrt_error_t* Copy(hetrt_instance_t* self, const void* src, uint64_t src_offset, void* dst, uint64_t dst_offset,
                    uint64_t nbytes, hetrt_stream_t* stream = nullptr) {
  hetrt_copy_args_t args{.struct_size = sizeof(args),
                         .self = self,
                         .src = src,
                         .src_offset = src_offset,
                         .src_device = kCpu,
                         .dst = dst,
                         .dst_offset = dst_offset,
                         .dst_device = kCpu,
                         .nbytes = nbytes,
                         .stream = stream};
  return Device().copy(&args);
}

// `attribute` is an int32_t as in the ABI struct: a newer caller's value need
// not be one of this header's enumerators.
hetrt_error_t* Attribute(hetrt_instance_t* self, int32_t attribute, hetrt_device_attribute_args_t* out,
                         DLDevice device = kCpu) {
  *out = Args<hetrt_device_attribute_args_t>(self);
  out->device = device;
  out->attribute = attribute;
  return Device().device_attribute(out);
}

std::string Name(hetrt_instance_t* self) {
  hetrt_device_attribute_args_t args{};
  EXPECT_EQ(Consume(Attribute(self, HETRT_DEVICE_ATTR_NAME, &args)), "");
  return args.string != nullptr ? args.string : "";
}

hetrt_stream_t* CreateStream(hetrt_instance_t* self) {
  auto args = Args<hetrt_stream_create_args_t>(self);
  args.device = kCpu;
  EXPECT_EQ(Consume(Device().stream_create(&args)), "");
  return args.stream;
}

hetrt_error_t* StreamCall(hetrt_error_t* (*call)(hetrt_stream_args_t*), hetrt_instance_t* self,
                          hetrt_stream_t* stream) {
  auto args = Args<hetrt_stream_args_t>(self);
  args.device = kCpu;
  args.stream = stream;
  return call(&args);
}

// Sets the calling thread's current stream; returns the previous one.
hetrt_stream_t* SetCurrent(hetrt_instance_t* self, hetrt_stream_t* stream) {
  auto args = Args<hetrt_stream_current_args_t>(self);
  args.device = kCpu;
  args.stream = stream;
  args.previous = reinterpret_cast<hetrt_stream_t*>(0x1);
  EXPECT_EQ(Consume(Device().stream_set_current(&args)), "");
  return args.previous;
}

hetrt_stream_t* GetCurrent(hetrt_instance_t* self) {
  auto args = Args<hetrt_stream_current_args_t>(self);
  args.device = kCpu;
  args.stream = reinterpret_cast<hetrt_stream_t*>(0x1);
  EXPECT_EQ(Consume(Device().stream_get_current(&args)), "");
  return args.stream;
}

hetrt_event_t* CreateEvent(hetrt_instance_t* self, uint32_t flags = HETRT_EVENT_TIMING) {
  auto args = Args<hetrt_event_create_args_t>(self);
  args.device = kCpu;
  args.flags = flags;
  EXPECT_EQ(Consume(Device().event_create(&args)), "");
  return args.event;
}

hetrt_error_t* EventCall(hetrt_error_t* (*call)(hetrt_event_args_t*), hetrt_instance_t* self, hetrt_event_t* event,
                         int32_t* complete = nullptr) {
  auto args = Args<hetrt_event_args_t>(self);
  args.device = kCpu;
  args.event = event;
  hetrt_error_t* error = call(&args);
  if (complete != nullptr) *complete = args.complete;
  return error;
}

hetrt_error_t* Record(hetrt_instance_t* self, hetrt_event_t* event, hetrt_stream_t* stream) {
  auto args = Args<hetrt_event_record_args_t>(self);
  args.device = kCpu;
  args.event = event;
  args.stream = stream;
  return Device().event_record(&args);
}

hetrt_error_t* Timestamp(hetrt_instance_t* self, hetrt_event_t* event, uint64_t* ns) {
  auto args = Args<hetrt_event_timestamp_args_t>(self);
  args.device = kCpu;
  args.event = event;
  hetrt_error_t* error = Device().event_timestamp(&args);
  *ns = args.device_ns;
  return error;
}

hetrt_error_t* ElapsedMs(hetrt_instance_t* self, hetrt_event_t* start, hetrt_event_t* end, double* ms) {
  auto args = Args<hetrt_event_elapsed_args_t>(self);
  args.device = kCpu;
  args.start = start;
  args.end = end;
  args.milliseconds = -1;
  hetrt_error_t* error = Device().event_elapsed_ms(&args);
  *ms = args.milliseconds;
  return error;
}

void* WorkspaceAlloc(hetrt_instance_t* self, uint64_t nbytes, DLDevice device = kCpu) {
  auto args = Args<hetrt_workspace_args_t>(self);
  args.device = device;
  args.nbytes = nbytes;
  if (CodeOf(Device().workspace_alloc(&args)) != HETRT_STATUS_OK) return nullptr;
  return args.data;
}

hetrt_status_code_t WorkspaceFree(hetrt_instance_t* self, void* data) {
  auto args = Args<hetrt_workspace_args_t>(self);
  args.device = kCpu;
  args.data = data;
  return CodeOf(Device().workspace_free(&args));
}

class CpuPluginTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    handle_ = dlopen(HETRT_TEST_PLUGIN_DIR "/libhetrt_plugin_cpu.so", RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(handle_, nullptr) << dlerror();
    auto get_api = reinterpret_cast<hetrt_plugin_get_api_fn>(dlsym(handle_, HETRT_PLUGIN_ENTRY_SYMBOL));
    ASSERT_NE(get_api, nullptr) << dlerror();
    g_api = get_api();
    ASSERT_NE(g_api, nullptr);
    self_ = CreateInstance();
    ASSERT_NE(self_, nullptr);
  }

  static void TearDownTestSuite() {
    if (self_ != nullptr) DestroyInstance(self_);
    if (handle_ != nullptr) dlclose(handle_);
    self_ = nullptr;
    g_api = nullptr;
    handle_ = nullptr;
  }

  void SetUp() override { ASSERT_NE(self_, nullptr) << "the plugin did not load"; }

  static inline void* handle_ = nullptr;
  static inline hetrt_instance_t* self_ = nullptr;  // shared by the tests
};

// ---------------------------------------------------------------------------
// Plugin table, instances and options.

TEST_F(CpuPluginTest, EntrySymbolDescribesAnAbiVersion2HostPlugin) {
  EXPECT_EQ(g_api->abi_major, HETRT_PLUGIN_ABI_MAJOR);
  EXPECT_EQ(g_api->abi_minor, HETRT_PLUGIN_ABI_MINOR);
  EXPECT_GE(g_api->struct_size, sizeof(hetrt_plugin_api_t));
  EXPECT_STREQ(g_api->name, "cpu");
  ASSERT_EQ(g_api->num_device_types, 1u);
  EXPECT_EQ(g_api->device_types[0], kDLCPU);
  EXPECT_EQ(g_api->num_type_keys, 0u);
  EXPECT_EQ(g_api->global_functions, nullptr);
  EXPECT_EQ(g_api->module, nullptr);
  ASSERT_NE(g_api->device, nullptr);
  ASSERT_NE(g_api->parallel, nullptr);
  EXPECT_GE(Device().struct_size, sizeof(hetrt_device_api_t));
  EXPECT_GE(Parallel().struct_size, sizeof(hetrt_parallel_api_t));
}

TEST_F(CpuPluginTest, InstanceCreateRefusesAHostOfAnotherAbiMajor) {
  hetrt_host_api_t host = kHost;
  host.abi_major = HETRT_PLUGIN_ABI_MAJOR + 1;
  hetrt_instance_create_args_t args{};
  args.struct_size = sizeof(args);
  args.host = &host;
  EXPECT_EQ(CodeOf(g_api->instance_create(&args)), HETRT_STATUS_FAILED_PRECONDITION);
  EXPECT_EQ(args.instance, nullptr);
}

TEST_F(CpuPluginTest, CallsRefuseANullSelfOrAnArgsStructSmallerThanAbi2) {
  auto args = Args<hetrt_parallel_num_threads_args_t>(nullptr);
  EXPECT_EQ(CodeOf(Parallel().num_threads(&args)), HETRT_STATUS_INVALID_ARGUMENT);
  args = Args<hetrt_parallel_num_threads_args_t>(self_);
  args.struct_size = offsetof(hetrt_parallel_num_threads_args_t, num_threads);
  EXPECT_EQ(CodeOf(Parallel().num_threads(&args)), HETRT_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(CodeOf(Parallel().num_threads(nullptr)), HETRT_STATUS_INVALID_ARGUMENT);
}

// The SDK's entry guard asks the plugin whether `self` is a live instance: a
// pointer to memory that is not one (here zeros; after instance_destroy, the
// cleared tag) is refused by every table, not trusted.
TEST_F(CpuPluginTest, CallsRefuseASelfThatIsNotALiveInstance) {
  alignas(64) static std::byte not_an_instance[4096] = {};
  auto* stray = reinterpret_cast<hetrt_instance_t*>(not_an_instance);
  auto count = Args<hetrt_device_count_args_t>(stray);
  count.device_type = kDLCPU;
  hetrt_error_t* error = Device().device_count(&count);
  EXPECT_EQ(CodeOf(error), HETRT_STATUS_INVALID_ARGUMENT);
  auto threads = Args<hetrt_parallel_num_threads_args_t>(stray);
  EXPECT_EQ(Consume(Parallel().num_threads(&threads)), "self is not a live instance of this plugin (destroyed?)");
  auto option = Args<hetrt_set_option_args_t>(stray);
  option.key = "num_threads";
  option.value = "1";
  EXPECT_EQ(CodeOf(g_api->set_option(&option)), HETRT_STATUS_INVALID_ARGUMENT);
}

TEST_F(CpuPluginTest, ErrorMessageGivesCodeAndMessageOfTheError) {
  hetrt_error_t* error = SetOption(self_, "num_fairies", "3");
  ASSERT_NE(error, nullptr);
  hetrt_error_message_args_t message{};
  message.struct_size = sizeof(message);
  message.error = error;
  EXPECT_EQ(g_api->error_message(&message), nullptr);
  EXPECT_EQ(message.code, HETRT_STATUS_NOT_FOUND);
  ASSERT_NE(message.message, nullptr);
  EXPECT_NE(std::string(message.message).find("num_fairies"), std::string::npos);
  hetrt_error_destroy_args_t destroy{};
  destroy.struct_size = sizeof(destroy);
  destroy.error = error;
  EXPECT_EQ(g_api->error_destroy(&destroy), nullptr);
}

TEST_F(CpuPluginTest, SetOptionNumThreadsResizesThePool) {
  SetThreads(self_, 3);
  SetThreads(self_, 1);
  SetThreads(self_, 2);
}

TEST_F(CpuPluginTest, NumThreadsRejectsValuesThatAreNotAPositiveInteger) {
  SetThreads(self_, 2);
  for (const char* value : {"0", "-1", "abc", "3x", "", " 3", "2.5", "99999999999", "1025"}) {
    EXPECT_EQ(CodeOf(SetOption(self_, "num_threads", value)), HETRT_STATUS_INVALID_ARGUMENT) << "\"" << value << "\"";
  }
  EXPECT_EQ(CodeOf(SetOption(self_, "num_threads", nullptr)), HETRT_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(NumThreads(self_), 2);
}

TEST_F(CpuPluginTest, DefaultThreadCountIsTheCoreCountAndHetrtNumThreadsOverridesIt) {
  ASSERT_EQ(setenv("HETRT_NUM_THREADS", "2", 1), 0);
  hetrt_instance_t* instance = CreateInstance();
  ASSERT_NE(instance, nullptr);
  EXPECT_EQ(NumThreads(instance), 2);
  DestroyInstance(instance);

  ASSERT_EQ(setenv("HETRT_NUM_THREADS", "lots", 1), 0);
  std::string message;
  EXPECT_EQ(CreateInstance({}, &message), nullptr);
  EXPECT_NE(message.find("HETRT_NUM_THREADS"), std::string::npos) << message;
  EXPECT_NE(message.find("lots"), std::string::npos) << message;

  ASSERT_EQ(unsetenv("HETRT_NUM_THREADS"), 0);
  instance = CreateInstance();
  ASSERT_NE(instance, nullptr);
  EXPECT_EQ(NumThreads(instance), std::min(AvailableCores(), 1024));
  DestroyInstance(instance);
}

TEST_F(CpuPluginTest, InstanceCreateAppliesOptionsOverTheEnvironment) {
  ASSERT_EQ(setenv("HETRT_NUM_THREADS", "2", 1), 0);
  hetrt_instance_t* instance = CreateInstance({{"num_threads", "3"}});
  ASSERT_EQ(unsetenv("HETRT_NUM_THREADS"), 0);
  ASSERT_NE(instance, nullptr);
  EXPECT_EQ(NumThreads(instance), 3);
  DestroyInstance(instance);

  std::string message;
  EXPECT_EQ(CreateInstance({{"num_threads", "0"}}, &message), nullptr);
  EXPECT_NE(message.find("num_threads"), std::string::npos) << message;
  EXPECT_EQ(CreateInstance({{"colour", "red"}}, &message), nullptr);
  EXPECT_NE(message.find("colour"), std::string::npos) << message;
}

// ---------------------------------------------------------------------------
// Two instances at once.

struct ThreadRecord {
  std::mutex mutex;
  std::vector<int32_t> runs = std::vector<int32_t>(64);
  std::vector<std::thread::id> thread_of_task = std::vector<std::thread::id>(64);
  std::set<pid_t> kernel_thread_ids;
};

int32_t RecordThread(int32_t task_id, hetrt_parallel_group_env_t*, void* cdata) {
  auto* record = static_cast<ThreadRecord*>(cdata);
  std::lock_guard<std::mutex> lock(record->mutex);
  ++record->runs.at(task_id);
  record->thread_of_task.at(task_id) = std::this_thread::get_id();
  record->kernel_thread_ids.insert(static_cast<pid_t>(syscall(SYS_gettid)));
  return 0;
}

TEST_F(CpuPluginTest, TwoInstancesWithDifferentThreadCountsLaunchAtOnceOnSeparatePools) {
  hetrt_instance_t* two = CreateInstance({{"num_threads", "2"}});
  hetrt_instance_t* three = CreateInstance({{"num_threads", "3"}});
  ASSERT_NE(two, nullptr);
  ASSERT_NE(three, nullptr);
  EXPECT_EQ(NumThreads(two), 2);
  EXPECT_EQ(NumThreads(three), 3);
  // Each name is its instance's, and both stay valid side by side.
  EXPECT_NE(Name(two).find("(2 threads)"), std::string::npos) << Name(two);
  EXPECT_NE(Name(three).find("(3 threads)"), std::string::npos) << Name(three);

  // Launched together, neither instance's launch falls back to running
  // serially: each has its own pool.
  constexpr int kLaunches = 300;
  ThreadRecord on_two;
  ThreadRecord on_three;
  std::atomic<int32_t> failures{0};
  std::thread other([&] {
    for (int i = 0; i < kLaunches; ++i) {
      if (!LaunchOk(three, RecordThread, &on_three, 0)) failures.fetch_add(1);
    }
  });
  for (int i = 0; i < kLaunches; ++i) {
    if (!LaunchOk(two, RecordThread, &on_two, 0)) failures.fetch_add(1);
  }
  other.join();
  EXPECT_EQ(failures.load(), 0);
  for (int32_t task_id = 0; task_id < 4; ++task_id) {
    EXPECT_EQ(on_two.runs[task_id], task_id < 2 ? kLaunches : 0) << "task " << task_id;
    EXPECT_EQ(on_three.runs[task_id], task_id < 3 ? kLaunches : 0) << "task " << task_id;
  }
  EXPECT_EQ(on_two.kernel_thread_ids.size(), 2u);
  EXPECT_EQ(on_three.kernel_thread_ids.size(), 3u);
  std::vector<pid_t> shared;
  std::set_intersection(on_two.kernel_thread_ids.begin(), on_two.kernel_thread_ids.end(),
                        on_three.kernel_thread_ids.begin(), on_three.kernel_thread_ids.end(),
                        std::back_inserter(shared));
  EXPECT_TRUE(shared.empty()) << "a thread ran tasks of both instances";

  // Resizing or destroying one leaves the other alone.
  SetThreads(two, 1);
  EXPECT_EQ(NumThreads(three), 3);
  DestroyInstance(two);
  ThreadRecord after;
  EXPECT_TRUE(LaunchOk(three, RecordThread, &after, 0));
  EXPECT_EQ(after.kernel_thread_ids.size(), 3u);
  DestroyInstance(three);
}

// ---------------------------------------------------------------------------
// Device: count, attributes, memory, copies.

TEST_F(CpuPluginTest, DeviceCountIsOneForTheCpuDeviceType) {
  auto args = Args<hetrt_device_count_args_t>(self_);
  args.device_type = kDLCPU;
  ASSERT_EQ(Consume(Device().device_count(&args)), "");
  EXPECT_EQ(args.count, 1);
}

TEST_F(CpuPluginTest, DeviceCountRefusesADeviceTypeThePluginDoesNotServe) {
  auto args = Args<hetrt_device_count_args_t>(self_);
  args.device_type = kDLOpenCL;
  EXPECT_EQ(CodeOf(Device().device_count(&args)), HETRT_STATUS_INVALID_ARGUMENT);
}

TEST_F(CpuPluginTest, NameAttributeIncludesTheThreadCountAndFollowsIt) {
  SetThreads(self_, 3);
  const std::string name = Name(self_);
  EXPECT_NE(name.find("(3 threads)"), std::string::npos) << name;
  EXPECT_GT(name.size(), std::strlen(" (3 threads)")) << "a model name in front";
  SetThreads(self_, 2);
  EXPECT_NE(Name(self_).find("(2 threads)"), std::string::npos) << Name(self_);
}

TEST_F(CpuPluginTest, IntegerAttributesDescribeHostMemoryAndCores) {
  hetrt_device_attribute_args_t args{};
  ASSERT_EQ(Consume(Attribute(self_, HETRT_DEVICE_ATTR_HOST_UNIFIED_MEMORY, &args)), "");
  EXPECT_EQ(args.value, 1);
  ASSERT_EQ(Consume(Attribute(self_, HETRT_DEVICE_ATTR_TOTAL_MEMORY, &args)), "");
  EXPECT_EQ(args.value, static_cast<int64_t>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGESIZE));
  ASSERT_EQ(Consume(Attribute(self_, HETRT_DEVICE_ATTR_MULTIPROCESSOR_COUNT, &args)), "");
  EXPECT_EQ(args.value, AvailableCores());
  ASSERT_EQ(Consume(Attribute(self_, HETRT_DEVICE_ATTR_COPY_STREAMS, &args)), "");
  EXPECT_EQ(args.value, 0);
}

TEST_F(CpuPluginTest, UnknownAttributesAreNotFoundAndOtherDevicesInvalid) {
  hetrt_device_attribute_args_t args{};
  EXPECT_EQ(CodeOf(Attribute(self_, HETRT_DEVICE_ATTR_WARP_SIZE, &args)), HETRT_STATUS_NOT_FOUND);
  EXPECT_EQ(CodeOf(Attribute(self_, 999, &args)), HETRT_STATUS_NOT_FOUND);
  EXPECT_EQ(CodeOf(Attribute(self_, HETRT_DEVICE_ATTR_NAME, &args, DLDevice{kDLCPU, 1})),
            HETRT_STATUS_INVALID_ARGUMENT);
}

TEST_F(CpuPluginTest, AllocateRaisesSmallAlignmentsTo64) {
  void* data = Allocate(self_, 10, 1);
  ASSERT_NE(data, nullptr);
  EXPECT_TRUE(IsAligned(data, 64));
  EXPECT_EQ(Consume(Free(self_, data)), "");
}

TEST_F(CpuPluginTest, AllocateRejectsAnAlignmentThatIsNotAPowerOfTwo) {
  for (uint64_t alignment : {0, 48}) {
    hetrt_allocate_args_t args = AllocateArgs(self_, 64, alignment);
    EXPECT_EQ(CodeOf(Device().allocate(&args)), HETRT_STATUS_INVALID_ARGUMENT) << alignment;
    EXPECT_EQ(args.data, nullptr);
  }
}

TEST_F(CpuPluginTest, AnImpossibleAllocationIsResourceExhausted) {
  hetrt_allocate_args_t args = AllocateArgs(self_, UINT64_MAX - 10, 64);
  EXPECT_EQ(CodeOf(Device().allocate(&args)), HETRT_STATUS_RESOURCE_EXHAUSTED);
}

// (Statistics rising and falling per instance: the conformance kit (sdk/conformance/).)
TEST_F(CpuPluginTest, MemoryStatsCountPinnedMemoryAndKnowNoLimit) {
  const hetrt_memory_stats_args_t before = MemoryStats(self_);
  void* pinned = Allocate(self_, 1000, 4096, HETRT_MEMORY_HOST_PINNED);
  const hetrt_memory_stats_args_t during = MemoryStats(self_);
  EXPECT_EQ(during.bytes_in_use, before.bytes_in_use + 1000);
  EXPECT_EQ(during.num_allocations, before.num_allocations + 1);
  EXPECT_EQ(during.bytes_limit, 0u);
  EXPECT_EQ(Consume(Free(self_, pinned, HETRT_MEMORY_HOST_PINNED)), "");
}

TEST_F(CpuPluginTest, FreeRefusesMemoryOfAnotherInstance) {
  hetrt_instance_t* other = CreateInstance({{"num_threads", "1"}});
  ASSERT_NE(other, nullptr);
  void* data = Allocate(other, 256);
  ASSERT_NE(data, nullptr);
  const uint64_t failed_before = MemoryStats(self_).failed_frees;
  EXPECT_EQ(CodeOf(Free(self_, data)), HETRT_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(MemoryStats(other).num_allocations, 1u) << "a refused free changes nothing";
  EXPECT_EQ(MemoryStats(self_).failed_frees, failed_before + 1) << "but is counted by the instance that refused it";
  EXPECT_EQ(MemoryStats(other).failed_frees, 0u);
  EXPECT_EQ(Consume(Free(other, data)), "");
  EXPECT_EQ(Consume(Free(other, nullptr)), "") << "like free(NULL)";
  DestroyInstance(other);
  // (A double free is caught too while the heap leaves the block alone, but
  // testing that would read freed memory.)
}

// A 2.2 core's memory_stats struct ends before failed_frees: nothing is written there.
TEST_F(CpuPluginTest, MemoryStatsOfAnOlderCoreEndBeforeFailedFrees) {
  auto args = Args<hetrt_memory_stats_args_t>(self_);
  args.struct_size = offsetof(hetrt_memory_stats_args_t, failed_frees);
  args.device = kCpu;
  args.failed_frees = 0x5a5a5a5a;
  EXPECT_EQ(Consume(Device().memory_stats(&args)), "");
  EXPECT_EQ(args.failed_frees, 0x5a5a5a5au);
}

TEST_F(CpuPluginTest, CanCopyOnlyBetweenCpu0AndCpu0) {
  auto args = Args<hetrt_can_copy_args_t>(self_);
  auto can_copy = [&](DLDevice src, DLDevice dst) {
    args.src_device = src;
    args.dst_device = dst;
    args.can_copy = -1;
    EXPECT_EQ(Consume(Device().can_copy(&args)), "");
    return args.can_copy;
  };
  EXPECT_EQ(can_copy(kCpu, kCpu), 1);
  EXPECT_EQ(can_copy(kCpu, DLDevice{kDLOpenCL, 0}), 0);
  EXPECT_EQ(can_copy(DLDevice{kDLOpenCL, 0}, kCpu), 0);
  EXPECT_EQ(can_copy(kCpu, DLDevice{kDLCPU, 1}), 0);
}

TEST_F(CpuPluginTest, CopyWithinOneBufferHandlesOverlap) {
  char buffer[] = "abcdefgh";
  ASSERT_EQ(Consume(Copy(self_, buffer, 0, buffer, 2, 6)), "");
  EXPECT_STREQ(buffer, "ababcdef");
}

// ---------------------------------------------------------------------------
// Streams, events, clocks.

TEST_F(CpuPluginTest, StreamsAndEventsOfAnotherInstanceAreRefused) {
  hetrt_instance_t* other = CreateInstance({{"num_threads", "1"}});
  ASSERT_NE(other, nullptr);
  hetrt_stream_t* foreign_stream = CreateStream(other);
  hetrt_event_t* foreign_event = CreateEvent(other);
  hetrt_event_t* event = CreateEvent(self_);
  ASSERT_TRUE(foreign_stream && foreign_event && event);

  char source[4] = {1, 2, 3, 4};
  char destination[4] = {};
  EXPECT_EQ(CodeOf(Copy(self_, source, 0, destination, 0, 4, foreign_stream)), HETRT_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(destination[0], 0) << "a refused copy copies nothing";
  EXPECT_EQ(CodeOf(StreamCall(Device().stream_synchronize, self_, foreign_stream)), HETRT_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(CodeOf(StreamCall(Device().stream_destroy, self_, foreign_stream)), HETRT_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(CodeOf(Record(self_, event, foreign_stream)), HETRT_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(CodeOf(Record(self_, foreign_event, nullptr)), HETRT_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(CodeOf(EventCall(Device().event_destroy, self_, foreign_event)), HETRT_STATUS_INVALID_ARGUMENT);
  auto set = Args<hetrt_stream_current_args_t>(self_);
  set.device = kCpu;
  set.stream = foreign_stream;
  EXPECT_EQ(CodeOf(Device().stream_set_current(&set)), HETRT_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(GetCurrent(self_), nullptr);

  EXPECT_EQ(CodeOf(StreamCall(Device().stream_destroy, self_, nullptr)), HETRT_STATUS_INVALID_ARGUMENT)
      << "the default stream is not destroyed";

  EXPECT_EQ(Consume(EventCall(Device().event_destroy, self_, event)), "");
  EXPECT_EQ(Consume(EventCall(Device().event_destroy, other, foreign_event)), "");
  EXPECT_EQ(Consume(StreamCall(Device().stream_destroy, other, foreign_stream)), "");
  DestroyInstance(other);
}

TEST_F(CpuPluginTest, EventElapsedMsMeasuresTheTimeBetweenRecords) {
  hetrt_event_t* start = CreateEvent(self_);
  hetrt_event_t* end = CreateEvent(self_);
  ASSERT_TRUE(start && end);
  double elapsed_ms = -1;
  EXPECT_EQ(CodeOf(ElapsedMs(self_, start, end, &elapsed_ms)), HETRT_STATUS_FAILED_PRECONDITION)
      << "events that were never recorded have no elapsed time";
  uint64_t ns = 0;
  EXPECT_EQ(CodeOf(Timestamp(self_, start, &ns)), HETRT_STATUS_FAILED_PRECONDITION);
  int32_t complete = 0;
  EXPECT_EQ(Consume(EventCall(Device().event_query, self_, start, &complete)), "");
  EXPECT_EQ(complete, 1) << "an event never recorded is complete";

  ASSERT_EQ(Consume(Record(self_, start, nullptr)), "");
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_EQ(Consume(Record(self_, end, nullptr)), "");
  ASSERT_EQ(Consume(ElapsedMs(self_, start, end, &elapsed_ms)), "");
  EXPECT_GE(elapsed_ms, 5.0);
  EXPECT_LT(elapsed_ms, 5000.0);

  // Re-recording replaces the point.
  uint64_t first_end = 0;
  uint64_t second_end = 0;
  ASSERT_EQ(Consume(Timestamp(self_, end, &first_end)), "");
  std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_EQ(Consume(Record(self_, end, nullptr)), "");
  ASSERT_EQ(Consume(Timestamp(self_, end, &second_end)), "");
  EXPECT_GE(second_end - first_end, 1'000'000u);

  EXPECT_EQ(Consume(EventCall(Device().event_destroy, self_, start)), "");
  EXPECT_EQ(Consume(EventCall(Device().event_destroy, self_, end)), "");
}

TEST_F(CpuPluginTest, DeviceClockIsTheHostMonotonicClock) {
  auto args = Args<hetrt_device_clock_args_t>(self_);
  args.device = kCpu;
  args.uncertainty_ns = 123;
  const uint64_t before = MonotonicNs();
  ASSERT_EQ(Consume(Device().device_clock(&args)), "");
  const uint64_t after = MonotonicNs();
  EXPECT_EQ(args.device_ns, args.host_ns);
  EXPECT_EQ(args.uncertainty_ns, 0u);
  EXPECT_GE(args.host_ns, before);
  EXPECT_LE(args.host_ns, after);

  // An event's timestamp lies on the same clock.
  hetrt_event_t* event = CreateEvent(self_);
  ASSERT_EQ(Consume(Record(self_, event, nullptr)), "");
  uint64_t recorded = 0;
  ASSERT_EQ(Consume(Timestamp(self_, event, &recorded)), "");
  EXPECT_GE(recorded, after);
  EXPECT_LE(recorded, MonotonicNs());
  EXPECT_EQ(Consume(EventCall(Device().event_destroy, self_, event)), "");
}

// (The current stream per thread and instance: the conformance kit (sdk/conformance/).)
TEST_F(CpuPluginTest, DestroyingTheCurrentStreamPutsTheThreadBackOnTheDefault) {
  hetrt_stream_t* stream = CreateStream(self_);
  ASSERT_NE(stream, nullptr);
  EXPECT_EQ(SetCurrent(self_, stream), nullptr);
  EXPECT_EQ(GetCurrent(self_), stream);
  EXPECT_EQ(Consume(StreamCall(Device().stream_destroy, self_, stream)), "");
  EXPECT_EQ(GetCurrent(self_), nullptr);
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

// The state letter ('R' running or runnable, 'S' sleeping, ...) of each thread
// of this process named `name`.
std::vector<char> ThreadStates(const std::string& name) {
  std::vector<char> states;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(task.path() / "comm");
    std::string thread_name;
    std::getline(comm, thread_name);
    if (thread_name != name) continue;
    std::ifstream stat(task.path() / "stat");
    std::string text;
    std::getline(stat, text);
    const size_t close = text.rfind(')');  // the name may hold spaces and parentheses
    if (close != std::string::npos && close + 2 < text.size()) states.push_back(text[close + 2]);
  }
  return states;
}

// Task ids 0..num_ran-1 ran once each, no higher id ran.
void ExpectOnlyTasksBelowRanOnce(const LaunchRecord& record, int32_t num_ran) {
  for (int32_t task_id = 0; task_id < static_cast<int32_t>(record.runs.size()); ++task_id) {
    EXPECT_EQ(record.runs[task_id].load(), task_id < num_ran ? 1 : 0) << "task " << task_id << " of " << num_ran;
  }
}

// spin_us: how long an idle worker spins (yielding) after a launch before it
// sleeps on the futex. Read from the worker's state in /proc: awake ('R',
// running or runnable) while it spins, 'S' once asleep.
TEST_F(CpuPluginTest, SpinUsIsHowLongIdleWorkersStayAwakeAfterALaunch) {
  SetThreads(self_, 2);
  LaunchRecord record(16);
  auto worker_states = [] {
    std::string states;
    for (int i = 0; i < 50; ++i) {
      for (char c : ThreadStates("hetrt-cpu-1")) states += c;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return states;
  };
  ASSERT_EQ(Consume(SetOption(self_, "spin_us", "1000000")), "");
  ASSERT_EQ(Launch(self_, CountRun, &record, 2), "");
  EXPECT_EQ(worker_states(), std::string(50, 'R')) << "a worker slept within 100 ms of a 1 s spin";
  ASSERT_EQ(Consume(SetOption(self_, "spin_us", "0")), "");
  ASSERT_EQ(Launch(self_, CountRun, &record, 2), "");
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // past the hand-back to the futex
  EXPECT_EQ(worker_states(), std::string(50, 'S')) << "a worker stayed awake with spin_us 0";
  // A resized pool keeps the setting.
  SetThreads(self_, 3);
  SetThreads(self_, 2);
  ASSERT_EQ(Launch(self_, CountRun, &record, 2), "");
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(worker_states(), std::string(50, 'S')) << "the resized pool spins";
  for (const char* value : {"-1", "abc", "1000001", "", "5 "})
    EXPECT_EQ(CodeOf(SetOption(self_, "spin_us", value)), HETRT_STATUS_INVALID_ARGUMENT) << "\"" << value << "\"";
  ASSERT_EQ(Consume(SetOption(self_, "spin_us", "200")), "");
}

// Busy for about a millisecond per task: a launch site too long to run serially.
int32_t SlowRun(int32_t task_id, hetrt_parallel_group_env_t* env, void* cdata) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(1);
  while (std::chrono::steady_clock::now() < until) {
  }
  return CountRun(task_id, env, cdata);
}

// Busy for g_sized_run_us per task: a launch site whose size a test changes.
std::atomic<int> g_sized_run_us{0};
int32_t SizedRun(int32_t task_id, hetrt_parallel_group_env_t* env, void* cdata) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(g_sized_run_us.load());
  while (std::chrono::steady_clock::now() < until) {
  }
  return CountRun(task_id, env, cdata);
}

// How many tasks one launch of `lambda` (num_task 0) ran.
int32_t TasksOfOneLaunch(hetrt_instance_t* self, hetrt_parallel_lambda_t lambda) {
  LaunchRecord record(8);
  EXPECT_EQ(Launch(self, lambda, &record, 0), "");
  int32_t ran = 0;
  for (const auto& runs : record.runs) ran += runs.load();
  return ran;
}

// How many launches of `lambda` it takes until one runs as a single task (a
// site's estimate wears down by an eighth per short launch, from whatever a
// noisy first measurement gave); limit + 1 if none does.
int LaunchesUntilOneTask(hetrt_instance_t* self, hetrt_parallel_lambda_t lambda, int limit) {
  for (int launches = 1; launches <= limit; ++launches)
    if (TasksOfOneLaunch(self, lambda) == 1) return launches;
  return limit + 1;
}

TEST_F(CpuPluginTest, SerialBelowUsRunsShortLaunchSitesAsOneTaskOnTheCallingThread) {
  constexpr int kLimit = 200;
  SetThreads(self_, 3);
  ASSERT_EQ(Consume(SetOption(self_, "serial_below_us", "500")), "");
  // A site's first launch splits and measures; a short one then runs as one task.
  EXPECT_EQ(TasksOfOneLaunch(self_, CountRun), 3);
  EXPECT_LE(LaunchesUntilOneTask(self_, CountRun, kLimit), kLimit);
  // A site measured longer than the threshold keeps splitting.
  for (int i = 0; i < 8; ++i) EXPECT_EQ(TasksOfOneLaunch(self_, SlowRun), 3);
  // A task count the kernel asks for is kept.
  LaunchRecord record(8);
  ASSERT_EQ(Launch(self_, CountRun, &record, 2), "");
  ExpectOnlyTasksBelowRanOnce(record, 2);
  // A resized pool keeps the threshold and measures again.
  SetThreads(self_, 2);
  EXPECT_EQ(TasksOfOneLaunch(self_, CountRun), 2);
  EXPECT_LE(LaunchesUntilOneTask(self_, CountRun, kLimit), kLimit);
  // 0 always splits; -1 (twice the measured wake-up, at least 20 us) is long enough for CountRun.
  ASSERT_EQ(Consume(SetOption(self_, "serial_below_us", "0")), "");
  for (int i = 0; i < 8; ++i) EXPECT_EQ(TasksOfOneLaunch(self_, CountRun), 2);
  ASSERT_EQ(Consume(SetOption(self_, "serial_below_us", "-1")), "");
  EXPECT_LE(LaunchesUntilOneTask(self_, CountRun, kLimit), kLimit);
  for (const char* value : {"-2", "abc", "1000001", "", "5 "})
    EXPECT_EQ(CodeOf(SetOption(self_, "serial_below_us", value)), HETRT_STATUS_INVALID_ARGUMENT) << "\"" << value << "\"";
  ASSERT_EQ(Consume(SetOption(self_, "serial_below_us", "0")), "");
}

// A site that grew splits again. Only the long launches' readings matter here
// (a preempted short launch reads long too, never short), so no scheduling can
// change the outcome; which short readings let a site stay serial is decided
// in LaunchSizes, tested without a clock in launch_sizes_test.cc.
TEST_F(CpuPluginTest, SerialBelowUsSplitsASiteThatGrewWithinTwoLongLaunches) {
  constexpr int kLimit = 200;
  SetThreads(self_, 3);
  ASSERT_EQ(Consume(SetOption(self_, "serial_below_us", "500")), "");
  g_sized_run_us = 0;
  ASSERT_LE(LaunchesUntilOneTask(self_, SizedRun, kLimit), kLimit);
  g_sized_run_us = 2000;
  int launches = 1;
  while (TasksOfOneLaunch(self_, SizedRun) == 1 && launches <= 3) ++launches;
  EXPECT_LE(launches, 3) << "two 2 ms launches make the 500 us site split on the third";
  g_sized_run_us = 0;
  ASSERT_EQ(Consume(SetOption(self_, "serial_below_us", "0")), "");
}

// A launch of num_task tasks (0: one per thread) on `threads` threads runs
// exactly ids 0..num_ran-1, each once and seeing num_task == num_ran.
void ExpectLaunchRunsIdsBelowOnce(hetrt_instance_t* self, int32_t threads, int32_t num_task, int32_t num_ran) {
  SetThreads(self, threads);
  LaunchRecord record(16);
  ASSERT_EQ(Launch(self, CountRun, &record, num_task), "");
  ExpectOnlyTasksBelowRanOnce(record, num_ran);
  for (int32_t task_id = 0; task_id < num_ran; ++task_id) {
    EXPECT_EQ(record.num_task_seen[task_id].load(), num_ran) << "task " << task_id;
  }
}

TEST_F(CpuPluginTest, LaunchWithZeroTasksRunsEachTaskIdOnceOnePerThread) {
  ExpectLaunchRunsIdsBelowOnce(self_, 3, 0, 3);
}

TEST_F(CpuPluginTest, LaunchWithMoreTasksThanThreadsRunsIds0To6Once) { ExpectLaunchRunsIdsBelowOnce(self_, 3, 7, 7); }

TEST_F(CpuPluginTest, LaunchWithFewerTasksThanThreadsRunsOnlyThoseIds) {
  SetThreads(self_, 4);
  for (int32_t num_task : {1, 2, 3}) {
    LaunchRecord record(8);
    ASSERT_EQ(Launch(self_, CountRun, &record, num_task), "");
    ExpectOnlyTasksBelowRanOnce(record, num_task);
  }
}

TEST_F(CpuPluginTest, LaunchRefusesANegativeTaskCountOrANullLambda) {
  LaunchRecord record(4);
  int32_t failed_task = 0;
  auto args = Args<hetrt_parallel_launch_args_t>(self_);
  args.lambda = CountRun;
  args.cdata = &record;
  args.num_task = -1;
  EXPECT_EQ(CodeOf(Parallel().launch(&args)), HETRT_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(Launch(self_, nullptr, nullptr, 2, &failed_task), "");
  EXPECT_EQ(record.runs[0].load(), 0);
}

TEST_F(CpuPluginTest, CallingThreadRunsTaskZeroAndOtherTasksRunOnOtherThreads) {
  SetThreads(self_, 3);
  ThreadRecord record;
  ASSERT_EQ(Launch(self_, RecordThread, &record, 0), "");
  EXPECT_EQ(record.thread_of_task[0], std::this_thread::get_id());
  EXPECT_EQ(record.kernel_thread_ids.size(), 3u) << "each of the 3 tasks on its own thread";
}

TEST_F(CpuPluginTest, WorkersPersistAcrossLaunches) {
  SetThreads(self_, 3);
  ThreadRecord record;
  for (int launch = 0; launch < 200; ++launch) {
    ASSERT_EQ(Launch(self_, RecordThread, &record, 0), "");
  }
  // Kernel thread ids are handed out afresh, so new threads would show up here.
  EXPECT_EQ(record.kernel_thread_ids.size(), 3u);
}

int32_t FailOnTask1(int32_t task_id, hetrt_parallel_group_env_t*, void*) { return task_id == 1 ? -1 : 0; }

int32_t AlwaysFail(int32_t, hetrt_parallel_group_env_t*, void*) { return -1; }

TEST_F(CpuPluginTest, FailingTaskIsNamedInFailedTaskAndTheCallSucceeds) {
  SetThreads(self_, 3);
  int32_t failed_task = 0;
  EXPECT_EQ(Launch(self_, FailOnTask1, nullptr, 0, &failed_task), "");
  EXPECT_EQ(failed_task, 1);
  EXPECT_EQ(Launch(self_, FailOnTask1, nullptr, 7, &failed_task), "");
  EXPECT_EQ(failed_task, 1);
  EXPECT_EQ(Launch(self_, AlwaysFail, nullptr, 1, &failed_task), "");
  EXPECT_EQ(failed_task, 0) << "the serial path too";
  EXPECT_EQ(Launch(self_, AlwaysFail, nullptr, 5, &failed_task), "");
  EXPECT_GE(failed_task, 0);
  EXPECT_LT(failed_task, 5);
  LaunchRecord record(4);
  EXPECT_EQ(Launch(self_, CountRun, &record, 0, &failed_task), "");
  EXPECT_EQ(failed_task, -1) << "a failure does not stick";
}

// Each round: every task writes its slot, barrier, checks every slot, barrier
// (so that nobody overwrites a slot that another task is still checking).
struct BarrierRecord {
  static constexpr int64_t kRounds = 200;
  hetrt_instance_t* self = nullptr;
  std::vector<int64_t> slots = std::vector<int64_t>(64);  // plain memory on purpose
  std::atomic<int32_t> stale_reads{0};
  std::atomic<int32_t> barrier_failures{0};
};

int32_t WriteBarrierCheck(int32_t task_id, hetrt_parallel_group_env_t* env, void* cdata) {
  auto* record = static_cast<BarrierRecord*>(cdata);
  for (int64_t round = 1; round <= BarrierRecord::kRounds; ++round) {
    record->slots[task_id] = round * 1000 + task_id;
    if (Barrier(record->self, task_id, env) != HETRT_STATUS_OK) record->barrier_failures++;
    for (int32_t other = 0; other < env->num_task; ++other) {
      if (record->slots[other] != round * 1000 + other) record->stale_reads.fetch_add(1);
    }
    if (Barrier(record->self, task_id, env) != HETRT_STATUS_OK) record->barrier_failures++;
  }
  return 0;
}

TEST_F(CpuPluginTest, BarrierMakesEveryTasksEarlierWritesVisibleToAllTasks) {
  for (int32_t threads : {2, 3}) {
    SetThreads(self_, threads);
    for (int32_t num_task : {0, threads}) {
      BarrierRecord record;
      record.self = self_;
      ASSERT_EQ(Launch(self_, WriteBarrierCheck, &record, num_task), "");
      EXPECT_EQ(record.barrier_failures.load(), 0);
      EXPECT_EQ(record.stale_reads.load(), 0);
    }
  }
}

struct BarrierResult {
  explicit BarrierResult(hetrt_instance_t* instance) : self(instance) {}
  hetrt_instance_t* self;
  std::atomic<int32_t> failed_precondition{0};
};

int32_t CallBarrierOnce(int32_t task_id, hetrt_parallel_group_env_t* env, void* cdata) {
  auto* result = static_cast<BarrierResult*>(cdata);
  if (Barrier(result->self, task_id, env) == HETRT_STATUS_FAILED_PRECONDITION) {
    result->failed_precondition.fetch_add(1);
  }
  return 0;
}

TEST_F(CpuPluginTest, BarrierFailsInsteadOfHangingWhenTasksOutnumberThreads) {
  SetThreads(self_, 3);
  BarrierResult result(self_);
  ASSERT_EQ(Launch(self_, CallBarrierOnce, &result, 7), "");
  EXPECT_EQ(result.failed_precondition.load(), 7);
  EXPECT_EQ(Barrier(self_, 0, nullptr), HETRT_STATUS_FAILED_PRECONDITION) << "no env";
}

TEST_F(CpuPluginTest, TenThousandRepeatedLaunchesRunEveryTaskExactlyOnce) {
  SetThreads(self_, 3);
  constexpr int kLaunches = 10000;
  LaunchRecord record(8);
  for (int launch = 0; launch < kLaunches; ++launch) {
    ASSERT_TRUE(LaunchOk(self_, CountRun, &record, 0)) << "launch " << launch;
  }
  for (int32_t task_id = 0; task_id < 8; ++task_id) {
    EXPECT_EQ(record.runs[task_id].load(), task_id < 3 ? kLaunches : 0) << "task " << task_id;
  }
}

TEST_F(CpuPluginTest, RepeatedLaunchesOfMixedTaskCountsStayCorrect) {
  SetThreads(self_, 3);
  constexpr int32_t kTaskCounts[] = {0, 1, 2, 3, 5, 7};
  constexpr int kRepeats = 1000;
  LaunchRecord record(8);
  for (int repeat = 0; repeat < kRepeats; ++repeat) {
    for (int32_t num_task : kTaskCounts) ASSERT_TRUE(LaunchOk(self_, CountRun, &record, num_task));
  }
  for (int32_t task_id = 0; task_id < 8; ++task_id) {
    int32_t expected = 0;
    for (int32_t num_task : kTaskCounts) expected += task_id < (num_task == 0 ? 3 : num_task);
    EXPECT_EQ(record.runs[task_id].load(), expected * kRepeats) << "task " << task_id;
  }
}

TEST_F(CpuPluginTest, ResizingThePoolBetweenLaunchesKeepsLaunchesCorrect) {
  for (int32_t threads : {3, 1, 4, 2, 2, 3}) {
    SetThreads(self_, threads);
    LaunchRecord record(8);
    ASSERT_EQ(Launch(self_, CountRun, &record, 0), "");
    for (int32_t task_id = 0; task_id < 8; ++task_id) {
      EXPECT_EQ(record.runs[task_id].load(), task_id < threads ? 1 : 0)
          << "task " << task_id << " with " << threads << " threads";
    }
  }
}

TEST_F(CpuPluginTest, ResizingThePoolWhileAnotherThreadLaunchesIsSafe) {
  SetThreads(self_, 2);
  std::atomic<bool> stop{false};
  std::atomic<int32_t> failures{0};
  LaunchRecord record(8);
  int launches = 0;
  std::thread launcher([&] {
    while (!stop.load()) {
      if (!LaunchOk(self_, CountRun, &record, 3)) failures.fetch_add(1);
      ++launches;
    }
  });
  for (int resize = 0; resize < 40; ++resize) SetThreads(self_, resize % 2 == 0 ? 3 : 2);
  stop.store(true);
  launcher.join();
  EXPECT_EQ(failures.load(), 0);
  for (int32_t task_id = 0; task_id < 8; ++task_id) {
    EXPECT_EQ(record.runs[task_id].load(), task_id < 3 ? launches : 0) << "task " << task_id;
  }
}

struct NestedRecord {
  hetrt_instance_t* self = nullptr;
  int32_t inner_num_task = 0;
  std::vector<LaunchRecord*> inner;  // one per outer task
  std::atomic<int32_t> failures{0};
};

int32_t LaunchInsideTask(int32_t task_id, hetrt_parallel_group_env_t*, void* cdata) {
  auto* record = static_cast<NestedRecord*>(cdata);
  if (!LaunchOk(record->self, CountRun, record->inner.at(task_id), record->inner_num_task)) {
    record->failures.fetch_add(1);
  }
  return 0;
}

TEST_F(CpuPluginTest, NestedLaunchRunsSeriallyOnTheCallingTaskWithoutDeadlock) {
  SetThreads(self_, 3);
  for (int32_t inner_num_task : {0, 4}) {
    std::vector<LaunchRecord> inner;
    for (int i = 0; i < 3; ++i) inner.emplace_back(8);
    NestedRecord record;
    record.self = self_;
    record.inner_num_task = inner_num_task;
    for (LaunchRecord& launch : inner) record.inner.push_back(&launch);

    ASSERT_EQ(Launch(self_, LaunchInsideTask, &record, 0), "");
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
  SetThreads(self_, 2);
  constexpr int kLaunches = 2000;
  LaunchRecord first(8);
  LaunchRecord second(8);
  std::atomic<int32_t> failures{0};
  auto launch_many = [&](LaunchRecord* record) {
    for (int launch = 0; launch < kLaunches; ++launch) {
      if (!LaunchOk(self_, CountRun, record, 2)) failures.fetch_add(1);
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
    void* data = WorkspaceAlloc(self_, nbytes);
    ASSERT_NE(data, nullptr) << nbytes;
    EXPECT_TRUE(IsAligned(data, 64)) << data;
    std::memset(data, 0x5A, nbytes);
    blocks.push_back(data);
  }
  for (auto data = blocks.rbegin(); data != blocks.rend(); ++data) {
    EXPECT_EQ(WorkspaceFree(self_, *data), HETRT_STATUS_OK);
  }
}

TEST_F(CpuPluginTest, WorkspaceNonLifoFreesKeepLiveDataAndReleaseEverything) {
  constexpr uint64_t kBytes = 3000;
  auto* a = static_cast<unsigned char*>(WorkspaceAlloc(self_, kBytes));
  auto* b = static_cast<unsigned char*>(WorkspaceAlloc(self_, kBytes));
  auto* c = static_cast<unsigned char*>(WorkspaceAlloc(self_, kBytes));
  ASSERT_TRUE(a && b && c);
  std::memset(a, 0xA1, kBytes);
  std::memset(b, 0xB2, kBytes);
  std::memset(c, 0xC3, kBytes);

  EXPECT_EQ(WorkspaceFree(self_, a), HETRT_STATUS_OK) << "bottom first";
  auto* d = static_cast<unsigned char*>(WorkspaceAlloc(self_, kBytes));
  ASSERT_NE(d, nullptr);
  std::memset(d, 0xD4, kBytes);
  EXPECT_EQ(WorkspaceFree(self_, c), HETRT_STATUS_OK) << "middle while d is above it";
  for (uint64_t i = 0; i < kBytes; ++i) {
    ASSERT_EQ(b[i], 0xB2) << "b overwritten at " << i;
    ASSERT_EQ(d[i], 0xD4) << "d overwritten at " << i;
  }
  EXPECT_EQ(WorkspaceFree(self_, d), HETRT_STATUS_OK);
  EXPECT_EQ(WorkspaceFree(self_, b), HETRT_STATUS_OK);
  // Every allocation is gone, so the stack starts again at the bottom.
  EXPECT_EQ(WorkspaceAlloc(self_, kBytes), a);
  EXPECT_EQ(WorkspaceFree(self_, a), HETRT_STATUS_OK);
}

TEST_F(CpuPluginTest, WorkspaceAddressesRepeatOnceTheBlocksAreWarm) {
  // Larger than one initial block, so the first pass has to grow the stack.
  constexpr uint64_t kSizes[] = {60000, 100000, 1 << 20, 5};
  auto run_pass = [&] {
    std::vector<void*> pointers;
    for (uint64_t nbytes : kSizes) pointers.push_back(WorkspaceAlloc(self_, nbytes));
    for (auto data = pointers.rbegin(); data != pointers.rend(); ++data) {
      EXPECT_EQ(WorkspaceFree(self_, *data), HETRT_STATUS_OK);
    }
    return pointers;
  };
  run_pass();
  const std::vector<void*> warm = run_pass();
  EXPECT_EQ(run_pass(), warm);
}

TEST_F(CpuPluginTest, WorkspaceFreeOfAPointerItDidNotHandOutFails) {
  int not_workspace = 0;
  auto args = Args<hetrt_workspace_args_t>(self_);
  args.device = kCpu;
  args.data = &not_workspace;
  const std::string message = Consume(Device().workspace_free(&args));
  EXPECT_NE(message.find("workspace_free"), std::string::npos) << message;

  void* data = WorkspaceAlloc(self_, 128);
  ASSERT_NE(data, nullptr);
  EXPECT_EQ(WorkspaceFree(self_, data), HETRT_STATUS_OK);
  EXPECT_EQ(WorkspaceFree(self_, data), HETRT_STATUS_INVALID_ARGUMENT) << "double free";
}

TEST_F(CpuPluginTest, WorkspaceFreeFromAnotherThreadFails) {
  void* data = WorkspaceAlloc(self_, 128);
  ASSERT_NE(data, nullptr);
  hetrt_status_code_t status_elsewhere = HETRT_STATUS_OK;
  std::thread([&] { status_elsewhere = WorkspaceFree(self_, data); }).join();
  EXPECT_EQ(status_elsewhere, HETRT_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(WorkspaceFree(self_, data), HETRT_STATUS_OK);
}

TEST_F(CpuPluginTest, WorkspaceAllocForAnotherDeviceFails) {
  auto args = Args<hetrt_workspace_args_t>(self_);
  args.device = DLDevice{kDLOpenCL, 0};
  args.nbytes = 64;
  EXPECT_EQ(CodeOf(Device().workspace_alloc(&args)), HETRT_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(args.data, nullptr);
}

struct WorkspaceStress {
  explicit WorkspaceStress(hetrt_instance_t* instance) : self(instance) {}
  hetrt_instance_t* self;
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
      auto* data = static_cast<unsigned char*>(WorkspaceAlloc(stress->self, nbytes));
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
      if (WorkspaceFree(stress->self, *data) != HETRT_STATUS_OK) stress->failures.fetch_add(1);
    }
  }
  return 0;
}

TEST_F(CpuPluginTest, WorkspaceServesSeveralThreadsAtOnce) {
  SetThreads(self_, 3);
  WorkspaceStress stress(self_);
  ASSERT_EQ(Launch(self_, StressWorkspace, &stress, 0), "");
  ASSERT_EQ(Launch(self_, StressWorkspace, &stress, 7), "");
  EXPECT_EQ(stress.failures.load(), 0);
}

}  // namespace
