// Module-table helpers shared by plugins whose modules hold a list of
// function names.
#pragma once

#include <span>
#include <vector>

#include "hetrt/plugin_abi.h"

namespace hetrt::sdk {

// list_functions: writes up to args->capacity of `names` (module-owned) and
// sets the total count.
inline void ListFunctionNames(const std::vector<const char*>& names, hetrt_module_list_functions_args_t* args) {
  for (size_t i = 0; i < names.size() && i < args->capacity && args->names; ++i) args->names[i] = names[i];
  args->count = names.size();
}

// Arguments of a module.sample (ABI 2.1): a device buffer with the bytes it
// starts with (NULL: zeros) and the bytes it must hold after the call (NULL:
// not checked), and an integer.
inline hetrt_module_sample_argument_t SampleBuffer(uint64_t nbytes, const void* input, const void* expected) {
  hetrt_module_sample_argument_t arg{};
  arg.type_code = HETRT_TYPE_HANDLE;
  arg.nbytes = nbytes;
  arg.input = static_cast<const uint8_t*>(input);
  arg.expected = static_cast<const uint8_t*>(expected);
  return arg;
}

inline hetrt_module_sample_argument_t SampleInt(int64_t value) {
  hetrt_module_sample_argument_t arg{};
  arg.type_code = HETRT_TYPE_INT;
  arg.value.v_int64 = value;
  return arg;
}

// Fills module.sample's outputs (all of them must outlive the instance:
// static data serves).
inline void SetSample(hetrt_module_sample_args_t* args, const char* type_key, std::span<const uint8_t> blob,
                      const char* function_name, std::span<const hetrt_module_sample_argument_t> arguments) {
  args->type_key = type_key;
  args->data = blob.data();
  args->size = blob.size();
  args->function_name = function_name;
  args->arguments = arguments.data();
  args->num_arguments = arguments.size();
}

}  // namespace hetrt::sdk
