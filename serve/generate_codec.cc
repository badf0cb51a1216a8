#include "generate_codec.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <limits>

#include "json_parse.h"

namespace hetrt::serve {
namespace {

using nlohmann::json;

constexpr const char* kTakes =
    "input_ids, max_tokens, temperature, top_p, top_k, seed, repetition_penalty, presence_penalty, "
    "frequency_penalty, stop_token_ids, id, stream";

Result<int32_t> TokenId(const json& v, const std::string& field) {
  if (!v.is_number_integer())
    return InvalidArgument("'" + field + "' must hold integer token ids, found " + std::string(v.type_name()));
  if (v.is_number_unsigned() ? v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int32_t>::max())
                             : (v.get<int64_t>() < std::numeric_limits<int32_t>::min() ||
                                v.get<int64_t>() > std::numeric_limits<int32_t>::max()))
    return InvalidArgument("'" + field + "' holds " + v.dump() + ", which is no token id (a 32-bit integer)");
  return v.get<int32_t>();
}

Result<std::vector<int32_t>> TokenIds(const json& v, const std::string& field, bool allow_batch_of_one) {
  // [[1, 2, 3]]: the same prompt as a batch-1 tensor, as tensor clients send it.
  if (allow_batch_of_one && v.is_array() && v.size() == 1 && v[0].is_array()) return TokenIds(v[0], field, false);
  if (!v.is_array())
    return InvalidArgument("'" + field + "' must be an array of token ids, found " + std::string(v.type_name()) +
                           (v.is_string() ? " (text needs a tokenizer, which this server does not load yet)" : ""));
  std::vector<int32_t> ids;
  ids.reserve(v.size());
  for (const json& e : v) {
    HETRT_ASSIGN_OR_RETURN(int32_t id, TokenId(e, field));
    ids.push_back(id);
  }
  return ids;
}

Result<int64_t> Integer(const json& v, const std::string& field) {
  if (!v.is_number_integer()) return InvalidArgument("'" + field + "' must be an integer, found " + v.dump());
  if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    return InvalidArgument("'" + field + "' is " + v.dump() + ", too large");
  return v.get<int64_t>();
}

Result<double> Number(const json& v, const std::string& field) {
  if (!v.is_number()) return InvalidArgument("'" + field + "' must be a number, found " + v.dump());
  return v.get<double>();
}

// One input or parameter by name into `out`.
Status Apply(const std::string& name, const json& v, GenerateRequest& out) {
  if (name == "input_ids") {
    HETRT_ASSIGN_OR_RETURN(out.input_ids, TokenIds(v, name, true));
  } else if (name == "max_tokens") {
    HETRT_ASSIGN_OR_RETURN(out.max_tokens, Integer(v, name));
  } else if (name == "top_k") {
    HETRT_ASSIGN_OR_RETURN(out.top_k, Integer(v, name));
  } else if (name == "seed") {
    if (!v.is_number_integer() || (!v.is_number_unsigned() && v.get<int64_t>() < 0))
      return InvalidArgument("'seed' must be a non-negative integer, found " + v.dump());
    out.seed = v.get<uint64_t>();
  } else if (name == "temperature") {
    HETRT_ASSIGN_OR_RETURN(out.temperature, Number(v, name));
  } else if (name == "top_p") {
    HETRT_ASSIGN_OR_RETURN(out.top_p, Number(v, name));
  } else if (name == "repetition_penalty") {
    HETRT_ASSIGN_OR_RETURN(out.repetition_penalty, Number(v, name));
  } else if (name == "presence_penalty") {
    HETRT_ASSIGN_OR_RETURN(out.presence_penalty, Number(v, name));
  } else if (name == "frequency_penalty") {
    HETRT_ASSIGN_OR_RETURN(out.frequency_penalty, Number(v, name));
  } else if (name == "stop_token_ids") {
    HETRT_ASSIGN_OR_RETURN(out.stop_token_ids, TokenIds(v, name, false));
  } else if (name == "stream") {
    // Triton's clients send it; the endpoint decides whether to stream.
    if (!v.is_boolean()) return InvalidArgument("'stream' must be true or false, found " + v.dump());
  } else if (name == "text_input" || name == "prompt" || name == "text") {
    return InvalidArgument("'" + name +
                           "': text prompts need a tokenizer, which this server does not load yet; send the "
                           "prompt's token ids as input_ids");
  } else {
    return InvalidArgument("unknown field '" + name + "'; a generate request takes " + kTakes);
  }
  return OkStatus();
}

void AppendInt(std::string& out, int64_t value) {
  char digits[24];
  auto [end, ec] = std::to_chars(digits, digits + sizeof digits, value);
  out.append(digits, end);
}

// "output_ids":[...] and, for the end, its reason, usage and error.
void AppendBody(std::string& out, std::span<const int32_t> ids, const GenerationEvent* end) {
  out += "\"output_ids\":[";
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) out += ',';
    AppendInt(out, ids[i]);
  }
  out += ']';
  if (end != nullptr) {
    out += ",\"finish_reason\":";
    out += QuoteJson(end->finish_reason);
    out += ",\"usage\":{\"prompt_tokens\":";
    AppendInt(out, end->prompt_tokens);
    out += ",\"completion_tokens\":";
    AppendInt(out, end->completion_tokens);
    out += '}';
    if (!end->status.ok()) {
      out += ",\"error\":";
      out += QuoteJson(end->status.message());
    }
  }
  out += '}';
}

}  // namespace

