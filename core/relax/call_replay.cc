// Recording a straight-line VM call and replaying it (call_replay.h says why
// and when).
#include "relax/call_replay.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <unordered_map>
#include <utility>

#include "hetrt/base/dtype.h"
#include "hetrt/base/last_error.h"
#include "hetrt/tvm_abi/tvm_ffi_values.h"

namespace hetrt {

using Kind = RelaxValue::Kind;

// What an instruction is to a recording.
enum class RelaxFunctionReplay::Role : uint8_t {
  kKernel,
  kCheck,    // checks and matches a value's shape or kind: fixed by the signature
  kPure,     // builds a shape, view, tuple or tensor from other values: its result is kept
  kHeap,     // vm.builtin.alloc_shape_heap
  kStorage,  // vm.builtin.alloc_storage: memory the recording pins
  kLive,     // a builtin with effects (the KV cache's): called again on replay
};

// One argument of the recorded signature.
struct RelaxFunctionReplay::ArgKey {
  Kind kind = Kind::kNull;
  DLDevice device{};  // a tensor's
  DLDataType dtype{};
  std::vector<int64_t> shape;
  RelaxValue value;  // anything else: the value, an object held (its identity)
};

// A kernel or stateful builtin the recorded call made, with its arguments.
struct RelaxFunctionReplay::Capture {
  uint32_t index = 0;  // the instruction
  bool live = false;
  std::vector<RelaxValue> operands;
  std::vector<int32_t> argument;  // per operand: the argument it passes again on replay, or -1
};

struct RelaxFunctionReplay::InProgress {
  std::vector<ArgKey> keys;
  std::vector<RelaxValue> args;  // to tell a result that is an argument
  std::vector<Capture> captures;
  std::vector<const void*> heaps;      // the shape heaps' tensor objects
  std::vector<const void*> vm_memory;  // memory alloc_storage made
  std::string abort;                   // why this call cannot be replayed
};

struct RelaxFunctionReplay::Recording {
  struct Step {
    uint32_t index = 0;  // the instruction, for errors
    uint32_t callee = 0;
    bool live = false;
    RelaxBuiltin builtin = nullptr;  // live
    std::vector<RelaxValue> operands;
    hetrt_ffi_safe_call_t ffi = nullptr;                 // a tvm-ffi kernel
    const PackedFunc* packed = nullptr;                  // a packed kernel
    uint32_t begin = 0, count = 0;                       // its arguments in anys / values + codes
    std::vector<std::pair<uint32_t, uint32_t>> rebinds;  // (slot, argument)
  };
  // A value the recording pinned that no one else may hold when it replays.
  struct Held {
    uint32_t owned = 0;  // index into owned (tensors) or UINT32_MAX: a tuple of the result
    const RelaxValue* value = nullptr;
    long use_count = 0;
    long memory_holders = 0;  // tensors: how many of the recording's tensors share its memory
  };

