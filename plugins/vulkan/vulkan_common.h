// Shared pieces of the Vulkan plugin: error values, the entry-point guard, and
// the buffer that DLTensor.data points to for Vulkan memory.
#pragma once

#include <vulkan/vulkan.h>

#include <string>

#include "hetrt/plugin_abi.h"
#include "vulkan_attributes.h"

struct hetrt_error {
  hetrt_status_code_t code;
  std::string message;
};

namespace hetrt::vulkan {

hetrt_error_t* MakeError(hetrt_status_code_t code, std::string message);
// "vkAllocateMemory failed: VK_ERROR_OUT_OF_DEVICE_MEMORY (-2)"
hetrt_error_t* VkError(const std::string& call, VkResult result);
const char* VkResultName(VkResult result);
// The error for the exception being handled (call only inside a catch block).
hetrt_error_t* CurrentExceptionError() noexcept;
// A static error that error_destroy leaves alone: what remains when even
// allocating an error value fails.
extern hetrt_error kOutOfMemory;

// Wraps an entry point: checks the args struct holds every field of this ABI
// version (and `self` where the struct has one), and turns any C++ exception
// into an error value so that none crosses the C boundary.
template <auto F>
struct Entry;
template <class A, hetrt_error_t* (*F)(A*)>
struct Entry<F> {
  static hetrt_error_t* Call(A* args) noexcept {
    try {
      if (args == nullptr || args->struct_size < sizeof(A))
        return MakeError(HETRT_STATUS_INVALID_ARGUMENT, "NULL or too small args struct (struct_size < " +
                                                            std::to_string(sizeof(A)) + ")");
      if constexpr (requires { args->self; })
        if (args->self == nullptr) return MakeError(HETRT_STATUS_INVALID_ARGUMENT, "NULL instance (self)");
      return F(args);
    } catch (...) {
      return CurrentExceptionError();
    }
  }
};

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
  uint64_t size = 0;     // bytes asked for (the VkBuffer holds at least one)
  void* mapped = nullptr;  // persistent host mapping, where the memory type is host-visible and coherent
  // Workspace: the stream it was last freed on. TVM host code frees workspace
  // right after recording the kernel that uses it, so a buffer is reused only
  // on that same in-order stream.
  const StreamCore* freed_on = nullptr;
};

}  // namespace hetrt::vulkan
