// Shared helpers for hetrt's tests: where the TVM fixtures are, and small checks.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "hetrt/base/status.h"
#include "hetrt/formats/params.h"
#include "hetrt/module/module.h"
#include "hetrt/plugin_host/plugin_registry.h"

namespace hetrt::testing {

// $HETRT_FIXTURES, else the CMake option HETRT_FIXTURES_DIR (default ../shared/fixtures).
std::string FixturesRoot();
// <root>/tvm-0.18/<model>, or "" when the fixtures are absent.
std::string TvmFixture(const std::string& model);
// Every model folder under tvm-0.18 (not mlf/).
std::vector<std::string> TvmFixtureModels();
// The libraries of a model folder that exist: <dir>/deploy.so, then <dir>/lib.so.
std::vector<std::string> FixtureLibraries(const std::string& dir);

// <root>/tvm-0.18/mlf, or "" when the MLF fixtures are absent.
std::string MlfFixturesDir();
// The Model Library Format tarballs there, by name: "add3_graph" for add3_graph_mlf.tar.
std::vector<std::string> MlfFixtureNames();
struct MlfFixture {
  std::string tar;              // <mlf>/add3_graph_mlf.tar
  std::string model;            // add3
  std::string inputs, outputs;  // <mlf>/add3_inputs.params, <mlf>/add3_outputs.params
  bool graph = false;           // a graph-executor package (else AOT)
};
MlfFixture MlfFixtureNamed(const std::string& name);

// ---- One test per fixture: TEST_P(Suite, Name) over FixtureParams, with
//      Suite an alias of PerFixtureTest and HETRT_INSTANTIATE_PER_FIXTURE.

// A fixture's name (a TVM model folder, an MLF name), or, when there are no
// such fixtures, a placeholder that says why.
struct FixtureParam {
  std::string name;         // "" for the placeholder
  std::string none_reason;  // the placeholder's skip message
  std::string test_name;    // [A-Za-z0-9_]+, unique in its list
};
void PrintTo(const FixtureParam& param, std::ostream* os);

// The names `keep` accepts (all without one), or one placeholder skipping with
// "no <what> under <root>". A name `keep` throws on (say a broken meta.json) is
// kept, so that its test fails with the reason instead of vanishing. Called when
// the test binary registers its tests, which is also when ctest lists them.
std::vector<FixtureParam> FixtureParams(const std::vector<std::string>& names, const std::string& what,
                                        const std::function<bool(const std::string& name)>& keep = {});
// The graph-executor MLF fixtures (add3_graph, not add3_aot).
std::vector<FixtureParam> GraphMlfFixtureParams();

// The test's name: the fixture's, anything outside [A-Za-z0-9_] made '_' (then
// _2, _3... should two names meet); NoFixtures for the placeholder.
std::string FixtureParamName(const ::testing::TestParamInfo<FixtureParam>& info);

// Skips the placeholder in SetUp; fixture() is the fixture's name.
class PerFixtureTest : public ::testing::TestWithParam<FixtureParam> {
 protected:
  void SetUp() override;
  const std::string& fixture() const { return GetParam().name; }
};

// The modules of `type_key` in the import tree under `root` (root included).
std::vector<const Module*> ModulesOfType(const Module& root, std::string_view type_key);

// Calls `kernel` of `m` as TVM host code does: __tvm_set_device(device), then
// the packed function. NOT_FOUND when the module has no such function.
Status CallKernel(Module& m, DLDevice device, const std::string& kernel, std::vector<hetrt_value_t> args,
                  std::vector<int32_t> codes);

// A host float32 tensor of `shape`, uniform in [-1, 1) from `seed`.
Tensor Random(std::vector<int64_t> shape, uint32_t seed);

// Whole-file helpers for tests (an empty result when the file is missing).
std::string ReadText(const std::string& path);

// An OpenCL module's bytes (TVM's "opencl" blob): one kernel
// `twice_into(out, in)` launched over threadIdx.x.
std::vector<uint8_t> OpenClTwiceIntoModule();
// The devc.c of a system-lib export whose host code imports that module
// (exporter's DevcOptions::system_lib, with `prefix`).
Result<std::string> OpenClTwiceIntoSystemLibDevc(const std::string& prefix);
// Graph JSON of x (OpenCL) -> `twice_function` (OpenCL) -> __copy -> `add_function`
// with param w (CPU), every tensor float32 [1, 6].
std::string TwiceThenAddGraph(const std::string& twice_function, const std::string& add_function);

// Asserts outputs match expected within rtol/atol (float32 only), naming the worst element.
::testing::AssertionResult TensorsClose(const Tensor& actual, const Tensor& expected, double rtol, double atol);

}  // namespace hetrt::testing

#define HETRT_ASSERT_OK(expr)                          \
  do {                                                 \
    const ::hetrt::Status hetrt_s_ = (expr);           \
    ASSERT_TRUE(hetrt_s_.ok()) << hetrt_s_.ToString(); \
  } while (0)

#define HETRT_ASSERT_OK_AND_ASSIGN(lhs, expr)                                                                 \
  auto HETRT_CONCAT(hetrt_r_, __LINE__) = (expr);                                                             \
  ASSERT_TRUE(HETRT_CONCAT(hetrt_r_, __LINE__).ok()) << HETRT_CONCAT(hetrt_r_, __LINE__).status().ToString(); \
  lhs = std::move(HETRT_CONCAT(hetrt_r_, __LINE__)).value()

// HETRT_REQUIRE names what this run must have: a comma list of opencl,
// vulkan, vulkan-validation, qemu, arm-gcc, python, cuda-toolkit, fixtures, or
// "all" (CI sets it: a missing device, tool or data set is then a failure,
// never a pass by skipping), where "-name" takes one back out. Only "no GPU"
// is never required.
namespace hetrt::testing {
bool Required(const std::string& what);
std::string RequiredList();
}  // namespace hetrt::testing

// Skips with `message` when `what` is missing; fails instead when the run
// requires it (HETRT_REQUIRE).
#define HETRT_MISSING(what, message)                                                               \
  do {                                                                                             \
    if (::hetrt::testing::Required(what))                                                          \
      GTEST_FAIL() << (what) << " is required (HETRT_REQUIRE=" << ::hetrt::testing::RequiredList() \
                   << ") but missing: " << message;                                                \
    GTEST_SKIP() << message;                                                                       \
  } while (0)

// Skips the test (with the reason) when a fixture folder is missing; fails
// when fixtures are required.
#define HETRT_REQUIRE_FIXTURE(var, model)                                                                        \
  const std::string var = ::hetrt::testing::TvmFixture(model);                                                   \
  if (var.empty())                                                                                               \
  HETRT_MISSING("fixtures", "TVM fixture '" << model << "' not found under " << ::hetrt::testing::FixturesRoot() \
                                            << " (set HETRT_FIXTURES or -DHETRT_FIXTURES_DIR)")

// Instantiates the TEST_Ps of `suite` as prefix/suite.Test/<fixture>, one per FixtureParam.
#define HETRT_INSTANTIATE_PER_FIXTURE(prefix, suite, params) \
  INSTANTIATE_TEST_SUITE_P(prefix, suite, ::testing::ValuesIn(params), ::hetrt::testing::FixtureParamName)

// Skips unless the OpenCL plugin is installed and sees a device.
#define HETRT_REQUIRE_OPENCL()                                                                    \
  do {                                                                                            \
    auto plugin = ::hetrt::PluginRegistry::Global().ForDevice({kDLOpenCL, 0});                    \
    if (!plugin.ok()) HETRT_MISSING("opencl", "no OpenCL device: " << plugin.status().message()); \
  } while (0)
