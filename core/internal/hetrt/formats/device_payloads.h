// Device-module payloads across TVM eras (docs/tvm-ffi.md (e)). Plugins read
// the v0.18 form (tvm-formats.md (d), (i)); TVM v0.21+ adds a field to every
// FunctionInfo (arg_extra_tags), v0.24+ wraps each Vulkan shader in a length
// and renames launch tags tir.* to tirx.*. These convert between the two, so
// the plugins keep their ABI and their readers.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hetrt/base/status.h"

namespace hetrt {

// Whether the payloads of `kind` differ between the eras (cuda, opencl, vulkan).
bool HasFfiDevicePayloadForm(std::string_view kind);

// A v0.21+ payload of `kind` in the v0.18 form. Refused, by name: TensorMap
// (CUDA TMA) arguments, launch flags and cluster dimensions the v0.18 form
// cannot express, CUDA C++ source ("cuda" format), a Vulkan shader whose
// wrapper length is not 12 + 4 x its word count, trailing bytes.
Result<std::vector<uint8_t>> DevicePayloadToPackedForm(std::string_view kind, std::span<const uint8_t> payload,
                                                       const std::string& source);

// The other way (hetrt's exporter writing a v0.22+ library): every
// arg_extra_tags 0, Vulkan shaders wrapped when `wrap_vulkan_shaders` (v0.24+).
Result<std::vector<uint8_t>> DevicePayloadToFfiForm(std::string_view kind, std::span<const uint8_t> payload,
                                                    bool wrap_vulkan_shaders, const std::string& source);

}  // namespace hetrt
