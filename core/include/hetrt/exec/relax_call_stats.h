// What one Relax VM call did, counted by the interpreter (RelaxVirtualMachine::last_call_stats).
#pragma once

#include <cstdint>

namespace hetrt {

struct RelaxCallStats {
  uint64_t instructions = 0;
  uint64_t builtin_calls = 0;
  uint64_t kernel_calls = 0;
  uint64_t vm_calls = 0;
};

}  // namespace hetrt
