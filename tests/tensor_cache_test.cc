// The tensor cache reader (hetrt/relax/tensor_cache.h): the tiny_llama
// fixture's weights, an f32-to-bf16 cache written here, every malformed input
// refused naming the file and the record, the named registry and param arrays.
#include "hetrt/relax/tensor_cache.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>

#include "hetrt/base/dtype.h"
#include "hetrt/device/device.h"
#include "hetrt/plugin_host/plugin_registry.h"
#include "hetrt/sdk/byte_stream.h"
#include "test_support.h"

namespace hetrt {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Expects `part` in `text`, printing the text when it is not.
#define EXPECT_CONTAINS(text, part) EXPECT_NE(std::string(text).find(part), std::string::npos) << (text)

// A fresh directory under the system's temporary one, removed at the end.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "hetrt-tensor-cache-XXXXXX").string();
    if (::mkdtemp(pattern.data()) != nullptr) path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

void WriteFile(const std::string& path, std::span<const uint8_t> bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}
void WriteText(const std::string& path, const std::string& text) {
  WriteFile(path, {reinterpret_cast<const uint8_t*>(text.data()), text.size()});
}

template <class T>
void Append(std::vector<uint8_t>& bytes, const T& value) {
  const auto* p = reinterpret_cast<const uint8_t*>(&value);
  bytes.insert(bytes.end(), p, p + sizeof(T));
}

uint32_t FloatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

// bfloat16 values of the "b" record and the float32 bits each must become:
// 1.0, -2.5 (a negative number), a quiet NaN with payload, -inf.
constexpr uint16_t kBf16[] = {0x3F80, 0xC020, 0x7FC1, 0xFF80};
constexpr uint32_t kWidened[] = {0x3F800000u, 0xC0200000u, 0x7FC10000u, 0xFF800000u};

// One 40-byte shard:   w  float32 [2, 3] raw          bytes  0..24
//                      b  float32 [4]   f32-to-bf16   bytes 24..32
//                      i  int32   [2]   f32-to-bf16   bytes 32..40 (verbatim: not float32)
//                      e  float32 [0, 5] raw          0 bytes at 40
std::vector<uint8_t> ShardBytes() {
  std::vector<uint8_t> bytes;
  for (int k = 0; k < 6; ++k) Append(bytes, 0.5f * static_cast<float>(k) - 1.0f);
  for (uint16_t h : kBf16) Append(bytes, h);
  Append(bytes, int32_t{-7});
  Append(bytes, int32_t{123456});
  return bytes;
}

json CacheJson() {
  json record_w = {{"name", "w"},     {"shape", {2, 3}}, {"dtype", "float32"},
                   {"format", "raw"}, {"nbytes", 24},    {"byteOffset", 0}};
  json record_b = {{"name", "b"}, {"shape", {4}},    {"dtype", "float32"}, {"format", "f32-to-bf16"},
                   {"nbytes", 8}, {"byteOffset", 24}};
  json record_i = {{"name", "i"}, {"shape", {2}},    {"dtype", "int32"}, {"format", "f32-to-bf16"},
                   {"nbytes", 8}, {"byteOffset", 32}};
  json record_e = {{"name", "e"},     {"shape", {0, 5}}, {"dtype", "float32"},
                   {"format", "raw"}, {"nbytes", 0},     {"byteOffset", 40}};
  json shard = {{"dataPath", "params_shard_0.bin"},
                {"format", "raw-shard"},
                {"nbytes", 40},
                {"md5sum", "not checked"},
                {"records", {record_w, record_b, record_i, record_e}}};
  return {{"metadata", {{"ParamSize", 4}}}, {"records", {shard}}};
}

// A directory with the cache above, `index` written in place of its JSON.
class SmallCache {
 public:
  explicit SmallCache(const json& index = CacheJson()) { Write(index); }
  void Write(const json& index) {
    WriteFile(dir_ / "params_shard_0.bin", ShardBytes());
    WriteText(dir_ / "tensor-cache.json", index.dump(2));
  }
  const std::string& dir() const { return dir_.path(); }
  std::string operator/(const std::string& name) const { return dir_ / name; }
  Result<TensorCacheIndex> Open() const { return TensorCacheIndex::Open(dir()); }

