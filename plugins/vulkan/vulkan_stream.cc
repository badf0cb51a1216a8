// Vulkan streams: work recorded into a command buffer and submitted in
// batches at a boundary, each batch signalling the stream's timeline
// semaphore with its value; waits and synchronisation are waits for values.
#include <algorithm>
#include <chrono>
#include <thread>

#include "vulkan_device.h"

namespace hetrt::vulkan {
namespace {

void MemoryBarrier(VkCommandBuffer cb, VkPipelineStageFlags dst_stage, VkAccessFlags dst_access) {
  auto barrier = VkStruct<VkMemoryBarrier>(VK_STRUCTURE_TYPE_MEMORY_BARRIER);
  barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  barrier.dstAccessMask = dst_access;
  vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT, dst_stage, 0, 1,
                       &barrier, 0, nullptr, 0, nullptr);
}

}  // namespace

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

// The state of `stream` on `d` (NULL: d's default stream).
hetrt_error_t* StreamOf(Device* d, hetrt_stream* stream, StreamCore** out) {
  if (stream != nullptr && stream->core->device != d)
    return MakeError(HETRT_STATUS_INVALID_ARGUMENT, "the stream belongs to another Vulkan device than " + d->name);
  *out = stream ? stream->core.get() : d->default_stream.get();
  return nullptr;
}

uint64_t Completed(const StreamCore* s) {
  uint64_t value = 0;
  if (vkGetSemaphoreCounterValue(s->device->handle, s->timeline, &value) != VK_SUCCESS) return 0;
  return value;
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
  auto info = VkStruct<VkSemaphoreWaitInfo>(VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO);
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

hetrt_error_t* OpenBatch(StreamCore* s) {
  if (s->open != VK_NULL_HANDLE) return nullptr;
  Reclaim(s);
  VkCommandBuffer cb = VK_NULL_HANDLE;
  if (!s->free_commands.empty()) {
    cb = s->free_commands.back();
    s->free_commands.pop_back();
  } else {
    auto info = VkStruct<VkCommandBufferAllocateInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO);
    info.commandPool = s->pool;
    info.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    info.commandBufferCount = 1;
    const VkResult r = vkAllocateCommandBuffers(s->device->handle, &info, &cb);
    if (r != VK_SUCCESS) return VkError("vkAllocateCommandBuffers", r);
  }
  auto begin = VkStruct<VkCommandBufferBeginInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO);
  begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  const VkResult r = vkBeginCommandBuffer(cb, &begin);  // resets it (pool made with RESET_COMMAND_BUFFER)
  if (r != VK_SUCCESS) {
    s->free_commands.push_back(cb);
    return VkError("vkBeginCommandBuffer", r);
  }
  s->open = cb;
  return nullptr;
}

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
    if (s->work > 0)
      MemoryBarrier(s->open, VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT | VK_ACCESS_HOST_WRITE_BIT);
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
  auto timeline = VkStruct<VkTimelineSemaphoreSubmitInfo>(VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO);
  timeline.waitSemaphoreValueCount = static_cast<uint32_t>(values.size());
  timeline.pWaitSemaphoreValues = values.data();
  timeline.signalSemaphoreValueCount = 1;
  timeline.pSignalSemaphoreValues = &value;
  auto submit = VkStruct<VkSubmitInfo>(VK_STRUCTURE_TYPE_SUBMIT_INFO);
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
    auto signal = VkStruct<VkSemaphoreSignalInfo>(VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO);
    signal.semaphore = s->timeline;
    signal.value = value;
    vkSignalSemaphore(d->handle, &signal);
    return StreamFailed(s);
  }
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
        auto info = VkStruct<VkDescriptorPoolCreateInfo>(VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO);
        info.maxSets = kSets;
        info.poolSizeCount = 2;
        info.pPoolSizes = sizes;
        auto pool = std::make_unique<DescriptorPool>();
        const VkResult r = vkCreateDescriptorPool(s->device->handle, &info, nullptr, &pool->handle);
        if (r != VK_SUCCESS) return VkError("vkCreateDescriptorPool", r);
        s->descriptors = pool.release();
      }
    }
    auto alloc = VkStruct<VkDescriptorSetAllocateInfo>(VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO);
    alloc.descriptorPool = s->descriptors->handle;
    alloc.descriptorSetCount = 1;
    alloc.pSetLayouts = &layout;
    const VkResult r = vkAllocateDescriptorSets(s->device->handle, &alloc, out);
    if (r == VK_SUCCESS) {
      s->descriptors->last_value = s->open_value();
      return nullptr;
    }
    if (r != VK_ERROR_OUT_OF_POOL_MEMORY && r != VK_ERROR_FRAGMENTED_POOL)
      return VkError("vkAllocateDescriptorSets", r);
    s->retired_pools.push_back(s->descriptors);  // full: a fresh pool for the rest of the batch
    s->descriptors = nullptr;
  }
  return MakeError(HETRT_STATUS_RESOURCE_EXHAUSTED, "a kernel needs more descriptors than a fresh pool holds");
}

