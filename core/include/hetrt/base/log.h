// The core's own diagnostics for failures nobody can return to (a failed free,
// an asynchronous error found while an executor is destroyed): one line on
// stderr, "hetrt[source] error: message". Plugins' messages arrive through
// hetrt_host_api_t.log and end up here too.
#pragma once

#include <string>

namespace hetrt {

enum class LogLevel { kWarning, kError };

// Never throws.
void Log(LogLevel level, const char* source, const std::string& message) noexcept;

}  // namespace hetrt
