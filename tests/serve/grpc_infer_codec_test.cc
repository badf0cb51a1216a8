// The gRPC ModelInfer codec as it meets the wire: raw tensor bytes read
// straight into aligned host tensors whatever pieces the message arrives in
// and whatever order its fields come in, every truncation refused with a
// clear error, and large outputs lent to the sender instead of copied.
#include "grpc_infer_codec.h"

#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "hetrt/base/dtype.h"
#include "test_support.h"

namespace hetrt::serve {
namespace {

template <typename T>
std::string Bytes(const std::vector<T>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
}

template <typename T>
std::vector<T> Values(const Tensor& t) {
  std::vector<T> v(static_cast<size_t>(t.num_elements()));
  if (!v.empty()) std::memcpy(v.data(), t.data(), t.nbytes());
  return v;
}

const std::vector<float> kFloats = {1.5f, -2.f, 3.25f, 4.f, 5.f, -6.5f};
const std::vector<int64_t> kInts = {7, -8, 1LL << 40, 0};

// Two raw inputs (FP32 [2, 3], INT64 [4]), a parameter and a requested output.
inference::ModelInferRequest TwoRawInputs() {
  inference::ModelInferRequest request;
  request.set_model_name("model");
  request.set_model_version("2");
  request.set_id("request-7");
  (*request.mutable_parameters())["priority"].set_int64_param(3);
  auto* x = request.add_inputs();
  x->set_name("x");
  x->set_datatype("FP32");
  x->add_shape(2);
  x->add_shape(3);
  auto* n = request.add_inputs();
  n->set_name("n");
  n->set_datatype("INT64");
  n->add_shape(4);
  request.add_outputs()->set_name("y");
  request.add_raw_input_contents(Bytes(kFloats));
  request.add_raw_input_contents(Bytes(kInts));
  return request;
}

// Reads `wire` as gRPC would hand it over: in pieces of `piece` bytes.
Result<WireInferRequest> Read(const std::string& wire, int piece = 0) {
  google::protobuf::io::ArrayInputStream in(wire.data(), static_cast<int>(wire.size()), piece > 0 ? piece : -1);
  return ReadInferRequest(in, wire.size());
}

Result<InferRequest> ReadAndDecode(const std::string& wire, int piece = 0) {
  HETRT_ASSIGN_OR_RETURN(WireInferRequest request, Read(wire, piece));
  return DecodeInferRequest(std::move(request));
}

void ExpectTwoRawInputs(const InferRequest& request) {
  EXPECT_EQ(request.model, "model");
  EXPECT_EQ(request.version, "2");
  EXPECT_EQ(request.id, "request-7");
  EXPECT_EQ(request.outputs, std::vector<std::string>{"y"});
  ASSERT_EQ(request.inputs.size(), 2u);
  EXPECT_EQ(request.inputs[0].name, "x");
  EXPECT_EQ(request.inputs[0].tensor.shape(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(Values<float>(request.inputs[0].tensor), kFloats);
  EXPECT_EQ(request.inputs[1].name, "n");
  EXPECT_EQ(Values<int64_t>(request.inputs[1].tensor), kInts);
  for (const InferTensor& input : request.inputs) {
    // Aligned, in memory of its own: an executor may take it in place.
    EXPECT_EQ(reinterpret_cast<uintptr_t>(input.tensor.data()) % 64, 0u) << input.name;
    EXPECT_TRUE(input.tensor.owns_memory()) << input.name;
    EXPECT_EQ(input.tensor.dl()->byte_offset, 0u) << input.name;
  }
}

TEST(GrpcInferCodec, RawInputsAreReadIntoAlignedTensorsWhateverPiecesTheMessageArrivesIn) {
  const std::string wire = TwoRawInputs().SerializeAsString();
  for (int piece : {0, 1, 3, 7, 64}) {
    SCOPED_TRACE("pieces of " + std::to_string(piece) + " bytes");
    HETRT_ASSERT_OK_AND_ASSIGN(InferRequest request, ReadAndDecode(wire, piece));
    ExpectTwoRawInputs(request);
  }
}

TEST(GrpcInferCodec, FieldsMayComeInAnyOrder) {
  // Serialized messages concatenate as a merge: raw_input_contents first,
  // then the rest, is the same request.
  inference::ModelInferRequest raw_only, rest = TwoRawInputs();
  *raw_only.mutable_raw_input_contents() = rest.raw_input_contents();
  rest.clear_raw_input_contents();
  HETRT_ASSERT_OK_AND_ASSIGN(InferRequest request,
                             ReadAndDecode(raw_only.SerializeAsString() + rest.SerializeAsString()));
  ExpectTwoRawInputs(request);
}

TEST(GrpcInferCodec, AnEmptyRawEntryIsAnEmptyTensor) {
  inference::ModelInferRequest message = TwoRawInputs();
  message.mutable_inputs(0)->set_shape(0, 0);  // [0, 3]: no elements
  message.set_raw_input_contents(0, "");
  HETRT_ASSERT_OK_AND_ASSIGN(InferRequest request, ReadAndDecode(message.SerializeAsString()));
  EXPECT_EQ(request.inputs[0].tensor.shape(), (std::vector<int64_t>{0, 3}));
  EXPECT_EQ(request.inputs[0].tensor.nbytes(), 0u);
  EXPECT_EQ(Values<int64_t>(request.inputs[1].tensor), kInts);
}

TEST(GrpcInferCodec, TypedContentsStillDecode) {
  inference::ModelInferRequest message = TwoRawInputs();
  message.clear_raw_input_contents();
  for (float v : kFloats) message.mutable_inputs(0)->mutable_contents()->add_fp32_contents(v);
  for (int64_t v : kInts) message.mutable_inputs(1)->mutable_contents()->add_int64_contents(v);
  HETRT_ASSERT_OK_AND_ASSIGN(InferRequest request, ReadAndDecode(message.SerializeAsString(), 5));
  ExpectTwoRawInputs(request);
}

// Bytes the reader must take exactly when protobuf's own parser does: a raw
// entry of 320 bytes (a two-byte length), an unknown field numbered 20 (a
// two-byte tag), then every prefix, and bytes after a valid end.
TEST(GrpcInferCodec, AcceptsExactlyWhatProtobufAcceptsOnEveryPrefix) {
  inference::ModelInferRequest message = TwoRawInputs();
  message.mutable_inputs(0)->set_shape(1, 40);
  message.set_raw_input_contents(0, std::string(2 * 40 * sizeof(float), '\x11'));
  const std::string unknown_field_20 = "\xa0\x01\x05";  // field 20, varint 5
  const std::string wire = message.SerializeAsString() + unknown_field_20;
  const size_t raw_start = wire.find(message.raw_input_contents(0));
  ASSERT_NE(raw_start, std::string::npos);
  size_t cuts_inside_raw = 0;
  auto expect_as_protobuf = [&](const std::string& bytes, const std::string& what) {
    const bool protobuf_accepts = inference::ModelInferRequest().ParseFromString(bytes);
    Result<WireInferRequest> read = Read(bytes, 4);
    EXPECT_EQ(read.ok(), protobuf_accepts) << what << (read.ok() ? "" : ": " + read.status().message());
    if (!read.ok()) {
      EXPECT_EQ(read.status().code(), StatusCode::kInvalidArgument) << what;
    }
    return read;
  };
  for (size_t cut = 0; cut <= wire.size(); ++cut) {
    Result<WireInferRequest> read = expect_as_protobuf(wire.substr(0, cut), "cut at " + std::to_string(cut));
    // Inside the raw entry's bytes: the entry claims more than is left.
    if (cut > raw_start && cut < raw_start + message.raw_input_contents(0).size()) {
      ++cuts_inside_raw;
      ASSERT_FALSE(read.ok());
      EXPECT_NE(read.status().message().find("bytes, but the message has"), std::string::npos)
          << read.status().message();
    }
  }
  EXPECT_EQ(cuts_inside_raw, message.raw_input_contents(0).size() - 1);
  HETRT_ASSERT_OK_AND_ASSIGN(InferRequest whole, ReadAndDecode(wire, 7));
  EXPECT_EQ(whole.inputs[0].tensor.shape(), (std::vector<int64_t>{2, 40}));
  // After a valid end: a tag 0, a tag cut short, a field numbered 0.
  for (const std::string& tail : {std::string(1, '\0'), std::string("\x80", 1), std::string("\x02\x00", 2)})
    (void)expect_as_protobuf(wire + tail, "wire + " + std::to_string(tail.size()) + " bytes");
}

TEST(GrpcInferCodec, ManyRawEntriesAreRefusedWhileReading) {
  // 5000 empty entries: 10 KB that would otherwise become 5000 tensors.
  std::string wire;
  for (int i = 0; i < 5000; ++i) wire += std::string("\x3a\x00", 2);
  Result<WireInferRequest> read = Read(wire);
  ASSERT_FALSE(read.ok());
  EXPECT_NE(read.status().message().find("more than 4096 raw_input_contents entries"), std::string::npos)
      << read.status().message();
}

// The request is refused as InvalidArgument with a message containing `words`.
template <typename Value>
void ExpectRefused(const Result<Value>& request, const std::string& words) {
  ASSERT_FALSE(request.ok()) << words;
  EXPECT_EQ(request.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(request.status().message().find(words), std::string::npos) << request.status().message();
}

TEST(GrpcInferCodec, AClaimedLengthBeyondTheMessageIsRefused) {
  // raw_input_contents (field 7, length-delimited) claiming 4 GiB - 1 bytes.
  ExpectRefused(Read(std::string("\x3a\xff\xff\xff\xff\x0f", 6) + "abc"),
                "4294967295 bytes, but the message has 3 left");
}

TEST(GrpcInferCodec, MalformedBytesAreRefused) {
  const std::string endless_varint(11, '\xff');
  const std::string short_string = std::string("\x0a\x05", 2) + "ab";  // field 1 claims 5 bytes, has 2
  const std::string wire_type_7("\x0f", 1);
  for (const std::string& wire : {endless_varint, short_string, wire_type_7})
    ExpectRefused(Read(wire), "ModelInferRequest: malformed");
}

TEST(GrpcInferCodec, RawEntriesMustMatchTheInputs) {
  inference::ModelInferRequest message = TwoRawInputs();
  message.mutable_raw_input_contents()->RemoveLast();
  ExpectRefused(ReadAndDecode(message.SerializeAsString()), "raw_input_contents has 1 entries for 2 inputs");
  message = TwoRawInputs();
  message.set_raw_input_contents(1, "1234");
  ExpectRefused(ReadAndDecode(message.SerializeAsString()),
                "input 'n' has 4 bytes in raw_input_contents; shape [4] of INT64 needs 32");
}

// The pieces as the sender sends them, one string.
std::string Flatten(const WireInferResponse& encoded) {
  std::string all;
  for (const auto& piece : encoded.pieces) {
    all += piece.bytes;
    if (piece.tensor.defined())
      all.append(reinterpret_cast<const char*>(piece.tensor.data()), static_cast<size_t>(piece.tensor.nbytes()));
  }
  return all;
}

TEST(GrpcInferCodec, LargeOutputsAreLentAndSmallOnesCopied) {
  Tensor small = Tensor::EmptyHost({10}, DLDataType{kDLFloat, 32, 1}).value();
  Tensor large = Tensor::EmptyHost({64, 256}, DLDataType{kDLFloat, 32, 1}).value();
  for (int64_t i = 0; i < small.num_elements(); ++i) small.data_as<float>()[i] = static_cast<float>(i) / 4;
  for (int64_t i = 0; i < large.num_elements(); ++i) large.data_as<float>()[i] = static_cast<float>(i % 977) - 3;
  std::vector<float> second_small(small.data_as<float>(), small.data_as<float>() + 10);
  Tensor borrowed = Tensor::Borrow(large.data(), large.device(), large.shape(), large.dtype());
  InferResponse response{"model", "1", "id-3", {{"a", small}, {"b", large}, {"c", small}, {"d", borrowed}}};

  HETRT_ASSERT_OK_AND_ASSIGN(WireInferResponse encoded, EncodeInferResponse(response));
  int lent = 0;
  for (const auto& piece : encoded.pieces)
    if (piece.tensor.defined()) {
      ++lent;
      EXPECT_EQ(piece.tensor.data(), large.data()) << "lent from the output's own memory";
    }
  EXPECT_EQ(lent, 1) << "64 KiB owned: lent; 40 bytes: copied; borrowed memory: copied";

  const std::string all = Flatten(encoded);
  EXPECT_EQ(encoded.size(), all.size());
  inference::ModelInferResponse parsed;
  ASSERT_TRUE(parsed.ParseFromString(all));
  EXPECT_EQ(parsed.model_name(), "model");
  EXPECT_EQ(parsed.model_version(), "1");
  EXPECT_EQ(parsed.id(), "id-3");
  ASSERT_EQ(parsed.outputs_size(), 4);
  ASSERT_EQ(parsed.raw_output_contents_size(), 4);
  EXPECT_EQ(parsed.outputs(1).name(), "b");
  EXPECT_EQ(parsed.outputs(1).datatype(), "FP32");
  EXPECT_EQ(std::vector<int64_t>(parsed.outputs(1).shape().begin(), parsed.outputs(1).shape().end()),
            (std::vector<int64_t>{64, 256}));
  const std::string large_bytes(reinterpret_cast<const char*>(large.data()), static_cast<size_t>(large.nbytes()));
  EXPECT_EQ(parsed.raw_output_contents(0), Bytes(second_small));
  EXPECT_EQ(parsed.raw_output_contents(1), large_bytes);
  EXPECT_EQ(parsed.raw_output_contents(2), Bytes(second_small));
  EXPECT_EQ(parsed.raw_output_contents(3), large_bytes);
}

}  // namespace
}  // namespace hetrt::serve
