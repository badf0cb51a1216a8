#include "hetrt/device/host_services.h"

#include "hetrt/base/last_error.h"
#include "hetrt/base/log.h"

namespace hetrt {
namespace {

// Plugins call these from C: nothing may throw out of them.
void HostSetLastError(const char* message) noexcept {
  try {
    SetLastError(message);
  } catch (...) {  // out of memory for the message: the caller still sees the failure
  }
}

void HostLog(hetrt_log_level_t level, const char* plugin, const char* message) {
  if (level < HETRT_LOG_WARNING) return;
  try {
    Log(level == HETRT_LOG_ERROR ? LogLevel::kError : LogLevel::kWarning, plugin ? plugin : "?",
        message ? message : "");
  } catch (...) {
  }
}

const hetrt_host_api_t kHostServices = {
    sizeof(hetrt_host_api_t), HETRT_PLUGIN_ABI_MAJOR, HETRT_PLUGIN_ABI_MINOR, &HostSetLastError, &HostLog,
};

}  // namespace

const hetrt_host_api_t* HostServices() { return &kHostServices; }

}  // namespace hetrt
