// Modules of type_key "cuda" (TVM's CUDA module blob): loaded lazily per
// device with cuModuleLoadDataEx, and the kernel launcher that TVM host code
// calls through TVMFuncCall.
#pragma once

#include "cuda_common.h"

namespace hetrt::cuda {

extern const hetrt_module_api_t kModuleApi;

}  // namespace hetrt::cuda
