// Inside the Relax VM: the resolved function pool, the decoded code the
// interpreter walks, devices with their allocators, and the builtins' view of
// all of it. RelaxVirtualMachine (relax_vm.cc) fills it at creation; the loop
// (relax_interpreter.cc) and the builtins (relax_builtins.cc) run on it.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "hetrt/device/device.h"
#include "hetrt/formats/relax_executable.h"
#include "hetrt/module/module.h"
#include "hetrt/plugin_host/plugin_registry.h"
#include "hetrt/relax/profile.h"
#include "hetrt/relax/value.h"
#include "hetrt/tvm_abi/tvm_ffi_c_abi.h"
#include "relax/pooled_allocator.h"

namespace hetrt {

// The arguments of one Call, read in place: registers of the current frame,
// or values fixed at creation (immediates, constants, function references).
struct RelaxOperand {
  const RelaxValue* fixed = nullptr;  // NULL: a register of the frame
  uint32_t reg = 0;
};

class RelaxCallArgs {
 public:
  RelaxCallArgs(const RelaxOperand* operands, const RelaxValue* regs, uint32_t size)
      : operands_(operands), regs_(regs), size_(size) {}
  // For calls made by builtins (closures): plain values.
  RelaxCallArgs(const RelaxValue* values, uint32_t size) : values_(values), size_(size) {}
  uint32_t size() const { return size_; }
  // The value argument i was fixed to at creation (an immediate, a constant);
  // NULL for a register or a value a builtin passed.
  const RelaxValue* fixed(uint32_t i) const { return values_ == nullptr ? operands_[i].fixed : nullptr; }
  // Read on every argument of every call: always inlined (GCC otherwise
  // splits it into an out-of-line part).
  [[gnu::always_inline]] const RelaxValue& operator[](uint32_t i) const {
    if (values_ != nullptr) return values_[i];
    const RelaxOperand& o = operands_[i];
    return o.fixed != nullptr ? *o.fixed : regs_[o.reg];
  }

 private:
  const RelaxOperand* operands_ = nullptr;
  const RelaxValue* regs_ = nullptr;
  const RelaxValue* values_ = nullptr;
  uint32_t size_ = 0;
};

struct RelaxVmDevice {
  Device device;
  Allocator* allocator = nullptr;         // the pool, or the plugin's allocator (naive)
  std::shared_ptr<PooledAllocator> pool;  // set when pooled
};

struct RelaxInterpreter;
class RelaxFunctionReplay;
class RelaxCallObserver;
using RelaxBuiltin = Status (*)(RelaxInterpreter& vm, const RelaxCallArgs& args, RelaxValue* result);
struct NamedRelaxBuiltin {
  std::string_view name;
  RelaxBuiltin fn;
};

// The builtins of each concept, by TVM name (each file its own table).
std::span<const NamedRelaxBuiltin> CoreRelaxBuiltins();         // builtins.cc
std::span<const NamedRelaxBuiltin> KvCacheRelaxBuiltins();      // kv_cache_builtins.cc
std::span<const NamedRelaxBuiltin> TensorCacheRelaxBuiltins();  // tensor_cache_builtins.cc
std::span<const NamedRelaxBuiltin> LmRelaxBuiltins();           // lm_builtins.cc
std::span<const NamedRelaxBuiltin> CudaGraphRelaxBuiltins();    // cuda_graph_builtins.cc

// A builtin hetrt implements, by TVM name; nullptr when there is none.
RelaxBuiltin FindRelaxBuiltin(std::string_view name);

// A builtin that makes a new object each call (a tensor view, a shape), given
// its instruction's spare: the object it made last time. When nothing else
// holds that one, it is rewritten in place (no allocation); otherwise a new
// object is made and kept as the spare.
using RelaxReusingBuiltin = Status (*)(RelaxInterpreter& vm, const RelaxCallArgs& args, RelaxValue* spare,
                                       RelaxValue* result);
struct ReusingRelaxBuiltin {
  RelaxBuiltin builtin;         // what the function table names
  RelaxReusingBuiltin reusing;  // the same, with a spare
};
// alloc_tensor, reshape, make_shape: an LLM decode step's 64 new objects.
std::span<const ReusingRelaxBuiltin> ReusingRelaxBuiltins();  // builtins.cc
// Why a builtin TVM has is refused (LLM-style state, debug hooks); nullopt when not refused.
std::optional<std::string> RefusedRelaxBuiltin(std::string_view name);

struct RelaxInterpreter {
  struct Callee {
    enum class Kind : uint8_t { kBuiltin, kKernel, kVmFunction } kind = Kind::kBuiltin;
    RelaxBuiltin builtin = nullptr;
    const PackedFunc* kernel = nullptr;
    // A tvm-ffi function (a v0.22+ library's, a kernel library's): calls whose
    // result is used, or that pass shapes or tuples, go as tvm-ffi values.
    hetrt_ffi_safe_call_t ffi = nullptr;
  };
  struct Instruction {
    RelaxInstruction::Op op;
    uint32_t callee = 0;  // Call
    int64_t reg = 0;      // Call dst (>= 2^54: dropped), Ret result, If cond
    int64_t offset = 0;   // Goto, If
    uint32_t operands_begin = 0;
    uint32_t num_operands = 0;
    uint32_t spare = kNoSpare;              // a reusing builtin's: its index in spares
    RelaxReusingBuiltin reusing = nullptr;  // set with spare
    // vm.builtin.null_value (about a third of an LLM step's calls: codegen
    // drops each dead tensor that way): the loop clears the register itself.
    bool clears_register = false;
  };
  static constexpr uint32_t kNoSpare = UINT32_MAX;

