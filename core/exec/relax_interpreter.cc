// The Relax VM's interpreter loop and its calls: kernels through the packed
// C convention, VM functions on a register file reused per call depth,
// closures, and copies between the VM's devices.
#include "exec/relax_interpreter.h"

#include "hetrt/base/dtype.h"
#include "hetrt/base/host_clock.h"
#include "hetrt/base/last_error.h"

namespace hetrt {
namespace {

// Deeper than any real model's call chain; a runaway recursion stops here
// with an error instead of overflowing the stack.
constexpr size_t kMaxCallDepth = 512;

}  // namespace

int RelaxInterpreter::IndexOf(DLDevice device) const {
  for (size_t i = 0; i < device_list.size(); ++i)
    if (device_list[i].device_type == device.device_type && device_list[i].device_id == device.device_id)
      return static_cast<int>(i);
  return -1;
}

Result<Tensor> RelaxInterpreter::CopyTo(const Tensor& tensor, int device_index, bool may_alias) {
  const RelaxVmDevice& target = devices[static_cast<size_t>(device_index)];
  const DLDevice to = target.device.device();
  if (tensor.device().device_type != kDLCPU) {
    // Work queued on the source device must finish before its bytes are read.
    const int source = IndexOf(tensor.device());
    if (source >= 0) {
      const RelaxVmDevice& from = devices[static_cast<size_t>(source)];
      if (from.device.api()->stream_synchronize != nullptr) HETRT_RETURN_IF_ERROR(from.device.Synchronize(nullptr));
      // Host-visible memory read on the host: the same bytes, no copy.
      if (may_alias && to.device_type == kDLCPU)
        if (void* host = from.allocator->HostPointer(tensor.data())) return tensor.AliasAt(host, to);
    }
  }
  HETRT_ASSIGN_OR_RETURN(Tensor out, Tensor::Empty(tensor.shape(), tensor.dtype(), *target.allocator));
  if (may_alias && tensor.device().device_type == kDLCPU && to.device_type != kDLCPU && tensor.owns_memory()) {
    // Ordered before the kernels that read it on the device's default stream;
    // the host waits only when something needs the result there.
    auto stream = target.device.CurrentStream();  // where this thread's kernels go
    HETRT_RETURN_IF_ERROR(target.device.Copy(tensor.data(), tensor.dl()->byte_offset, tensor.device(), out.data(),
                                             out.dl()->byte_offset, to, tensor.nbytes(),
                                             stream.ok() ? *stream : nullptr, /*flags=*/0));
    in_flight_sources.push_back(tensor);
    if (in_flight_sources.size() > 256) HETRT_RETURN_IF_ERROR(SynchronizeDevices());
    return out;
  }
  HETRT_RETURN_IF_ERROR(plugins->CopyTensor(tensor, out));
  return out;
}

Status RelaxInterpreter::SynchronizeDevices() {
  for (const RelaxVmDevice& d : devices) {
    if (d.device.device().device_type == kDLCPU || d.device.api()->stream_synchronize == nullptr) continue;
    HETRT_RETURN_IF_ERROR(d.device.Synchronize(nullptr));
  }
  in_flight_sources.clear();
  return OkStatus();
}

Status RelaxInterpreter::CallKernel(const PackedFunc& kernel, const RelaxCallArgs& args,
                                             const std::vector<int64_t>* extra_ints, RelaxValue* result) {
  const uint32_t n = args.size() + (extra_ints ? static_cast<uint32_t>(extra_ints->size()) : 0);
  if (n > kernel_values.size()) {
    kernel_values.resize(n);
    kernel_codes.resize(n);
  }
  hetrt_value_t* values = kernel_values.data();
  int32_t* codes = kernel_codes.data();
  for (uint32_t i = 0; i < args.size(); ++i) {
    const RelaxValue& v = args[i];
    switch (v.kind()) {
      case RelaxValue::Kind::kTensor:
        values[i].v_handle = v.tensor().dl();
        codes[i] = HETRT_TYPE_DLTENSOR;
        break;
      case RelaxValue::Kind::kInt:
        values[i].v_int64 = v.int_value();
        codes[i] = HETRT_TYPE_INT;
        break;
      case RelaxValue::Kind::kFloat:
        values[i].v_float64 = v.float_value();
        codes[i] = HETRT_TYPE_FLOAT;
        break;
      case RelaxValue::Kind::kDataType:
        values[i].v_type = v.dtype();
        codes[i] = HETRT_TYPE_DATATYPE;
        break;
      case RelaxValue::Kind::kNull:
        values[i].v_handle = nullptr;
        codes[i] = HETRT_TYPE_NULL;
        break;
      case RelaxValue::Kind::kString:
        values[i].v_str = v.string().c_str();
        codes[i] = HETRT_TYPE_STR;
        break;
      default:
        return InvalidArgument("argument " + std::to_string(i) + " is a " + RelaxValue::KindName(v.kind()) +
                               ", which a compiled function cannot take");
    }
  }
  if (extra_ints != nullptr)
    for (size_t k = 0; k < extra_ints->size(); ++k) {
      values[args.size() + k].v_int64 = (*extra_ints)[k];
      codes[args.size() + k] = HETRT_TYPE_INT;
    }
  if (kernel_observer) [[unlikely]]
    kernel_observer(kernel, values, codes, static_cast<int32_t>(n));
  hetrt_value_t ret{};
  int32_t ret_code = HETRT_TYPE_NULL;
  if (kernel.call(values, codes, static_cast<int32_t>(n), &ret, &ret_code, kernel.resource) != 0) [[unlikely]] {
    std::string message = LastErrorMessage();
    return Internal(message.empty() ? "the function failed without reporting why" : message);
  }
  ++stats.kernel_calls;
  switch (ret_code) {
    case HETRT_TYPE_INT: *result = RelaxValue::Int(ret.v_int64); break;
    case HETRT_TYPE_FLOAT: *result = RelaxValue::Float(ret.v_float64); break;
    default: *result = RelaxValue(); break;
  }
  return OkStatus();
}

Result<RelaxValue> RelaxInterpreter::CallValue(const RelaxValue& callee, std::vector<RelaxValue> args) {
  uint32_t function = 0;
  if (callee.is(RelaxValue::Kind::kClosure)) {
    function = callee.closure().function;
    for (const RelaxValue& c : callee.closure().captured) args.push_back(c);
  } else if (callee.is(RelaxValue::Kind::kFunction)) {
    function = callee.function();
  } else {
    return InvalidArgument("cannot call a " + std::string(RelaxValue::KindName(callee.kind())));
  }
  const Callee& c = callees[function];
  const RelaxCallArgs call_args(args.data(), static_cast<uint32_t>(args.size()));
  RelaxValue result;
  switch (c.kind) {
    case Callee::Kind::kVmFunction: return Run(function, call_args);
    case Callee::Kind::kKernel: HETRT_RETURN_IF_ERROR(CallKernel(*c.kernel, call_args, nullptr, &result)); break;
    case Callee::Kind::kBuiltin: HETRT_RETURN_IF_ERROR(c.builtin(*this, call_args, &result)); break;
  }
  return result;
}

Status RelaxInterpreter::Call(const Instruction& in, const RelaxCallArgs& args, RelaxValue* result) {
  const Callee& callee = callees[in.callee];
  switch (callee.kind) {
    case Callee::Kind::kBuiltin:
      ++stats.builtin_calls;
      return callee.builtin(*this, args, result);
    case Callee::Kind::kKernel: return CallKernel(*callee.kernel, args, nullptr, result);
    case Callee::Kind::kVmFunction: {
      ++stats.vm_calls;
      std::vector<RelaxValue> nested(args.size());
      for (uint32_t i = 0; i < args.size(); ++i) nested[i] = args[i];
      auto r = Run(in.callee, RelaxCallArgs(nested.data(), static_cast<uint32_t>(nested.size())));
      if (!r.ok()) return r.status();
      *result = std::move(r).value();
      return OkStatus();
    }
  }
  return Internal("unknown callee kind");
}

Status RelaxInterpreter::CallProfiled(const Instruction& in, const RelaxCallArgs& args, RelaxValue* result) {
  const Callee& callee = callees[in.callee];
  RelaxTraceEvent event;
  event.callee = in.callee;
  event.depth = static_cast<uint32_t>(depth - 1);
  event.kind = callee.kind == Callee::Kind::kKernel       ? RelaxTraceEvent::Kind::kKernel
               : callee.kind == Callee::Kind::kVmFunction ? RelaxTraceEvent::Kind::kVmCall
                                                           : RelaxTraceEvent::Kind::kBuiltin;
  if (event.kind == RelaxTraceEvent::Kind::kKernel)
    for (uint32_t i = 0; i < args.size(); ++i)
      if (args[i].is(RelaxValue::Kind::kTensor)) event.device = args[i].tensor().device();
  const size_t slot = profile->events.size();
  profile->events.push_back(event);  // nested calls record after it
  const uint64_t start = HostNowNs();
  Status s = Call(in, args, result);
  if (s.ok() && event.device.device_type != kDLCPU) {  // the kernel's time, not its launch
    const int index = IndexOf(event.device);
    if (index >= 0 && devices[static_cast<size_t>(index)].device.api()->stream_synchronize != nullptr)
      s = devices[static_cast<size_t>(index)].device.Synchronize(nullptr);
  }
  profile->events[slot].start_ns = start;
  profile->events[slot].end_ns = HostNowNs();
  return s;
}

Result<RelaxValue> RelaxInterpreter::Run(uint32_t function, const RelaxCallArgs& args) {
  const RelaxFunction& f = exe->functions[function];
  if (static_cast<int64_t>(args.size()) != f.num_args) {
    std::string names;
    for (const std::string& p : f.param_names) names += (names.empty() ? "" : ", ") + p;
    return InvalidArgument("function '" + f.name + "' takes " + std::to_string(f.num_args) + " argument(s) (" +
                           names + "), got " + std::to_string(args.size()));
  }
  if (depth >= kMaxCallDepth)
    return ResourceExhausted("function '" + f.name + "': calls nested deeper than " + std::to_string(kMaxCallDepth));
  if (frames.size() <= depth) frames.emplace_back();
  // Register files are reused by depth; a nested call may grow `frames`, so
  // the file is reached through its index, never a reference kept across calls.
  const size_t my_depth = depth++;
  struct DepthGuard {
    RelaxInterpreter& impl;
    size_t depth;
    ~DepthGuard() {
      for (RelaxValue& r : impl.frames[depth]) r = RelaxValue();  // drop what the call held
      impl.depth = depth;
    }
  } guard{*this, my_depth};
  frames[my_depth].resize(static_cast<size_t>(f.register_file_size));
  for (uint32_t i = 0; i < args.size(); ++i) frames[my_depth][i] = args[i];

  int64_t pc = f.start_instr;
  while (true) {
    if (pc < f.start_instr || pc >= f.end_instr) [[unlikely]]
      return Internal("function '" + f.name + "' ran past its end at instruction " +
                      std::to_string(pc - f.start_instr));
    const Instruction& in = code[static_cast<size_t>(pc)];
    ++stats.instructions;
    RelaxValue* regs = frames[my_depth].data();
    switch (in.op) {
      case RelaxInstruction::Op::kCall: {
        const RelaxCallArgs call_args(&operands[in.operands_begin], regs, in.num_operands);
        RelaxValue result;
        Status s = profile == nullptr ? Call(in, call_args, &result) : CallProfiled(in, call_args, &result);
        if (!s.ok()) [[unlikely]]
          return s.WithContext("function '" + f.name + "' instruction " + std::to_string(pc - f.start_instr) +
                               " (call " + FunctionName(in.callee) + ")");
        if (in.reg < kRelaxVoidRegister) frames[my_depth][static_cast<size_t>(in.reg)] = std::move(result);
        ++pc;
        break;
      }
      case RelaxInstruction::Op::kRet: return std::move(regs[in.reg]);
      case RelaxInstruction::Op::kGoto: pc += in.offset; break;
      case RelaxInstruction::Op::kIf: {
        const RelaxValue& cond = regs[in.reg];
        if (!cond.is(RelaxValue::Kind::kInt)) [[unlikely]]
          return InvalidArgument("function '" + f.name + "' instruction " + std::to_string(pc - f.start_instr) +
                                 ": if on a " + RelaxValue::KindName(cond.kind()) + ", expected an int");
        pc += cond.int_value() != 0 ? 1 : in.offset;
        break;
      }
    }
  }
}

}  // namespace hetrt
