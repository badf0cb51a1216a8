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
  // Attributes, read once at discovery.
  std::string display_name;  // "<name>, driver <version>"
  std::string device_version;
  bool host_unified = false;
  cl_ulong total_memory = 0, local_mem = 0;
  size_t max_work_group = 0;
  cl_uint compute_units = 0, max_clock_mhz = 0;
  // CL_DEVICE_MEM_BASE_ADDR_ALIGN in bytes: where the driver places buffers (and PoCL their mappings).
  cl_uint base_address_alignment = 0;
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
  std::mutex pinned_mutex;
  std::unordered_map<void*, Pinned> pinned;

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

// The calling thread's current device of `inst` (set_device; 0 by default) and
// its current stream on a device (stream_set_current; NULL: the default
// queue). Kernel-launch hot path: no allocation, no lock.
int CurrentDevice(const hetrt_instance* inst);
hetrt_stream* CurrentStream(const hetrt_instance* inst, int device_id);
// The queue kernels launched now on `d` from this thread go to.
inline cl_command_queue LaunchQueue(const hetrt_instance* inst, const Device* d, int device_id) {
  const hetrt_stream* s = CurrentStream(inst, device_id);
  return s ? s->queue : d->queue;
}
// Releases a workspace buffer (teardown).
void ReleaseWorkspace(void* data);

// The device table of the plugin.
extern const hetrt_device_api_t kDeviceApi;

}  // namespace hetrt::opencl
