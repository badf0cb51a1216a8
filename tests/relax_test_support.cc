#include "relax_test_support.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "hetrt/base/dtype.h"
#include "hetrt/module/module_loader.h"

namespace hetrt::testing {

std::vector<std::string> RelaxFixtureNames() {
  std::vector<std::string> names;
  const std::filesystem::path dir = std::filesystem::path(FixturesRoot()) / "tvm-0.18-relax";
  if (!std::filesystem::is_directory(dir)) return names;
  for (const auto& entry : std::filesystem::directory_iterator(dir))
    if (entry.is_directory() && std::filesystem::exists(entry.path() / "meta.json"))
      names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

std::string RelaxFixtureDir(const std::string& name) {
  const std::filesystem::path dir = std::filesystem::path(FixturesRoot()) / "tvm-0.18-relax" / name;
  return std::filesystem::is_directory(dir) ? dir.string() : std::string();
}

nlohmann::json ReadRelaxMeta(const std::string& dir) { return nlohmann::json::parse(ReadText(dir + "/meta.json")); }

std::vector<uint8_t> RelaxImageOf(const std::string& deploy_so) {
  LoadOptions options;
  options.keep_unloadable = true;
  auto root = LoadModuleFile(deploy_so, options);
  if (!root.ok()) return {};
  auto bytes = (*root)->SaveToBinary();
  if (!bytes.ok() || bytes->size() < 8) return {};
  return std::vector<uint8_t>(bytes->begin() + 8, bytes->end());
}

void ExpectClose(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  ASSERT_EQ(DataTypeToString(got.dtype()), DataTypeToString(want.dtype())) << what;
  const DLDataType d = got.dtype();
  if (d.code == kDLFloat && d.bits == 32) {
    size_t bad = 0;
    for (int64_t i = 0; i < got.num_elements(); ++i) {
      const double g = got.data_as<float>()[i], w = want.data_as<float>()[i];
      if (!(std::abs(g - w) <= 1e-5 + 1e-4 * std::abs(w)) && bad++ < 5)
        ADD_FAILURE() << what << "[" << i << "]: got " << g << ", want " << w;
    }
    EXPECT_EQ(bad, 0u) << what;
    return;
  }
  ASSERT_EQ(got.nbytes(), want.nbytes());
  EXPECT_EQ(0, std::memcmp(got.data(), want.data(), static_cast<size_t>(got.nbytes()))) << what;
}

uint32_t RelaxProgram::Packed(const std::string& name) {
  RelaxFunction f;
  f.kind = RelaxFunction::Kind::kPackedFunc;
  f.name = name;
  exe_.functions.push_back(f);
  return static_cast<uint32_t>(exe_.functions.size() - 1);
}

uint32_t RelaxProgram::Function(const std::string& name, std::vector<std::string> params, int64_t registers) {
  RelaxFunction f;
  f.kind = RelaxFunction::Kind::kVmFunc;
  f.name = name;
  f.num_args = static_cast<int64_t>(params.size());
  f.param_names = std::move(params);
  f.register_file_size = registers;
  f.start_instr = static_cast<int64_t>(exe_.instructions.size());
  exe_.functions.push_back(f);
  current_ = static_cast<uint32_t>(exe_.functions.size() - 1);
  return current_;
}

void RelaxProgram::End() { exe_.functions[current_].end_instr = static_cast<int64_t>(exe_.instructions.size()); }

uint32_t RelaxProgram::AddConstant(RelaxConstant c) {
  exe_.constants.push_back(std::move(c));
  return static_cast<uint32_t>(exe_.constants.size() - 1);
}

uint32_t RelaxProgram::String(const std::string& s) {
  RelaxConstant c;
  c.type = RelaxConstant::Type::kString;
  c.string = s;
  return AddConstant(std::move(c));
}

uint32_t RelaxProgram::DType(DLDataType t) {
  RelaxConstant c;
  c.type = RelaxConstant::Type::kDataType;
  c.dtype = t;
  return AddConstant(std::move(c));
}

uint32_t RelaxProgram::Shape(std::vector<int64_t> dims) {
  RelaxConstant c;
  c.type = RelaxConstant::Type::kShape;
  c.shape = std::move(dims);
  return AddConstant(std::move(c));
}

void RelaxProgram::Call(uint32_t function, int64_t dst, std::vector<RelaxArg> args) {
  RelaxInstruction in;
  in.op = RelaxInstruction::Op::kCall;
  in.reg = dst;
  in.operand = function;
  in.args_begin = static_cast<uint32_t>(exe_.args.size());
  in.num_args = static_cast<uint32_t>(args.size());
  exe_.args.insert(exe_.args.end(), args.begin(), args.end());
  exe_.instructions.push_back(in);
}

void RelaxProgram::Ret(int64_t reg) {
  RelaxInstruction in;
  in.op = RelaxInstruction::Op::kRet;
  in.reg = reg;
  exe_.instructions.push_back(in);
}

void RelaxProgram::Goto(int64_t offset) {
  RelaxInstruction in;
  in.op = RelaxInstruction::Op::kGoto;
  in.operand = offset;
  exe_.instructions.push_back(in);
}

void RelaxProgram::If(int64_t cond, int64_t false_offset) {
  RelaxInstruction in;
  in.op = RelaxInstruction::Op::kIf;
  in.reg = cond;
  in.operand = false_offset;
  exe_.instructions.push_back(in);
}

Result<std::shared_ptr<Module>> RelaxProgram::Root() const {
  HETRT_ASSIGN_OR_RETURN(std::vector<uint8_t> image, WriteRelaxExecutable(exe_));
  HETRT_ASSIGN_OR_RETURN(RelaxExecutable parsed, ParseRelaxExecutable(image, "hand-made executable"));
  std::shared_ptr<Module> root = std::make_shared<RelaxExecutableModule>(
      std::make_shared<const RelaxExecutable>(std::move(parsed)), std::move(image));
  return root;
}

Result<std::unique_ptr<RelaxVirtualMachine>> RelaxProgram::Build(const RelaxVirtualMachine::Options& options) const {
  HETRT_ASSIGN_OR_RETURN(std::shared_ptr<Module> root, Root());
  return RelaxVirtualMachine::Create(root, options);
}

}  // namespace hetrt::testing
