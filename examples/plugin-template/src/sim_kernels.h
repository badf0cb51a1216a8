// The simulated accelerator's "compiled kernels": host functions that work on
// device memory only through the address space, the way a real device's
// kernels only see device memory. A module names the kernels it uses.
#pragma once

#include <string_view>

#include "sim_instance.h"

namespace sim {

// A kernel with TVM's packed-function signature minus the resource: the
// instance whose memory its buffer arguments live in.
using KernelFn = int32_t (*)(hetrt_instance* self, hetrt_value_t* args, int32_t* codes, int32_t num_args);

// NULL when the plugin has no kernel of that name.
KernelFn FindKernel(std::string_view name);

}  // namespace sim
