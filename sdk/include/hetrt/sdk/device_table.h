// The device side of a C++ plugin: the devices an instance discovers (once, on
// first use) with the lookups every entry point starts with, and the device
// table (hetrt_device_api_t) built from a class whose static member functions
// are named after the table's entries.
//
//   struct DeviceEntries : hetrt::sdk::CommonDeviceEntries<hetrt_instance, hetrt_stream> {
//     HETRT_SDK_DEVICE_ENTRIES  // the rest, declared
//   };
//   // in the file of its concept (memory, streams, ...):
//   hetrt_error_t* DeviceEntries::Allocate(hetrt_allocate_args_t* args) { ... }
//   ...
//   const hetrt_device_api_t kDeviceApi = hetrt::sdk::DeviceTable<DeviceEntries, kLabel>();
#pragma once

#include <algorithm>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "hetrt/sdk/device_facts.h"
#include "hetrt/sdk/entry.h"
#include "hetrt/sdk/error.h"
#include "hetrt/sdk/thread_current.h"

namespace hetrt::sdk {

// The devices of one instance, all of one device type. `discover` fills the
// list through Add / SetUnavailable on the first call of any accessor (on any
// thread); a plugin with no device reports why instead of failing.
template <class Device>
class DeviceList {
 public:
  // `kind` names the devices in messages ("Vulkan", "CUDA").
  DeviceList(int32_t device_type, const char* kind, std::function<void(DeviceList&)> discover)
      : device_type_(device_type), kind_(kind), discover_(std::move(discover)) {}
  DeviceList(const DeviceList&) = delete;
  DeviceList& operator=(const DeviceList&) = delete;

  int count() {
    std::call_once(discovered_, [this] { discover_(*this); });
    return static_cast<int>(devices_.size());
  }
  // NULL when `id` is out of range.
  Device* at(int id) { return id >= 0 && id < count() ? devices_[static_cast<size_t>(id)].get() : nullptr; }
  const std::string& unavailable_reason() {
    count();
    return reason_;
  }
  // The device `device` names, else an error that says what exists.
  hetrt_error_t* Find(DLDevice device, Device** out) {
    if (device.device_type != device_type_)
      return MakeErrorf(HETRT_STATUS_INVALID_ARGUMENT, "not a %s device (type %d)", kind_, device.device_type);
    Device* d = at(device.device_id);
    if (d == nullptr) {
      const int n = count();
      return MakeError(HETRT_STATUS_NOT_FOUND, "no " + std::string(kind_) + " device " +
                                                   std::to_string(device.device_id) + " (" +
                                                   (n ? std::to_string(n) + " found" : reason_) + ")");
    }
    *out = d;
    return nullptr;
  }
  const char* kind() const { return kind_; }
  bool Owns(DLDevice device) { return device.device_type == device_type_ && at(device.device_id) != nullptr; }

  // The device_count entry.
  hetrt_error_t* Count(hetrt_device_count_args_t* args) {
    if (args->device_type != device_type_)
      return MakeErrorf(HETRT_STATUS_INVALID_ARGUMENT, "the %s plugin serves device type %d only", kind_, device_type_);
    args->count = count();
    args->unavailable_reason = args->count == 0 ? reason_.c_str() : nullptr;
    return nullptr;
  }
  // The can_copy entry of a plugin that copies between its own devices and to
  // and from host memory.
  hetrt_error_t* CanCopy(hetrt_can_copy_args_t* args) {
    auto host = [](DLDevice x) { return x.device_type == kDLCPU; };
    const DLDevice s = args->src_device, t = args->dst_device;
    args->can_copy = (Owns(s) && (Owns(t) || host(t))) || (host(s) && Owns(t));
    return nullptr;
  }

  // For `discover`: devices keep dense ids in the order added.
  void Add(std::unique_ptr<Device> device) { devices_.push_back(std::move(device)); }
  void SetUnavailable(std::string reason) { reason_ = std::move(reason); }
  // Every device found so far, without discovering (teardown).
  const std::vector<std::unique_ptr<Device>>& discovered() const { return devices_; }
  void Clear() { devices_.clear(); }

