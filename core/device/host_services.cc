#include "hetrt/device/host_services.h"

#include <cstdio>

#include "hetrt/last_error.h"

namespace hetrt {
namespace {

void HostSetLastError(const char* message) { SetLastError(message); }

void HostLog(hetrt_log_level_t level, const char* plugin, const char* message) {
  if (level < HETRT_LOG_WARNING) return;
  std::fprintf(stderr, "hetrt[%s] %s: %s\n", plugin ? plugin : "?", level == HETRT_LOG_ERROR ? "error" : "warning",
               message ? message : "");
}

const hetrt_host_api_t kHostServices = {
    sizeof(hetrt_host_api_t), HETRT_PLUGIN_ABI_MAJOR, HETRT_PLUGIN_ABI_MINOR, &HostSetLastError, &HostLog,
};

}  // namespace

const hetrt_host_api_t* HostServices() { return &kHostServices; }

}  // namespace hetrt
