// A model linked into the test program as TVM's --system-lib builds are
// (tests/system_lib/model.c + the system-lib devc.c that make_devc generates
// with hetrt's exporter): its symbols are registered before main() and
// LoadSystemLib builds the module tree from them, CPU host code plus an
// OpenCL kernel, run by the graph executor.
#include <gtest/gtest.h>

#include <dlfcn.h>

#include <algorithm>
#include <filesystem>

#include "hetrt/sdk/byte_stream.h"
#include "hetrt/exec/graph_executor.h"
#include "hetrt/exec/graph_model.h"
#include "hetrt/module/module_loader.h"
#include "hetrt/module/system_lib_module.h"
#include "hetrt/module_export.h"
#include "test_support.h"

extern "C" int TVMBackendRegisterSystemLibSymbol(const char* name, void* ptr);
extern "C" const char* TVMGetLastError(void);
extern "C" int TVMBackendGetFuncFromEnv(void* mod_node, const char* func_name, void** out);

namespace hetrt {
namespace {

// `text` holds `part` (the failure shows both).
::testing::AssertionResult Holds(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "'" << text << "' does not contain '" << part << "'";
}

bool Lists(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// A second model, registered under the prefix "second_" the way its host code
// would be: out = 3 * in, on the CPU.
void* g_second_ctx = nullptr;
int32_t SecondTriple(hetrt_value_t* args, int32_t* codes, int32_t n, hetrt_value_t*, int32_t*, void*) {
  if (n != 2 || codes[0] != HETRT_TYPE_DLTENSOR || codes[1] != HETRT_TYPE_DLTENSOR) return -1;
  const auto* in = static_cast<const DLTensor*>(args[0].v_handle);
  auto* out = static_cast<DLTensor*>(args[1].v_handle);
  for (int64_t i = 0; i < out->shape[0]; ++i)
    static_cast<float*>(out->data)[i] = 3.f * static_cast<float*>(in->data)[i];
  return 0;
}
// A third whose __tvm_module_ctx two objects claim (two models linked without
// distinct prefixes): both registrations before main(), as static constructors make them.
void* g_clash_ctx_a = nullptr;
void* g_clash_ctx_b = nullptr;
[[maybe_unused]] const bool g_registered_before_main = [] {
  TVMBackendRegisterSystemLibSymbol("second_triple", reinterpret_cast<void*>(&SecondTriple));
  TVMBackendRegisterSystemLibSymbol("second___tvm_module_ctx", &g_second_ctx);
  TVMBackendRegisterSystemLibSymbol("clash___tvm_module_ctx", &g_clash_ctx_a);
  TVMBackendRegisterSystemLibSymbol("clash___tvm_module_ctx", &g_clash_ctx_b);
  return true;
}();

Tensor Row(std::initializer_list<float> values) {
  Tensor t = Tensor::EmptyHost({1, static_cast<int64_t>(values.size())}, {kDLFloat, 32, 1}).value();
  std::copy(values.begin(), values.end(), t.data_as<float>());
  return t;
}

TEST(SystemLib, RunsTheLinkedModelOnCpuAndOpenCl) {
  HETRT_REQUIRE_OPENCL();
  HETRT_ASSERT_OK_AND_ASSIGN(std::shared_ptr<Module> root, LoadSystemLib());
  // The library slot, importing the OpenCL module of the registered blob.
  ASSERT_NE(dynamic_cast<SystemLibModule*>(root.get()), nullptr) << root->type_key();
  ASSERT_EQ(root->imports().size(), 1u);
  EXPECT_EQ(root->imports()[0]->type_key(), "opencl");
  EXPECT_TRUE(Lists(root->ListFunctionNames(), "syslib_add_f32"));
  EXPECT_TRUE(Lists(root->ListFunctionNames(), "syslib_cl_twice"));

  GraphExecutor::Options options;
  options.devices = {{kDLCPU, 0}, {kDLOpenCL, 0}};
  options.params = std::make_shared<const std::vector<NamedTensor>>(
      std::vector<NamedTensor>{{"w", Row({100, 200, 300, 400, 500, 600})}});
  HETRT_ASSERT_OK_AND_ASSIGN(
      auto executor,
      GraphExecutor::Create(testing::TwiceThenAddGraph("syslib_cl_twice", "syslib_add_f32"), root, options));
  for (float scale : {1.f, -0.5f}) {  // twice: the kernel handles the host code cached are reused
    Tensor x = Row({0 * scale, 1 * scale, 2 * scale, 3 * scale, 4 * scale, 5 * scale});
    HETRT_ASSERT_OK(executor->SetInput("x", x));
    HETRT_ASSERT_OK(executor->Run());
    HETRT_ASSERT_OK_AND_ASSIGN(Tensor y, executor->GetOutput(0));
    for (int i = 0; i < 6; ++i) EXPECT_EQ(y.data_as<float>()[i], 2.f * x.data_as<float>()[i] + 100.f * (i + 1)) << i;
  }
}

TEST(SystemLib, OpensThroughTheModelPathSpelledSystemLib) {
  HETRT_REQUIRE_OPENCL();
  const std::string dir = ::testing::TempDir() + "/hetrt_system_lib";
  std::filesystem::create_directories(dir);
  const std::string graph = testing::TwiceThenAddGraph("syslib_cl_twice", "syslib_add_f32");
  HETRT_ASSERT_OK(WriteFileBytes(dir + "/graph.json", {reinterpret_cast<const uint8_t*>(graph.data()), graph.size()}));
  HETRT_ASSERT_OK(WriteFileBytes(dir + "/params", WriteParamDict({{"w", Row({1, 1, 1, 1, 1, 1})}}).value()));
  GraphExecutor::Options options;
  options.devices = {{kDLCPU, 0}, {kDLOpenCL, 0}};
  HETRT_ASSERT_OK_AND_ASSIGN(Model model, OpenModel({"system-lib", dir + "/graph.json", dir + "/params"}, options));
  HETRT_ASSERT_OK_AND_ASSIGN(std::shared_ptr<Module> root, LoadSystemLib());
  EXPECT_EQ(model.root, root) << "one tree per prefix for the whole process";
  HETRT_ASSERT_OK(model.executor->SetInput(0, Row({1, 2, 3, 4, 5, 6})));
  HETRT_ASSERT_OK(model.executor->Run());
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor y, model.executor->GetOutput(0));
  EXPECT_TRUE(testing::TensorsClose(y, Row({3, 5, 7, 9, 11, 13}), 0, 0));
}

TEST(SystemLib, PathSpellings) {
  EXPECT_EQ(SystemLibPrefix("system-lib"), "");
  EXPECT_EQ(SystemLibPrefix("system-lib:second_"), "second_");
  EXPECT_EQ(SystemLibPrefix("./system-lib"), std::nullopt);
  EXPECT_EQ(SystemLibPrefix("system-lib.so"), std::nullopt);
}

TEST(SystemLib, FunctionErrorsComeBackAsStatus) {
  HETRT_ASSERT_OK_AND_ASSIGN(std::shared_ptr<Module> root, LoadSystemLib());
  HETRT_ASSERT_OK_AND_ASSIGN(const PackedFunc* add, root->GetFunction("syslib_add_f32"));
  ASSERT_NE(add, nullptr);
  hetrt_value_t one{};
  int32_t code = HETRT_TYPE_INT;
  Status s = CallPackedFunc(*add, &one, &code, 1);
  EXPECT_TRUE(Holds(s.message(), "syslib_add_f32: expects 3 arguments"));
  // Runtime variables are not functions.
  HETRT_ASSERT_OK_AND_ASSIGN(const PackedFunc* ctx, root->GetFunction("__tvm_module_ctx"));
  EXPECT_EQ(ctx, nullptr);
}

TEST(SystemLib, PrefixSelectsOneOfSeveralModels) {
  HETRT_ASSERT_OK_AND_ASSIGN(std::shared_ptr<Module> second, LoadSystemLib("second_"));
  EXPECT_EQ(second->imports().size(), 0u) << "this model registered no blob";
  EXPECT_EQ(second->ListFunctionNames(), std::vector<std::string>{"triple"});
  // Its own context, not the unprefixed model's.
  EXPECT_EQ(g_second_ctx, static_cast<FunctionEnvironment*>(second.get()));
  void* set_device = nullptr;
  EXPECT_EQ(TVMBackendGetFuncFromEnv(g_second_ctx, "__tvm_set_device", &set_device), 0) << TVMGetLastError();
  EXPECT_NE(set_device, nullptr);

  HETRT_ASSERT_OK_AND_ASSIGN(const PackedFunc* triple, second->GetFunction("triple"));
  ASSERT_NE(triple, nullptr);
  float in[3] = {1, 2, 3}, out[3] = {};
  int64_t shape[1] = {3};
  DLTensor tin{in, {kDLCPU, 0}, 1, {kDLFloat, 32, 1}, shape, nullptr, 0};
  DLTensor tout{out, {kDLCPU, 0}, 1, {kDLFloat, 32, 1}, shape, nullptr, 0};
  hetrt_value_t args[2];
  args[0].v_handle = &tin;
  args[1].v_handle = &tout;
  int32_t codes[2] = {HETRT_TYPE_DLTENSOR, HETRT_TYPE_DLTENSOR};
  HETRT_ASSERT_OK(CallPackedFunc(*triple, args, codes, 2));
  EXPECT_EQ(out[2], 9.f);
}

// TVM's other way to a system library: a shared object built with
// --system-lib, dlopen'ed by the program (ctypes.CDLL in Python), registers
// its symbols as it loads. Here its devc.c has the prefix "m1_".
TEST(SystemLib, LoadsWhatADlopenedLibraryRegistered) {
  HETRT_REQUIRE_OPENCL();
  const std::string dir = ::testing::TempDir() + "/hetrt_system_lib_m1";
  std::filesystem::create_directories(dir);
  HETRT_ASSERT_OK_AND_ASSIGN(std::string devc, testing::OpenClTwiceIntoSystemLibDevc("m1_"));
  EXPECT_TRUE(Holds(devc, "const unsigned char m1___tvm_dev_mblob["));
  HETRT_ASSERT_OK(WriteFileBytes(dir + "/devc.c", {reinterpret_cast<const uint8_t*>(devc.data()), devc.size()}));
  HETRT_ASSERT_OK(LinkSharedLibrary({dir + "/devc.c"}, dir + "/m1.so", {}));
  // Never closed: the registry and the tree point into it for the process's life.
  void* handle = dlopen((dir + "/m1.so").c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << dlerror();
  HETRT_ASSERT_OK_AND_ASSIGN(std::shared_ptr<Module> m1, LoadSystemLib("m1_"));
  ASSERT_EQ(m1->imports().size(), 1u);
  EXPECT_EQ(m1->imports()[0]->type_key(), "opencl");
  HETRT_ASSERT_OK_AND_ASSIGN(auto saved, m1->imports()[0]->SaveToBinary());
  EXPECT_TRUE(saved == testing::OpenClTwiceIntoModule());
  HETRT_ASSERT_OK_AND_ASSIGN(const PackedFunc* kernel, m1->GetFunction("twice_into"));
  EXPECT_NE(kernel, nullptr);
}

TEST(SystemLib, DuplicateRegistrationBeforeMainFailsTheLoad) {
  auto clash = LoadSystemLib("clash_");
  ASSERT_FALSE(clash.ok());
  EXPECT_TRUE(Holds(clash.status().message(), "'clash___tvm_module_ctx' was registered twice"));
  EXPECT_EQ(g_clash_ctx_a, nullptr) << "neither context was written";
  EXPECT_EQ(g_clash_ctx_b, nullptr);
}

TEST(SystemLib, DuplicateRegistrationIsRefusedAndLogged) {
  static int first = 0, second = 0;
  EXPECT_EQ(TVMBackendRegisterSystemLibSymbol("dup_twin", &first), 0);
  EXPECT_EQ(TVMBackendRegisterSystemLibSymbol("dup_twin", &first), 0) << "the same address again changes nothing";
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(TVMBackendRegisterSystemLibSymbol("dup_twin", &second), -1);
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(Holds(log, "hetrt[system-lib] error: system library: symbol 'dup_twin' registered twice"));
  EXPECT_TRUE(Holds(TVMGetLastError(), "symbol 'dup_twin' registered twice"));
  // Every later use of the name says so, instead of picking one.
  HETRT_ASSERT_OK_AND_ASSIGN(std::shared_ptr<Module> dup, LoadSystemLib("dup_"));
  auto twin = dup->GetFunction("twin");
  ASSERT_FALSE(twin.ok());
  EXPECT_TRUE(Holds(twin.status().message(), "'dup_twin' was registered twice"));
}

TEST(SystemLib, NullArgumentsAreRefusedWithoutACrash) {
  int variable = 0;
  EXPECT_EQ(TVMBackendRegisterSystemLibSymbol(nullptr, &variable), -1);
  EXPECT_TRUE(Holds(TVMGetLastError(), "NULL name"));
  EXPECT_EQ(TVMBackendRegisterSystemLibSymbol("null_address", nullptr), -1);
  EXPECT_TRUE(Holds(TVMGetLastError(), "'null_address' has a NULL address"));
  EXPECT_EQ(TVMBackendRegisterSystemLibSymbol(nullptr, nullptr), -1);
  auto none = LoadSystemLib("null_");
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(Holds(none.status().message(), "system library 'null_' registered no symbols"));
}

}  // namespace
}  // namespace hetrt
