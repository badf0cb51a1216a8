// CUDA devices, all owned by an instance: discovery (once, on first use,
// without creating contexts), the primary context of a device (retained on
// first use, released at instance_destroy), memory, copies, streams, events,
// the device clock and the workspace pool.
#pragma once

#include <array>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "cuda_common.h"

namespace hetrt::cuda {

struct Device {
  int id = 0;
  CUdevice handle = 0;
  // Read at discovery. facts.name, "<name>, compute 9.0, 132 SMs, driver
  // 13.0", names the device in messages.
  std::string name;  // "NVIDIA H100 80GB HBM3"
  sdk::DeviceFacts facts;
  int compute_major = 0, compute_minor = 0;
  int shared_per_block_optin = 0;  // dynamic shared memory a kernel may opt into
  bool maps_host_memory = false;   // integrated, and maps host memory: HOST_VISIBLE works

  // The primary context and the streams the plugin keeps, made on first use.
  std::mutex context_mutex;
  std::atomic<bool> context_ready{false};
  CUcontext context = nullptr;
  CUstream stream = nullptr;        // the default stream (non-blocking: never the legacy NULL stream)
  CUstream clock_stream = nullptr;  // device_clock samples here (greatest priority), never behind user work

  // memory_stats: allocate() minus free() of this instance.
  sdk::MemoryCounters memory_counters;
  sdk::WorkspacePool<CUstream> workspace;  // keyed by the stream a block was freed on

  // The device clock: an anchor event whose device time is fixed; a timing
  // event's device time is the anchor's plus the elapsed time between them.
  std::mutex clock_mutex;
  CUevent anchor = nullptr;
  int64_t anchor_ns = 0;
  uint64_t anchor_taken_at = 0;  // host ns, to renew the anchor before float milliseconds lose precision
};

// What allocate() handed out: DEVICE memory by device pointer, HOST_PINNED by
// host address, HOST_VISIBLE by device pointer with its host address.
struct Allocation {
  uint64_t nbytes = 0;
  int device_id = 0;
  int32_t kind = HETRT_MEMORY_DEVICE;
  void* host = nullptr;  // the host address cuMemHostAlloc returned (pinned, host-visible)
};

}  // namespace hetrt::cuda

struct hetrt_instance {
  const hetrt_host_api_t* host = nullptr;
  hetrt::sdk::InstanceSerial serial;  // keys the thread-local current device/stream

  // Discovered on first use; never fails: no device gives an empty list and a reason.
  hetrt::sdk::DeviceList<hetrt::cuda::Device> devices{kDLCUDA, "CUDA", [this](auto& list) { Discover(list); }};
  const hetrt::cuda::Driver* driver() {
    devices.count();
    return driver_;
  }
  // Retains the device's primary context on first use and makes it current on
  // the calling thread.
  hetrt_error_t* Activate(hetrt::cuda::Device* d);
  // stream_get_current's native_stream (ABI 2.4): the CUstream of `current`
  // (NULL: the device's default stream), with the device's context made current.
  hetrt_error_t* NativeStream(DLDevice device, hetrt_stream* current, void** out);
  // A driver error naming the device: "cuda:0 (NVIDIA ...): <what>: <CUresult>".
  hetrt_error_t* Error(const hetrt::cuda::Device* d, const std::string& what, CUresult result) const;
  // Reports a packed function's failure through the host's set_last_error.
  void ReportError(const std::string& message) const noexcept { hetrt::sdk::ReportError(host, message.c_str()); }

  std::mutex allocations_mutex;
  std::map<uintptr_t, hetrt::cuda::Allocation> allocations;  // ordered: interior pointers find their allocation

  // Peer access enabled between two devices (both directions), once.
  std::mutex peers_mutex;
  std::map<std::pair<int, int>, bool> peers;

  ~hetrt_instance();

 private:
  void Discover(hetrt::sdk::DeviceList<hetrt::cuda::Device>& list);
  const hetrt::cuda::Driver* driver_ = nullptr;
};

// A stream: a non-blocking CUDA stream of one device.
struct hetrt_stream {
  CUstream stream = nullptr;
  hetrt::cuda::Device* device = nullptr;
};

namespace hetrt::cuda {

// The calling thread's current device and streams, per instance (set_device,
// stream_set_current). Kernel-launch hot path: no allocation, no lock.
using Current = sdk::ThreadCurrent<hetrt_stream>;
// The CUstream kernels launched now on `d` from this thread go to (NULL
// current stream: the device's default stream).
inline CUstream LaunchStream(const hetrt_instance* inst, const Device* d) {
  const hetrt_stream* s = Current::Get(inst->serial, d->id);
  return s ? s->stream : d->stream;
}

extern const hetrt_device_api_t kDeviceApi;

}  // namespace hetrt::cuda
