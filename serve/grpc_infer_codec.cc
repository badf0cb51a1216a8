#include "grpc_infer_codec.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/wire_format_lite.h>

#include <array>
#include <bit>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "hetrt/base/dtype.h"

namespace hetrt::serve {
namespace {

static_assert(std::endian::native == std::endian::little,
              "the protocol's raw tensor data is little-endian; so is this host's memory");

using InputTensor = inference::ModelInferRequest::InferInputTensor;

// The one field of InferTensorContents a datatype's values travel in, and how
// many values each of the eight fields holds.
const char* ContentsFieldOf(const std::string& datatype) {
  if (datatype == "BOOL") return "bool_contents";
  if (datatype == "INT8" || datatype == "INT16" || datatype == "INT32") return "int_contents";
  if (datatype == "INT64") return "int64_contents";
  if (datatype == "UINT8" || datatype == "UINT16" || datatype == "UINT32") return "uint_contents";
  if (datatype == "UINT64") return "uint64_contents";
  if (datatype == "FP32") return "fp32_contents";
  if (datatype == "FP64") return "fp64_contents";
  return nullptr;  // FP16, BF16: raw_input_contents only
}

struct FieldCount {
  const char* field;
  int count;
};

std::array<FieldCount, 8> FieldCounts(const inference::InferTensorContents& c) {
  return {{{"bool_contents", c.bool_contents_size()},
           {"int_contents", c.int_contents_size()},
           {"int64_contents", c.int64_contents_size()},
           {"uint_contents", c.uint_contents_size()},
           {"uint64_contents", c.uint64_contents_size()},
           {"fp32_contents", c.fp32_contents_size()},
           {"fp64_contents", c.fp64_contents_size()},
           {"bytes_contents", c.bytes_contents_size()}}};
}

bool HasTypedContents(const InputTensor& input) {
  if (!input.has_contents()) return false;
  for (const FieldCount& f : FieldCounts(input.contents()))
    if (f.count > 0) return true;
  return false;
}

// "shape [1, 784] of FP32"
std::string Describe(const InputTensor& input) {
  return "shape " + ShapeToString(std::vector<int64_t>(input.shape().begin(), input.shape().end())) + " of " +
         input.datatype();
}

// Copies `values` into the tensor's elements of type Element, refusing a value
// the element type cannot hold (an INT8 input sent 300 in int_contents).
template <typename Element, typename Values>
Status StoreValues(const Values& values, const InputTensor& input, Tensor& tensor) {
  Element* out = tensor.data_as<Element>();
  for (int i = 0; i < values.size(); ++i) {
    auto value = values.Get(i);
    if constexpr (std::is_integral_v<Element> && !std::is_same_v<decltype(value), bool>) {
      if (!std::in_range<Element>(value))
        return InvalidArgument("input '" + input.name() + "': value " + std::to_string(value) + " at index " +
                               std::to_string(i) + " does not fit " + input.datatype());
    }
    out[i] = static_cast<Element>(value);
  }
  return OkStatus();
}

Status StoreTypedContents(const InputTensor& input, Tensor& tensor) {
  const inference::InferTensorContents& c = input.contents();
  const std::string& t = input.datatype();
  if (t == "BOOL") return StoreValues<uint8_t>(c.bool_contents(), input, tensor);
  if (t == "INT8") return StoreValues<int8_t>(c.int_contents(), input, tensor);
  if (t == "INT16") return StoreValues<int16_t>(c.int_contents(), input, tensor);
  if (t == "INT32") return StoreValues<int32_t>(c.int_contents(), input, tensor);
  if (t == "INT64") return StoreValues<int64_t>(c.int64_contents(), input, tensor);
  if (t == "UINT8") return StoreValues<uint8_t>(c.uint_contents(), input, tensor);
  if (t == "UINT16") return StoreValues<uint16_t>(c.uint_contents(), input, tensor);
  if (t == "UINT32") return StoreValues<uint32_t>(c.uint_contents(), input, tensor);
  if (t == "UINT64") return StoreValues<uint64_t>(c.uint64_contents(), input, tensor);
  if (t == "FP32") return StoreValues<float>(c.fp32_contents(), input, tensor);
  if (t == "FP64") return StoreValues<double>(c.fp64_contents(), input, tensor);
  return Internal("no typed contents for datatype " + t);
}

// One input from its typed contents: only the datatype's field may hold values,
// exactly one per element.
Result<Tensor> DecodeTypedInput(const InputTensor& input, DLDataType dtype, int64_t elements) {
  const char* field = ContentsFieldOf(input.datatype());
  if (field == nullptr)
    return InvalidArgument("input '" + input.name() + "': datatype " + input.datatype() +
                           " has no typed contents field; send its data in raw_input_contents");
  int count = 0;
  for (const FieldCount& f : FieldCounts(input.contents())) {
    if (f.count == 0) continue;
    if (std::strcmp(f.field, field) != 0)
      return InvalidArgument("input '" + input.name() + "' has datatype " + input.datatype() + " but data in " +
                             f.field + "; " + input.datatype() + " values go in " + field);
    count = f.count;
  }
  if (count != elements)
    return InvalidArgument("input '" + input.name() + "' has " + std::to_string(count) + " values in " + field + "; " +
                           Describe(input) + " needs " + std::to_string(elements));
  HETRT_ASSIGN_OR_RETURN(Tensor tensor, Tensor::EmptyHost({input.shape().begin(), input.shape().end()}, dtype));
  HETRT_RETURN_IF_ERROR(StoreTypedContents(input, tensor));
  return tensor;
}

Result<Tensor> DecodeRawInput(const InputTensor& input, DLDataType dtype, int64_t elements, const Tensor& raw) {
  const uint64_t element_bytes = DataTypeBytes(dtype);
  const uint64_t expected = static_cast<uint64_t>(elements) * element_bytes;
  if (elements != 0 && expected / static_cast<uint64_t>(elements) != element_bytes)
    return InvalidArgument("input '" + input.name() + "': shape too large");
  if (raw.nbytes() != expected)
    return InvalidArgument("input '" + input.name() + "' has " + std::to_string(raw.nbytes()) +
                           " bytes in raw_input_contents; " + Describe(input) + " needs " + std::to_string(expected));
  // The bytes as read from the wire, aligned: a graph takes them in place.
  return raw.View({input.shape().begin(), input.shape().end()}, dtype);
}

using google::protobuf::internal::WireFormatLite;

constexpr int kRawInputContents = inference::ModelInferRequest::kRawInputContentsFieldNumber;
constexpr int kRawOutputContents = inference::ModelInferResponse::kRawOutputContentsFieldNumber;

// A request holds one raw entry per input. Without a bound, a message of
// empty entries (2 bytes each) would cost a tensor apiece before the count is
// checked against the inputs.
constexpr size_t kMaxRawEntries = 4096;

// Below this an output is copied into the message: a copy costs less than
// lending the tensor's memory to the sender.
constexpr uint64_t kLentOutputBytes = 4096;

}  // namespace

Result<WireInferRequest> ReadInferRequest(google::protobuf::io::ZeroCopyInputStream& in, uint64_t size) {
  if (size > static_cast<uint64_t>(INT32_MAX)) return InvalidArgument("ModelInferRequest: larger than 2 GiB");
  WireInferRequest request;
  // Every field but raw_input_contents is copied as it came into `rest`,
  // which protobuf parses (fields may come in any order, repeated ones merge).
  std::string rest;
  {
    google::protobuf::io::CodedInputStream coded(&in);
    google::protobuf::io::StringOutputStream rest_stream(&rest);
    google::protobuf::io::CodedOutputStream rest_out(&rest_stream);
    const uint32_t raw_tag = WireFormatLite::MakeTag(kRawInputContents, WireFormatLite::WIRETYPE_LENGTH_DELIMITED);
    for (;;) {
      const uint32_t tag = coded.ReadTag();
      if (tag == 0) break;  // the end, or a malformed tag: told apart below
      if (tag == raw_tag) {
        if (request.raw_input_contents.size() == kMaxRawEntries)
          return InvalidArgument("ModelInferRequest: more than " + std::to_string(kMaxRawEntries) +
                                 " raw_input_contents entries (it holds one per input)");
        uint32_t length = 0;
        if (!coded.ReadVarint32(&length)) return InvalidArgument("ModelInferRequest: malformed raw_input_contents");
        const uint64_t at = static_cast<uint64_t>(coded.CurrentPosition());
        const uint64_t left = at <= size ? size - at : 0;
        if (length > left)
          return InvalidArgument("ModelInferRequest: a raw_input_contents entry of " + std::to_string(length) +
                                 " bytes, but the message has " + std::to_string(left) + " left");
        HETRT_ASSIGN_OR_RETURN(Tensor raw,
                               Tensor::EmptyHost({static_cast<int64_t>(length)}, DLDataType{kDLUInt, 8, 1}));
        if (length > 0 && !coded.ReadRaw(raw.data(), static_cast<int>(length)))
          return InvalidArgument("ModelInferRequest: truncated in raw_input_contents");
        request.raw_input_contents.push_back(std::move(raw));
        continue;
      }
      if (!WireFormatLite::SkipField(&coded, tag, &rest_out))
        return InvalidArgument("ModelInferRequest: malformed field " + std::to_string(tag >> 3));
    }
    // A tag 0 or one cut short also ends the loop; only the stream's end is legitimate.
    if (!coded.ConsumedEntireMessage() || static_cast<uint64_t>(coded.CurrentPosition()) != size)
      return InvalidArgument("ModelInferRequest: malformed at byte " + std::to_string(coded.CurrentPosition()) +
                             " of " + std::to_string(size));
  }
  if (!request.message.ParseFromString(rest)) return InvalidArgument("ModelInferRequest: malformed message");
  return request;
}

Result<InferRequest> DecodeInferRequest(WireInferRequest wire_request) {
  const inference::ModelInferRequest& request = wire_request.message;
  const std::vector<Tensor>& raw_contents = wire_request.raw_input_contents;
  const bool raw = !raw_contents.empty();
  if (raw && raw_contents.size() != static_cast<size_t>(request.inputs_size()))
    return InvalidArgument("raw_input_contents has " + std::to_string(raw_contents.size()) + " entries for " +
                           std::to_string(request.inputs_size()) + " inputs; it needs one per input, in order");
  InferRequest decoded;
  decoded.model = request.model_name();
  decoded.version = request.model_version();
  decoded.id = request.id();
  decoded.inputs.reserve(request.inputs_size());
  for (int i = 0; i < request.inputs_size(); ++i) {
    const InputTensor& input = request.inputs(i);
    if (raw && HasTypedContents(input))
      return InvalidArgument("input '" + input.name() +
                             "' has data in contents while the request uses raw_input_contents; use one or the other");
    std::optional<DLDataType> dtype = DataTypeFromProtocol(input.datatype());
    if (!dtype)
      return InvalidArgument("input '" + input.name() + "': unknown or unsupported datatype '" + input.datatype() +
                             "'");
    Result<int64_t> elements = ShapeNumElements({input.shape().data(), static_cast<size_t>(input.shape_size())});
    if (!elements.ok()) return InvalidArgument("input '" + input.name() + "': " + elements.status().message());
    Result<Tensor> tensor = raw ? DecodeRawInput(input, *dtype, *elements, raw_contents[static_cast<size_t>(i)])
                                : DecodeTypedInput(input, *dtype, *elements);
    if (!tensor.ok()) return tensor.status();
    decoded.inputs.push_back({input.name(), std::move(tensor).value()});
  }
  decoded.outputs.reserve(request.outputs_size());
  for (const auto& output : request.outputs()) decoded.outputs.push_back(output.name());
  return decoded;
}

uint64_t WireInferResponse::size() const {
  uint64_t bytes = 0;
  for (const Piece& piece : pieces) bytes += piece.bytes.size() + (piece.tensor.defined() ? piece.tensor.nbytes() : 0);
  return bytes;
}

Result<WireInferResponse> EncodeInferResponse(const InferResponse& response) {
  inference::ModelInferResponse head;
  head.set_model_name(response.model);
  head.set_model_version(response.version);
  head.set_id(response.id);
  for (const InferTensor& output : response.outputs) {
    std::string datatype = ProtocolDataType(output.tensor.dtype());
    if (datatype.empty())
      return Internal("output '" + output.name + "' has type " + DataTypeToString(output.tensor.dtype()) +
                      ", which the protocol cannot name");
    auto* meta = head.add_outputs();
    meta->set_name(output.name);
    meta->set_datatype(std::move(datatype));
    for (int64_t dim : output.tensor.shape()) meta->add_shape(dim);
  }
  // The head's fields, then one raw_output_contents entry per output: its tag
  // and length, then its bytes, copied when small or borrowed, else lent.
  WireInferResponse encoded;
  encoded.pieces.push_back({head.SerializeAsString(), Tensor()});
  for (const InferTensor& output : response.outputs) {
    std::span<const uint8_t> bytes = output.tensor.host_bytes();
    std::string& into = encoded.pieces.back().bytes;
    {
      google::protobuf::io::StringOutputStream stream(&into);
      google::protobuf::io::CodedOutputStream out(&stream);
      out.WriteTag(WireFormatLite::MakeTag(kRawOutputContents, WireFormatLite::WIRETYPE_LENGTH_DELIMITED));
      if (bytes.size() > static_cast<size_t>(INT32_MAX))
        return Internal("output '" + output.name + "' is larger than a protobuf field holds (2 GiB)");
      out.WriteVarint32(static_cast<uint32_t>(bytes.size()));
    }
    if (bytes.size() >= kLentOutputBytes && output.tensor.owns_memory()) {
      encoded.pieces.back().tensor = output.tensor;
      encoded.pieces.push_back({std::string(), Tensor()});
    } else {
      into.append(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    }
  }
  if (encoded.pieces.size() > 1 && encoded.pieces.back().bytes.empty()) encoded.pieces.pop_back();
  return encoded;
}

}  // namespace hetrt::serve
