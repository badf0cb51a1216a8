// One device of one plugin instance, called through the plugin ABI: each call
// fills its args struct (struct_size, self, device), calls the plugin's table
// and turns the plugin's error into a Status naming the plugin. The only way
// the core (and the conformance kit) calls a device: executors, the TVM
// backend ABI and tools hold Devices, never raw tables.
//
// Handles (streams, events, allocations) are raw here, as the ABI hands them
// out; Stream, Event (stream.h, event.h) own them. Calls on the executor's hot
// path are inline.
#pragma once

#include <cstdint>
#include <string>

#include "hetrt/base/last_error.h"
#include "hetrt/base/status.h"
#include "hetrt/device/plugin.h"

namespace hetrt {

// Thread contract: thread-safe: every call may come from any thread, as the
// plugin ABI allows; a stream is used by one thread at a time.
class Device {
 public:
  Device() = default;
  Device(Plugin* plugin, DLDevice device) : plugin_(plugin), device_(device) {}

  bool valid() const { return plugin_ != nullptr; }
  Plugin* plugin() const { return plugin_; }
  DLDevice device() const { return device_; }
  const hetrt_device_api_t* api() const { return plugin_->device_api(); }

  // A zeroed args struct with struct_size, self and (where it has one) device set.
  template <class Args>
  Args Make() const {
    auto args = AbiArgs<Args>();
    if constexpr (requires { args.self; }) args.self = plugin_->instance();
    if constexpr (requires { args.device; }) args.device = device_;
    return args;
  }
  // Calls `fn` (NULL: the plugin does not implement it, UNIMPLEMENTED).
  template <class Args>
  Status Call(hetrt_error_t* (*fn)(Args*), Args* args, const char* name) const {
    return plugin_->Call(fn, args, name);
  }

  // ---- queries
  std::string Name() const { return plugin_->DeviceName(device_); }
  Result<int64_t> AttributeInt(int32_t attribute) const { return plugin_->AttributeInt(device_, attribute); }
  Result<std::string> AttributeString(int32_t attribute) const { return plugin_->AttributeString(device_, attribute); }
  bool SharesHostMemory() const { return plugin_->SharesHostMemory(device_); }
  // Whether the plugin gives copies streams of their own that overlap compute.
  bool HasCopyStreams() const;
  Result<DeviceMemoryStats> MemoryStats() const { return plugin_->MemoryStats(device_); }
  // Whether Synchronize waits for its work (a plugin without it runs synchronously).
  bool CanSynchronize() const { return plugin_->CanSynchronize(); }
  // Whether a stream can be made the calling thread's current one.
  bool CanSetCurrentStream() const { return api()->stream_set_current != nullptr; }
  // What an asynchronous run needs: own streams, made current per thread...
  bool HasStreams() const;
  // ...and events a stream can wait for.
  bool HasEvents() const;
  // What a profiled run needs: timing events and a device clock.
  bool CanTime() const;

  // ---- memory
  struct Allocation {
    void* data = nullptr;
    void* host_pointer = nullptr;
  };
  Result<Allocation> Allocate(uint64_t nbytes, uint64_t alignment = 64, int32_t kind = HETRT_MEMORY_DEVICE) const;
  Status Free(void* data, int32_t kind = HETRT_MEMORY_DEVICE) const;
  // The allocator behind Tensors in this device's memory of one kind.
  Allocator& allocator(hetrt_memory_kind_t kind = HETRT_MEMORY_DEVICE) const {
    return plugin_->DeviceAllocator(device_, kind);
  }
  Status Copy(const void* src, uint64_t src_offset, DLDevice src_device, void* dst, uint64_t dst_offset,
              DLDevice dst_device, uint64_t nbytes, hetrt_stream_t* stream = nullptr,
              uint32_t flags = HETRT_COPY_BLOCKING) const;
  // Kernel scratch memory for compiled code (TVMBackendAllocWorkspace; hot
  // path), in TVM's convention: NULL / -1 on failure with the plugin's
  // message as the thread's last error.
  void* WorkspaceAllocOrSetLastError(uint64_t nbytes) const {
    auto args = Make<hetrt_workspace_args_t>();
    args.nbytes = nbytes;
    if (hetrt_error_t* error = api()->workspace_alloc(&args)) [[unlikely]] {
      SetLastError(plugin_->Consume(error).message().c_str());
      return nullptr;
    }
    return args.data;
  }
  int WorkspaceFreeOrSetLastError(void* data) const {
    auto args = Make<hetrt_workspace_args_t>();
    args.data = data;
    if (hetrt_error_t* error = api()->workspace_free(&args)) [[unlikely]] {
      SetLastError(plugin_->Consume(error).message().c_str());
      return -1;
    }
    return 0;
  }
  // Makes this device the thread's current one of its type (__tvm_set_device).
  Status SetCurrent() const;