 private:
  int32_t device_type_;
  const char* kind_;
  std::function<void(DeviceList&)> discover_;
  std::once_flag discovered_;
  std::vector<std::unique_ptr<Device>> devices_;
  std::string reason_;
};

// Declares the entries of the device table that differ between plugins as
// static members; CommonDeviceEntries (or HETRT_SDK_COMMON_DEVICE_ENTRIES,
// for a plugin that writes them too) gives the other five. With
// CommonDeviceEntries, Free sees only a device of the instance and non-NULL
// data (FreeOnKnownDevice, below).
#define HETRT_SDK_DEVICE_ENTRIES                                               \
  static hetrt_error_t* DeviceAttribute(hetrt_device_attribute_args_t* args);  \
  static hetrt_error_t* Allocate(hetrt_allocate_args_t* args);                 \
  static hetrt_error_t* Free(hetrt_free_args_t* args);                         \
  static hetrt_error_t* Copy(hetrt_copy_args_t* args);                         \
  static hetrt_error_t* StreamCreate(hetrt_stream_create_args_t* args);        \
  static hetrt_error_t* StreamDestroy(hetrt_stream_args_t* args);              \
  static hetrt_error_t* StreamSynchronize(hetrt_stream_args_t* args);          \
  static hetrt_error_t* StreamWaitEvent(hetrt_stream_wait_event_args_t* args); \
  static hetrt_error_t* StreamSetCurrent(hetrt_stream_current_args_t* args);   \
  static hetrt_error_t* EventCreate(hetrt_event_create_args_t* args);          \
  static hetrt_error_t* EventDestroy(hetrt_event_args_t* args);                \
  static hetrt_error_t* EventRecord(hetrt_event_record_args_t* args);          \
  static hetrt_error_t* EventQuery(hetrt_event_args_t* args);                  \
  static hetrt_error_t* EventSynchronize(hetrt_event_args_t* args);            \
  static hetrt_error_t* EventElapsed(hetrt_event_elapsed_args_t* args);        \
  static hetrt_error_t* EventTimestamp(hetrt_event_timestamp_args_t* args);    \
  static hetrt_error_t* DeviceClock(hetrt_device_clock_args_t* args);          \
  static hetrt_error_t* WorkspaceAlloc(hetrt_workspace_args_t* args);          \
  static hetrt_error_t* WorkspaceFree(hetrt_workspace_args_t* args);

#define HETRT_SDK_COMMON_DEVICE_ENTRIES                                      \
  static hetrt_error_t* DeviceCount(hetrt_device_count_args_t* args);        \
  static hetrt_error_t* MemoryStats(hetrt_memory_stats_args_t* args);        \
  static hetrt_error_t* CanCopy(hetrt_can_copy_args_t* args);                \
  static hetrt_error_t* StreamGetCurrent(hetrt_stream_current_args_t* args); \
  static hetrt_error_t* SetDevice(hetrt_set_device_args_t* args);

// device_count, can_copy, memory_stats, set_device and stream_get_current of a
// plugin whose instance has `devices` (a DeviceList) and `serial` (an
// InstanceSerial), whose devices count allocations in `memory_counters` and
// know their `facts` (device_facts.h), and whose current streams are kept in
// ThreadCurrent<Stream> (and, optionally, that report the native queue of a
// stream through an instance method NativeStream, below):
//   struct DeviceEntries : hetrt::sdk::CommonDeviceEntries<hetrt_instance, hetrt_stream> {
//     HETRT_SDK_DEVICE_ENTRIES
//   };
template <class Instance, class Stream>
struct CommonDeviceEntries {
  using Current = ThreadCurrent<Stream>;
  static hetrt_error_t* DeviceCount(hetrt_device_count_args_t* args) {
    Instance* self = args->self;  // the plugin's complete type (args->self is not dependent)
    return self->devices.Count(args);
  }
  static hetrt_error_t* CanCopy(hetrt_can_copy_args_t* args) {
    Instance* self = args->self;
    return self->devices.CanCopy(args);
  }
  static hetrt_error_t* MemoryStats(hetrt_memory_stats_args_t* args) {
    Instance* self = args->self;
    typename std::remove_pointer_t<decltype(self->devices.at(0))>* d = nullptr;
    if (hetrt_error_t* e = self->devices.Find(args->device, &d)) return e;
    // bytes_limit: 0 when the device does not know its memory.
    d->memory_counters.Report(args, static_cast<uint64_t>(std::max<int64_t>(d->facts.total_memory, 0)));
    return nullptr;
  }
  static hetrt_error_t* SetDevice(hetrt_set_device_args_t* args) {
    Instance* self = args->self;
    if (hetrt_error_t* e = CheckInstanceDevice(self, args->device)) return e;
    if (!Current::SetDevice(self->serial, args->device.device_id)) return Current::TableFull(self->devices.kind());
    return nullptr;
  }
  static hetrt_error_t* StreamGetCurrent(hetrt_stream_current_args_t* args) {
    Instance* self = args->self;
    if (hetrt_error_t* e = CheckInstanceDevice(self, args->device)) return e;
    args->stream = Current::Get(self->serial, args->device.device_id);
    // 2.4: the native queue behind it, from an instance that has one:
    //   hetrt_error_t* NativeStream(DLDevice device, Stream* current, void** out);
    // Best effort: where it cannot be had, it stays NULL and the query stands.
    if constexpr (requires(Instance* i, DLDevice d, Stream* s, void** out) { i->NativeStream(d, s, out); })
      if (HETRT_ARGS_HAS(args, hetrt_stream_current_args_t, native_stream))
        if (hetrt_error_t* e = self->NativeStream(args->device, args->stream, &args->native_stream)) {
          DiscardError(e);
          args->native_stream = nullptr;
        }
    return nullptr;
  }
  // DeviceTable's free calls this when free returned an error: the device the
  // call named (if it is one of this instance's) counts it in failed_frees.
  static void CountFailedFree(const hetrt_free_args_t* args) noexcept {
    try {
      Instance* self = args->self;
      if (self->devices.Owns(args->device)) self->devices.at(args->device.device_id)->memory_counters.FreeFailed();
    } catch (...) {  // (device discovery ran before any allocation: nothing here throws in practice)
    }
  }