 private:
  TempDir dir_;
};

// Opens the small cache with `edit` applied to its JSON and expects `code`
// and every one of `parts` in the message.
void ExpectRefused(const std::function<void(json&)>& edit, StatusCode code, std::vector<std::string> parts) {
  json index = CacheJson();
  edit(index);
  SmallCache cache(index);
  auto opened = cache.Open();
  ASSERT_FALSE(opened.ok()) << "opened: " << index.dump();
  EXPECT_EQ(opened.status().code(), code) << opened.status().ToString();
  for (const std::string& part : parts) EXPECT_CONTAINS(opened.status().message(), part);
}

json& Record(json& index, size_t r) { return index["records"][0]["records"][r]; }

Device Cpu() {
  auto device = PluginRegistry::Global().DeviceFor({kDLCPU, 0});
  EXPECT_TRUE(device.ok()) << device.status().ToString();
  return device.ok() ? *device : Device();
}

// ---- the real thing: tiny_llama's weights as TVM v0.25 wrote them

std::string TinyLlamaParams() {
  const fs::path dir = fs::path(testing::FixturesRoot()) / "tvm-0.25-llm" / "tiny_llama" / "params";
  return fs::is_regular_file(dir / "tensor-cache.json") ? dir.string() : std::string();
}

TEST(TensorCache, OpensTheTinyLlamaFixture) {
  const std::string dir = TinyLlamaParams();
  if (dir.empty())
    HETRT_MISSING("fixtures", "tvm-0.25-llm/tiny_llama/params not found under " << testing::FixturesRoot());
  HETRT_ASSERT_OK_AND_ASSIGN(TensorCacheIndex index, TensorCacheIndex::Open(dir));
  EXPECT_EQ(index.dir(), dir);

  // What the JSON says, read here independently.
  const json expected = json::parse(testing::ReadText(dir + "/tensor-cache.json"));
  size_t r = 0;
  uint64_t total = 0;
  ASSERT_EQ(index.shard_paths().size(), expected["records"].size());
  for (size_t s = 0; s < expected["records"].size(); ++s) {
    const json& shard = expected["records"][s];
    EXPECT_EQ(index.shard_paths()[s], dir + "/" + shard["dataPath"].get<std::string>());
    HETRT_ASSERT_OK_AND_ASSIGN(auto file, ReadFileBytes(index.shard_paths()[s]));
    for (const json& want : shard["records"]) {
      ASSERT_LT(r, index.records().size());
      const TensorCacheRecord& rec = index.records()[r++];
      SCOPED_TRACE(rec.name);
      EXPECT_EQ(rec.name, want["name"].get<std::string>());
      EXPECT_EQ(rec.shape, want["shape"].get<std::vector<int64_t>>());
      EXPECT_EQ(DataTypeToString(rec.dtype), want["dtype"].get<std::string>());
      EXPECT_EQ(rec.format, TensorCacheRecord::Format::kRaw);
      EXPECT_EQ(rec.nbytes, want["nbytes"].get<uint64_t>());
      EXPECT_EQ(rec.byte_offset, want["byteOffset"].get<uint64_t>());
      EXPECT_EQ(rec.shard, s);
      EXPECT_EQ(index.Find(rec.name), &rec);
      const std::span<const uint8_t> bytes = index.Bytes(rec);
      ASSERT_EQ(bytes.size(), rec.nbytes);
      EXPECT_EQ(0, std::memcmp(bytes.data(), file.data() + rec.byte_offset, bytes.size()));
      total += rec.decoded_nbytes();
    }
  }
  EXPECT_EQ(r, index.records().size());
  EXPECT_EQ(index.records().size(), expected["metadata"]["ParamSize"].get<size_t>());
  EXPECT_EQ(index.total_bytes(), total);
  EXPECT_EQ(index.total_bytes(), expected["metadata"]["ParamBytes"].get<uint64_t>());
  EXPECT_EQ(index.Find("no.such.weight"), nullptr);
  const TensorCacheRecord* embed = index.Find("model.embed_tokens.weight");
  ASSERT_NE(embed, nullptr);
  EXPECT_EQ(embed->shape, (std::vector<int64_t>{256, 64}));
}

TEST(TensorCache, LoadsTheTinyLlamaFixtureOntoTheCpu) {
  const std::string dir = TinyLlamaParams();
  if (dir.empty())
    HETRT_MISSING("fixtures", "tvm-0.25-llm/tiny_llama/params not found under " << testing::FixturesRoot());
  HETRT_ASSERT_OK_AND_ASSIGN(TensorCacheIndex index, TensorCacheIndex::Open(dir));
  const Device cpu = Cpu();
  ASSERT_TRUE(cpu.valid());
  std::vector<std::pair<size_t, size_t>> calls;
  HETRT_ASSERT_OK_AND_ASSIGN(std::vector<Tensor> tensors,
                             LoadAll(index, cpu, [&](size_t done, size_t total) { calls.emplace_back(done, total); }));
  ASSERT_EQ(tensors.size(), index.records().size());
  ASSERT_EQ(calls.size(), index.records().size());
  EXPECT_EQ(calls.back().first, index.total_bytes());
  EXPECT_EQ(calls.back().second, index.total_bytes());
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorCacheRecord& rec = index.records()[i];
    SCOPED_TRACE(rec.name);
    EXPECT_EQ(tensors[i].shape(), rec.shape);
    EXPECT_EQ(tensors[i].dtype(), rec.dtype);
    EXPECT_EQ(tensors[i].device().device_type, kDLCPU);
    ASSERT_EQ(tensors[i].nbytes(), rec.nbytes);
    EXPECT_EQ(0, std::memcmp(tensors[i].data(), index.Bytes(rec).data(), rec.nbytes));
    if (i > 0) {
      EXPECT_GT(calls[i].first, calls[i - 1].first);
    }
  }
}

