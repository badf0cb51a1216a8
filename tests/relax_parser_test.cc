// The Relax executable reader against executables corrupted field by field
// (each refusal names what is wrong and where), every truncation, and the
// CLI on Relax models (run, inspect, several --inputs, --function).
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>

#include "hetrt/formats/params.h"
#include "hetrt/sdk/ndarray_format.h"
#include "hetrt/formats/relax_executable.h"
#include "hetrt/module/module_loader.h"
#include <nlohmann/json.hpp>

#include "relax_test_support.h"

namespace hetrt::testing {
namespace {

// A small executable with every instruction kind and constant type.
RelaxExecutable SmallExecutable() {
  RelaxProgram p;
  const uint32_t read_if = p.Packed("vm.builtin.read_if_cond");
  const uint32_t copy = p.Packed("vm.builtin.copy");
  p.String("global");
  p.DType({kDLFloat, 32, 1});
  p.Shape({2, 3});
  RelaxConstant i, f, t;
  i.type = RelaxConstant::Type::kInt;
  i.int_value = int64_t{1} << 60;
  f.type = RelaxConstant::Type::kFloat;
  f.float_value = 0.5;
  t.type = RelaxConstant::Type::kTensor;
  t.tensor = Random({2, 2}, 3);
  p.executable().constants.insert(p.executable().constants.end(), {i, f, t});
  p.Function("main", {"c", "x"}, 4);
  p.Call(read_if, 2, {p.Reg(0)});
  p.If(2, 3);
  p.Call(copy, 3, {p.Reg(1)});
  p.Goto(2);
  p.Call(copy, 3, {p.Const(5)});
  p.Ret(3);
  p.End();
  return p.executable();
}

Status Parse(const RelaxExecutable& exe) {
  auto image = WriteRelaxExecutable(exe);
  if (!image.ok()) return image.status();
  return ParseRelaxExecutable(*image, "corrupt.so").status();
}

void ExpectRefused(const RelaxExecutable& exe, const std::string& needle) {
  Status s = Parse(exe);
  ASSERT_FALSE(s.ok()) << "accepted; expected an error containing '" << needle << "'";
  EXPECT_NE(s.message().find(needle), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("corrupt.so"), std::string::npos) << s.message();
}

RelaxInstruction& MainInstruction(RelaxExecutable& exe, int64_t index) {
  return exe.instructions[static_cast<size_t>(exe.functions[static_cast<size_t>(exe.FindFunction("main"))].start_instr +
                                              index)];
}

RelaxArg& FirstArg(RelaxExecutable& exe, int64_t instruction) {
  return exe.args[MainInstruction(exe, instruction).args_begin];
}

// Each corruption, applied to a fresh SmallExecutable, is refused with its text.
using Corruption = std::pair<std::function<void(RelaxExecutable&)>, const char*>;
void ExpectEachRefused(const std::vector<Corruption>& corruptions) {
  for (const auto& [corrupt, needle] : corruptions) {
    RelaxExecutable exe = SmallExecutable();
    corrupt(exe);
    ExpectRefused(exe, needle);
  }
}

TEST(RelaxParser, TheSmallExecutableRoundTrips) {
  const RelaxExecutable exe = SmallExecutable();
  HETRT_ASSERT_OK_AND_ASSIGN(auto image, WriteRelaxExecutable(exe));
  HETRT_ASSERT_OK_AND_ASSIGN(RelaxExecutable parsed, ParseRelaxExecutable(image, "small"));
  HETRT_ASSERT_OK_AND_ASSIGN(auto again, WriteRelaxExecutable(parsed));
  EXPECT_EQ(image, again);
  const std::string text = DisassembleRelaxExecutable(parsed);
  EXPECT_NE(text.find("call  vm.builtin.read_if_cond in: %0 dst: %2"), std::string::npos) << text;
  EXPECT_NE(text.find("if    %2, 3"), std::string::npos) << text;
  EXPECT_NE(text.find("c[5]"), std::string::npos) << text;
}

TEST(RelaxParser, EveryTruncationIsRefused) {
  HETRT_ASSERT_OK_AND_ASSIGN(auto image, WriteRelaxExecutable(SmallExecutable()));
  for (size_t n = 0; n < image.size(); ++n) {
    auto r = ParseRelaxExecutable({image.data(), n}, "truncated");
    ASSERT_FALSE(r.ok()) << "accepted " << n << " of " << image.size() << " bytes";
  }
  image.push_back(0);
  auto r = ParseRelaxExecutable(image, "trailing");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("trailing byte"), std::string::npos) << r.status().message();
}

TEST(RelaxParser, HeaderAndTablesAreChecked) {
  HETRT_ASSERT_OK_AND_ASSIGN(auto image, WriteRelaxExecutable(SmallExecutable()));
  auto bad_magic = image;
  bad_magic[0] ^= 1;
  auto r = ParseRelaxExecutable(bad_magic, "corrupt.so");
  EXPECT_NE(r.status().message().find("not a Relax VM executable"), std::string::npos) << r.status().message();

  RelaxExecutable exe = SmallExecutable();
  exe.version = "0.15";
  EXPECT_EQ(Parse(exe).code(), StatusCode::kUnimplemented);
  ExpectRefused(exe, "version '0.15'");

  ExpectEachRefused({
      {[](RelaxExecutable& e) { e.functions[0].kind = static_cast<RelaxFunction::Kind>(7); }, "kind 7"},
      {[](RelaxExecutable& e) { e.functions[2].kind = RelaxFunction::Kind::kVmTirFunc; }, "kVMTIRFunc"},
      {[](RelaxExecutable& e) { e.functions[1].name = e.functions[0].name; }, "appears twice"},
      {[](RelaxExecutable& e) { e.functions[2].end_instr = 99; }, "not inside the code"},
      {[](RelaxExecutable& e) { e.functions[2].start_instr = e.functions[2].end_instr; }, "not inside the code"},
      {[](RelaxExecutable& e) { e.functions[2].num_args = 3; }, "num_args 3 but 2 parameter names"},
      {[](RelaxExecutable& e) { e.functions[2].register_file_size = 1; }, "register_file_size 1"},
      {[](RelaxExecutable& e) { e.functions[2].register_file_size = int64_t{1} << 40; }, "register_file_size"},
      // The ret becomes a call: main runs off its end.
      {[](RelaxExecutable& e) { MainInstruction(e, 5) = {RelaxInstruction::Op::kCall, 3, 1, 0, 0}; },
       "runs past its end"},
  });
}

TEST(RelaxParser, ConstantsAreChecked) {
  ExpectEachRefused({
      {[](RelaxExecutable& e) { e.constants[1].type = static_cast<RelaxConstant::Type>(9); }, "unknown constant tag 9"},
      {[](RelaxExecutable& e) { e.constants[2].shape.assign(65, 1); }, "rank 65"},
  });
  // A tensor constant saved as if on a GPU.
  HETRT_ASSERT_OK_AND_ASSIGN(auto image, WriteRelaxExecutable(SmallExecutable()));
  const uint64_t magic = sdk::kNDArrayMagic;
  auto at = std::search(image.begin(), image.end(), reinterpret_cast<const uint8_t*>(&magic),
                        reinterpret_cast<const uint8_t*>(&magic) + 8);
  ASSERT_NE(at, image.end());
  at[16] = 2;
  auto r = ParseRelaxExecutable(image, "corrupt.so");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("constant 5"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("must be on cpu"), std::string::npos) << r.status().message();
}

TEST(RelaxParser, InstructionsAreCheckedNamingTheFunctionAndInstruction) {
  using Op = RelaxInstruction::Op;
  ExpectEachRefused({
      {[](RelaxExecutable& e) { FirstArg(e, 0).value = 99; },
       "function 'main' instruction 0 (call) of 'vm.builtin.read_if_cond': argument 0: register 99"},
      {[](RelaxExecutable& e) { FirstArg(e, 4).value = 6; },
       "instruction 4 (call) of 'vm.builtin.copy': argument 0: constant index 6 out of range"},
      {[](RelaxExecutable& e) { FirstArg(e, 4) = RelaxProgram::Func(3); }, "function index 3 out of range"},
      {[](RelaxExecutable& e) { FirstArg(e, 4).kind = static_cast<RelaxArg::Kind>(5); }, "has kind 5"},
      {[](RelaxExecutable& e) { MainInstruction(e, 0).operand = 17; }, "instruction 0 (call): function index 17"},
      {[](RelaxExecutable& e) { MainInstruction(e, 0).reg = 4; }, "destination register 4"},
      {[](RelaxExecutable& e) { MainInstruction(e, 5).reg = -1; }, "instruction 5 (ret): result register -1"},
      {[](RelaxExecutable& e) { MainInstruction(e, 3).operand = 5; }, "instruction 3 (goto): jump by 5 leaves"},
      {[](RelaxExecutable& e) { MainInstruction(e, 3).operand = 0; }, "jump by 0"},
      {[](RelaxExecutable& e) { MainInstruction(e, 1).operand = 1; }, "instruction 1 (if): false branch offset 1"},
      {[](RelaxExecutable& e) { MainInstruction(e, 1).reg = 7; }, "condition register 7"},
      {[](RelaxExecutable& e) { MainInstruction(e, 2).op = static_cast<Op>(9); }, "unknown opcode 9"},
  });
}

TEST(RelaxParser, InstructionWordsMustMatchTheirOffsets) {
  HETRT_ASSERT_OK_AND_ASSIGN(auto image, WriteRelaxExecutable(SmallExecutable()));
  // The code section ends the image: u64 n, n offsets, u64 m, m words. Make
  // the last offset point one word early (into the previous instruction).
  HETRT_ASSERT_OK_AND_ASSIGN(RelaxExecutable exe, ParseRelaxExecutable(image, "ok"));
  size_t words = 0;
  for (const RelaxInstruction& in : exe.instructions)
    words += in.op == RelaxInstruction::Op::kCall ? 4 + in.num_args : in.op == RelaxInstruction::Op::kIf ? 3 : 2;
  const size_t offsets_end = image.size() - 8 * (words + 1);
  int64_t last_offset;
  std::memcpy(&last_offset, &image[offsets_end - 8], 8);
  last_offset -= 1;
  std::memcpy(&image[offsets_end - 8], &last_offset, 8);
  auto r = ParseRelaxExecutable(image, "corrupt.so");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("code: instruction"), std::string::npos) << r.status().message();
}

