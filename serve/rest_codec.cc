#include "rest_codec.h"
#include "json_parse.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <new>
#include <type_traits>

#include "hetrt/base/dtype.h"
#include "hetrt/base/json_limits.h"

namespace hetrt::serve {
namespace {

using nlohmann::json;

// Element types as they sit in memory; Bool8/Half/BFloat16 keep a 1- or 2-byte payload.
struct Bool8 {
  uint8_t value;
};
struct Half {
  uint16_t bits;
};
struct BFloat16 {
  uint16_t bits;
};

bool IsBool(DLDataType t) {
  constexpr uint8_t kDLBoolCode = 6;  // newer DLPack headers' kDLBool
  return t.lanes == 1 && ((t.code == kDLUInt && t.bits == 1) || (t.code == kDLBoolCode && t.bits == 8));
}

// The DLPack type code of each element type; its bits are 8 * sizeof.
template <typename T>
constexpr uint8_t kCodeOf = std::is_floating_point_v<T> ? kDLFloat : std::is_signed_v<T> ? kDLInt : kDLUInt;
template <>
constexpr uint8_t kCodeOf<Half> = kDLFloat;
template <>
constexpr uint8_t kCodeOf<BFloat16> = kDLBfloat;

// Calls visit.template operator()<T>() with the first of Ts whose dtype is `t`;
// false when none is.
template <typename... Ts, typename Visitor>
bool VisitFirstOf(DLDataType t, Visitor& visit, Status* result) {
  auto is = [t]<typename T>() { return t.lanes == 1 && t.code == kCodeOf<T> && t.bits == 8 * sizeof(T); };
  return ((is.template operator()<Ts>() && (*result = visit.template operator()<Ts>(), true)) || ...);
}

// Calls visit.template operator()<T>() for the C++ type of a protocol dtype.
template <typename Visitor>
Status VisitElementType(DLDataType t, Visitor&& visit) {
  if (IsBool(t)) return visit.template operator()<Bool8>();
  Status result;
  if (VisitFirstOf<int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t, Half, float, double,
                   BFloat16>(t, visit, &result))
    return result;
  return InvalidArgument("dtype " + DataTypeToString(t) + " has no protocol datatype");
}

// ---- JSON values -> elements ----

std::string ValueText(const json& v) {
  std::string text = v.dump(-1, ' ', false, json::error_handler_t::replace);
  return text.size() > 40 ? text.substr(0, 40) + "..." : text;
}

template <typename T>
Status ReadElement(const json& v, const std::string& datatype, T* out) {
  if constexpr (std::is_same_v<T, Bool8>) {
    if (!v.is_boolean()) return InvalidArgument(ValueText(v) + " is not a boolean (BOOL takes true or false)");
    out->value = v.get<bool>() ? 1 : 0;
  } else if constexpr (std::is_integral_v<T>) {
    const auto range = [&] {
      return ValueText(v) + " does not fit " + datatype + " (" + std::to_string(std::numeric_limits<T>::min()) + ".." +
             std::to_string(std::numeric_limits<T>::max()) + ")";
    };
    if (v.is_number_unsigned()) {
      const uint64_t u = v.get<uint64_t>();
      if (u > static_cast<uint64_t>(std::numeric_limits<T>::max())) return InvalidArgument(range());
      *out = static_cast<T>(u);
    } else if (v.is_number_integer()) {
      const int64_t i = v.get<int64_t>();
      if (i < 0 && !std::is_signed_v<T>) return InvalidArgument(range());
      if (std::is_signed_v<T> && (i < static_cast<int64_t>(std::numeric_limits<T>::min()) ||
                                  i > static_cast<int64_t>(std::numeric_limits<T>::max())))
        return InvalidArgument(range());
      *out = static_cast<T>(i);
    } else {
      return InvalidArgument(ValueText(v) + " is not an integer (" + datatype + " takes integers)");
    }
  } else {
    static_assert(std::is_floating_point_v<T>);
    if (!v.is_number()) return InvalidArgument(ValueText(v) + " is not a number (" + datatype + " takes numbers)");
    const double d = v.get<double>();
    if (!std::isfinite(d)) return InvalidArgument(ValueText(v) + " is not a finite number");
    if constexpr (std::is_same_v<T, float>) {
      // Decimals a little above FLT_MAX still round to it (the shortest text
      // of FLT_MAX, 3.4028235e38, is one); beyond half an ulp they overflow.
      constexpr double kMax = std::numeric_limits<float>::max();
      constexpr double kRoundsToMax = kMax + 0x1p103;
      if (std::fabs(d) >= kRoundsToMax) return InvalidArgument(ValueText(v) + " is out of range for FP32");
      *out = std::fabs(d) > kMax ? std::copysign(std::numeric_limits<float>::max(), static_cast<float>(d))
                                 : static_cast<float>(d);
    } else {
      *out = d;
    }
  }
  return OkStatus();
}

// Shape from JSON: non-negative integers whose product fits int64.
Result<std::vector<int64_t>> ReadShape(const json& shape) {
  if (!shape.is_array()) return InvalidArgument("\"shape\" must be an array of integers");
  std::vector<int64_t> dims;
  for (const json& d : shape) {
    if (d.is_number_unsigned() && d.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      dims.push_back(d.get<int64_t>());
    else if (d.is_number_integer() && !d.is_number_unsigned() && d.get<int64_t>() < 0)
      return InvalidArgument("shape " + ValueText(shape) + " has a negative dimension; a request's shape is concrete");
    else
      return InvalidArgument("shape " + ValueText(shape) + ": dimensions must be integers 0.." +
                             std::to_string(std::numeric_limits<int64_t>::max()));
  }
  auto count = ShapeNumElements(dims);
  if (!count.ok()) return InvalidArgument("shape " + ShapeToString(dims) + ": " + count.status().message());
  return dims;
}

// The scalar leaves of "data" in row-major order: flat ([1, 2, 3, 4]) or
// nested exactly as the shape ([[1, 2], [3, 4]] for [2, 2]).
Status CollectLeaves(const json& data, const std::vector<int64_t>& shape, int64_t count,
                     std::vector<const json*>* leaves) {
  if (!data.is_array()) return InvalidArgument("\"data\" must be an array");
  const bool nested = !data.empty() && data.front().is_array();
  if (!nested) {
    if (static_cast<int64_t>(data.size()) != count)
      return InvalidArgument("\"data\" has " + std::to_string(data.size()) + " values; shape " + ShapeToString(shape) +
                             " needs " + std::to_string(count));
    leaves->reserve(data.size());
    for (const json& v : data) leaves->push_back(&v);
    return OkStatus();
  }
  // Nested: walk level by level; every array at depth d has shape[d] items.
  // Nothing is reserved from the shape: it is not checked against the data yet.
  auto walk = [&](auto&& self, const json& level, size_t dim) -> Status {
    if (dim >= shape.size() || !level.is_array() || static_cast<int64_t>(level.size()) != shape[dim])
      return InvalidArgument("\"data\" nests as neither a flat array of " + std::to_string(count) +
                             " values nor arrays shaped " + ShapeToString(shape));
    for (const json& item : level) {
      if (dim + 1 < shape.size()) {
        HETRT_RETURN_IF_ERROR(self(self, item, dim + 1));
      } else {
        if (item.is_array() || item.is_object())
          return InvalidArgument("\"data\" nests deeper than shape " + ShapeToString(shape));
        leaves->push_back(&item);
      }
    }
    return OkStatus();
  };
  return walk(walk, data, 0);
}

template <typename T>
Status FillFromJson(const std::vector<const json*>& leaves, const std::string& datatype, Tensor& tensor) {
  T* out = tensor.data_as<T>();
  for (size_t i = 0; i < leaves.size(); ++i) {
    Status s = ReadElement(*leaves[i], datatype, &out[i]);
    if (!s.ok()) return InvalidArgument("data[" + std::to_string(i) + "]: " + s.message());
  }
  return OkStatus();
}

// ---- request ----

bool IsSharedMemoryParameter(const std::string& key) { return key.rfind("shared_memory_", 0) == 0; }

// parameters: absent or an object.
Result<const json*> ReadParameters(const json& object) {
  auto it = object.find("parameters");
  if (it == object.end()) return static_cast<const json*>(nullptr);
  if (!it->is_object()) return InvalidArgument("\"parameters\" must be an object");
  return &*it;
}

Result<std::optional<bool>> ReadBoolParameter(const json* parameters, const char* key) {
  if (parameters == nullptr || !parameters->contains(key)) return std::optional<bool>();
  const json& v = (*parameters)[key];
  if (!v.is_boolean()) return InvalidArgument(std::string("parameter \"") + key + "\" must be true or false");
  return std::optional<bool>(v.get<bool>());
}

class RequestParser {
 public:
  RequestParser(std::string_view binary, const RestParseLimits& limits, BinaryInputs binary_inputs)
      : binary_(binary), limits_(limits), binary_inputs_(binary_inputs) {}

  Result<RestInferRequest> Parse(const json& root) {
    if (!root.is_object()) return InvalidArgument("the inference request must be a JSON object");
    RestInferRequest parsed;
    if (auto id = root.find("id"); id != root.end()) {
      if (!id->is_string()) return InvalidArgument("\"id\" must be a string");
      parsed.request.id = id->get<std::string>();
    }
    HETRT_ASSIGN_OR_RETURN(const json* parameters, ReadParameters(root));
    HETRT_ASSIGN_OR_RETURN(auto binary_output, ReadBoolParameter(parameters, "binary_data_output"));
    parsed.output_format.binary_by_default = binary_output.value_or(false);

    auto inputs = root.find("inputs");
    if (inputs == root.end() || !inputs->is_array())
      return InvalidArgument("the inference request needs \"inputs\": an array of tensors");
    for (size_t i = 0; i < inputs->size(); ++i) {
      auto input = ParseInput((*inputs)[i], i, parsed.request.inputs);
      if (!input.ok()) return input.status();
      parsed.request.inputs.push_back(std::move(input).value());
    }
    if (binary_offset_ != binary_.size())
      return InvalidArgument(std::to_string(binary_.size()) +
                             " bytes follow the JSON but the inputs' binary_data_size" + " take " +
                             std::to_string(binary_offset_) + "; " + std::to_string(binary_.size() - binary_offset_) +
                             " bytes are left over");

    if (auto outputs = root.find("outputs"); outputs != root.end()) {
      if (!outputs->is_array()) return InvalidArgument("\"outputs\" must be an array of {\"name\": ...} objects");
      for (size_t i = 0; i < outputs->size(); ++i) HETRT_RETURN_IF_ERROR(ParseOutput((*outputs)[i], i, parsed));
    }
    return parsed;
  }

 private:
  Result<InferTensor> ParseInput(const json& input, size_t index, const std::vector<InferTensor>& earlier) {
    std::string where = "inputs[" + std::to_string(index) + "]";
    auto fail = [&](const Status& s) { return InvalidArgument(where + ": " + s.message()); };
    if (!input.is_object()) return fail(InvalidArgument("must be an object with name, shape, datatype and data"));
    auto name = input.find("name");
    if (name == input.end() || !name->is_string() || name->get_ref<const std::string&>().empty())
      return fail(InvalidArgument("\"name\" must be a non-empty string"));
    InferTensor tensor;
    tensor.name = name->get<std::string>();
    where = "input '" + tensor.name + "'";
    for (const InferTensor& e : earlier)
      if (e.name == tensor.name) return fail(InvalidArgument("given more than once"));

    auto datatype_it = input.find("datatype");
    if (datatype_it == input.end() || !datatype_it->is_string())
      return fail(InvalidArgument("\"datatype\" must be a string such as \"FP32\""));
    const std::string datatype = datatype_it->get<std::string>();
    if (datatype == "BYTES") return fail(InvalidArgument("BYTES tensors are not supported: hetrt models have none"));
    const std::optional<DLDataType> dtype = DataTypeFromProtocol(datatype);
    if (!dtype)
      return fail(InvalidArgument("unknown datatype \"" + datatype +
                                  "\"; expected BOOL, UINT8, UINT16, UINT32, UINT64, INT8, INT16, INT32, INT64, FP16, "
                                  "FP32, FP64 or BF16"));

    auto shape_it = input.find("shape");
    if (shape_it == input.end()) return fail(InvalidArgument("\"shape\" is missing"));
    auto shape = ReadShape(*shape_it);
    if (!shape.ok()) return fail(shape.status());
    const int64_t count = ShapeNumElements(*shape).value();
    const uint64_t element_bytes = DataTypeBytes(*dtype);
    if (static_cast<uint64_t>(count) > std::numeric_limits<uint64_t>::max() / element_bytes)
      return fail(InvalidArgument("shape " + ShapeToString(*shape) + " of " + datatype + " overflows 64-bit sizes"));
    const uint64_t nbytes = static_cast<uint64_t>(count) * element_bytes;

    auto parameters = ReadParameters(input);
    if (!parameters.ok()) return fail(parameters.status());
    std::optional<uint64_t> binary_size;
    if (const json* p = *parameters) {
      for (const auto& item : p->items())
        if (IsSharedMemoryParameter(item.key()))
          return fail(InvalidArgument("parameter \"" + item.key() + "\": shared memory inputs are not supported"));
      if (auto size = p->find("binary_data_size"); size != p->end()) {
        if (!size->is_number_unsigned())
          return fail(InvalidArgument("parameter \"binary_data_size\" must be a non-negative integer"));
        binary_size = size->get<uint64_t>();
      }
    }
    const bool has_data = input.contains("data");
    if (binary_size && has_data)
      return fail(InvalidArgument("has both \"data\" and parameters.binary_data_size; give one"));
    if (!binary_size && !has_data) return fail(InvalidArgument("has neither \"data\" nor parameters.binary_data_size"));
    if (!binary_size && (dtype->bits == 16 && dtype->code != kDLInt && dtype->code != kDLUInt))
      return fail(InvalidArgument(datatype + " has no JSON form: send it as binary data (binary_data_size)"));

    // Sizes are checked against what the request holds before any allocation.
    std::vector<const json*> leaves;
    if (binary_size) {
      if (*binary_size != nbytes)
        return fail(InvalidArgument("binary_data_size is " + std::to_string(*binary_size) + " but shape " +
                                    ShapeToString(*shape) + " of " + datatype + " takes " + std::to_string(nbytes) +
                                    " bytes"));
      const uint64_t available = binary_.size() - binary_offset_;
      if (nbytes > available)
        return fail(InvalidArgument("binary_data_size is " + std::to_string(nbytes) + " but only " +
                                    std::to_string(available) + " bytes of binary data are left after the JSON" +
                                    (binary_.empty() ? " (no Inference-Header-Content-Length header?)" : "")));
    } else {
      Status s = CollectLeaves(input["data"], *shape, count, &leaves);
      if (!s.ok()) return fail(s);
    }
    decoded_bytes_ += nbytes;
    if (decoded_bytes_ > limits_.max_input_bytes)
      return fail(InvalidArgument("the inputs decode to more than " + std::to_string(limits_.max_input_bytes) +
                                  " bytes, the most this server accepts"));

    // A view only where TVM-compiled code may read it as its own (aligned as
    // every tensor hetrt allocates); a copy otherwise.
    const bool view = binary_size && binary_inputs_ == BinaryInputs::kViewOfBody && nbytes > 0 &&
                      reinterpret_cast<uintptr_t>(binary_.data() + binary_offset_) % kTensorAlignment == 0;
    if (view) {
      tensor.tensor = Tensor::Borrow(const_cast<char*>(binary_.data() + binary_offset_), DLDevice{kDLCPU, 0}, *shape,
                                     *dtype);
    } else {
      auto host = Tensor::EmptyHost(*shape, *dtype);
      if (!host.ok()) return fail(host.status());
      tensor.tensor = std::move(host).value();
    }
    if (binary_size) {
      if (!view && nbytes > 0) std::memcpy(tensor.tensor.data(), binary_.data() + binary_offset_, nbytes);
      binary_offset_ += nbytes;
      if (IsBool(*dtype)) {
        const auto* bytes = tensor.tensor.data_as<const uint8_t>();
        for (uint64_t i = 0; i < nbytes; ++i)
          if (bytes[i] > 1)
            return fail(InvalidArgument("binary BOOL element " + std::to_string(i) + " is " + std::to_string(bytes[i]) +
                                        "; BOOL bytes are 0 or 1"));
      }
    } else {
      Status s = VisitElementType(*dtype, [&]<typename T>() -> Status {
        if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>)
          return Internal("unreachable: 16-bit floats have no JSON form");
        else
          return FillFromJson<T>(leaves, datatype, tensor.tensor);
      });
      if (!s.ok()) return fail(s);
    }
    return tensor;
  }

  Status ParseOutput(const json& output, size_t index, RestInferRequest& parsed) {
    const std::string where = "outputs[" + std::to_string(index) + "]";
    if (!output.is_object()) return InvalidArgument(where + " must be an object with a \"name\"");
    auto name = output.find("name");
    if (name == output.end() || !name->is_string() || name->get_ref<const std::string&>().empty())
      return InvalidArgument(where + ": \"name\" must be a non-empty string");
    const std::string output_name = name->get<std::string>();
    auto fail = [&](const Status& s) { return InvalidArgument("output '" + output_name + "': " + s.message()); };
    auto& names = parsed.request.outputs;
    if (std::find(names.begin(), names.end(), output_name) != names.end())
      return fail(InvalidArgument("requested more than once"));
    auto parameters = ReadParameters(output);
    if (!parameters.ok()) return fail(parameters.status());
    if (const json* p = *parameters) {
      for (const auto& item : p->items()) {
        if (IsSharedMemoryParameter(item.key()))
          return fail(InvalidArgument("parameter \"" + item.key() + "\": shared memory outputs are not supported"));
        if (item.key() == "classification")
          return fail(InvalidArgument("parameter \"classification\": the classification extension is not supported"));
      }
    }
    auto binary = ReadBoolParameter(*parameters, "binary_data");
    if (!binary.ok()) return fail(binary.status());
    names.push_back(output_name);
    if (*binary) parsed.output_format.per_output.emplace_back(output_name, **binary);
    return OkStatus();
  }

  std::string_view binary_;
  const RestParseLimits& limits_;
  const BinaryInputs binary_inputs_;
  uint64_t binary_offset_ = 0;
  uint64_t decoded_bytes_ = 0;
};

// ---- elements -> JSON text ----

float HalfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h >> 15) << 31;
  const uint32_t exponent = (h >> 10) & 0x1F, mantissa = h & 0x3FF;
  float magnitude;
  if (exponent == 0)
    magnitude = std::ldexp(static_cast<float>(mantissa), -24);  // subnormal
  else if (exponent == 31)
    magnitude = mantissa ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
  else
    magnitude = std::ldexp(static_cast<float>(mantissa | 0x400), static_cast<int>(exponent) - 25);
  return sign ? -magnitude : magnitude;
}

