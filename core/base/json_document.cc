#include "hetrt/base/json_document.h"

#include <new>

namespace hetrt {

Result<nlohmann::json> ParseJsonDocument(std::string_view text, const std::string& source, const JsonLimits& limits) {
  HETRT_RETURN_IF_ERROR(CheckJsonLimits(text, source, limits));
  try {
    return nlohmann::json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  } catch (const std::bad_alloc&) {
    return ResourceExhausted(source + ": out of memory parsing " + std::to_string(text.size()) + " bytes of JSON");
  }
}

}  // namespace hetrt
