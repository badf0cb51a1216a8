// One device of one loaded plugin, called through the plugin ABI the way the
// core calls it: each call fills its args struct (struct_size, self, device)
// and turns the plugin's error into a Status naming the plugin. The
// conformance kit and the plugin test suites share it.
#pragma once

#include <cstdint>
#include <string>

#include "hetrt/plugin_registry.h"
#include "hetrt/status.h"

namespace hetrt::conformance {

class DeviceClient {
 public:
  DeviceClient(Plugin* plugin, DLDevice device) : plugin_(plugin), device_(device) {}

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
    if (fn == nullptr) return Unimplemented(std::string("plugin '") + plugin_->name() + "' has no " + name);
    return plugin_->Consume(fn(args));
  }

  struct Allocation {
    void* data = nullptr;
    void* host_pointer = nullptr;
  };
  Result<Allocation> Allocate(uint64_t nbytes, uint64_t alignment = 64, int32_t kind = HETRT_MEMORY_DEVICE) const;
  Status Free(void* data, int32_t kind = HETRT_MEMORY_DEVICE) const;
  Status Copy(const void* src, uint64_t src_offset, DLDevice src_device, void* dst, uint64_t dst_offset,
              DLDevice dst_device, uint64_t nbytes, hetrt_stream_t* stream = nullptr,
              uint32_t flags = HETRT_COPY_BLOCKING) const;

  Result<hetrt_stream_t*> NewStream(int32_t kind = HETRT_STREAM_COMPUTE) const;
  Status DestroyStream(hetrt_stream_t* stream) const;
  Status Synchronize(hetrt_stream_t* stream) const;
  Status WaitEvent(hetrt_stream_t* stream, hetrt_event_t* event) const;
  // stream_set_current; `previous` receives the stream it replaced.
  Status SetCurrentStream(hetrt_stream_t* stream, hetrt_stream_t** previous = nullptr) const;
  Result<hetrt_stream_t*> CurrentStream() const;

  Result<hetrt_event_t*> NewEvent(uint32_t flags = 0) const;
  Status Record(hetrt_event_t* event, hetrt_stream_t* stream) const;
  // event_destroy, event_synchronize or event_query (complete: its answer).
  Status EventCall(hetrt_error_t* (*fn)(hetrt_event_args_t*), hetrt_event_t* event,
                   int32_t* complete = nullptr) const;
  Result<double> ElapsedMs(hetrt_event_t* start, hetrt_event_t* end) const;
  Result<uint64_t> Timestamp(hetrt_event_t* event) const;
  Result<hetrt_device_clock_args_t> Clock() const;

 private:
  Plugin* plugin_;
  DLDevice device_;
};

}  // namespace hetrt::conformance