// ---- decoding, on a cache written here

TEST(TensorCache, DecodesRawAndWidenedRecords) {
  SmallCache cache;
  HETRT_ASSERT_OK_AND_ASSIGN(TensorCacheIndex index, cache.Open());
  ASSERT_EQ(index.records().size(), 4u);
  EXPECT_EQ(index.records()[0].name, "w");
  EXPECT_EQ(index.records()[1].name, "b");
  EXPECT_EQ(index.records()[2].name, "i");
  EXPECT_EQ(index.records()[3].name, "e");
  const TensorCacheRecord& b = *index.Find("b");
  EXPECT_EQ(b.format, TensorCacheRecord::Format::kF32ToBf16);
  EXPECT_TRUE(b.widens_bf16());
  EXPECT_EQ(b.nbytes, 8u);
  EXPECT_EQ(b.decoded_nbytes(), 16u);
  EXPECT_FALSE(index.Find("i")->widens_bf16());
  EXPECT_EQ(index.total_bytes(), 24u + 16u + 8u + 0u);

  uint32_t widened[4] = {};
  HETRT_ASSERT_OK(DecodeRecordInto(index, b, widened));
  for (int k = 0; k < 4; ++k) EXPECT_EQ(widened[k], kWidened[k]) << k;
  float as_float[4];
  std::memcpy(as_float, widened, sizeof widened);
  EXPECT_EQ(as_float[0], 1.0f);
  EXPECT_EQ(as_float[1], -2.5f);
  EXPECT_TRUE(std::isnan(as_float[2]));
  EXPECT_TRUE(std::isinf(as_float[3]) && as_float[3] < 0);

  int32_t ints[2] = {};
  HETRT_ASSERT_OK(DecodeRecordInto(index, *index.Find("i"), ints));
  EXPECT_EQ(ints[0], -7);
  EXPECT_EQ(ints[1], 123456);
  float w[6] = {};
  HETRT_ASSERT_OK(DecodeRecordInto(index, *index.Find("w"), w));
  for (int k = 0; k < 6; ++k) EXPECT_EQ(FloatBits(w[k]), FloatBits(0.5f * static_cast<float>(k) - 1.0f));
  HETRT_ASSERT_OK(DecodeRecordInto(index, *index.Find("e"), nullptr));  // nothing to write
}

TEST(TensorCache, LoadRecordOntoTheCpu) {
  SmallCache cache;
  HETRT_ASSERT_OK_AND_ASSIGN(TensorCacheIndex index, cache.Open());
  const Device cpu = Cpu();
  ASSERT_TRUE(cpu.valid());
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor b, LoadRecord(index, *index.Find("b"), cpu));
  EXPECT_EQ(b.shape(), (std::vector<int64_t>{4}));
  EXPECT_EQ(b.dtype(), (DLDataType{kDLFloat, 32, 1}));
  ASSERT_EQ(b.nbytes(), 16u);
  EXPECT_EQ(0, std::memcmp(b.data(), kWidened, 16));
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor e, LoadRecord(index, *index.Find("e"), cpu));
  EXPECT_EQ(e.shape(), (std::vector<int64_t>{0, 5}));
  EXPECT_EQ(e.nbytes(), 0u);
  HETRT_ASSERT_OK_AND_ASSIGN(std::vector<Tensor> all, LoadAll(index, cpu));
  ASSERT_EQ(all.size(), 4u);
  EXPECT_EQ(0, std::memcmp(all[1].data(), kWidened, 16));
  EXPECT_EQ(all[2].data_as<int32_t>()[1], 123456);
}

