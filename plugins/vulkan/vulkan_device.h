// Vulkan physical devices through the loader, all owned by an instance:
// discovery (once, on first use), a logical device with a compute queue per
// physical device, memory, copies, streams (command buffers batched until a
// boundary), events (timeline-semaphore values) and clocks.
#pragma once

#include <array>
#include <atomic>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "hetrt/sdk/pinned_blocks.h"
#include "hetrt/sdk/wake_up.h"
#include "vulkan_common.h"

namespace hetrt::vulkan {

struct Device;

struct Queue {
  VkQueue handle = VK_NULL_HANDLE;
  std::mutex mutex;  // vkQueueSubmit needs the queue externally synchronised
};

// Host-visible coherent memory handed out in slices (UBO scalars of a
// dispatch, staging of a copy) that stay valid until the batch that used them
// has completed.
struct TransientChunk {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  uint8_t* mapped = nullptr;
  uint64_t size = 0;
  uint64_t used = 0;
  uint64_t last_value = 0;  // the batch that last used it
};

struct DescriptorPool {
  VkDescriptorPool handle = VK_NULL_HANDLE;
  uint64_t last_value = 0;
};

// The state behind a stream, shared with the events recorded on it so that an
// event outlives its stream safely. Work is recorded into the open command
// buffer and submitted at a boundary (event waits, synchronize, blocking
// copies, the batch limit), signalling `timeline` with the batch's value.
// `mutex` guards everything below it: the stream's thread records while
// another thread may flush it to wait for an event.
struct StreamCore {
  Device* device = nullptr;
  Queue* queue = nullptr;
  VkSemaphore timeline = VK_NULL_HANDLE;

  std::mutex mutex;
  VkCommandPool pool = VK_NULL_HANDLE;
  uint64_t submitted = 0;  // value of the last batch submitted
  VkCommandBuffer open = VK_NULL_HANDLE;
  uint32_t work = 0;                                    // dispatches and copies in the open batch
  bool nonempty = false;                                // the open batch has something to submit
  std::vector<std::pair<VkSemaphore, uint64_t>> waits;  // for the open batch
  std::vector<std::shared_ptr<StreamCore>> held;        // streams whose semaphores our batches wait on
  struct InFlight {
    uint64_t value;
    VkCommandBuffer commands;
  };
  std::deque<InFlight> in_flight;
  std::vector<VkCommandBuffer> free_commands;
  TransientChunk* chunk = nullptr;
  std::vector<TransientChunk*> retired_chunks, free_chunks;
  DescriptorPool* descriptors = nullptr;
  std::vector<DescriptorPool*> retired_pools, free_pools;
  std::vector<VkSemaphore> submit_semaphores;  // Flush's scratch, kept to avoid allocating
  std::vector<uint64_t> submit_values;
  std::vector<VkPipelineStageFlags> submit_stages;
  // The first failed submission: every batch from error_value on carries it.
  std::string error;
  uint64_t error_value = UINT64_MAX;

  uint64_t open_value() const { return submitted + 1; }
  ~StreamCore();
};

struct Device {
  hetrt_instance* inst = nullptr;
  int id = 0;
  VkPhysicalDevice physical = VK_NULL_HANDLE;
  VkDevice handle = VK_NULL_HANDLE;
  uint32_t family = 0;
  Queue queues[2];
  int num_queues = 1;  // 2: copy streams get a queue of their own
  VkPhysicalDeviceProperties props{};
  VkPhysicalDeviceMemoryProperties memory{};
  std::string name;  // "llvmpipe (LLVM 15.0.6, 256 bits)"
  // What device_attribute reports: facts.name "<name> (cpu), Mesa 22.3.6,
  // Vulkan 1.3.230", facts.driver_version driverInfo (else the packed driver
  // version), facts.compute_version the API version "1.3.230".
  sdk::DeviceFacts facts;
  uint32_t max_spirv = 0x10300;       // highest SPIR-V version the device consumes
  int device_type = 0;                // memory type of DEVICE allocations
  bool device_mappable = false;       // ... host-visible and coherent: mapped for direct copies
  int visible_type = -1;              // HOST_VISIBLE allocations (-1: none)
  int pinned_type = -1;               // HOST_PINNED allocations and staging (-1: none)
  uint32_t max_push_descriptors = 0;  // 0: no VK_KHR_push_descriptor
  PFN_vkCmdPushDescriptorSetKHR push_descriptor = nullptr;
  PFN_vkGetCalibratedTimestampsEXT calibrated = nullptr;  // with VK_TIME_DOMAIN_CLOCK_MONOTONIC_EXT
  uint64_t timestamp_mask = 0;                            // 0: the queue writes no timestamps
  double timestamp_period = 1;                            // ns per tick

