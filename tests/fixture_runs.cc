#include "fixture_runs.h"

#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "hetrt/base/dtype.h"
#include "hetrt/exec/graph_model.h"
#include "test_support.h"

namespace hetrt::testing {
namespace {

nlohmann::json Tolerance(const std::string& dir) {
  return nlohmann::json::parse(ReadText(dir + "/meta.json"))["tolerances"]["self_check_same_device"];
}

}  // namespace

void ExpectFixtureMatchesInEveryMode(const std::string& dir, const std::vector<DLDevice>& devices, int runs_per_mode) {
  const auto tol = Tolerance(dir);
  HETRT_ASSERT_OK_AND_ASSIGN(auto inputs, LoadParamDictFile(dir + "/inputs.params"));
  HETRT_ASSERT_OK_AND_ASSIGN(auto expected, LoadParamDictFile(dir + "/outputs.params"));
  for (int mode = 0; mode < 8; ++mode) {
    const bool triple = mode & 1, sequential = mode & 2, staged = mode & 4;
    SCOPED_TRACE(std::string(triple ? "triple" : "deploy.so") + (sequential ? " sequential" : " async") +
                 (staged ? " staged copies" : ""));
    GraphExecutor::Options options;
    options.devices = devices;
    options.sequential = sequential;
    options.staged_copies = staged;
    GraphModelFiles files{dir + (triple ? "/lib.so" : "/deploy.so")};
    if (triple) files.graph_json = dir + "/graph.json";
    if (triple && std::filesystem::exists(dir + "/params.params")) files.params = dir + "/params.params";
    HETRT_ASSERT_OK_AND_ASSIGN(GraphModel m, OpenGraphModel(files, options));
    for (const auto& p : inputs) HETRT_ASSERT_OK(m.executor->SetInput(p.name, p.tensor));
    for (int run = 0; run < runs_per_mode; ++run) {
      HETRT_ASSERT_OK(m.executor->Run());
      for (size_t i = 0; i < expected.size(); ++i) {
        HETRT_ASSERT_OK_AND_ASSIGN(Tensor out, m.executor->GetOutput(static_cast<int>(i)));
        EXPECT_TRUE(
            TensorsClose(out, FindParam(expected, "output_" + std::to_string(i))->tensor, tol["rtol"], tol["atol"]));
      }
    }
  }
}

void ExpectCliRunMatches(const std::string& cli, const std::string& dir, const std::vector<DLDevice>& devices) {
  const auto tol = Tolerance(dir);
  HETRT_ASSERT_OK_AND_ASSIGN(auto expected, LoadParamDictFile(dir + "/outputs.params"));
  std::string device_flags;
  for (const DLDevice& d : devices) device_flags += " --device " + DeviceToString(d);
  const std::string saved = ::testing::TempDir() + "/hetrt_fixture_out_" + std::to_string(getpid()) + ".params";
  const std::string log = saved + ".log";
  const std::string cmd = cli + " run " + dir + "/deploy.so" + device_flags + " --inputs " + dir +
                          "/inputs.params --save-outputs " + saved + " > " + log + " 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd << "\n" << ReadText(log);
  HETRT_ASSERT_OK_AND_ASSIGN(auto cli_outputs, LoadParamDictFile(saved));
  EXPECT_TRUE(TensorsClose(cli_outputs[0].tensor, expected[0].tensor, tol["rtol"], tol["atol"]));
  std::filesystem::remove(saved);
  std::filesystem::remove(log);
}

}  // namespace hetrt::testing
