// The micro C runtime on every Model Library Format fixture: in-process and as
// a standalone program, with the arena checked against the MLF metadata.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "hetrt/mlf.h"
#include "micro_model.h"
#include "test_support.h"

namespace hetrt {
namespace {

struct Fixture {
  std::string tar, model, dir;
};

std::vector<Fixture> MlfFixtures() {
  std::vector<Fixture> out;
  const std::string dir = testing::FixturesRoot() + "/tvm-0.18/mlf";
  if (!std::filesystem::is_directory(dir)) return out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    const auto cut = name.find("_graph_mlf.tar") != std::string::npos ? name.find("_graph_mlf.tar") : name.find("_aot_mlf.tar");
    if (cut == std::string::npos) continue;
    out.push_back({e.path().string(), name.substr(0, cut), dir});
  }
  std::sort(out.begin(), out.end(), [](const Fixture& a, const Fixture& b) { return a.tar < b.tar; });
  return out;
}

// Arena bytes the metadata budgets for main: workspace + io + constants.
uint64_t MetadataBudget(const MlfMetadata& md) {
  for (const auto& m : md.memory)
    if (m.name == "main") return m.workspace_bytes + m.io_bytes + m.constants_bytes;
  return 0;
}

TEST(Micro, EveryMlfFixtureRunsInProcessAndMatchesTvm) {
  auto fixtures = MlfFixtures();
  if (fixtures.empty()) GTEST_SKIP() << "no MLF fixtures under " << testing::FixturesRoot();
  for (const Fixture& f : fixtures) {
    SCOPED_TRACE(f.tar);
    HETRT_ASSERT_OK_AND_ASSIGN(MlfPackage mlf, MlfPackage::Read(f.tar));
    HETRT_ASSERT_OK_AND_ASSIGN(auto model, micro::InProcessModel::Build(mlf, {}));
    HETRT_ASSERT_OK_AND_ASSIGN(auto inputs, LoadParamDictFile(f.dir + "/" + f.model + "_inputs.params"));
    for (const auto& p : inputs) HETRT_ASSERT_OK(model->SetInput(p.name, p.tensor));
    HETRT_ASSERT_OK(model->Run());
    HETRT_ASSERT_OK_AND_ASSIGN(auto expected, LoadParamDictFile(f.dir + "/" + f.model + "_outputs.params"));
    HETRT_ASSERT_OK_AND_ASSIGN(Tensor out, model->GetOutput(0));
    const Tensor& e = expected[0].tensor;
    ASSERT_EQ(out.nbytes(), e.nbytes());
    Tensor flat = Tensor::Borrow(out.data(), out.device(), e.shape(), out.dtype());
    EXPECT_TRUE(testing::TensorsClose(flat, e, 1e-5, 1e-6));
    // Tensors and kernel workspace stay within what TVM's metadata budgets.
    const std::string report = model->ArenaReport();
    EXPECT_NE(report.find("arena: "), std::string::npos) << report;
    const uint64_t budget = MetadataBudget(mlf.metadata());
    ASSERT_GT(budget, 0u);
    uint64_t tensors = 0, workspace = 0;
    std::sscanf(report.substr(report.find("tensors")).c_str(), "tensors %lu", &tensors);
    std::sscanf(report.substr(report.find("workspace")).c_str(), "workspace %lu", &workspace);
    EXPECT_LE(tensors + workspace, budget) << report;
    std::printf("  %s: %s (metadata budget %lu)\n", f.tar.substr(f.tar.rfind('/') + 1).c_str(), report.c_str(),
                static_cast<unsigned long>(budget));
  }
}

TEST(Micro, EveryMlfFixtureBuildsAsAStandaloneProgramThatMatchesTvm) {
  auto fixtures = MlfFixtures();
  if (fixtures.empty()) GTEST_SKIP() << "no MLF fixtures under " << testing::FixturesRoot();
  for (const Fixture& f : fixtures) {
    SCOPED_TRACE(f.tar);
    HETRT_ASSERT_OK_AND_ASSIGN(MlfPackage mlf, MlfPackage::Read(f.tar));
    micro::ProjectOptions options;
    HETRT_ASSERT_OK_AND_ASSIGN(options.inputs, LoadParamDictFile(f.dir + "/" + f.model + "_inputs.params"));
    const std::string dir = ::testing::TempDir() + "/hetrt_project_" + std::filesystem::path(f.tar).stem().string();
    std::filesystem::remove_all(dir);
    HETRT_ASSERT_OK(micro::WriteStandaloneProject(mlf, dir, options));
    ASSERT_EQ(std::system(("make -s -C " + dir + " > " + dir + "/build.log 2>&1").c_str()), 0) << "see " << dir << "/build.log";
    ASSERT_EQ(std::system((dir + "/model " + dir + "/out > " + dir + "/run.log").c_str()), 0);
    HETRT_ASSERT_OK_AND_ASSIGN(auto bytes, ReadFileBytes(dir + "/out0.bin"));
    HETRT_ASSERT_OK_AND_ASSIGN(auto expected, LoadParamDictFile(f.dir + "/" + f.model + "_outputs.params"));
    const Tensor& e = expected[0].tensor;
    ASSERT_EQ(bytes.size(), e.nbytes());
    Tensor out = Tensor::Borrow(bytes.data(), {kDLCPU, 0}, e.shape(), e.dtype());
    EXPECT_TRUE(testing::TensorsClose(out, e, 1e-5, 1e-6));
    std::ifstream log(dir + "/run.log");
    std::string text((std::istreambuf_iterator<char>(log)), {});
    EXPECT_NE(text.find("arena: "), std::string::npos) << text;
  }
}

TEST(Micro, TooSmallAnArenaIsAnErrorNotACrash) {
  auto fixtures = MlfFixtures();
  if (fixtures.empty()) GTEST_SKIP() << "no MLF fixtures";
  for (const Fixture& f : fixtures) {
    if (f.tar.find("_graph_") == std::string::npos) continue;
    HETRT_ASSERT_OK_AND_ASSIGN(MlfPackage mlf, MlfPackage::Read(f.tar));
    auto model = micro::InProcessModel::Build(mlf, {}, /*arena_bytes=*/256);
    ASSERT_FALSE(model.ok());
    EXPECT_NE(model.status().message().find("arena full"), std::string::npos) << model.status().message();
  }
}

}  // namespace
}  // namespace hetrt
