// Modules: load, call and check the plugin's sample module (module.sample,
// ABI 2.1), missing names, save/load round trip, malformed blobs, and calls
// from 8 threads at once.
#include <atomic>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "conformance.h"
#include "hetrt/device/device_module.h"

namespace hetrt::conformance {
namespace {

constexpr DLDevice kHost{kDLCPU, 0};

const hetrt_module_api_t* ModuleApi() { return Ctx().plugin->module_api(); }

#define HETRT_REQUIRE_MODULES() \
  if (ModuleApi() == nullptr) GTEST_SKIP() << "the plugin declares no type_keys (no module table)"

struct Sample {
  hetrt_module_sample_args_t args{};
  std::string skip;  // why there is none
};

Sample GetSample() {
  Sample s;
  const hetrt_module_api_t* api = ModuleApi();
  if (!HETRT_STRUCT_HAS(api, hetrt_module_api_t, sample) || api->sample == nullptr) {
    s.skip = "the plugin gives no sample module (module.sample, ABI 2.1)";
    return s;
  }
  s.args = Client().Make<hetrt_module_sample_args_t>();
  const Status status = Ctx().plugin->Consume(api->sample(&s.args));
  if (!status.ok()) s.skip = "module.sample failed: " + status.message();
  return s;
}

#define HETRT_REQUIRE_SAMPLE(var) \
  HETRT_REQUIRE_MODULES();        \
  const Sample var = GetSample(); \
  if (!var.skip.empty()) GTEST_SKIP() << var.skip

// Modules are loaded through the core's device face, as the module loader does.
using LoadedModule = DeviceModule;
Result<DeviceModule> LoadModule(const char* type_key, const uint8_t* data, uint64_t size, uint64_t* consumed) {
  return DeviceModule::Load(*Ctx().plugin, type_key, {data, static_cast<size_t>(size)}, consumed);
}

// Runs the sample's function once on `stream` (made current on this thread)
// and checks every output buffer. Returns the first problem, or OK.
Status RunSample(const Sample& sample, const LoadedModule& module, hetrt_stream_t* stream) {
  const hetrt_module_sample_args_t& s = sample.args;
  DeviceClient c = Client();
  HETRT_ASSIGN_OR_RETURN(std::optional<hetrt_packed_func_t> function, module.Function(s.function_name));
  if (!function) return NotFound(std::string("the sample's function '") + s.function_name + "' is not in its module");
  std::vector<void*> buffers(s.num_arguments, nullptr);
  std::vector<hetrt_value_t> values(s.num_arguments);
  std::vector<int32_t> codes(s.num_arguments);
  Status status;
  for (size_t i = 0; i < s.num_arguments && status.ok(); ++i) {
    const hetrt_module_sample_argument_t& a = s.arguments[i];
    codes[i] = a.type_code;
    values[i] = a.value;
    if (a.type_code != HETRT_TYPE_HANDLE) continue;
    auto dev = c.Allocate(a.nbytes);
    if (!dev.ok()) return dev.status();
    buffers[i] = dev->data;
    values[i].v_handle = dev->data;
    const std::vector<uint8_t> zeros(a.nbytes, 0);
    status = c.Copy(a.input ? a.input : zeros.data(), 0, kHost, dev->data, 0, c.device(), a.nbytes, stream);
  }
  hetrt_stream_t* previous = nullptr;
  if (status.ok() && stream) status = c.SetCurrentStream(stream, &previous);
  if (status.ok()) status = c.SetCurrent();
  if (status.ok()) {
    hetrt_value_t ret{};
    int32_t ret_code = HETRT_TYPE_NULL;
    const hetrt_packed_func_t& fn = *function;
    if (fn.call(values.data(), codes.data(), static_cast<int32_t>(values.size()), &ret, &ret_code, fn.resource) != 0)
      status = Internal(std::string("calling '") + s.function_name + "' returned non-zero");
  }
  if (stream) {
    hetrt_stream_t* ignored = nullptr;
    Status restored = c.SetCurrentStream(previous, &ignored);
    if (status.ok()) status = restored;
  }
  if (status.ok()) status = c.Synchronize(stream);
  for (size_t i = 0; i < s.num_arguments && status.ok(); ++i) {
    const hetrt_module_sample_argument_t& a = s.arguments[i];
    if (a.type_code != HETRT_TYPE_HANDLE || a.expected == nullptr) continue;
    std::vector<uint8_t> back(a.nbytes);
    status = c.Copy(buffers[i], 0, c.device(), back.data(), 0, kHost, a.nbytes, stream);
    if (status.ok() && std::memcmp(back.data(), a.expected, a.nbytes) != 0)
      status =
          Internal("argument " + std::to_string(i) + " of '" + s.function_name + "' holds other bytes than expected");
  }
  for (void* b : buffers)
    if (b) (void)c.Free(b);
  return status;
}

TEST(Modules, SampleLoadsListsAndRuns) {
  HETRT_REQUIRE_SAMPLE(sample);
  const hetrt_module_sample_args_t& s = sample.args;
  ASSERT_NE(s.type_key, nullptr);
  EXPECT_TRUE(Ctx().plugin->LoadsTypeKey(s.type_key)) << "the sample's type_key is not one the plugin declares";
  uint64_t consumed = 0;
  HETRT_CHECK_OK_AND_ASSIGN(LoadedModule module, LoadModule(s.type_key, s.data, s.size, &consumed));
  EXPECT_GT(consumed, 0u);
  EXPECT_LE(consumed, s.size);
  HETRT_CHECK_OK_AND_ASSIGN(auto names, module.FunctionNames());
  EXPECT_NE(std::find(names.begin(), names.end(), s.function_name), names.end())
      << "list_functions does not name " << s.function_name;
  HETRT_REQUIRE_DEVICE();
  HETRT_EXPECT_OK(RunSample(sample, module, nullptr));
}

TEST(Modules, MissingFunctionIsNotFoundWithoutAnError) {
  HETRT_REQUIRE_SAMPLE(sample);
  HETRT_CHECK_OK_AND_ASSIGN(LoadedModule module,
                            LoadModule(sample.args.type_key, sample.args.data, sample.args.size, nullptr));
  HETRT_CHECK_OK_AND_ASSIGN(auto function, module.Function("hetrt_conformance_no_such_function"));
  EXPECT_FALSE(function.has_value());
}

TEST(Modules, SaveLoadRoundTrip) {
  HETRT_REQUIRE_SAMPLE(sample);
  HETRT_CHECK_OK_AND_ASSIGN(LoadedModule first,
                            LoadModule(sample.args.type_key, sample.args.data, sample.args.size, nullptr));
  HETRT_CHECK_OK_AND_ASSIGN(std::vector<uint8_t> saved, first.Save());
  ASSERT_FALSE(saved.empty());
  uint64_t consumed = 0;
  HETRT_CHECK_OK_AND_ASSIGN(LoadedModule second,
                            LoadModule(sample.args.type_key, saved.data(), saved.size(), &consumed));
  EXPECT_EQ(consumed, saved.size()) << "load reads back exactly what save wrote";
  HETRT_CHECK_OK_AND_ASSIGN(auto names_first, first.FunctionNames());
  HETRT_CHECK_OK_AND_ASSIGN(auto names_second, second.FunctionNames());
  EXPECT_EQ(names_first, names_second);
  HETRT_CHECK_OK_AND_ASSIGN(std::vector<uint8_t> saved_again, second.Save());
  EXPECT_EQ(saved_again, saved) << "save of a reloaded module differs";
  HETRT_REQUIRE_DEVICE();
  HETRT_EXPECT_OK(RunSample(sample, second, nullptr));
}

// Loading must give a module or an error with a message, never crash or hang.
void ExpectLoadSurvives(const char* type_key, const std::vector<uint8_t>& blob, const std::string& what) {
  auto loaded = LoadModule(type_key, blob.data(), blob.size(), nullptr);
  if (!loaded.ok()) {
    EXPECT_GT(loaded.status().message().size(), 12u) << what << ": empty error message";
  }
}

TEST(Modules, EmptyAndGarbageBlobsAreErrors) {
  HETRT_REQUIRE_MODULES();
  std::mt19937 random(14);
  for (const std::string& key : Ctx().plugin->type_keys()) {
    SCOPED_TRACE(key);
    auto empty = LoadModule(key.c_str(), nullptr, 0, nullptr);
    EXPECT_FALSE(empty.ok()) << "an empty blob loaded as a module";
    for (size_t size : {1, 7, 8, 64, 4096}) {
      std::vector<uint8_t> garbage(size);
      for (uint8_t& b : garbage) b = static_cast<uint8_t>(random());
      ExpectLoadSurvives(key.c_str(), garbage, std::to_string(size) + " random bytes");
    }
    std::vector<uint8_t> huge_length(16, 0xff);  // a length field claiming 2^64 - 1 bytes
    auto loaded = LoadModule(key.c_str(), huge_length.data(), huge_length.size(), nullptr);
    EXPECT_FALSE(loaded.ok()) << "16 bytes of 0xff loaded as a module";
  }
}

// A sample cut short is an error (with a message); corrupted, it loads or is
// an error, never a crash.
TEST(Modules, TruncatedSamplesAreErrorsAndCorruptedOnesNeverCrash) {
  HETRT_REQUIRE_SAMPLE(sample);
  const std::vector<uint8_t> blob(sample.args.data, sample.args.data + sample.args.size);
  const size_t step = std::max<size_t>(1, blob.size() / 256);
  for (size_t n = 0; n < blob.size(); n += step) {
    auto loaded = LoadModule(sample.args.type_key, blob.data(), n, nullptr);
    ASSERT_FALSE(loaded.ok()) << "the sample cut to " << n << " of " << blob.size() << " bytes loaded";
    EXPECT_GT(loaded.status().message().size(), 12u) << "truncated to " << n;
  }
  std::mt19937 random(2026);
  for (int round = 0; round < 200; ++round) {
    std::vector<uint8_t> bad = blob;
    for (int flips = 0; flips < 1 + round % 4; ++flips) bad[random() % bad.size()] = static_cast<uint8_t>(random());
    ExpectLoadSurvives(sample.args.type_key, bad, "corruption round " + std::to_string(round));
  }
}

TEST(Modules, ConcurrentCallsFrom8Threads) {
  HETRT_REQUIRE_SAMPLE(sample);
  HETRT_REQUIRE_DEVICE();
  HETRT_CHECK_OK_AND_ASSIGN(LoadedModule module,
                            LoadModule(sample.args.type_key, sample.args.data, sample.args.size, nullptr));
  DeviceClient c = Client();
  const bool streams = c.api()->stream_create && c.api()->stream_set_current;
  std::vector<Status> results(8);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      hetrt_stream_t* stream = nullptr;
      if (streams) {
        auto s = c.NewStream();
        if (!s.ok()) return void(results[t] = s.status());
        stream = s.value();
      }
      for (int round = 0; round < 10 && results[t].ok(); ++round) results[t] = RunSample(sample, module, stream);
      if (stream) {
        Status destroyed = c.DestroyStream(stream);
        if (results[t].ok()) results[t] = destroyed;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (size_t t = 0; t < 8; ++t) EXPECT_TRUE(results[t].ok()) << "thread " << t << ": " << results[t].message();
}

}  // namespace
}  // namespace hetrt::conformance
