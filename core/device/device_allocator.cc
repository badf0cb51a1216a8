// Tensors in plugin memory: an Allocator per (device, memory kind), owned by
// the plugin object so tensors keep the plugin alive.
#include <cstdio>
#include <unordered_map>

#include "hetrt/base/dtype.h"
#include "hetrt/base/log.h"
#include "hetrt/device/device.h"

namespace hetrt {
namespace {

class DeviceAllocator final : public Allocator {
 public:
  DeviceAllocator(Plugin* plugin, DLDevice device, hetrt_memory_kind_t kind) : device_(plugin, device), kind_(kind) {}
  DLDevice device() const override { return device_.device(); }
  Result<void*> Allocate(uint64_t nbytes, uint64_t alignment) override {
    HETRT_ASSIGN_OR_RETURN(Device::Allocation allocation, device_.Allocate(nbytes, alignment, kind_));
    if (kind_ != HETRT_MEMORY_DEVICE && allocation.host_pointer != nullptr) {
      std::lock_guard<std::mutex> lock(mutex_);
      host_pointers_[allocation.data] = allocation.host_pointer;
    }
    return allocation.data;
  }
  void Free(void* data) override {
    if (kind_ != HETRT_MEMORY_DEVICE) {
      std::lock_guard<std::mutex> lock(mutex_);
      host_pointers_.erase(data);
    }
    // A failing free has no caller to report to: say so rather than lose it
    // (the plugin counts it too: DeviceMemoryStats::failed_frees).
    if (Status s = device_.Free(data, kind_); !s.ok()) {
      char address[32];
      std::snprintf(address, sizeof address, "%p", data);
      Log(LogLevel::kError, "core",
          std::string("free of ") + address + " on " + DeviceToString(device()) + " failed: " + s.message());
    }
  }
  std::shared_ptr<void> Owner() const override { return device_.plugin()->shared_from_this(); }
  void* HostPointer(void* data) const override {
    if (device_.device().device_type == kDLCPU) return data;
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = host_pointers_.find(data);
    return it == host_pointers_.end() ? nullptr : it->second;
  }

 private:
  Device device_;
  hetrt_memory_kind_t kind_;
  mutable std::mutex mutex_;
  std::unordered_map<void*, void*> host_pointers_;
};

}  // namespace

Allocator& Plugin::DeviceAllocator(DLDevice device, hetrt_memory_kind_t kind) {
  std::lock_guard<std::mutex> lock(allocators_mutex_);
  auto key = std::make_tuple(static_cast<int32_t>(device.device_type), device.device_id, static_cast<int32_t>(kind));
  auto& slot = allocators_[key];
  if (!slot) slot = std::make_unique<hetrt::DeviceAllocator>(this, device, kind);
  return *slot;
}

}  // namespace hetrt
