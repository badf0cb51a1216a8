// The services the core lends the plugin at initialize (last-error slot, log).
#pragma once

#include "hetrt/plugin_abi.h"

namespace hetrt::cpu {

// `host` stays valid until shutdown, which passes nullptr.
void SetHost(const hetrt_host_api_t* host);

// For the hot-path functions that report failure as NULL / non-zero instead of
// an error object (workspace, parallel launch).
void ReportLastError(const char* message);

void Log(hetrt_log_level_t level, const char* message);

}  // namespace hetrt::cpu