// A device whose memory the host cannot address: the bytes go by copy (a
// widened record through the staging buffer).
TEST(TensorCache, LoadRecordOntoOpenCl) {
  HETRT_REQUIRE_OPENCL();
  HETRT_ASSERT_OK_AND_ASSIGN(Device cl, PluginRegistry::Global().DeviceFor({kDLOpenCL, 0}));
  SmallCache cache;
  HETRT_ASSERT_OK_AND_ASSIGN(TensorCacheIndex index, cache.Open());
  HETRT_ASSERT_OK_AND_ASSIGN(std::vector<Tensor> all, LoadAll(index, cl));
  ASSERT_EQ(all.size(), 4u);
  for (size_t i = 0; i < all.size(); ++i) {
    const TensorCacheRecord& rec = index.records()[i];
    SCOPED_TRACE(rec.name);
    EXPECT_EQ(all[i].device().device_type, kDLOpenCL);
    std::vector<uint8_t> expected(rec.decoded_nbytes()), back(rec.decoded_nbytes());
    HETRT_ASSERT_OK(DecodeRecordInto(index, rec, expected.data()));
    if (back.empty()) continue;
    HETRT_ASSERT_OK(
        cl.Copy(all[i].data(), all[i].dl()->byte_offset, all[i].device(), back.data(), 0, {kDLCPU, 0}, back.size()));
    EXPECT_EQ(back, expected);
  }
}

TEST(TensorCache, CopiesShareTheMappings) {
  std::optional<TensorCacheIndex> copy;
  std::span<const uint8_t> bytes;
  {
    SmallCache cache;
    HETRT_ASSERT_OK_AND_ASSIGN(TensorCacheIndex index, cache.Open());
    copy = index;
    bytes = index.Bytes(*index.Find("i"));
  }  // the original and the files are gone; the mapping is not
  ASSERT_EQ(bytes.size(), 8u);
  int32_t first;
  std::memcpy(&first, bytes.data(), sizeof first);
  EXPECT_EQ(first, -7);
  EXPECT_EQ(copy->records().size(), 4u);
  EXPECT_EQ(copy->Bytes(*copy->Find("i")).data(), bytes.data());
}

TEST(TensorCache, RefusesRecordsItDoesNotHold) {
  SmallCache cache;
  HETRT_ASSERT_OK_AND_ASSIGN(TensorCacheIndex index, cache.Open());
  TensorCacheRecord foreign = *index.Find("w");
  foreign.name = "foreign";
  foreign.shard = 7;
  EXPECT_TRUE(index.Bytes(foreign).empty());
  float out[6];
  Status s = DecodeRecordInto(index, foreign, out);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_CONTAINS(s.message(), "'foreign'");
  foreign.shard = 0;
  foreign.byte_offset = 32;  // 24 bytes from 32 run past the 40-byte shard
  EXPECT_TRUE(index.Bytes(foreign).empty());
  EXPECT_FALSE(DecodeRecordInto(index, foreign, out).ok());
  foreign.byte_offset = 0;
  foreign.shape = {2, 2};  // 16 bytes of float32, 24 stored
  EXPECT_CONTAINS(DecodeRecordInto(index, foreign, out).message(), "disagrees");
}

TEST(TensorCache, FollowsSymbolicLinksInside) {
  // The Hugging Face cache links every file to a blob elsewhere.
  SmallCache cache;
  TempDir blobs;
  fs::rename(cache / "params_shard_0.bin", blobs / "blob");
  fs::create_symlink(blobs / "blob", cache / "params_shard_0.bin");
  HETRT_ASSERT_OK_AND_ASSIGN(TensorCacheIndex index, cache.Open());
  EXPECT_EQ(index.records().size(), 4u);
}

