// Modules of type_key "vulkan" (TVM v0.18's Vulkan module blob): the format,
// read and written byte for byte; SPIR-V validated with spirv-tools before any
// driver sees it; compute pipelines built lazily per device (through the
// device's pipeline cache); and the kernel launcher TVM host code calls.
#pragma once

#include "vulkan_common.h"

namespace hetrt::vulkan {

extern const hetrt_module_api_t kModuleApi;

}  // namespace hetrt::vulkan
