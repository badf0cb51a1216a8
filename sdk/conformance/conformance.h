// What every check of the conformance kit shares: the plugin under test, loaded
// through the core's loader, and the device the device checks run on.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "device_client.h"
#include "hetrt/plugin_host/plugin_registry.h"

namespace hetrt::conformance {

struct Context {
  std::string plugin_path;
  std::string shim_path;  // the ABI shim (abi_shim.c), next to the kit
  std::unique_ptr<PluginRegistry> registry;
  Plugin* plugin = nullptr;
  DLDevice device{kDLCPU, 0};
  bool has_device = false;
  std::string no_device_reason;  // why device checks are skipped
};

Context& Ctx();

// The client of the device under test.
inline DeviceClient Client() { return DeviceClient(Ctx().plugin, Ctx().device); }

}  // namespace hetrt::conformance

// Skips the check, with the reason printed in the table, when the plugin has no
// device to run it on.
#define HETRT_REQUIRE_DEVICE()                                                                                 \
  do {                                                                                                         \
    if (!::hetrt::conformance::Ctx().has_device) GTEST_SKIP() << ::hetrt::conformance::Ctx().no_device_reason; \
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
