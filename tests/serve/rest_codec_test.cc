// The REST codec: v2 inference request JSON (flat and nested data, every
// datatype), the binary tensor data extension both ways, the errors each bad
// input gets, and exact round trips of the values a response prints.
#include "rest_codec.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string_view>
#include <nlohmann/json.hpp>

#include "hetrt/base/dtype.h"

namespace hetrt::serve {
namespace {

using nlohmann::json;

Result<RestInferRequest> Parse(const std::string& body, std::optional<size_t> header = std::nullopt) {
  return ParseRestInferRequest(body, header);
}

// The error message of a parse that must fail with InvalidArgument.
std::string ErrorOf(const std::string& body, std::optional<size_t> header = std::nullopt) {
  auto r = Parse(body, header);
  EXPECT_FALSE(r.ok()) << body;
  if (r.ok()) return "";
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << r.status().ToString();
  return r.status().message();
}

// One input named "x" with the given datatype, shape and data (JSON text).
std::string OneInput(const std::string& datatype, const std::string& shape, const std::string& data) {
  return R"({"inputs":[{"name":"x","datatype":")" + datatype + R"(","shape":)" + shape + R"(,"data":)" + data + "}]}";
}

// Each body is refused with a message containing its words.
using RefusedCases = std::vector<std::pair<std::string, std::string>>;
void ExpectEachRefused(const RefusedCases& cases) {
  for (const auto& [body, words] : cases) EXPECT_NE(ErrorOf(body).find(words), std::string::npos) << body;
}

template <typename T>
std::vector<T> Values(const Tensor& t) {
  std::vector<T> v(static_cast<size_t>(t.num_elements()));
  if (!v.empty()) std::memcpy(v.data(), t.data(), t.nbytes());
  return v;
}

template <typename T>
std::string Bytes(const std::vector<T>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
}

Tensor HostTensor(std::vector<int64_t> shape, DLDataType dtype, const std::string& bytes) {
  Tensor t = Tensor::EmptyHost(std::move(shape), dtype).value();
  EXPECT_EQ(t.nbytes(), bytes.size());
  std::memcpy(t.data(), bytes.data(), bytes.size());
  return t;
}

constexpr DLDataType kF32{kDLFloat, 32, 1};
constexpr DLDataType kF64{kDLFloat, 64, 1};

// ---- JSON requests ----

TEST(RestCodec, FlatJsonRequest) {
  auto r = Parse(R"({"id":"req-7","inputs":[{"name":"a","datatype":"FP32","shape":[2,3],"data":[1,2.5,-3,4,5,6e-3]}]})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->request.id, "req-7");
  ASSERT_EQ(r->request.inputs.size(), 1u);
  const InferTensor& a = r->request.inputs[0];
  EXPECT_EQ(a.name, "a");
  EXPECT_EQ(a.tensor.shape(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(a.tensor.dtype(), kF32);
  EXPECT_EQ(Values<float>(a.tensor), (std::vector<float>{1, 2.5f, -3, 4, 5, 6e-3f}));
  EXPECT_TRUE(r->request.outputs.empty());
  EXPECT_FALSE(r->output_format.IsBinary("output_0"));
}

TEST(RestCodec, NestedDataEqualsFlat) {
  auto nested = Parse(OneInput("INT32", "[2,2,2]", "[[[1,2],[3,4]],[[5,6],[7,8]]]"));
  auto flat = Parse(OneInput("INT32", "[2,2,2]", "[1,2,3,4,5,6,7,8]"));
  ASSERT_TRUE(nested.ok()) << nested.status().ToString();
  ASSERT_TRUE(flat.ok()) << flat.status().ToString();
  EXPECT_EQ(Values<int32_t>(nested->request.inputs[0].tensor), Values<int32_t>(flat->request.inputs[0].tensor));
  EXPECT_EQ(Values<int32_t>(flat->request.inputs[0].tensor), (std::vector<int32_t>{1, 2, 3, 4, 5, 6, 7, 8}));
}

TEST(RestCodec, NestingMustMatchShape) {
  ExpectEachRefused({
      {OneInput("FP32", "[2,3]", "[[1,2],[3,4],[5,6]]"), "input 'x': \"data\" nests as neither"},
      {OneInput("FP32", "[2,2]", "[[1,2],[3]]"), "nests as neither"},
      {OneInput("FP32", "[1,2]", "[[1,[2]]]"), "nests deeper than shape [1, 2]"},
      {OneInput("FP32", "[2]", "[1,[2]]"), "data[1]"},
  });
}

TEST(RestCodec, HugeShapeWithSmallNestedData) {
  // Found by the fuzzer: a shape of 5e10 elements must not size anything
  // before the data is seen to disagree with it.
  EXPECT_NE(ErrorOf(OneInput("UINT8", "[2,25555555511]", "[[0,255],[0,2]]")).find("nests as neither"),
            std::string::npos);
}

TEST(RestCodec, ElementCountMustMatchShape) {
  ExpectEachRefused({
      {OneInput("FP32", "[2,2]", "[1,2,3]"), "input 'x': \"data\" has 3 values; shape [2, 2] needs 4"},
      {OneInput("FP32", "[1]", "{}"), "\"data\" must be an array"},
  });
}

TEST(RestCodec, EmptyTensor) {
  auto r = Parse(OneInput("FP32", "[0,3]", "[]"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->request.inputs[0].tensor.num_elements(), 0);
  EXPECT_EQ(r->request.inputs[0].tensor.shape(), (std::vector<int64_t>{0, 3}));
}

struct DatatypeCase {
  const char* datatype;
  const char* data;      // two elements
  std::string expected;  // their bytes
  DLDataType dtype;
};

TEST(RestCodec, EveryJsonDatatype) {
  const DatatypeCase cases[] = {
      {"BOOL", "[true,false]", std::string("\1\0", 2), {6, 8, 1}},
      {"UINT8", "[0,255]", Bytes<uint8_t>({0, 255}), {kDLUInt, 8, 1}},
      {"UINT16", "[1,65535]", Bytes<uint16_t>({1, 65535}), {kDLUInt, 16, 1}},
      {"UINT32", "[7,4294967295]", Bytes<uint32_t>({7, 4294967295u}), {kDLUInt, 32, 1}},
      {"UINT64", "[0,18446744073709551615]", Bytes<uint64_t>({0, 18446744073709551615ull}), {kDLUInt, 64, 1}},
      {"INT8", "[-128,127]", Bytes<int8_t>({-128, 127}), {kDLInt, 8, 1}},
      {"INT16", "[-32768,32767]", Bytes<int16_t>({-32768, 32767}), {kDLInt, 16, 1}},
      {"INT32", "[-2147483648,2147483647]", Bytes<int32_t>({-2147483647 - 1, 2147483647}), {kDLInt, 32, 1}},
      {"INT64",
       "[-9223372036854775808,9223372036854775807]",
       Bytes<int64_t>({std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()}),
       {kDLInt, 64, 1}},
      {"FP32", "[1.5,-2]", Bytes<float>({1.5f, -2.0f}), kF32},
      {"FP64", "[0.1,1e300]", Bytes<double>({0.1, 1e300}), kF64},
  };
  for (const DatatypeCase& c : cases) {
    auto r = Parse(OneInput(c.datatype, "[2]", c.data));
    ASSERT_TRUE(r.ok()) << c.datatype << ": " << r.status().ToString();
    const Tensor& t = r->request.inputs[0].tensor;
    EXPECT_EQ(t.dtype(), c.dtype) << c.datatype;
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(t.data()), t.nbytes()), c.expected) << c.datatype;
  }
}

TEST(RestCodec, ValuesMustFitTheDatatype) {
  ExpectEachRefused({
      {OneInput("UINT8", "[1]", "[300]"), "input 'x': data[0]: 300 does not fit UINT8 (0..255)"},
      {OneInput("INT8", "[2]", "[0,-129]"), "data[1]: -129 does not fit INT8 (-128..127)"},
      {OneInput("UINT32", "[1]", "[-1]"), "-1 does not fit UINT32"},
      {OneInput("INT64", "[1]", "[9223372036854775808]"), "does not fit INT64"},
      {OneInput("INT32", "[1]", "[1.5]"), "1.5 is not an integer (INT32 takes integers)"},
      {OneInput("INT32", "[1]", "[true]"), "true is not an integer"},
      {OneInput("BOOL", "[1]", "[1]"), "1 is not a boolean (BOOL takes true or false)"},
      {OneInput("FP32", "[1]", "[\"1.0\"]"), "\"1.0\" is not a number (FP32 takes numbers)"},
      {OneInput("FP32", "[1]", "[null]"), "null is not a number"},
      {OneInput("FP64", "[1]", "[false]"), "false is not a number"},
      {OneInput("FP32", "[1]", "[1e39]"), "is out of range for FP32"},
      {OneInput("FP32", "[1]", "[-3.41e38]"), "is out of range for FP32"},
  });
}

TEST(RestCodec, DatatypesWithoutJsonForm) {
  ExpectEachRefused({
      {OneInput("FP16", "[1]", "[1]"), "FP16 has no JSON form: send it as binary data"},
      {OneInput("BF16", "[1]", "[1]"), "BF16 has no JSON form"},
      {OneInput("BYTES", "[1]", "[\"abc\"]"), "BYTES tensors are not supported"},
      {OneInput("FLOAT32", "[1]", "[1]"), "unknown datatype \"FLOAT32\"; expected BOOL, UINT8"},
  });
}

TEST(RestCodec, BadShapes) {
  ExpectEachRefused({
      {OneInput("FP32", "[-1,2]", "[1,2]"), "input 'x': shape [-1,2] has a negative dimension"},
      {OneInput("FP32", "[1.5]", "[1]"), "dimensions must be integers"},
      {OneInput("FP32", "[\"2\"]", "[1,2]"), "dimensions must be integers"},
      {OneInput("FP32", "2", "[1,2]"), "\"shape\" must be an array of integers"},
      // 2^40 * 2^40 elements overflow int64: refused before anything is allocated.
      {OneInput("FP32", "[1099511627776,1099511627776]", "[]"), "shape [1099511627776, 1099511627776]"},
      // 2^62 elements fit int64 but not as FP64 bytes.
      {OneInput("FP64", "[4611686018427387904]", "[]"), "overflows 64-bit sizes"},
      {OneInput("FP64", "[18446744073709551615]", "[]"), "dimensions must be integers"},
  });
}

TEST(RestCodec, BadRequestStructure) {
  ExpectEachRefused({
      {"[]", "the inference request must be a JSON object"},
      {"{}", "needs \"inputs\""},
      {R"({"inputs":{}})", "needs \"inputs\""},
      {R"({"id":7,"inputs":[]})", "\"id\" must be a string"},
      {R"({"inputs":[1]})", "inputs[0]: must be an object"},
      {R"({"inputs":[{"datatype":"FP32","shape":[1],"data":[1]}]})", "inputs[0]: \"name\" must be a non-empty string"},
      {R"({"inputs":[{"name":"","datatype":"FP32","shape":[1],"data":[1]}]})", "inputs[0]: \"name\""},
      {R"({"inputs":[{"name":"x","shape":[1],"data":[1]}]})", "input 'x': \"datatype\" must be a string"},
      {R"({"inputs":[{"name":"x","datatype":"FP32","data":[1]}]})", "input 'x': \"shape\" is missing"},
      {R"({"inputs":[{"name":"x","datatype":"FP32","shape":[1]}]})", "input 'x': has neither \"data\" nor"},
      {R"({"inputs":[{"name":"x","datatype":"FP32","shape":[1],"data":[1]},{"name":"x","datatype":"FP32","shape":[1],"data":[1]}]})",
       "input 'x': given more than once"},
      {R"({"inputs":[{"name":"x","datatype":"FP32","shape":[1],"data":[1],"parameters":[]}]})",
       "input 'x': \"parameters\" must be an object"},
      {R"({"inputs":[{"name":"x","datatype":"FP32","shape":[1],"parameters":{"shared_memory_region":"r"}}]})",
       "shared memory inputs are not supported"},
      {R"({"parameters":{"binary_data_output":1},"inputs":[]})", "\"binary_data_output\" must be true or false"},
      {R"({"inputs":[],"outputs":{}})", "\"outputs\" must be an array"},
      {R"({"inputs":[],"outputs":[{}]})", "outputs[0]: \"name\" must be a non-empty string"},
      {R"({"inputs":[],"outputs":[{"name":"y"},{"name":"y"}]})", "output 'y': requested more than once"},
      {R"({"inputs":[],"outputs":[{"name":"y","parameters":{"binary_data":"yes"}}]})",
       "output 'y': parameter \"binary_data\" must be true or false"},
      {R"({"inputs":[],"outputs":[{"name":"y","parameters":{"classification":2}}]})",
       "classification extension is not supported"},
  });
}

TEST(RestCodec, MalformedJson) {
  for (const char* body : {"", "{", "{\"inputs\": [}", "{\"inputs\":[]} trailing", "\xff\xfe"}) {
    auto r = Parse(body);
    ASSERT_FALSE(r.ok()) << body;
    EXPECT_EQ(r.status().code(), StatusCode::kDataLoss) << body;
    EXPECT_NE(r.status().message().find("the inference request is not valid JSON: parse error"), std::string::npos)
        << r.status().message();
  }
  // A number beyond double's range (found by the fuzzer: the JSON library throws on it).
  auto huge = Parse(OneInput("FP64", "[1]", "[1e700]"));
  ASSERT_FALSE(huge.ok());
  EXPECT_EQ(huge.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(huge.status().message().find("number overflow parsing '1e700'"), std::string::npos)
      << huge.status().message();
  // Deep nesting is refused by a scan before any tree is built.
  auto deep = Parse(std::string(100000, '['));
  ASSERT_FALSE(deep.ok());
  EXPECT_NE(deep.status().message().find("nests deeper than 64 levels"), std::string::npos);
}

TEST(RestCodec, OutputsAndBinaryFlags) {
  auto r = Parse(R"({"parameters":{"binary_data_output":true},"inputs":[],
                     "outputs":[{"name":"output_1"},{"name":"output_0","parameters":{"binary_data":false}}]})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->request.outputs, (std::vector<std::string>{"output_1", "output_0"}));
  EXPECT_TRUE(r->output_format.IsBinary("output_1"));
  EXPECT_FALSE(r->output_format.IsBinary("output_0"));
  EXPECT_TRUE(r->output_format.IsBinary("output_2"));  // unlisted: all outputs were asked for as binary

  auto one = Parse(R"({"inputs":[],"outputs":[{"name":"output_0","parameters":{"binary_data":true}},{"name":"b"}]})");
  ASSERT_TRUE(one.ok()) << one.status().ToString();
  EXPECT_TRUE(one->output_format.IsBinary("output_0"));
  EXPECT_FALSE(one->output_format.IsBinary("b"));
}

TEST(RestCodec, UnknownParametersAreIgnored) {
  auto r = Parse(R"({"parameters":{"priority":1},"inputs":[{"name":"x","datatype":"FP32","shape":[1],"data":[1],
                     "parameters":{"custom":"v"}}],"extra":true})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Values<float>(r->request.inputs[0].tensor), std::vector<float>{1});
}

