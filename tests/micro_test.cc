// The micro C runtime on every Model Library Format fixture: in-process and as
// a standalone program, with the arena checked against the MLF metadata.
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "firmware_build.h"
#include "graph_io.h"
#include "hetrt/formats/graph.h"
#include "hetrt/mlf.h"
#include "hetrt/sdk/byte_stream.h"
#include "in_process_model.h"
#include "micro/session_checks.h"
#include "micro_device.h"
#include "model_sources.h"
#include "project_writer.h"
#include "remote_model.h"
#include "test_support.h"
#include "transport.h"

namespace hetrt {
namespace {

// Each MLF tarball, graph and AOT; some tests take the graph ones only.
using MicroOnMlfFixture = testing::PerFixtureTest;
HETRT_INSTANTIATE_PER_FIXTURE(Mlf, MicroOnMlfFixture,
                              testing::FixtureParams(testing::MlfFixtureNames(), "MLF fixtures"));
using MicroOnMlfGraphFixture = testing::PerFixtureTest;
HETRT_INSTANTIATE_PER_FIXTURE(Mlf, MicroOnMlfGraphFixture, testing::GraphMlfFixtureParams());

TEST_P(MicroOnMlfFixture, RunsInProcessAndMatchesTvm) {
  const testing::MlfFixture f = testing::MlfFixtureNamed(fixture());
  HETRT_ASSERT_OK_AND_ASSIGN(MlfPackage mlf, MlfPackage::Read(f.tar));
  HETRT_ASSERT_OK_AND_ASSIGN(auto model, micro::InProcessModel::Build(mlf, {}));
  HETRT_ASSERT_OK(testing::SetInputsFromFile(*model, f.inputs));
  HETRT_ASSERT_OK(model->Run());
  testing::ExpectOutputMatchesFile(*model, f.outputs);
  // Tensors and kernel workspace stay within what TVM's metadata budgets.
  const std::string report = model->ArenaReport();
  EXPECT_NE(report.find("arena: "), std::string::npos) << report;
  const uint64_t budget = micro::MetadataArenaBudget(mlf.metadata());
  ASSERT_GT(budget, 0u);
  // The model's arena (tensors + kernel workspace; the executor's tables are
  // separate static memory) peaks within what TVM's metadata budgets.
  EXPECT_LE(model->ArenaPeakBytes(), budget) << report;
  std::printf("  %s: %s (metadata budget %lu)\n", fixture().c_str(), report.c_str(),
              static_cast<unsigned long>(budget));
}

TEST_P(MicroOnMlfFixture, BuildsAsAStandaloneProgramThatMatchesTvm) {
  const testing::MlfFixture f = testing::MlfFixtureNamed(fixture());
  HETRT_ASSERT_OK_AND_ASSIGN(MlfPackage mlf, MlfPackage::Read(f.tar));
  micro::ProjectOptions options;
  HETRT_ASSERT_OK_AND_ASSIGN(options.inputs, sdk::ReadParamDictFile(f.inputs));  // no board: `make` builds ./model
  const std::string dir = ::testing::TempDir() + "/hetrt_project_" + std::filesystem::path(f.tar).stem().string();
  std::filesystem::remove_all(dir);
  HETRT_ASSERT_OK(micro::WriteStandaloneProject(mlf, dir, options));
  ASSERT_EQ(std::system(("make -s -C " + dir + " > " + dir + "/build.log 2>&1").c_str()), 0)
      << "see " << dir << "/build.log";
  ASSERT_EQ(std::system((dir + "/model " + dir + "/out > " + dir + "/run.log").c_str()), 0);
  HETRT_ASSERT_OK_AND_ASSIGN(auto bytes, ReadFileBytes(dir + "/out0.bin"));
  testing::ExpectBytesMatchFile(bytes, f.outputs);
  std::ifstream log(dir + "/run.log");
  std::string text((std::istreambuf_iterator<char>(log)), {});
  EXPECT_NE(text.find("arena: "), std::string::npos) << text;
}

TEST_P(MicroOnMlfGraphFixture, TooSmallAnArenaIsAnErrorNotACrash) {
  HETRT_ASSERT_OK_AND_ASSIGN(MlfPackage mlf, MlfPackage::Read(testing::MlfFixtureNamed(fixture()).tar));
  auto model = micro::InProcessModel::Build(mlf, {}, /*arena_bytes=*/64);
  ASSERT_FALSE(model.ok());
  EXPECT_NE(model.status().message().find("arena full"), std::string::npos) << model.status().message();
}

// The plugin reads graphs and param dicts without the core (graph_io.h, the
// SDK's param_dict.h): what it reads agrees with the core's readers on real
// files, and every truncation or flipped byte is an error value or a clean
// read, never a crash.
TEST(MicroReaders, AgreeWithTheCoresAndSurviveDamagedFiles) {
  const std::string root = testing::FixturesRoot() + "/tvm-0.18";
  for (const char* name : {"mlp", "add3", "hetero_opencl_seed"}) {
    HETRT_ASSERT_OK_AND_ASSIGN(auto json, ReadFileBytes(root + "/" + name + "/graph.json"));
    const std::string text(json.begin(), json.end());
    HETRT_ASSERT_OK_AND_ASSIGN(Graph graph, ParseGraphJson(text, name));
    HETRT_ASSERT_OK_AND_ASSIGN(micro::GraphIo io, micro::ReadGraphIo(text, name));
    ASSERT_EQ(io.inputs.size(), graph.arg_nodes.size()) << name;
    ASSERT_EQ(io.outputs.size(), graph.heads.size()) << name;
    for (size_t i = 0; i < io.inputs.size(); ++i) {
      const uint32_t e = graph.entry_id(graph.arg_nodes[i], 0);
      EXPECT_EQ(io.inputs[i].name, graph.nodes[graph.arg_nodes[i]].name);
      EXPECT_EQ(io.inputs[i].shape, graph.shapes[e]);
      EXPECT_EQ(io.inputs[i].bytes, graph.entry_bytes(e));
    }
    for (size_t i = 0; i < text.size(); i += 97) (void)micro::ReadGraphIo(text.substr(0, i), name);
  }
  for (const char* name : {"mlp/inputs.params", "add3/inputs.params"}) {
    HETRT_ASSERT_OK_AND_ASSIGN(auto file, ReadFileBytes(root + "/" + name));
    HETRT_ASSERT_OK_AND_ASSIGN(auto core, ReadParamDict(file, name));
    HETRT_ASSERT_OK_AND_ASSIGN(auto sdk, sdk::ReadParamDict(file, name));
    ASSERT_EQ(sdk.size(), core.size());
    for (size_t i = 0; i < sdk.size(); ++i) {
      EXPECT_EQ(sdk[i].name, core[i].name);
      EXPECT_EQ(sdk[i].shape, core[i].tensor.shape());
      EXPECT_EQ(sdk::DtypeName(sdk[i].dtype), sdk::DtypeName(core[i].tensor.dtype()));
      EXPECT_TRUE(std::equal(sdk[i].bytes.begin(), sdk[i].bytes.end(), core[i].tensor.host_bytes().begin(),
                             core[i].tensor.host_bytes().end()));
    }
    for (size_t cut = 0; cut < file.size(); ++cut) {
      auto truncated = sdk::ReadParamDict(std::span(file).first(cut), name);
      ASSERT_FALSE(truncated.ok()) << "cut at " << cut;
      EXPECT_EQ(truncated.status().code(), StatusCode::kDataLoss);
    }
    std::mt19937 rng(7);
    for (int k = 0; k < 500; ++k) {
      std::vector<uint8_t> damaged = file;
      damaged[rng() % damaged.size()] ^= static_cast<uint8_t>(1 + rng() % 255);
      (void)sdk::ReadParamDict(damaged, name);
    }
  }
}

// The C runtime's JSON tokenizer, graph parser and param reader under mutated
// inputs (real graph JSONs and param dicts, bit-flipped, truncated, spliced),
// in a harness built with sanitizers when the compiler has them.
TEST(Micro, CRuntimeParsersSurviveMutatedInputs) {
  const std::string dir = ::testing::TempDir() + "/hetrt_crt_fuzz";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir + "/inputs");
  std::vector<std::string> seeds;
  const std::string root = testing::FixturesRoot() + "/tvm-0.18";
  for (const char* f : {"add3/graph.json", "reuse/graph.json", "mlp/graph.json", "hetero_opencl_seed/graph.json",
                        "add3/inputs.params", "mlp/inputs.params"})
    if (auto b = ReadFileBytes(root + "/" + f); b.ok()) {
      seeds.emplace_back(b->begin(), b->end());
    }
  seeds.push_back(
      R"({"nodes":[{"op":"null","name":"x","inputs":[]}],"arg_nodes":[0],"heads":[[0,0,0]],"node_row_ptr":[0,1],"attrs":{"dltype":["list_str",["float32"]],"shape":["list_shape",[[4]]],"storage_id":["list_int",[0]]}})");
  std::mt19937_64 rng(99);
  for (int i = 0; i < 3000; ++i) {
    std::string m = seeds[static_cast<size_t>(i) % seeds.size()];
    for (int k = 0, n = 1 + static_cast<int>(rng() % 4); k < n && !m.empty(); ++k) {
      const size_t pos = rng() % m.size();
      switch (rng() % 5) {
        case 0: m[pos] = static_cast<char>(rng()); break;
        case 1: m.resize(pos); break;
        case 2: m.insert(pos, std::string(1 + rng() % 40, "[{\"\":,9]-"[rng() % 10])); break;
        case 3: m.erase(pos, 1 + rng() % 8); break;
        case 4: m.insert(pos, "99999999999"); break;
      }
    }
    std::ofstream(dir + "/inputs/" + std::to_string(i), std::ios::binary) << m;
  }
  std::string sources;
  for (const auto& s : micro::RuntimeSources()) sources += " " + s;
  std::string includes;
  for (const auto& d : micro::RuntimeIncludeDirs()) includes += " -I" + d;
  const std::string base = "cc -std=c99 -O1 -g" + includes + " -I" HETRT_DLPACK_INCLUDE_DIR " " HETRT_CRT_FUZZ_HARNESS +
                           sources + " -o " + dir + "/harness";
  const bool sanitized =
      std::system((base + " -fsanitize=address,undefined -fno-sanitize-recover=all 2>/dev/null").c_str()) == 0;
  if (!sanitized) {
    ASSERT_EQ(std::system(base.c_str()), 0);
  }
  const int rc = std::system((dir + "/harness " + dir + "/inputs > " + dir + "/log 2>&1").c_str());
  std::ifstream log(dir + "/log");
  std::string text((std::istreambuf_iterator<char>(log)), {});
  EXPECT_EQ(rc, 0) << (sanitized ? "(with ASan/UBSan) " : "") << text.substr(0, 4000);
  EXPECT_NE(text.find("3000 inputs"), std::string::npos) << text.substr(0, 2000);
}

}  // namespace
}  // namespace hetrt

