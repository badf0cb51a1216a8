#include "hetrt/base/json_limits.h"

namespace hetrt {

Status CheckJsonLimits(std::string_view text, const std::string& source, const JsonLimits& limits) {
  if (text.size() > limits.max_bytes)
    return DataLoss(source + ": " + std::to_string(text.size()) + " bytes of JSON; at most " +
                    std::to_string(limits.max_bytes) + " are accepted");
  size_t depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;  // the escaped character cannot end the string
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > limits.max_depth)
        return DataLoss(source + ": JSON nests deeper than " + std::to_string(limits.max_depth) + " levels at byte " +
                        std::to_string(i));
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return OkStatus();
}

}  // namespace hetrt