// ---- binary tensor data extension: requests ----

// A request whose JSON is `json_text` followed by `binary`, with the header length.
std::pair<std::string, size_t> WithBinary(const std::string& json_text, const std::string& binary) {
  return {json_text + binary, json_text.size()};
}

TEST(RestCodec, BinaryInputsMixedWithJson) {
  const std::vector<float> a = {1.5f, -2.25f, 3.0f};
  const std::vector<int64_t> c = {-1, 1LL << 40};
  const std::string json_text = R"({"inputs":[
      {"name":"a","datatype":"FP32","shape":[1,3],"parameters":{"binary_data_size":12}},
      {"name":"b","datatype":"INT8","shape":[2],"data":[-5,6]},
      {"name":"c","datatype":"INT64","shape":[2],"parameters":{"binary_data_size":16}}]})";
  auto [body, header] = WithBinary(json_text, Bytes(a) + Bytes(c));
  auto r = Parse(body, header);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->request.inputs.size(), 3u);
  EXPECT_EQ(Values<float>(r->request.inputs[0].tensor), a);
  EXPECT_EQ(Values<int8_t>(r->request.inputs[1].tensor), (std::vector<int8_t>{-5, 6}));
  EXPECT_EQ(Values<int64_t>(r->request.inputs[2].tensor), c);
  EXPECT_EQ(r->request.inputs[2].tensor.shape(), (std::vector<int64_t>{2}));
}

