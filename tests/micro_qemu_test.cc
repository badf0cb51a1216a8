// The micro plugin on emulated Cortex-M boards (QEMU): every MLF fixture as
// standalone firmware and host-driven over the board's UART, garbage on the
// line and board resets, the serial and tcp transports, boards too small for
// a model, the CLI, and the ABI's whole-model table. Tests that need QEMU or
// arm-none-eabi-gcc skip, saying which is missing. Firmware is built once per
// (model, board, inputs) into a cache that every test process of this build
// shares (concurrent builders are safe), so the suite pays for each build once.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <regex>
#include <thread>

#include "boards.h"
#include "firmware_build.h"
#include "hetrt/exec/whole_model_executor.h"
#include "hetrt/graph_builder.h"
#include "hetrt/mlf.h"
#include "kernel_set.h"
#include "micro/session_checks.h"
#include "micro_device.h"
#include "qemu_board.h"
#include "remote_model.h"
#include "test_support.h"

namespace hetrt {
namespace {

namespace fs = std::filesystem;

// QEMU and the cross compiler, each required by name under HETRT_REQUIRE.
#define HETRT_REQUIRE_QEMU()                                                                                      \
  do {                                                                                                            \
    if (Status s = micro::RequireQemu(); !s.ok()) HETRT_MISSING("qemu", s.message());                             \
    if (Status s = micro::RequireTool("arm-none-eabi-gcc", "gcc-arm-none-eabi libnewlib-arm-none-eabi"); !s.ok()) \
      HETRT_MISSING("arm-gcc", s.message());                                                                      \
  } while (0)

const std::string kCacheDir = HETRT_TEST_MICRO_CACHE;
const char* kBoard = "mps2-an386";

using MicroOnQemu = testing::PerFixtureTest;
HETRT_INSTANTIATE_PER_FIXTURE(Mlf, MicroOnQemu, testing::FixtureParams(testing::MlfFixtureNames(), "MLF fixtures"));

// "output I NAME BYTES HEX" lines of a standalone firmware.
std::map<int, std::vector<uint8_t>> PrintedOutputs(const std::string& uart) {
  std::map<int, std::vector<uint8_t>> out;
  std::istringstream in(uart);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string word, name, hex;
    int index = 0;
    size_t bytes = 0;
    if (!(f >> word >> index >> name >> bytes >> hex) || word != "output" || hex.size() != 2 * bytes) continue;
    std::vector<uint8_t> b(bytes);
    for (size_t i = 0; i < bytes; ++i) b[i] = static_cast<uint8_t>(std::stoi(hex.substr(2 * i, 2), nullptr, 16));
    out[index] = std::move(b);
  }
  return out;
}

void ExpectOutputMatches(const std::vector<uint8_t>& bytes, const std::string& expected_params) {
  testing::ExpectBytesMatchFile(bytes, expected_params);
}
void ExpectOutputMatches(const micro::ModelSession& session, const std::string& expected_params) {
  testing::ExpectOutputMatchesFile(session, expected_params);
}
// The same through the core's executor over the plugin ABI.
void ExpectOutputMatches(Executor& ex, const std::string& expected_params) {
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor out, ex.GetOutput(0));
  ExpectOutputMatches(std::vector<uint8_t>(out.host_bytes().begin(), out.host_bytes().end()), expected_params);
}

Status SetInputs(micro::ModelSession& session, const std::string& path) {
  return testing::SetInputsFromFile(session, path);
}
Status SetInputs(Executor& ex, const std::string& path) {
  HETRT_ASSIGN_OR_RETURN(auto inputs, LoadParamDictFile(path));
  for (const auto& p : inputs) HETRT_RETURN_IF_ERROR(ex.SetInput(p.name, p.tensor));
  return OkStatus();
}

