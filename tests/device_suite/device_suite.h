// One suite of device behaviour, run on every backend built here: the CPU,
// OpenCL (PoCL), Vulkan (lavapipe), the plugin template's simulated device,
// and CUDA (a GPU, or the fake driver: ctest's fake_driver.* run). Each test
// calls the plugin through the ABI (conformance::DeviceClient) or through the
// core (PluginRegistry, Tensor), never a backend's internals; what is one
// backend's own stays in that backend's test file.
//
// A backend whose plugin is missing or sees no device fails, naming it; CUDA
// without a GPU skips unless a driver was named ($HETRT_CUDA_DRIVER).
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "device_checks.h"
#include "hetrt/base/dtype.h"

namespace hetrt::device_suite {

using Options = std::vector<std::pair<std::string, std::string>>;

struct Backend {
  std::string name;  // the test-name suffix
  DLDeviceType device_type;
  std::string plugin_path;                          // "" when the build has none
  bool has_modules = true;                          // declares type_keys
  uint64_t guaranteed_alignment = 4096;             // larger alignments may be refused
  bool copies_to_pinned_labelled_as_device = true;  // pinned memory named by its device, not the host
  bool counts_failed_frees = true;                  // memory_stats reports failed_frees (ABI 2.3)
  // Options under which device memory allocated is copied through the
  // device's queue rather than by the host (Vulkan: direct_mapping=0), and
  // the options that undo them.
  Options queued_copies = {};
  Options queued_copies_undo = {};
  // Problems the backend's driver reported during a test (Vulkan: validation
  // layer messages); 0 when it has no such count.
  std::function<int64_t(const Plugin&, DLDevice)> driver_messages = {};
};

// Every backend of the suite, whether or not it is built.
std::vector<Backend> AllBackends();
std::string BackendName(const ::testing::TestParamInfo<Backend>& info);
void PrintTo(const Backend& backend, std::ostream* os);

// The backend's plugin, loaded alone into a registry of the suite's own (one
// per backend, kept for the whole run), and device 0 of it.
class DeviceSuite : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override;
  void TearDown() override;

  const Backend& backend() const { return GetParam(); }
  PluginRegistry& registry() const { return *registry_; }
  Plugin* plugin() const { return plugin_; }
  DLDevice device() const { return {backend().device_type, 0}; }
  conformance::DeviceClient client() const { return {plugin_, device()}; }
  Allocator& memory(hetrt_memory_kind_t kind = HETRT_MEMORY_DEVICE) const {
    return plugin_->DeviceAllocator(device(), kind);
  }
  // A new registry holding a second instance of the backend's plugin.
  std::unique_ptr<PluginRegistry> AnotherRegistry() const;
  // Sets `options` on the plugin (failing the test on an error).
  void Apply(const Options& options) const;

 private:
  PluginRegistry* registry_ = nullptr;
  Plugin* plugin_ = nullptr;
  int64_t messages_before_ = 0;
};

// The value of `result`, or a failure and T{}.
template <class T>
T ValueOrFail(Result<T> result) {
  EXPECT_TRUE(result.ok()) << result.status().message();
  return result.ok() ? std::move(result).value() : T{};
}

}  // namespace hetrt::device_suite
