// Foreign tvm-ffi kernel libraries (tests/kernels/ffi_kernels.c) loaded and
// called through KernelLibrary: values both ways, tensors on host and device,
// kernel-allocated results, references a kernel keeps, raised errors, and the
// refusals of docs/tvm-ffi.md (h).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>

#include "hetrt/base/install_layout.h"
#include "hetrt/device/device.h"
#include "hetrt/module/kernel_library.h"
#include "hetrt/plugin_host/plugin_registry.h"
#include "hetrt/tvm_abi/global_functions.h"
#include "test_support.h"

namespace hetrt {
namespace {

const std::string kDir = HETRT_TEST_KERNELS_DIR;
const std::string kLinked = kDir + "/libffi_kernels.so";

Tensor Floats(std::vector<float> values) {
  Tensor t = Tensor::EmptyHost({static_cast<int64_t>(values.size())}, DLDataType{kDLFloat, 32, 1}).value();
  std::memcpy(t.data(), values.data(), values.size() * sizeof(float));
  return t;
}

std::vector<float> Values(const Tensor& t) {
  const float* p = t.data_as<float>();
  return {p, p + t.num_elements()};
}

class KernelLibraryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto opened = KernelLibrary::Open(kLinked);
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    library_ = *opened;
  }
  Result<FfiValue> Call(const std::string& name, std::vector<FfiValue> args, FfiRaised* raised = nullptr) {
    HETRT_ASSIGN_OR_RETURN(Kernel kernel, library_->Find(name));
    return kernel.Call(args, raised);
  }
  std::shared_ptr<KernelLibrary> library_;
};

TEST_F(KernelLibraryTest, ListsTheKernelsItExports) {
  EXPECT_EQ(library_->names(),
            (std::vector<std::string>{"add_one", "bad_result", "describe", "device_type", "fail_silently", "greet",
                                      "iota", "keep", "kept_sum", "negate", "release_kept", "scale", "sum"}));
  EXPECT_TRUE(IsKernelLibraryFile(kLinked));
}

TEST_F(KernelLibraryTest, WritesIntoTheTensorsItIsGiven) {
  Tensor x = Floats({1, 2, 3});
  Tensor y = Floats({0, 0, 0});
  HETRT_ASSERT_OK_AND_ASSIGN(FfiValue result, Call("add_one", {x, y}));
  EXPECT_TRUE(std::holds_alternative<std::monostate>(result));
  EXPECT_EQ(Values(y), (std::vector<float>{2, 3, 4}));
  EXPECT_EQ(Values(x), (std::vector<float>{1, 2, 3}));
}

TEST_F(KernelLibraryTest, PassesAndTakesScalars) {
  Tensor x = Floats({1, -2});
  Tensor y = Floats({0, 0});
  HETRT_ASSERT_OK(Call("scale", {x, y, 0.5}).status());
  EXPECT_EQ(Values(y), (std::vector<float>{0.5f, -1.0f}));
  HETRT_ASSERT_OK(Call("scale", {x, y, int64_t{3}}).status());
  EXPECT_EQ(Values(y), (std::vector<float>{3.0f, -6.0f}));

  HETRT_ASSERT_OK_AND_ASSIGN(FfiValue sum, Call("sum", {Floats({0.25f, 0.5f, 2})}));
  ASSERT_TRUE(std::holds_alternative<double>(sum));
  EXPECT_DOUBLE_EQ(std::get<double>(sum), 2.75);

  HETRT_ASSERT_OK_AND_ASSIGN(FfiValue negated, Call("negate", {true}));
  ASSERT_TRUE(std::holds_alternative<bool>(negated));
  EXPECT_FALSE(std::get<bool>(negated));
}

TEST_F(KernelLibraryTest, PassesAndTakesStringsOfEverySize) {
  HETRT_ASSERT_OK_AND_ASSIGN(FfiValue small, Call("greet", {std::string("")}));
  EXPECT_EQ(std::get<std::string>(small), "hello, ");  // 7 bytes: a SmallStr
  HETRT_ASSERT_OK_AND_ASSIGN(FfiValue large, Call("greet", {std::string("kernel library")}));
  EXPECT_EQ(std::get<std::string>(large), "hello, kernel library");  // a Str object
}

