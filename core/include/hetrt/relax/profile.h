// What Relax VM calls did: counts of every call (last_call_stats), and the
// timed record of a profiled call (InvokeProfiled), one event per Call
// instruction, for `hetrt bench` and its Chrome trace.
#pragma once

#include <dlpack/dlpack.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "hetrt/plugin_abi.h"

namespace hetrt {

struct RelaxCallStats {
  uint64_t instructions = 0;
  uint64_t builtin_calls = 0;
  uint64_t kernel_calls = 0;
  uint64_t vm_calls = 0;
};

// What replay (RelaxVirtualMachine::EnableReplay) did for one function.
struct RelaxReplayStats {
  uint64_t replayed = 0;     // calls run from a recording
  uint64_t recorded = 0;     // recordings made
  uint64_t interpreted = 0;  // calls interpreted (a new signature, or replay off)
  uint64_t result_held = 0;  // of those, calls whose recording's last results were still held
  uint64_t evicted = 0;      // recordings dropped for a newer signature
  std::string disabled;      // why the function is no longer recorded (empty: it is)
};

struct RelaxTraceEvent {
  enum class Kind : uint8_t { kBuiltin, kKernel, kVmCall };
  uint32_t callee = 0;  // index into the executable's function table
  Kind kind = Kind::kBuiltin;
  DLDevice device{kDLCPU, 0};         // a kernel's: where its last tensor argument lives
  uint32_t depth = 0;                 // nesting of VM calls
  uint64_t start_ns = 0, end_ns = 0;  // host clock; device kernels are waited for
};

struct RelaxProfile {
  uint64_t start_ns = 0, end_ns = 0;
  std::vector<RelaxTraceEvent> events;
};

// One kernel call a stateful builtin made on its own (the paged KV cache's
// attention kernels, inside attention_with_fused_qkv): which kernel slot, when.
struct BuiltinKernelEvent {
  const char* slot = "";
  DLDevice device{kDLCPU, 0};
  uint64_t start_ns = 0, end_ns = 0;  // host clock
};

// Sees every kernel call with its packed arguments just before it is made
// (RelaxVirtualMachine::SetKernelObserver): a benchmark's direct-call floor.
using RelaxKernelObserver = std::function<void(const hetrt_packed_func_t& kernel, const hetrt_value_t* values,
                                               const int32_t* codes, int32_t n)>;

}  // namespace hetrt
