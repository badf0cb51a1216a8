#include "device_client.h"

namespace hetrt::conformance {

Result<DeviceClient::Allocation> DeviceClient::Allocate(uint64_t nbytes, uint64_t alignment, int32_t kind) const {
  auto args = Make<hetrt_allocate_args_t>();
  args.nbytes = nbytes;
  args.alignment = alignment;
  args.kind = kind;
  HETRT_RETURN_IF_ERROR(Call(api()->allocate, &args, "allocate"));
  return Allocation{args.data, args.host_pointer};
}

Status DeviceClient::Free(void* data, int32_t kind) const {
  auto args = Make<hetrt_free_args_t>();
  args.data = data;
  args.kind = kind;
  return Call(api()->free, &args, "free");
}

Status DeviceClient::Copy(const void* src, uint64_t src_offset, DLDevice src_device, void* dst, uint64_t dst_offset,
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

Result<hetrt_stream_t*> DeviceClient::NewStream(int32_t kind) const {
  auto args = Make<hetrt_stream_create_args_t>();
  args.kind = kind;
  HETRT_RETURN_IF_ERROR(Call(api()->stream_create, &args, "stream_create"));
  return args.stream;
}

Status DeviceClient::DestroyStream(hetrt_stream_t* stream) const {
  auto args = Make<hetrt_stream_args_t>();
  args.stream = stream;
  return Call(api()->stream_destroy, &args, "stream_destroy");
}

Status DeviceClient::Synchronize(hetrt_stream_t* stream) const {
  auto args = Make<hetrt_stream_args_t>();
  args.stream = stream;
  return Call(api()->stream_synchronize, &args, "stream_synchronize");
}

Status DeviceClient::WaitEvent(hetrt_stream_t* stream, hetrt_event_t* event) const {
  auto args = Make<hetrt_stream_wait_event_args_t>();
  args.stream = stream;
  args.event = event;
  return Call(api()->stream_wait_event, &args, "stream_wait_event");
}

Status DeviceClient::SetCurrentStream(hetrt_stream_t* stream, hetrt_stream_t** previous) const {
  auto args = Make<hetrt_stream_current_args_t>();
  args.stream = stream;
  Status status = Call(api()->stream_set_current, &args, "stream_set_current");
  if (previous != nullptr) *previous = args.previous;
  return status;
}

Result<hetrt_stream_t*> DeviceClient::CurrentStream() const {
  auto args = Make<hetrt_stream_current_args_t>();
  HETRT_RETURN_IF_ERROR(Call(api()->stream_get_current, &args, "stream_get_current"));
  return args.stream;
}

Result<hetrt_event_t*> DeviceClient::NewEvent(uint32_t flags) const {
  auto args = Make<hetrt_event_create_args_t>();
  args.flags = flags;
  HETRT_RETURN_IF_ERROR(Call(api()->event_create, &args, "event_create"));
  return args.event;
}

Status DeviceClient::Record(hetrt_event_t* event, hetrt_stream_t* stream) const {
  auto args = Make<hetrt_event_record_args_t>();
  args.event = event;
  args.stream = stream;
  return Call(api()->event_record, &args, "event_record");
}

Status DeviceClient::EventCall(hetrt_error_t* (*fn)(hetrt_event_args_t*), hetrt_event_t* event,
                               int32_t* complete) const {
  auto args = Make<hetrt_event_args_t>();
  args.event = event;
  Status status = Call(fn, &args, "event call");
  if (complete != nullptr) *complete = args.complete;
  return status;
}

Result<double> DeviceClient::ElapsedMs(hetrt_event_t* start, hetrt_event_t* end) const {
  auto args = Make<hetrt_event_elapsed_args_t>();
  args.start = start;
  args.end = end;
  HETRT_RETURN_IF_ERROR(Call(api()->event_elapsed_ms, &args, "event_elapsed_ms"));
  return args.milliseconds;
}

Result<uint64_t> DeviceClient::Timestamp(hetrt_event_t* event) const {
  auto args = Make<hetrt_event_timestamp_args_t>();
  args.event = event;
  HETRT_RETURN_IF_ERROR(Call(api()->event_timestamp, &args, "event_timestamp"));
  return args.device_ns;
}

Result<hetrt_device_clock_args_t> DeviceClient::Clock() const {
  auto args = Make<hetrt_device_clock_args_t>();
  HETRT_RETURN_IF_ERROR(Call(api()->device_clock, &args, "device_clock"));
  return args;
}

}  // namespace hetrt::conformance