  std::shared_ptr<StreamCore> default_stream;
  VkPipelineCache pipeline_cache = VK_NULL_HANDLE;
  std::mutex cache_mutex;  // the on-disk copy
  std::string cache_file;  // "" without HETRT_VULKAN_CACHE_DIR

  // memory_stats: allocate() minus free() of this instance.
  sdk::MemoryCounters memory_counters;
  std::atomic<uint64_t> submissions{0};
  sdk::WorkspacePool<const StreamCore*> workspace;  // keyed by the stream a block was freed on

  // Live streams, and freed buffers that pending work may still use: a
  // buffer is destroyed once every stream has passed the point it was freed at.
  struct Deferred {
    Buffer* buffer;
    std::vector<std::pair<StreamCore*, uint64_t>> waits;
  };
  std::mutex streams_mutex;
  std::vector<StreamCore*> streams;
  std::vector<Deferred> deferred;
};

// Destroys a buffer's Vulkan objects now (no work may use it any more).
void DestroyBuffer(Device* d, Buffer* b);
// Writes the device's pipeline cache to HETRT_VULKAN_CACHE_DIR (no-op without it).
void SavePipelineCache(Device* d);

}  // namespace hetrt::vulkan

// One instance of the plugin: everything it discovers and creates.
struct hetrt_instance {
  const hetrt_host_api_t* host = nullptr;
  hetrt::sdk::InstanceSerial serial;  // keys the thread-local current device/stream
  // Options (set_option): see kOptions in vulkan_plugin.cc.
  std::atomic<int64_t> wait_poll_us{hetrt::sdk::PollBudget::kAuto};  // kAuto: hetrt/sdk/wake_up.h
  hetrt::sdk::PollBudget poll_budget;
  int64_t WaitPollUs() { return poll_budget.Us(wait_poll_us.load(std::memory_order_relaxed)); }
  std::atomic<int64_t> batch_limit{256};
  std::atomic<bool> direct_mapping{true};
  std::atomic<bool> push_descriptors{true};
  std::atomic<bool> validate_spirv{true};
  std::atomic<bool> calibrated_clock{true};

  // Validation (HETRT_VULKAN_VALIDATION=1): the layer and a messenger that
  // counts and logs what it reports.
  bool validation = false;
  std::atomic<uint64_t> validation_messages{0};

  // Discovered on first use; never fails: no device gives an empty list + reason.
  hetrt::sdk::DeviceList<hetrt::vulkan::Device> devices{kDLVulkan, "Vulkan", [this](auto& list) { Discover(list); }};
  // Reports a packed function's failure through the host's set_last_error.
  void ReportError(const char* message) const noexcept { hetrt::sdk::ReportError(host, message); }
  void ReportError(const std::string& message) const noexcept { ReportError(message.c_str()); }
  void Log(hetrt_log_level_t level, const std::string& message) const noexcept {
    hetrt::sdk::Log(host, level, "vulkan", message.c_str());
  }

  // HOST_PINNED allocations: host pointer -> mapped buffer.
  hetrt::sdk::PinnedBlocks<hetrt::vulkan::Buffer*> pinned;

  ~hetrt_instance();

 private:
  void Discover(hetrt::sdk::DeviceList<hetrt::vulkan::Device>& list);
  hetrt_error_t* CreateInstance();
  VkInstance vk_ = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
};

// A stream: a handle on its shared state.
struct hetrt_stream {
  std::shared_ptr<hetrt::vulkan::StreamCore> core;
};

