// Shared helpers for hetrt's tests: where the TVM fixtures are, and small checks.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "hetrt/params.h"
#include "hetrt/plugin_registry.h"
#include "hetrt/status.h"

namespace hetrt::testing {

// $HETRT_FIXTURES, else the CMake option HETRT_FIXTURES_DIR (default ../shared/fixtures).
std::string FixturesRoot();
// <root>/tvm-0.18/<model>, or "" when the fixtures are absent.
std::string TvmFixture(const std::string& model);
// Every model folder under tvm-0.18 (not mlf/).
std::vector<std::string> TvmFixtureModels();

// Whole-file helpers for tests (an empty result when the file is missing).
std::string ReadText(const std::string& path);

// Asserts outputs match expected within rtol/atol (float32 only), naming the worst element.
::testing::AssertionResult TensorsClose(const Tensor& actual, const Tensor& expected, double rtol,
                                        double atol);

}  // namespace hetrt::testing

#define HETRT_ASSERT_OK(expr)                                      \
  do {                                                             \
    const ::hetrt::Status hetrt_s_ = (expr);                       \
    ASSERT_TRUE(hetrt_s_.ok()) << hetrt_s_.ToString();             \
  } while (0)

#define HETRT_ASSERT_OK_AND_ASSIGN(lhs, expr)                                   \
  auto HETRT_CONCAT(hetrt_r_, __LINE__) = (expr);                               \
  ASSERT_TRUE(HETRT_CONCAT(hetrt_r_, __LINE__).ok())                            \
      << HETRT_CONCAT(hetrt_r_, __LINE__).status().ToString();                  \
  lhs = std::move(HETRT_CONCAT(hetrt_r_, __LINE__)).value()

// Skips the test (with the reason) when a fixture folder is missing.
#define HETRT_REQUIRE_FIXTURE(var, model)                                                 \
  const std::string var = ::hetrt::testing::TvmFixture(model);                            \
  if (var.empty())                                                                        \
  GTEST_SKIP() << "TVM fixture '" << model << "' not found under "                        \
               << ::hetrt::testing::FixturesRoot()                                        \
               << " (set HETRT_FIXTURES or -DHETRT_FIXTURES_DIR)"

// Skips unless the OpenCL plugin is installed and sees a device.
#define HETRT_REQUIRE_OPENCL()                                                           \
  do {                                                                                   \
    auto plugin = ::hetrt::PluginRegistry::Global().ForDevice({kDLOpenCL, 0});           \
    if (!plugin.ok()) GTEST_SKIP() << "no OpenCL device: " << plugin.status().message(); \
  } while (0)