  std::vector<ArgKey> keys;
  std::vector<RelaxValue> owned;  // the recording's own tensor objects
  std::vector<Step> steps;
  std::vector<hetrt_ffi_any_t> anys;
  std::vector<hetrt_value_t> values;
  std::vector<int32_t> codes;
  std::vector<Held> held;
  RelaxValue result;
  RelaxCallStats stats;
  uint64_t last_used = 0;
};

namespace {

constexpr size_t kRecentCalls = 8;

bool Matches(const RelaxValue& v, Kind kind, const DLDevice& device, const DLDataType& dtype,
             const std::vector<int64_t>& shape, const RelaxValue& value) {
  if (v.kind() != kind) return false;
  switch (kind) {
    case Kind::kTensor: {
      const Tensor& t = v.tensor();
      return SameDevice(t.device(), device) && t.dtype() == dtype && t.shape() == shape;
    }
    case Kind::kNull:
    case Kind::kVm: return true;
    case Kind::kInt:
    case Kind::kFunction: return v.int_value() == value.int_value();
    case Kind::kFloat: {
      const double a = v.float_value(), b = value.float_value();
      return std::memcmp(&a, &b, sizeof a) == 0;
    }
    case Kind::kDataType: return v.dtype() == value.dtype();
    case Kind::kShape: return v.shape() == value.shape();
    case Kind::kString: return v.string() == value.string();
    default: return v.SameObject(value);  // tuples, storage, closures, objects: the same one
  }
}

uint64_t Mix(uint64_t h, uint64_t v) { return (h ^ v) * 0x100000001b3ull; }

uint64_t Fingerprint(std::span<const RelaxValue> args) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (const RelaxValue& v : args) {
    h = Mix(h, static_cast<uint64_t>(v.kind()));
    switch (v.kind()) {
      case Kind::kTensor: {
        const Tensor& t = v.tensor();
        h = Mix(h, static_cast<uint64_t>(t.device().device_type) << 32 | static_cast<uint32_t>(t.device().device_id));
        h = Mix(h, static_cast<uint64_t>(t.dtype().code) << 24 | static_cast<uint64_t>(t.dtype().bits) << 16 |
                       t.dtype().lanes);
        for (int64_t d : t.shape()) h = Mix(h, static_cast<uint64_t>(d));
        break;
      }
      case Kind::kInt:
      case Kind::kFunction: h = Mix(h, static_cast<uint64_t>(v.int_value())); break;
      case Kind::kShape:
        for (int64_t d : v.shape()) h = Mix(h, static_cast<uint64_t>(d));
        break;
      case Kind::kString: h = Mix(h, std::hash<std::string>{}(v.string())); break;
      default: h = Mix(h, reinterpret_cast<uintptr_t>(v.object_address())); break;
    }
  }
  return h;
}

bool IsScalar(const RelaxValue& v) {
  return v.is(Kind::kInt) || v.is(Kind::kFloat) || v.is(Kind::kDataType) || v.is(Kind::kNull);
}

bool Contains(const std::vector<const void*>& set, const void* p) {
  return p != nullptr && std::find(set.begin(), set.end(), p) != set.end();
}

}  // namespace

RelaxFunctionReplay::RelaxFunctionReplay(uint32_t function, uint32_t num_args, size_t max_signatures)
    : function_(function), num_args_(num_args), max_signatures_(std::max<size_t>(max_signatures, 1)) {}

RelaxFunctionReplay::~RelaxFunctionReplay() = default;

Result<std::shared_ptr<RelaxFunctionReplay>> RelaxFunctionReplay::Create(const RelaxInterpreter& vm, uint32_t function,
                                                                         size_t max_signatures) {
  const RelaxFunction& f = vm.exe->functions[function];
  std::shared_ptr<RelaxFunctionReplay> replay(
      new RelaxFunctionReplay(function, static_cast<uint32_t>(f.num_args), max_signatures));
  replay->first_write_.assign(static_cast<size_t>(f.num_args), UINT32_MAX);
  static constexpr std::string_view kChecks[] = {"vm.builtin.check_tensor_info",     "vm.builtin.check_shape_info",
                                                 "vm.builtin.check_prim_value_info", "vm.builtin.check_tuple_info",
                                                 "vm.builtin.check_func_info",       "vm.builtin.match_shape",
                                                 "vm.builtin.match_prim_value",      "vm.builtin.shape_of"};
  static constexpr std::string_view kPure[] = {
      "vm.builtin.make_shape", "vm.builtin.make_prim_value", "vm.builtin.alloc_tensor", "vm.builtin.reshape",
      "vm.builtin.null_value", "vm.builtin.tuple_getitem",   "vm.builtin.make_tuple"};
  for (int64_t pc = f.start_instr; pc < f.end_instr; ++pc) {
    const RelaxInterpreter::Instruction& in = vm.code[static_cast<size_t>(pc)];
    const uint32_t index = static_cast<uint32_t>(pc - f.start_instr);
    const std::string where = "function '" + f.name + "' instruction " + std::to_string(index);
    if (in.op == RelaxInstruction::Op::kIf || in.op == RelaxInstruction::Op::kGoto)
      return FailedPrecondition(where + " branches: only straight-line functions are replayed");
    if (in.op != RelaxInstruction::Op::kCall) {
      replay->roles_.push_back(Role::kCheck);  // Ret
      continue;
    }
    if (in.reg >= 0 && in.reg < f.num_args && replay->first_write_[static_cast<size_t>(in.reg)] == UINT32_MAX)
      replay->first_write_[static_cast<size_t>(in.reg)] = index;
    const RelaxInterpreter::Callee& callee = vm.callees[in.callee];
    const std::string& name = vm.FunctionName(in.callee);
    Role role = Role::kLive;
    if (callee.kind == RelaxInterpreter::Callee::Kind::kVmFunction)
      return FailedPrecondition(where + " calls VM function '" + name +
                                "': only calls of kernels and builtins are replayed");
    if (callee.kind == RelaxInterpreter::Callee::Kind::kKernel)
      role = Role::kKernel;
    else if (std::find(std::begin(kChecks), std::end(kChecks), name) != std::end(kChecks))
      role = Role::kCheck;
    else if (std::find(std::begin(kPure), std::end(kPure), name) != std::end(kPure))
      role = Role::kPure;
    else if (name == "vm.builtin.alloc_shape_heap")
      role = Role::kHeap;
    else if (name == "vm.builtin.alloc_storage")
      role = Role::kStorage;
    replay->roles_.push_back(role);
  }
  return replay;
}

