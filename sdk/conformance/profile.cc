#include "profile.h"

#include <fstream>

namespace hetrt::conformance {
namespace {

std::string Trim(const std::string& text) {
  const size_t begin = text.find_first_not_of(" \t\r");
  if (begin == std::string::npos) return "";
  return text.substr(begin, text.find_last_not_of(" \t\r") - begin + 1);
}

}  // namespace

std::optional<std::string> Profile::Unsupported(const std::string& name) const {
  for (const auto& [pattern, reason] : unsupported) {
    const bool prefix = !pattern.empty() && pattern.back() == '*';
    if (prefix ? name.compare(0, pattern.size() - 1, pattern, 0, pattern.size() - 1) == 0 : name == pattern)
      return reason;
  }
  return std::nullopt;
}

Result<Profile> ReadProfile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return NotFound("cannot open the conformance profile " + path);
  Profile profile;
  profile.path = path;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    line = Trim(line.substr(0, line.find('#')));
    if (line.empty()) continue;
    const size_t space = line.find_first_of(" \t");
    const std::string directive = line.substr(0, space);
    const std::string rest = space == std::string::npos ? "" : Trim(line.substr(space));
    auto bad = [&](const std::string& why) {
      return DataLoss(path + ":" + std::to_string(number) + ": " + why + " in '" + line + "'");
    };
    auto key_value = [&](Profile::Options* into) -> Status {
      const size_t eq = rest.find('=');
      if (eq == 0 || eq == std::string::npos) return bad("expected KEY=VALUE");
      into->emplace_back(rest.substr(0, eq), rest.substr(eq + 1));
      return OkStatus();
    };
    if (directive == "option") {
      HETRT_RETURN_IF_ERROR(key_value(&profile.options));
    } else if (directive == "queued-copies") {
      HETRT_RETURN_IF_ERROR(key_value(&profile.queued_copies));
    } else if (directive == "queued-copies-undo") {
      HETRT_RETURN_IF_ERROR(key_value(&profile.queued_copies_undo));
    } else if (directive == "problems-attribute") {
      try {
        size_t used = 0;
        profile.problems_attribute = static_cast<int32_t>(std::stol(rest, &used, 0));
        if (used != rest.size()) return bad("expected an attribute number");
      } catch (...) {
        return bad("expected an attribute number");
      }
    } else if (directive == "unsupported") {
      const size_t colon = rest.find(':');
      const std::string reason = colon == std::string::npos ? "" : Trim(rest.substr(colon + 1));
      if (colon == 0 || reason.empty()) return bad("expected 'unsupported NAME: REASON'");
      profile.unsupported.emplace_back(Trim(rest.substr(0, colon)), reason);
    } else {
      return bad("unknown directive '" + directive + "'");
    }
  }
  return profile;
}

}  // namespace hetrt::conformance
