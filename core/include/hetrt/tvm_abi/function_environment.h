// What compiled code's module context (__tvm_module_ctx) points at: something
// that finds a function by name the way TVMBackendGetFuncFromEnv must (the
// module tree implements it; the TVM backend ABI only calls it).
#pragma once

#include <string_view>

#include "hetrt/tvm_abi/global_functions.h"

namespace hetrt {

// Thread contract: implementations are thread-safe: compiled code looks functions up from any thread.
class FunctionEnvironment {
 public:
  virtual ~FunctionEnvironment() = default;
  // A missing name is NOT_FOUND naming where it looked. The pointer stays
  // valid for the environment's lifetime.
  virtual Result<const PackedFunc*> GetFunctionFromEnv(std::string_view name) = 0;
};

}  // namespace hetrt