TEST_F(KernelLibraryTest, TakesTensorsTheKernelAllocated) {
  HETRT_ASSERT_OK_AND_ASSIGN(FfiValue made, Call("iota", {int64_t{5}}));
  ASSERT_TRUE(std::holds_alternative<Tensor>(made));
  const Tensor& t = std::get<Tensor>(made);
  EXPECT_EQ(t.shape(), (std::vector<int64_t>{5}));
  EXPECT_EQ(t.device().device_type, kDLCPU);
  EXPECT_EQ(Values(t), (std::vector<float>{0, 1, 2, 3, 4}));
  HETRT_ASSERT_OK_AND_ASSIGN(FfiValue empty, Call("iota", {int64_t{0}}));
  EXPECT_EQ(std::get<Tensor>(empty).num_elements(), 0);
}

// A kernel that keeps a tensor (IncRef) reads it after the caller dropped
// every handle of its own; releasing it frees the memory (ASan would see a
// use after free or a leak otherwise).
TEST_F(KernelLibraryTest, TensorsAKernelKeepsOutliveTheCaller) {
  {
    Tensor x = Floats({1, 2, 3, 4});
    HETRT_ASSERT_OK(Call("keep", {x}).status());
  }
  HETRT_ASSERT_OK_AND_ASSIGN(FfiValue sum, Call("kept_sum", {}));
  EXPECT_DOUBLE_EQ(std::get<double>(sum), 10.0);
  HETRT_ASSERT_OK(Call("release_kept", {}).status());
  FfiRaised raised;
  auto after = Call("kept_sum", {}, &raised);
  EXPECT_FALSE(after.ok());
  EXPECT_EQ(raised.kind, "RuntimeError");
}

TEST_F(KernelLibraryTest, RaisedErrorsNameTheKernelKindAndMessage) {
  Tensor ints = Tensor::EmptyHost({2}, DLDataType{kDLInt, 32, 1}).value();
  FfiRaised raised;
  auto wrong_dtype = Call("add_one", {ints, Floats({0, 0})}, &raised);
  ASSERT_FALSE(wrong_dtype.ok());
  EXPECT_EQ(wrong_dtype.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(raised.kind, "ValueError");
  EXPECT_EQ(raised.message, "argument x must be float32");  // TVMFFIErrorSetRaisedFromCStrParts
  EXPECT_NE(wrong_dtype.status().message().find("kernel 'add_one' in " + kLinked), std::string::npos)
      << wrong_dtype.status().message();
  EXPECT_NE(wrong_dtype.status().message().find("raised ValueError: argument x must be float32"), std::string::npos);

  auto wrong_count = Call("add_one", {Floats({1})}, &raised);
  EXPECT_EQ(raised.kind, "TypeError");
  EXPECT_EQ(raised.message, "add_one takes 2 arguments (x, y)");

  auto silent = Call("fail_silently", {});
  ASSERT_FALSE(silent.ok());
  EXPECT_NE(silent.status().message().find("failed without raising an error"), std::string::npos);
  // The slot was emptied by the first failure: nothing stale shows up here.
  EXPECT_EQ(silent.status().message().find("add_one"), std::string::npos);
}

TEST_F(KernelLibraryTest, RefusesResultsThatBreakTheAbi) {
  auto bad = Call("bad_result", {});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("returned a borrowed RawStr"), std::string::npos) << bad.status().message();
}

TEST_F(KernelLibraryTest, ReadsMetadataAndDocs) {
  HETRT_ASSERT_OK_AND_ASSIGN(std::string metadata, library_->Metadata("add_one"));
  EXPECT_EQ(metadata, R"({"type_schema": "(Tensor, Tensor) -> None"})");
  HETRT_ASSERT_OK_AND_ASSIGN(std::string doc, library_->Doc("add_one"));
  EXPECT_EQ(doc, "y = x + 1");
  HETRT_ASSERT_OK_AND_ASSIGN(std::string none, library_->Metadata("scale"));
  EXPECT_EQ(none, "");
}