TEST(TensorCache, ReadsTheOlderNdarrayCacheName) {
  SmallCache cache;
  fs::rename(cache / "tensor-cache.json", cache / "ndarray-cache.json");
  HETRT_ASSERT_OK_AND_ASSIGN(TensorCacheIndex index, cache.Open());
  EXPECT_EQ(index.records().size(), 4u);
  // Both present: tensor-cache.json is the one read.
  WriteText(cache / "tensor-cache.json", json{{"records", json::array()}}.dump());
  HETRT_ASSERT_OK_AND_ASSIGN(TensorCacheIndex newer, cache.Open());
  EXPECT_TRUE(newer.records().empty());
}

TEST(TensorCache, AnEmptyCacheOpens) {
  SmallCache cache(json{{"records", json::array()}});
  HETRT_ASSERT_OK_AND_ASSIGN(TensorCacheIndex index, cache.Open());
  EXPECT_TRUE(index.records().empty());
  EXPECT_EQ(index.total_bytes(), 0u);
}

// ---- malformed caches: each refused, naming the file and the record

TEST(TensorCacheRefuses, MissingIndex) {
  TempDir dir;
  auto opened = TensorCacheIndex::Open(dir.path());
  ASSERT_FALSE(opened.ok());
  EXPECT_EQ(opened.status().code(), StatusCode::kNotFound);
  EXPECT_CONTAINS(opened.status().message(), dir / "tensor-cache.json");
}

TEST(TensorCacheRefuses, MalformedJson) {
  for (const char* text : {"{\"records\": [", "", "not json", "{\"records\": [1,]}"}) {
    SmallCache cache;
    WriteText(cache / "tensor-cache.json", text);
    auto opened = cache.Open();
    ASSERT_FALSE(opened.ok()) << text;
    EXPECT_EQ(opened.status().code(), StatusCode::kDataLoss);
    EXPECT_CONTAINS(opened.status().message(), cache / "tensor-cache.json");
    EXPECT_CONTAINS(opened.status().message(), "not valid JSON");
  }
}

TEST(TensorCacheRefuses, DeepNesting) {
  SmallCache cache;
  WriteText(cache / "tensor-cache.json", std::string(100000, '['));
  auto opened = cache.Open();
  ASSERT_FALSE(opened.ok());
  EXPECT_CONTAINS(opened.status().message(), "nests deeper");
}

TEST(TensorCacheRefuses, WrongTopLevel) {
  ExpectRefused([](json& j) { j = json::array(); }, StatusCode::kDataLoss, {"tensor-cache.json", "found array"});
  ExpectRefused([](json& j) { j.erase("records"); }, StatusCode::kDataLoss,
                {"tensor-cache.json", "missing field 'records'"});
  ExpectRefused([](json& j) { j["records"] = json::object(); }, StatusCode::kDataLoss,
                {"field 'records': expected an array, found object"});
  ExpectRefused([](json& j) { j["records"][0] = "params_shard_0.bin"; }, StatusCode::kDataLoss,
                {"records[0]: expected a shard object, found string"});
}

TEST(TensorCacheRefuses, MissingField) {
  for (const char* field : {"name", "shape", "dtype", "format", "nbytes", "byteOffset"}) {
    SCOPED_TRACE(field);
    std::vector<std::string> parts = {"tensor-cache.json", "records[0].records[1]",
                                      std::string("missing field '") + field + "'"};
    if (std::string(field) != "name") parts.push_back("('b')");
    ExpectRefused([&](json& j) { Record(j, 1).erase(field); }, StatusCode::kDataLoss, parts);
  }
  for (const char* field : {"dataPath", "format", "nbytes", "records"}) {
    SCOPED_TRACE(field);
    ExpectRefused([&](json& j) { j["records"][0].erase(field); }, StatusCode::kDataLoss,
                  {"tensor-cache.json", "records[0]", std::string("missing field '") + field + "'"});
  }
}