// `body` copied into `storage` so that its byte `at` is kTensorAlignment-aligned
// (as the REST frontend places a body whose binary inputs start there).
std::string_view PlacedSoThatByteIsAligned(const std::string& body, size_t at, std::string& storage) {
  storage.reserve(body.size() + kTensorAlignment);
  const uintptr_t byte = reinterpret_cast<uintptr_t>(storage.data()) + at;
  const size_t pad = static_cast<size_t>((kTensorAlignment - byte % kTensorAlignment) % kTensorAlignment);
  storage.assign(pad, '\0');
  storage += body;
  return std::string_view(storage).substr(pad);
}

// The REST frontend keeps the body until the request has run, and a binary
// input that is aligned in it views it (one copy of a large input less); one
// that is not (or the default) is a copy.
TEST(RestCodec, AlignedBinaryInputsViewTheBodyWhenAsked) {
  const std::vector<float> a = {1.5f, -2.25f, 3.0f};
  const std::string json_text = R"({"inputs":[
      {"name":"a","datatype":"FP32","shape":[3],"parameters":{"binary_data_size":12}},
      {"name":"b","datatype":"INT8","shape":[2],"data":[-5,6]},
      {"name":"c","datatype":"FP32","shape":[3],"parameters":{"binary_data_size":12}}]})";
  auto [text, header] = WithBinary(json_text, Bytes(a) + Bytes(a));
  std::string storage;
  const std::string_view body = PlacedSoThatByteIsAligned(text, header, storage);
  auto viewed = ParseRestInferRequest(body, header, {}, BinaryInputs::kViewOfBody);
  ASSERT_TRUE(viewed.ok()) << viewed.status().ToString();
  EXPECT_EQ(viewed->request.inputs[0].tensor.data(), body.data() + header);
  EXPECT_EQ(Values<float>(viewed->request.inputs[0].tensor), a);
  EXPECT_EQ(Values<int8_t>(viewed->request.inputs[1].tensor), (std::vector<int8_t>{-5, 6}));  // JSON: decoded
  // 12 bytes further on: not aligned, so a copy (TVM-compiled code may assume alignment).
  EXPECT_NE(viewed->request.inputs[2].tensor.data(), body.data() + header + 12);
  EXPECT_EQ(Values<float>(viewed->request.inputs[2].tensor), a);
  auto copied = ParseRestInferRequest(body, header);
  ASSERT_TRUE(copied.ok()) << copied.status().ToString();
  EXPECT_NE(copied->request.inputs[0].tensor.data(), body.data() + header);
  EXPECT_EQ(Values<float>(copied->request.inputs[0].tensor), a);
  // A body whose binary part is not aligned: copies, with the same values.
  std::string shifted_storage;
  const std::string_view shifted = PlacedSoThatByteIsAligned(" " + text, header, shifted_storage).substr(1);
  auto unaligned = ParseRestInferRequest(shifted, header, {}, BinaryInputs::kViewOfBody);
  ASSERT_TRUE(unaligned.ok()) << unaligned.status().ToString();
  EXPECT_NE(unaligned->request.inputs[0].tensor.data(), shifted.data() + header);
  EXPECT_EQ(Values<float>(unaligned->request.inputs[0].tensor), a);
  // A BOOL byte other than 0 or 1 is refused either way.
  auto [bad_bool, bool_header] =
      WithBinary(R"({"inputs":[{"name":"x","datatype":"BOOL","shape":[2],"parameters":{"binary_data_size":2}}]})",
                 std::string("\x01\x02", 2));
  std::string bool_storage;
  const std::string_view bool_body = PlacedSoThatByteIsAligned(bad_bool, bool_header, bool_storage);
  for (BinaryInputs mode : {BinaryInputs::kViewOfBody, BinaryInputs::kCopied}) {
    auto refused = ParseRestInferRequest(bool_body, bool_header, {}, mode);
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.status().message().find("BOOL bytes are 0 or 1"), std::string::npos)
        << refused.status().message();
  }
}