// Arrays and Shapes both ways: hetrt makes an Array holding a Tensor, a Shape
// and an Int; the kernel answers with an Array of its own objects (freed by
// its deleters when hetrt lets go, checked under ASan).
TEST_F(KernelLibraryTest, ArraysAndShapesGoBothWays) {
  const FfiArray items{{Floats({1, 2, 3.5f}), FfiShape{{3}}, int64_t{7}}};
  HETRT_ASSERT_OK_AND_ASSIGN(FfiValue result, Call("describe", {items}));
  ASSERT_TRUE(std::holds_alternative<FfiArray>(result));
  const std::vector<FfiValue>& out = std::get<FfiArray>(result).items;
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(std::get<FfiShape>(out[0]).dims, (std::vector<int64_t>{3, 7}));
  EXPECT_DOUBLE_EQ(std::get<double>(out[1]), 6.5);
  // Nested arrays holding strings are made as owned items and released after the
  // call (ASan checks every reference in CI); the kernel refuses their kinds.
  FfiRaised raised;
  EXPECT_FALSE(Call("describe", {FfiArray{{FfiArray{{std::string("a long string item")}}, FfiShape{}, int64_t{1}}}},
                    &raised)
                   .ok());
  EXPECT_EQ(raised.message, "describe: items [Tensor, Shape, Int] expected");
}

TEST_F(KernelLibraryTest, AnUnknownKernelListsTheKnownOnes) {
  auto missing = library_->Find("add_two");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("no kernel 'add_two' (it has: add_one, "), std::string::npos)
      << missing.status().message();
}

TEST_F(KernelLibraryTest, KernelsSeeTensorsOnPluginDevices) {
  HETRT_REQUIRE_OPENCL();
  Plugin* opencl = PluginRegistry::Global().ForDevice({kDLOpenCL, 0}).value();
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor on_device, Tensor::Empty({4}, DLDataType{kDLFloat, 32, 1},
                                                             opencl->DeviceAllocator({kDLOpenCL, 0})));
  HETRT_ASSERT_OK_AND_ASSIGN(FfiValue type, Call("device_type", {on_device}));
  EXPECT_EQ(std::get<int64_t>(type), kDLOpenCL);
  // A CPU-only kernel refuses it with its own words.
  FfiRaised raised;
  EXPECT_FALSE(Call("add_one", {on_device, on_device}, &raised).ok());
  EXPECT_EQ(raised.message, "this kernel runs on CPU tensors only");
}

// A kernel that queues its own work on TVMFFIEnvGetStream's queue: that is
// hetrt's current stream of the device, so the work follows what hetrt queued
// there (in-order queue) and hetrt's synchronization covers it.
TEST(KernelLibrary, KernelsLaunchOnHetrtsCurrentStream) {
  HETRT_REQUIRE_OPENCL();
  HETRT_ASSERT_OK_AND_ASSIGN(auto library, KernelLibrary::Open(kDir + "/libffi_stream_kernels.so"));
  const DLDevice cl{kDLOpenCL, 0};
  PluginRegistry& registry = PluginRegistry::Global();
  Plugin* opencl = registry.ForDevice(cl).value();
  const Device device(opencl, cl);
  auto stream_of = [&] {
    return std::get<int64_t>(
        library->Find("stream_of").value().Call(std::vector<FfiValue>{int64_t{kDLOpenCL}, int64_t{0}}).value());
  };
  HETRT_ASSERT_OK_AND_ASSIGN(void* default_queue, device.CurrentNativeStream());
  ASSERT_NE(default_queue, nullptr);
  EXPECT_EQ(stream_of(), reinterpret_cast<intptr_t>(default_queue));

  HETRT_ASSERT_OK_AND_ASSIGN(hetrt_stream_t * stream, device.NewStream());
  HETRT_ASSERT_OK(device.SetCurrentStream(stream));
  struct Restore {
    const Device& device;
    hetrt_stream_t* stream;
    ~Restore() {
      (void)device.SetCurrentStream(nullptr);
      (void)device.DestroyStream(stream);
    }
  } restore{device, stream};
  HETRT_ASSERT_OK_AND_ASSIGN(void* queue, device.CurrentNativeStream());
  EXPECT_NE(queue, default_queue);
  EXPECT_EQ(stream_of(), reinterpret_cast<intptr_t>(queue));

  // A copy hetrt queues without waiting, then the kernel's fill behind it.
  constexpr int kN = 1 << 16;
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor out, Tensor::Empty({kN}, DLDataType{kDLFloat, 32, 1}, opencl->DeviceAllocator(cl)));
  Tensor ones = Floats(std::vector<float>(kN, 1.0f));
  HETRT_ASSERT_OK(device.Copy(ones.data(), 0, ones.device(), out.data(), 0, cl, ones.nbytes(), stream, 0));
  HETRT_ASSERT_OK(library->Find("fill_on_stream").value().Call(std::vector<FfiValue>{out, 2.5}).status());
  HETRT_ASSERT_OK(device.Synchronize(stream));
  HETRT_ASSERT_OK(device.SetCurrentStream(nullptr));
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor back, registry.ToHost(out));
  EXPECT_EQ(Values(back), std::vector<float>(kN, 2.5f));
  EXPECT_EQ(stream_of(), reinterpret_cast<intptr_t>(default_queue));

  // A framework's stream set around a call wins; restoring the NULL it got
  // back (nothing was set) gives hetrt's stream again, not a pinned NULL.
  auto set_stream = [&](int64_t stream) {
    return std::get<int64_t>(library->Find("set_stream")
                                 .value()
                                 .Call(std::vector<FfiValue>{int64_t{kDLOpenCL}, int64_t{0}, stream})
                                 .value());
  };
  EXPECT_EQ(set_stream(reinterpret_cast<intptr_t>(queue)), 0);
  EXPECT_EQ(stream_of(), reinterpret_cast<intptr_t>(queue));
  EXPECT_EQ(set_stream(0), reinterpret_cast<intptr_t>(queue));
  EXPECT_EQ(stream_of(), reinterpret_cast<intptr_t>(default_queue));
}

