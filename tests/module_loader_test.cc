#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>

#include "hetrt/exec/factory_modules.h"
#include "hetrt/module/library_module.h"
#include "hetrt/module/module_loader.h"
#include "test_support.h"

namespace hetrt {
namespace {

// "GraphExecutorFactory\n  library\n    opencl" style lines, depth-first.
void TreeLines(const Module& m, int depth, std::vector<std::string>& out) {
  out.push_back(std::string(static_cast<size_t>(depth) * 2, ' ') + m.type_key());
  for (const auto& child : m.imports()) TreeLines(*child, depth + 1, out);
}

nlohmann::json ReadMeta(const std::string& dir) {
  std::ifstream in(dir + "/meta.json");
  return nlohmann::json::parse(in);
}

// The tree TVM wrote, from meta.json: its module_tree when present, else the
// graph layout of the formats notes (factory -> library -> device modules).
std::vector<std::string> ExpectedTree(const nlohmann::json& meta, bool deploy) {
  if (meta.contains("module_tree")) return meta["module_tree"].get<std::vector<std::string>>();
  std::vector<std::string> lines;
  std::string indent;
  if (deploy) {
    lines.push_back("GraphExecutorFactory");
    indent = "  ";
  }
  lines.push_back(indent + "library");
  for (const auto& target : meta["targets"]) {
    std::string kind = target.get<std::string>();
    kind = kind.substr(0, kind.find(' '));
    if (kind != "llvm" && kind != "c") lines.push_back(indent + "  " + kind);
  }
  return lines;
}

using ModuleLoaderOnFixture = testing::PerFixtureTest;
HETRT_INSTANTIATE_PER_FIXTURE(Tvm, ModuleLoaderOnFixture,
                              testing::FixtureParams(testing::TvmFixtureModels(), "fixtures"));

TEST_P(ModuleLoaderOnFixture, LibrariesLoadWithTheTreeTvmWrote) {
  const std::string dir = testing::TvmFixture(fixture());
  const nlohmann::json meta = ReadMeta(dir);
  const auto libraries = testing::FixtureLibraries(dir);
  ASSERT_FALSE(libraries.empty()) << "no deploy.so or lib.so in " << dir;
  for (const std::string& path : libraries) {
    SCOPED_TRACE(path);
    const auto expected = ExpectedTree(meta, path == dir + "/deploy.so");
    LoadOptions inspect;
    inspect.keep_unloadable = true;
    HETRT_ASSERT_OK_AND_ASSIGN(auto root, LoadModuleFile(path, inspect));
    std::vector<std::string> lines;
    TreeLines(*root, 0, lines);
    EXPECT_EQ(lines, expected);
    // Without keep_unloadable, a device module no plugin loads is a clear error.
    auto strict = LoadModuleFile(path);
    for (const auto& line : expected) {
      std::string key = line.substr(line.find_first_not_of(' '));
      if (key == "library" || key == "GraphExecutorFactory" || key == "AotExecutorFactory" || key == "metadata_module")
        continue;
      if (PluginRegistry::Global().ForTypeKey(key).ok()) continue;
      ASSERT_FALSE(strict.ok());
      EXPECT_NE(strict.status().message().find("no plugin provides type_key '" + key + "'"), std::string::npos)
          << strict.status().message();
    }
  }
}

TEST(ModuleLoader, FactoryCarriesGraphAndParamsAndImportsTheLibrary) {
  HETRT_REQUIRE_FIXTURE(dir, "mlp");
  HETRT_ASSERT_OK_AND_ASSIGN(auto root, LoadModuleFile(dir + "/deploy.so"));
  auto* factory = dynamic_cast<GraphExecutorFactoryModule*>(root.get());
  ASSERT_NE(factory, nullptr);
  EXPECT_EQ(factory->module_name(), "default");
  std::ifstream graph(dir + "/graph.json");
  std::string graph_text((std::istreambuf_iterator<char>(graph)), {});
  EXPECT_EQ(factory->graph_json(), graph_text);
  HETRT_ASSERT_OK_AND_ASSIGN(auto file_params, LoadParamDictFile(dir + "/params.params"));
  ASSERT_EQ(factory->params()->size(), file_params.size());
  for (const auto& p : file_params) {
    const NamedTensor* q = FindParam(*factory->params(), p.name);
    ASSERT_NE(q, nullptr) << p.name;
    ASSERT_EQ(q->tensor.nbytes(), p.tensor.nbytes());
    EXPECT_EQ(std::memcmp(q->tensor.data(), p.tensor.data(), p.tensor.nbytes()), 0) << p.name;
  }
  ASSERT_EQ(root->imports().size(), 1u);
  EXPECT_EQ(root->imports()[0]->type_key(), "library");
  HETRT_ASSERT_OK_AND_ASSIGN(const PackedFunc* f, root->GetFunction("tvmgen_default_fused_nn_softmax"));
  EXPECT_NE(f, nullptr);  // found through the import
}

TEST(ModuleLoader, TvmMainNamesTheEntryFunction) {
  HETRT_REQUIRE_FIXTURE(dir, "hetero_opencl_seed");
  HETRT_ASSERT_OK_AND_ASSIGN(auto lib, LibraryModule::Open(dir + "/lib.so"));
  HETRT_ASSERT_OK_AND_ASSIGN(const PackedFunc* main, lib->GetOwnFunction("__tvm_main__"));
  HETRT_ASSERT_OK_AND_ASSIGN(const PackedFunc* log, lib->GetOwnFunction("tvmgen_default_fused_log"));
  ASSERT_NE(main, nullptr);
  ASSERT_NE(log, nullptr);
  EXPECT_EQ(main->call, log->call);
}

TEST(ModuleLoader, ModuleContextPointsAtTheLibraryModule) {
  HETRT_REQUIRE_FIXTURE(dir, "hetero_opencl_seed");
  LoadOptions inspect;
  inspect.keep_unloadable = true;  // the OpenCL blob may have no plugin here
  HETRT_ASSERT_OK_AND_ASSIGN(auto root, LoadModuleFile(dir + "/deploy.so", inspect));
  ASSERT_EQ(root->imports().size(), 1u);
  auto* lib = dynamic_cast<LibraryModule*>(root->imports()[0].get());
  ASSERT_NE(lib, nullptr);
  void** ctx = static_cast<void**>(lib->FindSymbol("__tvm_module_ctx"));
  ASSERT_NE(ctx, nullptr);
  EXPECT_EQ(*ctx, static_cast<void*>(static_cast<Module*>(lib)));
  // Compiled code resolves kernels through that context: imports, then globals.
  ASSERT_EQ(lib->imports().size(), 1u);
  EXPECT_EQ(lib->imports()[0]->type_key(), "opencl");
}

TEST(ModuleLoader, MissingFileNamesThePath) {
  auto r = LoadModuleFile("/nonexistent/dir/model.so");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("/nonexistent/dir/model.so"), std::string::npos);
}

TEST(ModuleLoader, NonLibraryFileIsRefused) {
  HETRT_REQUIRE_FIXTURE(dir, "add3");
  auto r = LoadModuleFile(dir + "/graph.json");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("graph.json"), std::string::npos);
}