TEST(RestCodec, HeaderEqualToBodyMeansJsonOnly) {
  const std::string body = OneInput("FP32", "[1]", "[4]");
  auto r = Parse(body, body.size());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Values<float>(r->request.inputs[0].tensor), std::vector<float>{4});
}

TEST(RestCodec, SixteenBitFloatsAndBoolAsBinary) {
  const std::vector<uint16_t> half = {0x3C00, 0xC000};  // 1.0, -2.0
  const std::string json_text = R"({"inputs":[
      {"name":"h","datatype":"FP16","shape":[2],"parameters":{"binary_data_size":4}},
      {"name":"g","datatype":"BF16","shape":[2],"parameters":{"binary_data_size":4}},
      {"name":"b","datatype":"BOOL","shape":[3],"parameters":{"binary_data_size":3}}]})";
  auto [body, header] = WithBinary(json_text, Bytes(half) + Bytes(half) + std::string("\1\0\1", 3));
  auto r = Parse(body, header);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->request.inputs[0].tensor.dtype(), (DLDataType{kDLFloat, 16, 1}));
  EXPECT_EQ(Values<uint16_t>(r->request.inputs[0].tensor), half);
  EXPECT_EQ(r->request.inputs[1].tensor.dtype(), (DLDataType{kDLBfloat, 16, 1}));
  EXPECT_EQ(Values<uint8_t>(r->request.inputs[2].tensor), (std::vector<uint8_t>{1, 0, 1}));

  auto [bad_bool, bad_header] =
      WithBinary(R"({"inputs":[{"name":"b","datatype":"BOOL","shape":[2],"parameters":{"binary_data_size":2}}]})",
                 std::string("\1\2", 2));
  EXPECT_NE(ErrorOf(bad_bool, bad_header).find("input 'b': binary BOOL element 1 is 2; BOOL bytes are 0 or 1"),
            std::string::npos);
}

