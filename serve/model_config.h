// A model's optional config.json (Triton's fields, in JSON): batching, the
// instances and their devices, the queue bound, which versions to serve.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "hetrt/base/status.h"
#include "hetrt/serve/inference.h"

namespace hetrt::serve {

struct InstanceGroup {
  int count = 1;
  std::vector<std::string> devices{"cpu"};  // the ordered --device list of `hetrt run`
};

// A language model's serving (docs/serving-llm.md): config.json's "generation".
struct GenerationConfig {
  int64_t kv_cache_tokens = 0;     // 0: the library's context window times the batch
  int64_t prefill_chunk_size = 0;  // 0: the library's
  int64_t queue_timeout_ms = 30000;
  std::vector<int32_t> stop_token_ids;  // end every request
  // Settings a request leaves out.
  int64_t max_tokens = 16;
  double temperature = 0, top_p = 1, repetition_penalty = 1, presence_penalty = 0, frequency_penalty = 0;
  int64_t top_k = 0;
};

struct ModelConfig {
  // 0: requests carry the model's exact shapes. Otherwise requests may carry
  // 1..max_batch_size rows on the first axis (at most the model's compiled
  // batch dimension N), padded to N; with dynamic_batching several requests
  // share one run. A model whose batch axis is symbolic (a Relax function
  // taking any N) runs exactly the rows it was given: never padded.
  int max_batch_size = 0;
  // Relax executables: the function served (TVM's vm["main"]).
  std::string function = "main";
  std::vector<InstanceGroup> instance_groups{InstanceGroup{}};
  bool dynamic_batching = false;
  int64_t max_queue_delay_us = 0;
  std::vector<int> preferred_batch_sizes;
  // Requests waiting per model version; one more is answered "unavailable".
  int max_queue_size = 256;
  // Which numeric versions to serve: the `latest` N (default 1), `all`, or `specific` ones.
  enum class VersionPolicy { kLatest, kAll, kSpecific } version_policy = VersionPolicy::kLatest;
  int latest_versions = 1;
  std::vector<int64_t> specific_versions;
  // Triton's parameters: {"cpu.num_threads": {"string_value": "1"}}. Options of
  // the plugins the model runs on; with any set, the model opens plugin
  // instances of its own with them (a CPU pool and device queues of its own),
  // shared by its instances and versions.
  std::vector<PluginSetting> plugin_settings;
  GenerationConfig generation;  // language models only (a tensor model with it is a load error)
  bool has_generation = false;
};

// `origin` names the file in errors. Unknown keys are errors (a typo must not
// silently change how a model is served).
Result<ModelConfig> ParseModelConfig(std::string_view json, const std::string& origin);

}  // namespace hetrt::serve
