#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <archive.h>
#include <archive_entry.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "hetrt/exec/graph_model.h"
#include "hetrt/mlf.h"
#include "test_support.h"

namespace hetrt {
namespace {

using MlfOnGraphFixture = testing::PerFixtureTest;
HETRT_INSTANTIATE_PER_FIXTURE(Mlf, MlfOnGraphFixture, testing::GraphMlfFixtureParams());

TEST_P(MlfOnGraphFixture, ExportsToADeployLibraryThatMatchesTvm) {
  const testing::MlfFixture f = testing::MlfFixtureNamed(fixture());
  HETRT_ASSERT_OK_AND_ASSIGN(MlfPackage mlf, MlfPackage::Read(f.tar));
  EXPECT_EQ(mlf.metadata().model_name, f.model);
  EXPECT_EQ(mlf.metadata().version, 7);
  const std::string so = ::testing::TempDir() + "/hetrt_mlf_" + f.model + ".so";
  HETRT_ASSERT_OK(ExportMlfToLibrary(mlf, so, {}));
  HETRT_ASSERT_OK_AND_ASSIGN(GraphModel m, OpenGraphModel({so}, {}));
  HETRT_ASSERT_OK_AND_ASSIGN(auto inputs, LoadParamDictFile(f.inputs));
  for (const auto& p : inputs) HETRT_ASSERT_OK(m.executor->SetInput(p.name, p.tensor));
  HETRT_ASSERT_OK(m.executor->Run());
  HETRT_ASSERT_OK_AND_ASSIGN(auto expected, LoadParamDictFile(f.outputs));
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor out, m.executor->GetOutput(0));
  EXPECT_TRUE(testing::TensorsClose(out, expected[0].tensor, 1e-5, 1e-6));
}

TEST(Mlf, MetadataMatchesTheFixtureManifestAndRuntimeTreesAreSkipped) {
  const std::string dir = testing::MlfFixturesDir();
  if (dir.empty()) HETRT_MISSING("fixtures", "no MLF fixtures under " << testing::FixturesRoot());
  std::ifstream in(dir + "/meta.json");
  const auto manifest = nlohmann::json::parse(in);
  HETRT_ASSERT_OK_AND_ASSIGN(MlfPackage aot, MlfPackage::Read(dir + "/mlp_aot_mlf.tar"));
  EXPECT_TRUE(aot.HasExecutor("aot"));
  for (const auto& [path, data] : aot.files()) {
    EXPECT_NE(path.rfind("runtime/", 0), 0u) << path;
    EXPECT_NE(path.rfind("templates/", 0), 0u) << path;
  }
  const auto* header = aot.Find("codegen/host/include/tvmgen_mlp.h");
  EXPECT_NE(header, nullptr);
  bool main_seen = false;
  for (const auto& m : aot.metadata().memory)
    if (m.name == "main") {
      main_seen = true;
      EXPECT_GT(m.io_bytes, 0u);
    }
  EXPECT_TRUE(main_seen);
  Status s = ExportMlfToLibrary(aot, ::testing::TempDir() + "/aot.so", {});
  EXPECT_EQ(s.code(), StatusCode::kUnimplemented) << s.ToString();
  (void)manifest;
}

// ---- Malformed tarballs, written with libarchive.

struct Member {
  std::string name;
  std::string data;
  mode_t type = AE_IFREG;
  std::string link = {};  // for symlinks / hardlinks
  bool hardlink = false;
};

// This process's own folder for the tarballs it writes (ctest runs tests as
// parallel processes), removed when the process ends.
const std::string& ScratchDir() {
  struct Folder {
    std::string path;
    Folder() {
      std::string pattern = ::testing::TempDir() + "/hetrt_mlf_test.XXXXXX";
      if (::mkdtemp(pattern.data()) != nullptr) path = pattern;
    }
    ~Folder() {
      std::error_code ignored;
      if (!path.empty()) std::filesystem::remove_all(path, ignored);
    }
  };
  static const Folder folder;
  return folder.path;
}

std::string WriteTar(const std::string& file, const std::vector<Member>& members) {
  const std::string path = ScratchDir() + "/" + file;
  archive* a = archive_write_new();
  archive_write_set_format_pax_restricted(a);
  archive_write_open_filename(a, path.c_str());
  for (const Member& m : members) {
    archive_entry* e = archive_entry_new();
    archive_entry_set_pathname(e, m.name.c_str());
    archive_entry_set_filetype(e, m.type);
    archive_entry_set_perm(e, 0644);
    if (m.type == AE_IFLNK) archive_entry_set_symlink(e, m.link.c_str());
    if (m.hardlink) archive_entry_set_hardlink(e, m.link.c_str());
    archive_entry_set_size(e, m.type == AE_IFREG && !m.hardlink ? static_cast<la_int64_t>(m.data.size()) : 0);
    archive_write_header(a, e);
    if (m.type == AE_IFREG && !m.hardlink) archive_write_data(a, m.data.data(), m.data.size());
    archive_entry_free(e);
  }
  archive_write_close(a);
  archive_write_free(a);
  return path;
}

const char* kMetadataV7 = R"({"modules": {"tiny": {"executors": ["graph"], "model_name": "tiny",
  "memory": {"functions": {"main": [{"device": 1, "workspace_size_bytes": 64, "constants_size_bytes": 0,
  "io_size_bytes": 80}], "operator_functions": []}}, "target": ["c -keys=cpu "]}}, "version": 7})";
