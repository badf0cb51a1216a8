// An owned event of one device.
#pragma once

#include "hetrt/device/owned_handle.h"

namespace hetrt {

// Thread contract: thread-compatible; the event itself may be waited for from any thread.
class Event : public OwnedHandle<hetrt_event_t, &Device::DestroyEvent> {
 public:
  using OwnedHandle::OwnedHandle;
  // `flags`: hetrt_event_flags_t (HETRT_EVENT_TIMING for timestamps).
  static Result<Event> Create(const Device& device, uint32_t flags = 0) {
    HETRT_ASSIGN_OR_RETURN(hetrt_event_t * handle, device.NewEvent(flags));
    return Event(device, handle);
  }

  explicit operator bool() const { return handle() != nullptr; }
  Status Record(hetrt_stream_t* stream) const { return device().Record(handle(), stream); }
  Status Synchronize() const { return device().SynchronizeEvent(handle()); }
  Result<uint64_t> Timestamp() const { return device().Timestamp(handle()); }
};

}  // namespace hetrt
