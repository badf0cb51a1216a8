// The Relax VM's interpreter loop and its calls: kernels through the packed
// C convention, VM functions on a register file reused per call depth,
// closures, and copies between the VM's devices.
#include "relax/interpreter.h"

#include "hetrt/base/dtype.h"
#include "hetrt/base/host_clock.h"
#include "hetrt/base/last_error.h"
#include "hetrt/tvm_abi/tvm_ffi_context.h"
#include "hetrt/tvm_abi/tvm_ffi_values.h"

namespace hetrt {
namespace {

// Deeper than any real model's call chain; a runaway recursion stops here
// with an error instead of overflowing the stack.
constexpr size_t kMaxCallDepth = 512;

// A register's value as tvm-ffi passes it (tuples nest: TVM's tuples are Arrays).
Result<FfiValue> ToFfiValue(const RelaxValue& v, int depth) {
  switch (v.kind()) {
    case RelaxValue::Kind::kNull: return FfiValue{};
    case RelaxValue::Kind::kInt: return FfiValue{v.int_value()};
    case RelaxValue::Kind::kFloat: return FfiValue{v.float_value()};
    case RelaxValue::Kind::kString: return FfiValue{v.string()};
    case RelaxValue::Kind::kTensor: return FfiValue{v.tensor()};
    case RelaxValue::Kind::kShape: return FfiValue{FfiShape{v.shape()}};
    case RelaxValue::Kind::kTuple: {
      if (depth >= static_cast<int>(kMaxCallDepth)) return InvalidArgument("tuples nested too deep");
      FfiArray array;
      array.items.reserve(v.tuple().size());
      for (const RelaxValue& item : v.tuple()) {
        HETRT_ASSIGN_OR_RETURN(FfiValue converted, ToFfiValue(item, depth + 1));
        array.items.push_back(std::move(converted));
      }
      return FfiValue{std::move(array)};
    }
    default:
      return InvalidArgument(std::string("a ") + RelaxValue::KindName(v.kind()) +
                             ", which hetrt does not pass to tvm-ffi functions");
  }
}

RelaxValue FromFfiValue(FfiValue value) {
  if (auto* i = std::get_if<int64_t>(&value)) return RelaxValue::Int(*i);
  if (auto* b = std::get_if<bool>(&value)) return RelaxValue::Int(*b ? 1 : 0);
  if (auto* f = std::get_if<double>(&value)) return RelaxValue::Float(*f);
  if (auto* s = std::get_if<std::string>(&value)) return RelaxValue::String(std::move(*s));
  if (auto* t = std::get_if<Tensor>(&value)) return RelaxValue::FromTensor(std::move(*t));
  if (auto* shape = std::get_if<FfiShape>(&value)) return RelaxValue::Shape(std::move(shape->dims));
  if (auto* array = std::get_if<FfiArray>(&value)) {
    RelaxTuple items;
    items.reserve(array->items.size());
    for (FfiValue& item : array->items) items.push_back(FromFfiValue(std::move(item)));
    return RelaxValue::Tuple(std::move(items));
  }
  return RelaxValue();
}

}  // namespace

int RelaxInterpreter::IndexOf(DLDevice device) const {
  for (size_t i = 0; i < device_list.size(); ++i)
    if (SameDevice(device_list[i], device)) return static_cast<int>(i);
  return -1;
}

RelaxInterpreter::~RelaxInterpreter() {
  for (size_t i = 0; i < copy_done_events.size(); ++i)
    if (copy_done_events[i] != nullptr) (void)devices[i].device.DestroyEvent(copy_done_events[i]);
}

// `waiter`'s stream waits on the device for what `signaler`'s stream has
// queued so far (an event of the signaler's); where the plugin cannot order
// the two that way (OpenCL devices of two platforms), the host waits instead.
Status RelaxInterpreter::OrderAfter(int waiter, hetrt_stream_t* waiter_stream, int signaler,
                                    hetrt_stream_t* signaler_stream) {
  const Device& from = devices[static_cast<size_t>(signaler)].device;
  const Device& to = devices[static_cast<size_t>(waiter)].device;
  if (copy_done_events.size() < devices.size()) copy_done_events.resize(devices.size(), nullptr);
  hetrt_event_t*& event = copy_done_events[static_cast<size_t>(signaler)];
  Status ordered = OkStatus();
  if (event == nullptr) {
    Result<hetrt_event_t*> made = from.NewEvent();
    if (made.ok()) event = *made;
    ordered = made.status();
  }
  if (ordered.ok()) ordered = from.Record(event, signaler_stream);
  if (ordered.ok()) ordered = to.WaitEvent(waiter_stream, event);
  return ordered.ok() ? ordered : from.Synchronize(signaler_stream);
}

Status RelaxInterpreter::CopyBetweenDevices(const Tensor& tensor, int source, Tensor& out, int target) {
  const Device& from = devices[static_cast<size_t>(source)].device;
  const Device& to = devices[static_cast<size_t>(target)].device;
  HETRT_ASSIGN_OR_RETURN(hetrt_stream_t * from_stream, from.CurrentStream());
  HETRT_ASSIGN_OR_RETURN(hetrt_stream_t * to_stream, to.CurrentStream());
  // The copy goes on the source's stream (the ABI's rule for a plugin's own
  // two devices). `out` may be a pool block the target's queued kernels still
  // read: the copy waits for them, and the target's later work for the copy.
  if (source != target) HETRT_RETURN_IF_ERROR(OrderAfter(source, from_stream, target, to_stream));
  HETRT_RETURN_IF_ERROR(from.Copy(tensor.data(), tensor.dl()->byte_offset, from.device(), out.data(),
                                  out.dl()->byte_offset, to.device(), tensor.nbytes(), from_stream, /*flags=*/0));
  if (source != target) HETRT_RETURN_IF_ERROR(OrderAfter(target, to_stream, source, from_stream));
  in_flight_sources.push_back(tensor);
  if (in_flight_sources.size() > 256) HETRT_RETURN_IF_ERROR(SynchronizeDevices());
  return OkStatus();
}

Result<Tensor> RelaxInterpreter::CopyTo(const Tensor& tensor, int device_index, bool may_alias) {
  const RelaxVmDevice& target = devices[static_cast<size_t>(device_index)];
  const DLDevice to = target.device.device();
  if (tensor.device().device_type != kDLCPU) {
    const int source = IndexOf(tensor.device());
    if (source >= 0 && to.device_type != kDLCPU) {
      const Device& from = devices[static_cast<size_t>(source)].device;
      if (from.plugin() == target.device.plugin() && from.plugin()->CanCopy(from.device(), to) && from.HasStreams() &&
          from.HasEvents()) {
        HETRT_ASSIGN_OR_RETURN(Tensor out, Tensor::Empty(tensor.shape(), tensor.dtype(), *target.allocator));
        HETRT_RETURN_IF_ERROR(CopyBetweenDevices(tensor, source, out, device_index));
        return out;
      }
    }
    // Work queued on the source device must finish before its bytes are read.
    if (source >= 0) {
      const RelaxVmDevice& from = devices[static_cast<size_t>(source)];
      if (from.device.CanSynchronize()) HETRT_RETURN_IF_ERROR(from.device.Synchronize(nullptr));
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

Status RelaxInterpreter::MoveConstantOnce(RelaxOperand* operands, uint32_t num_operands) {
  if (num_operands != 3) return OkStatus();  // the call itself reports what is wrong
  for (uint32_t i = 0; i < 3; ++i)
    if (operands[i].fixed == nullptr) return OkStatus();
  const RelaxValue& source = *operands[0].fixed;
  if (!source.is(RelaxValue::Kind::kTensor) || !operands[1].fixed->is(RelaxValue::Kind::kInt) ||
      !operands[2].fixed->is(RelaxValue::Kind::kInt))
    return OkStatus();
  const DLDevice target{static_cast<DLDeviceType>(operands[1].fixed->int_value()),
                        static_cast<int32_t>(operands[2].fixed->int_value())};
  const int index = IndexOf(target);
  const DLDevice from = source.tensor().device();
  if (index < 0 || SameDevice(from, target)) return OkStatus();
  for (size_t i = 0; i < moved_constants.size(); ++i) {  // one copy per constant and device
    const DLDevice at = moved_constants[i].tensor().device();
    if (moved_sources[i] == &source && SameDevice(at, target)) {
      operands[0].fixed = &moved_constants[i];
      return OkStatus();
    }
  }
  HETRT_ASSIGN_OR_RETURN(Tensor copy, CopyTo(source.tensor(), index));
  moved_constants.push_back(RelaxValue::FromTensor(std::move(copy)));
  moved_sources.push_back(&source);
  operands[0].fixed = &moved_constants.back();
  return OkStatus();
}

Status RelaxInterpreter::SynchronizeDevices() {
  for (const RelaxVmDevice& d : devices) {
    if (d.device.device().device_type == kDLCPU || !d.device.CanSynchronize()) continue;
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
      case RelaxValue::Kind::kTensor: codes[i] = HETRT_TYPE_DLTENSOR, values[i].v_handle = v.tensor().dl(); break;
      case RelaxValue::Kind::kInt: codes[i] = HETRT_TYPE_INT, values[i].v_int64 = v.int_value(); break;
      case RelaxValue::Kind::kFloat: codes[i] = HETRT_TYPE_FLOAT, values[i].v_float64 = v.float_value(); break;
      case RelaxValue::Kind::kDataType: codes[i] = HETRT_TYPE_DATATYPE, values[i].v_type = v.dtype(); break;
      case RelaxValue::Kind::kNull: codes[i] = HETRT_TYPE_NULL, values[i].v_handle = nullptr; break;
      case RelaxValue::Kind::kString: codes[i] = HETRT_TYPE_STR, values[i].v_str = v.string().c_str(); break;
      default:
        if (v.is(RelaxValue::Kind::kShape) || v.is(RelaxValue::Kind::kTuple))
          if (hetrt_ffi_safe_call_t ffi = FfiSafeCallOf(kernel)) return CallFfi(kernel, ffi, args, extra_ints, result);
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

Status RelaxInterpreter::CallFfiKernel(const PackedFunc& packed, hetrt_ffi_safe_call_t function,
                                       const RelaxCallArgs& args, RelaxValue* result) {
  const uint32_t n = args.size();
  if (n > ffi_args.size()) ffi_args.resize(n);
  hetrt_ffi_any_t* anys = ffi_args.data();
  for (uint32_t i = 0; i < n; ++i) {
    const RelaxValue& v = args[i];
    hetrt_ffi_any_t& a = anys[i];
    a = hetrt_ffi_any_t{};
    switch (v.kind()) {
      case RelaxValue::Kind::kTensor: a.type_index = HETRT_FFI_DLTENSOR_PTR, a.v_ptr = v.tensor().dl(); break;
      case RelaxValue::Kind::kInt: a.type_index = HETRT_FFI_INT, a.v_int64 = v.int_value(); break;
      case RelaxValue::Kind::kFloat: a.type_index = HETRT_FFI_FLOAT, a.v_float64 = v.float_value(); break;
      case RelaxValue::Kind::kDataType: a.type_index = HETRT_FFI_DATA_TYPE, a.v_dtype = v.dtype(); break;
      case RelaxValue::Kind::kNull: a.type_index = HETRT_FFI_NONE; break;
      case RelaxValue::Kind::kString: a.type_index = HETRT_FFI_RAW_STR, a.v_c_str = v.string().c_str(); break;
      default: return CallFfi(packed, function, args, nullptr, result);
    }
  }
  hetrt_ffi_any_t ret{};
  HETRT_RETURN_IF_ERROR(FfiKernelOutcome(function(nullptr, anys, static_cast<int32_t>(n), &ret), ret));
  ++stats.kernel_calls;
  switch (ret.type_index) {
    case HETRT_FFI_INT:
    case HETRT_FFI_BOOL: *result = RelaxValue::Int(ret.v_int64); break;
    case HETRT_FFI_FLOAT: *result = RelaxValue::Float(ret.v_float64); break;
    default: *result = RelaxValue(); break;
  }
  return OkStatus();
}

Status RelaxInterpreter::CallFfi(const PackedFunc& packed, hetrt_ffi_safe_call_t function, const RelaxCallArgs& args,
                                 const std::vector<int64_t>* extra_ints, RelaxValue* result) {
  std::vector<FfiValue> values;
  values.reserve(args.size() + (extra_ints ? extra_ints->size() : 0));
  // A dtype has no FfiValue: such a call goes the packed way (a DataType POD),
  // where a result can be no object, unless it also passes a shape or a tuple.
  bool dtype = false, objects = false;
  for (uint32_t i = 0; i < args.size(); ++i) {
    dtype |= args[i].is(RelaxValue::Kind::kDataType);
    objects |= args[i].is(RelaxValue::Kind::kShape) || args[i].is(RelaxValue::Kind::kTuple);
  }
  if (dtype && !objects) return CallKernel(packed, args, extra_ints, result);
  for (uint32_t i = 0; i < args.size(); ++i) {
    HETRT_ASSIGN_OR_RETURN(FfiValue value, ToFfiValue(args[i], 0), "argument " + std::to_string(i));
    values.push_back(std::move(value));
  }
  if (extra_ints != nullptr)
    for (int64_t v : *extra_ints) values.emplace_back(v);
  HETRT_ASSIGN_OR_RETURN(FfiValue returned, CallFfiFunction(function, nullptr, values, "the tvm-ffi function"));
  ++stats.kernel_calls;
  *result = FromFfiValue(std::move(returned));
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
    case Callee::Kind::kKernel:
      HETRT_RETURN_IF_ERROR(c.ffi != nullptr ? CallFfi(*c.kernel, c.ffi, call_args, nullptr, &result)
                                             : CallKernel(*c.kernel, call_args, nullptr, &result));
      break;
    case Callee::Kind::kBuiltin: HETRT_RETURN_IF_ERROR(c.builtin(*this, call_args, &result)); break;
  }
  return result;
}

Status RelaxInterpreter::Call(const Instruction& in, const RelaxCallArgs& args, RelaxValue* result) {
  const Callee& callee = callees[in.callee];
  switch (callee.kind) {
    case Callee::Kind::kBuiltin:
      ++stats.builtin_calls;
      if (in.reusing != nullptr) return in.reusing(*this, args, &spares[in.spare], result);
      return callee.builtin(*this, args, result);
    case Callee::Kind::kKernel:
      // Compiled kernels write their outputs and return nothing (%void): the
      // packed path. A used result may be an object.
      if (callee.ffi != nullptr && in.reg < kRelaxVoidRegister) [[unlikely]]
        return CallFfi(*callee.kernel, callee.ffi, args, nullptr, result);
      // A kernel observer sees packed values: those calls go the packed way.
      if (callee.ffi != nullptr && !kernel_observer) return CallFfiKernel(*callee.kernel, callee.ffi, args, result);
      return CallKernel(*callee.kernel, args, nullptr, result);
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
    if (index >= 0 && devices[static_cast<size_t>(index)].device.CanSynchronize())
      s = devices[static_cast<size_t>(index)].device.Synchronize(nullptr);
  }
  profile->events[slot].start_ns = start;
  profile->events[slot].end_ns = HostNowNs();
  return s;
}

void RelaxInterpreter::ReleaseSpares(uint32_t function) {
  for (uint32_t i : function_spares[function]) {
    RelaxValue& spare = spares[i];
    if (spare.is(RelaxValue::Kind::kTensor) && spare.use_count() == 1) spare.tensor().ReleaseMemory();
  }
}

Result<RelaxValue> RelaxInterpreter::Run(uint32_t function, const RelaxCallArgs& args) {
  const RelaxFunction& f = exe->functions[function];
  if (static_cast<int64_t>(args.size()) != f.num_args) {
    std::string names;
    for (const std::string& p : f.param_names) names += (names.empty() ? "" : ", ") + p;
    return InvalidArgument("function '" + f.name + "' takes " + std::to_string(f.num_args) + " argument(s) (" + names +
                           "), got " + std::to_string(args.size()));
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
    uint32_t function;
    ~DepthGuard() {
      for (RelaxValue& r : impl.frames[depth]) r = RelaxValue();  // drop what the call held
      impl.depth = depth;
      impl.ReleaseSpares(function);
    }
  } guard{*this, my_depth, function};
  // Results of the last call the caller has dropped since give their memory back now.
  ReleaseSpares(function);
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
        if (in.clears_register && profile == nullptr) {
          ++stats.builtin_calls;
          if (in.reg < kRelaxVoidRegister) regs[in.reg] = RelaxValue();
          ++pc;
          break;
        }
        const RelaxCallArgs call_args(operands.data() + in.operands_begin, regs, in.num_operands);
        RelaxValue result;
        Status s = profile == nullptr ? Call(in, call_args, &result) : CallProfiled(in, call_args, &result);
        if (!s.ok()) [[unlikely]]
          return s.WithContext("function '" + f.name + "' instruction " + std::to_string(pc - f.start_instr) +
                               " (call " + FunctionName(in.callee) + ")");
        if (recorder != nullptr && my_depth == 0) [[unlikely]]
          recorder->Observe(*this, static_cast<uint32_t>(pc - f.start_instr), in, result);
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