float BFloat16ToFloat(uint16_t b) {
  const uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

template <typename T>
Status AppendJsonData(const Tensor& tensor, const std::string& name, std::string& out) {
  const T* values = tensor.data_as<const T>();
  const int64_t count = tensor.num_elements();
  char buffer[64];
  out += '[';
  for (int64_t i = 0; i < count; ++i) {
    if (i) out += ',';
    if constexpr (std::is_same_v<T, Bool8>) {
      out += values[i].value ? "true" : "false";
    } else if constexpr (std::is_integral_v<T>) {
      auto r = std::to_chars(buffer, buffer + sizeof buffer, values[i]);
      out.append(buffer, r.ptr);
    } else {
      // to_chars without a precision writes the shortest text that parses
      // back to the same float/double: values round-trip exactly.
      auto print = [&](auto v) -> Status {
        if (!std::isfinite(v))
          return InvalidArgument("output '" + name + "' element " + std::to_string(i) +
                                 " is NaN or infinite, which JSON cannot hold; ask for it as binary: "
                                 "\"outputs\": [{\"name\": \"" +
                                 name + "\", \"parameters\": {\"binary_data\": true}}]");
        auto r = std::to_chars(buffer, buffer + sizeof buffer, v);
        out.append(buffer, r.ptr);
        // "2" would read back as a JSON integer (and "-0" as +0): keep it a float.
        if (std::find_if(buffer, r.ptr, [](char c) { return c == '.' || c == 'e'; }) == r.ptr) out += ".0";
        return OkStatus();
      };
      Status s;
      if constexpr (std::is_same_v<T, Half>)
        s = print(HalfToFloat(values[i].bits));
      else if constexpr (std::is_same_v<T, BFloat16>)
        s = print(BFloat16ToFloat(values[i].bits));
      else
        s = print(values[i]);
      HETRT_RETURN_IF_ERROR(s);
    }
  }
  out += ']';
  return OkStatus();
}

std::string Dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

void AppendShape(const std::vector<int64_t>& shape, std::string& out) {
  out += '[';
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) out += ',';
    out += std::to_string(shape[i]);
  }
  out += ']';
}

