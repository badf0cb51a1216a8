#include "device_suite.h"

#include <cstdlib>
#include <map>
#include <memory>

#include "hetrt/base/dtype.h"
#include "test_support.h"
#include "vulkan_attributes.h"

namespace hetrt::device_suite {

std::vector<Backend> AllBackends() {
  Backend cpu{"cpu", kDLCPU, HETRT_SUITE_CPU_PLUGIN};
  cpu.has_modules = false;
  Backend vulkan{"vulkan", kDLVulkan, HETRT_SUITE_VULKAN_PLUGIN};
  vulkan.queued_copies = {{"direct_mapping", "0"}};
  vulkan.queued_copies_undo = {{"direct_mapping", "1"}};
  vulkan.driver_messages = [](const Plugin& plugin, DLDevice device) {
    auto n = plugin.AttributeInt(device, HETRT_VULKAN_ATTR_VALIDATION_MESSAGES);
    return n.ok() ? *n : int64_t{0};
  };
  Backend cuda{"cuda", kDLCUDA, HETRT_SUITE_CUDA_PLUGIN};
  cuda.guaranteed_alignment = 256;
  Backend opencl{"opencl", kDLOpenCL, HETRT_SUITE_OPENCL_PLUGIN};
  opencl.guaranteed_alignment = 64;  // PoCL maps pinned memory at 64-byte boundaries
  Backend sim{"template_sim", kDLExtDev, HETRT_SUITE_SIM_PLUGIN};
  sim.copies_to_pinned_labelled_as_device = false;  // its pinned memory is plain host memory
  sim.counts_failed_frees = false;                  // the template keeps statistics of its own
  return {cpu, opencl, vulkan, sim, cuda};
}

std::string BackendName(const ::testing::TestParamInfo<Backend>& info) { return info.param.name; }
void PrintTo(const Backend& backend, std::ostream* os) { *os << backend.name; }

namespace {

// CUDA may lack a GPU here; a driver named in $HETRT_CUDA_DRIVER (the fake
// one under ctest's fake_driver.* run) must give it a device.
bool DeviceMayBeAbsent(const Backend& backend) {
  const char* driver = std::getenv("HETRT_CUDA_DRIVER");
  return backend.device_type == kDLCUDA && (driver == nullptr || *driver == '\0');
}

// One registry per backend for the whole run, never destroyed (as the global
// registry): destroyed by exit handlers, a driver half torn down by then
// (lavapipe) crashes, and one unloaded before exit leaves its own one-time
// allocations to LeakSanitizer with no module to name.
Result<PluginRegistry*> RegistryOf(const Backend& backend) {
  static auto& registries = *new std::map<std::string, std::unique_ptr<PluginRegistry>>;
  auto it = registries.find(backend.name);
  if (it == registries.end()) {
    if (backend.plugin_path.empty()) return NotFound("the " + backend.name + " plugin is not built here");
    PluginRegistry::Options options;
    options.search_paths = {backend.plugin_path};
    it = registries.emplace(backend.name, PluginRegistry::Discover(options)).first;
  }
  PluginRegistry& registry = *it->second;
  if (registry.plugins().size() != 1) {
    std::string why;
    for (const PluginProblem& p : registry.problems()) why += p.path + ": " + p.reason + "; ";
    return NotFound("the " + backend.name + " plugin did not load from " + backend.plugin_path + ": " + why);
  }
  return &registry;
}

}  // namespace

void DeviceSuite::SetUp() {
  auto registry = RegistryOf(backend());
  ASSERT_TRUE(registry.ok()) << backend().name << ": " << registry.status().message();
  registry_ = *registry;
  plugin_ = registry_->plugins()[0].get();
  auto count = plugin_->CountDevices(backend().device_type);
  ASSERT_TRUE(count.ok()) << backend().name << ": " << count.status().message();
  if (count->count == 0) {
    if (DeviceMayBeAbsent(backend()))
      GTEST_SKIP() << "no " << backend().name << " device: " << count->unavailable_reason;
    // README's rule: a missing OpenCL or Vulkan device skips with the reason
    // unless the run requires it (HETRT_REQUIRE), then it fails naming it.
    if (backend().name == "opencl" || backend().name == "vulkan")
      HETRT_MISSING(backend().name, "no " << backend().name << " device: " << count->unavailable_reason);
    FAIL() << "no " << backend().name << " device here: " << count->unavailable_reason;
  }
  if (backend().driver_messages) messages_before_ = backend().driver_messages(*plugin_, device());
}

void DeviceSuite::TearDown() {
  if (plugin_ == nullptr || !backend().driver_messages) return;
  EXPECT_EQ(backend().driver_messages(*plugin_, device()), messages_before_)
      << backend().name << "'s driver reported problems during the test (see stderr)";
}

std::unique_ptr<PluginRegistry> DeviceSuite::AnotherRegistry() const {
  PluginRegistry::Options options;
  options.search_paths = {backend().plugin_path};
  return PluginRegistry::Discover(options);
}

void DeviceSuite::Apply(const Options& options) const {
  for (const auto& [key, value] : options) {
    const Status set = plugin_->SetOption(key, value);
    EXPECT_TRUE(set.ok()) << key << "=" << value << ": " << set.message();
  }
}

}  // namespace hetrt::device_suite
