// An owned stream of one device (NULL handle: the device's default stream,
// which the plugin owns).
#pragma once

#include "hetrt/device/owned_handle.h"

namespace hetrt {

// Thread contract: thread-compatible; work goes onto a stream from one thread at a time.
class Stream : public OwnedHandle<hetrt_stream_t, &Device::DestroyStream> {
 public:
  using OwnedHandle::OwnedHandle;
  // A new stream of `kind` (hetrt_stream_kind_t) on `device`.
  static Result<Stream> Create(const Device& device, int32_t kind = HETRT_STREAM_COMPUTE) {
    HETRT_ASSIGN_OR_RETURN(hetrt_stream_t * handle, device.NewStream(kind));
    return Stream(device, handle);
  }
  static Stream Default(const Device& device) { return Stream(device, nullptr); }

  Status Synchronize() const { return device().Synchronize(handle()); }
  Status Wait(hetrt_event_t* event) const { return device().WaitEvent(handle(), event); }
};

}  // namespace hetrt
