#include "hetrt/base/log.h"

#include <cstdio>

namespace hetrt {

void Log(LogLevel level, const char* source, const std::string& message) noexcept {
  std::fprintf(stderr, "hetrt[%s] %s: %s\n", source ? source : "core", level == LogLevel::kError ? "error" : "warning",
               message.c_str());
}

}  // namespace hetrt
