// The Prometheus text exposition (format 0.0.4) of every served version's
// counters: requests, queue and compute time, batch sizes, in-flight
// requests, and per-instance busy time and utilization.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "model_version.h"

namespace hetrt::serve {

std::string RenderMetrics(const std::vector<std::shared_ptr<const ModelVersion>>& versions);

}  // namespace hetrt::serve