TEST_P(MicroOnQemu, StandaloneFirmwareMatchesTvm) {
  HETRT_REQUIRE_QEMU();
  const testing::MlfFixture f = testing::MlfFixtureNamed(fixture());
  HETRT_ASSERT_OK_AND_ASSIGN(MlfPackage mlf, MlfPackage::Read(f.tar));
  HETRT_ASSERT_OK_AND_ASSIGN(auto inputs, sdk::ReadParamDictFile(f.inputs));
  HETRT_ASSERT_OK_AND_ASSIGN(micro::FirmwareBuild build, micro::BuildFirmwareCached(mlf, kBoard, kCacheDir, inputs));
  HETRT_ASSERT_OK_AND_ASSIGN(micro::QemuStandaloneRun run,
                             micro::RunQemuStandalone(*build.summary.board, build.standalone_elf, 60000));
  ASSERT_EQ(run.exit_code, 0) << run.uart << run.log;
  const auto outputs = PrintedOutputs(run.uart);
  ASSERT_EQ(outputs.count(0), 1u) << run.uart;
  ExpectOutputMatches(outputs.at(0), f.outputs);
  unsigned long long used = 0, total = 0, init = 0, ticks = 0, hz = 0;
  const size_t arena_at = run.uart.find("arena: "), ticks_at = run.uart.find("ticks: ");
  ASSERT_NE(arena_at, std::string::npos) << run.uart;
  ASSERT_NE(ticks_at, std::string::npos) << run.uart;
  ASSERT_EQ(std::sscanf(run.uart.c_str() + arena_at, "arena: %llu of %llu", &used, &total), 2);
  ASSERT_EQ(std::sscanf(run.uart.c_str() + ticks_at, "ticks: init %llu, run %llu at %llu Hz", &init, &ticks, &hz), 3);
  // On the board the model's arena peaks within what TVM's metadata budgets.
  EXPECT_LE(used, build.summary.plan.metadata_budget);
  EXPECT_GT(ticks, 0u);
  std::printf(
      "  %s on %s, standalone: .text %llu .data %llu .bss %llu; arena %llu of %llu (metadata %llu); "
      "instructions: init %llu, run %llu\n",
      fixture().c_str(), kBoard, (unsigned long long)build.standalone.text, (unsigned long long)build.standalone.data,
      (unsigned long long)build.standalone.bss, used, total, (unsigned long long)build.summary.plan.metadata_budget,
      (unsigned long long)micro::InstructionsFromTicks(init, static_cast<uint32_t>(hz)),
      (unsigned long long)micro::InstructionsFromTicks(ticks, static_cast<uint32_t>(hz)));
}

// Through the plugin ABI, as `hetrt run MODEL --device micro --board ...` does.
TEST_P(MicroOnQemu, HostDrivenOverTheUartMatchesTvm) {
  HETRT_REQUIRE_QEMU();
  const testing::MlfFixture f = testing::MlfFixtureNamed(fixture());
  HETRT_ASSERT_OK_AND_ASSIGN(auto ex,
                             WholeModelExecutor::Open(f.tar, "micro", {{"board", kBoard}, {"cache_dir", kCacheDir}}));
  EXPECT_EQ(ex->plugin().name(), "micro");
  HETRT_ASSERT_OK(SetInputs(*ex, f.inputs));
  HETRT_ASSERT_OK(ex->Run());
  ExpectOutputMatches(*ex, f.outputs);
  HETRT_ASSERT_OK_AND_ASSIGN(auto first, ex->GetReport());
  HETRT_ASSERT_OK(ex->Run());
  HETRT_ASSERT_OK_AND_ASSIGN(auto second, ex->GetReport());
  EXPECT_GT(first.last_run_instructions, 0u) << first.text;
  EXPECT_EQ(first.last_run_instructions, second.last_run_instructions) << "-icount counts are deterministic";
  EXPECT_GT(first.arena_bytes_used, 0u);
  EXPECT_LE(first.arena_bytes_used, first.metadata_bytes) << first.text;
  std::printf("  %s\n", first.text.c_str());
}

Result<std::string> MlpGraph() {
  const std::string tar = testing::MlfFixtureNamed("mlp_graph").tar;
  if (!fs::exists(tar)) return NotFound("no mlp graph MLF fixture under " + testing::FixturesRoot());
  return tar;
}

// mlp on the QEMU board with one more option (a fault to inject, a timeout).
Result<std::unique_ptr<micro::MicroModel>> OpenMlpOnQemu(const std::string& tar, const std::string& option,
                                                         const std::string& value) {
  return micro::OpenMicroModel(tar, "micro", {{"board", kBoard}, {"cache_dir", kCacheDir}, {option, value}});
}

