#include <gtest/gtest.h>

#include <filesystem>

#include "hetrt/base/dtype.h"
#include "hetrt/formats/params.h"
#include "test_support.h"

namespace hetrt {
namespace {

// Every .params file under tvm-0.18, by its path there ("add3/inputs.params").
std::vector<std::string> FixtureParamFiles() {
  std::vector<std::string> files;
  const std::filesystem::path root = std::filesystem::path(testing::FixturesRoot()) / "tvm-0.18";
  if (!std::filesystem::is_directory(root)) return files;
  for (const auto& e : std::filesystem::recursive_directory_iterator(root))
    if (e.path().extension() == ".params") files.push_back(std::filesystem::relative(e.path(), root).string());
  std::sort(files.begin(), files.end());
  return files;
}

using ParamDictOnFixture = testing::PerFixtureTest;
HETRT_INSTANTIATE_PER_FIXTURE(Tvm, ParamDictOnFixture, testing::FixtureParams(FixtureParamFiles(), ".params files"));

TEST_P(ParamDictOnFixture, FileRoundTripsByteForByte) {
  const std::string path = testing::FixturesRoot() + "/tvm-0.18/" + fixture();
  HETRT_ASSERT_OK_AND_ASSIGN(auto original, ReadFileBytes(path));
  HETRT_ASSERT_OK_AND_ASSIGN(auto params, ReadParamDict(original, path));
  HETRT_ASSERT_OK_AND_ASSIGN(auto written, WriteParamDict(params));
  EXPECT_EQ(written, original);
}

TEST(ParamDict, ReadsExpectedInputsAndOutputsOfAdd3) {
  HETRT_REQUIRE_FIXTURE(dir, "add3");
  HETRT_ASSERT_OK_AND_ASSIGN(auto inputs, LoadParamDictFile(dir + "/inputs.params"));
  HETRT_ASSERT_OK_AND_ASSIGN(auto outputs, LoadParamDictFile(dir + "/outputs.params"));
  ASSERT_EQ(inputs.size(), 3u);
  ASSERT_EQ(outputs.size(), 1u);
  EXPECT_EQ(outputs[0].name, "output_0");
  const NamedTensor* a = FindParam(inputs, "a");
  const NamedTensor* b = FindParam(inputs, "b");
  const NamedTensor* c = FindParam(inputs, "c");
  ASSERT_TRUE(a && b && c);
  EXPECT_EQ(a->tensor.shape(), (std::vector<int64_t>{1, 10}));
  EXPECT_EQ(DataTypeToString(a->tensor.dtype()), "float32");
  for (int i = 0; i < 10; ++i) {
    const float sum = a->tensor.data_as<float>()[i] + b->tensor.data_as<float>()[i] + c->tensor.data_as<float>()[i];
    EXPECT_NEAR(outputs[0].tensor.data_as<float>()[i], sum, 1e-6f);
  }
}

TEST(ParamDict, ZeroDimensionalParamsOfChain200) {
  HETRT_REQUIRE_FIXTURE(dir, "chain200");
  HETRT_ASSERT_OK_AND_ASSIGN(auto params, LoadParamDictFile(dir + "/params.params"));
  ASSERT_FALSE(params.empty());
  for (const auto& p : params) {
    EXPECT_EQ(p.tensor.dl()->ndim, 0) << p.name;
    EXPECT_EQ(p.tensor.nbytes(), 4u) << p.name;
  }
}

// A one-array dict: name "x", float32 [2].
std::vector<uint8_t> SmallDict() {
  Tensor t = Tensor::EmptyHost({2}, {kDLFloat, 32, 1}).value();
  t.data_as<float>()[0] = 1.5f;
  t.data_as<float>()[1] = -2.f;
  return WriteParamDict({{"x", t}}).value();
}

TEST(ParamDict, EveryTruncationIsACleanError) {
  const auto full = SmallDict();
  ASSERT_TRUE(ReadParamDict(full, "small").ok());
  for (size_t n = 0; n < full.size(); ++n) {
    auto r = ReadParamDict(std::span(full).first(n), "small");
    ASSERT_FALSE(r.ok()) << "truncated to " << n;
    EXPECT_EQ(r.status().code(), StatusCode::kDataLoss);
    EXPECT_NE(r.status().message().find("small at byte"), std::string::npos) << r.status().message();
  }
}

// Byte offsets inside SmallDict(): 16 header, 8 count, 8+1 name, 8 count, then the array.
constexpr size_t kArrayStart = 16 + 8 + 9 + 8;

TEST(ParamDict, BadMagicIsNamed) {
  auto bytes = SmallDict();
  bytes[0] ^= 0xFF;
  auto r = ReadParamDict(bytes, "small");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("magic"), std::string::npos);
  bytes = SmallDict();
  bytes[kArrayStart] ^= 0xFF;  // the NDArray magic
  r = ReadParamDict(bytes, "small");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("NDArray magic"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("param 'x'"), std::string::npos) << r.status().message();
}

TEST(ParamDict, WrongDtypeCodeIsRefused) {
  auto bytes = SmallDict();
  bytes[kArrayStart + 16 + 8 + 4] = 42;  // dtype code after magic, reserved, device, ndim
  auto r = ReadParamDict(bytes, "small");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("dtype code 42"), std::string::npos) << r.status().message();
}

TEST(ParamDict, AbsurdCountsAreRefusedBeforeAllocating) {
  auto bytes = SmallDict();
  const uint64_t huge = 1ULL << 60;
  std::memcpy(bytes.data() + 16, &huge, 8);
  auto r = ReadParamDict(bytes, "small");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("cannot fit"), std::string::npos) << r.status().message();
}

TEST(ParamDict, SizeMismatchAndNonCpuDeviceAreRefused) {
  auto bytes = SmallDict();
  int64_t wrong = 12;
  std::memcpy(bytes.data() + kArrayStart + 16 + 8 + 4 + 4 + 8, &wrong, 8);  // data_byte_size
  auto r = ReadParamDict(bytes, "small");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("does not match shape [2]"), std::string::npos) << r.status().message();
  bytes = SmallDict();
  bytes[kArrayStart + 16] = 2;  // device_type cuda
  r = ReadParamDict(bytes, "small");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("must be on cpu"), std::string::npos) << r.status().message();
}

TEST(ParamDict, VectorLanesAreRefusedRatherThanOverAllocated) {
  auto bytes = SmallDict();
  const uint16_t lanes = 65535;
  std::memcpy(bytes.data() + kArrayStart + 16 + 8 + 4 + 2, &lanes, 2);
  auto r = ReadParamDict(bytes, "small");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("lanes 1"), std::string::npos) << r.status().message();
}

TEST(ParamDict, DuplicateNamesAreRefused) {
  Tensor t = Tensor::EmptyHost({1}, {kDLFloat, 32, 1}).value();
  auto bytes = WriteParamDict({{"x", t}, {"x", t}}).value();
  auto r = ReadParamDict(bytes, "dup");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("duplicate"), std::string::npos);
}

}  // namespace
}  // namespace hetrt
