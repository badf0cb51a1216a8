// HETRT_REQUIRE's rule, shared by the tests and the conformance kit: a comma
// list of what a run must have ("opencl,vulkan", "all"), where "-name" takes
// one back out ("all,-vulkan-validation"). What is required and missing is a
// failure; what is not required and missing is a skip with the reason.
#pragma once

#include <cstdlib>
#include <string>

namespace hetrt {

// The HETRT_REQUIRE list as set ("" when unset).
inline std::string RequiredList() {
  const char* list = std::getenv("HETRT_REQUIRE");
  return list ? list : "";
}

// Whether `list` requires `what`. `all_includes_it`: whether "all" names it
// (never for a GPU: a machine without one is not broken).
inline bool ListRequires(const std::string& list, const std::string& what, bool all_includes_it = true) {
  const std::string padded = "," + list + ",";
  if (padded.find(",-" + what + ",") != std::string::npos) return false;
  return padded.find("," + what + ",") != std::string::npos ||
         (all_includes_it && padded.find(",all,") != std::string::npos);
}

}  // namespace hetrt
