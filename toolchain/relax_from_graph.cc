#include "hetrt/relax_from_graph.h"

#include <algorithm>
#include <map>

#include "hetrt/base/dtype.h"

namespace hetrt {
namespace {

// Writes the bytecode of `main`; registers are handed out in order.
class Emitter {
 public:
  explicit Emitter(RelaxExecutable& exe) : exe_(exe) {}

  int64_t Function(const std::string& name) {
    auto it = functions_.find(name);
    if (it != functions_.end()) return it->second;
    RelaxFunction f;
    f.name = name;
    exe_.functions.push_back(f);
    return functions_[name] = static_cast<int64_t>(exe_.functions.size() - 1);
  }
  int64_t Constant(RelaxConstant c) {
    exe_.constants.push_back(std::move(c));
    return static_cast<int64_t>(exe_.constants.size() - 1);
  }
  int64_t Shape(std::vector<int64_t> dims) {
    RelaxConstant c;
    c.type = RelaxConstant::Type::kShape;
    c.shape = std::move(dims);
    return Constant(std::move(c));
  }
  int64_t DType(DLDataType t) {
    RelaxConstant c;
    c.type = RelaxConstant::Type::kDataType;
    c.dtype = t;
    return Constant(std::move(c));
  }
  int64_t String(std::string s) {
    RelaxConstant c;
    c.type = RelaxConstant::Type::kString;
    c.string = std::move(s);
    return Constant(std::move(c));
  }
  int64_t NewRegister() { return next_register_++; }
  void SetRegisters(int64_t n) { next_register_ = n; }
  int64_t registers() const { return next_register_; }

  void Call(const std::string& callee, int64_t dst, const std::vector<RelaxArg>& args) {
    RelaxInstruction in;
    in.op = RelaxInstruction::Op::kCall;
    in.reg = dst;
    in.operand = Function(callee);
    in.args_begin = static_cast<uint32_t>(exe_.args.size());
    in.num_args = static_cast<uint32_t>(args.size());
    exe_.args.insert(exe_.args.end(), args.begin(), args.end());
    exe_.instructions.push_back(in);
  }
  void Ret(int64_t reg) {
    RelaxInstruction in;
    in.op = RelaxInstruction::Op::kRet;
    in.reg = reg;
    exe_.instructions.push_back(in);
  }