StreamCore::~StreamCore() {
  if (device == nullptr) return;
  VkDevice dev = device->handle;
  if (timeline != VK_NULL_HANDLE && submitted > 0 && error_value == UINT64_MAX) {
    auto info = VkStruct<VkSemaphoreWaitInfo>(VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO);
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
      entry.waits.erase(
          std::remove_if(entry.waits.begin(), entry.waits.end(), [this](const auto& w) { return w.first == this; }),
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

// ---- Streams ----

hetrt_error_t* NewStreamCore(Device* d, Queue* queue, std::shared_ptr<StreamCore>* out) {
  auto s = std::make_shared<StreamCore>();
  s->device = d;
  s->queue = queue;
  auto pool = VkStruct<VkCommandPoolCreateInfo>(VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO);
  pool.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  pool.queueFamilyIndex = d->family;
  VkResult r = vkCreateCommandPool(d->handle, &pool, nullptr, &s->pool);
  if (r != VK_SUCCESS) return VkError("vkCreateCommandPool", r);
  auto type = VkStruct<VkSemaphoreTypeCreateInfo>(VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO);
  type.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE;
  auto info = VkStruct<VkSemaphoreCreateInfo>(VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO);
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

hetrt_error_t* DeviceEntries::StreamCreate(hetrt_stream_create_args_t* args) {
  Device* d = nullptr;
  if (hetrt_error_t* e = args->self->devices.Find(args->device, &d)) return e;
  // COPY streams get the second queue where the family has one: its copies
  // overlap compute on the first.
  Queue* queue = args->kind == HETRT_STREAM_COPY && d->num_queues > 1 ? &d->queues[1] : &d->queues[0];
  auto stream = std::make_unique<hetrt_stream>();
  if (hetrt_error_t* e = NewStreamCore(d, queue, &stream->core)) return e;
  args->stream = stream.release();
  return nullptr;
}

hetrt_error_t* DeviceEntries::StreamDestroy(hetrt_stream_args_t* args) {
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
  s->device->workspace.ForgetStream(s);
  ReleaseDeferred(s->device);
  delete stream;  // the state lives on while events recorded on it do
  return error;
}

hetrt_error_t* DeviceEntries::StreamSynchronize(hetrt_stream_args_t* args) {
  Device* d = nullptr;
  if (hetrt_error_t* e = args->self->devices.Find(args->device, &d)) return e;
  StreamCore* s = nullptr;
  if (hetrt_error_t* e = StreamOf(d, args->stream, &s)) return e;
  uint64_t value = 0;
  {
    std::lock_guard<std::mutex> lock(s->mutex);
    if (hetrt_error_t* e = Flush(s)) return e;
    value = s->submitted;
    if (value >= s->error_value) return StreamFailed(s);
  }
  return WaitValue(s, value, args->self->WaitPollUs());
}

hetrt_error_t* DeviceEntries::StreamWaitEvent(hetrt_stream_wait_event_args_t* args) {
  Device* d = nullptr;
  if (hetrt_error_t* e = args->self->devices.Find(args->device, &d)) return e;
  StreamCore* s = nullptr;
  if (hetrt_error_t* e = StreamOf(d, args->stream, &s)) return e;
  hetrt_event* event = args->event;
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

hetrt_error_t* DeviceEntries::StreamSetCurrent(hetrt_stream_current_args_t* args) {
  const hetrt_instance* inst = args->self;
  Device* d = nullptr;
  if (hetrt_error_t* e = args->self->devices.Find(args->device, &d)) return e;
  StreamCore* s = nullptr;
  if (hetrt_error_t* e = StreamOf(d, args->stream, &s)) return e;
  if (!Current::Set(inst->serial, args->device.device_id, args->stream, &args->previous))
    return Current::TableFull("Vulkan");
  return nullptr;
}

}  // namespace hetrt::vulkan
