// An owned event of one device: destroyed with its owner. Moves, never copies.
#pragma once

#include <utility>

#include "hetrt/device/device.h"

namespace hetrt {

class Event {
 public:
  Event() = default;
  // `flags`: hetrt_event_flags_t (HETRT_EVENT_TIMING for timestamps).
  static Result<Event> Create(const Device& device, uint32_t flags = 0) {
    HETRT_ASSIGN_OR_RETURN(hetrt_event_t * handle, device.NewEvent(flags));
    return Event(device, handle);
  }
  ~Event() { Reset(); }
  Event(Event&& other) noexcept : device_(other.device_), handle_(std::exchange(other.handle_, nullptr)) {}
  Event& operator=(Event&& other) noexcept {
    if (this != &other) {
      Reset();
      device_ = other.device_;
      handle_ = std::exchange(other.handle_, nullptr);
    }
    return *this;
  }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  explicit operator bool() const { return handle_ != nullptr; }
  const Device& device() const { return device_; }
  hetrt_event_t* handle() const { return handle_; }
  Status Record(hetrt_stream_t* stream) const { return device_.Record(handle_, stream); }
  Status Synchronize() const { return device_.SynchronizeEvent(handle_); }
  Result<uint64_t> Timestamp() const { return device_.Timestamp(handle_); }

 private:
  Event(const Device& device, hetrt_event_t* handle) : device_(device), handle_(handle) {}
  void Reset() {
    if (handle_ != nullptr) (void)device_.DestroyEvent(handle_);  // the plugin logs a failure
    handle_ = nullptr;
  }
  Device device_;
  hetrt_event_t* handle_ = nullptr;
};

}  // namespace hetrt
