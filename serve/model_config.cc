#include "model_config.h"

#include <nlohmann/json.hpp>

#include <cstdint>

#include "hetrt/llm/engine.h"

namespace hetrt::serve {
namespace {

using nlohmann::json;

Status Unknown(const json& object, std::initializer_list<std::string_view> known, const std::string& where) {
  for (const auto& [key, value] : object.items()) {
    bool found = false;
    for (std::string_view k : known) found |= key == k;
    if (!found) return InvalidArgument(where + ": unknown field '" + key + "'");
  }
  return OkStatus();
}

Result<int64_t> Integer(const json& object, const char* key, int64_t min, int64_t max, int64_t fallback,
                        const std::string& where) {
  if (!object.contains(key)) return fallback;
  const json& v = object[key];
  if (!v.is_number_integer()) return InvalidArgument(where + ": '" + key + "' must be an integer");
  const int64_t n = v.get<int64_t>();
  if (n < min || n > max)
    return InvalidArgument(where + ": '" + key + "' must be between " + std::to_string(min) + " and " +
                           std::to_string(max) + ", got " + std::to_string(n));
  return n;
}

Status ParseInstanceGroups(const json& groups, ModelConfig& config, const std::string& where) {
  if (!groups.is_array() || groups.empty())
    return InvalidArgument(where + ": 'instance_group' must be a non-empty array");
  config.instance_groups.clear();
  for (size_t i = 0; i < groups.size(); ++i) {
    const json& g = groups[i];
    const std::string at = where + ": instance_group[" + std::to_string(i) + "]";
    if (!g.is_object()) return InvalidArgument(at + " must be an object");
    HETRT_RETURN_IF_ERROR(Unknown(g, {"count", "devices", "kind", "name"}, at));
    InstanceGroup group;
    HETRT_ASSIGN_OR_RETURN(int64_t count, Integer(g, "count", 1, 64, 1, at));
    group.count = static_cast<int>(count);
    if (g.contains("devices")) {
      const json& d = g["devices"];
      if (!d.is_array() || d.empty()) return InvalidArgument(at + ": 'devices' must be a non-empty array of names");
      group.devices.clear();
      for (const json& name : d) {
        if (!name.is_string())
          return InvalidArgument(at + ": 'devices' must hold strings such as \"cpu\", \"opencl:0\"");
        group.devices.push_back(name.get<std::string>());
      }
    }
    config.instance_groups.push_back(std::move(group));
  }
  return OkStatus();
}

Status ParseVersionPolicy(const json& policy, ModelConfig& config, const std::string& where) {
  const std::string at = where + ": version_policy";
  if (!policy.is_object() || policy.size() != 1)
    return InvalidArgument(at +
                           " must be one of {\"latest\": {\"num_versions\": N}}, {\"all\": {}}, "
                           "{\"specific\": {\"versions\": [...]}}");
  HETRT_RETURN_IF_ERROR(Unknown(policy, {"latest", "all", "specific"}, at));
  if (policy.contains("latest")) {
    config.version_policy = ModelConfig::VersionPolicy::kLatest;
    HETRT_ASSIGN_OR_RETURN(int64_t n, Integer(policy["latest"], "num_versions", 1, 1000, 1, at + ".latest"));
    config.latest_versions = static_cast<int>(n);
  } else if (policy.contains("all")) {
    config.version_policy = ModelConfig::VersionPolicy::kAll;
  } else {
    config.version_policy = ModelConfig::VersionPolicy::kSpecific;
    const json& s = policy["specific"];
    if (!s.is_object() || !s.contains("versions") || !s["versions"].is_array() || s["versions"].empty())
      return InvalidArgument(at + ".specific needs a non-empty 'versions' array");
    for (const json& v : s["versions"]) {
      if (!v.is_number_integer() || v.get<int64_t>() < 0)
        return InvalidArgument(at + ".specific.versions must hold non-negative integers");
      config.specific_versions.push_back(v.get<int64_t>());
    }
  }
  return OkStatus();
}

Status ParseParameters(const json& parameters, ModelConfig& config, const std::string& where) {
  const std::string at = where + ": parameters";
  if (!parameters.is_object())
    return InvalidArgument(at + " must be an object such as {\"cpu.num_threads\": {\"string_value\": \"1\"}}");
  for (const auto& [name, value] : parameters.items()) {
    const size_t dot = name.find('.');
    if (dot == std::string::npos || dot == 0 || dot + 1 == name.size())
      return InvalidArgument(at + ": '" + name + "' must name a plugin and one of its options, as \"cpu.num_threads\"");
    if (!value.is_object() || value.size() != 1 || !value.contains("string_value") || !value["string_value"].is_string())
      return InvalidArgument(at + "." + name + " must be {\"string_value\": \"...\"} (Triton's form)");
    config.plugin_settings.push_back({name.substr(0, dot), name.substr(dot + 1), value["string_value"].get<std::string>()});
  }
  return OkStatus();
}

Result<double> Number(const json& object, const char* key, double fallback, const std::string& where) {
  if (!object.contains(key)) return fallback;
  if (!object[key].is_number()) return InvalidArgument(where + ": '" + key + "' must be a number");
  return object[key].get<double>();
}

// Ranges of the sampling settings are the engine's to check (at load, with
// the vocabulary known); here only their types.
Status ParseGeneration(const json& g, GenerationConfig& out, const std::string& where) {
  const std::string at = where + ": generation";
  if (!g.is_object()) return InvalidArgument(at + " must be an object");
  HETRT_RETURN_IF_ERROR(Unknown(
      g, {"kv_cache_tokens", "kv_cache_pages", "prefill_chunk_size", "queue_timeout_ms", "stop_token_ids", "defaults"},
      at));
  if (g.contains("kv_cache_tokens") && g.contains("kv_cache_pages"))
    return InvalidArgument(at + ": give 'kv_cache_tokens' or 'kv_cache_pages', not both");
  HETRT_ASSIGN_OR_RETURN(out.kv_cache_tokens, Integer(g, "kv_cache_tokens", 1, int64_t{1} << 32, 0, at));
  HETRT_ASSIGN_OR_RETURN(int64_t pages, Integer(g, "kv_cache_pages", 1, int64_t{1} << 28, 0, at));
  if (pages > 0) out.kv_cache_tokens = pages * kLlmPageSize;
  HETRT_ASSIGN_OR_RETURN(out.prefill_chunk_size, Integer(g, "prefill_chunk_size", 1, int64_t{1} << 20, 0, at));
  HETRT_ASSIGN_OR_RETURN(out.queue_timeout_ms,
                         Integer(g, "queue_timeout_ms", 0, int64_t{24} * 3600 * 1000, out.queue_timeout_ms, at));
  if (g.contains("stop_token_ids")) {
    const json& ids = g["stop_token_ids"];
    if (!ids.is_array()) return InvalidArgument(at + ": 'stop_token_ids' must be an array of token ids");
    for (const json& id : ids) {
      if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX)
        return InvalidArgument(at + ": 'stop_token_ids' must hold non-negative integers");
      out.stop_token_ids.push_back(id.get<int32_t>());
    }
  }
  if (g.contains("defaults")) {
    const json& d = g["defaults"];
    const std::string dat = at + ".defaults";
    if (!d.is_object()) return InvalidArgument(dat + " must be an object");
    HETRT_RETURN_IF_ERROR(Unknown(
        d,
        {"max_tokens", "temperature", "top_p", "top_k", "repetition_penalty", "presence_penalty", "frequency_penalty"},
        dat));
    HETRT_ASSIGN_OR_RETURN(out.max_tokens, Integer(d, "max_tokens", 0, int64_t{1} << 30, out.max_tokens, dat));
    HETRT_ASSIGN_OR_RETURN(out.top_k, Integer(d, "top_k", 0, int64_t{1} << 30, out.top_k, dat));
    HETRT_ASSIGN_OR_RETURN(out.temperature, Number(d, "temperature", out.temperature, dat));
    HETRT_ASSIGN_OR_RETURN(out.top_p, Number(d, "top_p", out.top_p, dat));
    HETRT_ASSIGN_OR_RETURN(out.repetition_penalty, Number(d, "repetition_penalty", out.repetition_penalty, dat));
    HETRT_ASSIGN_OR_RETURN(out.presence_penalty, Number(d, "presence_penalty", out.presence_penalty, dat));
    HETRT_ASSIGN_OR_RETURN(out.frequency_penalty, Number(d, "frequency_penalty", out.frequency_penalty, dat));
  }
  return OkStatus();
}

}  // namespace