// ---- Malformed blobs, built in memory.

class StubModule final : public Module {
 public:
  StubModule() : Module("library") {}
  Result<const PackedFunc*> GetOwnFunction(std::string_view) override {
    return static_cast<const PackedFunc*>(nullptr);
  }
};

struct BlobBuilder {
  ByteWriter w;
  uint64_t entries = 0;
  std::vector<uint8_t> body;
  BlobBuilder& Lib() { return Key("_lib"); }
  BlobBuilder& Metadata() { return Key("metadata_module"); }
  BlobBuilder& Key(const std::string& key) {
    ++entries;
    w.WriteString(key);
    return *this;
  }
  BlobBuilder& Tree(std::vector<uint64_t> row_ptr, std::vector<uint64_t> children) {
    Key("_import_tree");
    w.WriteU64(row_ptr.size());
    for (auto v : row_ptr) w.WriteU64(v);
    w.WriteU64(children.size());
    for (auto v : children) w.WriteU64(v);
    return *this;
  }
  std::vector<uint8_t> Payload() {
    ByteWriter out;
    out.WriteU64(entries);
    out.WriteBytes(w.bytes());
    return out.Take();
  }
};

Result<std::shared_ptr<Module>> LoadPayload(const std::vector<uint8_t>& payload) {
  return LoadModuleTreeFromBlob(payload, std::make_shared<StubModule>(), "test blob");
}

TEST(BlobReader, BuildsTheImportTreeFromCsr) {
  // metadata_module -> _lib, like an AOT deploy.so without the factory.
  auto r = LoadPayload(BlobBuilder().Metadata().Lib().Tree({0, 1, 1}, {1}).Payload());
  HETRT_ASSERT_OK_AND_ASSIGN(auto root, std::move(r));
  EXPECT_EQ(root->type_key(), "metadata_module");
  ASSERT_EQ(root->imports().size(), 1u);
  EXPECT_EQ(root->imports()[0]->type_key(), "library");
}

TEST(BlobReader, LegacyFormMakesTheLibraryTheRoot) {
  auto r = LoadPayload(BlobBuilder().Lib().Metadata().Payload());
  HETRT_ASSERT_OK_AND_ASSIGN(auto root, std::move(r));
  EXPECT_EQ(root->type_key(), "library");
  ASSERT_EQ(root->imports().size(), 1u);
  EXPECT_EQ(root->imports()[0]->type_key(), "metadata_module");
}

void ExpectBlobError(const std::vector<uint8_t>& payload, const std::string& fragment) {
  auto r = LoadPayload(payload);
  ASSERT_FALSE(r.ok()) << "expected an error containing '" << fragment << "'";
  EXPECT_NE(r.status().message().find(fragment), std::string::npos) << r.status().message();
}