// mlp's fixture inputs in, one run, its expected output out.
void RunMlpAndCheck(micro::ModelSession& ex) {
  const std::string dir = testing::MlfFixturesDir();
  HETRT_ASSERT_OK(SetInputs(ex, dir + "/mlp_inputs.params"));
  HETRT_ASSERT_OK(ex.Run());
  ExpectOutputMatches(ex, dir + "/mlp_outputs.params");
}

TEST(MicroOnQemuLink, GarbageOnTheUartIsSkipped) {
  HETRT_REQUIRE_QEMU();
  auto tar = MlpGraph();
  if (!tar.ok()) GTEST_SKIP() << tar.status().message();
  HETRT_ASSERT_OK_AND_ASSIGN(auto device, OpenMlpOnQemu(*tar, "garbage_every", "1"));
  for (int i = 0; i < 3; ++i) RunMlpAndCheck(device->session());
}

// QEMU's monitor resets the board (system_reset) while a run is on its way:
// the call that meets the reset (that run, or the next call if the run won
// the race) fails saying the device restarted; the call after it replays the
// inputs into the rebooted firmware and runs.
TEST(MicroOnQemuLink, ABoardResetMidRunIsAClearErrorThenTheInputsAreReplayed) {
  HETRT_REQUIRE_QEMU();
  auto tar = MlpGraph();
  if (!tar.ok()) GTEST_SKIP() << tar.status().message();
  HETRT_ASSERT_OK_AND_ASSIGN(auto device, OpenMlpOnQemu(*tar, "timeout_ms", "1000"));
  auto& remote = dynamic_cast<micro::RemoteModel&>(device->session());
  const std::string dir = testing::MlfFixturesDir();
  HETRT_ASSERT_OK(SetInputs(remote, dir + "/mlp_inputs.params"));
  HETRT_ASSERT_OK(remote.Run());
  std::thread reset([&] {
    std::this_thread::sleep_for(std::chrono::microseconds(300));
    EXPECT_TRUE(remote.ResetDevice().ok());
  });
  const auto start = std::chrono::steady_clock::now();
  Status s = remote.Run();
  reset.join();
  if (s.ok()) {  // the run finished first: the reset meets the next call
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    s = remote.Run();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));  // no hang
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("micro device lost during RUN"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("restarted"), std::string::npos) << s.message();
  std::printf("  the error: %s\n", s.message().c_str());
  HETRT_ASSERT_OK(remote.Run());
  ExpectOutputMatches(remote, dir + "/mlp_outputs.params");
  EXPECT_EQ(remote.restarts(), 1);
}