// ---- a corrupt executable inside a real deploy.so, and the CLI

struct Outcome {
  int exit_code = -1;
  std::string output;
};

Outcome RunCli(const std::string& args) {
  const std::string log = ::testing::TempDir() + "/hetrt_relax_cli_" + std::to_string(getpid()) + ".log";
  const int status = std::system((std::string(HETRT_CLI) + " " + args + " > " + log + " 2>&1").c_str());
  Outcome o;
  o.output = ReadText(log);
  std::remove(log.c_str());
  if (WIFEXITED(status)) o.exit_code = WEXITSTATUS(status);
  return o;
}

TEST(RelaxCli, RunSavesOutputsThatMatchAndInspectShowsTheBytecode) {
  const std::string dir = RelaxFixtureDir("relax_mlp_params");
  if (dir.empty()) HETRT_MISSING("fixtures", "relax_mlp_params not found under " << FixturesRoot());
  const std::string out = ::testing::TempDir() + "/relax_out_" + std::to_string(getpid()) + ".params";
  // Inputs and weights in two files, merged by name.
  Outcome o = RunCli("run " + dir + "/deploy.so --inputs " + dir + "/inputs.params --inputs " + dir +
                     "/params.params --save-outputs " + out);
  ASSERT_EQ(o.exit_code, 0) << o.output;
  EXPECT_NE(o.output.find("output_0 (output_0): shape [1, 10] float32"), std::string::npos) << o.output;
  HETRT_ASSERT_OK_AND_ASSIGN(auto got, LoadParamDictFile(out));
  HETRT_ASSERT_OK_AND_ASSIGN(auto want, LoadParamDictFile(dir + "/outputs.params"));
  ASSERT_EQ(got.size(), 1u);
  ExpectClose(got[0].tensor, want[0].tensor, "output_0");
  std::remove(out.c_str());

  o = RunCli("run " + dir + "/deploy.so --inputs " + dir + "/inputs.params");
  EXPECT_EQ(o.exit_code, 1);
  EXPECT_NE(o.output.find("input 'w1' was not given"), std::string::npos) << o.output;
  o = RunCli("run " + dir + "/deploy.so --function forward --inputs " + dir + "/inputs.params");
  EXPECT_EQ(o.exit_code, 1);
  EXPECT_NE(o.output.find("no function 'forward' (its functions: main)"), std::string::npos) << o.output;

  // Devices are positional: a CPU+OpenCL executable given the CPU alone says what it needs.
  const std::string hetero = RelaxFixtureDir("relax_hetero_opencl");
  o = RunCli("run " + hetero + "/deploy.so --inputs " + hetero + "/inputs.params");
  EXPECT_EQ(o.exit_code, 1);
  EXPECT_NE(o.output.find("allocates on device index 1, but the VM has 1 device(s): cpu:0; pass --device once per "
                          "device the model was built for, in its vdevice order (it copies to opencl:0"),
            std::string::npos)
      << o.output;

  o = RunCli("inspect " + dir + "/deploy.so");
  ASSERT_EQ(o.exit_code, 0) << o.output;
  for (const char* needle : {"format: TVM v0.14-v0.19 Relax VM executable (packed-function ABI)",
                             "relax.Executable: Relax VM executable 0.14", "main(data, w1, b1, w2, b2, w3, b3)",
                             "param data: float32 [1, 784]", "output_0: float32 [1, 10]",
                             "kernels (4): fused_matmul1_add1_relu1 fused_matmul2_add2 fused_matmul_add_relu softmax",
                             "builtins (", "c[0]: ", "call  vm.builtin.check_tensor_info in: %0, i2,"})
    EXPECT_NE(o.output.find(needle), std::string::npos) << needle << "\n" << o.output;
}