  // ---- streams
  Result<hetrt_stream_t*> NewStream(int32_t kind = HETRT_STREAM_COMPUTE) const;
  Status DestroyStream(hetrt_stream_t* stream) const;
  Status Synchronize(hetrt_stream_t* stream) const {
    auto args = Make<hetrt_stream_args_t>();
    args.stream = stream;
    return Call(api()->stream_synchronize, &args, "stream_synchronize");
  }
  Status WaitEvent(hetrt_stream_t* stream, hetrt_event_t* event) const {
    auto args = Make<hetrt_stream_wait_event_args_t>();
    args.stream = stream;
    args.event = event;
    return Call(api()->stream_wait_event, &args, "stream_wait_event");
  }
  // stream_set_current; `previous` receives the stream it replaced.
  Status SetCurrentStream(hetrt_stream_t* stream, hetrt_stream_t** previous = nullptr) const {
    auto args = Make<hetrt_stream_current_args_t>();
    args.stream = stream;
    Status status = Call(api()->stream_set_current, &args, "stream_set_current");
    if (previous != nullptr) *previous = args.previous;
    return status;
  }
  Result<hetrt_stream_t*> CurrentStream() const;
  // The native queue behind the current stream (a CUstream, a
  // cl_command_queue; ABI 2.4), for code that launches work itself; NULL
  // where the plugin reports none.
  Result<void*> CurrentNativeStream() const;

  // ---- events
  Result<hetrt_event_t*> NewEvent(uint32_t flags = 0) const;
  Status Record(hetrt_event_t* event, hetrt_stream_t* stream) const {
    auto args = Make<hetrt_event_record_args_t>();
    args.event = event;
    args.stream = stream;
    return Call(api()->event_record, &args, "event_record");
  }
  // Host blocks until the event's work is done; that work's first error.
  Status SynchronizeEvent(hetrt_event_t* event) const {
    return EventCall(api()->event_synchronize, event, nullptr, "event_synchronize");
  }
  Status DestroyEvent(hetrt_event_t* event) const {
    return EventCall(api()->event_destroy, event, nullptr, "event_destroy");
  }
  // event_destroy, event_synchronize or event_query (complete: its answer).
  Status EventCall(hetrt_error_t* (*fn)(hetrt_event_args_t*), hetrt_event_t* event, int32_t* complete = nullptr,
                   const char* name = "event call") const {
    auto args = Make<hetrt_event_args_t>();
    args.event = event;
    Status status = Call(fn, &args, name);
    if (complete != nullptr) *complete = args.complete;
    return status;
  }
  Result<double> ElapsedMs(hetrt_event_t* start, hetrt_event_t* end) const;
  Result<uint64_t> Timestamp(hetrt_event_t* event) const;
  // One reading of the device clock beside the host's (HostNowNs), in ns.
  struct ClockReading {
    uint64_t device_ns = 0;
    uint64_t host_ns = 0;
    uint64_t uncertainty_ns = 0;
  };
  Result<ClockReading> Clock() const;

 private:
  Plugin* plugin_ = nullptr;
  DLDevice device_{kDLCPU, 0};
};

}  // namespace hetrt
