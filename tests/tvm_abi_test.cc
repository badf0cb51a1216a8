// The TVM backend C ABI as foreign code sees it: every entry point answers
// with TVM's error codes and TVMGetLastError, never with a C++ exception
// unwinding through the caller's C frames.
#include <gtest/gtest.h>

#include <stdexcept>
#include <type_traits>

#include "hetrt/plugin_abi.h"
#include "hetrt/tvm_abi/function_environment.h"

extern "C" {
int TVMBackendGetFuncFromEnv(void* mod_node, const char* func_name, void** out) noexcept;
const char* TVMGetLastError(void) noexcept;
void* TVMBackendAllocWorkspace(int device_type, int device_id, uint64_t nbytes, int, int) noexcept;
int TVMBackendFreeWorkspace(int device_type, int device_id, void* ptr) noexcept;
int TVMFuncCall(void* func, hetrt_value_t* args, int* type_codes, int num_args, hetrt_value_t* ret,
                int* ret_type_code) noexcept;
int TVMBackendParallelLaunch(hetrt_parallel_lambda_t lambda, void* cdata, int num_task) noexcept;
}

namespace hetrt {
namespace {

// A module context whose lookup throws, as a buggy environment (or an
// allocation failure inside a lookup) would.
class ThrowingEnvironment final : public FunctionEnvironment {
 public:
  Result<const PackedFunc*> GetFunctionFromEnv(std::string_view name) override {
    throw std::runtime_error("lookup of '" + std::string(name) + "' exploded");
  }
};

TEST(TvmAbi, AnExceptionInsideALookupBecomesAnErrorCodeAndTheLastError) {
  ThrowingEnvironment env;
  void* out = reinterpret_cast<void*>(0x1);
  EXPECT_EQ(TVMBackendGetFuncFromEnv(&env, "fused_add", &out), -1);
  const std::string message = TVMGetLastError();
  EXPECT_NE(message.find("TVMBackendGetFuncFromEnv"), std::string::npos) << message;
  EXPECT_NE(message.find("lookup of 'fused_add' exploded"), std::string::npos) << message;
}

TEST(TvmAbi, BadArgumentsAreErrorsNamingTheCall) {
  EXPECT_EQ(TVMBackendGetFuncFromEnv(nullptr, "f", nullptr), -1);
  EXPECT_NE(std::string(TVMGetLastError()).find("NULL module context"), std::string::npos);
  EXPECT_EQ(TVMFuncCall(nullptr, nullptr, nullptr, 0, nullptr, nullptr), -1);
  EXPECT_NE(std::string(TVMGetLastError()).find("NULL function handle"), std::string::npos);
  // Device type 63 exists in no plugin: a clear error, not a crash.
  EXPECT_EQ(TVMBackendAllocWorkspace(63, 0, 64, 2, 32), nullptr);
  EXPECT_NE(std::string(TVMGetLastError()).find("no plugin provides workspace memory"), std::string::npos)
      << TVMGetLastError();
  EXPECT_EQ(TVMBackendFreeWorkspace(-5, 0, nullptr), -1);
}

TEST(TvmAbi, EntryPointsAreNoexceptForTheCompiler) {
  static_assert(noexcept(TVMBackendGetFuncFromEnv(nullptr, nullptr, nullptr)));
  static_assert(noexcept(TVMBackendAllocWorkspace(0, 0, 0, 0, 0)));
  static_assert(noexcept(TVMBackendParallelLaunch(nullptr, nullptr, 0)));
  // A task that fails reports through the last error and the launch returns -1.
  auto failing = [](int32_t, hetrt_parallel_group_env_t*, void*) -> int32_t { return -1; };
  EXPECT_EQ(TVMBackendParallelLaunch(failing, nullptr, 1), -1);
}

}  // namespace
}  // namespace hetrt
