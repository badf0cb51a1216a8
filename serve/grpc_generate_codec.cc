#include "grpc_generate_codec.h"

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

bool IsIntegerType(std::string_view dt) {
  return dt == "INT8" || dt == "INT16" || dt == "INT32" || dt == "INT64" || dt == "UINT8" || dt == "UINT16" ||
         dt == "UINT32" || dt == "UINT64";
}

size_t ElementBytes(std::string_view dt) {
  if (dt == "INT8" || dt == "UINT8" || dt == "BOOL") return 1;
  if (dt == "INT16" || dt == "UINT16") return 2;
  if (dt == "INT32" || dt == "UINT32" || dt == "FP32") return 4;
  if (dt == "INT64" || dt == "UINT64" || dt == "FP64") return 8;
  return 0;
}

// The elements of one input as doubles (every value a generation input takes
// fits one exactly: token ids, counts, settings), from `contents` or `raw`.
Result<std::vector<double>> Elements(const ModelInferRequest::InferInputTensor& input, const std::string* raw) {
  const std::string& dt = input.datatype();
  const std::string where = "input '" + input.name() + "'";
  const size_t width = ElementBytes(dt);
  if (width == 0 || dt == "BOOL")
    return InvalidArgument(where + " has datatype '" + dt + "'; it takes an integer or floating-point type");
  int64_t count = 1;
  for (int64_t d : input.shape()) {
    if (d < 0 || d > (int64_t{1} << 24))
      return InvalidArgument(where + " has a bad shape dimension " + std::to_string(d));
    count *= d;
    if (count > (int64_t{1} << 24)) return InvalidArgument(where + " is too large");
  }
  std::vector<double> out;
  out.reserve(static_cast<size_t>(count));
  if (raw != nullptr) {
    if (raw->size() != static_cast<size_t>(count) * width)
      return InvalidArgument(where + ": raw_input_contents holds " + std::to_string(raw->size()) + " bytes, shape x " +
                             dt + " needs " + std::to_string(static_cast<size_t>(count) * width));
    for (int64_t i = 0; i < count; ++i) {
      const char* at = raw->data() + static_cast<size_t>(i) * width;
      auto read = [&](auto value) {
        std::memcpy(&value, at, sizeof value);
        return static_cast<double>(value);
      };
      if (dt == "INT8")
        out.push_back(read(int8_t{}));
      else if (dt == "INT16")
        out.push_back(read(int16_t{}));
      else if (dt == "INT32")
        out.push_back(read(int32_t{}));
      else if (dt == "INT64")
        out.push_back(read(int64_t{}));
      else if (dt == "UINT8")
        out.push_back(read(uint8_t{}));
      else if (dt == "UINT16")
        out.push_back(read(uint16_t{}));
      else if (dt == "UINT32")
        out.push_back(read(uint32_t{}));
      else if (dt == "UINT64")
        out.push_back(read(uint64_t{}));
      else if (dt == "FP32")
        out.push_back(read(float{}));
      else
        out.push_back(read(double{}));
    }
    return out;
  }
  const auto& c = input.contents();
  auto take = [&](const auto& field) -> Status {
    if (field.size() != count)
      return InvalidArgument(where + ": contents hold " + std::to_string(field.size()) + " elements, its shape " +
                             std::to_string(count));
    for (auto v : field) out.push_back(static_cast<double>(v));
    return OkStatus();
  };
  if (dt == "INT8" || dt == "INT16" || dt == "INT32")
    HETRT_RETURN_IF_ERROR(take(c.int_contents()));
  else if (dt == "INT64")
    HETRT_RETURN_IF_ERROR(take(c.int64_contents()));
  else if (dt == "UINT8" || dt == "UINT16" || dt == "UINT32")
    HETRT_RETURN_IF_ERROR(take(c.uint_contents()));
  else if (dt == "UINT64")
    HETRT_RETURN_IF_ERROR(take(c.uint64_contents()));
  else if (dt == "FP32")
    HETRT_RETURN_IF_ERROR(take(c.fp32_contents()));
  else
    HETRT_RETURN_IF_ERROR(take(c.fp64_contents()));
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
  GenerateRequest out;
  out.model = request.model_name();
  out.version = request.model_version();
  out.id = request.id();
  const bool raw = request.raw_input_contents_size() > 0;
  if (raw && request.raw_input_contents_size() != request.inputs_size())
    return InvalidArgument("raw_input_contents has " + std::to_string(request.raw_input_contents_size()) +
                           " entries for " + std::to_string(request.inputs_size()) + " inputs");
  std::vector<std::string> seen;
  auto once = [&](const std::string& name) -> Status {
    for (const std::string& s : seen)
      if (s == name) return InvalidArgument("'" + name + "' is given twice (as inputs or parameters)");
    seen.push_back(name);
    return OkStatus();
  };
  for (int i = 0; i < request.inputs_size(); ++i) {
    const auto& input = request.inputs(i);
    HETRT_RETURN_IF_ERROR(once(input.name()));
    const std::string where = "input '" + input.name() + "'";
    if ((input.name() == "input_ids" || input.name() == "stop_token_ids") && !IsIntegerType(input.datatype()))
      return InvalidArgument(where + " must be INT32 or INT64 token ids, not " + input.datatype());
    if (input.name() == "input_ids" && input.shape_size() == 2 && input.shape(0) != 1)
      return InvalidArgument(where + " has shape [" + std::to_string(input.shape(0)) +
                             ", n]; one request carries one prompt ([n] or [1, n])");
    if (input.shape_size() > 2) return InvalidArgument(where + " must have shape [n] or [1, n]");
    HETRT_ASSIGN_OR_RETURN(std::vector<double> values, Elements(input, raw ? &request.raw_input_contents(i) : nullptr));
    HETRT_RETURN_IF_ERROR(Apply(input.name(), values, where, out));
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
  for (const auto& output : request.outputs())
    if (output.name() != "output_ids")
      return InvalidArgument("output '" + output.name() + "' does not exist; the model's output is 'output_ids'");
  return out;
}

void EncodeGenerateResponse(const GenerationEvent& event, const std::string& model, const std::string& version,
                            const std::string& id, inference::ModelStreamInferResponse& out) {
  out.Clear();
  inference::ModelInferResponse& r = *out.mutable_infer_response();
  r.set_model_name(model);
  r.set_model_version(version);
  r.set_id(id);
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
