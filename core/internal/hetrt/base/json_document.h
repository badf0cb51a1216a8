// A JSON document the core reads (graph JSON, a tensor cache's index, a
// model's metadata), parsed in one place: hetrt's limits first
// (CheckJsonLimits), then nlohmann's parser without exceptions. One
// translation unit instantiates the parser: it added 4 s to every unit that did.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

#include "hetrt/base/json_limits.h"
#include "hetrt/base/status.h"

namespace hetrt {

// The document, or a discarded value (is_discarded()) when `text` is not
// JSON, for the caller to say what it expected; DATA_LOSS over the limits,
// RESOURCE_EXHAUSTED when memory runs out, each naming `source`.
Result<nlohmann::json> ParseJsonDocument(std::string_view text, const std::string& source,
                                         const JsonLimits& limits = {});

}  // namespace hetrt