 private:
  RelaxExecutable& exe_;
  std::map<std::string, int64_t> functions_;
  int64_t next_register_ = 0;
};

RelaxArg Reg(int64_t r) { return {RelaxArg::Kind::kRegister, r}; }
RelaxArg Imm(int64_t v) { return {RelaxArg::Kind::kImmediate, v}; }
RelaxArg Const(int64_t c) { return {RelaxArg::Kind::kConstIdx, c}; }

}  // namespace

Result<RelaxFromGraph> RelaxExecutableFromGraph(const Graph& g, const std::vector<NamedTensor>& params) {
  RelaxFromGraph out;
  // Devices: accelerators in order of first appearance, the host last.
  auto device_of = [&](uint32_t eid) { return g.device_types.empty() ? int32_t{kDLCPU} : g.device_types[eid]; };
  for (uint32_t e = 0; e < g.num_entries(); ++e)
    if (device_of(e) != kDLCPU &&
        std::none_of(out.devices.begin(), out.devices.end(), [&](DLDevice d) { return d.device_type == device_of(e); }))
      out.devices.push_back({static_cast<DLDeviceType>(device_of(e)), 0});
  out.devices.push_back({kDLCPU, 0});
  auto index_of = [&](int32_t type) {
    for (size_t i = 0; i < out.devices.size(); ++i)
      if (out.devices[i].device_type == type) return static_cast<int64_t>(i);
    return int64_t{-1};
  };

  RelaxExecutable& exe = out.executable;
  Emitter emit(exe);
  RelaxFunction main;
  main.kind = RelaxFunction::Kind::kVmFunc;
  main.name = "main";
  std::vector<int64_t> entry_register(g.num_entries(), -1);
  std::vector<uint32_t> param_inputs;  // arg_nodes that are params
  for (uint32_t nid : g.arg_nodes) {
    if (FindParam(params, g.nodes[nid].name) != nullptr) {
      param_inputs.push_back(nid);
      continue;
    }
    entry_register[g.entry_id(nid, 0)] = static_cast<int64_t>(main.param_names.size());
    main.param_names.push_back(g.nodes[nid].name);
  }
  main.num_args = static_cast<int64_t>(main.param_names.size());
  emit.SetRegisters(main.num_args);
  main.start_instr = 0;

  const int64_t u8 = emit.DType({kDLUInt, 8, 1});
  const int64_t global = emit.String("global");
  // Parameter checks, as relax.build writes them (static shapes: every code 0).
  for (uint32_t nid : g.arg_nodes) {
    const uint32_t eid = g.entry_id(nid, 0);
    const int64_t reg = entry_register[eid];
    if (reg < 0) continue;
    const int64_t err = emit.String("ErrorContext(fn=main, loc=param[" + std::to_string(reg) +
                                    "], param=" + g.nodes[nid].name + ", annotation=R.Tensor(" +
                                    ShapeToString(g.shapes[eid]) + ", dtype=\"" + DataTypeToString(g.dtypes[eid]) +
                                    "\"))");
    const auto ndim = static_cast<int64_t>(g.shapes[eid].size());
    emit.Call("vm.builtin.check_tensor_info", kRelaxVoidRegister,
              {Reg(reg), Imm(ndim), Const(emit.DType(g.dtypes[eid])), Const(err)});
    std::vector<RelaxArg> match = {Reg(reg), Reg(kRelaxVoidRegister), Imm(ndim)};
    for (int64_t d : g.shapes[eid]) match.insert(match.end(), {Imm(0), Imm(d)});
    match.push_back(Const(err));
    emit.Call("vm.builtin.match_shape", kRelaxVoidRegister, match);
  }
  // Params: constants; copied at the start of a call when their device is not devices[0].
  for (uint32_t nid : param_inputs) {
    const uint32_t eid = g.entry_id(nid, 0);
    RelaxConstant c;
    c.type = RelaxConstant::Type::kTensor;
    c.tensor = FindParam(params, g.nodes[nid].name)->tensor;
    if (c.tensor.shape() != g.shapes[eid] || c.tensor.dtype() != g.dtypes[eid])
      return InvalidArgument("param '" + g.nodes[nid].name + "' is " + ShapeToString(c.tensor.shape()) + " " +
                             DataTypeToString(c.tensor.dtype()) + ", the graph says " + ShapeToString(g.shapes[eid]) +
                             " " + DataTypeToString(g.dtypes[eid]));
    const int64_t constant = emit.Constant(std::move(c));
    const int64_t reg = emit.NewRegister();
    entry_register[eid] = reg;
    const DLDevice device = out.devices[static_cast<size_t>(index_of(device_of(eid)))];
    if (index_of(device_of(eid)) == 0)
      emit.Call("vm.builtin.copy", reg, {Const(constant)});
    else
      emit.Call("vm.builtin.to_device", reg, {Const(constant), Imm(device.device_type), Imm(device.device_id)});
  }
  // Nodes in order (the graph's order is topological).
  for (uint32_t nid = 0; nid < g.nodes.size(); ++nid) {
    const GraphNode& n = g.nodes[nid];
    if (n.kind != GraphNode::Kind::kOp) continue;
    std::vector<RelaxArg> args;
    for (const GraphEntryRef& in : n.inputs) {
      const int64_t reg = entry_register[g.entry_id(in)];
      if (reg < 0) return InvalidArgument("node '" + n.name + "' reads an entry no node wrote");
      args.push_back(Reg(reg));
    }
    const uint32_t out0 = g.entry_id(nid, 0);
    if (n.func_name == kNopFunction || n.func_name == kCopyFunction) {
      if (n.inputs.size() != 1 || n.num_outputs != 1)
        return InvalidArgument("node '" + n.name + "' (" + n.func_name + ") must have one input and one output");
      const int64_t reg = emit.NewRegister();
      entry_register[out0] = reg;
      const DLDevice target = out.devices[static_cast<size_t>(index_of(device_of(out0)))];
      if (n.func_name == kNopFunction)
        emit.Call("vm.builtin.copy", reg, args);
      else
        emit.Call("vm.builtin.to_device", reg, {args[0], Imm(target.device_type), Imm(target.device_id)});
      continue;
    }
    for (uint32_t k = 0; k < n.num_outputs; ++k) {
      const uint32_t eid = g.entry_id(nid, k);
      const int64_t storage = emit.NewRegister(), tensor = emit.NewRegister();
      emit.Call("vm.builtin.alloc_storage", storage,
                {Reg(kRelaxVmRegister), Const(emit.Shape({static_cast<int64_t>(g.entry_bytes(eid))})),
                 Imm(index_of(device_of(eid))), Const(u8), Const(global)});
      emit.Call("vm.builtin.alloc_tensor", tensor,
                {Reg(storage), Imm(0), Const(emit.Shape(g.shapes[eid])), Const(emit.DType(g.dtypes[eid]))});
      emit.Call("vm.builtin.null_value", storage, {});
      entry_register[eid] = tensor;
      args.push_back(Reg(tensor));
    }
    emit.Call(n.func_name, kRelaxVoidRegister, args);
  }
  if (g.heads.empty()) return InvalidArgument("the graph has no outputs");
  int64_t result = entry_register[g.entry_id(g.heads[0])];
  if (g.heads.size() > 1) {
    std::vector<RelaxArg> items;
    for (const GraphEntryRef& h : g.heads) items.push_back(Reg(entry_register[g.entry_id(h)]));
    result = emit.NewRegister();
    emit.Call("vm.builtin.make_tuple", result, items);
  }
  emit.Ret(result);
  main.end_instr = static_cast<int64_t>(exe.instructions.size());
  main.register_file_size = emit.registers();
  exe.functions.push_back(std::move(main));
  // What the VM will check anyway, checked where the error can name the graph.
  HETRT_ASSIGN_OR_RETURN(std::vector<uint8_t> image, WriteRelaxExecutable(exe));
  auto parsed = ParseRelaxExecutable(image, "graph converted to Relax");
  if (!parsed.ok()) return Internal(parsed.status().message());
  return out;
}

}  // namespace hetrt