json TensorMetadataJson(const std::vector<TensorMetadata>& tensors) {
  json list = json::array();
  for (const TensorMetadata& t : tensors)
    list.push_back({{"name", t.name}, {"datatype", t.datatype}, {"shape", t.shape}});
  return list;
}

}  // namespace

std::string QuoteJson(std::string_view text) {
  return json(std::string(text)).dump(-1, ' ', false, json::error_handler_t::replace);
}

Result<nlohmann::json> ParseJson(std::string_view text, const char* what, size_t max_depth) {
  JsonLimits limits;
  limits.max_depth = max_depth;
  limits.max_bytes = std::numeric_limits<size_t>::max();
  HETRT_RETURN_IF_ERROR(CheckJsonLimits(text, what, limits));
  try {
    return json::parse(text.begin(), text.end());
  } catch (const json::exception& e) {  // parse_error, or out_of_range for a number such as 1e700
    std::string message = e.what();
    if (auto bracket = message.find("] "); message.rfind("[json.exception", 0) == 0 && bracket != std::string::npos)
      message = message.substr(bracket + 2);
    return DataLoss(std::string(what) + " is not valid JSON: " + message);
  } catch (const std::bad_alloc&) {
    return ResourceExhausted(std::string(what) + ": out of memory parsing " + std::to_string(text.size()) +
                             " bytes of JSON");
  }
}

