#include "device_suite.h"

#include <time.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>

#include "hetrt/dtype.h"
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
  return {cpu,
          opencl,
          vulkan,
          sim,
          cuda};
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

// One registry per backend for the whole run, released when the tests end and
// not by exit handlers: drivers (lavapipe) may be half torn down by then.
std::map<std::string, std::unique_ptr<PluginRegistry>> registries;
class ReleaseRegistries : public ::testing::Environment {
 public:
  void TearDown() override { registries.clear(); }
};
[[maybe_unused]] ::testing::Environment* const release_registries =
    ::testing::AddGlobalTestEnvironment(new ReleaseRegistries);

Result<PluginRegistry*> RegistryOf(const Backend& backend) {
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
    if (DeviceMayBeAbsent(backend())) GTEST_SKIP() << "no " << backend().name << " device: " << count->unavailable_reason;
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

std::vector<uint8_t> Pattern(size_t n) {
  std::vector<uint8_t> bytes(n);
  for (size_t i = 0; i < n; ++i) bytes[i] = static_cast<uint8_t>(i * 7 + 3);
  return bytes;
}

int64_t HostNowNs() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
}

void CheckCopiesRoundTrip(PluginRegistry& reg, Plugin* plugin, DLDevice device, Allocator& memory,
                          bool pinned_labelled_as_device) {
  constexpr int64_t kSize = 4099;
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor a, Tensor::Empty({kSize}, kU8, memory));
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor b, Tensor::Empty({kSize}, kU8, memory));
  Allocator& pinned_memory = plugin->DeviceAllocator(device, HETRT_MEMORY_HOST_PINNED);
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor pinned, Tensor::Empty({kSize}, kU8, pinned_memory));
  const std::vector<uint8_t> host = Pattern(kSize);
  std::vector<uint8_t> back(kSize);
  struct Case {
    uint64_t src_off, dst_off, n;
  };
  for (const Case& c : {Case{0, 0, 1}, Case{3, 5, 3}, Case{1, 0, 4097}, Case{7, 11, 1000}, Case{0, 0, 4099},
                        Case{9, 2, 0}}) {
    SCOPED_TRACE(std::to_string(c.src_off) + "->" + std::to_string(c.dst_off) + " x" + std::to_string(c.n));
    std::fill(back.begin(), back.end(), 0);
    std::memset(pinned.data(), 0, kSize);
    HETRT_ASSERT_OK(reg.CopyBytes(host.data(), c.src_off, kHost, a.data(), c.dst_off, device, c.n));  // host -> device
    HETRT_ASSERT_OK(reg.CopyBytes(a.data(), c.dst_off, device, b.data(), c.src_off, device, c.n));   // device -> device
    // device -> pinned host memory (labelled with the device it belongs to where the plugin knows it)
    const DLDevice pinned_device = pinned_labelled_as_device ? device : kHost;
    HETRT_ASSERT_OK(reg.CopyBytes(b.data(), c.src_off, device, pinned.data(), c.dst_off, pinned_device, c.n));
    HETRT_ASSERT_OK(reg.CopyBytes(pinned.data(), c.dst_off, kHost, back.data(), c.dst_off, kHost, c.n));
    EXPECT_EQ(std::memcmp(back.data() + c.dst_off, host.data() + c.src_off, c.n), 0);
    if (c.dst_off > 0) {
      EXPECT_EQ(back[c.dst_off - 1], 0) << "wrote before the destination range";
    }
    if (c.dst_off + c.n < kSize) {
      EXPECT_EQ(back[c.dst_off + c.n], 0) << "wrote past the destination range";
    }
  }
  if (device.device_type == kDLCPU) return;  // host memory: the core knows no buffer sizes
  Status s = reg.CopyBytes(host.data(), 0, kHost, a.data(), 4000, device, 200);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("4099"), std::string::npos) << "the error names the buffer's size: " << s.message();
}

void CheckTimestampsOnTheHostClock(const conformance::DeviceClient& c, void* device_buffer, size_t nbytes) {
  HETRT_ASSERT_OK_AND_ASSIGN(hetrt_device_clock_args_t clock, c.Clock());
  EXPECT_LT(clock.uncertainty_ns, 10'000'000u);
  const int64_t offset = static_cast<int64_t>(clock.host_ns) - static_cast<int64_t>(clock.device_ns);
  HETRT_ASSERT_OK_AND_ASSIGN(hetrt_stream_t * stream, c.NewStream());
  HETRT_ASSERT_OK_AND_ASSIGN(hetrt_event_t * a, c.NewEvent(HETRT_EVENT_TIMING));
  HETRT_ASSERT_OK_AND_ASSIGN(hetrt_event_t * b, c.NewEvent(HETRT_EVENT_TIMING));
  const std::vector<uint8_t> host(nbytes, 3);
  const int64_t before = HostNowNs();
  HETRT_ASSERT_OK(c.Record(a, stream));
  HETRT_ASSERT_OK(c.Copy(host.data(), 0, kHost, device_buffer, 0, c.device(), nbytes, stream, 0));
  HETRT_ASSERT_OK(c.Record(b, stream));
  HETRT_ASSERT_OK(c.EventCall(c.api()->event_synchronize, b));
  const int64_t after = HostNowNs();
  HETRT_ASSERT_OK_AND_ASSIGN(uint64_t stamp_a, c.Timestamp(a));
  HETRT_ASSERT_OK_AND_ASSIGN(uint64_t stamp_b, c.Timestamp(b));
  EXPECT_LE(stamp_a, stamp_b);
  const auto slack = static_cast<int64_t>(clock.uncertainty_ns);
  EXPECT_GE(static_cast<int64_t>(stamp_a) + offset + slack, before);
  EXPECT_LE(static_cast<int64_t>(stamp_b) + offset - slack, after);
  HETRT_ASSERT_OK_AND_ASSIGN(double elapsed_ms, c.ElapsedMs(a, b));
  EXPECT_GE(elapsed_ms, 0.0);
  for (hetrt_event_t* e : {a, b}) HETRT_ASSERT_OK(c.EventCall(c.api()->event_destroy, e));
  HETRT_ASSERT_OK(c.DestroyStream(stream));
}

}  // namespace hetrt::device_suite
