// OpenCL platforms and devices through the ICD loader, all owned by an
// instance: discovery (once, on first use), a context per platform, an
// in-order profiling queue per device, memory, copies, streams and events.
#pragma once

#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "hetrt/sdk/pinned_blocks.h"
#include "hetrt/sdk/wake_up.h"
#include "opencl_common.h"

namespace hetrt::opencl {

struct Device {
  cl_platform_id platform = nullptr;
  cl_device_id id = nullptr;
  cl_context context = nullptr;
  cl_command_queue queue = nullptr;        // the default stream
  cl_command_queue clock_queue = nullptr;  // device_clock samples here, never behind user work
  std::string name;                        // "pthread-skylake (Portable Computing Language)"
  std::string version;                     // driver version, part of the program cache key
  // Read once at discovery; facts.name is "<name>, driver <version>".
  // facts.max_alignment is CL_DEVICE_MEM_BASE_ADDR_ALIGN in bytes: where the
  // driver places buffers (and PoCL their mappings).
  sdk::DeviceFacts facts;
  bool host_unified = false;
  // memory_stats: allocate() minus free() of this instance.
  sdk::MemoryCounters memory_counters;
  sdk::WorkspacePool<cl_command_queue> workspace;  // keyed by the queue a block was freed on
};

}  // namespace hetrt::opencl

// One instance of the plugin: everything it discovers and creates.
struct hetrt_instance {
  const hetrt_host_api_t* host = nullptr;
  hetrt::sdk::InstanceSerial serial;  // keys the thread-local current device/stream
  // event_synchronize polls this long before sleeping in the driver (option
  // "wait_poll_us"; kAuto: as long as a wake-up costs here, hetrt/sdk/wake_up.h).
  std::atomic<int64_t> wait_poll_us{hetrt::sdk::PollBudget::kAuto};
  hetrt::sdk::PollBudget poll_budget;
  int64_t WaitPollUs() { return poll_budget.Us(wait_poll_us.load(std::memory_order_relaxed)); }

  // Discovered on first use; never fails: no device gives an empty list + reason.
  hetrt::sdk::DeviceList<hetrt::opencl::Device> devices{kDLOpenCL, "OpenCL", [this](auto& list) { Discover(list); }};
  // Reports a packed function's failure through the host's set_last_error.
  void ReportError(const char* message) const noexcept { hetrt::sdk::ReportError(host, message); }
  void ReportError(const std::string& message) const noexcept { ReportError(message.c_str()); }

  // HOST_PINNED allocations: host pointer -> mapped buffer.
  struct Pinned {
    cl_mem buffer;
    int device_id;
    uint64_t nbytes;
  };
  hetrt::sdk::PinnedBlocks<Pinned> pinned;

  // stream_get_current's native_stream (ABI 2.4): the queue of `current`
  // (NULL: the device's default queue).
  hetrt_error_t* NativeStream(DLDevice device, hetrt_stream* current, void** out);

  ~hetrt_instance();

 private:
  void Discover(hetrt::sdk::DeviceList<hetrt::opencl::Device>& list);
  std::vector<cl_context> contexts_;
};

// A stream: an in-order profiling queue of one device.
struct hetrt_stream {
  cl_command_queue queue = nullptr;
  hetrt::opencl::Device* device = nullptr;
};

namespace hetrt::opencl {

// The calling thread's current device and streams, per instance (set_device,
// stream_set_current). Kernel-launch hot path: no allocation, no lock.
using Current = sdk::ThreadCurrent<hetrt_stream>;
// The queue kernels launched now on `d` from this thread go to (NULL current
// stream: the device's default queue).
inline cl_command_queue LaunchQueue(const hetrt_instance* inst, const Device* d, int device_id) {
  const hetrt_stream* s = Current::Get(inst->serial, device_id);
  return s ? s->queue : d->queue;
}
// Releases a workspace buffer (teardown).
void ReleaseWorkspace(void* data);

// The device table of the plugin.
extern const hetrt_device_api_t kDeviceApi;

}  // namespace hetrt::opencl