const std::vector<GenerationParameter>& GenerationParameters() {
  static const std::vector<GenerationParameter> kParameters = {
      {"max_tokens", "INT32"},
      {"temperature", "FP32"},
      {"top_p", "FP32"},
      {"top_k", "INT32"},
      {"seed", "UINT64"},
      {"repetition_penalty", "FP32"},
      {"presence_penalty", "FP32"},
      {"frequency_penalty", "FP32"},
      {"stop_token_ids", "INT32"},
  };
  return kParameters;
}

Result<GenerateRequest> ParseGenerateRequest(std::string_view body) {
  HETRT_ASSIGN_OR_RETURN(json root, ParseJson(body, "the generate request", 8));
  if (!root.is_object())
    return InvalidArgument(
        "the generate request must be a JSON object such as {\"input_ids\": [1, 2, 3], "
        "\"max_tokens\": 16}");
  GenerateRequest request;
  std::vector<std::string> seen;
  auto take = [&](const std::string& name, const json& v) -> Status {
    for (const std::string& s : seen)
      if (s == name) return InvalidArgument("'" + name + "' is given twice (at the top level and in parameters)");
    seen.push_back(name);
    return Apply(name, v, request);
  };
  for (const auto& [name, value] : root.items()) {
    if (name == "id") {
      if (!value.is_string()) return InvalidArgument("'id' must be a string, found " + value.dump());
      request.id = value.get<std::string>();
    } else if (name == "parameters") {
      if (!value.is_object()) return InvalidArgument("'parameters' must be an object, found " + value.dump());
      for (const auto& [pname, pvalue] : value.items()) HETRT_RETURN_IF_ERROR(take(pname, pvalue));
    } else {
      HETRT_RETURN_IF_ERROR(take(name, value));
    }
  }
  if (std::find(seen.begin(), seen.end(), "input_ids") == seen.end())
    return InvalidArgument("the generate request has no 'input_ids' (the prompt's token ids)");
  if (request.input_ids.empty()) return InvalidArgument("'input_ids' is empty: give at least one token id");
  return request;
}

std::string GenerateAnswerPrefix(std::string_view model, std::string_view version, std::string_view id) {
  std::string prefix = "{\"model_name\":" + QuoteJson(model) + ",\"model_version\":" + QuoteJson(version) + ",";
  if (!id.empty()) prefix += "\"id\":" + QuoteJson(id) + ",";
  return prefix;
}

std::string EncodeGenerateAnswer(std::string_view prefix, std::span<const int32_t> output_ids,
                                 const GenerationEvent& end) {
  std::string out(prefix);
  AppendBody(out, output_ids, &end);
  return out;
}

void AppendGenerateStreamEvent(std::string& out, std::string_view prefix, const GenerationEvent& event) {
  out += "data: ";
  out += prefix;
  const int32_t token = event.token;
  const std::span<const int32_t> ids(&token, token >= 0 ? 1 : 0);
  AppendBody(out, ids, event.kind == GenerationEvent::Kind::kEnd ? &event : nullptr);
  out += "\n\n";
}

}  // namespace hetrt::serve