bool RelaxFunctionReplay::ShouldRecord(std::span<const RelaxValue> args) {
  ++stats_.interpreted;
  // Its signature's recording exists, held: recording it again would pin
  // more memory for the same calls.
  const bool held = std::exchange(held_, false);
  if (held || !stats_.disabled.empty()) return false;
  const uint64_t h = Fingerprint(args);
  if (std::find(recent_.begin(), recent_.end(), h) != recent_.end()) return true;
  if (recent_.size() < kRecentCalls) {
    recent_.push_back(h);
  } else {
    recent_[recent_next_] = h;
    recent_next_ = (recent_next_ + 1) % kRecentCalls;
  }
  return false;
}

void RelaxFunctionReplay::BeginRecording(std::span<const RelaxValue> args) {
  recording_ = std::make_unique<InProgress>();
  for (const RelaxValue& v : args) {
    ArgKey key;
    key.kind = v.kind();
    if (v.is(Kind::kTensor)) {
      key.device = v.tensor().device();
      key.dtype = v.tensor().dtype();
      key.shape = v.tensor().shape();
    } else {
      key.value = v;
    }
    recording_->keys.push_back(std::move(key));
    recording_->args.push_back(v);
  }
}

void RelaxFunctionReplay::Abort(std::string why) {
  if (recording_ != nullptr && recording_->abort.empty()) recording_->abort = std::move(why);
}

void RelaxFunctionReplay::Observe(const RelaxInterpreter& vm, uint32_t index, const RelaxInterpreter::Instruction& in,
                                  const RelaxValue& result) {
  InProgress& rec = *recording_;
  if (!rec.abort.empty()) return;
  const RelaxOperand* operands = vm.operands.data() + in.operands_begin;
  const RelaxValue* regs = vm.frames[0].data();
  auto value = [&](uint32_t i) -> const RelaxValue& {
    return operands[i].fixed != nullptr ? *operands[i].fixed : regs[operands[i].reg];
  };
  // The argument operand i still passes (its register not yet overwritten), or -1.
  auto argument = [&](uint32_t i) -> int32_t {
    const RelaxOperand& o = operands[i];
    if (o.fixed != nullptr || o.reg >= num_args_ || first_write_[o.reg] < index) return -1;
    return static_cast<int32_t>(o.reg);
  };
  auto is_heap = [&](const RelaxValue& v) { return v.is(Kind::kTensor) && Contains(rec.heaps, v.object_address()); };
  const std::string& name = vm.FunctionName(in.callee);
  switch (roles_[index]) {
    case Role::kCheck: return;
    case Role::kPure:
      for (uint32_t i = 0; i < in.num_operands; ++i)
        if (argument(i) >= 0 && value(i).is(Kind::kTensor))
          return Abort(name + " (instruction " + std::to_string(index) + ") makes a value from tensor argument " +
                       std::to_string(argument(i)));
      return;
    case Role::kHeap: rec.heaps.push_back(result.object_address()); return;
    case Role::kStorage:
      if (result.is(Kind::kStorage)) rec.vm_memory.push_back(result.tensor().memory_identity());
      return;
    case Role::kKernel: {
      bool heap = false, tensors = false;
      for (uint32_t i = 0; i < in.num_operands; ++i) {
        heap |= is_heap(value(i));
        tensors |= !is_heap(value(i)) && !IsScalar(value(i));
      }
      // A shape function (the heap and numbers), or a kernel whose result is
      // used computing a number from numbers: the signature fixes what it
      // computes, so replay skips it and keeps its result.
      if (!tensors) return;
      if (heap)
        return Abort("kernel " + name + " (instruction " + std::to_string(index) +
                     ") takes the shape heap with tensors");
      if (in.reg < kRelaxVoidRegister)
        return Abort("kernel " + name + " (instruction " + std::to_string(index) + ") returns a value");
      Capture c;
      c.index = index;
      for (uint32_t i = 0; i < in.num_operands; ++i) {
        const RelaxValue& v = value(i);
        if (!v.is(Kind::kTensor) && !IsScalar(v) && !v.is(Kind::kString))
          return Abort("kernel " + name + " (instruction " + std::to_string(index) + ") takes a " +
                       RelaxValue::KindName(v.kind()));
        const int32_t arg = v.is(Kind::kTensor) ? argument(i) : -1;
        c.argument.push_back(arg);
        c.operands.push_back(arg >= 0 ? RelaxValue() : v);
      }
      rec.captures.push_back(std::move(c));
      return;
    }
    case Role::kLive: {
      if (!result.is_null())
        return Abort(name + " (instruction " + std::to_string(index) + ") returns a " +
                     RelaxValue::KindName(result.kind()) + ", which replay would not make again");
      Capture c;
      c.index = index;
      c.live = true;
      for (uint32_t i = 0; i < in.num_operands; ++i) {
        const RelaxValue& v = value(i);
        if (is_heap(v)) return Abort(name + " (instruction " + std::to_string(index) + ") takes the shape heap");
        const int32_t arg = argument(i);
        c.argument.push_back(arg);
        c.operands.push_back(arg >= 0 ? RelaxValue() : v);
      }
      rec.captures.push_back(std::move(c));
      return;
    }
  }
}

