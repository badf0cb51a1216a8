// Modules of type_key "opencl" (TVM's OpenCL module blob): the format, lazy
// per-device program builds with an optional on-disk binary cache, and the
// kernel launcher that TVM host code calls through TVMFuncCall.
#pragma once

#include "opencl_common.h"

namespace hetrt::opencl {

extern const hetrt_module_api_t kModuleApi;

}  // namespace hetrt::opencl