namespace hetrt {
namespace {

using testing::ExpectOutputMatchesFile;
using testing::SetInputsFromFile;

// The pipe transport: the model in a device program on this host, driven
// with the framed protocol as a board is over its UART.
Result<std::unique_ptr<micro::MicroModel>> PipeDevice(const std::string& tar, micro::OptionMap options = {}) {
  options["transport"] = "pipe";
  return micro::OpenMicroModel(tar, "micro", options);
}

micro::RemoteModel& Remote(micro::MicroModel& m) { return dynamic_cast<micro::RemoteModel&>(m.session()); }

TEST_P(MicroOnMlfFixture, RunsOnAHostDrivenDeviceProgramAndMatchesTvm) {
  const testing::MlfFixture f = testing::MlfFixtureNamed(fixture());
  HETRT_ASSERT_OK_AND_ASSIGN(auto device, PipeDevice(f.tar));
  HETRT_ASSERT_OK(SetInputsFromFile(device->session(), f.inputs));
  HETRT_ASSERT_OK(device->session().Run());
  ExpectOutputMatchesFile(device->session(), f.outputs);
  HETRT_ASSERT_OK_AND_ASSIGN(micro::MicroReport report, device->Report());
  EXPECT_NE(report.text.find("arena: "), std::string::npos) << report.text;
  EXPECT_GT(report.arena_used, 0u);
  EXPECT_GT(report.device_ns, 0u);  // the device program's clock timed the run
}

// One graph fixture for the fault tests (their device program is built once, into the cache).
Result<std::string> FaultModel() {
  const std::string tar = testing::MlfFixtureNamed("mlp_graph").tar;
  if (!std::filesystem::exists(tar)) return NotFound("mlp graph MLF fixture");
  return tar;
}

// The device program is compiled once per project: a second device of the
// same model starts the cached program (same file, not rebuilt) and runs as
// the first did; no half-built folder is left in the cache.
TEST(MicroHostDriven, TheDeviceProgramIsBuiltOncePerProject) {
  auto tar = FaultModel();
  if (!tar.ok()) GTEST_SKIP() << tar.status().message();
  const std::filesystem::path cache = ::testing::TempDir() + "/hetrt_device_cache_" + std::to_string(getpid());
  std::filesystem::remove_all(cache);
  const std::string dir = testing::FixturesRoot() + "/tvm-0.18/mlf";
  std::vector<std::string> programs;
  std::filesystem::file_time_type built;
  for (int open = 0; open < 2; ++open) {
    HETRT_ASSERT_OK_AND_ASSIGN(auto device, PipeDevice(*tar, {{"cache_dir", cache.string()}}));
    HETRT_ASSERT_OK(SetInputsFromFile(device->session(), dir + "/mlp_inputs.params"));
    HETRT_ASSERT_OK(device->session().Run());
    ExpectOutputMatchesFile(device->session(), dir + "/mlp_outputs.params");
    programs.clear();
    for (const auto& e : std::filesystem::directory_iterator(cache)) programs.push_back(e.path().filename().string());
    ASSERT_EQ(programs.size(), 1u) << "one project folder in the cache, nothing half-built";
    EXPECT_NE(programs[0].find("-host-"), std::string::npos) << programs[0];
    const std::filesystem::path program = cache / programs[0] / "device";
    HETRT_ASSERT_OK_AND_ASSIGN(micro::MicroReport report, device->Report());
    EXPECT_NE(report.text.find("device program " + program.string()), std::string::npos) << report.text;
    if (open == 0)
      built = std::filesystem::last_write_time(program);
    else
      EXPECT_EQ(std::filesystem::last_write_time(program), built) << "the second device rebuilt the program";
  }
  std::filesystem::remove_all(cache);
}

// A device that stops reading: a write gives up after its 5 s bound instead of
// waiting forever (a pipe, like QEMU's UART socket, is a blocking descriptor).
TEST(MicroHostDriven, AWriteToADeviceThatStopsReadingGivesUpInsteadOfHanging) {
  const std::string dir = ::testing::TempDir() + "/hetrt_silent_device_" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  const std::string program = dir + "/device";
  std::ofstream(program) << "#!/bin/sh\nexec sleep 60\n";
  std::filesystem::permissions(program, std::filesystem::perms::owner_all);
  auto transport = micro::MakePipeTransport(program, dir);  // removes `dir` when it goes
  HETRT_ASSERT_OK(transport->Open());
  const std::vector<uint8_t> bytes(1 << 20, 0x55);  // far more than a pipe holds
  const Status written = transport->Write(bytes.data(), bytes.size());
  EXPECT_EQ(written.code(), StatusCode::kUnavailable) << written.ToString();
  EXPECT_NE(written.message().find("does not take bytes"), std::string::npos) << written.message();
  transport->Close();
}

TEST(MicroHostDriven, GarbageOnTheLineIsSkipped) {
  auto tar = FaultModel();
  if (!tar.ok()) GTEST_SKIP() << tar.status().message();
  HETRT_ASSERT_OK_AND_ASSIGN(auto device,
                             PipeDevice(*tar, {{"garbage_every", "1"}}));  // random bytes before every frame
  const std::string dir = testing::FixturesRoot() + "/tvm-0.18/mlf";
  for (int i = 0; i < 5; ++i) {
    HETRT_ASSERT_OK(SetInputsFromFile(device->session(), dir + "/mlp_inputs.params"));
    HETRT_ASSERT_OK(device->session().Run());
    ExpectOutputMatchesFile(device->session(), dir + "/mlp_outputs.params");
  }
}

TEST(MicroHostDriven, DroppedFramesAreRetriedAfterATimeout) {
  auto tar = FaultModel();
  if (!tar.ok()) GTEST_SKIP() << tar.status().message();
  HETRT_ASSERT_OK_AND_ASSIGN(auto device,
                             PipeDevice(*tar, {{"drop_every", "3"}, {"timeout_ms", "150"}, {"run_timeout_ms", "300"}}));
  const std::string dir = testing::FixturesRoot() + "/tvm-0.18/mlf";
  HETRT_ASSERT_OK(SetInputsFromFile(device->session(), dir + "/mlp_inputs.params"));
  for (int i = 0; i < 3; ++i) HETRT_ASSERT_OK(device->session().Run());
  ExpectOutputMatchesFile(device->session(), dir + "/mlp_outputs.params");
  EXPECT_GT(Remote(*device).retransmissions(), 0);
}

TEST(MicroHostDriven, AKilledDeviceIsAnErrorThenRecovers) {
  auto tar = FaultModel();
  if (!tar.ok()) GTEST_SKIP() << tar.status().message();
  HETRT_ASSERT_OK_AND_ASSIGN(auto device, PipeDevice(*tar, {{"timeout_ms", "500"}}));
  const std::string dir = testing::FixturesRoot() + "/tvm-0.18/mlf";
  HETRT_ASSERT_OK(SetInputsFromFile(device->session(), dir + "/mlp_inputs.params"));
  HETRT_ASSERT_OK(Remote(*device).ResetDevice());  // SIGKILL, as a crash would
  // Dead before the request is written: the write fails (EPIPE), the path a
  // device that died between calls takes.
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const auto start = std::chrono::steady_clock::now();
  Status s = device->session().Run();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3));  // no hang
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("micro device lost during RUN"), std::string::npos) << s.message();
  // The next call starts a fresh device and replays the inputs.
  HETRT_ASSERT_OK(device->session().Run());
  ExpectOutputMatchesFile(device->session(), dir + "/mlp_outputs.params");
  EXPECT_EQ(Remote(*device).restarts(), 1);
}

}  // namespace
}  // namespace hetrt

