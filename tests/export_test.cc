#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "hetrt/sdk/byte_stream.h"
#include "hetrt/exec/factory_modules.h"
#include "hetrt/exec/graph_model.h"
#include "hetrt/module/library_module.h"
#include "hetrt/module/module_loader.h"
#include "hetrt/module_export.h"
#include "test_support.h"

namespace hetrt {
namespace {

// The bytes of a loaded library's __tvm_dev_mblob symbol (prefix + payload).
std::vector<uint8_t> OriginalBlob(LibraryModule& lib) {
  const auto* blob = static_cast<const uint8_t*>(lib.FindSymbol("__tvm_dev_mblob"));
  if (blob == nullptr) return {};
  uint64_t n = 0;
  std::memcpy(&n, blob, 8);
  return {blob, blob + 8 + n};
}

LibraryModule* FindLibrary(Module& m) {
  if (auto* lib = dynamic_cast<LibraryModule*>(&m)) return lib;
  for (const auto& i : m.imports())
    if (auto* lib = FindLibrary(*i)) return lib;
  return nullptr;
}

using ExportOnFixture = testing::PerFixtureTest;
HETRT_INSTANTIATE_PER_FIXTURE(Tvm, ExportOnFixture, testing::FixtureParams(testing::TvmFixtureModels(), "fixtures"));

TEST_P(ExportOnFixture, TreeSerializesBackToTvmsBytes) {
  int compared = 0;
  for (const std::string& path : testing::FixtureLibraries(testing::TvmFixture(fixture()))) {
    SCOPED_TRACE(path);
    LoadOptions options;
    options.keep_unloadable = true;  // device modules without a plugin pass through
    HETRT_ASSERT_OK_AND_ASSIGN(auto root, LoadModuleFile(path, options));
    LibraryModule* lib = FindLibrary(*root);
    ASSERT_NE(lib, nullptr);
    const auto original = OriginalBlob(*lib);
    if (original.empty()) continue;  // a plain lib.so has no blob
    HETRT_ASSERT_OK_AND_ASSIGN(auto written, SerializeModuleTree(*root));
    EXPECT_EQ(written.size(), original.size());
    EXPECT_TRUE(written == original);
    ++compared;
  }
  // TVM's export_library always writes the blob (the factory module at least) into deploy.so.
  EXPECT_GT(compared, 0) << "no deploy.so or lib.so with __tvm_dev_mblob";
}

TEST(Export, DevcCDefinesTheBlobExactly) {
  std::vector<uint8_t> blob;
  for (int i = 0; i < 3000; ++i) blob.push_back(static_cast<uint8_t>((i * 37) ^ (i >> 3)));
  blob.push_back('?');
  blob.push_back('?');
  blob.push_back('=');  // "??=" would be a trigraph if written raw
  const std::string dir = ::testing::TempDir() + "/hetrt_devc";
  std::filesystem::create_directories(dir);
  const std::string src = EmitDevcC(blob);
  HETRT_ASSERT_OK(WriteFileBytes(dir + "/devc.c", {reinterpret_cast<const uint8_t*>(src.data()), src.size()}));
  HETRT_ASSERT_OK(LinkSharedLibrary({dir + "/devc.c"}, dir + "/blob.so", {}));
  HETRT_ASSERT_OK_AND_ASSIGN(auto lib, LibraryModule::Open(dir + "/blob.so"));
  const auto* sym = static_cast<const uint8_t*>(lib->FindSymbol("__tvm_dev_mblob"));
  ASSERT_NE(sym, nullptr);
  EXPECT_EQ(std::memcmp(sym, blob.data(), blob.size()), 0);
}

std::string AddGraph() {
  return R"({"nodes": [{"op": "null", "name": "x", "inputs": []}, {"op": "null", "name": "w", "inputs": []},
    {"op": "tvm_op", "name": "add", "inputs": [[0, 0, 0], [1, 0, 0]],
     "attrs": {"func_name": "hetrt_test_add_f32", "num_inputs": "2", "num_outputs": "1", "flatten_data": "0"}}],
    "arg_nodes": [0, 1], "heads": [[2, 0, 0]], "node_row_ptr": [0, 1, 2, 3],
    "attrs": {"dltype": ["list_str", ["float32", "float32", "float32"]],
              "shape": ["list_shape", [[2, 3], [2, 3], [2, 3]]], "storage_id": ["list_int", [0, 1, 2]],
              "device_index": ["list_int", [1, 1, 1]]}})";
}

TEST(Export, BuildExportLoadRunRoundTripOnTheCpu) {
  Tensor w = Tensor::EmptyHost({2, 3}, {kDLFloat, 32, 1}).value();
  for (int i = 0; i < 6; ++i) w.data_as<float>()[i] = 10.f * static_cast<float>(i);
  auto factory =
      std::make_shared<GraphExecutorFactoryModule>(AddGraph(), std::vector<NamedTensor>{{"w", w}}, "default");
  factory->Import(std::make_shared<PendingHostLibrary>());
  const std::string out = ::testing::TempDir() + "/hetrt_export_add.so";
  HETRT_ASSERT_OK(ExportLibrary(*factory, {HETRT_TEST_KERNELS_DIR "/add_f32.c"}, out,
                                {.compiler = "cc", .flags = {"-I" HETRT_DLPACK_INCLUDE_DIR}}));

  HETRT_ASSERT_OK_AND_ASSIGN(GraphModel m, OpenGraphModel({out}, {}));
  Tensor x = Tensor::EmptyHost({2, 3}, {kDLFloat, 32, 1}).value();
  for (int i = 0; i < 6; ++i) x.data_as<float>()[i] = static_cast<float>(i);
  HETRT_ASSERT_OK(m.executor->SetInput("x", x));
  HETRT_ASSERT_OK(m.executor->Run());
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor y, m.executor->GetOutput(0));
  for (int i = 0; i < 6; ++i) EXPECT_EQ(y.data_as<float>()[i], 11.f * static_cast<float>(i));
  // The exported tree is the built one.
  EXPECT_EQ(m.root->type_key(), "GraphExecutorFactory");
  ASSERT_EQ(m.root->imports().size(), 1u);
  EXPECT_EQ(m.root->imports()[0]->type_key(), "library");
  // And re-serializing the loaded tree gives the exported blob again.
  HETRT_ASSERT_OK_AND_ASSIGN(auto again, SerializeModuleTree(*m.root));
  HETRT_ASSERT_OK_AND_ASSIGN(auto first, SerializeModuleTree(*factory));
  EXPECT_TRUE(again == first);
}

