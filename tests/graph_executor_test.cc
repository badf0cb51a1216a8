#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <unistd.h>
#include <fstream>

#include <atomic>
#include <thread>

#include "hetrt/exec/factory_modules.h"
#include "hetrt/exec/graph_model.h"
#include "hetrt/module/module_loader.h"
#include "test_support.h"

namespace hetrt {
namespace {

nlohmann::json ReadJson(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

using testing::ReadText;

// A fixture that runs on the CPU alone (its graph places nothing elsewhere).
bool IsCpuGraphModel(const std::string& dir) {
  if (!std::filesystem::exists(dir + "/graph.json")) return false;
  const auto meta = ReadJson(dir + "/meta.json");
  for (const auto& t : meta["targets"])
    if (t.get<std::string>().rfind("llvm", 0) != 0) return false;
  return true;
}

struct Tolerance {
  double rtol, atol;
};
Tolerance ToleranceOf(const std::string& dir) {
  const auto t = ReadJson(dir + "/meta.json")["tolerances"]["self_check_same_device"];
  return {t["rtol"].get<double>(), t["atol"].get<double>()};
}

void ExpectOutputsMatch(GraphExecutor& ex, const std::string& dir) {
  HETRT_ASSERT_OK_AND_ASSIGN(auto expected, LoadParamDictFile(dir + "/outputs.params"));
  ASSERT_EQ(static_cast<size_t>(ex.NumOutputs()), expected.size());
  const Tolerance tol = ToleranceOf(dir);
  for (int i = 0; i < ex.NumOutputs(); ++i) {
    HETRT_ASSERT_OK_AND_ASSIGN(Tensor out, ex.GetOutput(i));
    const NamedTensor* e = FindParam(expected, "output_" + std::to_string(i));
    ASSERT_NE(e, nullptr);
    EXPECT_TRUE(testing::TensorsClose(out, e->tensor, tol.rtol, tol.atol)) << dir << " output " << i;
  }
}

Status SetInputs(GraphExecutor& ex, const std::string& dir) {
  HETRT_ASSIGN_OR_RETURN(auto inputs, LoadParamDictFile(dir + "/inputs.params"));
  for (const auto& p : inputs) HETRT_RETURN_IF_ERROR(ex.SetInput(p.name, p.tensor));
  return OkStatus();
}

// Each TVM fixture that runs on the CPU alone.
using GraphExecutorOnCpuFixture = testing::PerFixtureTest;
HETRT_INSTANTIATE_PER_FIXTURE(Tvm, GraphExecutorOnCpuFixture,
                              testing::FixtureParams(testing::TvmFixtureModels(), "CPU graph fixtures",
                                                     [](const std::string& model) {
                                                       return IsCpuGraphModel(testing::TvmFixture(model));
                                                     }));

TEST_P(GraphExecutorOnCpuFixture, MatchesTvmInBothForms) {
  const std::string dir = testing::TvmFixture(fixture());
  for (bool triple : {false, true}) {
    SCOPED_TRACE(fixture() + (triple ? " (graph.json + lib.so + params)" : " (deploy.so)"));
    GraphModelFiles files;
    files.library = dir + (triple ? "/lib.so" : "/deploy.so");
    if (triple) {
      files.graph_json = dir + "/graph.json";
      files.params = dir + "/params.params";
    }
    HETRT_ASSERT_OK_AND_ASSIGN(GraphModel m, OpenGraphModel(files, {}));
    HETRT_ASSERT_OK(SetInputs(*m.executor, dir));
    HETRT_ASSERT_OK(m.executor->Run());
    ExpectOutputsMatch(*m.executor, dir);
  }
}

TEST_P(GraphExecutorOnCpuFixture, CliRunSavesOutputsThatMatchTvm) {
  const std::string dir = testing::TvmFixture(fixture());
  const std::string out = ::testing::TempDir() + "/hetrt_cli_" + fixture() + ".params";
  const std::string cmd = std::string(HETRT_CLI) + " run " + dir + "/deploy.so --inputs " + dir +
                          "/inputs.params --save-outputs " + out + " > /dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  HETRT_ASSERT_OK_AND_ASSIGN(auto saved, LoadParamDictFile(out));
  HETRT_ASSERT_OK_AND_ASSIGN(auto expected, LoadParamDictFile(dir + "/outputs.params"));
  ASSERT_EQ(saved.size(), expected.size());
  const Tolerance tol = ToleranceOf(dir);
  for (const auto& e : expected) {
    const NamedTensor* s = FindParam(saved, e.name);
    ASSERT_NE(s, nullptr) << e.name;
    EXPECT_TRUE(testing::TensorsClose(s->tensor, e.tensor, tol.rtol, tol.atol)) << e.name;
  }
}

TEST(GraphExecutor, CliErrorsNameTheFileAndExitNonZero) {
  HETRT_REQUIRE_FIXTURE(dir, "add3");
  const std::string err = ::testing::TempDir() + "/hetrt_cli_err.txt";
  auto run = [&](const std::string& args) {
    const std::string cmd = std::string(HETRT_CLI) + " run " + args + " > /dev/null 2> " + err;
    return std::system(cmd.c_str());
  };
  EXPECT_NE(run("/no/such/model.so"), 0);
  EXPECT_NE(ReadText(err).find("/no/such/model.so"), std::string::npos) << ReadText(err);
  EXPECT_NE(run(dir + "/deploy.so --inputs " + dir + "/graph.json"), 0);
  EXPECT_NE(ReadText(err).find("graph.json"), std::string::npos) << ReadText(err);
  EXPECT_NE(run(dir + "/lib.so"), 0);
  EXPECT_NE(ReadText(err).find("pass --graph"), std::string::npos) << ReadText(err);
  EXPECT_NE(run(dir + "/deploy.so --input nope=x.npy"), 0);
  EXPECT_NE(ReadText(err).find("no input named 'nope'"), std::string::npos) << ReadText(err);
}

TEST(GraphExecutor, TwoExecutorsShareOneModuleAndItsParamsAcrossThreads) {
  HETRT_REQUIRE_FIXTURE(dir, "mlp");
  HETRT_ASSERT_OK_AND_ASSIGN(auto root, LoadModuleFile(dir + "/deploy.so"));
  auto* factory = dynamic_cast<GraphExecutorFactoryModule*>(root.get());
  ASSERT_NE(factory, nullptr);
  HETRT_ASSERT_OK_AND_ASSIGN(auto a, factory->CreateExecutor({}));
  HETRT_ASSERT_OK_AND_ASSIGN(auto b, factory->CreateExecutor({}));
  // Weights are used in place: both executors read the factory's one copy.
  const int p0 = a->InputIndex("p0");
  ASSERT_GE(p0, 0);
  EXPECT_EQ(a->InputTensor(p0).data(), b->InputTensor(p0).data());
  EXPECT_EQ(a->InputTensor(p0).data(), FindParam(*factory->params(), "p0")->tensor.data());
  HETRT_ASSERT_OK(SetInputs(*a, dir));
  HETRT_ASSERT_OK(SetInputs(*b, dir));
  Status sa, sb;
  std::thread ta([&] {
    for (int i = 0; i < 200 && sa.ok(); ++i) sa = a->Run();
  });
  std::thread tb([&] {
    for (int i = 0; i < 200 && sb.ok(); ++i) sb = b->Run();
  });
  ta.join();
  tb.join();
  HETRT_ASSERT_OK(sa);
  HETRT_ASSERT_OK(sb);
  ExpectOutputsMatch(*a, dir);
  ExpectOutputsMatch(*b, dir);
}

TEST(GraphExecutor, SettingAParamNeverWritesIntoTheSharedCopy) {
  HETRT_REQUIRE_FIXTURE(dir, "mlp");
  HETRT_ASSERT_OK_AND_ASSIGN(auto root, LoadModuleFile(dir + "/deploy.so"));
  auto* factory = dynamic_cast<GraphExecutorFactoryModule*>(root.get());
  HETRT_ASSERT_OK_AND_ASSIGN(auto a, factory->CreateExecutor({}));
  HETRT_ASSERT_OK_AND_ASSIGN(auto b, factory->CreateExecutor({}));
  const int p3 = a->InputIndex("p3");
  const Tensor& shared = FindParam(*factory->params(), "p3")->tensor;
  std::vector<float> before(shared.data_as<float>(), shared.data_as<float>() + shared.num_elements());
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor zeros, Tensor::EmptyHost(shared.shape(), shared.dtype()));
  std::memset(zeros.data(), 0, zeros.nbytes());
  HETRT_ASSERT_OK(a->SetInput(p3, zeros));
  EXPECT_NE(a->InputTensor(p3).data(), shared.data());
  EXPECT_EQ(std::memcmp(shared.data(), before.data(), shared.nbytes()), 0);
  HETRT_ASSERT_OK(SetInputs(*b, dir));
  HETRT_ASSERT_OK(b->Run());
  ExpectOutputsMatch(*b, dir);  // b still sees the original weights
}

TEST(GraphExecutor, RemoveParamsThenLoadParamsFromFile) {
  HETRT_REQUIRE_FIXTURE(dir, "mlp");
  HETRT_ASSERT_OK_AND_ASSIGN(auto root, LoadModuleFile(dir + "/deploy.so"));
  auto* factory = dynamic_cast<GraphExecutorFactoryModule*>(root.get());
  ASSERT_NE(factory, nullptr);
  auto bare = factory->WithoutParams();
  EXPECT_TRUE(bare->params()->empty());
  EXPECT_EQ(bare->graph_json(), factory->graph_json());
  HETRT_ASSERT_OK_AND_ASSIGN(auto ex, bare->CreateExecutor({}));
  EXPECT_EQ(ex->UnboundInputs().size(), static_cast<size_t>(ex->NumInputs()));
  HETRT_ASSERT_OK_AND_ASSIGN(auto params, ReadFileBytes(dir + "/params.params"));
  HETRT_ASSERT_OK(ex->LoadParams(params));
  HETRT_ASSERT_OK(SetInputs(*ex, dir));
  HETRT_ASSERT_OK(ex->Run());
  ExpectOutputsMatch(*ex, dir);
  params.resize(params.size() - 3);
  Status s = ex->LoadParams(params);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss) << s.ToString();
}

TEST(GraphExecutor, ZeroCopyInputAndOutputGiveTheSameResults) {
  HETRT_REQUIRE_FIXTURE(dir, "resnet18");
  HETRT_ASSERT_OK_AND_ASSIGN(GraphModel m, OpenGraphModel({dir + "/deploy.so"}, {}));
  HETRT_ASSERT_OK_AND_ASSIGN(auto inputs, LoadParamDictFile(dir + "/inputs.params"));
  const Tensor& data = FindParam(inputs, "data")->tensor;
  HETRT_ASSERT_OK(m.executor->SetInputZeroCopy(m.executor->InputIndex("data"), data));
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor out, Tensor::EmptyHost({1, 1000}, {kDLFloat, 32, 1}));
  HETRT_ASSERT_OK(m.executor->SetOutputZeroCopy(0, out));
  HETRT_ASSERT_OK(m.executor->Run());
  HETRT_ASSERT_OK_AND_ASSIGN(auto expected, LoadParamDictFile(dir + "/outputs.params"));
  EXPECT_TRUE(testing::TensorsClose(out, expected[0].tensor, 1e-5, 1e-6));
  // Misuse is refused with a reason.
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor wrong, Tensor::EmptyHost({1, 999}, {kDLFloat, 32, 1}));
  Status s = m.executor->SetOutputZeroCopy(0, wrong);
  EXPECT_NE(s.message().find("[1, 1000]"), std::string::npos) << s.message();
  Tensor misaligned = Tensor::Borrow(static_cast<uint8_t*>(out.data()) + 4, {kDLCPU, 0}, {1, 999}, {kDLFloat, 32, 1});
  EXPECT_FALSE(m.executor->SetInputZeroCopy(0, misaligned).ok());
}

