// `hetrt inspect` on a Relax executable: the function table, the constant
// pool, what each function needs (builtins, kernels, parameters as the
// bytecode checks them) and its bytecode.
#include <cstdio>
#include <set>

#include "commands.h"
#include "hetrt/exec/relax_executor.h"

namespace hetrt::cli {

void PrintRelaxSummary(const RelaxExecutableModule& module) {
  const RelaxExecutable& exe = *module.executable();
  std::printf("relax executable: version %s, %zu functions, %zu constants, %zu instructions\n", exe.version.c_str(),
              exe.functions.size(), exe.constants.size(), exe.instructions.size());
  std::printf("functions:\n");
  for (uint32_t i = 0; i < exe.functions.size(); ++i) {
    const RelaxFunction& f = exe.functions[i];
    if (f.kind != RelaxFunction::Kind::kVmFunc) continue;
    std::printf("  %s(", f.name.c_str());
    for (size_t p = 0; p < f.param_names.size(); ++p) std::printf("%s%s", p ? ", " : "", f.param_names[p].c_str());
    std::printf("): %lld registers, %lld instructions\n", static_cast<long long>(f.register_file_size),
                static_cast<long long>(f.end_instr - f.start_instr));
    const RelaxSignature sig = AnalyzeRelaxFunction(exe, i, {});
    for (const RelaxParamInfo& p : sig.params)
      std::printf("    param %s: %s %s (device index %d)\n", p.name.c_str(),
                  p.spec.dtype.code == 255 ? "?" : DataTypeToString(p.spec.dtype).c_str(),
                  p.spec.shape.empty() ? "[?]" : ShapeToString(p.spec.shape).c_str(), p.device_index);
    for (size_t o = 0; o < sig.outputs.size(); ++o)
      std::printf("    output_%zu: %s %s\n", o, DataTypeToString(sig.outputs[o].dtype).c_str(),
                  ShapeToString(sig.outputs[o].shape).c_str());
    std::set<std::string> builtins, kernels, calls;
    for (int64_t pc = f.start_instr; pc < f.end_instr; ++pc) {
      const RelaxInstruction& in = exe.instructions[static_cast<size_t>(pc)];
      if (in.op != RelaxInstruction::Op::kCall) continue;
      const RelaxFunction& callee = exe.functions[static_cast<size_t>(in.operand)];
      if (callee.kind == RelaxFunction::Kind::kVmFunc)
        calls.insert(callee.name);
      else if (callee.name.rfind("vm.builtin.", 0) == 0)
        builtins.insert(callee.name);
      else
        kernels.insert(callee.name);
    }
    for (const auto& [label, names] : {std::pair{"builtins", &builtins}, {"kernels", &kernels}, {"calls", &calls}}) {
      if (names->empty()) continue;
      std::printf("    %s (%zu):", label, names->size());
      for (const std::string& n : *names) std::printf(" %s", n.c_str());
      std::printf("\n");
    }
  }
  std::printf("constants:\n");
  for (size_t i = 0; i < exe.constants.size(); ++i)
    std::printf("  c[%zu]: %s\n", i, DescribeRelaxConstant(exe.constants[i]).c_str());
  std::printf("bytecode:\n%s", DisassembleRelaxExecutable(exe).c_str());
}

}  // namespace hetrt::cli