TEST(Export, TarHoldsTheHostInputsAndDevcC) {
  auto factory = std::make_shared<GraphExecutorFactoryModule>(AddGraph(), std::vector<NamedTensor>{}, "default");
  factory->Import(std::make_shared<PendingHostLibrary>());
  const std::string out = ::testing::TempDir() + "/hetrt_export_add.tar";
  HETRT_ASSERT_OK(ExportLibrary(*factory, {HETRT_TEST_KERNELS_DIR "/add_f32.c"}, out, {}));
  const std::string list = ::testing::TempDir() + "/hetrt_tar_list.txt";
  ASSERT_EQ(std::system(("tar tf " + out + " > " + list).c_str()), 0);
  std::ifstream in(list);
  std::string text((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(text, "add_f32.c\ndevc.c\n");
}

TEST(Export, CompilerFailuresCarryTheCompilersOutput) {
  auto factory = std::make_shared<GraphExecutorFactoryModule>(AddGraph(), std::vector<NamedTensor>{}, "default");
  factory->Import(std::make_shared<PendingHostLibrary>());
  const std::string bad = ::testing::TempDir() + "/hetrt_bad.c";
  std::ofstream(bad) << "this is not C\n";
  Status s = ExportLibrary(*factory, {bad}, ::testing::TempDir() + "/bad.so", {});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("hetrt_bad.c"), std::string::npos) << s.message();
  s = ExportLibrary(*factory, {}, ::testing::TempDir() + "/bad.so", {.compiler = "/no/such/cc"});
  EXPECT_FALSE(s.ok());
}

TEST(Export, CpuPlusOpenClRoundTripThroughTheCli) {
  HETRT_REQUIRE_OPENCL();
  const std::string dir = ::testing::TempDir() + "/hetrt_export_cl";
  std::filesystem::create_directories(dir);
  const auto blob = testing::OpenClTwiceIntoModule();
  HETRT_ASSERT_OK(WriteFileBytes(dir + "/twice.opencl", blob));
  const std::string graph = testing::TwiceThenAddGraph("hetrt_test_cl_twice", "hetrt_test_add_f32");
  HETRT_ASSERT_OK(WriteFileBytes(dir + "/graph.json", {reinterpret_cast<const uint8_t*>(graph.data()), graph.size()}));
  Tensor w = Tensor::EmptyHost({1, 6}, {kDLFloat, 32, 1}).value();
  for (int i = 0; i < 6; ++i) w.data_as<float>()[i] = 100.f;
  HETRT_ASSERT_OK(WriteFileBytes(dir + "/params.params", WriteParamDict({{"w", w}}).value()));
  const std::string cmd = std::string(HETRT_CLI) + " export --host " HETRT_TEST_KERNELS_DIR "/cl_twice_host.c " +
                          HETRT_TEST_KERNELS_DIR "/add_f32.c --device-module opencl=" + dir + "/twice.opencl --graph " +
                          dir + "/graph.json --params " + dir + "/params.params --cflag=-I" HETRT_DLPACK_INCLUDE_DIR +
                          " -o " + dir + "/deploy.so > /dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;

  GraphExecutor::Options options;
  options.devices = {{kDLCPU, 0}, {kDLOpenCL, 0}};
  HETRT_ASSERT_OK_AND_ASSIGN(GraphModel m, OpenGraphModel({dir + "/deploy.so"}, options));
  // factory -> library -> opencl, as TVM lays out a heterogeneous deploy.so.
  ASSERT_EQ(m.root->imports().size(), 1u);
  ASSERT_EQ(m.root->imports()[0]->imports().size(), 1u);
  EXPECT_EQ(m.root->imports()[0]->imports()[0]->type_key(), "opencl");
  Tensor x = Tensor::EmptyHost({1, 6}, {kDLFloat, 32, 1}).value();
  for (int i = 0; i < 6; ++i) x.data_as<float>()[i] = static_cast<float>(i);
  HETRT_ASSERT_OK(m.executor->SetInput("x", x));
  HETRT_ASSERT_OK(m.executor->Run());
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor y, m.executor->GetOutput(0));
  for (int i = 0; i < 6; ++i) EXPECT_EQ(y.data_as<float>()[i], 2.f * static_cast<float>(i) + 100.f);
  // The exported OpenCL module is the one that went in, byte for byte.
  HETRT_ASSERT_OK_AND_ASSIGN(auto saved, m.root->imports()[0]->imports()[0]->SaveToBinary());
  EXPECT_TRUE(saved == blob);
}

}  // namespace
}  // namespace hetrt