TEST(RestCodec, BinarySizeErrors) {
  const std::string three_floats = R"({"inputs":[{"name":"a","datatype":"FP32","shape":[1,3],"parameters":{"binary_data_size":)";
  {  // size disagrees with shape x dtype
    auto [body, header] = WithBinary(three_floats + "8}}]}", std::string(8, '\0'));
    EXPECT_NE(ErrorOf(body, header).find("input 'a': binary_data_size is 8 but shape [1, 3] of FP32 takes 12 bytes"),
              std::string::npos);
  }
  {  // fewer bytes than announced
    auto [body, header] = WithBinary(three_floats + "12}}]}", std::string(4, '\0'));
    EXPECT_NE(ErrorOf(body, header).find("input 'a': binary_data_size is 12 but only 4 bytes of binary data are left"),
              std::string::npos);
  }
  {  // bytes left over
    auto [body, header] = WithBinary(three_floats + "12}}]}", std::string(14, '\0'));
    EXPECT_NE(ErrorOf(body, header).find("14 bytes follow the JSON but the inputs' binary_data_size take 12; 2 bytes are left over"),
              std::string::npos);
  }
  {  // binary input without the header: nothing follows the JSON
    const std::string body = three_floats + "12}}]}";
    EXPECT_NE(ErrorOf(body).find("only 0 bytes of binary data are left after the JSON"), std::string::npos);
    EXPECT_NE(ErrorOf(body).find("Inference-Header-Content-Length"), std::string::npos);
  }
  {  // header longer than the body
    const std::string body = OneInput("FP32", "[1]", "[1]");
    EXPECT_NE(ErrorOf(body, body.size() + 1).find("Inference-Header-Content-Length is " +
                                                  std::to_string(body.size() + 1) + " but the body has only"),
              std::string::npos);
  }
  {  // header cuts the JSON short
    const std::string body = OneInput("FP32", "[1]", "[1]");
    auto r = Parse(body, body.size() - 3);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kDataLoss);
  }
  EXPECT_NE(ErrorOf(three_floats + "-12}}]}").find("\"binary_data_size\" must be a non-negative integer"),
            std::string::npos);
  EXPECT_NE(ErrorOf(R"({"inputs":[{"name":"a","datatype":"FP32","shape":[1],"data":[1],"parameters":{"binary_data_size":4}}]})",
                    std::nullopt)
                .find("has both \"data\" and parameters.binary_data_size"),
            std::string::npos);
  // A huge announced size is refused by arithmetic, not by trying to allocate it.
  EXPECT_NE(ErrorOf(R"({"inputs":[{"name":"a","datatype":"UINT8","shape":[4000000000000],"parameters":{"binary_data_size":4000000000000}}]})",
                    std::nullopt)
                .find("only 0 bytes of binary data"),
            std::string::npos);
}