TEST(RelaxCli, BenchTimesEveryCalleePerLaneAndWritesATrace) {
  const std::string dir = RelaxFixtureDir("relax_mlp");
  if (dir.empty()) HETRT_MISSING("fixtures", "relax_mlp not found under " << FixturesRoot());
  const std::string trace = ::testing::TempDir() + "/relax_trace_" + std::to_string(getpid()) + ".json";
  Outcome o = RunCli("bench " + dir + "/deploy.so --inputs " + dir + "/inputs.params --repeat 5 --trace " + trace);
  ASSERT_EQ(o.exit_code, 0) << o.output;
  for (const char* needle : {"function 'main': 20 instructions per call", "fused_matmul_add_relu", "softmax",
                             "vm.builtin.alloc_storage", "per kind (mean per call): builtin", "the VM's own loop",
                             "busy per lane (mean per call): host", "ns per instruction"})
    EXPECT_NE(o.output.find(needle), std::string::npos) << needle << "\n" << o.output;
  const auto json = nlohmann::json::parse(ReadText(trace));
  size_t kernels = 0;
  for (const auto& e : json["traceEvents"]) kernels += e.value("cat", "") == "kernel";
  EXPECT_EQ(kernels, 4u);  // one call: four kernels
  std::remove(trace.c_str());
}

