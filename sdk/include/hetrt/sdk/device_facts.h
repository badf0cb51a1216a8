// What a device is, as the device_attribute entry reports it: a plugin fills
// one DeviceFacts per device when it discovers it and answers every standard
// attribute from it, so each backend reports the same attribute the same way,
// and an attribute a device does not know is NOT_FOUND with the same message
// everywhere (plugin_abi.h: hetrt_device_attribute_t).
#pragma once

#include <cstdint>
#include <string>

#include "hetrt/sdk/error.h"

namespace hetrt::sdk {

struct DeviceFacts {
  static constexpr int64_t kUnknown = -1;

  // Strings: "" is unknown. The plugin hands out pointers into them, so they
  // stay unchanged while the instance lives.
  std::string name;                        // HETRT_DEVICE_ATTR_NAME, "<model>, driver <version>"
  std::string driver_version;              // HETRT_DEVICE_ATTR_DRIVER_VERSION
  std::string compute_version;             // HETRT_DEVICE_ATTR_COMPUTE_VERSION, "9.0"
  int64_t host_unified_memory = kUnknown;  // 1: device memory is host memory
  int64_t total_memory = kUnknown;         // bytes
  int64_t max_threads_per_block = kUnknown;
  int64_t warp_size = kUnknown;
  int64_t max_shared_memory_per_block = kUnknown;  // bytes
  int64_t multiprocessor_count = kUnknown;
  int64_t max_clock_rate_khz = kUnknown;
  int64_t copy_streams = kUnknown;   // 1: copies on their own streams overlap compute
  int64_t max_alignment = kUnknown;  // bytes, honoured by allocate for every memory kind

  // Fills args->string or args->value; NOT_FOUND naming `where` ("cuda:0")
  // and the attribute when the device does not know it.
  hetrt_error_t* Answer(hetrt_device_attribute_args_t* args, const std::string& where) const noexcept {
    const std::string* text = nullptr;
    int64_t value = kUnknown;
    switch (args->attribute) {
      case HETRT_DEVICE_ATTR_NAME: text = &name; break;
      case HETRT_DEVICE_ATTR_DRIVER_VERSION: text = &driver_version; break;
      case HETRT_DEVICE_ATTR_COMPUTE_VERSION: text = &compute_version; break;
      case HETRT_DEVICE_ATTR_HOST_UNIFIED_MEMORY: value = host_unified_memory; break;
      case HETRT_DEVICE_ATTR_TOTAL_MEMORY: value = total_memory; break;
      case HETRT_DEVICE_ATTR_MAX_THREADS_PER_BLOCK: value = max_threads_per_block; break;
      case HETRT_DEVICE_ATTR_WARP_SIZE: value = warp_size; break;
      case HETRT_DEVICE_ATTR_MAX_SHARED_MEMORY_PER_BLOCK: value = max_shared_memory_per_block; break;
      case HETRT_DEVICE_ATTR_MULTIPROCESSOR_COUNT: value = multiprocessor_count; break;
      case HETRT_DEVICE_ATTR_MAX_CLOCK_RATE_KHZ: value = max_clock_rate_khz; break;
      case HETRT_DEVICE_ATTR_COPY_STREAMS: value = copy_streams; break;
      case HETRT_DEVICE_ATTR_MAX_ALIGNMENT: value = max_alignment; break;
      default: break;
    }
    if (text != nullptr && !text->empty()) {
      args->string = text->c_str();
      return nullptr;
    }
    if (text == nullptr && value != kUnknown) {
      args->value = value;
      return nullptr;
    }
    try {
      return MakeError(HETRT_STATUS_NOT_FOUND,
                       where + " does not report device attribute " + std::to_string(args->attribute));
    } catch (...) {
      return &g_out_of_memory;
    }
  }
};

}  // namespace hetrt::sdk
