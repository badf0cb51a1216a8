// TVM's Relax VM executable image (the payload of a "relax.Executable" blob
// entry, docs/relax-vm.md (b)/(c)): function table, constant pool and
// bytecode. The reader checks everything a VM later trusts (every register,
// constant, function index and jump target against its function), so the
// interpreter never bounds-checks on its hot path.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hetrt/sdk/byte_stream.h"
#include "hetrt/base/library_abi.h"
#include "hetrt/base/tensor.h"

namespace hetrt {

inline constexpr uint64_t kRelaxExecutableMagic = 0xD225DE2F4214151DULL;
// V2 (TVM v0.23+): the same image with a memory-scope section before the constants.
inline constexpr uint64_t kRelaxExecutableMagicV2 = 0xD225DE2F4214151EULL;
inline constexpr const char* kRelaxExecutableVersion = "0.14";
// Special registers (TVM's bytecode.h): reads of %void give null, %vm the VM itself.
inline constexpr int64_t kRelaxVoidRegister = int64_t{1} << 54;
inline constexpr int64_t kRelaxVmRegister = (int64_t{1} << 54) + 1;
// Far above any real model; bounds what a corrupt file can make the VM allocate.
inline constexpr int64_t kRelaxMaxRegisters = int64_t{1} << 20;

struct RelaxFunction {
  enum class Kind : int32_t { kPackedFunc = 0, kVmFunc = 1, kVmTirFunc = 2 };
  Kind kind = Kind::kPackedFunc;
  std::string name;
  int64_t start_instr = 0;  // [start_instr, end_instr): instruction indices (kVmFunc)
  int64_t end_instr = 0;
  int64_t num_args = -2;  // -2: TVM's "undefined" marker of packed functions
  int64_t register_file_size = 0;
  std::vector<std::string> param_names;
};

struct RelaxConstant {
  enum class Type : int32_t { kTensor = 0, kDataType = 1, kShape = 2, kString = 3, kInt = 4, kFloat = 5 };
  Type type = Type::kInt;
  Tensor tensor;  // kTensor: host memory
  DLDataType dtype{};
  std::vector<int64_t> shape;
  std::string string;
  int64_t int_value = 0;
  double float_value = 0;
};

// A tensor constant's memory scope (V2 images; "global" unless a texture
// scope was chosen for it).
struct RelaxMemoryScope {
  int64_t constant = 0;
  std::string scope;
};

struct RelaxArg {
  enum class Kind : uint8_t { kRegister = 0, kImmediate = 1, kConstIdx = 2, kFuncIdx = 3 };
  Kind kind = Kind::kRegister;
  int64_t value = 0;  // sign-extended from the 56-bit field
};

struct RelaxInstruction {
  enum class Op : int64_t { kCall = 1, kRet = 2, kGoto = 3, kIf = 4 };
  Op op = Op::kRet;
  int64_t reg = 0;       // Call: dst; Ret: result; If: cond
  int64_t operand = 0;   // Call: func_idx; Goto: pc_offset; If: false_offset
  uint32_t args_begin = 0;  // Call: its arguments in RelaxExecutable::args
  uint32_t num_args = 0;
};

struct RelaxExecutable {
  // The constant tags follow the library's ABI (docs/tvm-ffi.md (a)): tensor,
  // dtype, shape, string, int, float are 0-5 for packed functions, the type
  // indices 70, 5, 69, 65, 1, 3 for tvm-ffi.
  LibraryAbi abi = LibraryAbi::kPackedFunc;
  bool v2 = false;  // magic ...151E, with memory_scopes (tvm-ffi ABI only)
  std::vector<RelaxMemoryScope> memory_scopes;
  std::string version = kRelaxExecutableVersion;
  std::vector<RelaxFunction> functions;
  std::vector<RelaxConstant> constants;
  std::vector<RelaxInstruction> instructions;
  std::vector<RelaxArg> args;

  // Index of the function of that name; -1 when absent.
  int64_t FindFunction(std::string_view name) const;
  std::span<const RelaxArg> ArgsOf(const RelaxInstruction& instruction) const {
    return {args.data() + instruction.args_begin, instruction.num_args};
  }
};

// Parses and validates an image. `source` names it in errors, which also name
// the function and instruction at fault.
Result<RelaxExecutable> ParseRelaxExecutable(std::span<const uint8_t> image, const std::string& source,
                                             LibraryAbi abi = LibraryAbi::kPackedFunc);
// The image TVM's Executable::SaveToBinary writes (for export and for tests),
// with the tags and magic of `executable.abi` and `executable.v2`.
Result<std::vector<uint8_t>> WriteRelaxExecutable(const RelaxExecutable& executable);
// A listing in the shape of TVM's as_text(), one function after another.
std::string DisassembleRelaxExecutable(const RelaxExecutable& executable);
// "tensor float32[128, 784]", "shape [1, 784]", "string \"global\"", ...
std::string DescribeRelaxConstant(const RelaxConstant& constant);

}  // namespace hetrt
