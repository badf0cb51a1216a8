#include "hetrt/device/device.h"

namespace hetrt {

bool Device::HasCopyStreams() const {
  auto streams = AttributeInt(HETRT_DEVICE_ATTR_COPY_STREAMS);
  return streams.ok() && *streams == 1;
}

bool Device::HasStreams() const {
  const hetrt_device_api_t* dev = api();
  return dev->stream_create && dev->stream_destroy && dev->stream_set_current;
}

bool Device::HasEvents() const {
  const hetrt_device_api_t* dev = api();
  return dev->event_create && dev->event_destroy && dev->event_record && dev->event_synchronize &&
         dev->stream_wait_event;
}

bool Device::CanTime() const {
  const hetrt_device_api_t* dev = api();
  return dev->event_create && dev->event_record && dev->event_destroy && dev->event_timestamp && dev->device_clock;
}

Result<Device::Allocation> Device::Allocate(uint64_t nbytes, uint64_t alignment, int32_t kind) const {
  auto args = Make<hetrt_allocate_args_t>();
  args.nbytes = nbytes;
  args.alignment = alignment;
  args.kind = kind;
  HETRT_RETURN_IF_ERROR(Call(api()->allocate, &args, "allocate"));
  return Allocation{args.data, args.host_pointer};
}

Status Device::Free(void* data, int32_t kind) const {
  auto args = Make<hetrt_free_args_t>();
  args.data = data;
  args.kind = kind;
  return Call(api()->free, &args, "free");
}

Status Device::Copy(const void* src, uint64_t src_offset, DLDevice src_device, void* dst, uint64_t dst_offset,
                    DLDevice dst_device, uint64_t nbytes, hetrt_stream_t* stream, uint32_t flags) const {
  auto args = Make<hetrt_copy_args_t>();
  args.src = src;
  args.src_offset = src_offset;
  args.src_device = src_device;
  args.dst = dst;
  args.dst_offset = dst_offset;
  args.dst_device = dst_device;
  args.nbytes = nbytes;
  args.stream = stream;
  args.flags = flags;
  return Call(api()->copy, &args, "copy");
}

Status Device::SetCurrent() const {
  if (api()->set_device == nullptr) return OkStatus();  // a device of one: nothing to switch
  auto args = Make<hetrt_set_device_args_t>();
  return Call(api()->set_device, &args, "set_device");
}

Result<hetrt_stream_t*> Device::NewStream(int32_t kind) const {
  auto args = Make<hetrt_stream_create_args_t>();
  args.kind = kind;
  HETRT_RETURN_IF_ERROR(Call(api()->stream_create, &args, "stream_create"));
  return args.stream;
}

Status Device::DestroyStream(hetrt_stream_t* stream) const {
  auto args = Make<hetrt_stream_args_t>();
  args.stream = stream;
  return Call(api()->stream_destroy, &args, "stream_destroy");
}

Result<hetrt_stream_t*> Device::CurrentStream() const {
  auto args = Make<hetrt_stream_current_args_t>();
  // Asked as a 2.0 caller: the native queue (2.4) costs a CUDA plugin a
  // context switch, and only CurrentNativeStream wants it.
  args.struct_size = hetrt_stream_current_args_t_MIN_SIZE;
  HETRT_RETURN_IF_ERROR(Call(api()->stream_get_current, &args, "stream_get_current"));
  return args.stream;
}

Result<void*> Device::CurrentNativeStream() const {
  auto args = Make<hetrt_stream_current_args_t>();
  HETRT_RETURN_IF_ERROR(Call(api()->stream_get_current, &args, "stream_get_current"));
  return args.native_stream;
}

Result<hetrt_event_t*> Device::NewEvent(uint32_t flags) const {
  auto args = Make<hetrt_event_create_args_t>();
  args.flags = flags;
  HETRT_RETURN_IF_ERROR(Call(api()->event_create, &args, "event_create"));
  return args.event;
}

Result<double> Device::ElapsedMs(hetrt_event_t* start, hetrt_event_t* end) const {
  auto args = Make<hetrt_event_elapsed_args_t>();
  args.start = start;
  args.end = end;
  HETRT_RETURN_IF_ERROR(Call(api()->event_elapsed_ms, &args, "event_elapsed_ms"));
  return args.milliseconds;
}

Result<uint64_t> Device::Timestamp(hetrt_event_t* event) const {
  auto args = Make<hetrt_event_timestamp_args_t>();
  args.event = event;
  HETRT_RETURN_IF_ERROR(Call(api()->event_timestamp, &args, "event_timestamp"));
  return args.device_ns;
}

Result<Device::ClockReading> Device::Clock() const {
  auto args = Make<hetrt_device_clock_args_t>();
  HETRT_RETURN_IF_ERROR(Call(api()->device_clock, &args, "device_clock"));
  return ClockReading{args.device_ns, args.host_ns, args.uncertainty_ns};
}

}  // namespace hetrt
