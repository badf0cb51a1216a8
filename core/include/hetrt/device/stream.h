// An owned stream of one device: destroyed with its owner. Moves, never copies.
#pragma once

#include <utility>

#include "hetrt/device/device.h"

namespace hetrt {

class Stream {
 public:
  Stream() = default;
  // A new stream of `kind` (hetrt_stream_kind_t) on `device`.
  static Result<Stream> Create(const Device& device, int32_t kind = HETRT_STREAM_COMPUTE) {
    HETRT_ASSIGN_OR_RETURN(hetrt_stream_t * handle, device.NewStream(kind));
    return Stream(device, handle);
  }
  // The device's default stream (NULL handle), owned by the plugin.
  static Stream Default(const Device& device) { return Stream(device, nullptr); }
  ~Stream() { Reset(); }
  Stream(Stream&& other) noexcept : device_(other.device_), handle_(std::exchange(other.handle_, nullptr)) {}
  Stream& operator=(Stream&& other) noexcept {
    if (this != &other) {
      Reset();
      device_ = other.device_;
      handle_ = std::exchange(other.handle_, nullptr);
    }
    return *this;
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  const Device& device() const { return device_; }
  hetrt_stream_t* handle() const { return handle_; }
  Status Synchronize() const { return device_.Synchronize(handle_); }
  Status Wait(hetrt_event_t* event) const { return device_.WaitEvent(handle_, event); }

 private:
  Stream(const Device& device, hetrt_stream_t* handle) : device_(device), handle_(handle) {}
  void Reset() {
    // A failed destroy has no caller to tell; the plugin logged it.
    if (handle_ != nullptr) (void)device_.DestroyStream(handle_);
    handle_ = nullptr;
  }
  Device device_;
  hetrt_stream_t* handle_ = nullptr;
};

}  // namespace hetrt