#include "hetrt/exec/factory_modules.h"
#include "hetrt/exec/graph_model.h"
#include "hetrt/graph_builder.h"
#include "hetrt/module_export.h"
#include "kernel_set.h"

namespace hetrt {
namespace {

TEST_P(MicroOnMlfGraphFixture, MlfWriterWritesItBackToRunTheSame) {
  const testing::MlfFixture f = testing::MlfFixtureNamed(fixture());
  HETRT_ASSERT_OK_AND_ASSIGN(MlfPackage original, MlfPackage::Read(f.tar));
  HETRT_ASSERT_OK_AND_ASSIGN(MlfGraphModel model, MlfGraphModelOf(original));
  const std::string out = ::testing::TempDir() + "/hetrt_rewritten_" + f.model + ".tar";
  HETRT_ASSERT_OK(WriteMlf(model, out));
  HETRT_ASSERT_OK_AND_ASSIGN(MlfPackage again, MlfPackage::Read(out));
  EXPECT_EQ(again.metadata().model_name, f.model);
  EXPECT_EQ(*again.GraphJson(), *original.GraphJson());
  for (const auto& code : original.HostCode()) EXPECT_EQ(*again.Find(code), *original.Find(code)) << code;
  HETRT_ASSERT_OK_AND_ASSIGN(auto device, micro::InProcessModel::Build(again, {}));
  HETRT_ASSERT_OK(SetInputsFromFile(*device, f.inputs));
  HETRT_ASSERT_OK(device->Run());
  ExpectOutputMatchesFile(*device, f.outputs);
}

std::string ReadSource(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), {}};
}

