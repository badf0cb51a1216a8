// A handle a device handed out (stream, event) together with the device that
// destroys it: destroyed with its owner, moved, never copied.
#pragma once

#include <utility>

#include "hetrt/device/device.h"

namespace hetrt {

// Thread contract: thread-compatible (a move-only owner, like std::unique_ptr).
template <typename Handle, Status (Device::*kDestroy)(Handle*) const>
class OwnedHandle {
 public:
  OwnedHandle() = default;
  OwnedHandle(const Device& device, Handle* handle) : device_(device), handle_(handle) {}
  ~OwnedHandle() { Reset(); }
  OwnedHandle(OwnedHandle&& other) noexcept : device_(other.device_), handle_(std::exchange(other.handle_, nullptr)) {}
  OwnedHandle& operator=(OwnedHandle&& other) noexcept {
    if (this != &other) {
      Reset();
      device_ = other.device_;
      handle_ = std::exchange(other.handle_, nullptr);
    }
    return *this;
  }
  OwnedHandle(const OwnedHandle&) = delete;
  OwnedHandle& operator=(const OwnedHandle&) = delete;

  const Device& device() const { return device_; }
  Handle* handle() const { return handle_; }

 private:
  void Reset() {
    // A failed destroy has no caller to tell; the plugin logs it.
    if (handle_ != nullptr) (void)(device_.*kDestroy)(handle_);
    handle_ = nullptr;
  }
  Device device_;
  Handle* handle_ = nullptr;
};

}  // namespace hetrt
