#include "grpc_infer_codec.h"

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

Result<Tensor> DecodeRawInput(const InputTensor& input, DLDataType dtype, int64_t elements, const std::string& raw) {
  const uint64_t element_bytes = DataTypeBytes(dtype);
  const uint64_t expected = static_cast<uint64_t>(elements) * element_bytes;
  if (elements != 0 && expected / static_cast<uint64_t>(elements) != element_bytes)
    return InvalidArgument("input '" + input.name() + "': shape too large");
  if (raw.size() != expected)
    return InvalidArgument("input '" + input.name() + "' has " + std::to_string(raw.size()) +
                           " bytes in raw_input_contents; " + Describe(input) + " needs " + std::to_string(expected));
  // The request's own bytes, not a copy: every executor copies an input into
  // its own storage (whatever its alignment), and gRPC keeps the request
  // until the call is finished, after the request has run.
  return Tensor::Borrow(const_cast<char*>(raw.data()), DLDevice{kDLCPU, 0},
                        {input.shape().begin(), input.shape().end()}, dtype);
}

}  // namespace

Result<InferRequest> DecodeInferRequest(const inference::ModelInferRequest& request) {
  const bool raw = request.raw_input_contents_size() > 0;
  if (raw && request.raw_input_contents_size() != request.inputs_size())
    return InvalidArgument("raw_input_contents has " + std::to_string(request.raw_input_contents_size()) +
                           " entries for " + std::to_string(request.inputs_size()) +
                           " inputs; it needs one per input, in order");
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
    Result<Tensor> tensor = raw ? DecodeRawInput(input, *dtype, *elements, request.raw_input_contents(i))
                                : DecodeTypedInput(input, *dtype, *elements);
    if (!tensor.ok()) return tensor.status();
    decoded.inputs.push_back({input.name(), std::move(tensor).value()});
  }
  decoded.outputs.reserve(request.outputs_size());
  for (const auto& output : request.outputs()) decoded.outputs.push_back(output.name());
  return decoded;
}

Status EncodeInferResponse(const InferResponse& response, inference::ModelInferResponse& out) {
  out.set_model_name(response.model);
  out.set_model_version(response.version);
  out.set_id(response.id);
  for (const InferTensor& output : response.outputs) {
    std::string datatype = ProtocolDataType(output.tensor.dtype());
    if (datatype.empty())
      return Internal("output '" + output.name + "' has type " + DataTypeToString(output.tensor.dtype()) +
                      ", which the protocol cannot name");
    auto* meta = out.add_outputs();
    meta->set_name(output.name);
    meta->set_datatype(std::move(datatype));
    for (int64_t dim : output.tensor.shape()) meta->add_shape(dim);
    std::span<const uint8_t> bytes = output.tensor.host_bytes();
    out.add_raw_output_contents(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  }
  return OkStatus();
}

}  // namespace hetrt::serve
