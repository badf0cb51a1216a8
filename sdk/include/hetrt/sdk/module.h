// Module-table helpers shared by plugins whose modules hold a list of
// function names.
#pragma once

#include <vector>

#include "hetrt/plugin_abi.h"

namespace hetrt::sdk {

// list_functions: writes up to args->capacity of `names` (module-owned) and
// sets the total count.
inline void ListFunctionNames(const std::vector<const char*>& names, hetrt_module_list_functions_args_t* args) {
  for (size_t i = 0; i < names.size() && i < args->capacity && args->names; ++i) args->names[i] = names[i];
  args->count = names.size();
}

}  // namespace hetrt::sdk
