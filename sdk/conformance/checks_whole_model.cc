// Whole models (the whole-model table, ABI 2.1; its sample 2.2): declarations,
// accepts and declines, create's errors, io_count/io_info, set_input's size
// check, run, get_output against the sample's expected bytes, report, destroy,
// and NULL models refused. The model is the plugin's own sample, written into
// a folder the kit makes and removes.
#include <stdlib.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <vector>

#include "conformance.h"

namespace hetrt::conformance {
namespace {

namespace fs = std::filesystem;

const hetrt_whole_model_api_t* WholeModelApi() { return Ctx().plugin->whole_model_api(); }

#define HETRT_REQUIRE_WHOLE_MODEL() \
  if (WholeModelApi() == nullptr) GTEST_SKIP() << "the plugin has no whole-model table"

// A folder of the kit's own, removed with the object.
class ScratchDir {
 public:
  ScratchDir() {
    std::string pattern = (fs::temp_directory_path() / "hetrt-conformance-XXXXXX").string();
    if (mkdtemp(pattern.data()) != nullptr) path_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// The plugin's sample (copied out of the instance-owned args) and the folder it lies in.
struct Sample {
  ScratchDir dir;
  std::string path, device, skip;
  std::vector<std::pair<std::string, std::string>> options;
  // Plugin-owned, valid until the next sample call: io_info gives their sizes.
  std::vector<const uint8_t*> inputs, expected;
};

void GetSample(Sample& s) {
  const hetrt_whole_model_api_t* api = WholeModelApi();
  if (!HETRT_STRUCT_HAS(api, hetrt_whole_model_api_t, sample) || api->sample == nullptr) {
    s.skip = "the plugin gives no sample model (whole_model.sample, ABI 2.2)";
    return;
  }
  if (s.dir.path().empty()) {
    s.skip = "no scratch folder under " + fs::temp_directory_path().string();
    return;
  }
  auto args = AbiArgs<hetrt_whole_model_sample_args_t>();
  args.self = Ctx().plugin->instance();
  args.dir = s.dir.path().c_str();
  if (Status status = Ctx().plugin->Consume(api->sample(&args)); !status.ok()) {
    s.skip = "whole_model.sample failed: " + status.message();
    return;
  }
  s.path = args.path ? args.path : "";
  s.device = args.device ? args.device : "";
  for (size_t i = 0; i < args.num_options; ++i)
    s.options.emplace_back(args.options[i].key ? args.options[i].key : "",
                           args.options[i].value ? args.options[i].value : "");
  s.inputs.assign(args.inputs, args.inputs + args.num_inputs);
  s.expected.assign(args.expected_outputs, args.expected_outputs + args.num_outputs);
  for (const uint8_t* input : s.inputs)
    if (input == nullptr) s.skip = "whole_model.sample gave a NULL input";
}

#define HETRT_REQUIRE_SAMPLE(var) \
  HETRT_REQUIRE_WHOLE_MODEL();    \
  Sample var;                     \
  GetSample(var);                 \
  if (!var.skip.empty()) GTEST_SKIP() << var.skip

struct Io {
  std::string name;
  DLDataType dtype;
  std::vector<int64_t> shape;
  uint64_t nbytes;
};

// A created model, destroyed with the handle.
struct DestroyModel {
  void operator()(hetrt_whole_model_t* model) const {
    auto args = AbiArgs<hetrt_whole_model_args_t>();
    args.model = model;
    (void)Ctx().plugin->Consume(WholeModelApi()->destroy(&args));
  }
};
using Model = std::unique_ptr<hetrt_whole_model_t, DestroyModel>;

Result<Model> CreateModel(const std::string& path, const std::string& device,
                          const std::vector<std::pair<std::string, std::string>>& options = {}) {
  std::vector<hetrt_option_t> abi_options;
  for (const auto& [key, value] : options) abi_options.push_back({key.c_str(), value.c_str()});
  auto args = AbiArgs<hetrt_whole_model_create_args_t>();
  args.self = Ctx().plugin->instance();
  args.path = path.c_str();
  args.device = device.c_str();
  args.options = abi_options.data();
  args.num_options = abi_options.size();
  HETRT_RETURN_IF_ERROR(Ctx().plugin->Consume(WholeModelApi()->create(&args)));
  if (args.model == nullptr) return Internal("create succeeded without a model");
  return Model(args.model);
}

Result<std::pair<int32_t, int32_t>> IoCount(hetrt_whole_model_t* model) {
  auto args = AbiArgs<hetrt_whole_model_io_count_args_t>();
  args.model = model;
  HETRT_RETURN_IF_ERROR(Ctx().plugin->Consume(WholeModelApi()->io_count(&args)));
  return std::make_pair(args.num_inputs, args.num_outputs);
}

Result<Io> IoInfo(hetrt_whole_model_t* model, int32_t kind, int32_t index) {
  auto args = AbiArgs<hetrt_whole_model_io_info_args_t>();
  args.model = model;
  args.kind = kind;
  args.index = index;
  HETRT_RETURN_IF_ERROR(Ctx().plugin->Consume(WholeModelApi()->io_info(&args)));
  if (args.ndim < 0 || (args.ndim > 0 && args.shape == nullptr)) return DataLoss("io_info gave no shape");
  return Io{args.name ? args.name : "", args.dtype, {args.shape, args.shape + args.ndim}, args.nbytes};
}

Status CallTensor(hetrt_error_t* (*call)(hetrt_whole_model_tensor_args_t*), hetrt_whole_model_t* model, int32_t index,
                  void* data, uint64_t nbytes) {
  auto args = AbiArgs<hetrt_whole_model_tensor_args_t>();
  args.model = model;
  args.index = index;
  args.data = data;
  args.nbytes = nbytes;
  return Ctx().plugin->Consume(call(&args));
}

Status RunModel(hetrt_whole_model_t* model) {
  auto args = AbiArgs<hetrt_whole_model_args_t>();
  args.model = model;
  return Ctx().plugin->Consume(WholeModelApi()->run(&args));
}

Result<int32_t> Accepts(const std::string& path, const std::string& device, std::string* reason) {
  auto args = AbiArgs<hetrt_whole_model_accepts_args_t>();
  args.self = Ctx().plugin->instance();
  args.path = path.c_str();
  args.device = device.c_str();
  HETRT_RETURN_IF_ERROR(Ctx().plugin->Consume(WholeModelApi()->accepts(&args)));
  if (reason) *reason = args.reason ? args.reason : "";
  return args.accepted;
}

uint64_t DenseBytes(const Io& io) {
  uint64_t n = (uint64_t{io.dtype.bits} * io.dtype.lanes + 7) / 8;
  for (int64_t d : io.shape) n *= static_cast<uint64_t>(d);
  return n;
}

TEST(WholeModel, DeclarationsNameDevicesAndFormats) {
  HETRT_REQUIRE_WHOLE_MODEL();
  const hetrt_whole_model_api_t* api = WholeModelApi();
  ASSERT_GT(api->num_device_names, 0u) << "a whole-model table serves at least one device name";
  auto check_list = [](const char* const* list, size_t count, const char* what) {
    if (count > 0) {
      ASSERT_NE(list, nullptr) << what;
    }
    for (size_t i = 0; i < count; ++i) EXPECT_TRUE(list[i] != nullptr && list[i][0] != '\0') << what << " " << i;
  };
  check_list(api->device_names, api->num_device_names, "device_names");
  check_list(api->transports, api->num_transports, "transports");
  check_list(api->boards, api->num_boards, "boards");
  check_list(api->formats, api->num_formats, "formats");
  for (auto call :
       {(void*)api->accepts, (void*)api->create, (void*)api->destroy, (void*)api->io_count, (void*)api->io_info,
        (void*)api->set_input, (void*)api->run, (void*)api->get_output, (void*)api->report})
    EXPECT_NE(call, nullptr) << "every call before the optional project hooks is required";
}

TEST(WholeModel, AcceptsItsSampleAndDeclinesOtherFiles) {
  HETRT_REQUIRE_SAMPLE(sample);
  std::string reason;
  HETRT_CHECK_OK_AND_ASSIGN(int32_t accepted, Accepts(sample.path, sample.device, &reason));
  EXPECT_EQ(accepted, 1) << reason;
  const std::string text = sample.dir.path() + "/not_a_model.txt";
  std::ofstream(text) << "not a model\n";
  for (const std::string& path : {text, sample.dir.path() + "/missing", sample.dir.path()}) {
    auto declined = Accepts(path, sample.device, &reason);  // an error is allowed too; a crash is not
    if (declined.ok()) {
      EXPECT_EQ(*declined, 0) << path;
      EXPECT_FALSE(reason.empty()) << "a declined file comes with a reason: " << path;
    }
  }
}

TEST(WholeModel, CreateWithABadPathIsAnErrorNotACrash) {
  HETRT_REQUIRE_SAMPLE(sample);
  for (const std::string& path : {sample.dir.path() + "/missing.tar", sample.dir.path()}) {
    auto model = CreateModel(path, sample.device, sample.options);
    ASSERT_FALSE(model.ok()) << path;
    EXPECT_FALSE(model.status().message().empty());
  }
  const std::string garbage = sample.dir.path() + "/garbage.tar";
  std::ofstream(garbage, std::ios::binary) << std::string(1000, '\x1f');
  EXPECT_FALSE(CreateModel(garbage, sample.device, sample.options).ok());
}

TEST(WholeModel, IoCountAndInfoDescribeTheSample) {
  HETRT_REQUIRE_SAMPLE(sample);
  HETRT_CHECK_OK_AND_ASSIGN(Model model, CreateModel(sample.path, sample.device, sample.options));
  HETRT_CHECK_OK_AND_ASSIGN(auto counts, IoCount(model.get()));
  EXPECT_EQ(static_cast<size_t>(counts.first), sample.inputs.size());
  EXPECT_EQ(static_cast<size_t>(counts.second), sample.expected.size());
  for (int32_t kind : {HETRT_IO_INPUT, HETRT_IO_OUTPUT}) {
    const int32_t n = kind == HETRT_IO_INPUT ? counts.first : counts.second;
    for (int32_t i = 0; i < n; ++i) {
      HETRT_CHECK_OK_AND_ASSIGN(Io io, IoInfo(model.get(), kind, i));
      EXPECT_FALSE(io.name.empty());
      EXPECT_EQ(io.nbytes, DenseBytes(io)) << io.name << ": nbytes is what the shape and dtype make";
    }
    EXPECT_FALSE(IoInfo(model.get(), kind, n).ok()) << "an index past the tensors";
    EXPECT_FALSE(IoInfo(model.get(), kind, -1).ok());
  }
  EXPECT_FALSE(IoInfo(model.get(), 7, 0).ok()) << "an io kind that is neither input nor output";
}

TEST(WholeModel, SetInputOfAnotherSizeOrIndexIsAnError) {
  HETRT_REQUIRE_SAMPLE(sample);
  HETRT_CHECK_OK_AND_ASSIGN(Model model, CreateModel(sample.path, sample.device, sample.options));
  HETRT_CHECK_OK_AND_ASSIGN(Io in, IoInfo(model.get(), HETRT_IO_INPUT, 0));
  std::vector<uint8_t> bytes(in.nbytes + 8);
  EXPECT_FALSE(CallTensor(WholeModelApi()->set_input, model.get(), 0, bytes.data(), in.nbytes - 1).ok());
  EXPECT_FALSE(CallTensor(WholeModelApi()->set_input, model.get(), 0, bytes.data(), in.nbytes + 8).ok());
  EXPECT_FALSE(CallTensor(WholeModelApi()->set_input, model.get(), -1, bytes.data(), in.nbytes).ok());
  EXPECT_FALSE(CallTensor(WholeModelApi()->set_input, model.get(), 1 << 20, bytes.data(), in.nbytes).ok());
  HETRT_EXPECT_OK(CallTensor(WholeModelApi()->set_input, model.get(), 0, bytes.data(), in.nbytes));
}

TEST(WholeModel, RunGivesTheSamplesOutputsTwiceAndReports) {
  HETRT_REQUIRE_SAMPLE(sample);
  HETRT_CHECK_OK_AND_ASSIGN(Model model, CreateModel(sample.path, sample.device, sample.options));
  // As many as io_count says (IoCountAndInfoDescribeTheSample checks that).
  const auto num_inputs = static_cast<int32_t>(sample.inputs.size());
  const auto num_outputs = static_cast<int32_t>(sample.expected.size());
  for (int32_t i = 0; i < num_inputs; ++i) {
    HETRT_CHECK_OK_AND_ASSIGN(Io in, IoInfo(model.get(), HETRT_IO_INPUT, i));
    const uint8_t* given = sample.inputs[static_cast<size_t>(i)];
    std::vector<uint8_t> bytes(given, given + in.nbytes);
    HETRT_CHECK_OK(CallTensor(WholeModelApi()->set_input, model.get(), i, bytes.data(), bytes.size()));
  }
  for (int round = 0; round < 2; ++round) {
    HETRT_CHECK_OK(RunModel(model.get()));
    for (int32_t i = 0; i < num_outputs; ++i) {
      HETRT_CHECK_OK_AND_ASSIGN(Io out, IoInfo(model.get(), HETRT_IO_OUTPUT, i));
      std::vector<uint8_t> bytes(out.nbytes);
      HETRT_CHECK_OK(CallTensor(WholeModelApi()->get_output, model.get(), i, bytes.data(), bytes.size()));
      if (const uint8_t* expected = sample.expected[static_cast<size_t>(i)]) {
        EXPECT_EQ(std::memcmp(bytes.data(), expected, bytes.size()), 0) << "output '" << out.name << "', run " << round;
      }
      EXPECT_FALSE(CallTensor(WholeModelApi()->get_output, model.get(), i, bytes.data(), bytes.size() - 1).ok())
          << "a buffer smaller than the output";
    }
  }
  auto report = AbiArgs<hetrt_whole_model_report_args_t>();
  report.model = model.get();
  HETRT_CHECK_OK(Ctx().plugin->Consume(WholeModelApi()->report(&report)));
  EXPECT_LE(report.arena_bytes_used,
            report.arena_bytes_total == 0 ? report.arena_bytes_used : report.arena_bytes_total);
}

TEST(WholeModel, ManyModelsCreatedAndDestroyed) {
  HETRT_REQUIRE_SAMPLE(sample);
  for (int i = 0; i < 3; ++i) {
    std::vector<Model> models;
    for (int k = 0; k < 2; ++k) {
      HETRT_CHECK_OK_AND_ASSIGN(Model model, CreateModel(sample.path, sample.device, sample.options));
      models.push_back(std::move(model));
    }
  }
}

TEST(WholeModel, NullModelIsAnErrorValue) {
  HETRT_REQUIRE_WHOLE_MODEL();
  EXPECT_FALSE(IoCount(nullptr).ok());
  EXPECT_FALSE(IoInfo(nullptr, HETRT_IO_INPUT, 0).ok());
  EXPECT_FALSE(RunModel(nullptr).ok());
  uint8_t byte = 0;
  EXPECT_FALSE(CallTensor(WholeModelApi()->set_input, nullptr, 0, &byte, 1).ok());
  EXPECT_FALSE(CallTensor(WholeModelApi()->get_output, nullptr, 0, &byte, 1).ok());
  auto destroy = AbiArgs<hetrt_whole_model_args_t>();
  HETRT_EXPECT_OK(Ctx().plugin->Consume(WholeModelApi()->destroy(&destroy)));  // ignored, as free(NULL)
}

}  // namespace
}  // namespace hetrt::conformance
