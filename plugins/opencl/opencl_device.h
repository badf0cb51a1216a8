// OpenCL platforms and devices through the ICD loader: discovery (once),
// a context per platform, an in-order profiling queue per device, memory,
// copies, streams and events.
#pragma once

#include <string>
#include <vector>

#include "opencl_common.h"

namespace hetrt::opencl {

struct Device {
  cl_platform_id platform = nullptr;
  cl_device_id id = nullptr;
  cl_context context = nullptr;
  cl_command_queue queue = nullptr;
  std::string name;     // "pthread-skylake (Portable Computing Language)"
  std::string version;  // driver version, part of the program cache key
};

class Devices {
 public:
  // Discovers on first use; never fails: no device gives an empty list + reason.
  static Devices& Get();
  int count() const { return static_cast<int>(devices_.size()); }
  const std::string& unavailable_reason() const { return reason_; }
  Device* at(int id) { return id >= 0 && id < count() ? &devices_[static_cast<size_t>(id)] : nullptr; }

 private:
  Devices();
  std::vector<Device> devices_;
  std::vector<cl_context> contexts_;
  std::string reason_;
};

// The calling thread's current device (set by __tvm_set_device).
int CurrentDevice();
void SetCurrentDevice(int id);

// The device table of the plugin.
extern const hetrt_device_api_t kDeviceApi;

}  // namespace hetrt::opencl
