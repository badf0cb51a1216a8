// The kit calls a plugin's devices through the core's device face
// (hetrt/device/device.h), the same client the executors use.
#pragma once

#include "hetrt/device/device.h"
#include "hetrt/plugin_host/plugin_registry.h"

namespace hetrt::conformance {

using DeviceClient = ::hetrt::Device;

}  // namespace hetrt::conformance
