// Where the TVM backend calls of compiled code go (workspace memory,
// __tvm_set_device, parallel launch): an interface the plugin host implements
// and installs, so this layer reaches devices without knowing the registry.
#pragma once

#include <cstdint>

#include "hetrt/device/plugin.h"

namespace hetrt {

class BackendRoutes {
 public:
  virtual ~BackendRoutes() = default;
  // The plugin serving a device type's workspace and set_device; NULL: none.
  virtual Plugin* DeviceProvider(int32_t device_type) const = 0;
  // The host task pool; NULL: parallel launches run serially.
  virtual Plugin* ParallelProvider() const = 0;
};

// The routes used when no BackendRoutesScope is active: `resolver` is called
// on first use (the plugin host discovers its global registry there).
void SetDefaultBackendRoutes(const BackendRoutes* (*resolver)());

// While alive, the TVM backend calls this thread makes go to `routes` (NULL:
// the default routes): an executor holds one around each run so compiled code
// reaches the executor's own plugin instances. Work that parallel tasks do on
// pool threads uses the default routes (CPU workspace is per thread whichever
// instance serves it).
class BackendRoutesScope {
 public:
  explicit BackendRoutesScope(const BackendRoutes* routes);
  ~BackendRoutesScope();
  BackendRoutesScope(const BackendRoutesScope&) = delete;
  BackendRoutesScope& operator=(const BackendRoutesScope&) = delete;

 private:
  const BackendRoutes* previous_;
};

}  // namespace hetrt
