// A backend's conformance profile (`hetrt-conformance PLUGIN.so --profile
// FILE`), as IREE's CTS drivers register theirs: the options the checks run
// under and what the backend does not support, each with its reason. Without
// a profile every check runs under the plugin's defaults.
//
//   # comments and blank lines are ignored
//   option KEY=VALUE              set on the plugin before any check
//   queued-copies KEY=VALUE       options under which device memory is copied
//   queued-copies-undo KEY=VALUE    through the device's queue, and their undo
//   problems-attribute ID         an integer device attribute counting problems
//                                   the driver reported; no check may raise it
//   unsupported NAME: REASON      NAME is a check ("Memory.Workspace*": a
//                                   trailing * matches a prefix) or a feature:
//                                   failed-free-count, pinned-labelled-with-device
//
// Profiles of hetrt's own backends: sdk/conformance/profiles/.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "hetrt/base/status.h"

namespace hetrt::conformance {

struct Profile {
  using Options = std::vector<std::pair<std::string, std::string>>;
  std::string path;  // "" without one
  Options options, queued_copies, queued_copies_undo;
  std::optional<int32_t> problems_attribute;
  std::vector<std::pair<std::string, std::string>> unsupported;  // name, reason

  // The reason a check or feature is unsupported; nullopt when it is expected to work.
  std::optional<std::string> Unsupported(const std::string& name) const;
};

// DATA_LOSS naming the file and line for a line it does not understand.
Result<Profile> ReadProfile(const std::string& path);

}  // namespace hetrt::conformance