TEST(BlobReader, RejectsCsrOutOfRange) {
  ExpectBlobError(BlobBuilder().Metadata().Lib().Tree({0, 1, 1}, {5}).Payload(), "out of range");
  ExpectBlobError(BlobBuilder().Metadata().Lib().Tree({0, 1}, {1}).Payload(), "row_ptr has 2");
  ExpectBlobError(BlobBuilder().Metadata().Lib().Tree({0, 2, 1}, {1}).Payload(), "decreases");
  ExpectBlobError(BlobBuilder().Metadata().Lib().Tree({1, 1, 1}, {1}).Payload(), "row_ptr[0]");
  ExpectBlobError(BlobBuilder().Metadata().Lib().Tree({0, 1, 3}, {1}).Payload(), "child indices");
}

TEST(BlobReader, RejectsDuplicateImportsAndTooManyModules) {
  ExpectBlobError(BlobBuilder().Metadata().Lib().Tree({0, 2, 2}, {1, 1}).Payload(), "imports module 1 twice");
  ByteWriter w;
  w.WriteU64(5000);
  for (int i = 0; i < 5000; ++i) w.WriteString("metadata_module");
  ExpectBlobError(w.Take(), "at most 4096");
}

TEST(BlobReader, SharedImportsAreSearchedOnce) {
  // A ladder of metadata modules where each imports the next two: 2^60 paths,
  // 62 modules. A missing name must come back at once.
  BlobBuilder b;
  const uint64_t n = 62;
  for (uint64_t i = 0; i < n; ++i) b.Metadata();
  b.Lib();
  std::vector<uint64_t> row_ptr{0}, children;
  for (uint64_t i = 0; i <= n; ++i) {
    for (uint64_t c = i + 1; c <= std::min(i + 2, n); ++c) children.push_back(c);
    row_ptr.push_back(children.size());
  }
  b.Tree(row_ptr, children);
  HETRT_ASSERT_OK_AND_ASSIGN(auto root, LoadPayload(b.Payload()));
  HETRT_ASSERT_OK_AND_ASSIGN(const PackedFunc* f, root->GetFunction("missing"));
  EXPECT_EQ(f, nullptr);
}

TEST(BlobReader, RejectsCyclicImports) {
  ExpectBlobError(BlobBuilder().Metadata().Lib().Tree({0, 1, 2}, {1, 0}).Payload(), "cycle");
  ExpectBlobError(BlobBuilder().Metadata().Lib().Tree({0, 1, 1}, {0}).Payload(), "cycle");
}

TEST(BlobReader, RejectsTwoLibsUnknownKeysAndTrailingBytes) {
  ExpectBlobError(BlobBuilder().Lib().Lib().Payload(), "more than one _lib");
  ExpectBlobError(BlobBuilder().Lib().Key("no_such_backend").Payload(),
                  "no plugin provides type_key 'no_such_backend'");
  auto payload = BlobBuilder().Lib().Payload();
  payload.push_back(0);
  ExpectBlobError(payload, "after the last entry");
}

TEST(BlobReader, AbsurdCountsFailWithoutAllocating) {
  ByteWriter w;
  w.WriteU64(1ULL << 62);  // entry count
  ExpectBlobError(w.Take(), "cannot fit");
  BlobBuilder b;
  b.Lib().Key("_import_tree");
  b.w.WriteU64(1ULL << 61);  // row_ptr count
  ExpectBlobError(b.Payload(), "cannot fit");
}

TEST(BlobReader, EveryTruncationOfARealBlobIsACleanError) {
  HETRT_REQUIRE_FIXTURE(dir, "add3");
  // Rebuild the add3 blob from its parts: factory bytes, _lib, tree.
  HETRT_ASSERT_OK_AND_ASSIGN(auto root, LoadModuleFile(dir + "/deploy.so"));
  auto* factory = dynamic_cast<GraphExecutorFactoryModule*>(root.get());
  ASSERT_NE(factory, nullptr);
  BlobBuilder b;
  b.Key("GraphExecutorFactory");
  b.w.WriteBytes(factory->SaveToBinary().value());
  b.Lib().Tree({0, 1, 1}, {1});
  const auto payload = b.Payload();
  ASSERT_TRUE(LoadPayload(payload).ok());
  for (size_t n = 0; n < payload.size(); n += (n < 64 ? 1 : 17)) {
    auto r = LoadPayload(std::vector<uint8_t>(payload.begin(), payload.begin() + n));
    EXPECT_FALSE(r.ok()) << "truncated to " << n;
  }
}

TEST(BlobReader, LengthPrefixBeyondTheSymbolIsRefused) {
  std::vector<uint8_t> symbol(8 + 4, 0);
  const uint64_t nbytes = 100;
  std::memcpy(symbol.data(), &nbytes, 8);
  auto r = BlobPayload(symbol, "sym");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("only 4 follow"), std::string::npos) << r.status().message();
  EXPECT_FALSE(BlobPayload(std::vector<uint8_t>(5, 0), "sym").ok());
  const uint64_t ok = 4;
  std::memcpy(symbol.data(), &ok, 8);
  HETRT_ASSERT_OK_AND_ASSIGN(auto payload, BlobPayload(symbol, "sym"));
  EXPECT_EQ(payload.size(), 4u);
}

}  // namespace
}  // namespace hetrt
