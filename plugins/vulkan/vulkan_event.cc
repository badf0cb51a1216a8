// Vulkan events (a value on a stream's timeline, plus a timestamp query for
// TIMING events) and the device clock.
#include <time.h>

#include "vulkan_device.h"

namespace hetrt::vulkan {
namespace {

uint64_t MonotonicNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ULL + static_cast<uint64_t>(ts.tv_nsec);
}

// One command buffer submitted and waited for with a fence, outside any
// stream (device_clock's fallback).
hetrt_error_t* SubmitAndWait(Device* d, VkCommandBuffer cb, uint64_t* host_before, uint64_t* host_after) {
  auto fence_info = VkStruct<VkFenceCreateInfo>(VK_STRUCTURE_TYPE_FENCE_CREATE_INFO);
  VkFence fence = VK_NULL_HANDLE;
  VkResult r = vkCreateFence(d->handle, &fence_info, nullptr, &fence);
  if (r != VK_SUCCESS) return VkError("vkCreateFence", r);
  auto submit = VkStruct<VkSubmitInfo>(VK_STRUCTURE_TYPE_SUBMIT_INFO);
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

}  // namespace

// ---- Events ----

hetrt_error_t* DeviceEntries::EventCreate(hetrt_event_create_args_t* args) {
  Device* d = nullptr;
  if (hetrt_error_t* e = args->self->devices.Find(args->device, &d)) return e;
  auto event = std::make_unique<hetrt_event>();
  event->device = d;
  event->flags = args->flags;
  if ((args->flags & HETRT_EVENT_TIMING) && d->timestamp_mask != 0) {
    auto info = VkStruct<VkQueryPoolCreateInfo>(VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO);
    info.queryType = VK_QUERY_TYPE_TIMESTAMP;
    info.queryCount = 1;
    const VkResult r = vkCreateQueryPool(d->handle, &info, nullptr, &event->query);
    if (r != VK_SUCCESS) return VkError("vkCreateQueryPool (timing event)", r);
  }
  args->event = event.release();
  return nullptr;
}

hetrt_error_t* DeviceEntries::EventDestroy(hetrt_event_args_t* args) {
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

hetrt_error_t* DeviceEntries::EventRecord(hetrt_event_record_args_t* args) {
  Device* d = nullptr;
  if (hetrt_error_t* e = args->self->devices.Find(args->device, &d)) return e;
  hetrt_event* event = args->event;
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

hetrt_error_t* DeviceEntries::EventQuery(hetrt_event_args_t* args) {
  hetrt_event* e = args->event;
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

hetrt_error_t* DeviceEntries::EventSynchronize(hetrt_event_args_t* args) {
  hetrt_event* e = args->event;
  args->complete = 1;
  if (e->stream == nullptr) return nullptr;
  return FlushAndWait(e->stream.get(), e->value, args->self->WaitPollUs());
}

// The device time (ns) an event's timestamp query recorded, once it is done.
hetrt_error_t* EventTime(hetrt_event* e, uint64_t* ns) {
  if (e == nullptr || e->stream == nullptr)
    return MakeError(HETRT_STATUS_FAILED_PRECONDITION, "the event was never recorded");
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

hetrt_error_t* DeviceEntries::EventElapsed(hetrt_event_elapsed_args_t* args) {
  uint64_t t0 = 0, t1 = 0;
  if (hetrt_error_t* e = EventTime(args->start, &t0)) return e;
  if (hetrt_error_t* e = EventTime(args->end, &t1)) return e;
  args->milliseconds = static_cast<double>(static_cast<int64_t>(t1 - t0)) / 1e6;
  return nullptr;
}

hetrt_error_t* DeviceEntries::EventTimestamp(hetrt_event_timestamp_args_t* args) {
  return EventTime(args->event, &args->device_ns);
}

// VK_EXT_calibrated_timestamps reads both clocks at once; without it, a
// timestamp written by a lone command buffer lies between host readings taken
// before the submit and after the wait: keep the tightest of a few samples.
hetrt_error_t* DeviceEntries::DeviceClock(hetrt_device_clock_args_t* args) {
  Device* d = nullptr;
  if (hetrt_error_t* e = args->self->devices.Find(args->device, &d)) return e;
  if (d->timestamp_mask == 0)
    return MakeError(HETRT_STATUS_UNIMPLEMENTED, "the compute queue of " + d->name + " writes no timestamps");
  uint64_t best = UINT64_MAX;
  if (d->calibrated != nullptr && args->self->calibrated_clock.load(std::memory_order_relaxed)) {
    const VkCalibratedTimestampInfoEXT domains[2] = {
        {VK_STRUCTURE_TYPE_CALIBRATED_TIMESTAMP_INFO_EXT, nullptr, VK_TIME_DOMAIN_DEVICE_EXT},
        {VK_STRUCTURE_TYPE_CALIBRATED_TIMESTAMP_INFO_EXT, nullptr, VK_TIME_DOMAIN_CLOCK_MONOTONIC_EXT}};
    for (int i = 0; i < 3; ++i) {
      uint64_t stamps[2] = {0, 0}, deviation = 0;
      const VkResult r = d->calibrated(d->handle, 2, domains, stamps, &deviation);
      if (r != VK_SUCCESS) return VkError("vkGetCalibratedTimestampsEXT", r);
      if (deviation < best) {
        best = deviation;
        args->device_ns =
            static_cast<uint64_t>(static_cast<double>(stamps[0] & d->timestamp_mask) * d->timestamp_period);
        args->host_ns = stamps[1];
        args->uncertainty_ns = deviation;
      }
    }
    return nullptr;
  }
  auto pool_info = VkStruct<VkCommandPoolCreateInfo>(VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO);
  pool_info.queueFamilyIndex = d->family;
  VkCommandPool pool = VK_NULL_HANDLE;
  VkQueryPool query = VK_NULL_HANDLE;
  VkResult r = vkCreateCommandPool(d->handle, &pool_info, nullptr, &pool);
  if (r != VK_SUCCESS) return VkError("vkCreateCommandPool", r);
  auto query_info = VkStruct<VkQueryPoolCreateInfo>(VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO);
  query_info.queryType = VK_QUERY_TYPE_TIMESTAMP;
  query_info.queryCount = 1;
  hetrt_error_t* error = nullptr;
  r = vkCreateQueryPool(d->handle, &query_info, nullptr, &query);
  if (r != VK_SUCCESS) error = VkError("vkCreateQueryPool", r);
  for (int i = 0; i < 5 && error == nullptr; ++i) {
    auto alloc = VkStruct<VkCommandBufferAllocateInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO);
    alloc.commandPool = pool;
    alloc.commandBufferCount = 1;
    VkCommandBuffer cb = VK_NULL_HANDLE;
    if ((r = vkAllocateCommandBuffers(d->handle, &alloc, &cb)) != VK_SUCCESS) {
      error = VkError("vkAllocateCommandBuffers", r);
      break;
    }
    auto begin = VkStruct<VkCommandBufferBeginInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO);
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

}  // namespace hetrt::vulkan
