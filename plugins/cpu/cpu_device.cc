#include "cpu_device.h"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

#include "cpu_info.h"
#include "cpu_instance.h"
#include "hetrt/sdk/device_table.h"
#include "plugin_error.h"
#include "workspace_pool.h"

// CPU work completes before each call returns, so a stream is only a tag that
// callers can keep per executor, and an event is the moment it was recorded.
struct hetrt_stream {
  hetrt_instance_t* owner;  // COMPUTE and COPY streams behave alike on the CPU
};

struct hetrt_event {
  hetrt_instance_t* owner;
  uint32_t flags;
  std::atomic<uint64_t> recorded_ns{0};  // CLOCK_MONOTONIC; 0 until recorded
};

namespace hetrt::cpu {
namespace {

// In front of every allocation, inside its alignment padding: free finds the
// block and its size here, with no global table and no lock.
struct AllocHeader {
  hetrt_instance_t* owner;
  uint64_t nbytes;  // as requested, for memory_stats
  uint64_t offset;  // from the start of the block to the data
  uint64_t tag;     // kAllocTag while live: catches double and foreign frees
};
static_assert(sizeof(AllocHeader) <= kMinAllocAlignment);
constexpr uint64_t kAllocTag = 0x68657472742d6d6d;  // "hetrt-mm"

AllocHeader* HeaderOf(void* data) { return static_cast<AllocHeader*>(data) - 1; }

uint64_t MonotonicNs() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<uint64_t>(now.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(now.tv_nsec);
}

bool IsOurDevice(DLDevice device) { return device.device_type == kDLCPU && device.device_id == 0; }

// The entries of the device table (hetrt/sdk/device_table.h builds it; the
// CPU plugin writes all of them itself).
struct DeviceEntries {
  HETRT_SDK_DEVICE_ENTRIES
  HETRT_SDK_COMMON_DEVICE_ENTRIES
};

hetrt_error_t* CheckDevice(DLDevice device) {
  if (IsOurDevice(device)) return nullptr;
  return MakeErrorf(HETRT_STATUS_INVALID_ARGUMENT,
                    "cpu plugin: no device (type %d, id %d); it serves only (type 1, id 0)",
                    static_cast<int>(device.device_type), static_cast<int>(device.device_id));
}

// NULL is the default stream; anything else must come from this instance.
hetrt_error_t* CheckStream(const hetrt_instance_t* self, const hetrt_stream_t* stream) {
  if (stream == nullptr || stream->owner == self) return nullptr;
  return MakeErrorf(HETRT_STATUS_INVALID_ARGUMENT, "cpu plugin: stream %p was not created by this instance",
                    static_cast<const void*>(stream));
}

hetrt_error_t* CheckEvent(const hetrt_instance_t* self, const hetrt_event_t* event) {
  if (event != nullptr && event->owner == self) return nullptr;
  return MakeErrorf(HETRT_STATUS_INVALID_ARGUMENT, "cpu plugin: event %p is null or was not created by this instance",
                    static_cast<const void*>(event));
}

hetrt_error_t* DeviceEntries::DeviceCount(hetrt_device_count_args_t* args) {
  if (args->device_type != kDLCPU) {
    return MakeErrorf(HETRT_STATUS_INVALID_ARGUMENT, "cpu plugin: device type %d is not served (only 1, kDLCPU)",
                      static_cast<int>(args->device_type));
  }
  args->count = 1;
  args->unavailable_reason = nullptr;
  return nullptr;
}

hetrt_error_t* DeviceEntries::DeviceAttribute(hetrt_device_attribute_args_t* args) {
  if (hetrt_error_t* error = CheckDevice(args->device)) return error;
  args->value = 0;
  args->string = nullptr;
  const int32_t attribute = args->attribute;
  switch (attribute) {
    case HETRT_DEVICE_ATTR_NAME: {
      // Stable until a set_option changes the thread count and so the name.
      std::lock_guard<std::mutex> lock(args->self->name_mutex);
      args->string = args->self->name.c_str();
      return nullptr;
    }
    case HETRT_DEVICE_ATTR_HOST_UNIFIED_MEMORY: args->value = 1; return nullptr;
    case HETRT_DEVICE_ATTR_TOTAL_MEMORY: {
      const long pages = sysconf(_SC_PHYS_PAGES);
      const long page_size = sysconf(_SC_PAGESIZE);
      if (pages <= 0 || page_size <= 0) break;
      args->value = static_cast<int64_t>(pages) * page_size;
      return nullptr;
    }
    case HETRT_DEVICE_ATTR_MULTIPROCESSOR_COUNT: args->value = AvailableCoreCount(); return nullptr;
    case HETRT_DEVICE_ATTR_COPY_STREAMS: args->value = 0; return nullptr;
    case HETRT_DEVICE_ATTR_MAX_ALIGNMENT: args->value = 4096; return nullptr;
    default: break;
  }
  return MakeErrorf(HETRT_STATUS_NOT_FOUND, "cpu plugin: device attribute %d is not known",
                    static_cast<int>(attribute));
}

hetrt_error_t* DeviceEntries::MemoryStats(hetrt_memory_stats_args_t* args) {
  if (hetrt_error_t* error = CheckDevice(args->device)) return error;
  args->self->memory_counters.Report(args, 0);
  return nullptr;
}

hetrt_error_t* CheckKind(int32_t kind) {
  if (kind == HETRT_MEMORY_DEVICE || kind == HETRT_MEMORY_HOST_VISIBLE || kind == HETRT_MEMORY_HOST_PINNED) {
    return nullptr;
  }
  return MakeErrorf(HETRT_STATUS_INVALID_ARGUMENT, "cpu plugin: unknown memory kind %d", static_cast<int>(kind));
}

hetrt_error_t* DeviceEntries::Allocate(hetrt_allocate_args_t* args) {
  args->data = nullptr;
  args->host_pointer = nullptr;
  if (hetrt_error_t* error = CheckDevice(args->device)) return error;
  if (hetrt_error_t* error = CheckKind(args->kind)) return error;  // all of them host memory
  const uint64_t requested = args->alignment;
  if (requested == 0 || (requested & (requested - 1)) != 0) {
    return MakeErrorf(HETRT_STATUS_INVALID_ARGUMENT, "cpu plugin: alignment %llu is not a power of two",
                      static_cast<unsigned long long>(requested));
  }
  const uint64_t alignment = std::max(requested, kMinAllocAlignment);
  // One alignment unit in front holds the header; at least one more for the
  // data, so that a zero-byte request still gets a distinct pointer.
  const uint64_t nbytes = std::max<uint64_t>(args->nbytes, 1);
  if (alignment > SIZE_MAX / 4 || nbytes > SIZE_MAX - 2 * alignment) {
    return MakeErrorf(HETRT_STATUS_RESOURCE_EXHAUSTED, "cpu plugin: cannot allocate %llu bytes aligned to %llu",
                      static_cast<unsigned long long>(args->nbytes), static_cast<unsigned long long>(alignment));
  }
  const size_t total = static_cast<size_t>(alignment + ((nbytes + alignment - 1) & ~(alignment - 1)));
  auto* block = static_cast<std::byte*>(std::aligned_alloc(static_cast<size_t>(alignment), total));
  if (block == nullptr) {
    return MakeErrorf(HETRT_STATUS_RESOURCE_EXHAUSTED, "cpu plugin: cannot allocate %llu bytes aligned to %llu",
                      static_cast<unsigned long long>(args->nbytes), static_cast<unsigned long long>(alignment));
  }
  void* data = block + alignment;
  hetrt_instance_t* self = args->self;
  *HeaderOf(data) = AllocHeader{self, args->nbytes, alignment, kAllocTag};

  self->memory_counters.Allocated(args->nbytes);

  args->data = data;
  args->host_pointer = data;
  return nullptr;
}

hetrt_error_t* DeviceEntries::Free(hetrt_free_args_t* args) {
  if (hetrt_error_t* error = CheckDevice(args->device)) return error;
  if (args->data == nullptr) return nullptr;  // like free(NULL), whatever the kind
  hetrt_instance_t* self = args->self;
  if (hetrt_error_t* error = CheckKind(args->kind)) {
    self->memory_counters.FreeFailed();
    return error;
  }
  AllocHeader* header = HeaderOf(args->data);
  if (header->tag != kAllocTag || header->owner != self) {
    self->memory_counters.FreeFailed();
    return MakeErrorf(HETRT_STATUS_INVALID_ARGUMENT,
                      "cpu plugin: free of %p, which this instance did not allocate or already freed", args->data);
  }
  header->tag = 0;
  self->memory_counters.Freed(header->nbytes);
  std::free(static_cast<std::byte*>(args->data) - header->offset);
  return nullptr;
}

hetrt_error_t* DeviceEntries::CanCopy(hetrt_can_copy_args_t* args) {
  // Never an error: the core asks about every pair and stages the rest.
  args->can_copy = IsOurDevice(args->src_device) && IsOurDevice(args->dst_device) ? 1 : 0;
  return nullptr;
}

hetrt_error_t* DeviceEntries::Copy(hetrt_copy_args_t* args) {
  if (hetrt_error_t* error = CheckDevice(args->src_device)) return error;
  if (hetrt_error_t* error = CheckDevice(args->dst_device)) return error;
  if (hetrt_error_t* error = CheckStream(args->self, args->stream)) return error;
  if (args->nbytes == 0) return nullptr;
  if (args->src == nullptr || args->dst == nullptr) {
    return MakeErrorf(HETRT_STATUS_INVALID_ARGUMENT, "cpu plugin: copy of %llu bytes with a null pointer",
                      static_cast<unsigned long long>(args->nbytes));
  }
  // Blocking or not, the bytes have arrived on return. memmove: an in-place
  // reshuffle within one buffer is a legal request too.
  std::memmove(static_cast<std::byte*>(args->dst) + args->dst_offset,
               static_cast<const std::byte*>(args->src) + args->src_offset, args->nbytes);
  return nullptr;
}

// The calling thread's current streams, one entry per instance that has one.
// Keyed by instance id, not address, so a new instance at a reused address
// starts from the default stream.
struct CurrentStream {
  uint64_t instance_id;
  hetrt_stream_t* stream;
};
thread_local std::vector<CurrentStream> t_current_streams;

std::vector<CurrentStream>::iterator FindCurrent(const hetrt_instance_t* self) {
  return std::find_if(t_current_streams.begin(), t_current_streams.end(),
                      [self](const CurrentStream& entry) { return entry.instance_id == self->id; });
}

hetrt_error_t* DeviceEntries::StreamCreate(hetrt_stream_create_args_t* args) {
  args->stream = nullptr;
  if (hetrt_error_t* error = CheckDevice(args->device)) return error;
  args->stream = new hetrt_stream_t{args->self};
  return nullptr;
}

hetrt_error_t* DeviceEntries::StreamDestroy(hetrt_stream_args_t* args) {
  if (hetrt_error_t* error = CheckDevice(args->device)) return error;
  if (args->stream == nullptr) {
    return MakeErrorf(HETRT_STATUS_INVALID_ARGUMENT, "cpu plugin: the default stream cannot be destroyed");
  }
  if (hetrt_error_t* error = CheckStream(args->self, args->stream)) return error;
  // Only this thread's slot can be reset; other threads must not use it again.
  auto current = FindCurrent(args->self);
  if (current != t_current_streams.end() && current->stream == args->stream) {
    t_current_streams.erase(current);
  }
  delete args->stream;
  return nullptr;
}

hetrt_error_t* DeviceEntries::StreamSynchronize(hetrt_stream_args_t* args) {
  if (hetrt_error_t* error = CheckDevice(args->device)) return error;
  return CheckStream(args->self, args->stream);
}

hetrt_error_t* DeviceEntries::StreamWaitEvent(hetrt_stream_wait_event_args_t* args) {
  if (hetrt_error_t* error = CheckDevice(args->device)) return error;
  if (hetrt_error_t* error = CheckStream(args->self, args->stream)) return error;
  return CheckEvent(args->self, args->event);  // the event's work is already done
}

hetrt_error_t* DeviceEntries::StreamSetCurrent(hetrt_stream_current_args_t* args) {
  args->previous = nullptr;
  if (hetrt_error_t* error = CheckDevice(args->device)) return error;
  if (hetrt_error_t* error = CheckStream(args->self, args->stream)) return error;
  auto current = FindCurrent(args->self);
  if (current == t_current_streams.end()) {
    // push_back may throw; nothing has changed yet then.
    if (args->stream != nullptr) t_current_streams.push_back({args->self->id, args->stream});
    return nullptr;
  }
  args->previous = current->stream;
  if (args->stream == nullptr) {
    t_current_streams.erase(current);  // back to the default stream
  } else {
    current->stream = args->stream;
  }
  return nullptr;
}

hetrt_error_t* DeviceEntries::StreamGetCurrent(hetrt_stream_current_args_t* args) {
  args->stream = nullptr;
  if (hetrt_error_t* error = CheckDevice(args->device)) return error;
  auto current = FindCurrent(args->self);
  if (current != t_current_streams.end()) args->stream = current->stream;
  return nullptr;
}

hetrt_error_t* DeviceEntries::EventCreate(hetrt_event_create_args_t* args) {
  args->event = nullptr;
  if (hetrt_error_t* error = CheckDevice(args->device)) return error;
  // Every event keeps its time: HETRT_EVENT_TIMING costs the CPU nothing.
  args->event = new hetrt_event_t{args->self, args->flags};
  return nullptr;
}

hetrt_error_t* DeviceEntries::EventDestroy(hetrt_event_args_t* args) {
  if (hetrt_error_t* error = CheckDevice(args->device)) return error;
  if (args->event == nullptr) return nullptr;  // like free(NULL)
  if (hetrt_error_t* error = CheckEvent(args->self, args->event)) return error;
  delete args->event;
  return nullptr;
}

hetrt_error_t* DeviceEntries::EventRecord(hetrt_event_record_args_t* args) {
  if (hetrt_error_t* error = CheckDevice(args->device)) return error;
  if (hetrt_error_t* error = CheckStream(args->self, args->stream)) return error;
  if (hetrt_error_t* error = CheckEvent(args->self, args->event)) return error;
  args->event->recorded_ns.store(MonotonicNs(), std::memory_order_relaxed);
  return nullptr;
}

// Query and synchronize: everything recorded on the CPU is already complete.
hetrt_error_t* DeviceEntries::EventQuery(hetrt_event_args_t* args) {
  if (hetrt_error_t* error = CheckDevice(args->device)) return error;
  if (hetrt_error_t* error = CheckEvent(args->self, args->event)) return error;
  args->complete = 1;
  return nullptr;
}

hetrt_error_t* DeviceEntries::EventSynchronize(hetrt_event_args_t* args) {
  if (hetrt_error_t* error = CheckDevice(args->device)) return error;
  return CheckEvent(args->self, args->event);
}

// The recorded time of `event`, or FAILED_PRECONDITION before any record.
hetrt_error_t* RecordedNs(const hetrt_instance_t* self, const hetrt_event_t* event, uint64_t* ns) {
  if (hetrt_error_t* error = CheckEvent(self, event)) return error;
  *ns = event->recorded_ns.load(std::memory_order_relaxed);
  if (*ns != 0) return nullptr;
  return MakeErrorf(HETRT_STATUS_FAILED_PRECONDITION, "cpu plugin: time asked of event %p, which was never recorded",
                    static_cast<const void*>(event));
}

hetrt_error_t* DeviceEntries::EventElapsed(hetrt_event_elapsed_args_t* args) {
  if (hetrt_error_t* error = CheckDevice(args->device)) return error;
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  if (hetrt_error_t* error = RecordedNs(args->self, args->start, &start_ns)) return error;
  if (hetrt_error_t* error = RecordedNs(args->self, args->end, &end_ns)) return error;
  // Signed: `end` may have been recorded first.
  args->milliseconds = static_cast<double>(static_cast<int64_t>(end_ns - start_ns)) / 1e6;
  return nullptr;
}

hetrt_error_t* DeviceEntries::EventTimestamp(hetrt_event_timestamp_args_t* args) {
  if (hetrt_error_t* error = CheckDevice(args->device)) return error;
  return RecordedNs(args->self, args->event, &args->device_ns);
}

hetrt_error_t* DeviceEntries::DeviceClock(hetrt_device_clock_args_t* args) {
  if (hetrt_error_t* error = CheckDevice(args->device)) return error;
  // The device clock is the host clock.
  args->device_ns = args->host_ns = MonotonicNs();
  args->uncertainty_ns = 0;
  return nullptr;
}

// Hot path: a failure builds an error value, success touches no heap once the
// thread's stack is warm. The stacks are per thread and shared by instances.
hetrt_error_t* DeviceEntries::WorkspaceAlloc(hetrt_workspace_args_t* args) {
  args->data = nullptr;
  if (hetrt_error_t* error = CheckDevice(args->device)) return error;
  args->data = ThreadWorkspace().Allocate(args->nbytes);
  if (args->data != nullptr) return nullptr;
  return MakeErrorf(HETRT_STATUS_RESOURCE_EXHAUSTED, "cpu plugin: cannot allocate %llu bytes of workspace",
                    static_cast<unsigned long long>(args->nbytes));
}

hetrt_error_t* DeviceEntries::WorkspaceFree(hetrt_workspace_args_t* args) {
  if (hetrt_error_t* error = CheckDevice(args->device)) return error;
  if (ThreadWorkspace().Free(args->data)) return nullptr;
  return MakeErrorf(HETRT_STATUS_INVALID_ARGUMENT,
                    "cpu plugin: workspace_free of %p, which this thread's workspace_alloc did not "
                    "hand out, or already freed",
                    args->data);
}

hetrt_error_t* DeviceEntries::SetDevice(hetrt_set_device_args_t* args) {
  return CheckDevice(args->device);  // one CPU device: nothing to select
}

const hetrt_device_api_t kDeviceApi = sdk::DeviceTable<DeviceEntries, kLabel>();

}  // namespace

const hetrt_device_api_t* CpuDeviceApi() { return &kDeviceApi; }

}  // namespace hetrt::cpu
