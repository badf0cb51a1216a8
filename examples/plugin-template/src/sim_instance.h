// One instance of the simulated-accelerator plugin, and what its device and
// module tables share. Everything stateful hangs off the instance, so two
// registries holding two instances never share memory or options.
#pragma once

#include <atomic>
#include <string>

#include "hetrt/sdk/plugin.h"
#include "sim_memory.h"

// A stream. The simulated device runs each command when it is enqueued, so a
// stream only has to exist (and be checked): a real device keeps its queue here.
struct hetrt_stream {
  int device_id = 0;
};

// An event: the device-clock time at which it was recorded (0: never).
struct hetrt_event {
  std::atomic<uint64_t> recorded_ns{0};
};

struct hetrt_instance {
  const hetrt_host_api_t* host = nullptr;
  hetrt::sdk::InstanceSerial serial;            // keys the per-thread current device/stream
  sim::AddressSpace memory{uint64_t{1} << 30};  // 1 GiB of simulated device memory
};

namespace sim {

HETRT_SDK_PLUGIN_LABEL("sim plugin");  // kLabel, Entry<F> (the entry guard) and MakeError
inline constexpr int32_t kDeviceType = kDLExtDev;
inline constexpr int kNumDevices = 1;
using Current = hetrt::sdk::ThreadCurrent<hetrt_stream>;

// NULL when `device` is this plugin's (ext_dev:0), else the error to return.
hetrt_error_t* CheckDevice(DLDevice device);

extern const hetrt_device_api_t kDeviceApi;
extern const hetrt_module_api_t kModuleApi;

}  // namespace sim
