#include "grpc_generate_codec.h"

#include "grpc_infer_codec.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <string_view>

namespace hetrt::serve {
namespace {

using inference::InferParameter;
using inference::ModelInferRequest;

// Whether `v` is an integer in [lo, hi] (false for NaN; no cast before the check).
bool IsWhole(double v, double lo, double hi) { return v >= lo && v <= hi && v == std::trunc(v); }

// An input's elements as doubles (every value a generation input takes fits
// one exactly: token ids, counts, settings). Read with memcpy: a raw input
// borrowed from the message need not be aligned.
Result<std::vector<double>> Values(const Tensor& tensor, const std::string& where) {
  const DLDataType d = tensor.dtype();
  std::vector<double> out(static_cast<size_t>(tensor.num_elements()));
  const char* base = static_cast<const char*>(tensor.data());
  auto read = [&](auto value) {
    for (size_t i = 0; i < out.size(); ++i) {
      std::memcpy(&value, base + i * sizeof value, sizeof value);
      out[i] = static_cast<double>(value);
    }
  };
  const bool is_int = d.code == kDLInt, is_uint = d.code == kDLUInt, is_float = d.code == kDLFloat;
  if (is_int && d.bits == 8)
    read(int8_t{});
  else if (is_int && d.bits == 16)
    read(int16_t{});
  else if (is_int && d.bits == 32)
    read(int32_t{});
  else if (is_int && d.bits == 64)
    read(int64_t{});
  else if (is_uint && d.bits == 8)
    read(uint8_t{});
  else if (is_uint && d.bits == 16)
    read(uint16_t{});
  else if (is_uint && d.bits == 32)
    read(uint32_t{});
  else if (is_uint && d.bits == 64)
    read(uint64_t{});
  else if (is_float && d.bits == 32)
    read(float{});
  else if (is_float && d.bits == 64)
    read(double{});
  else
    return InvalidArgument(where + " has datatype " + ProtocolDataType(d) +
                           "; it takes an integer or floating-point type");
  return out;
}

Result<std::vector<int32_t>> TokenIds(const std::vector<double>& values, const std::string& where) {
  std::vector<int32_t> ids;
  ids.reserve(values.size());
  for (double v : values) {
    if (!IsWhole(v, std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()))
      return InvalidArgument(where + " holds " + std::to_string(v) + ", which is no token id");
    ids.push_back(static_cast<int32_t>(v));
  }
  return ids;
}

// A setting as a double, from a parameter of any numeric kind.
Result<double> ParameterNumber(const std::string& name, const InferParameter& p, bool integer) {
  const std::string where = "parameter '" + name + "'";
  switch (p.parameter_choice_case()) {
    case InferParameter::kInt64Param: return static_cast<double>(p.int64_param());
    case InferParameter::kUint64Param: return static_cast<double>(p.uint64_param());
    case InferParameter::kDoubleParam:
      if (integer && !IsWhole(p.double_param(), -9.2e18, 9.2e18))
        return InvalidArgument(where + " must be an integer, got " + std::to_string(p.double_param()));
      return p.double_param();
    default: return InvalidArgument(where + " must be " + (integer ? "an integer" : "a number"));
  }
}

// One setting by name, from an input's elements or a parameter's value.
Status Apply(const std::string& name, const std::vector<double>& values, const std::string& where,
             GenerateRequest& out) {
  auto one = [&]() -> Result<double> {
    if (values.size() != 1)
      return InvalidArgument(where + " must hold one value, got " + std::to_string(values.size()));
    return values[0];
  };
  auto integer = [&]() -> Result<int64_t> {
    HETRT_ASSIGN_OR_RETURN(double v, one());
    if (!IsWhole(v, -9.2e18, 9.2e18)) return InvalidArgument(where + " must be an integer, got " + std::to_string(v));
    return static_cast<int64_t>(v);
  };
  if (name == "input_ids") {
    HETRT_ASSIGN_OR_RETURN(out.input_ids, TokenIds(values, where));
  } else if (name == "stop_token_ids") {
    HETRT_ASSIGN_OR_RETURN(out.stop_token_ids, TokenIds(values, where));
  } else if (name == "max_tokens") {
    HETRT_ASSIGN_OR_RETURN(out.max_tokens, integer());
  } else if (name == "top_k") {
    HETRT_ASSIGN_OR_RETURN(out.top_k, integer());
  } else if (name == "seed") {
    HETRT_ASSIGN_OR_RETURN(int64_t seed, integer());
    if (seed < 0) return InvalidArgument(where + " must be a non-negative integer");
    out.seed = static_cast<uint64_t>(seed);
  } else if (name == "temperature") {
    HETRT_ASSIGN_OR_RETURN(out.temperature, one());
  } else if (name == "top_p") {
    HETRT_ASSIGN_OR_RETURN(out.top_p, one());
  } else if (name == "repetition_penalty") {
    HETRT_ASSIGN_OR_RETURN(out.repetition_penalty, one());
  } else if (name == "presence_penalty") {
    HETRT_ASSIGN_OR_RETURN(out.presence_penalty, one());
  } else if (name == "frequency_penalty") {
    HETRT_ASSIGN_OR_RETURN(out.frequency_penalty, one());
  } else {
    std::string names = "input_ids";
    for (const GenerationParameter& p : GenerationParameters()) names += std::string(", ") + p.name;
    return InvalidArgument(where + " is not one this model takes (" + names + ")");
  }
  return OkStatus();
}

}  // namespace

Result<GenerateRequest> DecodeGenerateRequest(const ModelInferRequest& request) {
  // The inputs through the protocol's own decoder (datatypes, shapes, sizes,
  // contents or raw): raw entries are viewed where the message holds them.
  WireInferRequest wire;
  wire.message = request;
  wire.message.clear_raw_input_contents();
  for (const std::string& raw : request.raw_input_contents())
    wire.raw_input_contents.push_back(Tensor::Borrow(const_cast<char*>(raw.data()), DLDevice{kDLCPU, 0},
                                                     {static_cast<int64_t>(raw.size())}, DLDataType{kDLUInt, 8, 1}));
  HETRT_ASSIGN_OR_RETURN(InferRequest decoded, DecodeInferRequest(std::move(wire)));
  GenerateRequest out;
  out.model = std::move(decoded.model);
  out.version = std::move(decoded.version);
  out.id = std::move(decoded.id);
  std::vector<std::string> seen;
  auto once = [&](const std::string& name) -> Status {
    for (const std::string& s : seen)
      if (s == name) return InvalidArgument("'" + name + "' is given twice (as inputs or parameters)");
    seen.push_back(name);
    return OkStatus();
  };
  for (const InferTensor& input : decoded.inputs) {
    HETRT_RETURN_IF_ERROR(once(input.name));
    const std::string where = "input '" + input.name + "'";
    const std::vector<int64_t>& shape = input.tensor.shape();
    const DLDataType d = input.tensor.dtype();
    if ((input.name == "input_ids" || input.name == "stop_token_ids") && d.code != kDLInt && d.code != kDLUInt)
      return InvalidArgument(where + " must be INT32 or INT64 token ids, not " + ProtocolDataType(d));
    if (input.name == "input_ids" && shape.size() == 2 && shape[0] != 1)
      return InvalidArgument(where + " has shape [" + std::to_string(shape[0]) +
                             ", n]; one request carries one prompt ([n] or [1, n])");
    if (shape.size() > 2) return InvalidArgument(where + " must have shape [n] or [1, n]");
    HETRT_ASSIGN_OR_RETURN(std::vector<double> values, Values(input.tensor, where));
    HETRT_RETURN_IF_ERROR(Apply(input.name, values, where, out));
  }
  for (const auto& [name, value] : request.parameters()) {
    HETRT_RETURN_IF_ERROR(once(name));
    const std::string where = "parameter '" + name + "'";
    if (name == "stop_token_ids" && value.parameter_choice_case() == InferParameter::kStringParam) {
      // "2,13": a list in one string parameter.
      std::vector<double> ids;
      std::string_view text = value.string_param();
      while (!text.empty()) {
        const size_t comma = text.find(',');
        std::string_view item = text.substr(0, comma);
        int64_t id = 0;
        auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), id);
        if (item.empty() || ec != std::errc() || end != item.data() + item.size())
          return InvalidArgument(where + " must list token ids separated by commas, got '" + value.string_param() +
                                 "'");
        ids.push_back(static_cast<double>(id));
        text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
      }
      HETRT_RETURN_IF_ERROR(Apply(name, ids, where, out));
      continue;
    }
    if (name == "seed" && value.parameter_choice_case() == InferParameter::kUint64Param) {
      out.seed = value.uint64_param();  // every 64-bit seed, not only those a double holds
      continue;
    }
    const bool integer = name == "max_tokens" || name == "top_k" || name == "seed";
    HETRT_ASSIGN_OR_RETURN(double v, ParameterNumber(name, value, integer));
    HETRT_RETURN_IF_ERROR(Apply(name, {v}, where, out));
  }
  if (std::find(seen.begin(), seen.end(), "input_ids") == seen.end())
    return InvalidArgument("the request has no input 'input_ids' (the prompt's token ids, INT32 or INT64 [n])");
  if (out.input_ids.empty()) return InvalidArgument("input 'input_ids' is empty: give at least one token id");
  for (const std::string& output : decoded.outputs)
    if (output != "output_ids")
      return InvalidArgument("output '" + output + "' does not exist; the model's output is 'output_ids'");
  return out;
}

void EncodeGenerateResponse(const GenerationEvent& event, const std::string& model, const std::string& version,
                            const std::string& id, inference::ModelStreamInferResponse& out) {
  out.Clear();
  inference::ModelInferResponse& r = *out.mutable_infer_response();
  r.set_model_name(model);
  r.set_id(id);
  if (event.kind == GenerationEvent::Kind::kRefused) {  // why, and the stream goes on
    out.set_error_message(event.status.message());
    return;
  }
  r.set_model_version(version);
  auto* output = r.add_outputs();
  output->set_name("output_ids");
  output->set_datatype("INT32");
  const bool has_token = event.token >= 0;
  output->add_shape(has_token ? 1 : 0);
  std::string* bytes = r.add_raw_output_contents();
  if (has_token) bytes->assign(reinterpret_cast<const char*>(&event.token), sizeof event.token);  // little-endian host
  const bool end = event.kind != GenerationEvent::Kind::kToken;
  (*r.mutable_parameters())["triton_final_response"].set_bool_param(end);
  if (!end) return;
  (*r.mutable_parameters())["finish_reason"].set_string_param(event.finish_reason);
  if (!event.status.ok()) (*r.mutable_parameters())["error"].set_string_param(event.status.message());
}

}  // namespace hetrt::serve
