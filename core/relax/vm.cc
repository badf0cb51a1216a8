// The Relax VM: creation (devices, constants, the function pool resolved
// once) and the interpreter loop over the decoded code.
#include "hetrt/relax/vm.h"

#include "hetrt/base/dtype.h"
#include "hetrt/base/host_clock.h"
#include "hetrt/tvm_abi/global_functions.h"
#include "hetrt/tvm_abi/tvm_ffi_context.h"
#include "relax/call_replay.h"
#include "relax/interpreter.h"
#include "tvm_abi/backend_routes.h"

namespace hetrt {
namespace {

RelaxValue ConstantValue(const RelaxConstant& c) {
  switch (c.type) {
    case RelaxConstant::Type::kTensor: return RelaxValue::FromTensor(c.tensor);
    case RelaxConstant::Type::kDataType: return RelaxValue::DataType(c.dtype);
    case RelaxConstant::Type::kShape: return RelaxValue::Shape(c.shape);
    case RelaxConstant::Type::kString: return RelaxValue::String(c.string);
    case RelaxConstant::Type::kInt: return RelaxValue::Int(c.int_value);
    case RelaxConstant::Type::kFloat: return RelaxValue::Float(c.float_value);
  }
  return {};
}

// Results nested deeper than this are refused rather than walked recursively.
constexpr int kMaxResultDepth = 64;

Status FlattenInto(const RelaxValue& v, const std::string& path, int depth, std::vector<Tensor>* out) {
  if (depth > kMaxResultDepth) return InvalidArgument("result" + path + " nests tuples deeper than 64");
  if (v.is(RelaxValue::Kind::kTensor)) {
    out->push_back(v.tensor());
    return OkStatus();
  }
  if (v.is(RelaxValue::Kind::kTuple)) {
    for (size_t i = 0; i < v.tuple().size(); ++i)
      HETRT_RETURN_IF_ERROR(FlattenInto(v.tuple()[i], path + "[" + std::to_string(i) + "]", depth + 1, out));
    return OkStatus();
  }
  return InvalidArgument("result" + path + " is " + v.Describe() + ", not a tensor");
}

}  // namespace

const char* RelaxValue::KindName(Kind kind) {
  switch (kind) {
    case Kind::kNull: return "null";
    case Kind::kInt: return "int";
    case Kind::kFloat: return "float";
    case Kind::kDataType: return "dtype";
    case Kind::kTensor: return "tensor";
    case Kind::kShape: return "shape";
    case Kind::kString: return "string";
    case Kind::kStorage: return "storage";
    case Kind::kTuple: return "tuple";
    case Kind::kFunction: return "function";
    case Kind::kClosure: return "closure";
    case Kind::kObject: return "object";
    case Kind::kVm: return "vm";
  }
  return "?";
}

std::string RelaxValue::Describe() const {
  switch (kind_) {
    case Kind::kInt: return "int " + std::to_string(int_);
    case Kind::kFloat: return "float " + std::to_string(float_);
    case Kind::kDataType: return "dtype " + DataTypeToString(dtype_);
    case Kind::kTensor:
      return "tensor " + DataTypeToString(tensor().dtype()) + ShapeToString(tensor().shape()) + " on " +
             DeviceToString(tensor().device());
    case Kind::kShape: return "shape " + ShapeToString(shape());
    case Kind::kString: return "string \"" + string() + "\"";
    case Kind::kStorage:
      return "storage of " + std::to_string(tensor().capacity_bytes()) + " bytes on " +
             DeviceToString(tensor().device());
    case Kind::kTuple: return "tuple of " + std::to_string(tuple().size());
    case Kind::kObject: return std::string("object ") + object().type_key();
    default: return KindName(kind_);
  }
}

Result<std::vector<Tensor>> FlattenRelaxTensors(const RelaxValue& value) {
  std::vector<Tensor> out;
  HETRT_RETURN_IF_ERROR(FlattenInto(value, "", 0, &out));
  return out;
}

// ---- creation

RelaxVirtualMachine::RelaxVirtualMachine(std::unique_ptr<RelaxInterpreter> impl) : impl_(std::move(impl)) {}
// Results the caller still holds keep their pools (and plugins) alive.
RelaxVirtualMachine::~RelaxVirtualMachine() = default;

Result<std::unique_ptr<RelaxVirtualMachine>> RelaxVirtualMachine::Create(std::shared_ptr<Module> root,
                                                                         Options options) {
  auto* module = dynamic_cast<RelaxExecutableModule*>(root.get());
  if (module == nullptr)
    return InvalidArgument("the root module is '" + (root ? root->type_key() : std::string("null")) +
                           "', not a Relax executable (relax.Executable, relax.VMExecutable)");
  auto impl = std::make_unique<RelaxInterpreter>();
  impl->root = root;
  impl->exe = module->executable();
  impl->plugins = options.plugins ? options.plugins : &PluginRegistry::Global();
  impl->backend_registry = options.plugins;
  if (options.allocator != AllocatorKind::kNaive && options.allocator != AllocatorKind::kPooled)
    return InvalidArgument("unknown allocator type " + std::to_string(static_cast<int>(options.allocator)) +
                           " (1 naive, 2 pooled)");
  if (options.devices.empty()) return InvalidArgument("a Relax VM needs at least one device");
  // TVM's Python VirtualMachine appends the host when the list does not end with it.
  if (options.devices.back().device_type != kDLCPU) options.devices.push_back({kDLCPU, 0});
  impl->device_list = options.devices;
  for (const DLDevice& d : options.devices) {
    HETRT_ASSIGN_OR_RETURN(Device device, impl->plugins->DeviceFor(d));
    RelaxVmDevice vm_device;
    vm_device.device = device;
    // Host-visible memory where the device shares the host's: results read on
    // the host need no copy (to_device returns a host view of them).
    Allocator* backing = &device.allocator();
    if (d.device_type != kDLCPU && device.SharesHostMemory()) {
      Allocator& visible = device.allocator(HETRT_MEMORY_HOST_VISIBLE);
      if (auto probe = visible.Allocate(64, 64); probe.ok()) {
        visible.Free(*probe);
        backing = &visible;
      }
    }
    if (options.allocator == AllocatorKind::kPooled) {
      vm_device.pool = std::make_shared<PooledAllocator>(*backing);
      vm_device.allocator = vm_device.pool.get();
    } else {
      vm_device.allocator = backing;
    }
    impl->devices.push_back(std::move(vm_device));
  }

  const RelaxExecutable& exe = *impl->exe;
  // Constants: tensors live on devices[0] (TVM's vm_initialization).
  impl->constants.reserve(exe.constants.size());
  for (size_t i = 0; i < exe.constants.size(); ++i) {
    const RelaxConstant& c = exe.constants[i];
    if (c.type == RelaxConstant::Type::kTensor && impl->device_list[0].device_type != kDLCPU) {
      HETRT_ASSIGN_OR_RETURN(auto moved, impl->CopyTo(c.tensor, 0),
                             "moving constant " + std::to_string(i) + " to devices[0]");
      impl->constants.push_back(RelaxValue::FromTensor(std::move(moved)));
    } else {
      impl->constants.push_back(ConstantValue(c));
    }
  }

  // The function pool: library functions (the imports) first, as TVM looks
  // them up, then hetrt's builtins; refused and missing names fail here.
  impl->callees.resize(exe.functions.size());
  for (size_t i = 0; i < exe.functions.size(); ++i) {
    const RelaxFunction& f = exe.functions[i];
    RelaxInterpreter::Callee& callee = impl->callees[i];
    if (f.kind == RelaxFunction::Kind::kVmFunc) {
      callee.kind = RelaxInterpreter::Callee::Kind::kVmFunction;
      continue;
    }
    if (auto refused = RefusedRelaxBuiltin(f.name)) return Unimplemented(*refused);
    if (f.name.rfind("vm.builtin.", 0) != 0) {
      HETRT_ASSIGN_OR_RETURN(const PackedFunc* kernel, root->GetFunction(f.name));
      if (kernel != nullptr) {
        callee.kind = RelaxInterpreter::Callee::Kind::kKernel;
        callee.kernel = kernel;
        callee.ffi = FfiSafeCallOf(*kernel);
        continue;
      }
    }
    if (RelaxBuiltin builtin = FindRelaxBuiltin(f.name)) {
      callee.builtin = builtin;
      continue;
    }
    if (const PackedFunc* global = GlobalFunctionRegistry::Get().Find(f.name)) {
      callee.kind = RelaxInterpreter::Callee::Kind::kKernel;
      callee.kernel = global;
      callee.ffi = FfiSafeCallOf(*global);
      continue;
    }
    return NotFound("the executable calls '" + f.name + "', which is neither a function of its library (" +
                    (root->imports().empty() ? std::string("no library") : root->imports()[0]->type_key()) +
                    ") nor a builtin hetrt implements");
  }

  // Decoded code: every operand points at a register or at a value fixed now.
  size_t fixed_count = 0;
  for (const RelaxArg& a : exe.args)
    fixed_count += a.kind == RelaxArg::Kind::kImmediate || a.kind == RelaxArg::Kind::kFuncIdx;
  impl->fixed_values.reserve(fixed_count + 2);  // addresses must stay put
  impl->fixed_values.push_back(RelaxValue());
  const RelaxValue* null_value = &impl->fixed_values.back();
  impl->fixed_values.push_back(RelaxValue::Vm());
  const RelaxValue* vm_value = &impl->fixed_values.back();
  impl->code.reserve(exe.instructions.size());
  const RelaxBuiltin to_device = FindRelaxBuiltin("vm.builtin.to_device");
  const RelaxBuiltin null_builtin = FindRelaxBuiltin("vm.builtin.null_value");
  impl->moved_constants.reserve(exe.instructions.size());  // addresses must stay put
  size_t max_args = 0;
  for (const RelaxInstruction& in : exe.instructions) {
    RelaxInterpreter::Instruction out;
    out.op = in.op;
    out.reg = in.reg;
    out.offset = in.operand;
    if (in.op == RelaxInstruction::Op::kCall) {
      out.callee = static_cast<uint32_t>(in.operand);
      out.operands_begin = static_cast<uint32_t>(impl->operands.size());
      out.num_operands = in.num_args;
      max_args = std::max<size_t>(max_args, in.num_args);
      for (const RelaxArg& a : exe.ArgsOf(in)) {
        RelaxOperand o;
        switch (a.kind) {
          case RelaxArg::Kind::kRegister:
            if (a.value == kRelaxVoidRegister)
              o.fixed = null_value;
            else if (a.value == kRelaxVmRegister)
              o.fixed = vm_value;
            else
              o.reg = static_cast<uint32_t>(a.value);
            break;
          case RelaxArg::Kind::kImmediate:
            impl->fixed_values.push_back(RelaxValue::Int(a.value));
            o.fixed = &impl->fixed_values.back();
            break;
          case RelaxArg::Kind::kConstIdx: o.fixed = &impl->constants[static_cast<size_t>(a.value)]; break;
          case RelaxArg::Kind::kFuncIdx:
            impl->fixed_values.push_back(RelaxValue::Function(static_cast<uint32_t>(a.value)));
            o.fixed = &impl->fixed_values.back();
            break;
        }
        impl->operands.push_back(o);
      }
      const RelaxInterpreter::Callee& callee = impl->callees[out.callee];
      out.clears_register =
          callee.kind == RelaxInterpreter::Callee::Kind::kBuiltin && callee.builtin == null_builtin && in.num_args == 0;
      if (callee.kind == RelaxInterpreter::Callee::Kind::kBuiltin && callee.builtin == to_device)
        HETRT_RETURN_IF_ERROR(impl->MoveConstantOnce(impl->operands.data() + out.operands_begin, in.num_args),
                              "moving a constant for function table entry " + std::to_string(out.callee));
    }
    impl->code.push_back(out);
  }
  // The instructions of builtins that make a new object each call keep their
  // last one (ReusingRelaxBuiltins).
  impl->function_spares.resize(exe.functions.size());
  for (size_t f = 0; f < exe.functions.size(); ++f) {
    if (exe.functions[f].kind != RelaxFunction::Kind::kVmFunc) continue;
    for (int64_t pc = exe.functions[f].start_instr; pc < exe.functions[f].end_instr; ++pc) {
      RelaxInterpreter::Instruction& in = impl->code[static_cast<size_t>(pc)];
      if (in.op != RelaxInstruction::Op::kCall) continue;
      const RelaxInterpreter::Callee& callee = impl->callees[in.callee];
      if (callee.kind != RelaxInterpreter::Callee::Kind::kBuiltin) continue;
      for (const ReusingRelaxBuiltin& b : ReusingRelaxBuiltins())
        if (callee.builtin == b.builtin) in.reusing = b.reusing;
      if (in.reusing == nullptr) continue;
      in.spare = static_cast<uint32_t>(impl->spares.size());
      impl->spares.emplace_back();
      impl->function_spares[f].push_back(in.spare);
    }
  }
  impl->kernel_values.resize(max_args + 64);
  impl->kernel_codes.resize(max_args + 64);
  // Constants copied above may still be in flight on this thread's streams; a
  // call from another thread (another current stream) must find them there.
  HETRT_RETURN_IF_ERROR(impl->SynchronizeDevices(), "moving the constants to their devices");
  return std::unique_ptr<RelaxVirtualMachine>(new RelaxVirtualMachine(std::move(impl)));
}

// ---- queries

Result<RelaxValue> RelaxVirtualMachine::CallBuiltin(std::string_view name, std::span<const RelaxValue> args) {
  RelaxBuiltin builtin = FindRelaxBuiltin(name);
  if (builtin == nullptr) {
    if (auto refused = RefusedRelaxBuiltin(name)) return Unimplemented(*refused);
    return NotFound("no builtin named '" + std::string(name) + "'");
  }
  RelaxValue result;
  HETRT_RETURN_IF_ERROR(builtin(*impl_, RelaxCallArgs(args.data(), static_cast<uint32_t>(args.size())), &result),
                        std::string(name));
  return result;
}

const RelaxExecutable& RelaxVirtualMachine::executable() const { return *impl_->exe; }
const std::vector<DLDevice>& RelaxVirtualMachine::devices() const { return impl_->device_list; }
const RelaxCallStats& RelaxVirtualMachine::last_call_stats() const { return impl_->stats; }
PluginRegistry& RelaxVirtualMachine::plugins() const { return *impl_->plugins; }

Result<uint32_t> RelaxVirtualMachine::FindFunction(std::string_view name) const {
  const int64_t index = impl_->exe->FindFunction(name);
  if (index >= 0 && impl_->exe->functions[static_cast<size_t>(index)].kind == RelaxFunction::Kind::kVmFunc)
    return static_cast<uint32_t>(index);
  std::string names;
  for (const std::string& n : FunctionNames()) names += (names.empty() ? "" : ", ") + n;
  return NotFound("the executable has no function '" + std::string(name) + "' (its functions: " + names + ")");
}

std::vector<std::string> RelaxVirtualMachine::FunctionNames() const {
  std::vector<std::string> names;
  for (const RelaxFunction& f : impl_->exe->functions)
    if (f.kind == RelaxFunction::Kind::kVmFunc) names.push_back(f.name);
  return names;
}

const std::vector<std::string>& RelaxVirtualMachine::ParamNames(uint32_t function) const {
  return impl_->exe->functions[function].param_names;
}

// ---- calls

Result<RelaxValue> RelaxVirtualMachine::Invoke(std::string_view name, std::span<const RelaxValue> args) {
  HETRT_ASSIGN_OR_RETURN(uint32_t index, FindFunction(name));
  return Invoke(index, args);
}

Result<RelaxValue> RelaxVirtualMachine::Invoke(uint32_t function, std::span<const RelaxValue> args, bool may_replay) {
  if (function >= impl_->exe->functions.size() || impl_->exe->functions[function].kind != RelaxFunction::Kind::kVmFunc)
    return InvalidArgument("function index " + std::to_string(function) + " is not a VM function");
  ClearLastError();
  impl_->stats = {};
  BackendRoutesScope backend(impl_->backend_registry ? impl_->backend_registry->backend_routes() : nullptr);
  const RelaxCallArgs call_args(args.data(), static_cast<uint32_t>(args.size()));
  RelaxFunctionReplay* replay = function < impl_->replays.size() ? impl_->replays[function].get() : nullptr;
  // Profiles and kernel observers see every instruction: those calls are interpreted.
  if (replay == nullptr || !may_replay || impl_->profile != nullptr || impl_->kernel_observer || impl_->depth != 0)
    return impl_->Run(function, call_args);
  if (auto replayed = replay->Replay(*impl_, args)) return std::move(*replayed);
  if (!replay->ShouldRecord(args)) return impl_->Run(function, call_args);
  replay->BeginRecording(args);
  impl_->recorder = replay;
  Result<RelaxValue> result = impl_->Run(function, call_args);
  impl_->recorder = nullptr;
  replay->FinishRecording(*impl_, result);
  return result;
}

Status RelaxVirtualMachine::EnableReplay(uint32_t function, size_t max_signatures) {
  if (function >= impl_->exe->functions.size() || impl_->exe->functions[function].kind != RelaxFunction::Kind::kVmFunc)
    return InvalidArgument("function index " + std::to_string(function) + " is not a VM function");
  HETRT_ASSIGN_OR_RETURN(auto replay, RelaxFunctionReplay::Create(*impl_, function, max_signatures));
  if (impl_->replays.size() <= function) impl_->replays.resize(function + 1);
  impl_->replays[function] = std::move(replay);
  return OkStatus();
}

RelaxReplayStats RelaxVirtualMachine::ReplayStats(uint32_t function) const {
  if (function < impl_->replays.size() && impl_->replays[function] != nullptr) return impl_->replays[function]->stats();
  RelaxReplayStats off;
  off.disabled = "replay is not enabled for this function";
  return off;
}

Result<RelaxValue> RelaxVirtualMachine::InvokeProfiled(uint32_t function, std::span<const RelaxValue> args,
                                                       RelaxProfile* profile) {
  profile->events.clear();
  impl_->profile = profile;
  profile->start_ns = HostNowNs();
  auto result = Invoke(function, args);
  if (result.ok()) {
    Status s = Synchronize();
    if (!s.ok()) result = s;
  }
  profile->end_ns = HostNowNs();
  impl_->profile = nullptr;
  return result;
}

void RelaxVirtualMachine::SetKernelObserver(RelaxKernelObserver observer) {
  impl_->kernel_observer = std::move(observer);
}

Status RelaxVirtualMachine::Synchronize() { return impl_->SynchronizeDevices(); }

Result<Tensor> RelaxVirtualMachine::ToDevice(const Tensor& tensor, DLDevice device) {
  const int index = impl_->IndexOf(device);
  if (index < 0) return InvalidArgument(DeviceToString(device) + " is not one of the VM's devices");
  if (SameDevice(tensor.device(), device)) return tensor;
  return impl_->CopyTo(tensor, index);
}

void RelaxVirtualMachine::ReleasePools() {
  for (RelaxVmDevice& d : impl_->devices)
    if (d.pool) d.pool->Release();
}

uint64_t RelaxVirtualMachine::PluginAllocations() const {
  uint64_t total = 0;
  for (const RelaxVmDevice& d : impl_->devices) total += d.pool ? d.pool->backing_allocations() : 0;
  return total;
}

}  // namespace hetrt