TEST(TensorCacheRefuses, WrongFieldType) {
  ExpectRefused([](json& j) { Record(j, 0)["shape"] = "2x3"; }, StatusCode::kDataLoss,
                {"tensor-cache.json", "records[0].records[0] ('w')", "field 'shape': expected an array, found string"});
  ExpectRefused([](json& j) { Record(j, 0)["name"] = 5; }, StatusCode::kDataLoss,
                {"records[0].records[0]", "field 'name': expected a string, found the integer 5"});
  ExpectRefused([](json& j) { Record(j, 1)["byteOffset"] = -4; }, StatusCode::kDataLoss,
                {"('b')", "field 'byteOffset': expected a non-negative integer, found the negative integer -4"});
  ExpectRefused([](json& j) { Record(j, 1)["nbytes"] = 8.5; }, StatusCode::kDataLoss,
                {"('b')", "field 'nbytes'", "non-integer number 8.5"});
  ExpectRefused(
      [](json& j) {
        Record(j, 0)["shape"] = {2, "3"};
      },
      StatusCode::kDataLoss, {"('w')", "field 'shape'[1]: expected a non-negative integer, found string"});
  ExpectRefused(
      [](json& j) {
        Record(j, 0)["shape"] = {-2, -3};
      },
      StatusCode::kDataLoss, {"('w')", "field 'shape'[0]", "negative dimension -2"});
  ExpectRefused([](json& j) { Record(j, 0)["dtype"] = json::array(); }, StatusCode::kDataLoss,
                {"('w')", "field 'dtype': expected a string, found array"});
  ExpectRefused([](json& j) { j["records"][0]["nbytes"] = "40"; }, StatusCode::kDataLoss,
                {"records[0] ('params_shard_0.bin')", "field 'nbytes': expected a non-negative integer, found string"});
  ExpectRefused([](json& j) { Record(j, 2) = 3; }, StatusCode::kDataLoss,
                {"records[0].records[2]: expected a record object, found number"});
}

TEST(TensorCacheRefuses, MissingShard) {
  ExpectRefused([](json& j) { j["records"][0]["dataPath"] = "nope.bin"; }, StatusCode::kNotFound,
                {"nope.bin", "does not exist", "tensor-cache.json records[0]"});
}

TEST(TensorCacheRefuses, ShardThatIsNotAFile) {
  SmallCache cache;
  fs::create_directory(cache / "dir.bin");
  json index = CacheJson();
  index["records"][0]["dataPath"] = "dir.bin";
  cache.Write(index);
  auto opened = cache.Open();
  ASSERT_FALSE(opened.ok());
  EXPECT_CONTAINS(opened.status().message(), "not a regular file");
  EXPECT_CONTAINS(opened.status().message(), cache / "dir.bin");
}

TEST(TensorCacheRefuses, ShardSizeOtherThanNbytes) {
  ExpectRefused([](json& j) { j["records"][0]["nbytes"] = 41; }, StatusCode::kDataLoss,
                {"params_shard_0.bin' is 40 bytes", "says nbytes 41", "tensor-cache.json records[0]"});
}

TEST(TensorCacheRefuses, TruncatedShard) {
  SmallCache cache;
  const auto bytes = ShardBytes();
  WriteFile(cache / "params_shard_0.bin", std::span(bytes).first(30));
  auto opened = cache.Open();
  ASSERT_FALSE(opened.ok());
  EXPECT_EQ(opened.status().code(), StatusCode::kDataLoss);
  EXPECT_CONTAINS(opened.status().message(), cache / "params_shard_0.bin");
  EXPECT_CONTAINS(opened.status().message(), "is 30 bytes");
  EXPECT_CONTAINS(opened.status().message(), "nbytes 40 (truncated?)");
}

TEST(TensorCacheRefuses, RecordOutsideItsShard) {
  ExpectRefused([](json& j) { Record(j, 2)["byteOffset"] = 36; }, StatusCode::kDataLoss,
                {"tensor-cache.json", "records[0].records[2] ('i')", "byteOffset 36 + nbytes 8 runs past the end",
                 "params_shard_0.bin' (40 bytes)"});
  // An offset near 2^64: the end must not wrap around.
  ExpectRefused([](json& j) { Record(j, 2)["byteOffset"] = UINT64_MAX - 3; }, StatusCode::kDataLoss,
                {"('i')", "runs past the end"});
}

TEST(TensorCacheRefuses, NbytesOtherThanShapeTimesDtype) {
  ExpectRefused([](json& j) { Record(j, 0)["nbytes"] = 20; }, StatusCode::kDataLoss,
                {"tensor-cache.json", "('w')", "nbytes is 20 but shape [2, 3] of float32 takes 24"});
  // Widened: 2 bytes a value are stored.
  ExpectRefused([](json& j) { Record(j, 1)["nbytes"] = 16; }, StatusCode::kDataLoss,
                {"('b')", "nbytes is 16", "stored as bfloat16", "takes 8"});
  // Not float32: f32-to-bf16 stores it verbatim.
  ExpectRefused([](json& j) { Record(j, 2)["nbytes"] = 4; }, StatusCode::kDataLoss,
                {"('i')", "nbytes is 4 but shape [2] of int32 takes 8"});
}

