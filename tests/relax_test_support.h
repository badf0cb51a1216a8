// Helpers of the Relax VM tests: the Relax fixtures (../shared/fixtures/
// tvm-0.18-relax), tolerant comparison, and RelaxProgram, which writes small
// executables by hand (through the real encoder and parser) for bytecode the
// fixtures do not cover and for corrupting field by field.
#pragma once

#include <array>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "hetrt/relax/vm.h"
#include "test_support.h"

namespace hetrt::testing {

// relax_* folder names under <fixtures>/tvm-0.18-relax, sorted.
std::vector<std::string> RelaxFixtureNames();
// The folder of one, or "" when missing.
std::string RelaxFixtureDir(const std::string& name);
nlohmann::json ReadRelaxMeta(const std::string& dir);
// The executable image inside a Relax deploy.so (the blob entry's payload).
std::vector<uint8_t> RelaxImageOf(const std::string& deploy_so);

// Floats within rtol 1e-4, atol 1e-5 (the fixtures' tolerance); integers exactly.
void ExpectClose(const Tensor& got, const Tensor& want, const std::string& what);

class RelaxProgram {
 public:
  uint32_t Packed(const std::string& name);
  // Packed("vm.builtin." + name) for each: auto [a, b] = p.Builtins("copy", "make_tuple").
  template <class... Names>
  std::array<uint32_t, sizeof...(Names)> Builtins(const Names&... names) {
    return {Packed(std::string("vm.builtin.") + names)...};
  }
  // Starts a VM function; its instructions are the calls up to End().
  uint32_t Function(const std::string& name, std::vector<std::string> params, int64_t registers);
  void End();
  uint32_t AddConstant(RelaxConstant c);
  uint32_t String(const std::string& s);
  uint32_t DType(DLDataType t);
  uint32_t Shape(std::vector<int64_t> dims);
  static RelaxArg Reg(int64_t r) { return {RelaxArg::Kind::kRegister, r}; }
  static RelaxArg Imm(int64_t v) { return {RelaxArg::Kind::kImmediate, v}; }
  static RelaxArg Const(uint32_t c) { return {RelaxArg::Kind::kConstIdx, c}; }
  static RelaxArg Func(uint32_t f) { return {RelaxArg::Kind::kFuncIdx, f}; }
  void Call(uint32_t function, int64_t dst, std::vector<RelaxArg> args);
  void Ret(int64_t reg);
  void Goto(int64_t offset);
  void If(int64_t cond, int64_t false_offset);
  RelaxExecutable& executable() { return exe_; }
  // Encodes, parses back and creates a VM (no library: builtins only; on the CPU by default).
  // The executable, written and parsed back, as a module tree's root.
  Result<std::shared_ptr<Module>> Root() const;
  Result<std::unique_ptr<RelaxVirtualMachine>> Build(const RelaxVirtualMachine::Options& options = {}) const;

 private:
  RelaxExecutable exe_;
  uint32_t current_ = 0;
};

}  // namespace hetrt::testing

// Skips (no GPU) or fails/skips per HETRT_REQUIRE when a device is missing.
#define HETRT_REQUIRE_DEVICE_OR_RETURN(device)                                                                   \
  do {                                                                                                           \
    auto found = ::hetrt::PluginRegistry::Global().ForDevice(device);                                           \
    if (!found.ok()) {                                                                                           \
      if ((device).device_type == kDLCUDA) GTEST_SKIP() << "no GPU: " << found.status().message();              \
      HETRT_MISSING(::hetrt::DeviceTypeName((device).device_type), "no " << ::hetrt::DeviceToString(device)     \
                                                                         << ": " << found.status().message()); \
    }                                                                                                            \
  } while (0)
