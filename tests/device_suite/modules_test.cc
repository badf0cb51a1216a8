// Modules on every backend with a module table, through the core's module
// layer (PluginModule) and the plugin's own sample (module.sample): load,
// call on the current stream and check the bytes, missing names, save/load
// round trip, malformed blobs.
#include <random>

#include "device_suite.h"
#include "hetrt/base/byte_stream.h"
#include "hetrt/module/module_loader.h"

namespace hetrt::device_suite {
namespace {

std::vector<Backend> WithModules() {
  std::vector<Backend> with;
  for (const Backend& b : AllBackends())
    if (b.has_modules) with.push_back(b);
  return with;
}

class Modules : public DeviceSuite {
 protected:
  void SetUp() override {
    DeviceSuite::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    const hetrt_module_api_t* api = plugin()->module_api();
    ASSERT_NE(api, nullptr) << backend().name << " declares no type_keys";
    if (!HETRT_STRUCT_HAS(api, hetrt_module_api_t, sample) || api->sample == nullptr)
      GTEST_SKIP() << backend().name << " gives no sample module (module.sample)";
    sample_ = client().Make<hetrt_module_sample_args_t>();
    HETRT_ASSERT_OK(plugin()->Consume(api->sample(&sample_)));
  }
  std::vector<uint8_t> Blob() const { return {sample_.data, sample_.data + sample_.size}; }
  Result<std::shared_ptr<Module>> Load(const std::vector<uint8_t>& blob) const {
    ByteReader reader(blob, backend().name + " sample blob");
    return PluginModule::Load(plugin(), sample_.type_key, reader);
  }
  hetrt_module_sample_args_t sample_{};
};
INSTANTIATE_TEST_SUITE_P(Backends, Modules, ::testing::ValuesIn(WithModules()), BackendName);

TEST_P(Modules, TheSampleRunsOnTheCurrentStreamAndGivesItsBytes) {
  HETRT_ASSERT_OK_AND_ASSIGN(auto module, Load(Blob()));
  const std::vector<std::string> names = module->ListFunctionNames();
  EXPECT_NE(std::find(names.begin(), names.end(), sample_.function_name), names.end());
  HETRT_ASSERT_OK_AND_ASSIGN(const PackedFunc* none, module->GetFunction("hetrt_no_such_function"));
  EXPECT_EQ(none, nullptr);
  HETRT_ASSERT_OK_AND_ASSIGN(const PackedFunc* function, module->GetFunction(sample_.function_name));
  ASSERT_NE(function, nullptr);

  const conformance::DeviceClient c = client();
  HETRT_ASSERT_OK_AND_ASSIGN(hetrt_stream_t * stream, c.NewStream());
  hetrt_stream_t* previous = nullptr;
  HETRT_ASSERT_OK(c.SetCurrentStream(stream, &previous));
  auto set_device = c.Make<hetrt_set_device_args_t>();
  HETRT_ASSERT_OK(c.Call(c.api()->set_device, &set_device, "set_device"));
  std::vector<Tensor> buffers(sample_.num_arguments);
  std::vector<hetrt_value_t> values(sample_.num_arguments);
  std::vector<int32_t> codes(sample_.num_arguments);
  for (size_t i = 0; i < sample_.num_arguments; ++i) {
    const hetrt_module_sample_argument_t& a = sample_.arguments[i];
    codes[i] = a.type_code;
    values[i] = a.value;
    if (a.type_code != HETRT_TYPE_HANDLE) continue;
    HETRT_ASSERT_OK_AND_ASSIGN(buffers[i], Tensor::Empty({static_cast<int64_t>(a.nbytes)}, kU8, memory()));
    const std::vector<uint8_t> input =
        a.input ? std::vector<uint8_t>(a.input, a.input + a.nbytes) : std::vector<uint8_t>(a.nbytes, 0);
    HETRT_ASSERT_OK(registry().CopyBytes(input.data(), 0, kHost, buffers[i].data(), 0, device(), a.nbytes));
    values[i].v_handle = buffers[i].data();
  }
  HETRT_ASSERT_OK(CallPackedFunc(*function, values.data(), codes.data(), static_cast<int32_t>(values.size())));
  HETRT_ASSERT_OK(c.Synchronize(stream));
  for (size_t i = 0; i < sample_.num_arguments; ++i) {
    const hetrt_module_sample_argument_t& a = sample_.arguments[i];
    if (a.type_code != HETRT_TYPE_HANDLE || a.expected == nullptr) continue;
    std::vector<uint8_t> out(a.nbytes);
    HETRT_ASSERT_OK(registry().CopyBytes(buffers[i].data(), 0, device(), out.data(), 0, kHost, a.nbytes));
    EXPECT_EQ(out, std::vector<uint8_t>(a.expected, a.expected + a.nbytes)) << "argument " << i;
  }
  HETRT_ASSERT_OK(c.SetCurrentStream(previous));
  HETRT_ASSERT_OK(c.DestroyStream(stream));
}

TEST_P(Modules, SavedBytesLoadBackByteForByte) {
  HETRT_ASSERT_OK_AND_ASSIGN(auto module, Load(Blob()));
  HETRT_ASSERT_OK_AND_ASSIGN(std::vector<uint8_t> saved, module->SaveToBinary());
  EXPECT_EQ(saved, Blob());
  HETRT_ASSERT_OK_AND_ASSIGN(auto again, Load(saved));
  HETRT_ASSERT_OK_AND_ASSIGN(std::vector<uint8_t> resaved, again->SaveToBinary());
  EXPECT_EQ(resaved, saved);
}

TEST_P(Modules, TruncatedAndCorruptedBlobsAreErrorsNotCrashes) {
  const std::vector<uint8_t> blob = Blob();
  const size_t step = std::max<size_t>(1, blob.size() / 200);
  for (size_t n = 0; n < blob.size(); n += step) {
    EXPECT_FALSE(Load(std::vector<uint8_t>(blob.begin(), blob.begin() + static_cast<long>(n))).ok()) << n << " bytes";
  }
  std::mt19937 rng(5);
  for (int i = 0; i < 100; ++i) {
    std::vector<uint8_t> mutated = blob;
    mutated[rng() % mutated.size()] ^= static_cast<uint8_t>(1u << (rng() % 8));
    (void)Load(mutated);  // an error or a module, never a crash
  }
}

}  // namespace
}  // namespace hetrt::device_suite