TEST(TensorCacheRefuses, UnknownDtype) {
  ExpectRefused([](json& j) { Record(j, 0)["dtype"] = "floaty32"; }, StatusCode::kInvalidArgument,
                {"tensor-cache.json", "records[0].records[0] ('w')", "field 'dtype'", "floaty32"});
}

TEST(TensorCacheRefuses, UnknownFormat) {
  ExpectRefused([](json& j) { Record(j, 1)["format"] = "q4f16"; }, StatusCode::kUnimplemented,
                {"tensor-cache.json", "('b')", "expected \"raw\" or \"f32-to-bf16\", found \"q4f16\""});
  ExpectRefused([](json& j) { j["records"][0]["format"] = "zip-shard"; }, StatusCode::kUnimplemented,
                {"tensor-cache.json", "records[0]", "expected \"raw-shard\", found \"zip-shard\""});
}

TEST(TensorCacheRefuses, DuplicateName) {
  ExpectRefused([](json& j) { Record(j, 2)["name"] = "w"; }, StatusCode::kDataLoss,
                {"tensor-cache.json", "records[0].records[2] ('w')", "duplicate name",
                 "records[0].records[0] ('w') has it already"});
}

TEST(TensorCacheRefuses, PathsThatLeaveTheDirectory) {
  for (const char* path : {"../x", "/etc/passwd", "a/../../x", "sub/..", "..", ""}) {
    SCOPED_TRACE(path);
    ExpectRefused([&](json& j) { j["records"][0]["dataPath"] = path; }, StatusCode::kInvalidArgument,
                  {"tensor-cache.json", "records[0]", "dataPath '" + std::string(path) + "' refused"});
  }
}

TEST(TensorCacheRefuses, HugeDimensions) {
  static constexpr int64_t kBig = int64_t{1} << 62;
  ExpectRefused(
      [](json& j) {
        Record(j, 0)["shape"] = {kBig, kBig};
      },
      StatusCode::kDataLoss, {"tensor-cache.json", "('w')", "field 'shape'", "overflows"});
  // Elements fit int64, their bytes do not fit 64 bits.
  ExpectRefused([](json& j) { Record(j, 0)["shape"] = {kBig / 2, 3}; }, StatusCode::kDataLoss, {"('w')", "too large"});
  ExpectRefused([](json& j) { Record(j, 0)["shape"] = {UINT64_MAX}; }, StatusCode::kDataLoss,
                {"('w')", "does not fit int64"});
  ExpectRefused([](json& j) { Record(j, 0)["shape"] = {1e30}; }, StatusCode::kDataLoss, {"('w')", "field 'shape'[0]"});
}

// ---- the named registry and the param arrays built from it

Tensor Scalar(float value) {
  Tensor t = Tensor::EmptyHost({1}, {kDLFloat, 32, 1}).value();
  t.data_as<float>()[0] = value;
  return t;
}

TEST(TensorCacheRegistry, InsertOverrideGetRemoveClear) {
  TensorCacheRegistry registry;
  HETRT_ASSERT_OK(registry.Insert("a", Scalar(1)));
  Status again = registry.Insert("a", Scalar(2));
  EXPECT_EQ(again.code(), StatusCode::kInvalidArgument);
  EXPECT_CONTAINS(again.message(), "'a' is already present");
  EXPECT_EQ(registry.Get("a")->data_as<float>()[0], 1.0f);  // unchanged
  HETRT_ASSERT_OK(registry.Insert("a", Scalar(3), /*override=*/true));
  EXPECT_EQ(registry.Get("a")->data_as<float>()[0], 3.0f);
  HETRT_ASSERT_OK(registry.Insert("b", Scalar(4), /*override=*/true));  // override of nothing: an insert
  EXPECT_EQ(registry.size(), 2u);
  EXPECT_FALSE(registry.Get("c").has_value());
  EXPECT_TRUE(registry.Remove("a"));
  EXPECT_FALSE(registry.Remove("a"));
  EXPECT_EQ(registry.size(), 1u);
  const Tensor held = *registry.Get("b");
  registry.Clear();
  EXPECT_EQ(registry.size(), 0u);
  EXPECT_EQ(held.data_as<float>()[0], 4.0f);  // what was handed out stays valid
  EXPECT_EQ(&TensorCacheRegistry::Global(), &TensorCacheRegistry::Global());
}