void RelaxFunctionReplay::FinishRecording(RelaxInterpreter& vm, const Result<RelaxValue>& result) {
  std::unique_ptr<InProgress> rec = std::move(recording_);
  if (!result.ok()) return;
  if (!rec->abort.empty()) {
    stats_.disabled = "function '" + vm.FunctionName(function_) + "': " + rec->abort;
    return;
  }
  auto r = std::make_unique<Recording>();
  // The recording's own tensor objects: a caller holding the call's result
  // (the interpreter's objects) then shows in the memory's holder count.
  std::unordered_map<const void*, uint32_t> own_index;
  auto own = [&](const RelaxValue& v) -> RelaxValue {
    auto [it, added] = own_index.emplace(v.object_address(), static_cast<uint32_t>(r->owned.size()));
    if (added) r->owned.push_back(RelaxValue::FromTensor(v.tensor()));
    return r->owned[it->second];
  };
  // The result, rebuilt from the recording's objects.
  std::string refused;
  std::vector<const RelaxValue*> tuples;
  auto rebuild = [&](auto& self, const RelaxValue& v, int depth) -> RelaxValue {
    if (depth > 64) {
      refused = "its result nests tuples deeper than 64";
      return {};
    }
    if (v.is(Kind::kTensor)) {
      for (const RelaxValue& a : rec->args)
        if (a.is(Kind::kTensor) && (a.SameObject(v) || (a.tensor().memory_identity() != nullptr &&
                                                        a.tensor().memory_identity() == v.tensor().memory_identity())))
          refused = "it returns a tensor argument's memory";
      return own(v);
    }
    if (!v.is(Kind::kTuple)) return v;
    RelaxTuple items;
    items.reserve(v.tuple().size());
    for (const RelaxValue& item : v.tuple()) items.push_back(self(self, item, depth + 1));
    return RelaxValue::Tuple(std::move(items));
  };
  r->result = rebuild(rebuild, *result, 0);
  if (!refused.empty()) {
    stats_.disabled = "function '" + vm.FunctionName(function_) + "': " + refused;
    return;
  }
  const RelaxFunction& f = vm.exe->functions[function_];
  for (Capture& c : rec->captures) {
    Recording::Step s;
    s.index = c.index;
    const RelaxInterpreter::Instruction& in = vm.code[static_cast<size_t>(f.start_instr + c.index)];
    s.callee = in.callee;
    const RelaxInterpreter::Callee& callee = vm.callees[in.callee];
    for (uint32_t i = 0; i < c.operands.size(); ++i)
      if (c.argument[i] >= 0) s.rebinds.emplace_back(i, static_cast<uint32_t>(c.argument[i]));
    if (c.live) {
      s.live = true;
      s.builtin = callee.builtin;
      for (const RelaxValue& v : c.operands) s.operands.push_back(v.is(Kind::kTensor) ? own(v) : v);
      r->steps.push_back(std::move(s));
      continue;
    }
    s.ffi = callee.ffi;
    s.packed = callee.kernel;
    s.count = static_cast<uint32_t>(c.operands.size());
    s.begin = static_cast<uint32_t>(s.ffi != nullptr ? r->anys.size() : r->values.size());
    for (uint32_t i = 0; i < c.operands.size(); ++i) {
      const RelaxValue v = c.operands[i].is(Kind::kTensor) ? own(c.operands[i]) : c.operands[i];
      const bool tensor = v.is(Kind::kTensor) || c.argument[i] >= 0;
      if (s.ffi != nullptr) {
        hetrt_ffi_any_t a{};
        if (tensor)
          a.type_index = HETRT_FFI_DLTENSOR_PTR, a.v_ptr = c.argument[i] >= 0 ? nullptr : v.tensor().dl();
        else if (v.is(Kind::kInt))
          a.type_index = HETRT_FFI_INT, a.v_int64 = v.int_value();
        else if (v.is(Kind::kFloat))
          a.type_index = HETRT_FFI_FLOAT, a.v_float64 = v.float_value();
        else if (v.is(Kind::kDataType))
          a.type_index = HETRT_FFI_DATA_TYPE, a.v_dtype = v.dtype();
        else if (v.is(Kind::kString))
          a.type_index = HETRT_FFI_RAW_STR, a.v_c_str = v.string().c_str();
        else
          a.type_index = HETRT_FFI_NONE;
        r->anys.push_back(a);
      } else {
        hetrt_value_t x{};
        int32_t code = HETRT_TYPE_NULL;
        if (tensor)
          code = HETRT_TYPE_DLTENSOR, x.v_handle = c.argument[i] >= 0 ? nullptr : v.tensor().dl();
        else if (v.is(Kind::kInt))
          code = HETRT_TYPE_INT, x.v_int64 = v.int_value();
        else if (v.is(Kind::kFloat))
          code = HETRT_TYPE_FLOAT, x.v_float64 = v.float_value();
        else if (v.is(Kind::kDataType))
          code = HETRT_TYPE_DATATYPE, x.v_type = v.dtype();
        else if (v.is(Kind::kString))
          code = HETRT_TYPE_STR, x.v_str = v.string().c_str();
        r->values.push_back(x);
        r->codes.push_back(code);
      }
      // Strings are read through the captured value: keep it.
      if (v.is(Kind::kString)) s.operands.push_back(v);
    }
    r->steps.push_back(std::move(s));
  }
  // What must be free before a replay: what the call returned, as only the
  // caller can hold it (kernels and hetrt's builtins keep no tensor): its
  // tuples, and its tensors in memory this call allocated (their objects and
  // their memory, which other tensors of the recording may share).
  std::unordered_map<const void*, long> tensors_per_memory;
  std::unordered_map<const void*, uint32_t> owned_index;  // the recording's objects (the result's)
  for (uint32_t i = 0; i < r->owned.size(); ++i) {
    ++tensors_per_memory[r->owned[i].tensor().memory_identity()];
    owned_index.emplace(r->owned[i].object_address(), i);
  }
  auto collect = [&](auto& self, const RelaxValue& v) -> void {
    if (v.is(Kind::kTensor)) {
      const uint32_t i = owned_index.find(v.object_address())->second;  // rebuild() owned every result tensor
      const Tensor& t = r->owned[i].tensor();
      if (Contains(rec->vm_memory, t.memory_identity()))
        r->held.push_back({i, &r->owned[i], r->owned[i].use_count(), tensors_per_memory[t.memory_identity()]});
      return;
    }
    if (!v.is(Kind::kTuple)) return;
    tuples.push_back(&v);
    for (const RelaxValue& item : v.tuple()) self(self, item);
  };
  collect(collect, r->result);
  for (const RelaxValue* t : tuples) r->held.push_back({UINT32_MAX, t, t->use_count(), 0});
  r->keys = std::move(rec->keys);
  r->stats = vm.stats;
  r->last_used = ++clock_;
  // The interpreter lets go of this function's objects: the recording holds
  // what it needs, and nothing else may hold them unseen.
  for (uint32_t i : vm.function_spares[function_]) vm.spares[i] = RelaxValue();
  if (recordings_.size() >= max_signatures_) {
    auto oldest = std::min_element(recordings_.begin(), recordings_.end(),
                                   [](const auto& a, const auto& b) { return a->last_used < b->last_used; });
    recordings_.erase(oldest);
    ++stats_.evicted;
  }
  recordings_.push_back(std::move(r));
  ++stats_.recorded;
}