bool RestOutputFormat::IsBinary(std::string_view output) const {
  for (const auto& [name, binary] : per_output)
    if (name == output) return binary;
  return binary_by_default;
}

Result<RestInferRequest> ParseRestInferRequest(std::string_view body, std::optional<size_t> json_header_length,
                                               const RestParseLimits& limits, BinaryInputs binary_inputs) {
  std::string_view json_text = body, binary;
  if (json_header_length) {
    if (*json_header_length > body.size())
      return InvalidArgument("Inference-Header-Content-Length is " + std::to_string(*json_header_length) +
                             " but the body has only " + std::to_string(body.size()) + " bytes");
    json_text = body.substr(0, *json_header_length);
    binary = body.substr(*json_header_length);
  }
  HETRT_ASSIGN_OR_RETURN(json root, ParseJson(json_text, "the inference request", limits.max_json_depth));
  try {
    return RequestParser(binary, limits, binary_inputs).Parse(root);
  } catch (const std::bad_alloc&) {
    return ResourceExhausted("out of memory decoding the inference request's tensors");
  }
}

Result<RestBody> EncodeRestInferResponse(const InferResponse& response, const RestOutputFormat& format,
                                         BinaryOutputs binary_outputs) {
  RestBody result;
  std::string& out = result.body;
  std::vector<const Tensor*> binary;
  out += "{\"model_name\":" + QuoteJson(response.model) + ",\"model_version\":" + QuoteJson(response.version);
  if (!response.id.empty()) out += ",\"id\":" + QuoteJson(response.id);
  out += ",\"outputs\":[";
  for (size_t i = 0; i < response.outputs.size(); ++i) {
    const InferTensor& output = response.outputs[i];
    const std::string datatype = ProtocolDataType(output.tensor.dtype());
    if (datatype.empty())
      return Internal("output '" + output.name + "' has dtype " + DataTypeToString(output.tensor.dtype()) +
                      ", which the protocol cannot name");
    if (i) out += ',';
    out += "{\"name\":" + QuoteJson(output.name) + ",\"datatype\":\"" + datatype + "\",\"shape\":";
    AppendShape(output.tensor.shape(), out);
    if (format.IsBinary(output.name)) {
      out += ",\"parameters\":{\"binary_data_size\":" + std::to_string(output.tensor.nbytes()) + "}}";
      binary.push_back(&output.tensor);
      continue;
    }
    out += ",\"data\":";
    HETRT_RETURN_IF_ERROR(VisitElementType(
        output.tensor.dtype(), [&]<typename T>() { return AppendJsonData<T>(output.tensor, output.name, out); }));
    out += '}';
  }
  out += "]}";
  if (!binary.empty()) {
    result.json_header_length = out.size();
    for (const Tensor* t : binary) {
      const std::string_view bytes(reinterpret_cast<const char*>(t->data()), t->nbytes());
      if (binary_outputs == BinaryOutputs::kViewOfResponse)
        result.binary_outputs.push_back(bytes);
      else
        out.append(bytes);
    }
  }
  return result;
}

