// The CLI against a hostile user: directories where files belong, absurd
// JSON, out-of-range numbers, broken plugins and plugin paths. Every case must
// end with exit code 1 and a message, never an abort or a hang.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "hetrt/sdk/byte_stream.h"
#include "hetrt/formats/graph.h"
#include "test_support.h"

namespace hetrt {
namespace {

struct Outcome {
  int exit_code = -1;  // -1: killed by a signal
  int signal = 0;
  std::string output;  // stdout + stderr
};

Outcome RunCli(const std::string& args, const std::string& prefix = "") {
  const std::string log = ::testing::TempDir() + "/hetrt_cli_" + std::to_string(getpid()) + ".log";
  const std::string cmd = prefix + " " + HETRT_CLI + " " + args + " > " + log + " 2>&1";
  const int status = std::system(cmd.c_str());
  Outcome o;
  o.output = testing::ReadText(log);
  std::remove(log.c_str());
  if (WIFEXITED(status)) o.exit_code = WEXITSTATUS(status);
  // /bin/sh reports a child killed by a signal as 128 + signal.
  if (o.exit_code > 128) o.signal = o.exit_code - 128;
  return o;
}

std::string TempDirectory(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "/hetrt_cli_" + std::to_string(getpid()) + "_" + name;
  std::filesystem::create_directories(dir);
  return dir;
}

TEST(CliHardening, ADirectoryWhereAFileBelongsIsAnErrorNotAnAbort) {
  HETRT_REQUIRE_FIXTURE(dir, "add3");
  const std::string mlf = testing::FixturesRoot() + "/tvm-0.18/mlf/add3_graph_mlf.tar";
  const std::string d = TempDirectory("dir");
  const std::string out = TempDirectory("out");
  const std::vector<std::string> commands = {
      "run " + dir + "/deploy.so --inputs " + d,
      "run " + dir + "/lib.so --graph " + d,
      "run " + dir + "/lib.so --graph " + dir + "/graph.json --params " + d,
      "run " + dir + "/deploy.so --input a=" + d,
      "bench " + dir + "/deploy.so --inputs " + d + " --repeat 1",
      "micro project " + mlf + " -o " + out + "/p --inputs " + d,
      "export -o " + out + "/x.so --host " + dir + "/lib.so --graph " + d,
      "export -o " + out + "/x.tar --host " + dir + "/lib.so --device-module opencl=" + d,
  };
  for (const std::string& args : commands) {
    SCOPED_TRACE(args);
    const Outcome o = RunCli(args);
    EXPECT_EQ(o.signal, 0) << o.output;
    EXPECT_EQ(o.exit_code, 1) << o.output;
    EXPECT_NE(o.output.find("is a directory"), std::string::npos) << o.output;
  }
}

TEST(CliHardening, DeeplyNestedGraphJsonIsRefusedWithoutBallooning) {
  HETRT_REQUIRE_FIXTURE(dir, "add3");
  const std::string nested = ::testing::TempDir() + "/hetrt_nested_" + std::to_string(getpid()) + ".json";
  {
    std::ofstream f(nested);
    f << std::string(50 << 20, '[');
  }
  // 512 MB of address space is ~10x the file: enough only if nothing balloons.
  // (Sanitizers reserve terabytes of shadow address space: no limit there.)
#ifdef HETRT_SANITIZED
  const std::string limit;
#else
  const std::string limit = "ulimit -v 524288;";
#endif
  const Outcome o = RunCli("run " + dir + "/lib.so --graph " + nested, limit);
  std::remove(nested.c_str());
  EXPECT_EQ(o.exit_code, 1) << o.output;
  EXPECT_NE(o.output.find("nests deeper than"), std::string::npos) << o.output;
}

TEST(CliHardening, OutOfRangeNumbersGetAShortClearMessage) {
  HETRT_REQUIRE_FIXTURE(dir, "add3");
  for (const char* flag : {"--threads 0", "--repeat 0", "--threads 100000", "--repeat -3"}) {
    SCOPED_TRACE(flag);
    const Outcome o = RunCli("run " + dir + "/deploy.so " + std::string(flag));
    EXPECT_NE(o.exit_code, 0);
    EXPECT_NE(o.output.find("must be an integer between"), std::string::npos) << o.output;
    EXPECT_LT(o.output.size(), 400u) << o.output;  // no 300-digit bound
  }
}

TEST(CliHardening, PluginsCheckNamesAPluginThatCrashesInsteadOfDying) {
  const std::string crash = std::string(HETRT_TEST_PLUGINS_DIR) + "/crash_in_create";
  // handle_segv=0: under AddressSanitizer the child must die of the signal too.
  // detect_leaks=0: the listing's registry is destroyed at exit, which unloads
  // the real drivers (lavapipe, PoCL); their one-time allocations then come
  // from "<unknown module>" and no suppression can name them. The plugins' own
  // release of everything is leak-checked where registries are destroyed in
  // the suites (TwoRegistriesHoldIndependentInstances, PluginOwnership).
  const Outcome o = RunCli("plugins --check", "ASAN_OPTIONS=handle_segv=0:detect_leaks=0 HETRT_PLUGIN_PATH=" + crash);
  EXPECT_EQ(o.exit_code, 0) << o.output;
  EXPECT_NE(o.output.find("crashed while loading: killed by signal 11"), std::string::npos) << o.output;
  EXPECT_NE(o.output.find("cpu "), std::string::npos) << "the other plugins are still listed:\n" << o.output;
}

TEST(CliHardening, UnusablePluginPathEntriesGiveOneWarningLineAndTheDefaultFolderOnce) {
  HETRT_REQUIRE_FIXTURE(dir, "add3");
  const std::filesystem::path plugins =
      std::filesystem::path(HETRT_CLI).parent_path().parent_path() / "lib/hetrt-plugins";
  // The default folder named again (through a different spelling) is searched once.
  const std::string path = "/no/such/folder:" + plugins.string() + "/.:" + plugins.string();
  const Outcome o = RunCli("run " + dir + "/deploy.so --inputs " + dir + "/inputs.params", "HETRT_PLUGIN_PATH=" + path);
  EXPECT_EQ(o.exit_code, 0) << o.output;
  size_t warnings = 0;
  for (size_t at = o.output.find("hetrt: warning: plugin path"); at != std::string::npos;
       at = o.output.find("hetrt: warning: plugin path", at + 1))
    ++warnings;
  EXPECT_EQ(warnings, 1u) << o.output;
  EXPECT_NE(o.output.find("/no/such/folder: plugin folder does not exist"), std::string::npos) << o.output;
  EXPECT_EQ(o.output.find("already loaded"), std::string::npos) << o.output;
  const Outcome listing = RunCli("plugins", "HETRT_PLUGIN_PATH=" + plugins.string());
  EXPECT_EQ(listing.output.find("already loaded"), std::string::npos) << listing.output;
}

// "system-lib" names the model linked into the running program; the CLI has
// none, and says what would be needed instead of looking for a file.
TEST(CliHardening, RunSystemLibWithoutALinkedModelSaysWhatIsMissing) {
  for (const std::string model : {"system-lib", "system-lib:m1_"}) {
    const Outcome o = RunCli("run " + model);
    EXPECT_EQ(o.exit_code, 1) << o.output;
    EXPECT_NE(o.output.find("registered no symbols: link host code compiled with TVM's --system-lib"),
              std::string::npos)
        << o.output;
  }
}

TEST(FileReading, DirectoriesStreamsAndMissingFilesAreNamedErrors) {
  const std::string d = TempDirectory("read");
  auto dir = ReadFileBytes(d);
  ASSERT_FALSE(dir.ok());
  EXPECT_NE(dir.status().message().find("is a directory"), std::string::npos);
  auto missing = ReadFileBytes(d + "/nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  // An endless stream stops at the bound instead of filling memory.
  auto endless = ReadFileBytes("/dev/zero", 1 << 20);
  ASSERT_FALSE(endless.ok());
  EXPECT_EQ(endless.status().code(), StatusCode::kResourceExhausted) << endless.status().message();
  // A regular file over the bound is refused before it is read.
  const std::string big = d + "/big";
  {
    std::ofstream f(big);
    f << std::string(4096, 'x');
  }
  EXPECT_EQ(ReadFileBytes(big, 1024).status().code(), StatusCode::kResourceExhausted);
  HETRT_ASSERT_OK_AND_ASSIGN(auto bytes, ReadFileBytes(big));
  EXPECT_EQ(bytes.size(), 4096u);
}

TEST(GraphJsonLimits, NestingAndSizeAreCheckedBeforeParsing) {
  auto deep = ParseGraphJson(std::string(100000, '['), "deep.json");
  ASSERT_FALSE(deep.ok());
  EXPECT_NE(deep.status().message().find("deep.json: JSON nests deeper than 64 levels at byte 64"), std::string::npos)
      << deep.status().message();
  // Brackets inside strings do not count.
  auto strings = ParseGraphJson("{\"nodes\": \"" + std::string(1000, '[') + "\"}", "strings.json");
  ASSERT_FALSE(strings.ok());
  EXPECT_EQ(strings.status().message().find("nests deeper"), std::string::npos) << strings.status().message();
}

TEST(Aot, MlfOutputsCarryTheModelsShapeFromItsRelaySignature) {
  const std::string mlf = testing::FixturesRoot() + "/tvm-0.18/mlf";
  if (!std::filesystem::exists(mlf + "/mlp_aot_mlf.tar")) HETRT_MISSING("fixtures", "no MLF fixtures under " << mlf);
  for (const std::string model : {"add3", "mlp"}) {
    SCOPED_TRACE(model);
    const std::string saved = ::testing::TempDir() + "/hetrt_aot_" + std::to_string(getpid()) + ".params";
    const Outcome o = RunCli("run " + mlf + "/" + model + "_aot_mlf.tar --inputs " + mlf + "/" + model +
                             "_inputs.params --save-outputs " + saved);
    ASSERT_EQ(o.exit_code, 0) << o.output;
    HETRT_ASSERT_OK_AND_ASSIGN(auto ours, LoadParamDictFile(saved));
    HETRT_ASSERT_OK_AND_ASSIGN(auto tvm, LoadParamDictFile(mlf + "/" + model + "_outputs.params"));
    ASSERT_EQ(ours.size(), tvm.size());
    for (size_t i = 0; i < ours.size(); ++i) EXPECT_EQ(ours[i].tensor.shape(), tvm[i].tensor.shape());
    std::remove(saved.c_str());
  }
}

}  // namespace
}  // namespace hetrt

namespace hetrt {
namespace {

// `hetrt generate` on TVM v0.25's tiny_llama: TVM's greedy tokens, and bad
// input answered with exit code 1 and a message naming what is wrong.
std::string TinyLlama() {
  const std::string dir = testing::FixturesRoot() + "/tvm-0.25-llm/tiny_llama";
  return std::filesystem::is_directory(dir) ? dir : "";
}

TEST(CliGenerate, GreedyTokensAreTvmsAndBadInputIsAMessage) {
  const std::string dir = TinyLlama();
  if (dir.empty()) HETRT_MISSING("fixtures", "tvm-0.25-llm/tiny_llama not under " << testing::FixturesRoot());
  Outcome o = RunCli("generate " + dir + " --prompt-ids 197,93,168,51,241,22,67 --max-tokens 13");
  ASSERT_EQ(o.exit_code, 0) << o.output;
  EXPECT_NE(o.output.find("sequence 0: 22,204,96,241,179,195,41,29,47,104,170,195,170"), std::string::npos) << o.output;
  EXPECT_NE(o.output.find("time to first token"), std::string::npos) << o.output;
  struct Bad {
    std::string args, says;
  };
  for (const Bad& bad :
       {Bad{"--prompt-ids 1,256 --max-tokens 2", "outside the vocabulary"},
        Bad{"--prompt-ids 1,x,3", "comma-separated token ids"}, Bad{"--prompt-ids 1 --max-tokens 200", "context"},
        Bad{"--prompt-ids 1 --temperature -1", "temperature"},
        Bad{"--prompt-ids 1 --max-batch-size 8", "at most 4 sequences"}}) {
    o = RunCli("generate " + dir + " " + bad.args);
    EXPECT_EQ(o.exit_code, 1) << bad.args << ": " << o.output;
    EXPECT_NE(o.output.find(bad.says), std::string::npos) << bad.args << ": " << o.output;
  }
  o = RunCli("generate " + TempDirectory("not_a_model") + " --prompt-ids 1");
  EXPECT_EQ(o.exit_code, 1) << o.output;
  EXPECT_NE(o.output.find("tensor-cache.json"), std::string::npos) << o.output;
  o = RunCli("run " + dir);  // the tensor-model front door names the LLM one
  EXPECT_EQ(o.exit_code, 1) << o.output;
  EXPECT_NE(o.output.find("hetrt generate"), std::string::npos) << o.output;
}

}  // namespace
}  // namespace hetrt
