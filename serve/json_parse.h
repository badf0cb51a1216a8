// JSON text from a client, parsed with hetrt's limits (nesting, size) checked
// first: the REST codecs' one way in; and strings quoted for the answers. Errors: DataLoss (not JSON),
// InvalidArgument (too deep), ResourceExhausted (out of memory).
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <string>
#include <string_view>

#include "hetrt/base/status.h"

namespace hetrt::serve {

// `what` names the text in errors ("the inference request").
Result<nlohmann::json> ParseJson(std::string_view text, const char* what, size_t max_depth);

// `text` as a JSON string literal, quotes included (invalid UTF-8 replaced).
std::string QuoteJson(std::string_view text);

}  // namespace hetrt::serve