TEST(MlfWriter, AModelBuiltHereRunsOnTheMicroRuntimeAndTheGraphExecutorAlike) {
  using kernels::Op;
  GraphBuilder b;
  auto f32 = [](std::vector<int64_t> s) { return GraphBuilder::TensorSpec{std::move(s), {kDLFloat, 32, 1}}; };
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> d(-0.5f, 0.5f);
  auto random = [&](std::vector<int64_t> shape) {
    Tensor t = Tensor::EmptyHost(std::move(shape), {kDLFloat, 32, 1}).value();
    for (int64_t i = 0; i < t.num_elements(); ++i) t.data_as<float>()[i] = d(rng);
    return t;
  };
  auto x = b.AddInput("data", f32({1, 32}));
  auto h = b.AddOp1("dense1", *kernels::FunctionName(Op::kDense, kDLCPU),
                    {x, b.AddParam("w1", random({16, 32})), b.AddParam("b1", random({16}))}, f32({1, 16}));
  h = b.AddOp1("relu", *kernels::FunctionName(Op::kRelu, kDLCPU), {h}, f32({1, 16}));
  h = b.AddOp1("dense2", *kernels::FunctionName(Op::kDense, kDLCPU),
               {h, b.AddParam("w2", random({4, 16})), b.AddParam("b2", random({4}))}, f32({1, 4}));
  b.AddOutput(b.AddOp1("softmax", *kernels::FunctionName(Op::kSoftmax, kDLCPU), {h}, f32({1, 4})));
  HETRT_ASSERT_OK_AND_ASSIGN(auto built, b.Build());

  MlfGraphModel model{"tiny_mlp",
                      built.graph_json,
                      built.params,
                      {{"cpu_kernels.c", ReadSource(HETRT_KERNELS_DIR "/cpu_kernels.c")}},
                      {{"kernel_abi.h", ReadSource(HETRT_KERNELS_DIR "/kernel_abi.h")}}};
  const std::string tar = ::testing::TempDir() + "/hetrt_tiny_mlp.tar";
  HETRT_ASSERT_OK(WriteMlf(model, tar));
  HETRT_ASSERT_OK_AND_ASSIGN(MlfPackage mlf, MlfPackage::Read(tar));
  ASSERT_EQ(mlf.metadata().inputs.size(), 1u);
  EXPECT_EQ(mlf.metadata().inputs[0].bytes, 32u * 4);

  Tensor input = random({1, 32});
  // 1. The micro C runtime, in process.
  HETRT_ASSERT_OK_AND_ASSIGN(auto micro_model, micro::InProcessModel::Build(mlf, {}));
  ASSERT_EQ(micro_model->InputIndex("data"), 0);
  HETRT_ASSERT_OK(micro_model->SetInput(0, input.host_bytes()));
  HETRT_ASSERT_OK(micro_model->Run());
  HETRT_ASSERT_OK_AND_ASSIGN(auto micro_bytes, micro_model->GetOutput(0));
  Tensor on_micro = Tensor::Borrow(micro_bytes.data(), {kDLCPU, 0}, {1, 4}, {kDLFloat, 32, 1});
  // 2. The same MLF as a deploy library on the graph executor.
  const std::string so = ::testing::TempDir() + "/hetrt_tiny_mlp.so";
  HETRT_ASSERT_OK(ExportMlfToLibrary(mlf, so, {}));
  HETRT_ASSERT_OK_AND_ASSIGN(GraphModel graph_model, OpenGraphModel({so}, {}));
  HETRT_ASSERT_OK(graph_model.executor->SetInput("data", input));
  HETRT_ASSERT_OK(graph_model.executor->Run());
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor on_host, graph_model.executor->GetOutput(0));
  EXPECT_TRUE(testing::TensorsClose(on_micro, on_host, 1e-6, 1e-7));
  float sum = 0;
  for (int i = 0; i < 4; ++i) sum += on_micro.data_as<float>()[i];
  EXPECT_NEAR(sum, 1.f, 1e-5);
}

}  // namespace
}  // namespace hetrt

