#include "cpu_device.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include "cpu_info.h"
#include "host_services.h"
#include "parallel_api.h"
#include "plugin_error.h"
#include "workspace_pool.h"

// CPU work completes before each call returns, so an event is just the moment
// it was recorded.
struct hetrt_event {
  std::chrono::steady_clock::time_point recorded_at;
  bool recorded = false;
};

namespace hetrt::cpu {
namespace {

bool IsOurDevice(DLDevice device) {
  return device.device_type == kDLCPU && device.device_id == 0;
}

hetrt_error_t* CheckDevice(DLDevice device) {
  if (IsOurDevice(device)) return nullptr;
  return MakeError(HETRT_STATUS_INVALID_ARGUMENT,
                   "cpu plugin: no device (type %d, id %d); it serves only (type 1, id 0)",
                   static_cast<int>(device.device_type), static_cast<int>(device.device_id));
}

// stream_create hands out only the default (NULL) stream.
hetrt_error_t* CheckStream(hetrt_stream_t* stream) {
  if (stream == nullptr) return nullptr;
  return MakeError(HETRT_STATUS_INVALID_ARGUMENT,
                   "cpu plugin: stream %p was not created by this plugin", static_cast<void*>(stream));
}

hetrt_error_t* DeviceCount(hetrt_device_count_args_t* args) {
  if (args == nullptr) return MakeError(HETRT_STATUS_INVALID_ARGUMENT, "cpu plugin: null args");
  if (args->device_type != kDLCPU) {
    return MakeError(HETRT_STATUS_INVALID_ARGUMENT,
                     "cpu plugin: device type %d is not served (only 1, kDLCPU)",
                     static_cast<int>(args->device_type));
  }
  args->count = 1;
  args->unavailable_reason = nullptr;
  return nullptr;
}

hetrt_error_t* DeviceName(DLDevice device, char* buffer, size_t buffer_size) {
  if (hetrt_error_t* error = CheckDevice(device)) return error;
  if (buffer == nullptr || buffer_size == 0) {
    return MakeError(HETRT_STATUS_INVALID_ARGUMENT, "cpu plugin: no buffer for the device name");
  }
  try {
    // Truncated to fit: the name is for people, not for parsing.
    std::snprintf(buffer, buffer_size, "%s (%d threads)", CpuModelName().c_str(),
                  static_cast<int>(ThreadPoolSize()));
  } catch (const std::bad_alloc&) {
    return MakeError(HETRT_STATUS_RESOURCE_EXHAUSTED, "cpu plugin: out of memory");
  }
  return nullptr;
}

hetrt_error_t* Allocate(hetrt_allocate_args_t* args) {
  if (args == nullptr) return MakeError(HETRT_STATUS_INVALID_ARGUMENT, "cpu plugin: null args");
  if (hetrt_error_t* error = CheckDevice(args->device)) return error;
  const uint64_t requested = args->alignment;
  if (requested == 0 || (requested & (requested - 1)) != 0) {
    return MakeError(HETRT_STATUS_INVALID_ARGUMENT,
                     "cpu plugin: alignment %llu is not a power of two",
                     static_cast<unsigned long long>(requested));
  }
  const uint64_t alignment = requested > kMinAllocAlignment ? requested : kMinAllocAlignment;
  // aligned_alloc wants a multiple of the alignment, and a zero-byte request
  // still gets a distinct pointer.
  const uint64_t nbytes = args->nbytes > 0 ? args->nbytes : 1;
  if (nbytes > SIZE_MAX - (alignment - 1)) {
    return MakeError(HETRT_STATUS_RESOURCE_EXHAUSTED, "cpu plugin: cannot allocate %llu bytes",
                     static_cast<unsigned long long>(args->nbytes));
  }
  const size_t rounded = static_cast<size_t>((nbytes + alignment - 1) & ~(alignment - 1));
  void* data = std::aligned_alloc(static_cast<size_t>(alignment), rounded);
  if (data == nullptr) {
    return MakeError(HETRT_STATUS_RESOURCE_EXHAUSTED,
                     "cpu plugin: cannot allocate %llu bytes aligned to %llu",
                     static_cast<unsigned long long>(args->nbytes),
                     static_cast<unsigned long long>(alignment));
  }
  args->data = data;
  return nullptr;
}

hetrt_error_t* Free(DLDevice device, void* data) {
  if (hetrt_error_t* error = CheckDevice(device)) return error;
  std::free(data);
  return nullptr;
}

hetrt_error_t* Copy(hetrt_copy_args_t* args) {
  if (args == nullptr) return MakeError(HETRT_STATUS_INVALID_ARGUMENT, "cpu plugin: null args");
  if (hetrt_error_t* error = CheckDevice(args->src_device)) return error;
  if (hetrt_error_t* error = CheckDevice(args->dst_device)) return error;
  if (hetrt_error_t* error = CheckStream(args->stream)) return error;
  if (args->nbytes == 0) return nullptr;
  if (args->src == nullptr || args->dst == nullptr) {
    return MakeError(HETRT_STATUS_INVALID_ARGUMENT, "cpu plugin: copy of %llu bytes with a null pointer",
                     static_cast<unsigned long long>(args->nbytes));
  }
  // memmove: an in-place reshuffle within one buffer is a legal request too.
  std::memmove(static_cast<std::byte*>(args->dst) + args->dst_offset,
               static_cast<const std::byte*>(args->src) + args->src_offset, args->nbytes);
  return nullptr;
}

hetrt_error_t* StreamCreate(DLDevice device, hetrt_stream_t** out) {
  if (hetrt_error_t* error = CheckDevice(device)) return error;
  if (out == nullptr) return MakeError(HETRT_STATUS_INVALID_ARGUMENT, "cpu plugin: null out");
  *out = nullptr;
  return nullptr;
}

hetrt_error_t* StreamDestroy(DLDevice device, hetrt_stream_t* stream) {
  if (hetrt_error_t* error = CheckDevice(device)) return error;
  return CheckStream(stream);
}

hetrt_error_t* Synchronize(DLDevice device, hetrt_stream_t* stream) {
  if (hetrt_error_t* error = CheckDevice(device)) return error;
  return CheckStream(stream);
}

hetrt_error_t* EventCreate(DLDevice device, hetrt_event_t** out) {
  if (hetrt_error_t* error = CheckDevice(device)) return error;
  if (out == nullptr) return MakeError(HETRT_STATUS_INVALID_ARGUMENT, "cpu plugin: null out");
  *out = new (std::nothrow) hetrt_event_t{};
  if (*out == nullptr) return MakeError(HETRT_STATUS_RESOURCE_EXHAUSTED, "cpu plugin: out of memory");
  return nullptr;
}

hetrt_error_t* EventDestroy(DLDevice device, hetrt_event_t* event) {
  if (hetrt_error_t* error = CheckDevice(device)) return error;
  delete event;
  return nullptr;
}

hetrt_error_t* EventRecord(DLDevice device, hetrt_event_t* event, hetrt_stream_t* stream) {
  if (hetrt_error_t* error = CheckDevice(device)) return error;
  if (hetrt_error_t* error = CheckStream(stream)) return error;
  if (event == nullptr) return MakeError(HETRT_STATUS_INVALID_ARGUMENT, "cpu plugin: null event");
  event->recorded_at = std::chrono::steady_clock::now();
  event->recorded = true;
  return nullptr;
}

hetrt_error_t* EventElapsedMs(DLDevice device, hetrt_event_t* start, hetrt_event_t* end,
                              double* out_ms) {
  if (hetrt_error_t* error = CheckDevice(device)) return error;
  if (start == nullptr || end == nullptr || out_ms == nullptr) {
    return MakeError(HETRT_STATUS_INVALID_ARGUMENT, "cpu plugin: null event or out_ms");
  }
  if (!start->recorded || !end->recorded) {
    return MakeError(HETRT_STATUS_FAILED_PRECONDITION,
                     "cpu plugin: elapsed time asked of an event never recorded");
  }
  *out_ms = std::chrono::duration<double, std::milli>(end->recorded_at - start->recorded_at).count();
  return nullptr;
}

// Hot path: no error objects, a message through set_last_error instead.
void* WorkspaceAlloc(DLDevice device, uint64_t nbytes) {
  if (!IsOurDevice(device)) {
    ReportLastError("cpu plugin: workspace_alloc for a device that is not (type 1, id 0)");
    return nullptr;
  }
  void* data = ThreadWorkspace().Allocate(nbytes);
  if (data == nullptr) {
    char message[96];
    std::snprintf(message, sizeof(message), "cpu plugin: cannot allocate %llu bytes of workspace",
                  static_cast<unsigned long long>(nbytes));
    ReportLastError(message);
  }
  return data;
}

int32_t WorkspaceFree(DLDevice device, void* data) {
  if (!IsOurDevice(device)) {
    ReportLastError("cpu plugin: workspace_free for a device that is not (type 1, id 0)");
    return -1;
  }
  if (!ThreadWorkspace().Free(data)) {
    ReportLastError(
        "cpu plugin: workspace_free of a pointer this thread's workspace_alloc did not hand "
        "out, or already freed");
    return -1;
  }
  return 0;
}

constexpr hetrt_device_api_t kDeviceApi{
    .struct_size = sizeof(hetrt_device_api_t),
    .device_count = DeviceCount,
    .device_name = DeviceName,
    .allocate = Allocate,
    .free = Free,
    .copy = Copy,
    .stream_create = StreamCreate,
    .stream_destroy = StreamDestroy,
    .synchronize = Synchronize,
    .event_create = EventCreate,
    .event_destroy = EventDestroy,
    .event_record = EventRecord,
    .event_elapsed_ms = EventElapsedMs,
    .workspace_alloc = WorkspaceAlloc,
    .workspace_free = WorkspaceFree,
    .set_device = nullptr,  // one CPU device: nothing to select
};

}  // namespace

const hetrt_device_api_t* CpuDeviceApi() { return &kDeviceApi; }

}  // namespace hetrt::cpu
