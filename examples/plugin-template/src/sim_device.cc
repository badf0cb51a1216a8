// The device table of the simulated accelerator: one device (ext_dev:0) with
// its own address space (sim_memory.h). Work runs when it is enqueued, so every
// stream is always drained and an event completes when it is recorded; a real
// device would queue the work and complete events from its driver instead.
#include <time.h>

#include <cstring>

#include "sim_instance.h"

namespace sim {

hetrt_error_t* CheckDevice(DLDevice device) {
  if (device.device_type != kDeviceType)
    return MakeError(
        HETRT_STATUS_INVALID_ARGUMENT,
        "not a simulated device (type " + std::to_string(device.device_type) + "; this plugin serves ext_dev)");
  if (device.device_id < 0 || device.device_id >= kNumDevices)
    return MakeError(HETRT_STATUS_NOT_FOUND, "no simulated device " + std::to_string(device.device_id) + " (" +
                                                 std::to_string(kNumDevices) + " exist)");
  return nullptr;
}

namespace {

// Every entry of the device table (the SDK declares them; DeviceTable wraps
// each in the entry guard).
struct DeviceEntries {
  HETRT_SDK_DEVICE_ENTRIES
  HETRT_SDK_COMMON_DEVICE_ENTRIES
};

hetrt_error_t* CheckStream(DLDevice device, const hetrt_stream* stream) {
  if (hetrt_error_t* e = CheckDevice(device)) return e;
  if (stream != nullptr && stream->device_id != device.device_id)
    return MakeError(HETRT_STATUS_INVALID_ARGUMENT, "the stream belongs to another simulated device");
  return nullptr;
}

hetrt_error_t* DeviceEntries::DeviceCount(hetrt_device_count_args_t* args) {
  if (args->device_type != kDeviceType)
    return MakeError(HETRT_STATUS_INVALID_ARGUMENT, "device type " + std::to_string(args->device_type) +
                                                        " is not declared by the sim plugin (it serves ext_dev)");
  args->count = kNumDevices;
  args->unavailable_reason = "";
  return nullptr;
}

hetrt_error_t* DeviceEntries::DeviceAttribute(hetrt_device_attribute_args_t* args) {
  if (hetrt_error_t* e = CheckDevice(args->device)) return e;
  switch (args->attribute) {
    case HETRT_DEVICE_ATTR_NAME: args->string = "hetrt simulated accelerator (plugin template)"; return nullptr;
    case HETRT_DEVICE_ATTR_DRIVER_VERSION: args->string = "sim 0.1.0"; return nullptr;
    case HETRT_DEVICE_ATTR_HOST_UNIFIED_MEMORY:
      args->value = 0;  // its own address space: copies are needed
      return nullptr;
    case HETRT_DEVICE_ATTR_TOTAL_MEMORY:
      args->value = static_cast<int64_t>(args->self->memory.capacity());
      return nullptr;
    case HETRT_DEVICE_ATTR_MAX_ALIGNMENT: args->value = 4096; return nullptr;  // ABI 2.5
    default:
      return MakeError(HETRT_STATUS_NOT_FOUND,
                       "the simulated device has no attribute " + std::to_string(args->attribute));
  }
}

hetrt_error_t* DeviceEntries::MemoryStats(hetrt_memory_stats_args_t* args) {
  if (hetrt_error_t* e = CheckDevice(args->device)) return e;
  const AddressSpace& memory = args->self->memory;
  args->bytes_in_use = memory.bytes_in_use();
  args->peak_bytes_in_use = memory.peak_bytes_in_use();
  args->bytes_limit = memory.capacity();
  args->num_allocations = memory.num_allocations();
  return nullptr;
}

hetrt_error_t* DeviceEntries::Allocate(hetrt_allocate_args_t* args) {
  if (hetrt_error_t* e = CheckDevice(args->device)) return e;
  if (args->alignment != 0 && (args->alignment & (args->alignment - 1)) != 0)
    return MakeError(HETRT_STATUS_INVALID_ARGUMENT,
                     "alignment " + std::to_string(args->alignment) + " is not a power of two");
  switch (args->kind) {
    case HETRT_MEMORY_DEVICE: {
      // Blocks start at offset 0 of their own allocation: any alignment holds.
      const std::string why = args->self->memory.Allocate(args->nbytes, &args->data);
      if (!why.empty()) return MakeError(HETRT_STATUS_RESOURCE_EXHAUSTED, why);
      args->host_pointer = nullptr;
      return nullptr;
    }
    case HETRT_MEMORY_HOST_PINNED: {  // plain host memory: nothing to pin on a simulator
      const size_t alignment = std::max<uint64_t>(args->alignment, 64);
      void* host =
          std::aligned_alloc(alignment, (std::max<uint64_t>(args->nbytes, 1) + alignment - 1) / alignment * alignment);
      if (host == nullptr) return MakeError(HETRT_STATUS_RESOURCE_EXHAUSTED, "no host memory for a pinned buffer");
      args->data = args->host_pointer = host;
      return nullptr;
    }
    case HETRT_MEMORY_HOST_VISIBLE:
      return MakeError(HETRT_STATUS_UNIMPLEMENTED, "the simulated device's memory is not host-visible");
    default: return MakeError(HETRT_STATUS_INVALID_ARGUMENT, "unknown memory kind " + std::to_string(args->kind));
  }
}

hetrt_error_t* DeviceEntries::Free(hetrt_free_args_t* args) {
  if (hetrt_error_t* e = CheckDevice(args->device)) return e;
  if (args->data == nullptr) return nullptr;  // like free(NULL)
  if (args->kind == HETRT_MEMORY_HOST_PINNED) {
    std::free(args->data);
    return nullptr;
  }
  const std::string why = args->self->memory.Free(args->data);
  return why.empty() ? nullptr : MakeError(HETRT_STATUS_INVALID_ARGUMENT, "free: " + why);
}

bool IsHost(DLDevice d) { return d.device_type == kDLCPU; }
// A question, not a check: no error value is made (and so none can leak).
bool IsSimulated(DLDevice d) { return d.device_type == kDeviceType && d.device_id >= 0 && d.device_id < kNumDevices; }

hetrt_error_t* DeviceEntries::CanCopy(hetrt_can_copy_args_t* args) {
  const bool src_ok = IsHost(args->src_device) || IsSimulated(args->src_device);
  const bool dst_ok = IsHost(args->dst_device) || IsSimulated(args->dst_device);
  args->can_copy = src_ok && dst_ok && !(IsHost(args->src_device) && IsHost(args->dst_device));
  return nullptr;
}

// The host bytes of one side of a copy: host memory as is, device memory resolved.
hetrt_error_t* ResolveSide(const hetrt_instance* self, const hetrt::sdk::CopySide& side, std::byte** out) {
  if (IsHost(side.device)) {
    *out = static_cast<std::byte*>(const_cast<void*>(side.ptr)) + side.offset;
    return nullptr;
  }
  if (hetrt_error_t* e = CheckDevice(side.device)) return e;
  std::string why;
  const void* at_offset = reinterpret_cast<const void*>(reinterpret_cast<uintptr_t>(side.ptr) + side.offset);
  std::byte* at = self->memory.Resolve(at_offset, side.nbytes, &why);
  if (at == nullptr) return MakeError(HETRT_STATUS_INVALID_ARGUMENT, std::string("copy ") + side.which + " " + why);
  *out = at;
  return nullptr;
}

hetrt_error_t* DeviceEntries::Copy(hetrt_copy_args_t* args) {
  if (IsHost(args->src_device) && IsHost(args->dst_device))
    return MakeError(HETRT_STATUS_INVALID_ARGUMENT, "host to host copies are the CPU plugin's");
  std::byte *src = nullptr, *dst = nullptr;
  if (hetrt_error_t* e = hetrt::sdk::ResolveCopySides(*args, ResolveSide, &src, &dst)) return e;
  if (args->nbytes > 0) std::memmove(dst, src, args->nbytes);
  return nullptr;
}

hetrt_error_t* DeviceEntries::StreamCreate(hetrt_stream_create_args_t* args) {
  if (hetrt_error_t* e = CheckDevice(args->device)) return e;
  args->stream = new hetrt_stream{args->device.device_id};
  return nullptr;
}

hetrt_error_t* DeviceEntries::StreamDestroy(hetrt_stream_args_t* args) {
  if (hetrt_error_t* e = CheckStream(args->device, args->stream)) return e;
  Current::Forget(args->stream);
  delete args->stream;
  return nullptr;
}

hetrt_error_t* DeviceEntries::StreamSynchronize(hetrt_stream_args_t* args) {
  return CheckStream(args->device, args->stream);
}

hetrt_error_t* DeviceEntries::StreamWaitEvent(hetrt_stream_wait_event_args_t* args) {
  return CheckStream(args->device, args->stream);  // the event's work is done already
}

hetrt_error_t* DeviceEntries::StreamSetCurrent(hetrt_stream_current_args_t* args) {
  if (hetrt_error_t* e = CheckStream(args->device, args->stream)) return e;
  if (!Current::Set(args->self->serial, args->device.device_id, args->stream, &args->previous))
    return Current::TableFull("simulated");
  return nullptr;
}

hetrt_error_t* DeviceEntries::StreamGetCurrent(hetrt_stream_current_args_t* args) {
  if (hetrt_error_t* e = CheckDevice(args->device)) return e;
  args->stream = Current::Get(args->self->serial, args->device.device_id);
  return nullptr;
}

hetrt_error_t* DeviceEntries::EventCreate(hetrt_event_create_args_t* args) {
  if (hetrt_error_t* e = CheckDevice(args->device)) return e;
  args->event = new hetrt_event;
  return nullptr;
}

hetrt_error_t* DeviceEntries::EventDestroy(hetrt_event_args_t* args) {
  delete args->event;
  return nullptr;
}

hetrt_error_t* DeviceEntries::EventRecord(hetrt_event_record_args_t* args) {
  if (hetrt_error_t* e = CheckStream(args->device, args->stream)) return e;
  args->event->recorded_ns.store(hetrt::sdk::MonotonicNs());
  return nullptr;
}

hetrt_error_t* DeviceEntries::EventQuery(hetrt_event_args_t* args) {
  args->complete = 1;
  return nullptr;
}

hetrt_error_t* DeviceEntries::EventSynchronize(hetrt_event_args_t*) {
  return nullptr;  // the simulated device's work is done when it is issued
}

hetrt_error_t* RecordedAt(const hetrt_event* event, uint64_t* ns) {
  if (event == nullptr) return MakeError(HETRT_STATUS_INVALID_ARGUMENT, "NULL event");
  *ns = event->recorded_ns.load();
  if (*ns == 0) return MakeError(HETRT_STATUS_FAILED_PRECONDITION, "the event was never recorded");
  return nullptr;
}

hetrt_error_t* DeviceEntries::EventElapsed(hetrt_event_elapsed_args_t* args) {
  uint64_t start = 0, end = 0;
  if (hetrt_error_t* e = RecordedAt(args->start, &start)) return e;
  if (hetrt_error_t* e = RecordedAt(args->end, &end)) return e;
  args->milliseconds = end >= start ? static_cast<double>(end - start) / 1e6 : 0.0;
  return nullptr;
}

hetrt_error_t* DeviceEntries::EventTimestamp(hetrt_event_timestamp_args_t* args) {
  return RecordedAt(args->event, &args->device_ns);
}

hetrt_error_t* DeviceEntries::DeviceClock(hetrt_device_clock_args_t* args) {
  if (hetrt_error_t* e = CheckDevice(args->device)) return e;
  args->device_ns = args->host_ns = hetrt::sdk::MonotonicNs();  // the device clock is the host's
  args->uncertainty_ns = 0;
  return nullptr;
}

// Scratch memory for kernels is device memory like any other (no pool: a
// real plugin keeps one, since this is called on the hot path).
hetrt_error_t* DeviceEntries::WorkspaceAlloc(hetrt_workspace_args_t* args) {
  if (hetrt_error_t* e = CheckDevice(args->device)) return e;
  const std::string why = args->self->memory.Allocate(args->nbytes, &args->data);
  return why.empty() ? nullptr : MakeError(HETRT_STATUS_RESOURCE_EXHAUSTED, "workspace: " + why);
}

hetrt_error_t* DeviceEntries::WorkspaceFree(hetrt_workspace_args_t* args) {
  if (hetrt_error_t* e = CheckDevice(args->device)) return e;
  const std::string why = args->self->memory.Free(args->data);
  return why.empty() ? nullptr : MakeError(HETRT_STATUS_INVALID_ARGUMENT, "workspace free: " + why);
}

hetrt_error_t* DeviceEntries::SetDevice(hetrt_set_device_args_t* args) {
  if (hetrt_error_t* e = CheckDevice(args->device)) return e;
  if (!Current::SetDevice(args->self->serial, args->device.device_id)) return Current::TableFull("simulated");
  return nullptr;
}

}  // namespace

const hetrt_device_api_t kDeviceApi = hetrt::sdk::DeviceTable<DeviceEntries, kLabel>();

}  // namespace sim