  std::shared_ptr<Module> root;
  std::shared_ptr<const RelaxExecutable> exe;
  PluginRegistry* plugins = nullptr;
  PluginRegistry* backend_registry = nullptr;  // NULL: compiled code uses the global routes
  std::vector<DLDevice> device_list;
  std::vector<RelaxVmDevice> devices;  // by VM device index; the host last
  std::vector<RelaxValue> constants;   // tensors moved to devices[0]
  std::vector<Callee> callees;         // by function index
  std::vector<Instruction> code;
  std::vector<RelaxOperand> operands;
  std::vector<RelaxValue> fixed_values;  // immediates and function references the operands point at
  // Per instruction of a reusing builtin, the object it made last (reused in
  // place when nothing holds it), and per function the ones it owns: when the
  // function returns, the tensors no one holds let go of their memory, so the
  // pool gets it back between calls.
  std::vector<RelaxValue> spares;
  std::vector<std::vector<uint32_t>> function_spares;
  // The spares of `function` nothing else holds let go of their memory.
  void ReleaseSpares(uint32_t function);
  // Constants a to_device with fixed device operands moves: copied once, at
  // creation, and then read in place (constants are immutable; vm.builtin.copy
  // of one returns it too). Without this a mixed-device model copies its
  // weights for the other devices on every call.
  std::vector<RelaxValue> moved_constants;
  std::vector<const RelaxValue*> moved_sources;  // the constant each was copied from
  bool IsMovedConstant(const RelaxValue* v) const {
    return v != nullptr && !moved_constants.empty() && v >= moved_constants.data() &&
           v < moved_constants.data() + moved_constants.size();
  }
  std::vector<std::vector<RelaxValue>> frames;  // register files, reused by call depth
  size_t depth = 0;
  std::vector<hetrt_value_t> kernel_values;  // kernel call arguments, reused
  std::vector<int32_t> kernel_codes;
  RelaxCallStats stats;
  RelaxProfile* profile = nullptr;  // set for one InvokeProfiled
  // Sources of asynchronous copies (host to device, device to device), kept
  // until the devices are synchronized (the copies read them until then).
  std::vector<Tensor> in_flight_sources;
  // Per VM device: the event its stream records for another device's stream
  // to wait for, around device-to-device copies (made on first use).
  std::vector<hetrt_event_t*> copy_done_events;
  ~RelaxInterpreter();
  RelaxKernelObserver kernel_observer;
  // vm.builtin.cuda_graph.get_cached_alloc's memo: the first result per entry
  // index, returned again on every later call (the states must alias).
  std::map<int64_t, RelaxValue> cached_allocs;
  // Functions replayed instead of interpreted (call_replay.h), by function
  // index, and the one whose call is being recorded (its calls at depth 0
  // are shown to it).
  std::vector<std::shared_ptr<RelaxFunctionReplay>> replays;
  RelaxCallObserver* recorder = nullptr;