// An event: a value on the timeline of the stream it was last recorded on
// (complete once the semaphore reaches it), plus a timestamp query for TIMING
// events. The stream's state is shared, so the event outlives the stream.
struct hetrt_event {
  hetrt::vulkan::Device* device = nullptr;
  uint32_t flags = 0;
  VkQueryPool query = VK_NULL_HANDLE;                 // TIMING events on devices with timestamps
  std::shared_ptr<hetrt::vulkan::StreamCore> stream;  // NULL until recorded
  uint64_t value = 0;
  bool stamped = false;  // the last record wrote a timestamp
};

namespace hetrt::vulkan {

// The calling thread's current device and streams, per instance (set_device,
// stream_set_current). Kernel-launch hot path: no allocation, no lock.
using Current = sdk::ThreadCurrent<hetrt_stream>;
// The stream work on `device` from this thread goes to (NULL current stream:
// the device's default stream).
StreamCore* CurrentStream(const hetrt_instance* inst, Device* device);

// ---- Memory (vulkan_memory.cc) ----

inline constexpr VkBufferUsageFlags kBufferUsage =
    VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
inline constexpr VkMemoryPropertyFlags kMappable =
    VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
// The first memory type in `allowed` with the `required` flags; -1: none.
int FindMemoryType(const Device& d, uint32_t allowed, VkMemoryPropertyFlags required);
// A buffer with its own memory of `type`, mapped for its lifetime when `map`.
hetrt_error_t* CreateBuffer(Device* d, uint64_t nbytes, VkBufferUsageFlags usage, int type, bool map, Buffer* out);

// ---- Streams (vulkan_stream.cc) ----

// The state of `stream` on `d` (NULL: d's default stream).
hetrt_error_t* StreamOf(Device* d, hetrt_stream* stream, StreamCore** out);
hetrt_error_t* NewStreamCore(Device* d, Queue* queue, std::shared_ptr<StreamCore>* out);
// The value the stream's timeline semaphore has reached.
uint64_t Completed(const StreamCore* s);
// The error of a stream whose submission failed.
hetrt_error_t* StreamFailed(const StreamCore* s);
// Waits until `s` reached `value` (submitted already), polling `poll_us`
// microseconds before sleeping in the driver.
hetrt_error_t* WaitValue(StreamCore* s, uint64_t value, int64_t poll_us);
// Submits `s`'s open batch if it holds `value`, then waits for `value`.
hetrt_error_t* FlushAndWait(StreamCore* s, uint64_t value, int64_t poll_us);
// Destroys deferred buffers whose streams have all passed them.
void ReleaseDeferred(Device* d);

// ---- Recording into a stream; the caller holds stream->mutex. ----

// Returns finished command buffers, transient chunks and descriptor pools to
// the stream's free lists.
void Reclaim(StreamCore* s);
// Opens the stream's batch if needed and orders the next command after the
// batch's earlier work (a memory barrier). Returns the command buffer.
hetrt_error_t* BeginWork(StreamCore* s, VkCommandBuffer* out);
// Submits when the batch reached the instance's batch_limit.
hetrt_error_t* EndWork(StreamCore* s);
// Returns finished command buffers, transient chunks and descriptor pools to
// the stream's free lists.
void Reclaim(StreamCore* s);
// Opens the stream's batch (a command buffer in the recording state) if needed.
hetrt_error_t* OpenBatch(StreamCore* s);
// Submits the open batch (nothing when it is empty).
hetrt_error_t* Flush(StreamCore* s);
// `size` bytes of host-visible memory valid until the open batch completes.
hetrt_error_t* TransientSlice(StreamCore* s, uint64_t size, uint64_t alignment, VkBuffer* buffer, uint64_t* offset,
                              uint8_t** host);
// A descriptor set of `layout` valid until the open batch completes (devices
// without push descriptors).
hetrt_error_t* AllocateDescriptorSet(StreamCore* s, VkDescriptorSetLayout layout, VkDescriptorSet* out);

// The entries of the device table, each defined in the file of its concept:
// instance (count, attributes, set_device), memory, copy, stream, event.
struct DeviceEntries : sdk::CommonDeviceEntries<hetrt_instance, hetrt_stream> {
  HETRT_SDK_DEVICE_ENTRIES
};

// The device table of the plugin.
extern const hetrt_device_api_t kDeviceApi;

}  // namespace hetrt::vulkan