// add3's kernel in a hand-written graph whose second output is the input 'a'.
std::string PassThroughGraph() {
  return R"({
    "nodes": [
      {"op": "null", "name": "a", "inputs": []},
      {"op": "null", "name": "b", "inputs": []},
      {"op": "tvm_op", "name": "add", "inputs": [[0, 0, 0], [1, 0, 0]],
       "attrs": {"func_name": "tvmgen_default_fused_add", "num_inputs": "2", "num_outputs": "1", "flatten_data": "0"}}
    ],
    "arg_nodes": [0, 1], "heads": [[2, 0, 0], [0, 0, 0]], "node_row_ptr": [0, 1, 2, 3],
    "attrs": {"dltype": ["list_str", ["float32", "float32", "float32"]],
              "shape": ["list_shape", [[1, 10], [1, 10], [1, 10]]],
              "storage_id": ["list_int", [0, 1, 2]]}})";
}

TEST(GraphExecutor, AnInputThatIsAlsoAnOutputStaysCorrect) {
  HETRT_REQUIRE_FIXTURE(dir, "add3");
  HETRT_ASSERT_OK_AND_ASSIGN(auto lib, LoadModuleFile(dir + "/lib.so"));
  HETRT_ASSERT_OK_AND_ASSIGN(auto ex, GraphExecutor::Create(PassThroughGraph(), lib, {}));
  EXPECT_TRUE(ex->OutputBindsInPlace(0));
  EXPECT_TRUE(ex->OutputBindsInPlace(1));  // copied into the bound memory at the end of each run
  // Two outputs that are one tensor cannot each have memory of their own.
  auto twice = nlohmann::json::parse(PassThroughGraph());
  twice["heads"] = {{2, 0, 0}, {2, 0, 0}};
  HETRT_ASSERT_OK_AND_ASSIGN(auto same_twice, GraphExecutor::Create(twice.dump(), lib, {}));
  EXPECT_FALSE(same_twice->OutputBindsInPlace(0));
  EXPECT_FALSE(same_twice->OutputBindsInPlace(1));
  EXPECT_FALSE(same_twice->OutputBindsInPlace(2));
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor spare, Tensor::EmptyHost({1, 10}, {kDLFloat, 32, 1}));
  Status refused = same_twice->SetOutputZeroCopy(1, spare);
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.message().find("same tensor"), std::string::npos) << refused.message();
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor a, Tensor::EmptyHost({1, 10}, {kDLFloat, 32, 1}));
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor b, Tensor::EmptyHost({1, 10}, {kDLFloat, 32, 1}));
  for (int i = 0; i < 10; ++i) {
    a.data_as<float>()[i] = static_cast<float>(i);
    b.data_as<float>()[i] = 100.f;
  }
  HETRT_ASSERT_OK(ex->SetInput("a", a));
  HETRT_ASSERT_OK(ex->SetInput("b", b));
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor out0, Tensor::EmptyHost({1, 10}, {kDLFloat, 32, 1}));
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor out1, Tensor::EmptyHost({1, 10}, {kDLFloat, 32, 1}));
  HETRT_ASSERT_OK(ex->SetOutputZeroCopy(0, out0));
  HETRT_ASSERT_OK(ex->SetOutputZeroCopy(1, out1));
  HETRT_ASSERT_OK(ex->Run());
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor copy1, ex->GetOutput(1));
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(out0.data_as<float>()[i], i + 100.f);
    EXPECT_EQ(out1.data_as<float>()[i], static_cast<float>(i));
    EXPECT_EQ(copy1.data_as<float>()[i], static_cast<float>(i));
  }
  EXPECT_EQ(ex->OutputName(1), "a:0");
}

