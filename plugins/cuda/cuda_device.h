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

// Workspace memory of one device, reused across calls: one free list per
// power-of-two size class. A block is reused only on the stream it was freed
// on (TVM host code frees workspace right after launching the kernel that uses
// it), or on any once that stream is gone.
struct WorkspaceBlock {
  CUdeviceptr ptr = 0;
  int size_class = 0;
  CUstream freed_on = nullptr;
};
struct WorkspacePool {
  std::mutex mutex;
  std::array<std::vector<WorkspaceBlock*>, 64> free_lists;
  std::unordered_map<CUdeviceptr, std::unique_ptr<WorkspaceBlock>> blocks;  // all of them, freed at instance_destroy
};

struct Device {
  int id = 0;
  CUdevice handle = 0;
  // Attributes, read at discovery.
  std::string name;          // "NVIDIA H100 80GB HBM3"
  std::string display_name;  // "<name>, compute 9.0, driver 13.0"
  std::string compute_version;  // "9.0"
  std::string driver_version;   // "13.0"
  int compute_major = 0, compute_minor = 0, multiprocessors = 0, max_threads_per_block = 0, warp_size = 0;
  int shared_per_block = 0, shared_per_block_optin = 0, clock_khz = 0, async_engines = 0;
  bool integrated = false, can_map_host = false;
  uint64_t total_memory = 0;

  // The primary context and the streams the plugin keeps, made on first use.
  std::mutex context_mutex;
  std::atomic<bool> context_ready{false};
  CUcontext context = nullptr;
  CUstream stream = nullptr;        // the default stream (non-blocking: never the legacy NULL stream)
  CUstream clock_stream = nullptr;  // device_clock samples here, never behind user work

  // memory_stats: allocate() minus free() of this instance.
  std::atomic<uint64_t> bytes_in_use{0}, peak_bytes{0}, num_allocations{0};
  WorkspacePool workspace;

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

  // Discovers on first use; never fails: no device gives an empty list and a reason.
  int count();
  hetrt::cuda::Device* at(int id) { return id >= 0 && id < count() ? devices_[static_cast<size_t>(id)].get() : nullptr; }
  const std::string& unavailable_reason() {
    count();
    return reason_;
  }
  const hetrt::cuda::Driver* driver() {
    count();
    return driver_;
  }
  // Retains the device's primary context on first use and makes it current on
  // the calling thread.
  hetrt_error_t* Activate(hetrt::cuda::Device* d);
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
  void Discover();
  std::once_flag discovered_;
  const hetrt::cuda::Driver* driver_ = nullptr;
  std::vector<std::unique_ptr<hetrt::cuda::Device>> devices_;
  std::string reason_;
};

// A stream: a non-blocking CUDA stream of one device.
struct hetrt_stream {
  CUstream stream = nullptr;
  hetrt::cuda::Device* device = nullptr;
};

namespace hetrt::cuda {

// The calling thread's current device of `inst` (set_device; 0 by default) and
// its current stream on a device (stream_set_current; NULL: the device's
// default stream). Kernel-launch hot path: no allocation, no lock.
int CurrentDevice(const hetrt_instance* inst);
hetrt_stream* CurrentStream(const hetrt_instance* inst, int device_id);
// The CUstream kernels launched now on `d` from this thread go to.
inline CUstream LaunchStream(const hetrt_instance* inst, const Device* d) {
  const hetrt_stream* s = CurrentStream(inst, d->id);
  return s ? s->stream : d->stream;
}


extern const hetrt_device_api_t kDeviceApi;

}  // namespace hetrt::cuda
