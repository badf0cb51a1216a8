// What a Relax function takes and returns, read from its bytecode without
// running it: codegen checks every parameter (check_tensor_info gives rank
// and dtype, match_shape the dims, symbolic ones stored to the shape heap),
// allocations give each tensor its device, and a kernel's outputs tell which
// device its inputs must be on.
#include <algorithm>
#include <optional>
#include <unordered_map>

#include "hetrt/exec/relax_executor.h"

namespace hetrt {
namespace {

constexpr DLDataType kUnknownType{255, 0, 0};
constexpr int64_t kMaxRank = 64;
// Tuples nested deeper or larger than this are left unknown: the analysis
// copies them, and a hostile file could make the copies explode.
constexpr int kMaxTupleDepth = 8;
constexpr size_t kMaxTupleNodes = 4096;

struct Abstract {
  enum class Kind { kUnknown, kTensor, kShape, kStorage, kTuple } kind = Kind::kUnknown;
  std::vector<int64_t> dims;
  DLDataType dtype = kUnknownType;
  int device = -1;
  std::vector<Abstract> items;
  int depth = 0;      // tuple nesting
  size_t nodes = 1;   // values in the tree, this one included
};

class Analyzer {
 public:
  Analyzer(const RelaxExecutable& exe, const RelaxFunction& f, const std::vector<DLDevice>& devices)
      : exe_(exe), f_(f), devices_(devices) {}

  RelaxSignature Run() {
    RelaxSignature sig;
    sig.params.resize(f_.param_names.size());
    sig.heap_slots.resize(f_.param_names.size());
    for (size_t i = 0; i < sig.params.size(); ++i) {
      sig.params[i].name = f_.param_names[i];
      sig.params[i].spec.dtype = kUnknownType;
      sig.params[i].device_index = -1;
    }
    for (int64_t pc = f_.start_instr; pc < f_.end_instr; ++pc) {
      const RelaxInstruction& in = exe_.instructions[static_cast<size_t>(pc)];
      if (in.op == RelaxInstruction::Op::kRet) {
        if (!ret_) ret_ = Reg(in.reg);
        continue;
      }
      if (in.op != RelaxInstruction::Op::kCall) continue;
      Visit(in, &sig);
    }
    for (RelaxParamInfo& p : sig.params)
      if (p.device_index < 0) p.device_index = 0;
    if (ret_) sig.outputs_known = Flatten(*ret_, &sig.outputs);
    if (!sig.outputs_known) sig.outputs.clear();
    return sig;
  }

 private:
  Abstract Reg(int64_t r) const {
    auto it = regs_.find(r);
    return it == regs_.end() ? Abstract{} : it->second;
  }
  Abstract Arg(const RelaxArg& a) const {
    if (a.kind == RelaxArg::Kind::kRegister) return Reg(a.value);
    Abstract v;
    if (a.kind == RelaxArg::Kind::kConstIdx) {
      const RelaxConstant& c = exe_.constants[static_cast<size_t>(a.value)];
      if (c.type == RelaxConstant::Type::kShape) {
        v.kind = Abstract::Kind::kShape;
        v.dims = c.shape;
      } else if (c.type == RelaxConstant::Type::kTensor) {
        v.kind = Abstract::Kind::kTensor;
        v.dims = c.tensor.shape();
        v.dtype = c.tensor.dtype();
        v.device = 0;
      }
    }
    return v;
  }
  std::optional<int64_t> Imm(const RelaxArg& a) const {
    if (a.kind == RelaxArg::Kind::kImmediate) return a.value;
    if (a.kind == RelaxArg::Kind::kConstIdx) {
      const RelaxConstant& c = exe_.constants[static_cast<size_t>(a.value)];
      if (c.type == RelaxConstant::Type::kInt) return c.int_value;
    }
    return std::nullopt;
  }
  std::optional<DLDataType> DType(const RelaxArg& a) const {
    if (a.kind != RelaxArg::Kind::kConstIdx) return std::nullopt;
    const RelaxConstant& c = exe_.constants[static_cast<size_t>(a.value)];
    if (c.type != RelaxConstant::Type::kDataType) return std::nullopt;
    return c.dtype;
  }
  int Param(const RelaxArg& a) const {
    return a.kind == RelaxArg::Kind::kRegister && a.value >= 0 && a.value < f_.num_args ? static_cast<int>(a.value)
                                                                                         : -1;
  }
  void Set(int64_t r, Abstract v) {
    if (r >= 0 && r < f_.register_file_size) regs_[r] = std::move(v);
  }

