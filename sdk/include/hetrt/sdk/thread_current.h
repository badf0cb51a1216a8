// The calling thread's current device (set_device) and current stream per
// device (stream_set_current) of each plugin instance, as the ABI asks: kernel
// launchers read them on every call, so they are fixed thread-local arrays
// scanned linearly, with no allocation and no lock. Entries are keyed by
// instance serial (hetrt::sdk::InstanceSerial); those of destroyed instances
// are reclaimed when a thread's table fills up.
#pragma once

#include <cstdint>

#include "hetrt/sdk/error.h"
#include "hetrt/sdk/instance.h"

namespace hetrt::sdk {

// One table per plugin: instantiate with the plugin's stream type. kSlots
// bounds the (instance, device) pairs one thread can have a current
// device/stream in at once.
template <class Stream, int kSlots = 16>
class ThreadCurrent {
 public:
  static constexpr int kCapacity = kSlots;

  // 0 unless set_device chose another device on this thread.
  static int Device(uint64_t serial) noexcept {
    const DeviceSlot* slot = Find(devices_, serial, 0);
    return slot ? slot->device_id : 0;
  }
  // False when the table is full of live instances' entries.
  static bool SetDevice(uint64_t serial, int device_id) noexcept {
    if (device_id == 0) {  // the default: no slot needed
      if (DeviceSlot* slot = Find(devices_, serial, 0)) *slot = DeviceSlot{};
      return true;
    }
    DeviceSlot* slot = Claim(devices_, serial, 0);
    if (slot == nullptr) return false;
    *slot = DeviceSlot{serial, 0, device_id};
    return true;
  }

  // NULL (the default stream) unless stream_set_current chose one.
  static Stream* Get(uint64_t serial, int device_id) noexcept {
    const StreamSlot* slot = Find(streams_, serial, device_id);
    return slot ? slot->stream : nullptr;
  }
  // Sets the stream (NULL: back to the default) and reports the one before.
  // False when the table is full of live instances' entries.
  static bool Set(uint64_t serial, int device_id, Stream* stream, Stream** previous) noexcept {
    if (stream == nullptr) {
      StreamSlot* slot = Find(streams_, serial, device_id);
      *previous = slot ? slot->stream : nullptr;
      if (slot) *slot = StreamSlot{};
      return true;
    }
    StreamSlot* slot = Claim(streams_, serial, device_id);
    if (slot == nullptr) return false;
    *previous = slot->serial ? slot->stream : nullptr;
    *slot = StreamSlot{serial, device_id, stream};
    return true;
  }
  // A destroyed stream stops being this thread's current one (other threads
  // must have reset theirs, as the ABI requires).
  static void Forget(const Stream* stream) noexcept {
    for (StreamSlot& slot : streams_)
      if (slot.stream == stream) slot = StreamSlot{};
  }

  // The error for a full table; `device_kind` names the plugin's devices.
  static hetrt_error_t* TableFull(const char* device_kind) noexcept {
    return MakeErrorf(HETRT_STATUS_RESOURCE_EXHAUSTED,
                      "this thread has a current %s device/stream set for %d (instance, device) pairs already; "
                      "reset some to the default first",
                      device_kind, kSlots);
  }

 private:
  struct DeviceSlot {
    uint64_t serial;  // 0: free
    int key;
    int device_id;
  };
  struct StreamSlot {
    uint64_t serial;  // 0: free
    int key;          // the device
    Stream* stream;
  };
  static_assert(sizeof(StreamSlot) <= 24, "stream slots stay small: the launcher scans them");

  template <class Slot>
  static Slot* Find(Slot (&table)[kSlots], uint64_t serial, int key) noexcept {
    for (Slot& s : table)
      if (s.serial == serial && s.key == key) return &s;
    return nullptr;
  }
  // The slot of (serial, key), else a free one, reclaiming the slots of
  // destroyed instances when none is free; NULL when all are live.
  template <class Slot>
  static Slot* Claim(Slot (&table)[kSlots], uint64_t serial, int key) noexcept {
    if (Slot* s = Find(table, serial, key)) return s;
    for (int pass = 0; pass < 2; ++pass) {
      for (Slot& s : table)
        if (s.serial == 0) return &s;
      try {
        InstanceSerial::ReclaimDead(table, [](Slot& s) { s = Slot{}; });
      } catch (...) {
        return nullptr;  // the lock could not be taken: report the table as full
      }
    }
    return nullptr;
  }

  static inline thread_local DeviceSlot devices_[kSlots];
  static inline thread_local StreamSlot streams_[kSlots];
};

}  // namespace hetrt::sdk
