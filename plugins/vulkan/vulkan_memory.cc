// Vulkan memory: buffers with memory of their own (allocate/free, freed once
// no pending work uses them), the transient host-visible slices a batch
// stages through, and the workspace pool.
#include <algorithm>
#include <cstring>

#include "vulkan_device.h"

namespace hetrt::vulkan {
namespace {

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

}  // namespace

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

int FindMemoryType(const Device& d, uint32_t allowed, VkMemoryPropertyFlags required) {
  for (uint32_t i = 0; i < d.memory.memoryTypeCount; ++i)
    if ((allowed & (1u << i)) && (d.memory.memoryTypes[i].propertyFlags & required) == required)
      return static_cast<int>(i);
  return -1;
}

// A buffer with its own memory of `type`, mapped for its lifetime when `map`.
hetrt_error_t* CreateBuffer(Device* d, uint64_t nbytes, VkBufferUsageFlags usage, int type, bool map, Buffer* out) {
  auto info = VkStruct<VkBufferCreateInfo>(VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO);
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
  auto alloc = VkStruct<VkMemoryAllocateInfo>(VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO);
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

void DestroyBuffer(Device* d, Buffer* b) {
  if (b->buffer) vkDestroyBuffer(d->handle, b->buffer, nullptr);
  if (b->memory) vkFreeMemory(d->handle, b->memory, nullptr);  // unmaps too
  b->buffer = VK_NULL_HANDLE;
  b->memory = VK_NULL_HANDLE;
  b->mapped = nullptr;
}

hetrt_error_t* TransientSlice(StreamCore* s, uint64_t size, uint64_t alignment, VkBuffer* buffer, uint64_t* offset,
                              uint8_t** host) {
  Device* d = s->device;
  alignment = std::max<uint64_t>(alignment, 16);
  auto fits = [&](const TransientChunk* c) {
    return ((c->used + alignment - 1) / alignment) * alignment + size <= c->size;
  };
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
      if (d->pinned_type < 0)
        return MakeError(HETRT_STATUS_UNIMPLEMENTED, d->name + " has no host-visible memory for staging");
      constexpr uint64_t kChunk = 1 << 20;
      auto chunk = std::make_unique<TransientChunk>();
      Buffer b;
      const uint64_t bytes = size <= kChunk ? kChunk : uint64_t{1} << (64 - __builtin_clzll(size - 1));
      if (hetrt_error_t* e =
              CreateBuffer(d, bytes, kBufferUsage | VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT, d->pinned_type, true, &b))
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

hetrt_error_t* DeviceEntries::Allocate(hetrt_allocate_args_t* args) {
  hetrt_instance* inst = args->self;
  Device* d = nullptr;
  if (hetrt_error_t* e = inst->devices.Find(args->device, &d)) return e;
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
      if (type < 0) return MakeError(HETRT_STATUS_UNIMPLEMENTED, d->name + " has no host-visible coherent memory type");
      break;
    case HETRT_MEMORY_HOST_PINNED:
      type = d->pinned_type;
      if (type < 0) return MakeError(HETRT_STATUS_UNIMPLEMENTED, d->name + " has no host-visible coherent memory type");
      break;
    default:
      return MakeError(HETRT_STATUS_INVALID_ARGUMENT,
                       "unknown memory kind " + std::to_string(static_cast<int>(args->kind)));
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
      inst->pinned.Add(buffer->mapped, buffer.get());
    } catch (...) {
      DestroyBuffer(d, buffer.get());
      throw;
    }
    args->data = buffer->mapped;
  } else {
    args->data = buffer.get();
  }
  args->host_pointer = args->kind == HETRT_MEMORY_DEVICE ? nullptr : buffer->mapped;
  d->memory_counters.Allocated(args->nbytes);
  buffer.release();
  return nullptr;
}

hetrt_error_t* DeviceEntries::Free(hetrt_free_args_t* args) {
  hetrt_instance* inst = args->self;
  Buffer* b = nullptr;
  if (args->kind == HETRT_MEMORY_HOST_PINNED) {
    const std::optional<Buffer*> taken = inst->pinned.Take(args->data);
    if (!taken) return MakeError(HETRT_STATUS_INVALID_ARGUMENT, "not HOST_PINNED memory of this Vulkan instance");
    b = *taken;
  } else {
    b = static_cast<Buffer*>(args->data);
    if (b->magic != kBufferMagic || b->kind == HETRT_MEMORY_HOST_PINNED)
      return MakeError(HETRT_STATUS_INVALID_ARGUMENT, "not a Vulkan buffer of this instance");
  }
  Device* owner = inst->devices.at(b->device_id);
  owner->memory_counters.Freed(b->size);
  b->magic = 0;
  FreeWhenUnused(owner, b);
  ReleaseDeferred(owner);
  return nullptr;
}

// ---- Workspace pool ----

hetrt_error_t* DeviceEntries::WorkspaceAlloc(hetrt_workspace_args_t* args) {
  Device* d = nullptr;
  if (hetrt_error_t* e = args->self->devices.Find(args->device, &d)) return e;
  auto create = [d](uint64_t bytes, void** data) -> hetrt_error_t* {
    auto b = std::make_unique<Buffer>();
    if (hetrt_error_t* e = CreateBuffer(d, bytes, kBufferUsage, d->device_type, false, b.get())) return e;
    *data = b.release();
    return nullptr;
  };
  auto destroy = [d](void* data) {
    DestroyBuffer(d, static_cast<Buffer*>(data));
    delete static_cast<Buffer*>(data);
  };
  return d->workspace.Allocate(args->nbytes, CurrentStream(args->self, d), "Vulkan", create, destroy, &args->data);
}

hetrt_error_t* DeviceEntries::WorkspaceFree(hetrt_workspace_args_t* args) {
  Device* d = nullptr;
  if (hetrt_error_t* e = args->self->devices.Find(args->device, &d)) return e;
  return d->workspace.Free(args->data, CurrentStream(args->self, d), "Vulkan");
}

}  // namespace hetrt::vulkan