TEST(TensorCacheRegistry, ParamArrayByName) {
  TensorCacheRegistry registry;
  HETRT_ASSERT_OK(registry.Insert("x", Scalar(1)));
  HETRT_ASSERT_OK(registry.Insert("y", Scalar(2)));
  const std::vector<std::string> names = {"y", "x", "y"};
  HETRT_ASSERT_OK_AND_ASSIGN(std::vector<Tensor> array, ParamArrayByName(registry, names));
  ASSERT_EQ(array.size(), 3u);
  EXPECT_EQ(array[0].data_as<float>()[0], 2.0f);
  EXPECT_EQ(array[1].data_as<float>()[0], 1.0f);
  EXPECT_EQ(array[2].data(), array[0].data());  // the cached tensor itself, not a copy
  const std::vector<std::string> missing = {"x", "z", "y"};
  auto refused = ParamArrayByName(registry, missing);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kNotFound);
  EXPECT_CONTAINS(refused.status().message(), "'z'");
  EXPECT_CONTAINS(refused.status().message(), "name 1 of the 3");
  HETRT_ASSERT_OK_AND_ASSIGN(std::vector<Tensor> none, ParamArrayByName(registry, {}));
  EXPECT_TRUE(none.empty());
}

TEST(TensorCacheRegistry, ParamArrayByPrefix) {
  TensorCacheRegistry registry;
  for (int i : {0, 1, 2, 4}) HETRT_ASSERT_OK(registry.Insert("param_" + std::to_string(i), Scalar(float(i))));
  HETRT_ASSERT_OK_AND_ASSIGN(std::vector<Tensor> two, ParamArrayByPrefix(registry, "param", 2));
  ASSERT_EQ(two.size(), 2u);
  EXPECT_EQ(two[1].data_as<float>()[0], 1.0f);
  // -1: up to the first missing name (param_3), param_4 not reached.
  HETRT_ASSERT_OK_AND_ASSIGN(std::vector<Tensor> until, ParamArrayByPrefix(registry, "param", -1));
  ASSERT_EQ(until.size(), 3u);
  EXPECT_EQ(until[2].data_as<float>()[0], 2.0f);
  HETRT_ASSERT_OK_AND_ASSIGN(std::vector<Tensor> zero, ParamArrayByPrefix(registry, "param", 0));
  EXPECT_TRUE(zero.empty());
  HETRT_ASSERT_OK_AND_ASSIGN(std::vector<Tensor> nothing, ParamArrayByPrefix(registry, "other", -1));
  EXPECT_TRUE(nothing.empty());
  auto refused = ParamArrayByPrefix(registry, "param", 5);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kNotFound);
  EXPECT_CONTAINS(refused.status().message(), "'param_3'");
  EXPECT_CONTAINS(refused.status().message(), "param_0..param_4");
  EXPECT_EQ(ParamArrayByPrefix(registry, "param", -2).status().code(), StatusCode::kInvalidArgument);
}

// The cache's tensors by name, as vm.builtin.tensor_cache.load leaves them.
TEST(TensorCacheRegistry, HoldsALoadedCache) {
  SmallCache cache;
  HETRT_ASSERT_OK_AND_ASSIGN(TensorCacheIndex index, cache.Open());
  const Device cpu = Cpu();
  ASSERT_TRUE(cpu.valid());
  HETRT_ASSERT_OK_AND_ASSIGN(std::vector<Tensor> tensors, LoadAll(index, cpu));
  TensorCacheRegistry registry;
  for (size_t i = 0; i < tensors.size(); ++i)
    HETRT_ASSERT_OK(registry.Insert(index.records()[i].name, tensors[i], /*override=*/true));
  const std::vector<std::string> names = {"b", "w"};
  HETRT_ASSERT_OK_AND_ASSIGN(std::vector<Tensor> array, ParamArrayByName(registry, names));
  EXPECT_EQ(0, std::memcmp(array[0].data(), kWidened, 16));
  EXPECT_EQ(array[1].shape(), (std::vector<int64_t>{2, 3}));
}

}  // namespace
}  // namespace hetrt