TEST(KernelLibrary, LoadsALibraryThatLeavesTheSymbolsToTheProcess) {
  auto library = KernelLibrary::Open(kDir + "/libffi_kernels_unlinked.so");
  ASSERT_TRUE(library.ok()) << library.status().ToString();
  Tensor y = Floats({0});
  HETRT_ASSERT_OK(library.value()->Find("add_one").value().Call(std::vector<FfiValue>{Floats({41}), y}).status());
  EXPECT_EQ(Values(y), (std::vector<float>{42}));
}

TEST(KernelLibrary, NamesTheTvmFfiFunctionHetrtDoesNotProvide) {
  auto library = KernelLibrary::Open(kDir + "/libffi_kernels_needs_more.so");
  ASSERT_FALSE(library.ok());
  EXPECT_NE(library.status().message().find("TVMFFIFunctionGetGlobal"), std::string::npos)
      << library.status().message();
}

TEST(KernelLibrary, RefusesFilesThatAreNotKernelLibraries) {
  const std::string text = ::testing::TempDir() + "/not_a_library.so";
  std::ofstream(text) << "not an ELF file";
  auto not_elf = KernelLibrary::Open(text);
  ASSERT_FALSE(not_elf.ok());
  EXPECT_NE(not_elf.status().message().find("not a usable ELF64 file"), std::string::npos);

  // A shared object without __tvm_ffi_ functions (the CPU plugin).
  auto plugin = KernelLibrary::Open(CoreLibraryDir() + "/hetrt-plugins/libhetrt_plugin_cpu.so");
  ASSERT_FALSE(plugin.ok());
  EXPECT_NE(plugin.status().message().find("exports no tvm-ffi kernels"), std::string::npos);

  EXPECT_FALSE(KernelLibrary::Open(kDir + "/no_such_library.so").ok());
}

TEST(KernelLibrary, RefusesTvmV021sTransitionalAbiByName) {
  auto v021 = KernelLibrary::Open(kDir + "/libffi_codegen_kernels_v021.so");
  ASSERT_FALSE(v021.ok());
  EXPECT_EQ(v021.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(v021.status().message().find("built by TVM v0.21 (it defines __tvm_ffi_library_ctx)"), std::string::npos)
      << v021.status().message();
}

TEST(KernelLibrary, RefusesAModelLibrary) {
  HETRT_REQUIRE_FIXTURE(dir, "mlp");
  auto model = KernelLibrary::Open(dir + "/deploy.so");
  ASSERT_FALSE(model.ok());
  EXPECT_NE(model.status().message().find("is a TVM model library (it has __tvm_dev_mblob)"), std::string::npos)
      << model.status().message();
}

// A library as TVM v0.22+ generates one for a TIR module: its context
// pointers lead to the CPU plugin's pool and workspace, the error slot and
// hetrt's global functions.
class CodegenLibraryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto opened = KernelLibrary::Open(kDir + "/libffi_codegen_kernels.so");
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    library_ = *opened;
  }
  std::shared_ptr<KernelLibrary> library_;
};

