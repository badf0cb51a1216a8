// The smallest struct_size a plugin accepts for each args struct: the struct's
// size in the ABI minor that introduced it, i.e. up to and including the last
// field it had then. An older core sends exactly that; a newer one sends more
// (fields a later minor appended), which the plugin ignores.
//
// When a minor appends a field to an existing args struct, that struct's entry
// below keeps naming the field that ended it before, so that cores of the
// earlier minors stay usable; the plugin reads the new field only after
// HETRT_ARGS_HAS (or sdk::ArgsFieldOr) says the caller's struct holds it.
// A struct not listed (one the current minor introduced) counts its full size.
#pragma once

#include <cstddef>

#include "hetrt/plugin_abi.h"

namespace hetrt::sdk {

template <class Args>
struct ArgsIntroduced {
  static constexpr size_t kSize = sizeof(Args);
};

// Declares that `type` ended with `last_field` in the minor that introduced it.
#define HETRT_SDK_ARGS_INTRODUCED_WITH(type, last_field)                                   \
  template <>                                                                              \
  struct ArgsIntroduced<type> {                                                            \
    static constexpr size_t kSize = offsetof(type, last_field) + sizeof(type::last_field); \
  }

// ABI 2.0
HETRT_SDK_ARGS_INTRODUCED_WITH(hetrt_error_message_args_t, code);
HETRT_SDK_ARGS_INTRODUCED_WITH(hetrt_error_destroy_args_t, error);
HETRT_SDK_ARGS_INTRODUCED_WITH(hetrt_instance_create_args_t, instance);
HETRT_SDK_ARGS_INTRODUCED_WITH(hetrt_instance_destroy_args_t, self);
HETRT_SDK_ARGS_INTRODUCED_WITH(hetrt_set_option_args_t, value);
HETRT_SDK_ARGS_INTRODUCED_WITH(hetrt_global_functions_args_t, num_functions);
HETRT_SDK_ARGS_INTRODUCED_WITH(hetrt_device_count_args_t, unavailable_reason);
HETRT_SDK_ARGS_INTRODUCED_WITH(hetrt_device_attribute_args_t, string);
HETRT_SDK_ARGS_INTRODUCED_WITH(hetrt_memory_stats_args_t, num_allocations);  // 2.3 appended failed_frees
HETRT_SDK_ARGS_INTRODUCED_WITH(hetrt_allocate_args_t, host_pointer);
HETRT_SDK_ARGS_INTRODUCED_WITH(hetrt_free_args_t, kind);
HETRT_SDK_ARGS_INTRODUCED_WITH(hetrt_can_copy_args_t, can_copy);
HETRT_SDK_ARGS_INTRODUCED_WITH(hetrt_copy_args_t, flags);
HETRT_SDK_ARGS_INTRODUCED_WITH(hetrt_stream_create_args_t, stream);
HETRT_SDK_ARGS_INTRODUCED_WITH(hetrt_stream_args_t, stream);
HETRT_SDK_ARGS_INTRODUCED_WITH(hetrt_stream_wait_event_args_t, event);
HETRT_SDK_ARGS_INTRODUCED_WITH(hetrt_stream_current_args_t, previous);
HETRT_SDK_ARGS_INTRODUCED_WITH(hetrt_event_create_args_t, event);
HETRT_SDK_ARGS_INTRODUCED_WITH(hetrt_event_record_args_t, stream);
HETRT_SDK_ARGS_INTRODUCED_WITH(hetrt_event_args_t, complete);
HETRT_SDK_ARGS_INTRODUCED_WITH(hetrt_event_elapsed_args_t, milliseconds);
HETRT_SDK_ARGS_INTRODUCED_WITH(hetrt_event_timestamp_args_t, device_ns);
HETRT_SDK_ARGS_INTRODUCED_WITH(hetrt_device_clock_args_t, uncertainty_ns);
HETRT_SDK_ARGS_INTRODUCED_WITH(hetrt_workspace_args_t, data);
HETRT_SDK_ARGS_INTRODUCED_WITH(hetrt_set_device_args_t, device);
HETRT_SDK_ARGS_INTRODUCED_WITH(hetrt_module_load_args_t, consumed);
HETRT_SDK_ARGS_INTRODUCED_WITH(hetrt_module_get_function_args_t, found);
HETRT_SDK_ARGS_INTRODUCED_WITH(hetrt_module_list_functions_args_t, count);
HETRT_SDK_ARGS_INTRODUCED_WITH(hetrt_module_save_args_t, size);
HETRT_SDK_ARGS_INTRODUCED_WITH(hetrt_module_destroy_args_t, module);
HETRT_SDK_ARGS_INTRODUCED_WITH(hetrt_parallel_launch_args_t, failed_task);
HETRT_SDK_ARGS_INTRODUCED_WITH(hetrt_parallel_barrier_args_t, env);
HETRT_SDK_ARGS_INTRODUCED_WITH(hetrt_parallel_num_threads_args_t, num_threads);
// ABI 2.1
HETRT_SDK_ARGS_INTRODUCED_WITH(hetrt_module_sample_args_t, num_arguments);
HETRT_SDK_ARGS_INTRODUCED_WITH(hetrt_whole_model_accepts_args_t, reason);
HETRT_SDK_ARGS_INTRODUCED_WITH(hetrt_whole_model_create_args_t, model);
HETRT_SDK_ARGS_INTRODUCED_WITH(hetrt_whole_model_args_t, model);
HETRT_SDK_ARGS_INTRODUCED_WITH(hetrt_whole_model_io_count_args_t, num_outputs);
HETRT_SDK_ARGS_INTRODUCED_WITH(hetrt_whole_model_io_info_args_t, nbytes);
HETRT_SDK_ARGS_INTRODUCED_WITH(hetrt_whole_model_tensor_args_t, nbytes);
HETRT_SDK_ARGS_INTRODUCED_WITH(hetrt_whole_model_report_args_t, text);
HETRT_SDK_ARGS_INTRODUCED_WITH(hetrt_whole_model_project_args_t, summary);
HETRT_SDK_ARGS_INTRODUCED_WITH(hetrt_whole_model_project_run_args_t, output);

// The smallest struct_size a plugin accepts for Args.
template <class Args>
inline constexpr size_t kArgsMinSize = ArgsIntroduced<Args>::kSize;

// `field` of the caller's struct, or `fallback` when the caller's (older)
// struct ends before it. For a field a later minor appended whose absence
// must mean something other than zero.
template <class Args, class Field>
Field ArgsFieldOr(const Args* args, Field Args::*field, Field fallback) noexcept {
  const auto* base = reinterpret_cast<const unsigned char*>(args);
  const auto* at = reinterpret_cast<const unsigned char*>(&(args->*field));
  return args->struct_size >= static_cast<size_t>(at - base) + sizeof(Field) ? args->*field : fallback;
}

}  // namespace hetrt::sdk