TEST(GraphExecutor, FuncNamesResolveOnlyToTheLibrarysOwnFunctions) {
  HETRT_REQUIRE_FIXTURE(dir, "add3");
  HETRT_ASSERT_OK_AND_ASSIGN(auto lib, LoadModuleFile(dir + "/lib.so"));
  const std::string graph = ReadText(dir + "/graph.json");
  // A libc function reached through the dependency chain, and a data symbol.
  for (const char* name : {"abort", "free", "__TVMAPISetLastError", "__tvm_main__x"}) {
    std::string g = graph;
    for (size_t at; (at = g.find("\"tvmgen_default_fused_add\"")) != std::string::npos;)
      g.replace(at, 26, std::string("\"") + name + "\"");
    auto ex = GraphExecutor::Create(g, lib, {});
    ASSERT_FALSE(ex.ok()) << name;
    EXPECT_NE(ex.status().message().find("not found"), std::string::npos) << ex.status().message();
  }
}

TEST(GraphExecutor, LoadingALibraryTwiceSharesOneTree) {
  HETRT_REQUIRE_FIXTURE(dir, "mlp");
  HETRT_ASSERT_OK_AND_ASSIGN(auto first, LoadModuleFile(dir + "/deploy.so"));
  HETRT_ASSERT_OK_AND_ASSIGN(auto second, LoadModuleFile(dir + "/deploy.so"));
  EXPECT_EQ(first.get(), second.get());
  auto* factory = dynamic_cast<GraphExecutorFactoryModule*>(second.get());
  HETRT_ASSERT_OK_AND_ASSIGN(auto ex, factory->CreateExecutor({}));
  first.reset();
  second.reset();  // the executor keeps what it needs alive
  HETRT_ASSERT_OK(SetInputs(*ex, dir));
  HETRT_ASSERT_OK(ex->Run());
  ExpectOutputsMatch(*ex, dir);
}