namespace hetrt {
namespace {

TEST_P(MicroOnMlfFixture, BuildsForCortexMAndReportsItsSections) {
  if (std::system("command -v arm-none-eabi-gcc > /dev/null 2>&1") != 0)
    HETRT_MISSING("arm-gcc", "arm-none-eabi-gcc is not installed (Debian: gcc-arm-none-eabi libnewlib-arm-none-eabi)");
  const testing::MlfFixture f = testing::MlfFixtureNamed(fixture());
  HETRT_ASSERT_OK_AND_ASSIGN(MlfPackage mlf, MlfPackage::Read(f.tar));
  const std::string dir = ::testing::TempDir() + "/hetrt_cortexm_" + std::to_string(getpid()) + "_" +
                          std::filesystem::path(f.tar).stem().string();
  std::filesystem::remove_all(dir);
  HETRT_ASSERT_OK(micro::WriteStandaloneProject(mlf, dir, {}));
  HETRT_ASSERT_OK_AND_ASSIGN(micro::SectionSizes sizes, micro::BuildCortexM(dir));
  EXPECT_GT(sizes.text, 0u);
  // The static arena lives in .bss: at least the tensors the model needs.
  HETRT_ASSERT_OK_AND_ASSIGN(auto in_process, micro::InProcessModel::Build(mlf, {}));
  EXPECT_GE(sizes.bss, in_process->ArenaPeakBytes());
  std::printf("  %s: .text %lu .data %lu .bss %lu\n", fixture().c_str(), static_cast<unsigned long>(sizes.text),
              static_cast<unsigned long>(sizes.data), static_cast<unsigned long>(sizes.bss));
}

}  // namespace
}  // namespace hetrt