  Result<RelaxValue> Run(uint32_t function, const RelaxCallArgs& args);
  // One Call instruction's callee, profiled when `profile` is set.
  Status Call(const Instruction& in, const RelaxCallArgs& args, RelaxValue* result);
  Status CallProfiled(const Instruction& in, const RelaxCallArgs& args, RelaxValue* result);
  // Calls a function value, closure or function index with `args` (closure captures appended).
  Result<RelaxValue> CallValue(const RelaxValue& callee, std::vector<RelaxValue> args);
  Status CallKernel(const PackedFunc& kernel, const RelaxCallArgs& args, const std::vector<int64_t>* extra_ints,
                    RelaxValue* result);
  // A tvm-ffi kernel whose result is dropped: its arguments go as tvm-ffi
  // values made straight from the registers (tensors, numbers, dtypes,
  // strings; a call passing shapes or tuples goes through CallFfi).
  Status CallFfiKernel(const PackedFunc& packed, hetrt_ffi_safe_call_t function, const RelaxCallArgs& args,
                       RelaxValue* result);
  std::vector<hetrt_ffi_any_t> ffi_args;  // CallFfiKernel's arguments, reused
  // A tvm-ffi function with any values: Shape and Array objects for shapes
  // and tuples, results of every kind the VM holds.
  // (`packed` is the same function as a packed one: the path for dtypes.)
  Status CallFfi(const PackedFunc& packed, hetrt_ffi_safe_call_t function, const RelaxCallArgs& args,
                 const std::vector<int64_t>* extra_ints, RelaxValue* result);
  // The VM device index of (type, id), or -1.
  int IndexOf(DLDevice device) const;
  // A copy on the VM device `device_index`. With `may_alias`, a tensor in
  // host-visible memory read on the host is returned as a host view (no copy);
  // a host tensor that owns its memory goes to a device asynchronously.
  Result<Tensor> CopyTo(const Tensor& tensor, int device_index, bool may_alias = false);
  Status SynchronizeDevices();
  // A copy between two devices of one plugin that copies between them, queued
  // behind the source's work; the target's later work waits for it on the
  // device (an event), the host does not.
  Status CopyBetweenDevices(const Tensor& tensor, int source, Tensor& out, int target);
  Status OrderAfter(int waiter, hetrt_stream_t* waiter_stream, int signaler, hetrt_stream_t* signaler_stream);
  // At creation, for a to_device call whose operands are all fixed: a
  // constant source is copied to the target now (once per constant and
  // device) and the operand points at the copy.
  Status MoveConstantOnce(RelaxOperand* operands, uint32_t num_operands);
  const std::string& FunctionName(uint32_t index) const { return exe->functions[index].name; }
};

// Shown each Call instruction of the outermost function after it ran, while
// set as the interpreter's recorder (call_replay.h's recording).
class RelaxCallObserver {
 public:
  virtual void Observe(const RelaxInterpreter& vm, uint32_t index, const RelaxInterpreter::Instruction& in,
                       const RelaxValue& result) = 0;

 protected:
  ~RelaxCallObserver() = default;
};

}  // namespace hetrt
