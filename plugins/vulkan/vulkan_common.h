// Shared pieces of the Vulkan plugin: errors, the entry-point guard (from the
// SDK), and // the buffer that DLTensor.data points to for Vulkan memory.
#pragma once

#include <vulkan/vulkan.h>

#include <string>

#include "hetrt/plugin_abi.h"
#include "hetrt/sdk/plugin.h"
#include "vulkan_attributes.h"

namespace hetrt::vulkan {

// Every entry point is wrapped: args checked, no exception crosses the ABI.
HETRT_SDK_PLUGIN_LABEL("Vulkan plugin");

// A Vulkan info struct with its sType set and every other member zero, the
// state the Vulkan spec expects before the caller fills what matters.
template <typename T>
T VkStruct(VkStructureType type) {
  T info{};
  info.sType = type;
  return info;
}

// "vkAllocateMemory failed: VK_ERROR_OUT_OF_DEVICE_MEMORY (-2)"
hetrt_error_t* VkError(const std::string& call, VkResult result);
const char* VkResultName(VkResult result);

struct StreamCore;

// What a Vulkan tensor's `data` points to: TVM host code hands this pointer to
// the kernel launcher, which binds `buffer` as a storage buffer. The magic
// number catches a host pointer passed where a Vulkan buffer was expected.
inline constexpr uint32_t kBufferMagic = 0x4b4c5648;  // "HVLK"
struct Buffer {
  uint32_t magic = kBufferMagic;
  int32_t kind = 0;  // hetrt_memory_kind_t
  int device_id = 0;
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  uint64_t size = 0;       // bytes asked for (the VkBuffer holds at least one)
  void* mapped = nullptr;  // persistent host mapping, where the memory type is host-visible and coherent
};

}  // namespace hetrt::vulkan