const char* kMetadataV5 = R"({"model_name": "tiny", "executors": ["graph"], "version": 5,
  "export_datetime": "2021-01-01 00:00:00Z", "target": {"1": "c"},
  "memory": {"main": [{"device": 1, "workspace_size_bytes": 64, "constants_size_bytes": 8, "io_size_bytes": 80}],
             "operator_functions": {"tiny_add": [{"device": 1, "workspace_size_bytes": 16}]}}})";

void ExpectRefused(const std::vector<Member>& members, const std::string& fragment, MlfLimits limits = {}) {
  const std::string path = WriteTar("bad.tar", members);
  auto r = MlfPackage::Read(path, limits);
  ASSERT_FALSE(r.ok()) << "expected a refusal containing '" << fragment << "'";
  EXPECT_NE(r.status().message().find(fragment), std::string::npos) << r.status().message();
}

TEST(Mlf, BothMetadataVersionsAreRead) {
  HETRT_ASSERT_OK_AND_ASSIGN(MlfPackage v7, MlfPackage::Read(WriteTar("v7.tar", {{"./metadata.json", kMetadataV7}})));
  EXPECT_EQ(v7.metadata().model_name, "tiny");
  EXPECT_EQ(v7.metadata().memory.at(0).io_bytes, 80u);
  HETRT_ASSERT_OK_AND_ASSIGN(MlfPackage v5, MlfPackage::Read(WriteTar("v5.tar", {{"metadata.json", kMetadataV5}})));
  EXPECT_EQ(v5.metadata().version, 5);
  ASSERT_EQ(v5.metadata().memory.size(), 2u);
  EXPECT_EQ(v5.metadata().memory[0].constants_bytes, 8u);
  EXPECT_EQ(v5.metadata().memory[1].name, "tiny_add");
  EXPECT_EQ(v5.metadata().targets, std::vector<std::string>{"c"});
}

TEST(Mlf, TraversalAbsolutePathsAndLinksAreRefused) {
  ExpectRefused({{"metadata.json", kMetadataV7}, {"../evil.c", "x"}}, "'..'");
  ExpectRefused({{"metadata.json", kMetadataV7}, {"codegen/../../evil.c", "x"}}, "'..'");
  ExpectRefused({{"metadata.json", kMetadataV7}, {"/etc/evil", "x"}}, "absolute path");
  ExpectRefused({{"metadata.json", kMetadataV7}, {"codegen/host/src/a.c", "", AE_IFLNK, "/etc/passwd"}}, "links");
  ExpectRefused({{"metadata.json", kMetadataV7}, {"b.c", "", AE_IFREG, "metadata.json", true}}, "links");
  ExpectRefused({{"metadata.json", kMetadataV7}, {"fifo", "", AE_IFIFO}}, "not a regular file");
}

TEST(Mlf, OversizedTruncatedAndBadMetadataAreRefused) {
  MlfLimits small;
  small.max_entry_bytes = 100;
  ExpectRefused({{"metadata.json", kMetadataV7}, {"big.bin", std::string(1000, 'x')}}, "limit 100", small);
  ExpectRefused({{"metadata.json", "{not json"}}, "not a JSON object");
  ExpectRefused({{"readme", "x"}}, "no metadata.json");
  ExpectRefused({{"metadata.json", R"({"version": 9})"}}, "version 9");
  ExpectRefused({{"metadata.json", R"({"version": 7, "modules": {}})"}}, "exactly one model");
  ExpectRefused({{"metadata.json", R"({"version": 5, "model_name": "../x", "executors": []})"}}, "bad model name");
  // Truncate a valid tarball in the middle of its data.
  const std::string good = WriteTar("good.tar", {{"metadata.json", kMetadataV7}, {"x.bin", std::string(5000, 'y')}});
  std::ifstream in(good, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  const std::string cut = ScratchDir() + "/cut.tar";
  std::ofstream(cut, std::ios::binary) << bytes.substr(0, 2500);
  auto r = MlfPackage::Read(cut);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("truncated"), std::string::npos) << r.status().message();
  EXPECT_FALSE(MlfPackage::Read("/no/such.tar").ok());
}

TEST(Mlf, MissingGraphOrCodeIsAClearExportError) {
  HETRT_ASSERT_OK_AND_ASSIGN(MlfPackage pkg,
                             MlfPackage::Read(WriteTar("nograph.tar", {{"metadata.json", kMetadataV7}})));
  Status s = ExportMlfToLibrary(pkg, ::testing::TempDir() + "/x.so", {});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("no graph JSON"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace hetrt
