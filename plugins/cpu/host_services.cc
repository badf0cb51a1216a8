#include "host_services.h"

namespace hetrt::cpu {
namespace {

const hetrt_host_api_t* g_host = nullptr;

}  // namespace

void SetHost(const hetrt_host_api_t* host) { g_host = host; }

void ReportLastError(const char* message) {
  if (HETRT_STRUCT_HAS(g_host, hetrt_host_api_t, set_last_error) &&
      g_host->set_last_error != nullptr) {
    g_host->set_last_error(message);
  }
}

void Log(hetrt_log_level_t level, const char* message) {
  if (HETRT_STRUCT_HAS(g_host, hetrt_host_api_t, log) && g_host->log != nullptr) {
    g_host->log(level, "cpu", message);
  }
}

}  // namespace hetrt::cpu
