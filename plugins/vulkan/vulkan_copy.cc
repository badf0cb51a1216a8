// Copies between Vulkan buffers, pinned and pageable host memory: recorded
// into a stream, staged through transient slices where the host side is not
// mapped, or done by memcpy on mapped memory when the stream is idle.
#include <cstring>

#include "vulkan_device.h"

namespace hetrt::vulkan {
namespace {

// ---- Copies ----

// One side of a copy: a Vulkan buffer, host bytes, or both (HOST_PINNED
// memory: host bytes that a Vulkan buffer also covers).
struct Side {
  Buffer* buffer = nullptr;  // with `offset` into it
  uint64_t offset = 0;
  uint8_t* host = nullptr;  // already offset
  bool pinned = false;
};

hetrt_error_t* ResolveSide(hetrt_instance* inst, const sdk::CopySide& side, Side* out) {
  if (hetrt_error_t* e = side.CheckDeviceType(kDLVulkan, "a Vulkan")) return e;
  if (const std::optional<Buffer*> pinned = inst->pinned.Find(side.ptr)) {
    Buffer* b = *pinned;
    if (side.Exceeds(b->size)) return side.RangeError(b->size, "pinned buffer");
    *out = Side{b, side.offset, static_cast<uint8_t*>(b->mapped) + side.offset, true};
    return nullptr;
  }
  if (side.device.device_type == kDLCPU) {
    out->host = const_cast<uint8_t*>(static_cast<const uint8_t*>(side.ptr)) + side.offset;
    return nullptr;
  }
  auto* b = const_cast<Buffer*>(static_cast<const Buffer*>(side.ptr));
  if (b->magic != kBufferMagic)
    return MakeError(HETRT_STATUS_INVALID_ARGUMENT,
                     std::string("copy ") + side.which + " is not a Vulkan buffer of this plugin");
  if (side.Exceeds(b->size)) return side.RangeError(b->size);
  out->buffer = b;
  out->offset = side.offset;
  out->host = b->mapped ? static_cast<uint8_t*>(b->mapped) + side.offset : nullptr;
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
  const int64_t poll = inst->WaitPollUs();
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
    if (hetrt_error_t* e = RecordCopy(s, src.buffer->buffer, src.offset, dst.buffer->buffer, dst.offset, nbytes))
      return e;
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
  const int64_t poll = inst->WaitPollUs();
  std::unique_lock<std::mutex> lock(s->mutex);
  const uint8_t* from = src.host;
  if (dst.pinned) {
    if (hetrt_error_t* e = RecordCopy(s, src.buffer->buffer, src.offset, dst.buffer->buffer, dst.offset, nbytes))
      return e;
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

}  // namespace

hetrt_error_t* DeviceEntries::Copy(hetrt_copy_args_t* a) {
  hetrt_instance* inst = a->self;
  Side src, dst;
  if (hetrt_error_t* e = sdk::ResolveCopySides(*a, ResolveSide, &src, &dst)) return e;
  const bool src_device = src.buffer && !src.pinned, dst_device = dst.buffer && !dst.pinned;
  if (!src_device && !dst_device)
    return MakeError(HETRT_STATUS_INVALID_ARGUMENT, "neither side of the copy is Vulkan device memory");
  Device* d = inst->devices.at((src_device ? src : dst).buffer->device_id);
  StreamCore* s = nullptr;
  if (hetrt_error_t* e = StreamOf(d, a->stream, &s)) return e;
  const bool blocking = (a->flags & HETRT_COPY_BLOCKING) != 0;
  const int64_t poll = inst->WaitPollUs();
  if (a->nbytes == 0) {  // Vulkan refuses empty copies; still honour the ordering promise
    if (!blocking) return nullptr;
    std::unique_lock<std::mutex> lock(s->mutex);
    if (hetrt_error_t* e = Flush(s)) return e;
    const uint64_t value = s->submitted;
    lock.unlock();
    return WaitValue(s, value, poll);
  }
  if (src_device && dst_device) {
    Device* dd = inst->devices.at(dst.buffer->device_id);
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

}  // namespace hetrt::vulkan
