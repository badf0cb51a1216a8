// set_option for a plugin whose options are atomics of its instance struct:
// integer options with a range, 0/1 options, and the NOT_FOUND error that
// lists the known keys.
//
//   constexpr hetrt::sdk::IntOption<hetrt_instance> kInts[] = {{"wait_poll_us", &hetrt_instance::wait_poll_us, 0,
//   1000000}}; hetrt_error_t* SetOption(hetrt_set_option_args_t* args) {
//     return hetrt::sdk::SetOption<kLabel>(args->self, args, kInts, {});
//   }
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <string>
#include <type_traits>

#include "hetrt/sdk/error.h"

namespace hetrt::sdk {

template <class Instance>
struct IntOption {
  const char* key;
  std::atomic<int64_t> Instance::*field;
  int64_t min, max;
};
template <class Instance>
struct BoolOption {
  const char* key;
  std::atomic<bool> Instance::*field;
};

// `self` is args->self as the plugin's complete type. `Label` names the
// plugin in the NOT_FOUND message ("the Vulkan plugin has no option ...").
template <const char* Label, class Instance>
hetrt_error_t* SetOption(Instance* self, const hetrt_set_option_args_t* args,
                         std::type_identity_t<std::span<const IntOption<Instance>>> ints,
                         std::type_identity_t<std::span<const BoolOption<Instance>>> bools) {
  const std::string key = args->key ? args->key : "(null)";
  const std::string value = args->value ? args->value : "";
  char* end = nullptr;
  const long long v = std::strtoll(value.c_str(), &end, 10);
  const bool integer = !value.empty() && *end == '\0';
  for (const IntOption<Instance>& o : ints) {
    if (key != o.key) continue;
    if (!integer || v < o.min || v > o.max)
      return MakeError(HETRT_STATUS_INVALID_ARGUMENT, key + "='" + value + "' is not an integer in [" +
                                                          std::to_string(o.min) + ", " + std::to_string(o.max) + "]");
    (self->*o.field).store(v);
    return nullptr;
  }
  for (const BoolOption<Instance>& o : bools) {
    if (key != o.key) continue;
    if (!integer || (v != 0 && v != 1))
      return MakeError(HETRT_STATUS_INVALID_ARGUMENT, key + "='" + value + "' is not 0 or 1");
    (self->*o.field).store(v == 1);
    return nullptr;
  }
  std::string known;
  for (const IntOption<Instance>& o : ints) known += std::string(known.empty() ? "" : ", ") + o.key;
  for (const BoolOption<Instance>& o : bools) known += std::string(known.empty() ? "" : ", ") + o.key;
  return MakeError(HETRT_STATUS_NOT_FOUND,
                   std::string("the ") + Label + " has no option '" + key + "' (known: " + known + ")");
}

}  // namespace hetrt::sdk