std::string EncodeServerMetadata(const std::string& name, const std::string& version,
                                 const std::vector<std::string>& extensions) {
  return Dump({{"name", name}, {"version", version}, {"extensions", extensions}});
}

std::string EncodeModelMetadata(const ModelMetadata& metadata) {
  json out = {{"name", metadata.name},
              {"versions", metadata.versions},
              {"platform", metadata.platform},
              {"inputs", TensorMetadataJson(metadata.inputs)},
              {"outputs", TensorMetadataJson(metadata.outputs)}};
  if (metadata.generative) {
    json parameters = {{"generative", true}, {"decoupled", true}};
    for (const auto& [name, value] : metadata.generative_facts) parameters[name] = value;
    out["parameters"] = std::move(parameters);
  }
  return Dump(out);
}

std::string EncodeRepositoryIndex(const std::vector<RepositoryEntry>& entries) {
  json list = json::array();
  for (const RepositoryEntry& e : entries) {
    json row = {{"name", e.name}, {"state", e.state}};
    if (!e.version.empty()) row["version"] = e.version;
    if (!e.reason.empty()) row["reason"] = e.reason;
    list.push_back(std::move(row));
  }
  return Dump(list);
}

std::string EncodeError(std::string_view message) { return Dump({{"error", std::string(message)}}); }

