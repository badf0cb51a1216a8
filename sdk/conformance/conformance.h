// What every check of the conformance kit shares: the plugin under test, loaded
// through the core's loader, and the device the device checks run on.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "device_client.h"
#include "hetrt/plugin_host/plugin_registry.h"
#include "profile.h"

namespace hetrt::conformance {

struct Context {
  std::string plugin_path;
  std::string shim_path;  // the ABI shim (abi_shim.c), next to the kit
  std::unique_ptr<PluginRegistry> registry;
  Plugin* plugin = nullptr;
  DLDevice device{kDLCPU, 0};
  bool has_device = false;
  std::string no_device_reason;  // why device checks are skipped
  Profile profile;
};

Context& Ctx();

// The client of the device under test.
inline DeviceClient Client() { return DeviceClient(Ctx().plugin, Ctx().device); }
// Memory of one kind on the device under test, through the core's allocator.
inline Allocator& Memory(hetrt_memory_kind_t kind = HETRT_MEMORY_DEVICE) {
  return Ctx().plugin->DeviceAllocator(Ctx().device, kind);
}
// A registry of its own holding a second instance of the plugin under test.
std::unique_ptr<PluginRegistry> AnotherRegistry();
// Sets `options` on the plugin under test; a refused one fails the check.
void Apply(const Profile::Options& options);
// The largest alignment every memory kind honours: the device's
// HETRT_DEVICE_ATTR_MAX_ALIGNMENT (ABI 2.5), else the 256 the ABI guarantees.
uint64_t GuaranteedAlignment();

}  // namespace hetrt::conformance

// Skips the check, with the reason printed in the table, when the plugin has no
// device to run it on.
#define HETRT_REQUIRE_DEVICE()                                                                                 \
  do {                                                                                                         \
    if (!::hetrt::conformance::Ctx().has_device) GTEST_SKIP() << ::hetrt::conformance::Ctx().no_device_reason; \
  } while (0)

// Skips, with the profile's reason, a feature the backend does not support.
#define HETRT_REQUIRE_FEATURE(name)                                                              \
  do {                                                                                           \
    if (auto reason_ = ::hetrt::conformance::Ctx().profile.Unsupported(name))                    \
      GTEST_SKIP() << "unsupported " << (name) << " (" << ::hetrt::conformance::Ctx().profile.path \
                   << "): " << *reason_;                                                         \
  } while (0)

// Skips when the plugin leaves an optional device call NULL.
#define HETRT_REQUIRE_CALL(call)                                           \
  do {                                                                     \
    if (::hetrt::conformance::Ctx().plugin->device_api() == nullptr ||     \
        ::hetrt::conformance::Ctx().plugin->device_api()->call == nullptr) \
      GTEST_SKIP() << "the plugin does not implement " #call;              \
  } while (0)

// Failures name the call and carry the plugin's message (what the table shows).
#define HETRT_EXPECT_OK(expr)                                               \
  do {                                                                      \
    const ::hetrt::Status status_ = (expr);                                 \
    if (!status_.ok()) ADD_FAILURE() << #expr << ": " << status_.message(); \
  } while (0)
#define HETRT_CHECK_OK(expr)                                               \
  do {                                                                     \
    const ::hetrt::Status status_ = (expr);                                \
    if (!status_.ok()) GTEST_FAIL() << #expr << ": " << status_.message(); \
  } while (0)
#define HETRT_CHECK_OK_AND_ASSIGN(lhs, expr)                                              \
  auto HETRT_CONCAT_(result_, __LINE__) = (expr);                                         \
  if (!HETRT_CONCAT_(result_, __LINE__).ok())                                             \
    GTEST_FAIL() << #expr << ": " << HETRT_CONCAT_(result_, __LINE__).status().message(); \
  lhs = std::move(HETRT_CONCAT_(result_, __LINE__)).value()
#define HETRT_CONCAT_INNER_(a, b) a##b
#define HETRT_CONCAT_(a, b) HETRT_CONCAT_INNER_(a, b)