TEST(RestCodec, DecodedSizeLimit) {
  RestParseLimits limits;
  limits.max_input_bytes = 16;
  auto ok = ParseRestInferRequest(OneInput("FP32", "[4]", "[1,2,3,4]"), std::nullopt, limits);
  EXPECT_TRUE(ok.ok()) << ok.status().ToString();
  auto big = ParseRestInferRequest(OneInput("FP64", "[4]", "[1,2,3,4]"), std::nullopt, limits);
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.status().message().find("the inputs decode to more than 16 bytes"), std::string::npos);
}

// ---- responses ----

InferResponse Response(std::vector<InferTensor> outputs, std::string id = "") {
  InferResponse r;
  r.model = "mlp";
  r.version = "1";
  r.id = std::move(id);
  r.outputs = std::move(outputs);
  return r;
}

TEST(RestCodec, JsonResponse) {
  const std::vector<float> y = {0.25f, -1.0f, 3.5f, 1e-7f};
  auto encoded = EncodeRestInferResponse(
      Response({{"output_0", HostTensor({2, 2}, kF32, Bytes(y))}, {"output_1", HostTensor({1}, {6, 8, 1}, "\1")}},
               "abc"),
      {});
  ASSERT_TRUE(encoded.ok()) << encoded.status().ToString();
  EXPECT_FALSE(encoded->json_header_length);
  const json j = json::parse(encoded->body);
  EXPECT_EQ(j["model_name"], "mlp");
  EXPECT_EQ(j["model_version"], "1");
  EXPECT_EQ(j["id"], "abc");
  ASSERT_EQ(j["outputs"].size(), 2u);
  EXPECT_EQ(j["outputs"][0]["name"], "output_0");
  EXPECT_EQ(j["outputs"][0]["datatype"], "FP32");
  EXPECT_EQ(j["outputs"][0]["shape"], json({2, 2}));
  EXPECT_EQ(j["outputs"][0]["data"].get<std::vector<float>>(), y);
  EXPECT_FALSE(j["outputs"][0].contains("parameters"));
  EXPECT_EQ(j["outputs"][1]["datatype"], "BOOL");
  EXPECT_EQ(j["outputs"][1]["data"], json::array({true}));

  auto no_id = EncodeRestInferResponse(Response({{"output_0", HostTensor({1}, kF32, Bytes<float>({1}))}}), {});
  ASSERT_TRUE(no_id.ok());
  EXPECT_FALSE(json::parse(no_id->body).contains("id"));
}

TEST(RestCodec, BinaryResponseOutputs) {
  const std::vector<float> y0 = {1, 2, 3};
  const std::vector<int32_t> y1 = {7, -8};
  const std::vector<double> y2 = {0.5};
  RestOutputFormat format;
  format.per_output = {{"output_0", true}, {"output_2", true}};
  auto encoded = EncodeRestInferResponse(Response({{"output_0", HostTensor({3}, kF32, Bytes(y0))},
                                                   {"output_1", HostTensor({2}, {kDLInt, 32, 1}, Bytes(y1))},
                                                   {"output_2", HostTensor({1, 1}, kF64, Bytes(y2))}}),
                                         format);
  ASSERT_TRUE(encoded.ok()) << encoded.status().ToString();
  ASSERT_TRUE(encoded->json_header_length);
  const size_t n = *encoded->json_header_length;
  const json j = json::parse(encoded->body.substr(0, n));
  EXPECT_EQ(j["outputs"][0]["parameters"]["binary_data_size"], 12);
  EXPECT_FALSE(j["outputs"][0].contains("data"));
  EXPECT_EQ(j["outputs"][1]["data"], json({7, -8}));
  EXPECT_EQ(j["outputs"][2]["parameters"]["binary_data_size"], 8);
  EXPECT_EQ(j["outputs"][2]["shape"], json({1, 1}));
  EXPECT_EQ(encoded->body.substr(n), Bytes(y0) + Bytes(y2));
  EXPECT_TRUE(encoded->binary_outputs.empty());
}