  // An error unless `device` is one of the instance's devices. (Named so that
  // a plugin's own CheckDevice does not hide it.)
  static hetrt_error_t* CheckInstanceDevice(Instance* self, DLDevice device) {
    typename std::remove_pointer_t<decltype(self->devices.at(0))>* d = nullptr;
    return self->devices.Find(device, &d);
  }
};

// What every free of a CommonDeviceEntries plugin does before the plugin's
// own: the device must be one of the instance's, and free(NULL) does nothing
// (as free(3) does).
template <class Impl>
hetrt_error_t* FreeOnKnownDevice(hetrt_free_args_t* args) {
  if (hetrt_error_t* e = Impl::CheckInstanceDevice(args->self, args->device)) return e;
  return args->data == nullptr ? nullptr : Impl::Free(args);
}

// The free entry of a plugin whose entries can count failed frees: every
// error free returns is counted once, here, whatever path in the plugin made
// it (a free with an unusable args struct names no device and is not counted).
template <class Impl, const char* Label>
hetrt_error_t* CountingFree(hetrt_free_args_t* args) noexcept {
  hetrt_error_t* error = Entry<&FreeOnKnownDevice<Impl>, Label>::Call(args);
  if (error != nullptr && args != nullptr && args->struct_size >= kArgsMinSize<hetrt_free_args_t> &&
      args->self != nullptr)
    Impl::CountFailedFree(args);
  return error;
}

// The entries that act on an event (record, query, synchronize, timestamp, a
// stream's wait) refuse a NULL one here, the same way in every plugin.
template <auto F>
struct OnEvent;
template <class Args, hetrt_error_t* (*F)(Args*)>
struct OnEvent<F> {
  static hetrt_error_t* Call(Args* args) {
    if (args->event == nullptr) return MakeError(HETRT_STATUS_INVALID_ARGUMENT, "NULL event");
    return F(args);
  }
};

// The device table: each entry `Impl` has wrapped in Entry<..., Label>; an
// entry it lacks stays NULL (the core reports it as unimplemented).
template <class Impl, const char* Label>
constexpr hetrt_device_api_t DeviceTable() {
  hetrt_device_api_t api{};
  api.struct_size = sizeof api;
#define HETRT_SDK_ENTRY(field, Name) \
  if constexpr (requires { &Impl::Name; }) api.field = Entry<&Impl::Name, Label>::Call;
#define HETRT_SDK_EVENT_ENTRY(field, Name) \
  if constexpr (requires { &Impl::Name; }) api.field = Entry<&OnEvent<&Impl::Name>::Call, Label>::Call;
  HETRT_SDK_ENTRY(device_count, DeviceCount)
  HETRT_SDK_ENTRY(device_attribute, DeviceAttribute)
  HETRT_SDK_ENTRY(memory_stats, MemoryStats)
  HETRT_SDK_ENTRY(allocate, Allocate)
  if constexpr (requires(const hetrt_free_args_t* args) { Impl::CountFailedFree(args); }) {
    api.free = CountingFree<Impl, Label>;
  } else {
    HETRT_SDK_ENTRY(free, Free)
  }
  HETRT_SDK_ENTRY(can_copy, CanCopy)
  HETRT_SDK_ENTRY(copy, Copy)
  HETRT_SDK_ENTRY(stream_create, StreamCreate)
  HETRT_SDK_ENTRY(stream_destroy, StreamDestroy)
  HETRT_SDK_ENTRY(stream_synchronize, StreamSynchronize)
  HETRT_SDK_EVENT_ENTRY(stream_wait_event, StreamWaitEvent)
  HETRT_SDK_ENTRY(stream_set_current, StreamSetCurrent)
  HETRT_SDK_ENTRY(stream_get_current, StreamGetCurrent)
  HETRT_SDK_ENTRY(event_create, EventCreate)
  HETRT_SDK_ENTRY(event_destroy, EventDestroy)
  HETRT_SDK_EVENT_ENTRY(event_record, EventRecord)
  HETRT_SDK_EVENT_ENTRY(event_query, EventQuery)
  HETRT_SDK_EVENT_ENTRY(event_synchronize, EventSynchronize)
  HETRT_SDK_ENTRY(event_elapsed_ms, EventElapsed)
  HETRT_SDK_EVENT_ENTRY(event_timestamp, EventTimestamp)
  HETRT_SDK_ENTRY(device_clock, DeviceClock)
  HETRT_SDK_ENTRY(workspace_alloc, WorkspaceAlloc)
  HETRT_SDK_ENTRY(workspace_free, WorkspaceFree)
  HETRT_SDK_ENTRY(set_device, SetDevice)
#undef HETRT_SDK_ENTRY
#undef HETRT_SDK_EVENT_ENTRY
  return api;
}

}  // namespace hetrt::sdk
