#include "vulkan_device.h"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <thread>

// An event: a value on the timeline of the stream it was last recorded on
// (complete once the semaphore reaches it), plus a timestamp query for TIMING
// events. The stream's state is shared, so the event outlives the stream.
struct hetrt_event {
  hetrt::vulkan::Device* device = nullptr;
  uint32_t flags = 0;
  VkQueryPool query = VK_NULL_HANDLE;  // TIMING events on devices with timestamps
  std::shared_ptr<hetrt::vulkan::StreamCore> stream;  // NULL until recorded
  uint64_t value = 0;
  bool stamped = false;  // the last record wrote a timestamp
};

namespace hetrt::vulkan {
namespace {

// The calling thread's current device and streams, per instance.
using Current = sdk::ThreadCurrent<hetrt_stream>;

uint64_t MonotonicNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ULL + static_cast<uint64_t>(ts.tv_nsec);
}

std::string VersionString(uint32_t v) {
  return std::to_string(VK_API_VERSION_MAJOR(v)) + "." + std::to_string(VK_API_VERSION_MINOR(v)) + "." +
         std::to_string(VK_API_VERSION_PATCH(v));
}

hetrt_error_t* CheckDevice(hetrt_instance* inst, DLDevice device, Device** out) {
  if (device.device_type != kDLVulkan)
    return MakeError(HETRT_STATUS_INVALID_ARGUMENT, "not a Vulkan device (type " + std::to_string(device.device_type) + ")");
  Device* d = inst->at(device.device_id);
  if (d == nullptr)
    return MakeError(HETRT_STATUS_NOT_FOUND, "no Vulkan device " + std::to_string(device.device_id) + " (" +
                                                 std::to_string(inst->count()) + " found)");
  *out = d;
  return nullptr;
}

// The state of `stream` on `d` (NULL: d's default stream).
hetrt_error_t* StreamOf(Device* d, hetrt_stream* stream, StreamCore** out) {
  if (stream != nullptr && stream->core->device != d)
    return MakeError(HETRT_STATUS_INVALID_ARGUMENT, "the stream belongs to another Vulkan device than " + d->name);
  *out = stream ? stream->core.get() : d->default_stream.get();
  return nullptr;
}

// ---- Memory ----

int FindMemoryType(const Device& d, uint32_t allowed, VkMemoryPropertyFlags required) {
  for (uint32_t i = 0; i < d.memory.memoryTypeCount; ++i)
    if ((allowed & (1u << i)) && (d.memory.memoryTypes[i].propertyFlags & required) == required) return static_cast<int>(i);
  return -1;
}

constexpr VkBufferUsageFlags kBufferUsage =
    VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
constexpr VkMemoryPropertyFlags kMappable = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;

// A buffer with its own memory of `type`, mapped for its lifetime when `map`.
hetrt_error_t* CreateBuffer(Device* d, uint64_t nbytes, VkBufferUsageFlags usage, int type, bool map, Buffer* out) {
  VkBufferCreateInfo info{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  info.size = std::max<uint64_t>(nbytes, 4);  // Vulkan refuses empty buffers
  info.usage = usage;
  info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  VkResult r = vkCreateBuffer(d->handle, &info, nullptr, &out->buffer);
  if (r != VK_SUCCESS) return VkError("vkCreateBuffer (" + std::to_string(nbytes) + " bytes)", r);
  VkMemoryRequirements req{};
  vkGetBufferMemoryRequirements(d->handle, out->buffer, &req);
  auto fail = [&](hetrt_error_t* e) {
    if (out->memory) vkFreeMemory(d->handle, out->memory, nullptr);
    vkDestroyBuffer(d->handle, out->buffer, nullptr);
    out->buffer = VK_NULL_HANDLE;
    out->memory = VK_NULL_HANDLE;
    return e;
  };
  if (type < 0 || !(req.memoryTypeBits & (1u << type)))
    return fail(MakeError(HETRT_STATUS_INTERNAL, "no memory type of " + d->name + " holds this buffer"));
  VkMemoryAllocateInfo alloc{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  alloc.allocationSize = req.size;
  alloc.memoryTypeIndex = static_cast<uint32_t>(type);
  r = vkAllocateMemory(d->handle, &alloc, nullptr, &out->memory);
  if (r != VK_SUCCESS) {
    hetrt_error_t* e = VkError("vkAllocateMemory (" + std::to_string(nbytes) + " bytes on " + d->name + ")", r);
    e->code = HETRT_STATUS_RESOURCE_EXHAUSTED;
    return fail(e);
  }
  r = vkBindBufferMemory(d->handle, out->buffer, out->memory, 0);
  if (r != VK_SUCCESS) return fail(VkError("vkBindBufferMemory", r));
  if (map) {
    r = vkMapMemory(d->handle, out->memory, 0, VK_WHOLE_SIZE, 0, &out->mapped);
    if (r != VK_SUCCESS) return fail(VkError("vkMapMemory", r));
  }
  out->size = nbytes;
  out->device_id = d->id;
  return nullptr;
}

void CountAllocation(Device* d, uint64_t nbytes) {
  const uint64_t now = d->bytes_in_use.fetch_add(nbytes) + nbytes;
  d->num_allocations.fetch_add(1);
  uint64_t peak = d->peak_bytes.load();
  while (now > peak && !d->peak_bytes.compare_exchange_weak(peak, now)) {
  }
}

void CountFree(Device* d, uint64_t nbytes) {
  d->bytes_in_use.fetch_sub(nbytes);
  d->num_allocations.fetch_sub(1);
}

uint64_t Completed(const StreamCore* s) {
  uint64_t value = 0;
  if (vkGetSemaphoreCounterValue(s->device->handle, s->timeline, &value) != VK_SUCCESS) return 0;
  return value;
}

// Destroys deferred buffers whose streams have all passed them.
void ReleaseDeferred(Device* d) {
  std::vector<Buffer*> done;
  {
    std::lock_guard<std::mutex> lock(d->streams_mutex);
    auto& list = d->deferred;
    for (size_t i = list.size(); i-- > 0;) {
      bool passed = true;
      for (const auto& [stream, value] : list[i].waits) passed &= Completed(stream) >= value;
      if (!passed) continue;
      done.push_back(list[i].buffer);
      list[i] = std::move(list.back());
      list.pop_back();
    }
  }
  for (Buffer* b : done) {
    DestroyBuffer(d, b);
    delete b;
  }
}

// Frees `b` now, or once the work recorded on any stream before this call is done.
void FreeWhenUnused(Device* d, Buffer* b) {
  Device::Deferred entry{b, {}};
  {
    std::lock_guard<std::mutex> lock(d->streams_mutex);
    for (StreamCore* s : d->streams) {
      uint64_t value = 0;
      {
        std::lock_guard<std::mutex> stream_lock(s->mutex);
        value = s->nonempty ? s->open_value() : s->submitted;
      }
      if (value > Completed(s)) entry.waits.emplace_back(s, value);
    }
    if (!entry.waits.empty()) {
      d->deferred.push_back(std::move(entry));
      return;
    }
  }
  DestroyBuffer(d, b);
  delete b;
}

// ---- Submission and waiting ----

hetrt_error_t* StreamFailed(const StreamCore* s) {
  return MakeError(HETRT_STATUS_INTERNAL, "Vulkan work on " + s->device->name + " failed: " + s->error);
}

// Waits until `s` reached `value` (submitted already), polling `poll_us`
// microseconds before sleeping in the driver: work that ends within the
// budget is seen at once instead of after this thread's wake-up.
hetrt_error_t* WaitValue(StreamCore* s, uint64_t value, int64_t poll_us) {
  if (value == 0) return nullptr;
  {
    std::lock_guard<std::mutex> lock(s->mutex);
    if (value >= s->error_value) return StreamFailed(s);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::microseconds(poll_us);
  while (poll_us > 0 && Completed(s) < value && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  VkSemaphoreWaitInfo info{VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO};
  info.semaphoreCount = 1;
  info.pSemaphores = &s->timeline;
  info.pValues = &value;
  const VkResult r = vkWaitSemaphores(s->device->handle, &info, UINT64_MAX);
  return r == VK_SUCCESS ? nullptr : VkError("vkWaitSemaphores on " + s->device->name, r);
}

// Submits `s`'s open batch if it holds `value`, then waits for `value`.
hetrt_error_t* FlushAndWait(StreamCore* s, uint64_t value, int64_t poll_us) {
  {
    std::lock_guard<std::mutex> lock(s->mutex);
    if (value > s->submitted)
      if (hetrt_error_t* e = Flush(s)) return e;
  }
  return WaitValue(s, value, poll_us);
}

// Returns finished command buffers, transient chunks and descriptor pools to
// the stream's free lists (caller holds s->mutex).
void Reclaim(StreamCore* s) {
  const uint64_t done = Completed(s);
  while (!s->in_flight.empty() && s->in_flight.front().value <= done) {
    s->free_commands.push_back(s->in_flight.front().commands);
    s->in_flight.pop_front();
  }
  for (size_t i = s->retired_chunks.size(); i-- > 0;) {
    if (s->retired_chunks[i]->last_value > done) continue;
    s->retired_chunks[i]->used = 0;
    s->free_chunks.push_back(s->retired_chunks[i]);
    s->retired_chunks[i] = s->retired_chunks.back();
    s->retired_chunks.pop_back();
  }
  for (size_t i = s->retired_pools.size(); i-- > 0;) {
    if (s->retired_pools[i]->last_value > done) continue;
    vkResetDescriptorPool(s->device->handle, s->retired_pools[i]->handle, 0);
    s->free_pools.push_back(s->retired_pools[i]);
    s->retired_pools[i] = s->retired_pools.back();
    s->retired_pools.pop_back();
  }
}

hetrt_error_t* OpenBatch(StreamCore* s) {
  if (s->open != VK_NULL_HANDLE) return nullptr;
  Reclaim(s);
  VkCommandBuffer cb = VK_NULL_HANDLE;
  if (!s->free_commands.empty()) {
    cb = s->free_commands.back();
    s->free_commands.pop_back();
  } else {
    VkCommandBufferAllocateInfo info{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    info.commandPool = s->pool;
    info.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    info.commandBufferCount = 1;
    const VkResult r = vkAllocateCommandBuffers(s->device->handle, &info, &cb);
    if (r != VK_SUCCESS) return VkError("vkAllocateCommandBuffers", r);
  }
  VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  const VkResult r = vkBeginCommandBuffer(cb, &begin);  // resets it (pool made with RESET_COMMAND_BUFFER)
  if (r != VK_SUCCESS) {
    s->free_commands.push_back(cb);
    return VkError("vkBeginCommandBuffer", r);
  }
  s->open = cb;
  return nullptr;
}

void MemoryBarrier(VkCommandBuffer cb, VkPipelineStageFlags dst_stage, VkAccessFlags dst_access) {
  VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  barrier.dstAccessMask = dst_access;
  vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT, dst_stage, 0, 1,
                       &barrier, 0, nullptr, 0, nullptr);
}

// One command buffer submitted and waited for with a fence, outside any
// stream (device_clock's fallback).
hetrt_error_t* SubmitAndWait(Device* d, VkCommandBuffer cb, uint64_t* host_before, uint64_t* host_after) {
  VkFenceCreateInfo fence_info{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  VkFence fence = VK_NULL_HANDLE;
  VkResult r = vkCreateFence(d->handle, &fence_info, nullptr, &fence);
  if (r != VK_SUCCESS) return VkError("vkCreateFence", r);
  VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  submit.commandBufferCount = 1;
  submit.pCommandBuffers = &cb;
  {
    std::lock_guard<std::mutex> lock(d->queues[0].mutex);
    *host_before = MonotonicNs();
    r = vkQueueSubmit(d->queues[0].handle, 1, &submit, fence);
  }
  if (r == VK_SUCCESS) r = vkWaitForFences(d->handle, 1, &fence, VK_TRUE, UINT64_MAX);
  *host_after = MonotonicNs();
  vkDestroyFence(d->handle, fence, nullptr);
  d->submissions.fetch_add(1, std::memory_order_relaxed);
  return r == VK_SUCCESS ? nullptr : VkError("vkQueueSubmit (clock sample)", r);
}

// ---- Copies ----

// One side of a copy: a Vulkan buffer, host bytes, or both (HOST_PINNED
// memory: host bytes that a Vulkan buffer also covers).
struct Side {
  Buffer* buffer = nullptr;  // with `offset` into it
  uint64_t offset = 0;
  uint8_t* host = nullptr;   // already offset
  bool pinned = false;
};

hetrt_error_t* ResolveSide(hetrt_instance* inst, DLDevice device, const void* ptr, uint64_t offset, uint64_t nbytes,
                           const char* which, Side* out) {
  if (ptr == nullptr) return MakeError(HETRT_STATUS_INVALID_ARGUMENT, std::string("NULL copy ") + which);
  if (device.device_type != kDLCPU && device.device_type != kDLVulkan)
    return MakeError(HETRT_STATUS_INVALID_ARGUMENT, std::string("copy ") + which + " is neither a Vulkan nor a CPU device");
  auto range_error = [&](uint64_t size, const char* what) {
    return MakeError(HETRT_STATUS_OUT_OF_RANGE, std::string("copy ") + which + " range [" + std::to_string(offset) +
                                                    ", +" + std::to_string(nbytes) + ") exceeds the " +
                                                    std::to_string(size) + "-byte " + what);
  };
  {
    std::lock_guard<std::mutex> lock(inst->pinned_mutex);
    if (auto it = inst->pinned.find(const_cast<void*>(ptr)); it != inst->pinned.end()) {
      Buffer* b = it->second;
      if (offset > b->size || nbytes > b->size - offset) return range_error(b->size, "pinned buffer");
      *out = Side{b, offset, static_cast<uint8_t*>(b->mapped) + offset, true};
      return nullptr;
    }
  }
  if (device.device_type == kDLCPU) {
    out->host = const_cast<uint8_t*>(static_cast<const uint8_t*>(ptr)) + offset;
    return nullptr;
  }
  auto* b = const_cast<Buffer*>(static_cast<const Buffer*>(ptr));
  if (b->magic != kBufferMagic)
    return MakeError(HETRT_STATUS_INVALID_ARGUMENT, std::string("copy ") + which + " is not a Vulkan buffer of this plugin");
  if (offset > b->size || nbytes > b->size - offset) return range_error(b->size, "buffer");
  out->buffer = b;
  out->offset = offset;
  out->host = b->mapped ? static_cast<uint8_t*>(b->mapped) + offset : nullptr;
  return nullptr;
}

hetrt_error_t* RecordCopy(StreamCore* s, VkBuffer src, uint64_t src_offset, VkBuffer dst, uint64_t dst_offset,
                          uint64_t nbytes) {
  VkCommandBuffer cb = VK_NULL_HANDLE;
  if (hetrt_error_t* e = BeginWork(s, &cb)) return e;
  const VkBufferCopy region{src_offset, dst_offset, nbytes};
  vkCmdCopyBuffer(cb, src, dst, 1, &region);
  return EndWork(s);
}

// Host -> device buffer on `s`.
hetrt_error_t* CopyToDevice(hetrt_instance* inst, StreamCore* s, const Side& src, const Side& dst, uint64_t nbytes,
                            bool blocking) {
  const int64_t poll = inst->wait_poll_us.load(std::memory_order_relaxed);
  std::unique_lock<std::mutex> lock(s->mutex);
  // Direct: nothing earlier on the stream is pending, so writing the mapped
  // bytes now is in stream order.
  const bool idle = !s->nonempty && Completed(s) >= s->submitted;
  if (dst.host != nullptr && (idle || (blocking && !src.pinned))) {
    if (!idle) {
      if (hetrt_error_t* e = Flush(s)) return e;
      const uint64_t value = s->submitted;
      lock.unlock();
      if (hetrt_error_t* e = WaitValue(s, value, poll)) return e;
    }
    std::memcpy(dst.host, src.host, nbytes);
    return nullptr;
  }
  if (src.pinned) {
    if (hetrt_error_t* e = RecordCopy(s, src.buffer->buffer, src.offset, dst.buffer->buffer, dst.offset, nbytes)) return e;
  } else {
    VkBuffer staging = VK_NULL_HANDLE;
    uint64_t staging_offset = 0;
    uint8_t* host = nullptr;
    if (hetrt_error_t* e = TransientSlice(s, nbytes, 16, &staging, &staging_offset, &host)) return e;
    std::memcpy(host, src.host, nbytes);  // read now: earlier than the stream needs it, never later
    if (hetrt_error_t* e = RecordCopy(s, staging, staging_offset, dst.buffer->buffer, dst.offset, nbytes)) return e;
  }
  if (!blocking) return nullptr;
  if (hetrt_error_t* e = Flush(s)) return e;
  const uint64_t value = s->submitted;
  lock.unlock();
  return WaitValue(s, value, poll);
}

// Device buffer -> host on `s`. Into pageable host memory it always waits:
// the bytes can only be read once the stream has passed the copy.
hetrt_error_t* CopyToHost(hetrt_instance* inst, StreamCore* s, const Side& src, const Side& dst, uint64_t nbytes,
                          bool blocking) {
  const int64_t poll = inst->wait_poll_us.load(std::memory_order_relaxed);
  std::unique_lock<std::mutex> lock(s->mutex);
  const uint8_t* from = src.host;
  if (dst.pinned) {
    if (hetrt_error_t* e = RecordCopy(s, src.buffer->buffer, src.offset, dst.buffer->buffer, dst.offset, nbytes)) return e;
    if (!blocking) return nullptr;
    from = nullptr;
  } else if (from == nullptr) {
    VkBuffer staging = VK_NULL_HANDLE;
    uint64_t staging_offset = 0;
    uint8_t* host = nullptr;
    if (hetrt_error_t* e = TransientSlice(s, nbytes, 16, &staging, &staging_offset, &host)) return e;
    if (hetrt_error_t* e = RecordCopy(s, src.buffer->buffer, src.offset, staging, staging_offset, nbytes)) return e;
    from = host;
  }
  if (hetrt_error_t* e = Flush(s)) return e;
  const uint64_t value = s->submitted;
  lock.unlock();
  if (hetrt_error_t* e = WaitValue(s, value, poll)) return e;
  if (from != nullptr) std::memcpy(dst.host, from, nbytes);
  return nullptr;
}

// ---- Device table ----

hetrt_error_t* DeviceCount(hetrt_device_count_args_t* args) {
  if (args->device_type != kDLVulkan)
    return MakeError(HETRT_STATUS_INVALID_ARGUMENT, "the Vulkan plugin serves device type 7 only");
  args->count = args->self->count();
  args->unavailable_reason = args->count == 0 ? args->self->unavailable_reason().c_str() : nullptr;
  return nullptr;
}

hetrt_error_t* DeviceAttribute(hetrt_device_attribute_args_t* args) {
  Device* d = nullptr;
  if (hetrt_error_t* e = CheckDevice(args->self, args->device, &d)) return e;
  const VkPhysicalDeviceLimits& limits = d->props.limits;
  switch (args->attribute) {
    case HETRT_DEVICE_ATTR_NAME: args->string = d->display_name.c_str(); return nullptr;
    case HETRT_DEVICE_ATTR_DRIVER_VERSION: args->string = d->driver.c_str(); return nullptr;
    case HETRT_DEVICE_ATTR_COMPUTE_VERSION: args->string = d->api_version.c_str(); return nullptr;
    case HETRT_DEVICE_ATTR_HOST_UNIFIED_MEMORY: args->value = d->host_unified; return nullptr;
    case HETRT_DEVICE_ATTR_TOTAL_MEMORY: args->value = static_cast<int64_t>(d->total_memory); return nullptr;
    case HETRT_DEVICE_ATTR_MAX_THREADS_PER_BLOCK: args->value = limits.maxComputeWorkGroupInvocations; return nullptr;
    case HETRT_DEVICE_ATTR_MAX_SHARED_MEMORY_PER_BLOCK: args->value = limits.maxComputeSharedMemorySize; return nullptr;
    case HETRT_DEVICE_ATTR_WARP_SIZE: args->value = d->subgroup_size; return nullptr;
    case HETRT_DEVICE_ATTR_COPY_STREAMS: args->value = d->num_queues > 1; return nullptr;
    case HETRT_VULKAN_ATTR_VALIDATION_MESSAGES:
      args->value = static_cast<int64_t>(args->self->validation_messages.load());
      return nullptr;
    case HETRT_VULKAN_ATTR_VALIDATION_ENABLED: args->value = args->self->validation; return nullptr;
    case HETRT_VULKAN_ATTR_SUBMISSIONS: args->value = static_cast<int64_t>(d->submissions.load()); return nullptr;
    default:
      return MakeError(HETRT_STATUS_NOT_FOUND, "the Vulkan plugin does not know device attribute " +
                                                   std::to_string(static_cast<int>(args->attribute)));
  }
}

hetrt_error_t* MemoryStats(hetrt_memory_stats_args_t* args) {
  Device* d = nullptr;
  if (hetrt_error_t* e = CheckDevice(args->self, args->device, &d)) return e;
  args->bytes_in_use = d->bytes_in_use.load();
  args->peak_bytes_in_use = d->peak_bytes.load();
  args->bytes_limit = d->total_memory;
  args->num_allocations = d->num_allocations.load();
  return nullptr;
}

hetrt_error_t* Allocate(hetrt_allocate_args_t* args) {
  hetrt_instance* inst = args->self;
  Device* d = nullptr;
  if (hetrt_error_t* e = CheckDevice(inst, args->device, &d)) return e;
  ReleaseDeferred(d);
  int type = -1;
  bool map = true;
  switch (args->kind) {
    case HETRT_MEMORY_DEVICE:
      type = d->device_type;
      map = d->device_mappable && inst->direct_mapping.load(std::memory_order_relaxed);
      break;
    case HETRT_MEMORY_HOST_VISIBLE:
      type = d->visible_type;
      if (type < 0)
        return MakeError(HETRT_STATUS_UNIMPLEMENTED, d->name + " has no host-visible coherent memory type");
      break;
    case HETRT_MEMORY_HOST_PINNED:
      type = d->pinned_type;
      if (type < 0) return MakeError(HETRT_STATUS_UNIMPLEMENTED, d->name + " has no host-visible coherent memory type");
      break;
    default:
      return MakeError(HETRT_STATUS_INVALID_ARGUMENT, "unknown memory kind " + std::to_string(static_cast<int>(args->kind)));
  }
  auto buffer = std::make_unique<Buffer>();
  buffer->kind = args->kind;
  if (hetrt_error_t* e = CreateBuffer(d, args->nbytes, kBufferUsage, type, map, buffer.get())) return e;
  if (buffer->mapped && args->alignment > 1 && reinterpret_cast<uintptr_t>(buffer->mapped) % args->alignment != 0) {
    DestroyBuffer(d, buffer.get());
    return MakeError(HETRT_STATUS_INVALID_ARGUMENT, "the Vulkan driver maps memory at an address not aligned to " +
                                                        std::to_string(args->alignment) + " bytes");
  }
  if (args->kind == HETRT_MEMORY_HOST_PINNED) {
    try {
      std::lock_guard<std::mutex> lock(inst->pinned_mutex);
      inst->pinned.emplace(buffer->mapped, buffer.get());
    } catch (...) {
      DestroyBuffer(d, buffer.get());
      throw;
    }
    args->data = buffer->mapped;
  } else {
    args->data = buffer.get();
  }
  args->host_pointer = args->kind == HETRT_MEMORY_DEVICE ? nullptr : buffer->mapped;
  CountAllocation(d, args->nbytes);
  buffer.release();
  return nullptr;
}

hetrt_error_t* Free(hetrt_free_args_t* args) {
  hetrt_instance* inst = args->self;
  Device* d = nullptr;
  if (hetrt_error_t* e = CheckDevice(inst, args->device, &d)) return e;
  if (args->data == nullptr) return nullptr;
  Buffer* b = nullptr;
  if (args->kind == HETRT_MEMORY_HOST_PINNED) {
    std::lock_guard<std::mutex> lock(inst->pinned_mutex);
    auto it = inst->pinned.find(args->data);
    if (it == inst->pinned.end())
      return MakeError(HETRT_STATUS_INVALID_ARGUMENT, "not HOST_PINNED memory of this Vulkan instance");
    b = it->second;
    inst->pinned.erase(it);
  } else {
    b = static_cast<Buffer*>(args->data);
    if (b->magic != kBufferMagic || b->kind == HETRT_MEMORY_HOST_PINNED)
      return MakeError(HETRT_STATUS_INVALID_ARGUMENT, "not a Vulkan buffer of this instance");
  }
  Device* owner = inst->at(b->device_id);
  CountFree(owner, b->size);
  b->magic = 0;
  FreeWhenUnused(owner, b);
  ReleaseDeferred(owner);
  return nullptr;
}

hetrt_error_t* CanCopy(hetrt_can_copy_args_t* args) {
  hetrt_instance* inst = args->self;
  auto ours = [&](DLDevice x) { return x.device_type == kDLVulkan && inst->at(x.device_id) != nullptr; };
  auto host = [](DLDevice x) { return x.device_type == kDLCPU; };
  const DLDevice s = args->src_device, t = args->dst_device;
  args->can_copy = (ours(s) && (ours(t) || host(t))) || (host(s) && ours(t));
  return nullptr;
}

hetrt_error_t* Copy(hetrt_copy_args_t* a) {
  hetrt_instance* inst = a->self;
  Side src, dst;
  if (hetrt_error_t* e = ResolveSide(inst, a->src_device, a->src, a->src_offset, a->nbytes, "source", &src)) return e;
  if (hetrt_error_t* e = ResolveSide(inst, a->dst_device, a->dst, a->dst_offset, a->nbytes, "destination", &dst)) return e;
  const bool src_device = src.buffer && !src.pinned, dst_device = dst.buffer && !dst.pinned;
  if (!src_device && !dst_device)
    return MakeError(HETRT_STATUS_INVALID_ARGUMENT, "neither side of the copy is Vulkan device memory");
  Device* d = inst->at((src_device ? src : dst).buffer->device_id);
  StreamCore* s = nullptr;
  if (hetrt_error_t* e = StreamOf(d, a->stream, &s)) return e;
  const bool blocking = (a->flags & HETRT_COPY_BLOCKING) != 0;
  const int64_t poll = inst->wait_poll_us.load(std::memory_order_relaxed);
  if (a->nbytes == 0) {  // Vulkan refuses empty copies; still honour the ordering promise
    if (!blocking) return nullptr;
    std::unique_lock<std::mutex> lock(s->mutex);
    if (hetrt_error_t* e = Flush(s)) return e;
    const uint64_t value = s->submitted;
    lock.unlock();
    return WaitValue(s, value, poll);
  }
  if (src_device && dst_device) {
    Device* dd = inst->at(dst.buffer->device_id);
    if (dd == d) {
      std::unique_lock<std::mutex> lock(s->mutex);
      if (hetrt_error_t* e = RecordCopy(s, src.buffer->buffer, src.offset, dst.buffer->buffer, dst.offset, a->nbytes))
        return e;
      if (!blocking) return nullptr;
      if (hetrt_error_t* e = Flush(s)) return e;
      const uint64_t value = s->submitted;
      lock.unlock();
      return WaitValue(s, value, poll);
    }
    // Two devices share no memory: stage through host memory, blocking.
    std::vector<uint8_t> staging(a->nbytes);
    Side host{nullptr, 0, staging.data(), false};
    if (hetrt_error_t* e = CopyToHost(inst, s, src, host, a->nbytes, true)) return e;
    return CopyToDevice(inst, dd->default_stream.get(), host, dst, a->nbytes, true);
  }
  if (dst_device) return CopyToDevice(inst, s, src, dst, a->nbytes, blocking);
  return CopyToHost(inst, s, src, dst, a->nbytes, blocking);
}

// ---- Streams ----

hetrt_error_t* NewStreamCore(Device* d, Queue* queue, std::shared_ptr<StreamCore>* out) {
  auto s = std::make_shared<StreamCore>();
  s->device = d;
  s->queue = queue;
  VkCommandPoolCreateInfo pool{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  pool.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  pool.queueFamilyIndex = d->family;
  VkResult r = vkCreateCommandPool(d->handle, &pool, nullptr, &s->pool);
  if (r != VK_SUCCESS) return VkError("vkCreateCommandPool", r);
  VkSemaphoreTypeCreateInfo type{VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO};
  type.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE;
  VkSemaphoreCreateInfo info{VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO};
  info.pNext = &type;
  r = vkCreateSemaphore(d->handle, &info, nullptr, &s->timeline);
  if (r != VK_SUCCESS) return VkError("vkCreateSemaphore (timeline)", r);  // ~StreamCore frees the pool
  {
    std::lock_guard<std::mutex> lock(d->streams_mutex);
    d->streams.push_back(s.get());
  }
  *out = std::move(s);
  return nullptr;
}

hetrt_error_t* StreamCreate(hetrt_stream_create_args_t* args) {
  Device* d = nullptr;
  if (hetrt_error_t* e = CheckDevice(args->self, args->device, &d)) return e;
  // COPY streams get the second queue where the family has one: its copies
  // overlap compute on the first.
  Queue* queue = args->kind == HETRT_STREAM_COPY && d->num_queues > 1 ? &d->queues[1] : &d->queues[0];
  auto stream = std::make_unique<hetrt_stream>();
  if (hetrt_error_t* e = NewStreamCore(d, queue, &stream->core)) return e;
  args->stream = stream.release();
  return nullptr;
}

hetrt_error_t* StreamDestroy(hetrt_stream_args_t* args) {
  hetrt_stream* stream = args->stream;
  if (stream == nullptr) return nullptr;  // the default stream belongs to the device
  StreamCore* s = stream->core.get();
  // Forget it as this thread's current stream (other threads must reset theirs).
  Current::Forget(stream);
  uint64_t value = 0;
  hetrt_error_t* error = nullptr;
  {
    std::lock_guard<std::mutex> lock(s->mutex);
    error = Flush(s);
    value = s->submitted;
  }
  if (error == nullptr) error = WaitValue(s, value, 0);
  std::vector<std::shared_ptr<StreamCore>> held;  // released with no lock held: their destructors run here
  {
    std::lock_guard<std::mutex> lock(s->mutex);
    if (error == nullptr) held.swap(s->held);
  }
  // Its work done, workspace last freed on it is free for any stream.
  {
    std::lock_guard<std::mutex> lock(s->device->workspace.mutex);
    for (auto& list : s->device->workspace.free_lists)
      for (Buffer* b : list)
        if (b->freed_on == s) b->freed_on = nullptr;
  }
  ReleaseDeferred(s->device);
  delete stream;  // the state lives on while events recorded on it do
  return error;
}

hetrt_error_t* StreamSynchronize(hetrt_stream_args_t* args) {
  Device* d = nullptr;
  if (hetrt_error_t* e = CheckDevice(args->self, args->device, &d)) return e;
  StreamCore* s = nullptr;
  if (hetrt_error_t* e = StreamOf(d, args->stream, &s)) return e;
  uint64_t value = 0;
  {
    std::lock_guard<std::mutex> lock(s->mutex);
    if (hetrt_error_t* e = Flush(s)) return e;
    value = s->submitted;
    if (value >= s->error_value) return StreamFailed(s);
  }
  return WaitValue(s, value, args->self->wait_poll_us.load(std::memory_order_relaxed));
}

hetrt_error_t* StreamWaitEvent(hetrt_stream_wait_event_args_t* args) {
  Device* d = nullptr;
  if (hetrt_error_t* e = CheckDevice(args->self, args->device, &d)) return e;
  StreamCore* s = nullptr;
  if (hetrt_error_t* e = StreamOf(d, args->stream, &s)) return e;
  hetrt_event* event = args->event;
  if (event == nullptr) return MakeError(HETRT_STATUS_INVALID_ARGUMENT, "NULL event");
  StreamCore* source = event->stream.get();
  if (source == nullptr || event->value == 0) return nullptr;  // never recorded: complete
  if (source->device != d)
    return MakeError(HETRT_STATUS_UNIMPLEMENTED, "a Vulkan stream cannot wait for an event of another device: " +
                                                     source->device->name + " -> " + d->name);
  if (source == s) return nullptr;  // in order already
  // The signal must be submitted before a wait on it is.
  {
    std::lock_guard<std::mutex> lock(source->mutex);
    if (event->value > source->submitted)
      if (hetrt_error_t* e = Flush(source)) return e;
    if (event->value >= source->error_value) return StreamFailed(source);
  }
  if (Completed(source) >= event->value) return nullptr;
  std::lock_guard<std::mutex> lock(s->mutex);
  s->waits.emplace_back(source->timeline, event->value);
  s->nonempty = true;
  // The source's semaphore must outlive the batch that waits on it.
  if (std::find(s->held.begin(), s->held.end(), event->stream) == s->held.end()) s->held.push_back(event->stream);
  return nullptr;
}

hetrt_error_t* StreamSetCurrent(hetrt_stream_current_args_t* args) {
  const hetrt_instance* inst = args->self;
  Device* d = nullptr;
  if (hetrt_error_t* e = CheckDevice(args->self, args->device, &d)) return e;
  StreamCore* s = nullptr;
  if (hetrt_error_t* e = StreamOf(d, args->stream, &s)) return e;
  if (!Current::Set(inst->serial, args->device.device_id, args->stream, &args->previous))
    return Current::TableFull("Vulkan");
  return nullptr;
}

hetrt_error_t* StreamGetCurrent(hetrt_stream_current_args_t* args) {
  Device* d = nullptr;
  if (hetrt_error_t* e = CheckDevice(args->self, args->device, &d)) return e;
  args->stream = Current::Get(args->self->serial, args->device.device_id);
  return nullptr;
}

// ---- Events ----

hetrt_error_t* EventCreate(hetrt_event_create_args_t* args) {
  Device* d = nullptr;
  if (hetrt_error_t* e = CheckDevice(args->self, args->device, &d)) return e;
  auto event = std::make_unique<hetrt_event>();
  event->device = d;
  event->flags = args->flags;
  if ((args->flags & HETRT_EVENT_TIMING) && d->timestamp_mask != 0) {
    VkQueryPoolCreateInfo info{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
    info.queryType = VK_QUERY_TYPE_TIMESTAMP;
    info.queryCount = 1;
    const VkResult r = vkCreateQueryPool(d->handle, &info, nullptr, &event->query);
    if (r != VK_SUCCESS) return VkError("vkCreateQueryPool (timing event)", r);
  }
  args->event = event.release();
  return nullptr;
}

hetrt_error_t* EventDestroy(hetrt_event_args_t* args) {
  hetrt_event* e = args->event;
  if (e == nullptr) return nullptr;
  if (e->query) {
    // Its timestamp write may still be pending: wait for it first.
    if (e->stream && e->stamped) (void)FlushAndWait(e->stream.get(), e->value, 0);
    vkDestroyQueryPool(e->device->handle, e->query, nullptr);
  }
  delete e;
  return nullptr;
}

hetrt_error_t* EventRecord(hetrt_event_record_args_t* args) {
  Device* d = nullptr;
  if (hetrt_error_t* e = CheckDevice(args->self, args->device, &d)) return e;
  hetrt_event* event = args->event;
  if (event == nullptr) return MakeError(HETRT_STATUS_INVALID_ARGUMENT, "NULL event");
  if (event->device != d)
    return MakeError(HETRT_STATUS_INVALID_ARGUMENT, "the event belongs to another Vulkan device than " + d->name);
  StreamCore* s = nullptr;
  if (hetrt_error_t* e = StreamOf(d, args->stream, &s)) return e;
  std::lock_guard<std::mutex> lock(s->mutex);
  event->stamped = false;
  if (event->query) {
    if (hetrt_error_t* e = OpenBatch(s)) return e;
    vkCmdResetQueryPool(s->open, event->query, 0, 1);
    vkCmdWriteTimestamp(s->open, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, event->query, 0);
    s->nonempty = true;
    event->stamped = true;
  }
  // An event exists to be waited for: submit what it follows now, so the
  // device works while the host goes on (timing-only events of a profile do
  // not split the batch). An empty open batch adds nothing: the event is the
  // last submitted batch.
  if (!(event->flags & HETRT_EVENT_TIMING))
    if (hetrt_error_t* e = Flush(s)) return e;
  event->value = s->nonempty ? s->open_value() : s->submitted;
  event->stream = args->stream ? args->stream->core : d->default_stream;
  return nullptr;
}

hetrt_error_t* EventQuery(hetrt_event_args_t* args) {
  hetrt_event* e = args->event;
  if (e == nullptr) return MakeError(HETRT_STATUS_INVALID_ARGUMENT, "NULL event");
  args->complete = 1;
  StreamCore* s = e->stream.get();
  if (s == nullptr || e->value == 0) return nullptr;  // never recorded: complete
  {
    // Submitting never blocks, and a batch nobody submits would never complete.
    std::lock_guard<std::mutex> lock(s->mutex);
    if (e->value > s->submitted)
      if (hetrt_error_t* err = Flush(s)) return err;
    if (e->value >= s->error_value) return StreamFailed(s);
  }
  args->complete = Completed(s) >= e->value;
  return nullptr;
}

hetrt_error_t* EventSynchronize(hetrt_event_args_t* args) {
  hetrt_event* e = args->event;
  if (e == nullptr) return MakeError(HETRT_STATUS_INVALID_ARGUMENT, "NULL event");
  args->complete = 1;
  if (e->stream == nullptr) return nullptr;
  return FlushAndWait(e->stream.get(), e->value, args->self->wait_poll_us.load(std::memory_order_relaxed));
}

// The device time (ns) an event's timestamp query recorded, once it is done.
hetrt_error_t* EventTime(hetrt_event* e, uint64_t* ns) {
  if (e == nullptr || e->stream == nullptr) return MakeError(HETRT_STATUS_FAILED_PRECONDITION, "the event was never recorded");
  if (e->query == VK_NULL_HANDLE)
    return MakeError(e->device->timestamp_mask ? HETRT_STATUS_FAILED_PRECONDITION : HETRT_STATUS_UNIMPLEMENTED,
                     e->device->timestamp_mask ? "the event was not created with HETRT_EVENT_TIMING"
                                               : "the compute queue of " + e->device->name + " writes no timestamps");
  if (hetrt_error_t* err = FlushAndWait(e->stream.get(), e->value, 0)) return err;
  uint64_t ticks = 0;
  const VkResult r = vkGetQueryPoolResults(e->device->handle, e->query, 0, 1, sizeof ticks, &ticks, sizeof ticks,
                                           VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT);
  if (r != VK_SUCCESS) return VkError("vkGetQueryPoolResults", r);
  *ns = static_cast<uint64_t>(static_cast<double>(ticks & e->device->timestamp_mask) * e->device->timestamp_period);
  return nullptr;
}

hetrt_error_t* EventElapsed(hetrt_event_elapsed_args_t* args) {
  uint64_t t0 = 0, t1 = 0;
  if (hetrt_error_t* e = EventTime(args->start, &t0)) return e;
  if (hetrt_error_t* e = EventTime(args->end, &t1)) return e;
  args->milliseconds = static_cast<double>(static_cast<int64_t>(t1 - t0)) / 1e6;
  return nullptr;
}

hetrt_error_t* EventTimestamp(hetrt_event_timestamp_args_t* args) {
  return EventTime(args->event, &args->device_ns);
}

// VK_EXT_calibrated_timestamps reads both clocks at once; without it, a
// timestamp written by a lone command buffer lies between host readings taken
// before the submit and after the wait: keep the tightest of a few samples.
hetrt_error_t* DeviceClock(hetrt_device_clock_args_t* args) {
  Device* d = nullptr;
  if (hetrt_error_t* e = CheckDevice(args->self, args->device, &d)) return e;
  if (d->timestamp_mask == 0)
    return MakeError(HETRT_STATUS_UNIMPLEMENTED, "the compute queue of " + d->name + " writes no timestamps");
  uint64_t best = UINT64_MAX;
  if (d->calibrated != nullptr && args->self->calibrated_clock.load(std::memory_order_relaxed)) {
    const VkCalibratedTimestampInfoEXT domains[2] = {{VK_STRUCTURE_TYPE_CALIBRATED_TIMESTAMP_INFO_EXT, nullptr, VK_TIME_DOMAIN_DEVICE_EXT},
                                                     {VK_STRUCTURE_TYPE_CALIBRATED_TIMESTAMP_INFO_EXT, nullptr,
                                                      VK_TIME_DOMAIN_CLOCK_MONOTONIC_EXT}};
    for (int i = 0; i < 3; ++i) {
      uint64_t stamps[2] = {0, 0}, deviation = 0;
      const VkResult r = d->calibrated(d->handle, 2, domains, stamps, &deviation);
      if (r != VK_SUCCESS) return VkError("vkGetCalibratedTimestampsEXT", r);
      if (deviation < best) {
        best = deviation;
        args->device_ns = static_cast<uint64_t>(static_cast<double>(stamps[0] & d->timestamp_mask) * d->timestamp_period);
        args->host_ns = stamps[1];
        args->uncertainty_ns = deviation;
      }
    }
    return nullptr;
  }
  VkCommandPoolCreateInfo pool_info{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  pool_info.queueFamilyIndex = d->family;
  VkCommandPool pool = VK_NULL_HANDLE;
  VkQueryPool query = VK_NULL_HANDLE;
  VkResult r = vkCreateCommandPool(d->handle, &pool_info, nullptr, &pool);
  if (r != VK_SUCCESS) return VkError("vkCreateCommandPool", r);
  VkQueryPoolCreateInfo query_info{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
  query_info.queryType = VK_QUERY_TYPE_TIMESTAMP;
  query_info.queryCount = 1;
  hetrt_error_t* error = nullptr;
  r = vkCreateQueryPool(d->handle, &query_info, nullptr, &query);
  if (r != VK_SUCCESS) error = VkError("vkCreateQueryPool", r);
  for (int i = 0; i < 5 && error == nullptr; ++i) {
    VkCommandBufferAllocateInfo alloc{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    alloc.commandPool = pool;
    alloc.commandBufferCount = 1;
    VkCommandBuffer cb = VK_NULL_HANDLE;
    if ((r = vkAllocateCommandBuffers(d->handle, &alloc, &cb)) != VK_SUCCESS) {
      error = VkError("vkAllocateCommandBuffers", r);
      break;
    }
    VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    vkBeginCommandBuffer(cb, &begin);
    vkCmdResetQueryPool(cb, query, 0, 1);
    vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, query, 0);
    vkEndCommandBuffer(cb);
    uint64_t t0 = 0, t1 = 0, ticks = 0;
    if ((error = SubmitAndWait(d, cb, &t0, &t1)) != nullptr) break;
    r = vkGetQueryPoolResults(d->handle, query, 0, 1, sizeof ticks, &ticks, sizeof ticks,
                              VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT);
    if (r != VK_SUCCESS) {
      error = VkError("vkGetQueryPoolResults", r);
      break;
    }
    if (t1 - t0 < best) {
      best = t1 - t0;
      args->host_ns = t0 + (t1 - t0) / 2;
      args->device_ns = static_cast<uint64_t>(static_cast<double>(ticks & d->timestamp_mask) * d->timestamp_period);
      args->uncertainty_ns = (t1 - t0 + 1) / 2;
    }
  }
  {
    std::lock_guard<std::mutex> lock(d->queues[0].mutex);  // as ~StreamCore: let the submit thread finish
    vkQueueWaitIdle(d->queues[0].handle);
  }
  if (query) vkDestroyQueryPool(d->handle, query, nullptr);
  vkDestroyCommandPool(d->handle, pool, nullptr);
  return error;
}

// ---- Workspace pool ----

// Power-of-two size classes, at least 256 bytes; 64 means too large.
int SizeClass(uint64_t nbytes) { return nbytes <= 256 ? 8 : 64 - __builtin_clzll(nbytes - 1); }

hetrt_error_t* WorkspaceAlloc(hetrt_workspace_args_t* args) {
  Device* d = nullptr;
  if (hetrt_error_t* e = CheckDevice(args->self, args->device, &d)) return e;
  const int c = SizeClass(args->nbytes);
  if (c >= 48) return MakeError(HETRT_STATUS_RESOURCE_EXHAUSTED, "Vulkan workspace of " + std::to_string(args->nbytes) + " bytes");
  WorkspacePool& pool = d->workspace;
  const StreamCore* current = CurrentStream(args->self, d);
  {
    std::lock_guard<std::mutex> lock(pool.mutex);
    auto& list = pool.free_lists[static_cast<size_t>(c)];
    for (size_t k = list.size(); k-- > 0;) {
      // Freed on another live stream: its kernel may still be using it.
      if (list[k]->freed_on != current && list[k]->freed_on != nullptr) continue;
      args->data = list[k];
      list[k] = list.back();
      list.pop_back();
      return nullptr;
    }
  }
  auto b = std::make_unique<Buffer>();
  if (hetrt_error_t* e = CreateBuffer(d, uint64_t{1} << c, kBufferUsage, d->device_type, false, b.get())) return e;
  try {
    std::lock_guard<std::mutex> lock(pool.mutex);
    pool.all.push_back(b.get());
  } catch (...) {
    DestroyBuffer(d, b.get());
    throw;
  }
  args->data = b.release();
  return nullptr;
}

hetrt_error_t* WorkspaceFree(hetrt_workspace_args_t* args) {
  Device* d = nullptr;
  if (hetrt_error_t* e = CheckDevice(args->self, args->device, &d)) return e;
  auto* b = static_cast<Buffer*>(args->data);
  if (b == nullptr) return nullptr;
  const int c = SizeClass(b->size);
  if (b->magic != kBufferMagic || c >= 48 || b->size != uint64_t{1} << c || b->device_id != args->device.device_id)
    return MakeError(HETRT_STATUS_INVALID_ARGUMENT, "not a Vulkan workspace buffer of this device");
  b->freed_on = CurrentStream(args->self, d);
  std::lock_guard<std::mutex> lock(d->workspace.mutex);
  d->workspace.free_lists[static_cast<size_t>(c)].push_back(b);  // the pool still owns it via `all`
  return nullptr;
}

hetrt_error_t* SetDevice(hetrt_set_device_args_t* args) {
  const hetrt_instance* inst = args->self;
  Device* d = nullptr;
  if (hetrt_error_t* e = CheckDevice(args->self, args->device, &d)) return e;
  if (!Current::SetDevice(inst->serial, args->device.device_id)) return Current::TableFull("Vulkan");
  return nullptr;
}

}  // namespace

// ---- Recording (callers hold s->mutex) ----

hetrt_error_t* BeginWork(StreamCore* s, VkCommandBuffer* out) {
  if (hetrt_error_t* e = OpenBatch(s)) return e;
  // Each command reads what the ones before it in the batch wrote; batches
  // are ordered by waiting on the previous batch's value.
  if (s->work > 0)
    MemoryBarrier(s->open, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                  VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                      VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_UNIFORM_READ_BIT);
  ++s->work;
  s->nonempty = true;
  *out = s->open;
  return nullptr;
}

hetrt_error_t* EndWork(StreamCore* s) {
  const auto limit = s->device->inst->batch_limit.load(std::memory_order_relaxed);
  return limit > 0 && s->work >= static_cast<uint64_t>(limit) ? Flush(s) : nullptr;
}

hetrt_error_t* Flush(StreamCore* s) {
  if (!s->nonempty) return nullptr;
  Device* d = s->device;
  const uint64_t value = s->open_value();
  if (s->open != VK_NULL_HANDLE) {
    // The host reads what the batch wrote once it waited for the value.
    if (s->work > 0) MemoryBarrier(s->open, VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT | VK_ACCESS_HOST_WRITE_BIT);
    const VkResult r = vkEndCommandBuffer(s->open);
    if (r != VK_SUCCESS) {
      s->free_commands.push_back(s->open);
      s->open = VK_NULL_HANDLE;
      return VkError("vkEndCommandBuffer", r);
    }
  }
  // Waits: the stream's previous batch (in order), then other streams' events.
  std::vector<VkSemaphore>& semaphores = s->submit_semaphores;
  std::vector<uint64_t>& values = s->submit_values;
  std::vector<VkPipelineStageFlags>& stages = s->submit_stages;
  semaphores.clear();
  values.clear();
  if (s->submitted > 0) {
    semaphores.push_back(s->timeline);
    values.push_back(s->submitted);
  }
  for (const auto& [semaphore, v] : s->waits) {
    semaphores.push_back(semaphore);
    values.push_back(v);
  }
  stages.assign(semaphores.size(), VK_PIPELINE_STAGE_ALL_COMMANDS_BIT);
  VkTimelineSemaphoreSubmitInfo timeline{VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO};
  timeline.waitSemaphoreValueCount = static_cast<uint32_t>(values.size());
  timeline.pWaitSemaphoreValues = values.data();
  timeline.signalSemaphoreValueCount = 1;
  timeline.pSignalSemaphoreValues = &value;
  VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  submit.pNext = &timeline;
  submit.waitSemaphoreCount = static_cast<uint32_t>(semaphores.size());
  submit.pWaitSemaphores = semaphores.data();
  submit.pWaitDstStageMask = stages.data();
  submit.commandBufferCount = s->open != VK_NULL_HANDLE ? 1 : 0;
  submit.pCommandBuffers = &s->open;
  submit.signalSemaphoreCount = 1;
  submit.pSignalSemaphores = &s->timeline;
  VkResult r;
  {
    std::lock_guard<std::mutex> lock(s->queue->mutex);
    r = vkQueueSubmit(s->queue->handle, 1, &submit, VK_NULL_HANDLE);
  }
  d->submissions.fetch_add(1, std::memory_order_relaxed);
  if (s->open != VK_NULL_HANDLE) s->in_flight.push_back({value, s->open});
  s->open = VK_NULL_HANDLE;
  s->work = 0;
  s->nonempty = false;
  s->waits.clear();
  s->submitted = value;
  if (r != VK_SUCCESS) {
    // The batch will never signal: later waits see the error instead of hanging.
    if (s->error_value == UINT64_MAX) {
      s->error = std::string("vkQueueSubmit failed: ") + VkResultName(r) + " (" + std::to_string(r) + ")";
      s->error_value = value;
    }
    VkSemaphoreSignalInfo signal{VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO};
    signal.semaphore = s->timeline;
    signal.value = value;
    vkSignalSemaphore(d->handle, &signal);
    return StreamFailed(s);
  }
  return nullptr;
}

hetrt_error_t* TransientSlice(StreamCore* s, uint64_t size, uint64_t alignment, VkBuffer* buffer, uint64_t* offset,
                              uint8_t** host) {
  Device* d = s->device;
  alignment = std::max<uint64_t>(alignment, 16);
  auto fits = [&](const TransientChunk* c) { return ((c->used + alignment - 1) / alignment) * alignment + size <= c->size; };
  if (s->chunk == nullptr || !fits(s->chunk)) {
    if (s->chunk) {
      s->retired_chunks.push_back(s->chunk);
      s->chunk = nullptr;
    }
    Reclaim(s);
    for (size_t i = 0; i < s->free_chunks.size(); ++i) {
      if (s->free_chunks[i]->size < size) continue;
      s->chunk = s->free_chunks[i];
      s->free_chunks[i] = s->free_chunks.back();
      s->free_chunks.pop_back();
      break;
    }
    if (s->chunk == nullptr) {
      if (d->pinned_type < 0) return MakeError(HETRT_STATUS_UNIMPLEMENTED, d->name + " has no host-visible memory for staging");
      constexpr uint64_t kChunk = 1 << 20;
      auto chunk = std::make_unique<TransientChunk>();
      Buffer b;
      const uint64_t bytes = size <= kChunk ? kChunk : uint64_t{1} << (64 - __builtin_clzll(size - 1));
      if (hetrt_error_t* e = CreateBuffer(d, bytes, kBufferUsage | VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT, d->pinned_type,
                                          true, &b))
        return e;
      chunk->buffer = b.buffer;
      chunk->memory = b.memory;
      chunk->mapped = static_cast<uint8_t*>(b.mapped);
      chunk->size = bytes;
      s->chunk = chunk.release();
    }
  }
  TransientChunk* c = s->chunk;
  const uint64_t at = ((c->used + alignment - 1) / alignment) * alignment;
  c->used = at + size;
  c->last_value = s->open_value();
  *buffer = c->buffer;
  *offset = at;
  *host = c->mapped + at;
  return nullptr;
}

hetrt_error_t* AllocateDescriptorSet(StreamCore* s, VkDescriptorSetLayout layout, VkDescriptorSet* out) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (s->descriptors == nullptr) {
      Reclaim(s);
      if (!s->free_pools.empty()) {
        s->descriptors = s->free_pools.back();
        s->free_pools.pop_back();
      } else {
        constexpr uint32_t kSets = 256;
        const VkDescriptorPoolSize sizes[2] = {{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, kSets * 8},
                                               {VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER, kSets}};
        VkDescriptorPoolCreateInfo info{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
        info.maxSets = kSets;
        info.poolSizeCount = 2;
        info.pPoolSizes = sizes;
        auto pool = std::make_unique<DescriptorPool>();
        const VkResult r = vkCreateDescriptorPool(s->device->handle, &info, nullptr, &pool->handle);
        if (r != VK_SUCCESS) return VkError("vkCreateDescriptorPool", r);
        s->descriptors = pool.release();
      }
    }
    VkDescriptorSetAllocateInfo alloc{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
    alloc.descriptorPool = s->descriptors->handle;
    alloc.descriptorSetCount = 1;
    alloc.pSetLayouts = &layout;
    const VkResult r = vkAllocateDescriptorSets(s->device->handle, &alloc, out);
    if (r == VK_SUCCESS) {
      s->descriptors->last_value = s->open_value();
      return nullptr;
    }
    if (r != VK_ERROR_OUT_OF_POOL_MEMORY && r != VK_ERROR_FRAGMENTED_POOL) return VkError("vkAllocateDescriptorSets", r);
    s->retired_pools.push_back(s->descriptors);  // full: a fresh pool for the rest of the batch
    s->descriptors = nullptr;
  }
  return MakeError(HETRT_STATUS_RESOURCE_EXHAUSTED, "a kernel needs more descriptors than a fresh pool holds");
}

void DestroyBuffer(Device* d, Buffer* b) {
  if (b->buffer) vkDestroyBuffer(d->handle, b->buffer, nullptr);
  if (b->memory) vkFreeMemory(d->handle, b->memory, nullptr);  // unmaps too
  b->buffer = VK_NULL_HANDLE;
  b->memory = VK_NULL_HANDLE;
  b->mapped = nullptr;
}

void SavePipelineCache(Device* d) {
  if (d->cache_file.empty()) return;
  std::lock_guard<std::mutex> lock(d->cache_mutex);
  size_t size = 0;
  if (vkGetPipelineCacheData(d->handle, d->pipeline_cache, &size, nullptr) != VK_SUCCESS || size == 0) return;
  std::vector<char> data(size);
  if (vkGetPipelineCacheData(d->handle, d->pipeline_cache, &size, data.data()) != VK_SUCCESS) return;
  // Written under a name of its own, then renamed: a concurrent reader sees
  // the old file or the whole new one. A failed write leaves no cache entry.
  const std::string tmp = d->cache_file + "." + std::to_string(getpid()) + "." +
                          std::to_string(std::hash<std::thread::id>{}(std::this_thread::get_id())) + ".tmp";
  std::ofstream out(tmp, std::ios::binary);
  out.write(data.data(), static_cast<std::streamsize>(size));
  out.close();
  if (out.good()) std::rename(tmp.c_str(), d->cache_file.c_str());
  else std::remove(tmp.c_str());
}

StreamCore::~StreamCore() {
  if (device == nullptr) return;
  VkDevice dev = device->handle;
  if (timeline != VK_NULL_HANDLE && submitted > 0 && error_value == UINT64_MAX) {
    VkSemaphoreWaitInfo info{VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO};
    info.semaphoreCount = 1;
    info.pSemaphores = &timeline;
    info.pValues = &submitted;
    vkWaitSemaphores(dev, &info, UINT64_MAX);
  }
  // The value is reached, but the driver's submit thread may still be
  // finishing the batch (lavapipe's releases its timeline point after the
  // signal): wait for the queues to drain before the semaphore and command
  // buffers go. Seen as a crash in lavapipe's queue thread without it.
  if (submitted > 0)
    for (int q = 0; q < device->num_queues; ++q) {
      std::lock_guard<std::mutex> lock(device->queues[q].mutex);
      vkQueueWaitIdle(device->queues[q].handle);
    }
  {
    std::lock_guard<std::mutex> lock(device->streams_mutex);
    auto& all = device->streams;
    all.erase(std::remove(all.begin(), all.end(), this), all.end());
    // Buffers freed while this stream had pending work: it has none now.
    for (auto& entry : device->deferred)
      entry.waits.erase(std::remove_if(entry.waits.begin(), entry.waits.end(),
                                       [this](const auto& w) { return w.first == this; }),
                        entry.waits.end());
  }
  if (chunk) retired_chunks.push_back(chunk);
  for (auto* list : {&retired_chunks, &free_chunks})
    for (TransientChunk* c : *list) {
      vkDestroyBuffer(dev, c->buffer, nullptr);
      vkFreeMemory(dev, c->memory, nullptr);
      delete c;
    }
  if (descriptors) retired_pools.push_back(descriptors);
  for (auto* list : {&retired_pools, &free_pools})
    for (DescriptorPool* p : *list) {
      vkDestroyDescriptorPool(dev, p->handle, nullptr);
      delete p;
    }
  if (pool) vkDestroyCommandPool(dev, pool, nullptr);  // frees its command buffers
  if (timeline) vkDestroySemaphore(dev, timeline, nullptr);
}

int CurrentDevice(const hetrt_instance* inst) { return Current::Device(inst->serial); }

StreamCore* CurrentStream(const hetrt_instance* inst, Device* device) {
  const hetrt_stream* current = Current::Get(inst->serial, device->id);
  return current ? current->core.get() : device->default_stream.get();
}

const hetrt_device_api_t kDeviceApi = {
    sizeof(hetrt_device_api_t),
    Entry<DeviceCount>::Call,
    Entry<DeviceAttribute>::Call,
    Entry<MemoryStats>::Call,
    Entry<Allocate>::Call,
    Entry<Free>::Call,
    Entry<CanCopy>::Call,
    Entry<Copy>::Call,
    Entry<StreamCreate>::Call,
    Entry<StreamDestroy>::Call,
    Entry<StreamSynchronize>::Call,
    Entry<StreamWaitEvent>::Call,
    Entry<StreamSetCurrent>::Call,
    Entry<StreamGetCurrent>::Call,
    Entry<EventCreate>::Call,
    Entry<EventDestroy>::Call,
    Entry<EventRecord>::Call,
    Entry<EventQuery>::Call,
    Entry<EventSynchronize>::Call,
    Entry<EventElapsed>::Call,
    Entry<EventTimestamp>::Call,
    Entry<DeviceClock>::Call,
    Entry<WorkspaceAlloc>::Call,
    Entry<WorkspaceFree>::Call,
    Entry<SetDevice>::Call,
};

}  // namespace hetrt::vulkan

// ---- Instance: discovery and teardown ----

namespace {

using hetrt::vulkan::Device;

bool HasExtension(const std::vector<VkExtensionProperties>& all, const char* name) {
  for (const auto& e : all)
    if (std::strcmp(e.extensionName, name) == 0) return true;
  return false;
}

// Counts and logs what the validation layer reports; the loader's own notes
// (general messages, e.g. a driver file it could not open) are only logged.
VKAPI_ATTR VkBool32 VKAPI_CALL OnValidationMessage(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                   VkDebugUtilsMessageTypeFlagsEXT types,
                                                   const VkDebugUtilsMessengerCallbackDataEXT* data, void* user) {
  if (severity < VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT) return VK_FALSE;
  auto* inst = static_cast<hetrt_instance*>(user);
  const std::string text = data && data->pMessage ? data->pMessage : "?";
  if (types & (VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT)) {
    inst->validation_messages.fetch_add(1);
    inst->Log(HETRT_LOG_ERROR, "Vulkan validation: " + text);
  } else {
    inst->Log(HETRT_LOG_WARNING, "Vulkan loader: " + text);
  }
  return VK_FALSE;
}

const char* DeviceTypeName(VkPhysicalDeviceType type) {
  switch (type) {
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated GPU";
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete GPU";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual GPU";
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return "cpu";
    default: return "other";
  }
}

// The on-disk pipeline cache of a device: named after what makes its data
// valid (vendor, device, driver, pipelineCacheUUID); the header is checked too.
std::string CacheFile(const VkPhysicalDeviceProperties& p) {
  const char* dir = std::getenv("HETRT_VULKAN_CACHE_DIR");
  if (dir == nullptr || *dir == '\0') return "";
  char name[96];
  std::snprintf(name, sizeof name, "%08x-%08x-%08x-", p.vendorID, p.deviceID, p.driverVersion);
  std::string file = std::string(dir) + "/" + name;
  for (uint8_t b : p.pipelineCacheUUID) {
    char hex[3];
    std::snprintf(hex, sizeof hex, "%02x", b);
    file += hex;
  }
  return file + ".vkpipelinecache";
}

std::vector<char> ReadCache(const std::string& file, const VkPhysicalDeviceProperties& p) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return {};
  std::vector<char> data((std::istreambuf_iterator<char>(in)), {});
  // VkPipelineCacheHeaderVersionOne: length, version 1, vendor, device, uuid.
  uint32_t header[4];
  if (data.size() < 32) return {};
  std::memcpy(header, data.data(), sizeof header);
  if (header[0] < 32 || header[1] != VK_PIPELINE_CACHE_HEADER_VERSION_ONE || header[2] != p.vendorID ||
      header[3] != p.deviceID || std::memcmp(data.data() + 16, p.pipelineCacheUUID, VK_UUID_SIZE) != 0)
    return {};
  return data;
}

}  // namespace

int hetrt_instance::count() {
  std::call_once(discovered_, [this] { Discover(); });
  return static_cast<int>(devices_.size());
}


hetrt_error_t* hetrt_instance::CreateInstance() {
  using hetrt::vulkan::MakeError;
  uint32_t loader_version = VK_API_VERSION_1_0;
  vkEnumerateInstanceVersion(&loader_version);
  if (loader_version < VK_API_VERSION_1_2)
    return MakeError(HETRT_STATUS_UNAVAILABLE, "the Vulkan loader is version " + hetrt::vulkan::VersionString(loader_version) +
                                                   "; hetrt needs 1.2 (timeline semaphores)");
  uint32_t n = 0;
  vkEnumerateInstanceExtensionProperties(nullptr, &n, nullptr);
  std::vector<VkExtensionProperties> extensions(n);
  vkEnumerateInstanceExtensionProperties(nullptr, &n, extensions.data());
  std::vector<const char*> enabled, layers;
  VkInstanceCreateInfo info{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  if (HasExtension(extensions, VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME)) {
    enabled.push_back(VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME);
    info.flags |= VK_INSTANCE_CREATE_ENUMERATE_PORTABILITY_BIT_KHR;
  }
  // HETRT_VULKAN_VALIDATION=1: the Khronos validation layer, its messages
  // counted (device attribute HETRT_VULKAN_ATTR_VALIDATION_MESSAGES) and logged.
  VkDebugUtilsMessengerCreateInfoEXT messenger{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
  messenger.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
  messenger.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                          VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
  messenger.pfnUserCallback = OnValidationMessage;
  messenger.pUserData = this;
  const VkValidationFeatureEnableEXT sync_validation = VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT;
  VkValidationFeaturesEXT features{VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT};
  const char* wanted = std::getenv("HETRT_VULKAN_VALIDATION");
  if (wanted != nullptr && *wanted != '\0' && std::strcmp(wanted, "0") != 0) {
    vkEnumerateInstanceLayerProperties(&n, nullptr);
    std::vector<VkLayerProperties> available(n);
    vkEnumerateInstanceLayerProperties(&n, available.data());
    bool found = false;
    for (const auto& l : available) found |= std::strcmp(l.layerName, "VK_LAYER_KHRONOS_validation") == 0;
    if (!found)
      return MakeError(HETRT_STATUS_UNAVAILABLE, "HETRT_VULKAN_VALIDATION is set but VK_LAYER_KHRONOS_validation is not "
                                                 "installed (Debian: vulkan-validationlayers)");
    layers.push_back("VK_LAYER_KHRONOS_validation");
    enabled.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
    info.pNext = &messenger;  // also reports on instance creation and destruction
    validation = true;
    // "sync": synchronization validation too (hazards between commands).
    if (std::strcmp(wanted, "sync") == 0) {
      features.enabledValidationFeatureCount = 1;
      features.pEnabledValidationFeatures = &sync_validation;
      features.pNext = &messenger;
      info.pNext = &features;
    }
  }
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "hetrt";
  app.pEngineName = "hetrt";
  app.apiVersion = std::min<uint32_t>(loader_version, VK_API_VERSION_1_3);
  info.pApplicationInfo = &app;
  info.enabledExtensionCount = static_cast<uint32_t>(enabled.size());
  info.ppEnabledExtensionNames = enabled.data();
  info.enabledLayerCount = static_cast<uint32_t>(layers.size());
  info.ppEnabledLayerNames = layers.data();
  VkResult r = vkCreateInstance(&info, nullptr, &vk_);
  if (r == VK_ERROR_INCOMPATIBLE_DRIVER)
    return MakeError(HETRT_STATUS_UNAVAILABLE, "no Vulkan driver: the loader found no ICD (json files in "
                                               "/usr/share/vulkan/icd.d or $VK_DRIVER_FILES; Debian: mesa-vulkan-drivers)");
  if (r != VK_SUCCESS) return hetrt::vulkan::VkError("vkCreateInstance", r);
  if (validation) {
    auto create = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(vk_, "vkCreateDebugUtilsMessengerEXT"));
    if (create == nullptr || (r = create(vk_, &messenger, nullptr, &messenger_)) != VK_SUCCESS)
      return MakeError(HETRT_STATUS_UNAVAILABLE, "cannot install the Vulkan validation messenger");
  }
  return nullptr;
}

void hetrt_instance::Discover() {
  using namespace hetrt::vulkan;
  if (hetrt_error_t* e = CreateInstance()) {
    reason_ = e->message;
    delete e;
    return;
  }
  uint32_t n = 0;
  VkResult r = vkEnumeratePhysicalDevices(vk_, &n, nullptr);
  if (r != VK_SUCCESS || n == 0) {
    reason_ = r != VK_SUCCESS ? std::string("vkEnumeratePhysicalDevices failed: ") + VkResultName(r)
                              : "the Vulkan loader found no physical device (drivers: /usr/share/vulkan/icd.d or "
                                "$VK_DRIVER_FILES)";
    return;
  }
  std::vector<VkPhysicalDevice> physicals(n);
  vkEnumeratePhysicalDevices(vk_, &n, physicals.data());
  auto skip = [this](const std::string& why) { reason_ += (reason_.empty() ? "" : "; ") + why; };
  for (VkPhysicalDevice physical : physicals) {
    auto d = std::make_unique<Device>();
    d->inst = this;
    d->physical = physical;
    VkPhysicalDeviceDriverProperties driver{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
    VkPhysicalDevicePushDescriptorPropertiesKHR push{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PUSH_DESCRIPTOR_PROPERTIES_KHR};
    VkPhysicalDeviceVulkan11Properties v11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_PROPERTIES};
    VkPhysicalDeviceProperties2 props2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
    props2.pNext = &driver;
    driver.pNext = &push;
    push.pNext = &v11;
    vkGetPhysicalDeviceProperties2(physical, &props2);
    d->props = props2.properties;
    d->subgroup_size = v11.subgroupSize;
    d->name = d->props.deviceName;
    if (d->props.apiVersion < VK_API_VERSION_1_2) {
      skip(d->name + ": Vulkan " + VersionString(d->props.apiVersion) + " (hetrt needs 1.2 for timeline semaphores)");
      continue;
    }
    d->max_spirv = d->props.apiVersion >= VK_API_VERSION_1_3 ? 0x10600 : 0x10500;
    d->api_version = VersionString(d->props.apiVersion);
    d->driver = driver.driverInfo[0] ? std::string(driver.driverName) + " " + driver.driverInfo
                                     : std::to_string(d->props.driverVersion);
    d->display_name = d->name + " (" + DeviceTypeName(d->props.deviceType) + "), " + d->driver + ", Vulkan " + d->api_version;
    uint32_t count = 0;
    vkEnumerateDeviceExtensionProperties(physical, nullptr, &count, nullptr);
    std::vector<VkExtensionProperties> extensions(count);
    vkEnumerateDeviceExtensionProperties(physical, nullptr, &count, extensions.data());
    // Features TVM-made shaders may use, enabled where supported.
    VkPhysicalDeviceVulkan12Features f12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
    VkPhysicalDeviceVulkan11Features f11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
    VkPhysicalDeviceFeatures2 supported{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    supported.pNext = &f11;
    f11.pNext = &f12;
    vkGetPhysicalDeviceFeatures2(physical, &supported);
    if (!f12.timelineSemaphore) {
      skip(d->name + ": no timeline semaphores");
      continue;
    }
    VkPhysicalDeviceVulkan12Features e12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
    VkPhysicalDeviceVulkan11Features e11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
    VkPhysicalDeviceFeatures2 features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    features.pNext = &e11;
    e11.pNext = &e12;
    features.features.shaderInt64 = supported.features.shaderInt64;
    features.features.shaderInt16 = supported.features.shaderInt16;
    features.features.shaderFloat64 = supported.features.shaderFloat64;
    e11.storageBuffer16BitAccess = f11.storageBuffer16BitAccess;
    e11.uniformAndStorageBuffer16BitAccess = f11.uniformAndStorageBuffer16BitAccess;
    e11.storagePushConstant16 = f11.storagePushConstant16;
    e11.variablePointersStorageBuffer = f11.variablePointersStorageBuffer;
    e11.variablePointers = f11.variablePointers;
    e12.timelineSemaphore = VK_TRUE;
    e12.shaderFloat16 = f12.shaderFloat16;
    e12.shaderInt8 = f12.shaderInt8;
    e12.storageBuffer8BitAccess = f12.storageBuffer8BitAccess;
    e12.uniformAndStorageBuffer8BitAccess = f12.uniformAndStorageBuffer8BitAccess;
    e12.storagePushConstant8 = f12.storagePushConstant8;
    e12.scalarBlockLayout = f12.scalarBlockLayout;
    e12.vulkanMemoryModel = f12.vulkanMemoryModel;
    e12.vulkanMemoryModelDeviceScope = f12.vulkanMemoryModelDeviceScope;
    // A compute queue family, preferring one that writes timestamps.
    vkGetPhysicalDeviceQueueFamilyProperties(physical, &count, nullptr);
    std::vector<VkQueueFamilyProperties> families(count);
    vkGetPhysicalDeviceQueueFamilyProperties(physical, &count, families.data());
    int family = -1;
    for (uint32_t i = 0; i < count; ++i) {
      if (!(families[i].queueFlags & VK_QUEUE_COMPUTE_BIT)) continue;
      if (family < 0 || (families[i].timestampValidBits > 0 && families[static_cast<size_t>(family)].timestampValidBits == 0))
        family = static_cast<int>(i);
    }
    if (family < 0) {
      skip(d->name + ": no compute queue");
      continue;
    }
    d->family = static_cast<uint32_t>(family);
    const VkQueueFamilyProperties& qf = families[static_cast<size_t>(family)];
    d->num_queues = qf.queueCount > 1 ? 2 : 1;
    d->timestamp_mask = qf.timestampValidBits == 0    ? 0
                        : qf.timestampValidBits >= 64 ? UINT64_MAX
                                                      : (uint64_t{1} << qf.timestampValidBits) - 1;
    d->timestamp_period = d->props.limits.timestampPeriod;
    const float priorities[2] = {1.f, 1.f};
    VkDeviceQueueCreateInfo queue{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
    queue.queueFamilyIndex = d->family;
    queue.queueCount = static_cast<uint32_t>(d->num_queues);
    queue.pQueuePriorities = priorities;
    std::vector<const char*> device_extensions;
    const bool has_push = HasExtension(extensions, VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME);
    const bool has_calibrated = HasExtension(extensions, VK_EXT_CALIBRATED_TIMESTAMPS_EXTENSION_NAME);
    if (has_push) device_extensions.push_back(VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME);
    if (has_calibrated) device_extensions.push_back(VK_EXT_CALIBRATED_TIMESTAMPS_EXTENSION_NAME);
    if (HasExtension(extensions, "VK_KHR_portability_subset")) device_extensions.push_back("VK_KHR_portability_subset");
    VkDeviceCreateInfo info{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
    info.pNext = &features;
    info.queueCreateInfoCount = 1;
    info.pQueueCreateInfos = &queue;
    info.enabledExtensionCount = static_cast<uint32_t>(device_extensions.size());
    info.ppEnabledExtensionNames = device_extensions.data();
    r = vkCreateDevice(physical, &info, nullptr, &d->handle);
    if (r != VK_SUCCESS) {
      skip(d->name + ": vkCreateDevice failed: " + VkResultName(r));
      continue;
    }
    for (int q = 0; q < d->num_queues; ++q) vkGetDeviceQueue(d->handle, d->family, static_cast<uint32_t>(q), &d->queues[q].handle);
    if (has_push) {
      d->push_descriptor = reinterpret_cast<PFN_vkCmdPushDescriptorSetKHR>(vkGetDeviceProcAddr(d->handle, "vkCmdPushDescriptorSetKHR"));
      if (d->push_descriptor) d->max_push_descriptors = push.maxPushDescriptors;
    }
    if (has_calibrated) {
      auto domains_of = reinterpret_cast<PFN_vkGetPhysicalDeviceCalibrateableTimeDomainsEXT>(
          vkGetInstanceProcAddr(vk_, "vkGetPhysicalDeviceCalibrateableTimeDomainsEXT"));
      uint32_t k = 0;
      if (domains_of && domains_of(physical, &k, nullptr) == VK_SUCCESS) {
        std::vector<VkTimeDomainEXT> domains(k);
        domains_of(physical, &k, domains.data());
        const bool both = std::count(domains.begin(), domains.end(), VK_TIME_DOMAIN_DEVICE_EXT) &&
                          std::count(domains.begin(), domains.end(), VK_TIME_DOMAIN_CLOCK_MONOTONIC_EXT);
        if (both)
          d->calibrated = reinterpret_cast<PFN_vkGetCalibratedTimestampsEXT>(
              vkGetDeviceProcAddr(d->handle, "vkGetCalibratedTimestampsEXT"));
      }
    }
    // Memory types: the memory types a storage buffer may use, best first.
    vkGetPhysicalDeviceMemoryProperties(physical, &d->memory);
    VkBufferCreateInfo probe_info{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
    probe_info.size = 256;
    probe_info.usage = kBufferUsage | VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT;
    VkBuffer probe = VK_NULL_HANDLE;
    VkMemoryRequirements req{};
    if (vkCreateBuffer(d->handle, &probe_info, nullptr, &probe) == VK_SUCCESS) {
      vkGetBufferMemoryRequirements(d->handle, probe, &req);
      vkDestroyBuffer(d->handle, probe, nullptr);
    }
    d->device_type = FindMemoryType(*d, req.memoryTypeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
    if (d->device_type < 0) d->device_type = FindMemoryType(*d, req.memoryTypeBits, 0);
    const VkMemoryPropertyFlags device_flags =
        d->device_type < 0 ? 0 : d->memory.memoryTypes[static_cast<size_t>(d->device_type)].propertyFlags;
    d->device_mappable = (device_flags & kMappable) == kMappable;
    d->visible_type = FindMemoryType(*d, req.memoryTypeBits, kMappable | VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
    if (d->visible_type < 0) d->visible_type = FindMemoryType(*d, req.memoryTypeBits, kMappable);
    d->pinned_type = FindMemoryType(*d, req.memoryTypeBits, kMappable | VK_MEMORY_PROPERTY_HOST_CACHED_BIT);
    if (d->pinned_type < 0) d->pinned_type = FindMemoryType(*d, req.memoryTypeBits, kMappable);
    const bool shares_host = d->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU ||
                             d->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU;
    d->host_unified = shares_host && d->device_mappable;
    for (uint32_t h = 0; h < d->memory.memoryHeapCount; ++h)
      if (d->memory.memoryHeaps[h].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) d->total_memory += d->memory.memoryHeaps[h].size;
    // Pipeline cache, seeded from disk when HETRT_VULKAN_CACHE_DIR holds one for this driver.
    d->cache_file = CacheFile(d->props);
    const std::vector<char> cached = d->cache_file.empty() ? std::vector<char>{} : ReadCache(d->cache_file, d->props);
    VkPipelineCacheCreateInfo cache{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
    cache.initialDataSize = cached.size();
    cache.pInitialData = cached.empty() ? nullptr : cached.data();
    if (vkCreatePipelineCache(d->handle, &cache, nullptr, &d->pipeline_cache) != VK_SUCCESS) {
      cache.initialDataSize = 0;
      cache.pInitialData = nullptr;
      vkCreatePipelineCache(d->handle, &cache, nullptr, &d->pipeline_cache);
    }
    d->id = static_cast<int>(devices_.size());
    if (hetrt_error_t* e = NewStreamCore(d.get(), &d->queues[0], &d->default_stream)) {
      skip(d->name + ": " + e->message);
      delete e;
      d->default_stream.reset();
      vkDestroyPipelineCache(d->handle, d->pipeline_cache, nullptr);
      vkDestroyDevice(d->handle, nullptr);
      continue;
    }
    devices_.push_back(std::move(d));
  }
  if (!devices_.empty()) reason_.clear();
}

// Reclaims what the core left (pinned memory, workspace buffers, deferred
// frees), then the streams, devices and the instance.
hetrt_instance::~hetrt_instance() {
  using namespace hetrt::vulkan;
  for (auto& d : devices_) {
    vkDeviceWaitIdle(d->handle);
    d->default_stream.reset();
    for (auto& entry : d->deferred) {
      DestroyBuffer(d.get(), entry.buffer);
      delete entry.buffer;
    }
    for (Buffer* b : d->workspace.all) {
      DestroyBuffer(d.get(), b);
      delete b;
    }
  }
  for (auto& [host_ptr, b] : pinned) {
    DestroyBuffer(devices_[static_cast<size_t>(b->device_id)].get(), b);
    delete b;
  }
  for (auto& d : devices_) {
    if (d->pipeline_cache) vkDestroyPipelineCache(d->handle, d->pipeline_cache, nullptr);
    vkDestroyDevice(d->handle, nullptr);
  }
  if (messenger_) {
    auto destroy = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(vk_, "vkDestroyDebugUtilsMessengerEXT"));
    if (destroy) destroy(vk_, messenger_, nullptr);
  }
  if (vk_) vkDestroyInstance(vk_, nullptr);
}
