// The Prometheus text exposition (format 0.0.4) of every served version's
// counters: requests, queue and compute time, batch sizes, in-flight
// requests, and per-instance busy time and utilization.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "generative_model.h"
#include "model_version.h"

namespace hetrt::serve {

std::string RenderMetrics(const std::vector<std::shared_ptr<const ModelVersion>>& versions);
// The language models' families (docs/serving-llm.md: vLLM's names, hetrt_llm_ prefix).
std::string RenderGenerativeMetrics(const std::vector<std::shared_ptr<const GenerativeModel>>& models);

}  // namespace hetrt::serve