TEST(GraphExecutor, ExecutorsCreatedFromManyThreadsAtOnceAllWork) {
  HETRT_REQUIRE_FIXTURE(dir, "mlp");
  HETRT_ASSERT_OK_AND_ASSIGN(auto root, LoadModuleFile(dir + "/deploy.so"));
  auto* factory = dynamic_cast<GraphExecutorFactoryModule*>(root.get());
  std::vector<std::unique_ptr<GraphExecutor>> made(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i) {
        auto ex = factory->CreateExecutor({});
        if (ex.ok()) made[static_cast<size_t>(t)] = std::move(ex).value();
      }
    });
  for (auto& th : threads) th.join();
  for (auto& ex : made) {
    ASSERT_NE(ex, nullptr);
    HETRT_ASSERT_OK(SetInputs(*ex, dir));
    HETRT_ASSERT_OK(ex->Run());
    ExpectOutputsMatch(*ex, dir);
  }
}

TEST(GraphExecutor, ResizingTheThreadPoolWhileModelsRunIsSafe) {
  HETRT_REQUIRE_FIXTURE(dir, "mlp");
  auto cpu = PluginRegistry::Global().ForDeviceType(kDLCPU);
  ASSERT_TRUE(cpu.ok());
  HETRT_ASSERT_OK_AND_ASSIGN(GraphModel m, OpenGraphModel({dir + "/deploy.so"}, {}));
  HETRT_ASSERT_OK(SetInputs(*m.executor, dir));
  std::atomic<bool> done{false};
  std::thread resizer([&] {
    for (int i = 0; !done; ++i) (void)(*cpu)->SetOption("num_threads", i % 2 ? "1" : "2");
  });
  Status s;
  for (int i = 0; i < 300 && s.ok(); ++i) s = m.executor->Run();
  done = true;
  resizer.join();
  HETRT_ASSERT_OK(s);
  ExpectOutputsMatch(*m.executor, dir);
  HETRT_ASSERT_OK((*cpu)->SetOption("num_threads", std::to_string(std::thread::hardware_concurrency())));
}