// For a writer that sends outputs from the tensors themselves: the same JSON,
// and views of exactly the tensors' bytes instead of copies.
TEST(RestCodec, BinaryOutputsCanStayInTheResponsesTensors) {
  const std::vector<float> y0 = {1, 2, 3};
  const std::vector<double> y2 = {0.5};
  RestOutputFormat format;
  format.binary_by_default = true;
  const InferResponse response =
      Response({{"output_0", HostTensor({3}, kF32, Bytes(y0))}, {"output_2", HostTensor({1, 1}, kF64, Bytes(y2))}});
  auto appended = EncodeRestInferResponse(response, format);
  auto viewed = EncodeRestInferResponse(response, format, BinaryOutputs::kViewOfResponse);
  ASSERT_TRUE(appended.ok() && viewed.ok());
  ASSERT_EQ(viewed->json_header_length, appended->json_header_length);
  EXPECT_EQ(viewed->body, appended->body.substr(0, *appended->json_header_length));
  ASSERT_EQ(viewed->binary_outputs.size(), 2u);
  EXPECT_EQ(static_cast<const void*>(viewed->binary_outputs[0].data()), response.outputs[0].tensor.data());
  EXPECT_EQ(std::string(viewed->binary_outputs[0]) + std::string(viewed->binary_outputs[1]), Bytes(y0) + Bytes(y2));
}