  void Visit(const RelaxInstruction& in, RelaxSignature* sig) {
    const std::string& name = exe_.functions[static_cast<size_t>(in.operand)].name;
    const auto args = exe_.ArgsOf(in);
    Abstract out;
    if (name == "vm.builtin.alloc_storage" && args.size() >= 3) {
      out.kind = Abstract::Kind::kStorage;
      if (auto index = Imm(args[2]); index && *index >= 0 && *index < (int64_t{1} << 20)) {
        out.device = static_cast<int>(*index);
        sig->max_device_index = std::max(sig->max_device_index, out.device);
      } else if (index && *index == -1) {
        out.device = static_cast<int>(devices_.size()) - 1;
      }
    } else if (name == "vm.builtin.alloc_tensor" && args.size() >= 4) {
      out.kind = Abstract::Kind::kTensor;
      out.device = Arg(args[0]).device;
      out.dims = Arg(args[2]).dims;
      if (auto t = DType(args[3])) out.dtype = *t;
    } else if (name == "vm.builtin.make_shape" && args.size() >= 2) {
      out.kind = Abstract::Kind::kShape;
      for (size_t k = 2; k + 1 < args.size(); k += 2) {
        auto code = Imm(args[k]), value = Imm(args[k + 1]);
        out.dims.push_back(code && *code == 0 && value ? *value : -1);
      }
    } else if (name == "vm.builtin.copy" && !args.empty()) {
      out = Arg(args[0]);
    } else if (name == "vm.builtin.make_tuple") {
      out.kind = Abstract::Kind::kTuple;
      for (const RelaxArg& a : args) {
        out.items.push_back(Arg(a));
        out.depth = std::max(out.depth, out.items.back().depth + 1);
        out.nodes += out.items.back().nodes;
        if (out.depth > kMaxTupleDepth || out.nodes > kMaxTupleNodes) break;
      }
      if (out.depth > kMaxTupleDepth || out.nodes > kMaxTupleNodes) out = Abstract{};
    } else if (name == "vm.builtin.tuple_getitem" && args.size() >= 2) {
      Abstract t = Arg(args[0]);
      auto index = Imm(args[1]);
      if (index && *index >= 0 && *index < static_cast<int64_t>(t.items.size())) out = t.items[static_cast<size_t>(*index)];
    } else if (name == "vm.builtin.to_device" && args.size() >= 3) {
      out = Arg(args[0]);
      auto type = Imm(args[1]), id = Imm(args[2]);
      out.device = -1;
      if (type && id && *type >= 0 && *type < (int64_t{1} << 20) && *id >= 0 && *id < (int64_t{1} << 20))
        sig->copy_targets.push_back({static_cast<DLDeviceType>(*type), static_cast<int32_t>(*id)});
      for (size_t d = 0; type && id && d < devices_.size(); ++d)
        if (devices_[d].device_type == *type && devices_[d].device_id == *id) out.device = static_cast<int>(d);
    } else if (name == "vm.builtin.reshape" && args.size() >= 2) {
      out = Arg(args[0]);
      out.dims = Arg(args[1]).dims;
    } else if (name == "vm.builtin.check_tensor_info" && args.size() >= 3) {
      const int p = Param(args[0]);
      auto ndim = Imm(args[1]);
      if (p >= 0 && ndim && *ndim >= 0 && *ndim <= kMaxRank) {
        TensorSpec& spec = sig->params[static_cast<size_t>(p)].spec;
        if (spec.shape.size() != static_cast<size_t>(*ndim)) spec.shape.assign(static_cast<size_t>(*ndim), -1);
        if (args.size() >= 4)
          if (auto t = DType(args[2]); t && !(t->code == kDLOpaqueHandle && t->bits == 0)) spec.dtype = *t;
      }
      return;
    } else if (name == "vm.builtin.match_shape" && args.size() >= 3) {
      auto n = Imm(args[2]);
      if (!n || *n < 0 || args.size() < 3 + 2 * static_cast<size_t>(*n)) return;
      std::vector<int64_t> dims;
      std::vector<int64_t> slots;
      for (int64_t i = 0; i < *n; ++i) {
        auto code = Imm(args[static_cast<size_t>(3 + 2 * i)]), value = Imm(args[static_cast<size_t>(4 + 2 * i)]);
        dims.push_back(code && *code == 0 && value ? *value : -1);
        if (code && (*code == 1 || *code == 3) && value) slots.push_back(*value);
      }
      if (const int p = Param(args[0]); p >= 0) {
        sig->params[static_cast<size_t>(p)].spec.shape = dims;
        sig->heap_slots[static_cast<size_t>(p)] = slots;
      } else if (args[0].kind == RelaxArg::Kind::kRegister) {
        Abstract v = Reg(args[0].value);
        if (v.kind == Abstract::Kind::kTensor && v.dims.size() == dims.size()) {
          for (size_t i = 0; i < dims.size(); ++i)
            if (v.dims[i] < 0) v.dims[i] = dims[i];
          Set(args[0].value, v);
        }
      }
      return;
    } else if (name.rfind("vm.builtin.", 0) != 0) {
      // A kernel: its device is that of the tensors it writes (allocated on a known device).
      int device = -1;
      for (const RelaxArg& a : args)
        if (Abstract v = Arg(a); v.kind == Abstract::Kind::kTensor && v.device >= 0 && Param(a) < 0) device = v.device;
      if (device >= 0)
        for (const RelaxArg& a : args)
          if (const int p = Param(a); p >= 0 && sig->params[static_cast<size_t>(p)].device_index < 0)
            sig->params[static_cast<size_t>(p)].device_index = device;
    }
    if (in.reg < kRelaxVoidRegister) Set(in.reg, std::move(out));
  }

  bool Flatten(const Abstract& v, std::vector<TensorSpec>* out) const {
    if (v.kind == Abstract::Kind::kTuple) {
      for (const Abstract& item : v.items)
        if (!Flatten(item, out)) return false;
      return true;
    }
    if (v.kind != Abstract::Kind::kTensor || v.dtype.code == kUnknownType.code) return false;
    out->push_back({v.dtype, v.dims});
    return true;
  }

  const RelaxExecutable& exe_;
  const RelaxFunction& f_;
  const std::vector<DLDevice>& devices_;
  std::unordered_map<int64_t, Abstract> regs_;  // only the registers written (files may be huge)
  std::optional<Abstract> ret_;
};

}  // namespace

RelaxSignature AnalyzeRelaxFunction(const RelaxExecutable& exe, uint32_t function, const std::vector<DLDevice>& devices) {
  return Analyzer(exe, exe.functions[function], devices).Run();
}

}  // namespace hetrt