TEST(GraphExecutor, ZeroCopyInputAlsoRebindsItsNopAliases) {
  HETRT_REQUIRE_FIXTURE(dir, "add3");
  HETRT_ASSERT_OK_AND_ASSIGN(auto lib, LoadModuleFile(dir + "/lib.so"));
  // x -> __nop (a view sharing x's storage) -> add with w.
  const std::string graph = R"({"nodes": [
      {"op": "null", "name": "x", "inputs": []},
      {"op": "tvm_op", "name": "view", "inputs": [[0, 0, 0]],
       "attrs": {"func_name": "__nop", "num_inputs": "1", "num_outputs": "1", "flatten_data": "0"}},
      {"op": "null", "name": "w", "inputs": []},
      {"op": "tvm_op", "name": "add", "inputs": [[1, 0, 0], [2, 0, 0]],
       "attrs": {"func_name": "tvmgen_default_fused_add", "num_inputs": "2", "num_outputs": "1", "flatten_data": "0"}}],
    "arg_nodes": [0, 2], "heads": [[3, 0, 0]], "node_row_ptr": [0, 1, 2, 3, 4],
    "attrs": {"dltype": ["list_str", ["float32", "float32", "float32", "float32"]],
              "shape": ["list_shape", [[1, 10], [1, 10], [1, 10], [1, 10]]],
              "storage_id": ["list_int", [0, 0, 1, 2]]}})";
  HETRT_ASSERT_OK_AND_ASSIGN(auto ex, GraphExecutor::Create(graph, lib, {}));
  Tensor x = Tensor::EmptyHost({1, 10}, {kDLFloat, 32, 1}).value();
  Tensor w = Tensor::EmptyHost({1, 10}, {kDLFloat, 32, 1}).value();
  for (int i = 0; i < 10; ++i) {
    x.data_as<float>()[i] = static_cast<float>(i);
    w.data_as<float>()[i] = 1000.f;
  }
  EXPECT_TRUE(ex->InputBindsInPlace(0));  // x and a no-op view of it: nothing writes there
  EXPECT_TRUE(ex->InputBindsInPlace(1));
  const void* own = ex->InputTensor(0).data();
  HETRT_ASSERT_OK(ex->SetInput("w", w));
  HETRT_ASSERT_OK(ex->SetInputZeroCopy(0, x));
  EXPECT_EQ(ex->InputTensor(0).data(), x.data());
  HETRT_ASSERT_OK(ex->Run());
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor y, ex->GetOutput(0));
  for (int i = 0; i < 10; ++i) EXPECT_EQ(y.data_as<float>()[i], 1000.f + static_cast<float>(i));
  // set_input after a zero-copy bind writes a private buffer, never the caller's memory.
  Tensor z = Tensor::EmptyHost({1, 10}, {kDLFloat, 32, 1}).value();
  for (int i = 0; i < 10; ++i) z.data_as<float>()[i] = -1.f;
  HETRT_ASSERT_OK(ex->SetInput("x", z));
  HETRT_ASSERT_OK(ex->Run());
  HETRT_ASSERT_OK_AND_ASSIGN(y, ex->GetOutput(0));
  for (int i = 0; i < 10; ++i) EXPECT_EQ(y.data_as<float>()[i], 999.f);
  EXPECT_EQ(x.data_as<float>()[3], 3.f);
  EXPECT_EQ(ex->InputTensor(0).data(), own);  // back in the executor's own buffer, not a new one
}

