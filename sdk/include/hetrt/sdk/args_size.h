// The smallest struct_size a plugin accepts for each args struct, as C++
// templates over the <type>_MIN_SIZE constants plugin_abi.h declares beside
// each struct (the one place that says which field ended a struct in the minor
// that introduced it). An older core sends exactly that size; a newer one
// sends more (fields a later minor appended), which the plugin ignores until
// HETRT_ARGS_HAS (or sdk::ArgsFieldOr) says the caller's struct holds them.
#pragma once

#include <cstddef>

#include "hetrt/plugin_abi.h"

namespace hetrt::sdk {

template <class Args>
struct ArgsIntroduced;

// Reads the <type>_MIN_SIZE that plugin_abi.h declares beside the struct.
#define HETRT_SDK_ARGS_MIN_SIZE_OF(type)                                  \
  template <>                                                           \
  struct ArgsIntroduced<type> {                                         \
    static constexpr size_t kSize = static_cast<size_t>(type##_MIN_SIZE); \
  }

// ABI 2.0
HETRT_SDK_ARGS_MIN_SIZE_OF(hetrt_error_message_args_t);
HETRT_SDK_ARGS_MIN_SIZE_OF(hetrt_error_destroy_args_t);
HETRT_SDK_ARGS_MIN_SIZE_OF(hetrt_instance_create_args_t);
HETRT_SDK_ARGS_MIN_SIZE_OF(hetrt_instance_destroy_args_t);
HETRT_SDK_ARGS_MIN_SIZE_OF(hetrt_set_option_args_t);
HETRT_SDK_ARGS_MIN_SIZE_OF(hetrt_global_functions_args_t);
HETRT_SDK_ARGS_MIN_SIZE_OF(hetrt_device_count_args_t);
HETRT_SDK_ARGS_MIN_SIZE_OF(hetrt_device_attribute_args_t);
HETRT_SDK_ARGS_MIN_SIZE_OF(hetrt_memory_stats_args_t);  // 2.3 appended failed_frees
HETRT_SDK_ARGS_MIN_SIZE_OF(hetrt_allocate_args_t);
HETRT_SDK_ARGS_MIN_SIZE_OF(hetrt_free_args_t);
HETRT_SDK_ARGS_MIN_SIZE_OF(hetrt_can_copy_args_t);
HETRT_SDK_ARGS_MIN_SIZE_OF(hetrt_copy_args_t);
HETRT_SDK_ARGS_MIN_SIZE_OF(hetrt_stream_create_args_t);
HETRT_SDK_ARGS_MIN_SIZE_OF(hetrt_stream_args_t);
HETRT_SDK_ARGS_MIN_SIZE_OF(hetrt_stream_wait_event_args_t);
HETRT_SDK_ARGS_MIN_SIZE_OF(hetrt_stream_current_args_t);
HETRT_SDK_ARGS_MIN_SIZE_OF(hetrt_event_create_args_t);
HETRT_SDK_ARGS_MIN_SIZE_OF(hetrt_event_record_args_t);
HETRT_SDK_ARGS_MIN_SIZE_OF(hetrt_event_args_t);
HETRT_SDK_ARGS_MIN_SIZE_OF(hetrt_event_elapsed_args_t);
HETRT_SDK_ARGS_MIN_SIZE_OF(hetrt_event_timestamp_args_t);
HETRT_SDK_ARGS_MIN_SIZE_OF(hetrt_device_clock_args_t);
HETRT_SDK_ARGS_MIN_SIZE_OF(hetrt_workspace_args_t);
HETRT_SDK_ARGS_MIN_SIZE_OF(hetrt_set_device_args_t);
HETRT_SDK_ARGS_MIN_SIZE_OF(hetrt_module_load_args_t);
HETRT_SDK_ARGS_MIN_SIZE_OF(hetrt_module_get_function_args_t);
HETRT_SDK_ARGS_MIN_SIZE_OF(hetrt_module_list_functions_args_t);
HETRT_SDK_ARGS_MIN_SIZE_OF(hetrt_module_save_args_t);
HETRT_SDK_ARGS_MIN_SIZE_OF(hetrt_module_destroy_args_t);
HETRT_SDK_ARGS_MIN_SIZE_OF(hetrt_parallel_launch_args_t);
HETRT_SDK_ARGS_MIN_SIZE_OF(hetrt_parallel_barrier_args_t);
HETRT_SDK_ARGS_MIN_SIZE_OF(hetrt_parallel_num_threads_args_t);

// ABI 2.1
HETRT_SDK_ARGS_MIN_SIZE_OF(hetrt_module_sample_args_t);
HETRT_SDK_ARGS_MIN_SIZE_OF(hetrt_whole_model_accepts_args_t);
HETRT_SDK_ARGS_MIN_SIZE_OF(hetrt_whole_model_create_args_t);
HETRT_SDK_ARGS_MIN_SIZE_OF(hetrt_whole_model_args_t);
HETRT_SDK_ARGS_MIN_SIZE_OF(hetrt_whole_model_io_count_args_t);
HETRT_SDK_ARGS_MIN_SIZE_OF(hetrt_whole_model_io_info_args_t);
HETRT_SDK_ARGS_MIN_SIZE_OF(hetrt_whole_model_tensor_args_t);
HETRT_SDK_ARGS_MIN_SIZE_OF(hetrt_whole_model_report_args_t);
HETRT_SDK_ARGS_MIN_SIZE_OF(hetrt_whole_model_project_args_t);
HETRT_SDK_ARGS_MIN_SIZE_OF(hetrt_whole_model_project_run_args_t);
// ABI 2.2
HETRT_SDK_ARGS_MIN_SIZE_OF(hetrt_whole_model_sample_args_t);

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