TEST(RelaxCli, ACorruptExecutableInADeploySoIsAClearError) {
  const std::string dir = RelaxFixtureDir("relax_mlp");
  if (dir.empty()) HETRT_MISSING("fixtures", "relax_mlp not found under " << FixturesRoot());
  HETRT_ASSERT_OK_AND_ASSIGN(auto bytes, ReadFileBytes(dir + "/deploy.so"));
  // The version string right after the magic: "0.14" -> "9.14".
  const uint64_t magic = kRelaxExecutableMagic;
  auto at = std::search(bytes.begin(), bytes.end(), reinterpret_cast<const uint8_t*>(&magic),
                        reinterpret_cast<const uint8_t*>(&magic) + 8);
  ASSERT_NE(at, bytes.end());
  ASSERT_EQ(std::string(at + 16, at + 20), "0.14");
  at[16] = '9';
  const std::string copy = ::testing::TempDir() + "/relax_corrupt_" + std::to_string(getpid()) + ".so";
  HETRT_ASSERT_OK(WriteFileBytes(copy, bytes));
  auto root = LoadModuleFile(copy);
  ASSERT_FALSE(root.ok());
  EXPECT_NE(root.status().message().find("relax.Executable"), std::string::npos) << root.status().message();
  EXPECT_NE(root.status().message().find("version '9.14'"), std::string::npos) << root.status().message();
  Outcome o = RunCli("run " + copy + " --inputs " + dir + "/inputs.params");
  EXPECT_EQ(o.exit_code, 1) << o.output;
  EXPECT_NE(o.output.find("version '9.14'"), std::string::npos) << o.output;
  std::remove(copy.c_str());
}

}  // namespace
}  // namespace hetrt::testing