// The planner may put a kernel's output into an input's storage once the input
// is read: caller memory bound there would be written, or overrun when the
// output is larger.
TEST(GraphExecutor, ZeroCopyIsRefusedWhereAKernelWritesTheInputsStorage) {
  HETRT_REQUIRE_FIXTURE(dir, "add3");
  HETRT_ASSERT_OK_AND_ASSIGN(auto lib, LoadModuleFile(dir + "/lib.so"));
  auto graph = [](const char* out_shape) {
    return std::string(R"({"nodes": [
      {"op": "null", "name": "x", "inputs": []},
      {"op": "null", "name": "w", "inputs": []},
      {"op": "tvm_op", "name": "add", "inputs": [[0, 0, 0], [1, 0, 0]],
       "attrs": {"func_name": "tvmgen_default_fused_add", "num_inputs": "2", "num_outputs": "1", "flatten_data": "0"}}],
    "arg_nodes": [0, 1], "heads": [[2, 0, 0]], "node_row_ptr": [0, 1, 2, 3],
    "attrs": {"dltype": ["list_str", ["float32", "float32", "float32"]],
              "shape": ["list_shape", [[1, 10], [1, 10], )") +
           out_shape + R"(]],
              "storage_id": ["list_int", [0, 1, 0]]}})";
  };
  Tensor x = Tensor::EmptyHost({1, 10}, {kDLFloat, 32, 1}).value();
  // Same size: allowed, but the output lands in the caller's memory.
  HETRT_ASSERT_OK_AND_ASSIGN(auto same, GraphExecutor::Create(graph("[1, 10]"), lib, {}));
  EXPECT_FALSE(same->InputBindsInPlace(0));
  EXPECT_TRUE(same->InputBindsInPlace(1));
  HETRT_ASSERT_OK(same->SetInputZeroCopy(0, x));
  // Larger: refused, naming the sizes.
  HETRT_ASSERT_OK_AND_ASSIGN(auto larger, GraphExecutor::Create(graph("[1, 20]"), lib, {}));
  EXPECT_FALSE(larger->InputBindsInPlace(0));
  Status s = larger->SetInputZeroCopy(0, x);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("80 bytes"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("has 40"), std::string::npos) << s.message();
}

TEST(GraphExecutor, AGraphDeviceMissingFromTheListIsAClearError) {
  HETRT_REQUIRE_FIXTURE(dir, "add3");
  HETRT_ASSERT_OK_AND_ASSIGN(auto lib, LoadModuleFile(dir + "/lib.so"));
  auto g = nlohmann::json::parse(ReadText(dir + "/graph.json"));
  g["attrs"]["device_index"] = {"list_int", {4, 4, 4, 4, 4}};
  auto ex = GraphExecutor::Create(g.dump(), lib, {});
  ASSERT_FALSE(ex.ok());
  EXPECT_NE(ex.status().message().find("on opencl but the executor's devices are cpu:0"), std::string::npos)
      << ex.status().message();
}

TEST(GraphExecutor, SetInputRejectsWrongShapeDtypeAndName) {
  HETRT_REQUIRE_FIXTURE(dir, "add3");
  HETRT_ASSERT_OK_AND_ASSIGN(GraphModel m, OpenGraphModel({dir + "/deploy.so"}, {}));
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor wrong, Tensor::EmptyHost({1, 11}, {kDLFloat, 32, 1}));
  Status s = m.executor->SetInput("a", wrong);
  EXPECT_NE(s.message().find("set_input 'a': got [1, 11] float32, the graph expects [1, 10] float32"),
            std::string::npos)
      << s.message();
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor ints, Tensor::EmptyHost({1, 10}, {kDLInt, 32, 1}));
  EXPECT_FALSE(m.executor->SetInput("a", ints).ok());
  EXPECT_EQ(m.executor->SetInput("zzz", ints).code(), StatusCode::kNotFound);
}

// ---- Malformed graph JSON: each mutation of add3's graph must fail, naming the place.

struct Mutation {
  const char* name;
  std::function<void(nlohmann::json&)> apply;
  const char* fragment;
};

