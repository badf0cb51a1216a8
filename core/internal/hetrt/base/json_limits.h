// Limits checked on JSON text before a DOM parser sees it: nesting depth and
// size. A parser building a tree from 50 MB of '[' would take gigabytes before
// reporting the first type error; this scan takes none.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "hetrt/base/status.h"

namespace hetrt {

struct JsonLimits {
  size_t max_depth = 64;          // real graph JSON nests 6 deep
  size_t max_bytes = 256u << 20;  // real graph JSON is well under 10 MB
};

// DATA_LOSS naming `source` and the byte offset when `text` nests deeper or is
// larger than allowed. Strings (with escapes) are skipped; the text need not be
// valid JSON, the parser says what else is wrong.
Status CheckJsonLimits(std::string_view text, const std::string& source, const JsonLimits& limits = {});

}  // namespace hetrt