std::optional<Result<RelaxValue>> RelaxFunctionReplay::Replay(RelaxInterpreter& vm, std::span<const RelaxValue> args) {
  for (size_t k = 0; k < recordings_.size(); ++k) {
    Recording& r = *recordings_[k];
    if (r.keys.size() != args.size()) continue;
    bool same = true;
    for (size_t i = 0; i < args.size() && same; ++i) {
      const ArgKey& key = r.keys[i];
      same = Matches(args[i], key.kind, key.device, key.dtype, key.shape, key.value);
    }
    if (!same) continue;
    for (const Recording::Held& h : r.held) {
      const bool free = h.value->use_count() == h.use_count &&
                        (h.owned == UINT32_MAX || h.value->tensor().memory_holders() == h.memory_holders);
      if (!free) {
        ++stats_.result_held;
        held_ = true;
        return std::nullopt;
      }
    }
    // A holder on another thread let go with a release decrement: what it
    // read of the memory happens before the kernels write it again.
    std::atomic_thread_fence(std::memory_order_acquire);
    Status s = Run(vm, r, args);
    if (!s.ok()) {
      recordings_.erase(recordings_.begin() + static_cast<std::ptrdiff_t>(k));
      return Result<RelaxValue>(std::move(s));
    }
    vm.stats = r.stats;
    r.last_used = ++clock_;
    ++stats_.replayed;
    return Result<RelaxValue>(r.result);
  }
  return std::nullopt;
}