TEST(GraphJson, MalformedGraphsAreRefusedNamingNodeAndField) {
  HETRT_REQUIRE_FIXTURE(dir, "add3");
  const auto base = nlohmann::json::parse(ReadText(dir + "/graph.json"));
  const std::vector<Mutation> mutations = {
      {"no nodes", [](auto& g) { g.erase("nodes"); }, "nodes: missing"},
      {"unknown key", [](auto& g) { g["extra"] = 1; }, "extra: unknown top-level key"},
      {"nodes not array", [](auto& g) { g["nodes"] = 3; }, "nodes: must be an array"},
      {"bad op", [](auto& g) { g["nodes"][3]["op"] = "relu"; }, "unknown op 'relu'"},
      {"name not string", [](auto& g) { g["nodes"][0]["name"] = 5; }, "node 0: 'name' must be a string"},
      {"missing func_name", [](auto& g) { g["nodes"][3]["attrs"].erase("func_name"); }, "attrs.func_name"},
      {"num_inputs wrong", [](auto& g) { g["nodes"][3]["attrs"]["num_inputs"] = "3"; },
       "says 3 but the node has 2 inputs"},
      {"num_outputs not int", [](auto& g) { g["nodes"][3]["attrs"]["num_outputs"] = "x"; }, "attrs.num_outputs"},
      {"input node out of range", [](auto& g) { g["nodes"][3]["inputs"][0][0] = 99; }, "node id 99 out of range"},
      {"input index out of range", [](auto& g) { g["nodes"][3]["inputs"][0][1] = 2; }, "output index 2"},
      {"cycle", [](auto& g) { g["nodes"][3]["inputs"][0][0] = 4; }, "does not come earlier"},
      {"negative entry", [](auto& g) { g["nodes"][3]["inputs"][0][0] = -1; }, "non-negative"},
      {"row_ptr length", [](auto& g) { g["node_row_ptr"].erase(g["node_row_ptr"].size() - 1); },
       "node_row_ptr: has 5 values for 5 nodes"},
      {"row_ptr step", [](auto& g) { g["node_row_ptr"][2] = 3; }, "node_row_ptr"},
      {"arg node not input", [](auto& g) { g["arg_nodes"][0] = 3; }, "is not an input"},
      {"head out of range", [](auto& g) { g["heads"][0][0] = 17; }, "heads[0]: node id 17"},
      {"storage id range", [](auto& g) { g["attrs"]["storage_id"][1][0] = 99; }, "attrs.storage_id[0]"},
      {"dtype bad", [](auto& g) { g["attrs"]["dltype"][1][2] = "float33x"; }, "attrs.dltype[2]"},
      {"shape count", [](auto& g) { g["attrs"]["shape"][1].erase(0); }, "attrs.shape: has 4 values for 5 entries"},
      {"shape negative", [](auto& g) { g["attrs"]["shape"][1][1][0] = -4; }, "attrs.shape[1]"},
      {"wrong tag", [](auto& g) { g["attrs"]["storage_id"][0] = "list_str"; }, "attrs.storage_id: must be"},
      {"mixed devices in one storage",
       [](auto& g) {
         g["attrs"]["device_index"][1][3] = 4;
         g["attrs"]["storage_id"][1][3] = 0;
       },
       "is shared by entries on cpu and opencl"},
      {"unknown attr",
       [](auto& g) {
         g["attrs"]["mystery"] = {"list_str", {"x"}};
       },
       "attrs.mystery: unknown attribute"},
  };
  for (const Mutation& m : mutations) {
    nlohmann::json g = base;
    m.apply(g);
    auto parsed = ParseGraphJson(g.dump(), "add3.json");
    ASSERT_FALSE(parsed.ok()) << m.name;
    EXPECT_NE(parsed.status().message().find(m.fragment), std::string::npos)
        << m.name << ": " << parsed.status().message();
    EXPECT_NE(parsed.status().message().find("add3.json"), std::string::npos) << m.name;
  }
  EXPECT_FALSE(ParseGraphJson("{not json", "x").ok());
  EXPECT_FALSE(ParseGraphJson("[]", "x").ok());
  HETRT_ASSERT_OK_AND_ASSIGN(Graph ok, ParseGraphJson(base.dump(), "add3.json"));
  EXPECT_EQ(ok.nodes.size(), 5u);
}

TEST(GraphJson, ReuseFixtureSharesStorageAndStillMatches) {
  HETRT_REQUIRE_FIXTURE(dir, "reuse");
  HETRT_ASSERT_OK_AND_ASSIGN(Graph g, ParseGraphJson(ReadText(dir + "/graph.json"), "reuse"));
  EXPECT_EQ(g.storage_ids, (std::vector<uint32_t>{0, 1, 2, 3, 2}));
  HETRT_ASSERT_OK_AND_ASSIGN(GraphModel m, OpenGraphModel({dir + "/deploy.so"}, {}));
  uint64_t cpu_bytes = 0;
  for (auto& [d, bytes] : m.executor->StorageBytesPerDevice()) cpu_bytes += bytes;
  EXPECT_EQ(cpu_bytes, 4u * 40);  // four storage ids of 40 bytes for five entries
}

}  // namespace
}  // namespace hetrt

