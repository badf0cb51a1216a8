// hetrt::Status (hetrt/base/status.h: errors as values, header-only, no core code
// behind it) turned into the plugin ABI's error at a plugin's C entry points.
// A plugin may use Status and Result inside and return ToError(status) from
// each entry; Status::ToString and StatusCodeName live in the core and are
// not for plugins.
#pragma once

#include "hetrt/base/status.h"
#include "hetrt/sdk/error.h"

namespace hetrt::sdk {

static_assert(static_cast<int>(StatusCode::kInvalidArgument) == HETRT_STATUS_INVALID_ARGUMENT &&
                  static_cast<int>(StatusCode::kDataLoss) == HETRT_STATUS_DATA_LOSS &&
                  static_cast<int>(StatusCode::kInternal) == HETRT_STATUS_INTERNAL,
              "hetrt::StatusCode and the ABI's hetrt_status_code_t number the codes alike");

// NULL for OK; the status codes are the ABI's (plugin_abi.h numbers them alike).
inline hetrt_error_t* ToError(const Status& status) noexcept {
  if (status.ok()) return nullptr;
  return MakeError(static_cast<hetrt_status_code_t>(status.code()), status.message());
}

}  // namespace hetrt::sdk