int32_t AddInts(hetrt_value_t* args, int32_t* codes, int32_t num_args, hetrt_value_t* ret, int32_t* ret_code,
                void*) {
  if (num_args != 2 || codes[0] != HETRT_TYPE_INT || codes[1] != HETRT_TYPE_INT) return -1;
  ret->v_int64 = args[0].v_int64 + args[1].v_int64;
  *ret_code = HETRT_TYPE_INT;
  return 0;
}

TEST_F(CodegenLibraryTest, ParallelLoopsUseThePoolAndWorkspace) {
  std::vector<float> values(1000);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i) * 0.5f;
  Tensor x = Floats(values);
  Tensor y = Floats(std::vector<float>(values.size(), -1.0f));
  HETRT_ASSERT_OK(library_->Find("parallel_square").value().Call(std::vector<FfiValue>{x, y}).status());
  for (size_t i = 0; i < values.size(); ++i) ASSERT_EQ(Values(y)[i], values[i] * values[i]) << i;
}

TEST_F(CodegenLibraryTest, GeneratedAssertsRaiseThroughThePointerAndTheUndefinedSymbol) {
  Tensor matrix = Tensor::EmptyHost({2, 2}, DLDataType{kDLFloat, 32, 1}).value();
  FfiRaised raised;
  auto result = library_->Find("parallel_square").value().Call(std::vector<FfiValue>{matrix, matrix}, &raised);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(raised.kind, "ValueError");
  EXPECT_EQ(raised.message, "parallel_square: x.ndim is expected to be 1");  // ...FromCStrParts
  result = library_->Find("parallel_square").value().Call(std::vector<FfiValue>{int64_t{1}}, &raised);
  EXPECT_EQ(raised.message, "parallel_square: expected 2 arguments");  // __TVMFFIErrorSetRaisedFromCStr
}

TEST_F(CodegenLibraryTest, LooksUpAndCallsHetrtsGlobalFunctions) {
  (void)GlobalFunctionRegistry::Get().Register("hetrt.test.add_ints", {&AddInts, nullptr});
  Kernel call = library_->Find("call_global").value();
  FfiRaised raised;
  auto missing = call.Call(std::vector<FfiValue>{std::string("hetrt.test.no_such"), int64_t{1}}, &raised);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(raised.kind, "RuntimeError");
  EXPECT_NE(raised.message.find("'hetrt.test.no_such', which is none of hetrt's global functions"),
            std::string::npos)
      << raised.message;
  HETRT_ASSERT_OK_AND_ASSIGN(FfiValue sum, call.Call(std::vector<FfiValue>{std::string("hetrt.test.add_ints"),
                                                                           int64_t{21}}));
  EXPECT_EQ(std::get<int64_t>(sum), 42);
}

TEST_F(CodegenLibraryTest, InitOnceFillsItsSlotOnlyWhenTheInitializerSucceeds) {
  Kernel once = library_->Find("lookup_once").value();
  EXPECT_FALSE(once.Call(std::vector<FfiValue>{std::string("hetrt.test.no_such")}).ok());
  HETRT_ASSERT_OK_AND_ASSIGN(FfiValue found, once.Call(std::vector<FfiValue>{std::string("__tvm_set_device")}));
  EXPECT_TRUE(std::get<bool>(found));
}

TEST(KernelLibraryCli, InspectListsKernelsWithTheirMetadataAndDocs) {
  const std::string log = ::testing::TempDir() + "/hetrt_inspect_kernels_" + std::to_string(getpid()) + ".log";
  const int status = std::system((std::string(HETRT_CLI) + " inspect " + kLinked + " > " + log + " 2>&1").c_str());
  std::ifstream in(log);
  const std::string output((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::remove(log.c_str());
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << output;
  for (const char* needle : {"format: tvm-ffi kernel library (TVM v0.22+ ABI or a foreign compiler's; no model blob): 13 kernels",
                             "  add_one  {\"type_schema\": \"(Tensor, Tensor) -> None\"}\n    y = x + 1\n",
                             "  scale\n", "  sum\n"})
    EXPECT_NE(output.find(needle), std::string::npos) << needle << "\n" << output;
}

}  // namespace
}  // namespace hetrt