namespace hetrt {
namespace {

using CliOnFixture = testing::PerFixtureTest;
HETRT_INSTANTIATE_PER_FIXTURE(Tvm, CliOnFixture, testing::FixtureParams(testing::TvmFixtureModels(), "fixtures"));

TEST_P(CliOnFixture, InspectPrintsTheTreeAndGraphOfEachLibrary) {
  const std::string dir = testing::TvmFixture(fixture());
  const auto libraries = testing::FixtureLibraries(dir);
  if (libraries.empty()) GTEST_SKIP() << "no deploy.so or lib.so in " << dir;
  for (const std::string& path : libraries) {
    const std::string out = ::testing::TempDir() + "/hetrt_inspect_" + fixture() + ".txt";
    ASSERT_EQ(std::system((std::string(HETRT_CLI) + " inspect " + path + " > " + out).c_str()), 0) << path;
    const std::string text = ReadText(out);
    EXPECT_NE(text.find("- library"), std::string::npos) << path << "\n" << text;
    const bool graph_factory = path == dir + "/deploy.so" && std::filesystem::exists(dir + "/graph.json");
    if (graph_factory) {
      EXPECT_NE(text.find("- GraphExecutorFactory"), std::string::npos) << text;
      EXPECT_NE(text.find("graph: "), std::string::npos) << text;
      EXPECT_NE(text.find("outputs:"), std::string::npos) << text;
    }
  }
}

}  // namespace
}  // namespace hetrt

namespace hetrt {
namespace {

using AotExecutorOnFixture = testing::PerFixtureTest;
HETRT_INSTANTIATE_PER_FIXTURE(
    Tvm, AotExecutorOnFixture,
    testing::FixtureParams(testing::TvmFixtureModels(), "AOT fixtures", [](const std::string& model) {
      return ReadJson(testing::TvmFixture(model) + "/meta.json")["root_module_type_key"] == "AotExecutorFactory";
    }));

TEST_P(AotExecutorOnFixture, MatchesTvmThroughApiAndCli) {
  const std::string dir = testing::TvmFixture(fixture());
  HETRT_ASSERT_OK_AND_ASSIGN(Model m, OpenModel({dir + "/deploy.so"}, {}));
  HETRT_ASSERT_OK_AND_ASSIGN(auto inputs, LoadParamDictFile(dir + "/inputs.params"));
  ASSERT_EQ(static_cast<size_t>(m.executor->NumInputs()), inputs.size());
  for (const auto& p : inputs) HETRT_ASSERT_OK(m.executor->SetInput(p.name, p.tensor));
  HETRT_ASSERT_OK(m.executor->Run());
  HETRT_ASSERT_OK_AND_ASSIGN(auto expected, LoadParamDictFile(dir + "/outputs.params"));
  const Tolerance tol = ToleranceOf(dir);
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor out, m.executor->GetOutput(0));
  EXPECT_TRUE(testing::TensorsClose(out, expected[0].tensor, tol.rtol, tol.atol));

  const std::string saved = ::testing::TempDir() + "/hetrt_aot_" + fixture() + ".params";
  const std::string cmd = std::string(HETRT_CLI) + " run " + dir + "/deploy.so --inputs " + dir +
                          "/inputs.params --save-outputs " + saved + " > /dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  HETRT_ASSERT_OK_AND_ASSIGN(auto cli_out, LoadParamDictFile(saved));
  EXPECT_TRUE(testing::TensorsClose(cli_out[0].tensor, expected[0].tensor, tol.rtol, tol.atol));
}

TEST(AotExecutor, RefusesDevicesOtherThanOneCpu) {
  HETRT_REQUIRE_FIXTURE(dir, "aot_cpp_add3");
  GraphExecutor::Options options;
  options.devices = {{kDLCPU, 0}, {kDLOpenCL, 0}};
  auto m = OpenModel({dir + "/deploy.so"}, options);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("exactly one CPU device"), std::string::npos) << m.status().message();
}

}  // namespace
}  // namespace hetrt

namespace hetrt {
namespace {

TEST(Cli, BenchPrintsPerNodeTimesAndWritesAChromeTrace) {
  HETRT_REQUIRE_FIXTURE(dir, "mlp");
  const std::string trace = ::testing::TempDir() + "/hetrt_trace_" + std::to_string(getpid()) + ".json";
  const std::string out = trace + ".txt";
  const std::string cmd = std::string(HETRT_CLI) + " bench " + dir + "/deploy.so --inputs " + dir +
                          "/inputs.params --repeat 5 --trace " + trace + " > " + out;
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  const std::string text = ReadText(out);
  EXPECT_NE(text.find("tvmgen_default_fused_nn_softmax"), std::string::npos) << text;
  EXPECT_NE(text.find("p99"), std::string::npos) << text;
  const auto json = nlohmann::json::parse(ReadText(trace));
  int complete = 0;
  for (const auto& e : json["traceEvents"])
    if (e["ph"] == "X") {
      ++complete;
      EXPECT_GE(e["dur"].get<double>(), 0.0);
    }
  EXPECT_EQ(complete, 3);  // mlp's three kernels
}

}  // namespace
}  // namespace hetrt