Result<ModelConfig> ParseModelConfig(std::string_view text, const std::string& origin) {
  json root = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) return InvalidArgument(origin + ": not valid JSON");
  if (!root.is_object()) return InvalidArgument(origin + ": must be a JSON object");
  HETRT_RETURN_IF_ERROR(Unknown(root,
                                {"name", "max_batch_size", "instance_group", "dynamic_batching", "max_queue_size",
                                 "version_policy", "platform", "backend", "function", "parameters", "generation"},
                                origin));
  ModelConfig config;
  HETRT_ASSIGN_OR_RETURN(int64_t max_batch, Integer(root, "max_batch_size", 0, 1 << 20, 0, origin));
  config.max_batch_size = static_cast<int>(max_batch);
  if (root.contains("function")) {
    if (!root["function"].is_string() || root["function"].get<std::string>().empty())
      return InvalidArgument(origin + ": 'function' must be a function name (a Relax executable's, e.g. \"main\")");
    config.function = root["function"].get<std::string>();
  }
  HETRT_ASSIGN_OR_RETURN(int64_t queue, Integer(root, "max_queue_size", 1, 1 << 20, config.max_queue_size, origin));
  config.max_queue_size = static_cast<int>(queue);
  if (root.contains("instance_group"))
    HETRT_RETURN_IF_ERROR(ParseInstanceGroups(root["instance_group"], config, origin));
  if (root.contains("dynamic_batching")) {
    const json& b = root["dynamic_batching"];
    const std::string at = origin + ": dynamic_batching";
    if (!b.is_object()) return InvalidArgument(at + " must be an object");
    HETRT_RETURN_IF_ERROR(Unknown(b, {"max_queue_delay_microseconds", "preferred_batch_size"}, at));
    config.dynamic_batching = true;
    HETRT_ASSIGN_OR_RETURN(config.max_queue_delay_us, Integer(b, "max_queue_delay_microseconds", 0, 10'000'000, 0, at));
    if (b.contains("preferred_batch_size")) {
      if (!b["preferred_batch_size"].is_array())
        return InvalidArgument(at + ": 'preferred_batch_size' must be an array of integers");
      for (const json& v : b["preferred_batch_size"]) {
        if (!v.is_number_integer() || v.get<int64_t>() < 1 || v.get<int64_t>() > config.max_batch_size)
          return InvalidArgument(at + ": preferred_batch_size entries must be integers in [1, max_batch_size=" +
                                 std::to_string(config.max_batch_size) + "]");
        config.preferred_batch_sizes.push_back(v.get<int>());
      }
    }
    if (config.max_batch_size < 2) return InvalidArgument(at + " needs max_batch_size of 2 or more");
  }
  if (root.contains("version_policy"))
    HETRT_RETURN_IF_ERROR(ParseVersionPolicy(root["version_policy"], config, origin));
  if (root.contains("parameters")) HETRT_RETURN_IF_ERROR(ParseParameters(root["parameters"], config, origin));
  if (root.contains("generation")) {
    HETRT_RETURN_IF_ERROR(ParseGeneration(root["generation"], config.generation, origin));
    config.has_generation = true;
  }
  return config;
}

}  // namespace hetrt::serve