// A QEMU this test starts itself, as a user would, with UART0 on `serial`.
class ExternalQemu {
 public:
  ExternalQemu(const std::string& elf, const std::string& serial) {
    log_ = ::testing::TempDir() + "/hetrt_qemu_" + std::to_string(getpid()) + "_" + std::to_string(++count_) + ".log";
    pid_ = fork();
    if (pid_ == 0) {
      const int fd = open(log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(fd, 1), dup2(fd, 2);
      execlp("qemu-system-arm", "qemu-system-arm", "-M", kBoard, "-display", "none", "-monitor", "none", "-nodefaults",
             "-icount", "shift=8", "-serial", serial.c_str(), "-kernel", elf.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
  }
  ~ExternalQemu() {
    if (pid_ > 0) kill(pid_, SIGKILL), waitpid(pid_, nullptr, 0);
    std::remove(log_.c_str());
  }
  // Waits (bounded) for `pattern` in QEMU's output; its first group.
  std::string WaitFor(const std::string& pattern) const {
    const std::regex re(pattern);
    for (int i = 0; i < 100; ++i) {
      std::smatch m;
      const std::string text = testing::ReadText(log_);
      if (std::regex_search(text, m, re)) return m.size() > 1 ? m[1].str() : m[0].str();
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return "";
  }

 private:
  static inline int count_ = 0;
  pid_t pid_ = -1;
  std::string log_;
};

Result<micro::FirmwareBuild> MlpGraphFirmware() {
  HETRT_ASSIGN_OR_RETURN(std::string tar, MlpGraph());
  HETRT_ASSIGN_OR_RETURN(MlfPackage mlf, MlfPackage::Read(tar));
  return micro::BuildFirmwareCached(mlf, kBoard, kCacheDir);
}

TEST(MicroOnQemuLink, SerialTransportOverQemusPty) {
  HETRT_REQUIRE_QEMU();
  auto build = MlpGraphFirmware();
  if (!build.ok()) GTEST_SKIP() << build.status().message();
  ExternalQemu qemu(build->host_driven_elf, "pty");
  const std::string pty = qemu.WaitFor("redirected to (/dev/pts/[0-9]+)");
  ASSERT_FALSE(pty.empty()) << "QEMU named no pty";
  HETRT_ASSERT_OK_AND_ASSIGN(auto device,
                             micro::OpenMicroModel(*MlpGraph(), "micro", {{"transport", "serial:" + pty + ",115200"}}));
  RunMlpAndCheck(device->session());
}

TEST(MicroOnQemuLink, TcpTransportToAQemuStartedElsewhere) {
  HETRT_REQUIRE_QEMU();
  auto build = MlpGraphFirmware();
  if (!build.ok()) GTEST_SKIP() << build.status().message();
  // A free port: the kernel picks one, QEMU takes it over (a small window).
  const int probe = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  ASSERT_EQ(bind(probe, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(getsockname(probe, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const std::string port = std::to_string(ntohs(addr.sin_port));
  close(probe);
  ExternalQemu qemu(build->host_driven_elf, "tcp:127.0.0.1:" + port + ",server=on,wait=on");
  ASSERT_FALSE(qemu.WaitFor("waiting for connection|QEMU waiting").empty()) << "QEMU did not listen";
  HETRT_ASSERT_OK_AND_ASSIGN(auto device,
                             micro::OpenMicroModel(*MlpGraph(), "micro", {{"transport", "tcp:127.0.0.1:" + port}}));
  RunMlpAndCheck(device->session());
}

// An MLF made here: relu over `elements` floats (20000: activations of
// ~160 KB, more than lm3s6965evb's 64 KB).
std::string WideModel(int64_t elements = 20000) {
  using kernels::Op;
  GraphBuilder b;
  const GraphBuilder::TensorSpec wide{{1, elements}, {kDLFloat, 32, 1}};
  auto x = b.AddInput("data", wide);
  b.AddOutput(b.AddOp1("relu", *kernels::FunctionName(Op::kRelu, kDLCPU), {x}, wide));
  auto built = b.Build();
  EXPECT_TRUE(built.ok());
  MlfGraphModel model{"wide",
                      built->graph_json,
                      built->params,
                      {{"cpu_kernels.c", testing::ReadText(HETRT_KERNELS_DIR "/cpu_kernels.c")}},
                      {{"kernel_abi.h", testing::ReadText(HETRT_KERNELS_DIR "/kernel_abi.h")}}};
  const std::string tar =
      ::testing::TempDir() + "/hetrt_wide_" + std::to_string(elements) + "_" + std::to_string(getpid()) + ".tar";
  EXPECT_TRUE(WriteMlf(model, tar).ok());
  return tar;
}

TEST(MicroBoards, AnArenaLargerThanTheBoardsRamIsRefusedWithTheNumbers) {
  const std::string tar = WideModel();
  const std::string dir = ::testing::TempDir() + "/hetrt_wide_project_" + std::to_string(getpid());
  auto summary = GenerateWholeModelProject("micro", tar, dir, {{"board", "lm3s6965evb"}});
  ASSERT_FALSE(summary.ok());
  const std::string& m = summary.status().message();
  EXPECT_EQ(summary.status().code(), StatusCode::kResourceExhausted) << m;
  EXPECT_NE(m.find("does not fit lm3s6965evb's RAM"), std::string::npos) << m;
  EXPECT_NE(m.find("arena 160"), std::string::npos) << m;  // 2 x 80000 bytes + slack
  EXPECT_NE(m.find("65536 bytes of RAM"), std::string::npos) << m;
  EXPECT_FALSE(fs::exists(dir + "/Makefile"));  // refused before anything was written
  std::printf("  %s\n", m.c_str());
  // The 4 MB of mps2-an386 take it.
  EXPECT_TRUE(micro::CheckFitsBoard(*micro::PlanModel(*MlfPackage::Read(tar)), MlfPackage::Read(tar)->metadata(),
                                    **micro::FindBoard(kBoard))
                  .ok());
  std::remove(tar.c_str());
}

// 32 KB in and out over the emulated UART (8x the 4 KB a frame of the pipe
// device program held before), relu checked element by element.
TEST(MicroOnQemuLink, LargeTensorsCrossTheUart) {
  HETRT_REQUIRE_QEMU();
  constexpr int kElements = 8192;
  const std::string tar = WideModel(kElements);
  HETRT_ASSERT_OK_AND_ASSIGN(auto ex,
                             WholeModelExecutor::Open(tar, "micro", {{"board", kBoard}, {"cache_dir", kCacheDir}}));
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor x, Tensor::EmptyHost({1, kElements}, {kDLFloat, 32, 1}));
  for (int i = 0; i < kElements; ++i) x.data_as<float>()[i] = static_cast<float>(i % 7) - 3.f;
  const auto start = std::chrono::steady_clock::now();
  HETRT_ASSERT_OK(ex->SetInput(0, x));
  HETRT_ASSERT_OK(ex->Run());
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor y, ex->GetOutput(0));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (int i = 0; i < kElements; ++i) ASSERT_EQ(y.data_as<float>()[i], std::max(0.f, x.data_as<float>()[i])) << i;
  std::printf("  64 KB over the UART (32 KB each way) in %.2f s\n", seconds);
  std::remove(tar.c_str());
}

TEST(MicroBoards, ConstantsLargerThanTheBoardsFlashAreRefused) {
  const std::string tar = testing::MlfFixtureNamed("mlp_aot").tar;
  if (!fs::exists(tar)) HETRT_MISSING("fixtures", "no mlp AOT MLF fixture under " << testing::FixturesRoot());
  auto summary =
      GenerateWholeModelProject("micro", tar, ::testing::TempDir() + "/hetrt_mlp_lm3s", {{"board", "lm3s6965evb"}});
  ASSERT_FALSE(summary.ok());
  EXPECT_NE(summary.status().message().find("exceed 262144 bytes of flash"), std::string::npos)
      << summary.status().message();
}

// The Cortex-M3 board: a model that fits its 256 KB flash and 64 KB RAM.
TEST(MicroBoards, Lm3s6965evbRunsAdd3Standalone) {
  HETRT_REQUIRE_QEMU();
  const testing::MlfFixture f = testing::MlfFixtureNamed("add3_aot");
  if (!fs::exists(f.tar)) HETRT_MISSING("fixtures", "no add3 AOT MLF fixture under " << testing::FixturesRoot());
  HETRT_ASSERT_OK_AND_ASSIGN(MlfPackage mlf, MlfPackage::Read(f.tar));
  HETRT_ASSERT_OK_AND_ASSIGN(auto inputs, sdk::ReadParamDictFile(f.inputs));
  HETRT_ASSERT_OK_AND_ASSIGN(auto build, micro::BuildFirmwareCached(mlf, "lm3s6965evb", kCacheDir, inputs));
  HETRT_ASSERT_OK_AND_ASSIGN(auto run, micro::RunQemuStandalone(*build.summary.board, build.standalone_elf, 60000));
  ASSERT_EQ(run.exit_code, 0) << run.uart << run.log;
  EXPECT_NE(run.uart.find("on lm3s6965evb"), std::string::npos) << run.uart;
  const auto outputs = PrintedOutputs(run.uart);
  ASSERT_EQ(outputs.count(0), 1u) << run.uart;
  ExpectOutputMatches(outputs.at(0), f.outputs);
  std::printf("  add3_aot on lm3s6965evb, standalone: .text %llu .data %llu .bss %llu\n",
              (unsigned long long)build.standalone.text, (unsigned long long)build.standalone.data,
              (unsigned long long)build.standalone.bss);
}

std::string Cli(const std::string& args, int* exit_code) {
  const std::string log = ::testing::TempDir() + "/hetrt_micro_cli_" + std::to_string(getpid()) + ".log";
  const int status =
      std::system(("HETRT_MICRO_CACHE_DIR=" + kCacheDir + " " HETRT_CLI " " + args + " > " + log + " 2>&1").c_str());
  *exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::string text = testing::ReadText(log);
  std::remove(log.c_str());
  return text;
}

TEST(MicroPlugin, HetrtPluginsListsTheMicroPluginWithItsTransportsAndBoards) {
  int rc = 0;
  const std::string out = Cli("plugins", &rc);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("libhetrt_plugin_micro.so"), std::string::npos) << out;
  EXPECT_NE(out.find("whole models (mlf) on devices: micro, cpu"), std::string::npos) << out;
  EXPECT_NE(out.find("transports: inproc, pipe, serial, tcp, qemu"), std::string::npos) << out;
  EXPECT_NE(out.find("boards: mps2-an386, mps2-an385, lm3s6965evb"), std::string::npos) << out;
}

TEST(MicroPlugin, APluginBuiltForAbi20StillLoadsWithoutAWholeModelTable) {
  PluginRegistry::Options options;
  options.search_paths = {HETRT_TEST_ABI20_PLUGIN};
  auto registry = PluginRegistry::Discover(options);
  ASSERT_EQ(registry->plugins().size(), 1u) << registry->DescribeSearch();
  EXPECT_EQ(registry->plugins()[0]->api()->abi_minor, 0);
  EXPECT_EQ(registry->plugins()[0]->whole_model_api(), nullptr);
  EXPECT_TRUE(registry->plugins()[0]->whole_model_devices().empty());
  EXPECT_FALSE(registry->ForWholeModelDevice("micro").ok());
}

TEST(MicroPlugin, APluginBuiltForAbi21KeepsItsWholeModelTableWithoutASample) {
  PluginRegistry::Options options;
  options.search_paths = {HETRT_TEST_ABI21_PLUGIN};
  auto registry = PluginRegistry::Discover(options);
  ASSERT_EQ(registry->plugins().size(), 1u) << registry->DescribeSearch();
  const Plugin& plugin = *registry->plugins()[0];
  EXPECT_EQ(plugin.api()->abi_minor, 1);
  ASSERT_NE(plugin.whole_model_api(), nullptr);
  EXPECT_FALSE(HETRT_STRUCT_HAS(plugin.whole_model_api(), hetrt_whole_model_api_t, sample));
  EXPECT_EQ(plugin.whole_model_devices(), std::vector<std::string>{"abi21"});
  HETRT_ASSERT_OK(registry->ForWholeModelDevice("abi21").status());
  // Opening a model goes through its 2.1 calls; the plugin declines every file.
  auto opened = WholeModelExecutor::Open(HETRT_TEST_ABI21_PLUGIN, "abi21", {}, *registry);
  ASSERT_FALSE(opened.ok());
  EXPECT_NE(opened.status().message().find("abi21 opens no models"), std::string::npos) << opened.status().message();
}

TEST(MicroCli, ProjectForABoardThenRunQemuPrintsOutputsAndInstructions) {
  HETRT_REQUIRE_QEMU();
  const testing::MlfFixture f = testing::MlfFixtureNamed("add3_graph");
  if (!fs::exists(f.tar)) HETRT_MISSING("fixtures", "no add3 graph MLF fixture under " << testing::FixturesRoot());
  const std::string dir = ::testing::TempDir() + "/hetrt_cli_project_" + std::to_string(getpid());
  fs::remove_all(dir);
  int rc = 0;
  std::string out = Cli("micro project " + f.tar + " -o " + dir + " --board " + kBoard + " --inputs " + f.inputs, &rc);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("standalone.elf: .text "), std::string::npos) << out;
  EXPECT_NE(out.find("host-driven.elf: .text "), std::string::npos) << out;
  out = Cli("micro run-qemu " + dir, &rc);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("hetrt: model add3 on mps2-an386"), std::string::npos) << out;
  EXPECT_NE(out.find("instructions (QEMU -icount shift=8): init "), std::string::npos) << out;
  const auto outputs = PrintedOutputs(out);
  ASSERT_EQ(outputs.count(0), 1u) << out;
  ExpectOutputMatches(outputs.at(0), f.outputs);
  out = Cli("run " + f.tar + " --device micro --board " + kBoard + " --inputs " + f.inputs, &rc);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("instructions (QEMU -icount)"), std::string::npos) << out;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace hetrt