Result<bool> ParseRepositoryIndexRequest(std::string_view body) {
  if (body.find_first_not_of(" \t\r\n") == std::string_view::npos) return false;
  HETRT_ASSIGN_OR_RETURN(json root, ParseJson(body, "the repository index request", 8));
  if (!root.is_object()) return InvalidArgument("the repository index request must be an object: {\"ready\": bool}");
  auto ready = root.find("ready");
  if (ready == root.end()) return false;
  if (!ready->is_boolean()) return InvalidArgument("\"ready\" must be true or false");
  return ready->get<bool>();
}

Status ParseRepositoryModelRequest(std::string_view body) {
  if (body.find_first_not_of(" \t\r\n") == std::string_view::npos) return OkStatus();
  HETRT_ASSIGN_OR_RETURN(json root, ParseJson(body, "the repository request", 8));
  if (!root.is_object()) return InvalidArgument("the repository request must be a JSON object");
  HETRT_ASSIGN_OR_RETURN(const json* parameters, ReadParameters(root));
  if (parameters == nullptr) return OkStatus();
  for (const auto& item : parameters->items())
    if (item.key() == "config" || item.key().rfind("file:", 0) == 0)
      return InvalidArgument("parameter \"" + item.key() +
                             "\" is not supported: hetrt loads the model's folder and config.json from the repository");
  return OkStatus();
}

}  // namespace hetrt::serve