Status RelaxFunctionReplay::Run(RelaxInterpreter& vm, Recording& r, std::span<const RelaxValue> args) {
  for (Recording::Step& s : r.steps) {
    Status status = OkStatus();
    if (s.live) {
      for (const auto& [slot, arg] : s.rebinds) s.operands[slot] = args[arg];
      RelaxValue ignored;
      status = s.builtin(vm, RelaxCallArgs(s.operands.data(), static_cast<uint32_t>(s.operands.size())), &ignored);
      for (const auto& [slot, arg] : s.rebinds) s.operands[slot] = RelaxValue();
    } else if (s.ffi != nullptr) {
      hetrt_ffi_any_t* anys = r.anys.data() + s.begin;
      for (const auto& [slot, arg] : s.rebinds) anys[slot].v_ptr = const_cast<DLTensor*>(args[arg].tensor().dl());
      hetrt_ffi_any_t ret{};
      status = FfiKernelOutcome(s.ffi(nullptr, anys, static_cast<int32_t>(s.count), &ret), ret);
    } else {
      hetrt_value_t* values = r.values.data() + s.begin;
      for (const auto& [slot, arg] : s.rebinds) values[slot].v_handle = const_cast<DLTensor*>(args[arg].tensor().dl());
      hetrt_value_t ret{};
      int32_t ret_code = HETRT_TYPE_NULL;
      if (s.packed->call(values, r.codes.data() + s.begin, static_cast<int32_t>(s.count), &ret, &ret_code,
                         s.packed->resource) != 0) [[unlikely]] {
        std::string message = LastErrorMessage();
        status = Internal(message.empty() ? "the function failed without reporting why" : message);
      }
    }
    if (!status.ok()) [[unlikely]]
      return status.WithContext("function '" + vm.FunctionName(function_) + "' instruction " + std::to_string(s.index) +
                                " (call " + vm.FunctionName(s.callee) + ", replayed)");
  }
  return OkStatus();
}

}  // namespace hetrt