TEST(RestCodec, NanAndInfinityNeedBinary) {
  const std::vector<float> y = {1, std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()};
  auto as_json = EncodeRestInferResponse(Response({{"output_0", HostTensor({3}, kF32, Bytes(y))}}), {});
  ASSERT_FALSE(as_json.ok());
  EXPECT_EQ(as_json.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(as_json.status().message().find("output 'output_0' element 1 is NaN or infinite, which JSON cannot hold; "
                                            "ask for it as binary"),
            std::string::npos);
  RestOutputFormat binary;
  binary.binary_by_default = true;
  auto as_binary = EncodeRestInferResponse(Response({{"output_0", HostTensor({3}, kF32, Bytes(y))}}), binary);
  ASSERT_TRUE(as_binary.ok()) << as_binary.status().ToString();
  EXPECT_EQ(as_binary->body.substr(*as_binary->json_header_length), Bytes(y));
}

TEST(RestCodec, SixteenBitFloatOutputsPrintAsNumbers) {
  const std::vector<uint16_t> half = {0x3E00, 0x0001, 0xFBFF};  // 1.5, smallest subnormal, -65504
  const std::vector<uint16_t> bf16 = {0x3FC0, 0xC100};          // 1.5, -8
  auto encoded = EncodeRestInferResponse(Response({{"h", HostTensor({3}, {kDLFloat, 16, 1}, Bytes(half))},
                                                   {"b", HostTensor({2}, {kDLBfloat, 16, 1}, Bytes(bf16))}}),
                                         {});
  ASSERT_TRUE(encoded.ok()) << encoded.status().ToString();
  const json j = json::parse(encoded->body);
  EXPECT_EQ(j["outputs"][0]["datatype"], "FP16");
  // Printed as the float each value widens to: exact once read back as float.
  EXPECT_EQ(j["outputs"][0]["data"].get<std::vector<float>>(), (std::vector<float>{1.5f, std::ldexp(1.0f, -24), -65504}));
  EXPECT_EQ(j["outputs"][1]["datatype"], "BF16");
  EXPECT_EQ(j["outputs"][1]["data"].get<std::vector<float>>(), (std::vector<float>{1.5f, -8}));
}

// A response's data, fed back as a request's data, gives the same bits.
template <typename T>
void ExpectRoundTrip(const char* datatype, DLDataType dtype, const std::vector<T>& values) {
  auto encoded = EncodeRestInferResponse(
      Response({{"output_0", HostTensor({static_cast<int64_t>(values.size())}, dtype, Bytes(values))}}), {});
  ASSERT_TRUE(encoded.ok()) << encoded.status().ToString();
  const json data = json::parse(encoded->body)["outputs"][0]["data"];
  auto back = Parse(OneInput(datatype, "[" + std::to_string(values.size()) + "]", data.dump()));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(Bytes(Values<T>(back->request.inputs[0].tensor)), Bytes(values)) << datatype << ": " << data.dump();
}

TEST(RestCodec, ValuesRoundTripExactly) {
  ExpectRoundTrip<float>("FP32", kF32,
                         {1.0f / 3, std::numeric_limits<float>::max(), -std::numeric_limits<float>::max(),
                          std::numeric_limits<float>::min(), std::numeric_limits<float>::denorm_min(), -0.0f, 0.1f,
                          16777217.0f, 123456.789f});
  ExpectRoundTrip<double>("FP64", kF64,
                          {1.0 / 3, std::numeric_limits<double>::max(), std::numeric_limits<double>::denorm_min(),
                           -0.0, 0.1, 9007199254740993.0});
  ExpectRoundTrip<int64_t>("INT64", {kDLInt, 64, 1},
                           {std::numeric_limits<int64_t>::min(), -1, 0, std::numeric_limits<int64_t>::max()});
  ExpectRoundTrip<uint64_t>("UINT64", {kDLUInt, 64, 1}, {0, std::numeric_limits<uint64_t>::max()});
  ExpectRoundTrip<int8_t>("INT8", {kDLInt, 8, 1}, {-128, 0, 127});
  ExpectRoundTrip<uint8_t>("BOOL", {6, 8, 1}, {1, 0});
}

TEST(RestCodec, BinaryRoundTrip) {
  // A binary response's bytes, sent back as a binary request, are the same tensor.
  const std::vector<float> y = {std::numeric_limits<float>::quiet_NaN(), -0.0f, 1e-40f};
  RestOutputFormat binary;
  binary.binary_by_default = true;
  auto encoded = EncodeRestInferResponse(Response({{"output_0", HostTensor({1, 3}, kF32, Bytes(y))}}), binary);
  ASSERT_TRUE(encoded.ok());
  const std::string bytes = encoded->body.substr(*encoded->json_header_length);
  auto [body, header] =
      WithBinary(R"({"inputs":[{"name":"x","datatype":"FP32","shape":[1,3],"parameters":{"binary_data_size":12}}]})",
                 bytes);
  auto back = Parse(body, header);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(Bytes(Values<float>(back->request.inputs[0].tensor)), Bytes(y));
}

// ---- metadata, index, errors ----

TEST(RestCodec, MetadataBodies) {
  const json server = json::parse(EncodeServerMetadata("hetrt", "0.1.0", {"binary_tensor_data", "model_repository"}));
  EXPECT_EQ(server, json::parse(R"({"name":"hetrt","version":"0.1.0","extensions":["binary_tensor_data","model_repository"]})"));

  ModelMetadata m;
  m.name = "mlp";
  m.versions = {"1", "2"};
  m.platform = "hetrt_graph";
  m.inputs = {{"data", "FP32", {-1, 784}}};
  m.outputs = {{"output_0", "FP32", {-1, 10}}};
  const json model = json::parse(EncodeModelMetadata(m));
  EXPECT_EQ(model, json::parse(R"({"name":"mlp","versions":["1","2"],"platform":"hetrt_graph",
      "inputs":[{"name":"data","datatype":"FP32","shape":[-1,784]}],
      "outputs":[{"name":"output_0","datatype":"FP32","shape":[-1,10]}]})"));
}

TEST(RestCodec, RepositoryIndex) {
  const json index = json::parse(EncodeRepositoryIndex(
      {{"add3", "1", "READY", ""}, {"broken", "", "UNAVAILABLE", "deploy.so: not an ELF file"}}));
  EXPECT_EQ(index, json::parse(R"([{"name":"add3","version":"1","state":"READY"},
      {"name":"broken","state":"UNAVAILABLE","reason":"deploy.so: not an ELF file"}])"));
  EXPECT_EQ(EncodeRepositoryIndex({}), "[]");

  EXPECT_EQ(ParseRepositoryIndexRequest("").value(), false);
  EXPECT_EQ(ParseRepositoryIndexRequest(" \n").value(), false);
  EXPECT_EQ(ParseRepositoryIndexRequest("{}").value(), false);
  EXPECT_EQ(ParseRepositoryIndexRequest(R"({"ready": true})").value(), true);
  EXPECT_EQ(ParseRepositoryIndexRequest(R"({"ready": false})").value(), false);
  EXPECT_NE(ParseRepositoryIndexRequest(R"({"ready": 1})").status().message().find("\"ready\" must be true or false"),
            std::string::npos);
  EXPECT_EQ(ParseRepositoryIndexRequest("{").status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(ParseRepositoryIndexRequest("[]").status().code(), StatusCode::kInvalidArgument);
}

TEST(RestCodec, RepositoryModelRequests) {
  EXPECT_TRUE(ParseRepositoryModelRequest("").ok());
  EXPECT_TRUE(ParseRepositoryModelRequest(R"({"parameters":{"unload_dependents":true}})").ok());
  const Status config = ParseRepositoryModelRequest(R"({"parameters":{"config":"{}"}})");
  EXPECT_EQ(config.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(config.message().find("parameter \"config\" is not supported"), std::string::npos);
  EXPECT_FALSE(ParseRepositoryModelRequest(R"({"parameters":{"file:1/deploy.so":"AAAA"}})").ok());
  EXPECT_EQ(ParseRepositoryModelRequest("nope").code(), StatusCode::kDataLoss);
}

TEST(RestCodec, ErrorBodies) {
  EXPECT_EQ(json::parse(EncodeError("model \"x\" not found")), json::parse(R"({"error":"model \"x\" not found"})"));
  // Bytes that are not UTF-8 (a model name from a URL) are replaced, not thrown on.
  EXPECT_EQ(json::parse(EncodeError("bad \xff name"))["error"], "bad \xEF\xBF\xBD name");
}

}  // namespace
}  // namespace hetrt::serve
