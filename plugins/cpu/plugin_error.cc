#include "plugin_error.h"

#include <cstdarg>
#include <cstdio>
#include <new>

namespace hetrt::cpu {
namespace {

hetrt_error_t* OutOfMemoryError() {
  static hetrt_error_t error{HETRT_STATUS_RESOURCE_EXHAUSTED,
                             "cpu plugin: out of memory while reporting an error"};
  return &error;
}

}  // namespace

hetrt_error_t* MakeError(hetrt_status_code_t code, const char* format, ...) noexcept {
  va_list args;
  va_start(args, format);
  va_list args_copy;
  va_copy(args_copy, args);
  const int length = std::vsnprintf(nullptr, 0, format, args);
  va_end(args);
  hetrt_error_t* error = nullptr;
  try {
    error = new hetrt_error_t{code, std::string(length > 0 ? length : 0, '\0')};
    // The string owns length + 1 bytes, so vsnprintf may write the terminator.
    std::vsnprintf(error->message.data(), error->message.size() + 1, format, args_copy);
  } catch (const std::bad_alloc&) {
    error = OutOfMemoryError();
  }
  va_end(args_copy);
  return error;
}

// Both "never fail": with unusable args there is nowhere to report anything.
hetrt_error_t* ErrorMessage(hetrt_error_message_args_t* args) noexcept {
  if (!HETRT_ARGS_HAS(args, hetrt_error_message_args_t, code)) return nullptr;
  args->message = args->error != nullptr ? args->error->message.c_str() : "";
  args->code = args->error != nullptr ? args->error->code : HETRT_STATUS_OK;
  return nullptr;
}

hetrt_error_t* ErrorDestroy(hetrt_error_destroy_args_t* args) noexcept {
  if (!HETRT_ARGS_HAS(args, hetrt_error_destroy_args_t, error)) return nullptr;
  if (args->error != OutOfMemoryError()) delete args->error;
  return nullptr;
}

}  // namespace hetrt::cpu
