// Model libraries of TVM v0.22+ (docs/tvm-ffi.md (b), (e), (f)): a Relax
// executable (V1 and V2 images, constants tagged by type index) in a
// __tvm_ffi__library_bin blob over a host library of __tvm_ffi_<name>
// kernels (tests/kernels/ffi_model_host.c), written with hetrt's exporter
// and run by the VM; the blob reader's refusals; device payloads converted
// between the eras' forms.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>

#include "hetrt/exec/open_model.h"
#include "hetrt/formats/device_payloads.h"
#include "hetrt/formats/params.h"
#include "hetrt/module/kernel_library.h"
#include "hetrt/module/library_module.h"
#include "hetrt/module/module_loader.h"
#include "hetrt/plugin_host/plugin_registry.h"
#include "hetrt/relax/vm.h"
#include "hetrt/sdk/byte_stream.h"
#include "hetrt/tvm_abi/global_functions.h"
#include "relax_test_support.h"
#include "tvm_ffi_model_support.h"

namespace hetrt {
namespace {

using testing::RelaxProgram;

Tensor Floats(std::vector<int64_t> shape, std::vector<float> values) {
  Tensor t = Tensor::EmptyHost(std::move(shape), DLDataType{kDLFloat, 32, 1}).value();
  std::memcpy(t.data(), values.data(), values.size() * sizeof(float));
  return t;
}

std::vector<float> Values(const Tensor& t) { return {t.data_as<float>(), t.data_as<float>() + t.num_elements()}; }

int32_t MultiplyInts(hetrt_value_t* args, int32_t* codes, int32_t num_args, hetrt_value_t* ret, int32_t* ret_code,
                     void*) {
  if (num_args != 2 || codes[0] != HETRT_TYPE_INT || codes[1] != HETRT_TYPE_INT) return -1;
  ret->v_int64 = args[0].v_int64 * args[1].v_int64;
  *ret_code = HETRT_TYPE_INT;
  return 0;
}

// main(x, out): add_bias(x, bias, out); scaled(x, out): scale_by_global(x, out, "hetrt.test.multiply").
RelaxExecutable ModelExecutable(bool v2) {
  RelaxProgram p;
  const uint32_t add_bias = p.Packed("add_bias");
  const uint32_t scale = p.Packed("scale_by_global");
  RelaxConstant bias;
  bias.type = RelaxConstant::Type::kTensor;
  bias.tensor = Floats({4}, {0.5f, 1.0f, 1.5f, 2.0f});
  const uint32_t bias_index = p.AddConstant(bias);
  const uint32_t name = p.String("hetrt.test.multiply");
  p.Function("main", {"x", "out"}, 2);
  p.Call(add_bias, kRelaxVoidRegister, {p.Reg(0), p.Const(bias_index), p.Reg(1)});
  p.Ret(1);
  p.End();
  p.Function("scaled", {"x", "out"}, 2);
  p.Call(scale, kRelaxVoidRegister, {p.Reg(0), p.Reg(1), p.Const(name)});
  p.Ret(1);
  p.End();
  RelaxExecutable exe = p.executable();
  exe.abi = LibraryAbi::kTvmFfi;
  exe.v2 = v2;
  if (v2) exe.memory_scopes = {{bias_index, "global"}};
  return exe;
}

// `exe` exported as TVM v0.22+ would, into the test's temporary folder.
Result<std::string> ExportFfiModel(const RelaxExecutable& exe, const std::string& name,
                                   std::vector<std::shared_ptr<Module>> device_modules = {}) {
  const std::string path = ::testing::TempDir() + "/" + name + "_" + std::to_string(getpid()) + ".so";
  HETRT_RETURN_IF_ERROR(testing::ExportFfiModel(exe, path, std::move(device_modules)));
  return path;
}

class TvmFfiModel : public ::testing::TestWithParam<bool> {};

TEST_P(TvmFfiModel, ExportedAsTvm022WritesItRunsOnTheVm) {
  HETRT_ASSERT_OK_AND_ASSIGN(std::string path, ExportFfiModel(ModelExecutable(GetParam()), "ffi_model"));
  HETRT_ASSERT_OK_AND_ASSIGN(std::shared_ptr<Module> root, LoadModuleFile(path));
  EXPECT_EQ(root->type_key(), "relax.VMExecutable");
  ASSERT_EQ(root->imports().size(), 1u);
  auto* library = dynamic_cast<LibraryModule*>(root->imports()[0].get());
  ASSERT_NE(library, nullptr);
  EXPECT_EQ(library->abi(), LibraryAbi::kTvmFfi);
  std::vector<std::string> names = library->ListFunctionNames();
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"add_bias", "add_on_device", "add_with_kernel_set", "scale_by_global"}));
  const auto& exe = *dynamic_cast<RelaxExecutableModule&>(*root).executable();
  EXPECT_EQ(exe.abi, LibraryAbi::kTvmFfi);
  EXPECT_EQ(exe.v2, GetParam());

  HETRT_ASSERT_OK_AND_ASSIGN(auto vm, RelaxVirtualMachine::Create(root, {}));
  Tensor x = Floats({2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
  Tensor out = Floats({2, 4}, std::vector<float>(8, 0));
  std::vector<RelaxValue> args{RelaxValue::FromTensor(x), RelaxValue::FromTensor(out)};
  HETRT_ASSERT_OK(vm->Invoke("main", args).status());
  EXPECT_EQ(Values(out), (std::vector<float>{1.5f, 3, 4.5f, 6, 5.5f, 7, 8.5f, 10}));

  // Host code looking up one of hetrt's global functions and calling it.
  (void)GlobalFunctionRegistry::Get().Register("hetrt.test.multiply", {&MultiplyInts, nullptr});
  HETRT_ASSERT_OK(vm->Invoke("scaled", args).status());
  EXPECT_EQ(Values(out), (std::vector<float>{6, 12, 18, 24, 30, 36, 42, 48}));

  // A kernel's raised error reaches the caller with its kind and message.
  std::vector<RelaxValue> wrong{RelaxValue::FromTensor(Floats({8}, std::vector<float>(8, 0))),
                                RelaxValue::FromTensor(out)};
  auto failed = vm->Invoke("main", wrong);
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().message().find("ValueError: add_bias: x must be [n, k] and bias [k]"), std::string::npos)
      << failed.status().message();
  // The CLI runs it through the same front door, inputs from a param dict.
  const std::string inputs = path + ".inputs.params", outputs = path + ".outputs.params";
  HETRT_ASSERT_OK_AND_ASSIGN(std::vector<uint8_t> dict,
                             WriteParamDict({{"x", x}, {"out", Floats({2, 4}, std::vector<float>(8, 0))}}));
  std::ofstream(inputs, std::ios::binary).write(reinterpret_cast<const char*>(dict.data()),
                                                static_cast<std::streamsize>(dict.size()));
  ASSERT_EQ(std::system((std::string(HETRT_CLI) + " run " + path + " --inputs " + inputs + " --save-outputs " +
                         outputs + " > /dev/null 2>&1")
                            .c_str()),
            0);
  HETRT_ASSERT_OK_AND_ASSIGN(std::vector<NamedTensor> saved, LoadParamDictFile(outputs));
  ASSERT_EQ(saved.size(), 1u);
  EXPECT_EQ(Values(saved[0].tensor), (std::vector<float>{1.5f, 3, 4.5f, 6, 5.5f, 7, 8.5f, 10}));
  std::remove(inputs.c_str());
  std::remove(outputs.c_str());

  // hetrt inspect names the era from the file.
  const std::string log = path + ".inspect.log";
  ASSERT_EQ(std::system((std::string(HETRT_CLI) + " inspect " + path + " > " + log + " 2>&1").c_str()), 0);
  std::ifstream in(log);
  const std::string output((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::remove(log.c_str());
  const std::string format = GetParam() ? "format: TVM v0.23+ Relax VM executable (tvm-ffi ABI, V2 image)"
                                        : "format: TVM v0.22 Relax VM executable (tvm-ffi ABI, V1 image)";
  for (const std::string& needle : {format, std::string("- relax.VMExecutable"),
                                    std::string("functions (4): ")})
    EXPECT_NE(output.find(needle), std::string::npos) << needle << "\n" << output;
  root.reset();
  vm.reset();
  std::remove(path.c_str());
}

INSTANTIATE_TEST_SUITE_P(Images, TvmFfiModel, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "V2" : "V1"; });

// An OpenCL module as TVM v0.18 wrote it (the form the plugin reads); the
// exporter writes it in v0.22's form and the loader converts it back.
std::shared_ptr<Module> OpenClAddModule() {
  ByteWriter w;
  w.WriteString("cl");
  w.WriteU64(1);
  w.WriteString("add_kernel");
  w.WriteString("");
  w.WriteU64(3);
  for (int i = 0; i < 3; ++i) w.WritePod<uint8_t>(3), w.WritePod<uint8_t>(64), w.WritePod<uint16_t>(1);
  w.WriteU64(2);
  w.WriteString("blockIdx.x");
  w.WriteString("threadIdx.x");
  w.WriteString(
      "__kernel void add_kernel(__global float* restrict c, __global float* restrict a, __global float* restrict b) "
      "{ const int i = get_group_id(0); c[i] = a[i] + b[i]; }\n");
  return std::make_shared<UnloadedModule>("opencl", w.Take(), OkStatus());
}

TEST(TvmFfiModelOnDevice, HostCodeLaunchesAnOpenClKernelFoundThroughTheLibraryContext) {
  HETRT_REQUIRE_OPENCL();
  HETRT_ASSERT_OK_AND_ASSIGN(std::string path, ExportFfiModel(testing::DeviceAddExecutable("add_on_device"),
                                                              "ffi_opencl", {OpenClAddModule()}));
  HETRT_ASSERT_OK_AND_ASSIGN(std::shared_ptr<Module> root, LoadModuleFile(path));
  const Module& library = *root->imports().at(0);
  ASSERT_EQ(library.imports().size(), 1u);
  EXPECT_EQ(library.imports()[0]->type_key(), "opencl");

  const DLDevice opencl{kDLOpenCL, 0};
  RelaxVirtualMachine::Options options;
  options.devices = {opencl, {kDLCPU, 0}};
  HETRT_ASSERT_OK_AND_ASSIGN(auto vm, RelaxVirtualMachine::Create(root, options));
  PluginRegistry& registry = PluginRegistry::Global();
  Allocator& memory = registry.ForDevice(opencl).value()->DeviceAllocator(opencl);
  std::vector<RelaxValue> args;
  for (const std::vector<float>& values : {std::vector<float>{1, 2, 3, 4, 5}, std::vector<float>{10, 20, 30, 40, 50},
                                           std::vector<float>(5, 0)}) {
    HETRT_ASSERT_OK_AND_ASSIGN(Tensor t, Tensor::Empty({5}, DLDataType{kDLFloat, 32, 1}, memory));
    HETRT_ASSERT_OK(registry.CopyTensor(Floats({5}, values), t));
    args.push_back(RelaxValue::FromTensor(t));
  }
  HETRT_ASSERT_OK(vm->Invoke("main", args).status());
  HETRT_ASSERT_OK(vm->Synchronize());
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor c, registry.ToHost(args[2].tensor()));
  EXPECT_EQ(Values(c), (std::vector<float>{11, 22, 33, 44, 55}));
  vm.reset();
  root.reset();
  std::remove(path.c_str());
}

// A Relax extern call (call_packed) to a foreign kernel registered as a global
// function: the VM passes a tuple as an Array holding a Tensor, a Shape and an
// Int, and takes back the kernel's Array of a Shape and a Float as a tuple.
TEST(TvmFfiModelExterns, TuplesAndShapesReachAForeignKernelAndComeBack) {
  HETRT_ASSERT_OK_AND_ASSIGN(auto kernels, KernelLibrary::Open(HETRT_TEST_KERNELS_DIR "/libffi_kernels.so"));
  const std::string prefix = "test" + std::to_string(getpid()) + ".";
  HETRT_ASSERT_OK(kernels->RegisterGlobalFunctions(prefix));
  auto again = kernels->RegisterGlobalFunctions(prefix);
  EXPECT_EQ(again.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(again.message().find("the name is taken"), std::string::npos) << again.message();

  RelaxProgram p;
  const auto [shape_of, make_tuple] = p.Builtins("shape_of", "make_tuple");
  const uint32_t describe = p.Packed(prefix + "describe");
  p.Function("main", {"x"}, 4);
  p.Call(shape_of, 1, {p.Reg(0)});
  p.Call(make_tuple, 2, {p.Reg(0), p.Reg(1), p.Imm(3)});
  p.Call(describe, 3, {p.Reg(2)});
  p.Ret(3);
  p.End();
  RelaxExecutable exe = p.executable();
  exe.abi = LibraryAbi::kTvmFfi;
  HETRT_ASSERT_OK_AND_ASSIGN(std::string path, ExportFfiModel(exe, "ffi_extern"));
  HETRT_ASSERT_OK_AND_ASSIGN(std::shared_ptr<Module> root, LoadModuleFile(path));
  HETRT_ASSERT_OK_AND_ASSIGN(auto vm, RelaxVirtualMachine::Create(root, {}));
  const std::vector<RelaxValue> args{RelaxValue::FromTensor(Floats({2, 2}, {1, 2, 3, 4}))};
  HETRT_ASSERT_OK_AND_ASSIGN(RelaxValue out, vm->Invoke("main", args));
  ASSERT_TRUE(out.is(RelaxValue::Kind::kTuple)) << out.Describe();
  ASSERT_EQ(out.tuple().size(), 2u);
  ASSERT_TRUE(out.tuple()[0].is(RelaxValue::Kind::kShape)) << out.tuple()[0].Describe();
  EXPECT_EQ(out.tuple()[0].shape(), (std::vector<int64_t>{2, 2, 3}));
  ASSERT_TRUE(out.tuple()[1].is(RelaxValue::Kind::kFloat)) << out.tuple()[1].Describe();
  EXPECT_DOUBLE_EQ(out.tuple()[1].float_value(), 10.0);
  vm.reset();
  root.reset();
  std::remove(path.c_str());
}

// The model make_ffi_model writes for the Python and serving tests, through
// OpenModel: its input is declared by the bytecode's checks, as TVM's are.
TEST(TvmFfiModelOpened, TheServedModelRunsThroughOpenModel) {
  const std::string path = ::testing::TempDir() + "/ffi_served_" + std::to_string(getpid()) + ".so";
  HETRT_ASSERT_OK(testing::ExportFfiModel(testing::ServedFfiModelExecutable(), path));
  HETRT_ASSERT_OK_AND_ASSIGN(Model model, OpenModel(ModelSpec{path}));
  Executor& ex = *model.executor;
  ASSERT_EQ(ex.UnboundInputs().size(), 1u);
  EXPECT_EQ(ex.InputName(0), "x");
  EXPECT_EQ(ex.InputSpec(0).shape, (std::vector<int64_t>{2, 4}));
  HETRT_ASSERT_OK(ex.SetInput(0, Floats({2, 4}, {1, 2, 3, 4, 5, 6, 7, 8})));
  HETRT_ASSERT_OK(ex.Run());
  HETRT_ASSERT_OK(ex.Synchronize());
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor out, ex.GetOutput(0));
  EXPECT_EQ(Values(out), (std::vector<float>{1.5f, 3, 4.5f, 6, 5.5f, 7, 8.5f, 10}));
  model = Model{};
  std::remove(path.c_str());
}

TEST(TvmFfiImage, ErasThatDisagreeAreRefused) {
  RelaxExecutable exe = ModelExecutable(/*v2=*/true);
  HETRT_ASSERT_OK_AND_ASSIGN(std::vector<uint8_t> image, WriteRelaxExecutable(exe));
  auto packed = ParseRelaxExecutable(image, "v2.so", LibraryAbi::kPackedFunc);
  ASSERT_FALSE(packed.ok());
  EXPECT_NE(packed.status().message().find("parts disagree"), std::string::npos) << packed.status().message();
  // A V1 image of tvm-ffi tags read as the packed ABI: the tags are not its.
  exe.v2 = false;
  exe.memory_scopes.clear();
  HETRT_ASSERT_OK_AND_ASSIGN(image, WriteRelaxExecutable(exe));
  auto tags = ParseRelaxExecutable(image, "v1.so", LibraryAbi::kPackedFunc);
  ASSERT_FALSE(tags.ok());
  EXPECT_NE(tags.status().message().find("unknown constant tag 70"), std::string::npos) << tags.status().message();
}

TEST(TvmFfiImage, MemoryScopesAreCheckedAgainstTheConstants) {
  for (const auto& [scope, needle] : std::vector<std::pair<RelaxMemoryScope, std::string>>{
           {{7, "global"}, "no such constant"},
           {{1, "global"}, "the constant is not a tensor"},
           {{0, "global.texture"}, "texture scopes are not supported"}}) {
    RelaxExecutable exe = ModelExecutable(/*v2=*/true);
    exe.memory_scopes = {scope};
    HETRT_ASSERT_OK_AND_ASSIGN(std::vector<uint8_t> image, WriteRelaxExecutable(exe));
    auto parsed = ParseRelaxExecutable(image, "scopes.so", LibraryAbi::kTvmFfi);
    ASSERT_FALSE(parsed.ok()) << needle;
    EXPECT_NE(parsed.status().message().find(needle), std::string::npos) << parsed.status().message();
  }
}

// --- The blob reader, on blobs edited field by field.

struct FfiBlob {
  std::vector<uint64_t> indptr, children;
  std::vector<std::pair<std::string, std::vector<uint8_t>>> modules;  // kind, payload (none for _lib)
  std::vector<uint8_t> Encode() const {
    ByteWriter w;
    w.WriteU64(indptr.size());
    for (uint64_t v : indptr) w.WriteU64(v);
    w.WriteU64(children.size());
    for (uint64_t v : children) w.WriteU64(v);
    for (const auto& [kind, payload] : modules) {
      w.WriteString(kind);
      if (kind == "_lib") continue;
      w.WriteU64(payload.size());
      w.WriteBytes(payload);
    }
    return w.Take();
  }
};

// A Relax entry's payload is the image itself (its length is the entry's).
std::vector<uint8_t> ImageBytes() { return WriteRelaxExecutable(ModelExecutable(true)).value(); }

Status Load(const FfiBlob& blob) {
  return LoadModuleTreeFromFfiBlob(blob.Encode(), nullptr, "edited.so").status();
}

TEST(TvmFfiBlob, EveryBrokenFieldIsNamed) {
  // Without a host library a blob of the executable alone loads.
  FfiBlob good{{0, 0}, {}, {{"relax.VMExecutable", {}}}};
  good.modules[0].second = ImageBytes();
  HETRT_ASSERT_OK_AND_ASSIGN(auto root, LoadModuleTreeFromFfiBlob(good.Encode(), nullptr, "good.so"));
  EXPECT_EQ(root->type_key(), "relax.VMExecutable");

  auto expect = [](const FfiBlob& blob, const std::string& needle) {
    Status s = Load(blob);
    EXPECT_FALSE(s.ok()) << needle;
    EXPECT_NE(s.message().find(needle), std::string::npos) << s.message();
  };
  FfiBlob b = good;
  b.indptr = {};
  expect(b, "describes no module");
  b = good, b.indptr = {0, 1}, b.children = {0};
  expect(b, "imports itself through a cycle");
  b = good, b.indptr = {0, 0, 1}, b.children = {0}, b.modules.push_back({"_lib", {}});
  expect(b, "does not come after it");
  b = good, b.indptr = {0, 2};
  expect(b, "row_ptr ends at 2");
  b = good, b.modules[0].first = "";
  expect(b, "empty kind");
  b = good, b.modules[0].first = "no_such_kind";
  expect(b, "no_such_kind");
  b = good, b.modules[0].second.push_back(0);
  expect(b, "1 trailing byte(s) after the code section");
  b = good, b.indptr = {0, 1, 1}, b.children = {1}, b.modules.push_back({"_lib", {}});
  expect(b, "names a host library but none was loaded");

  std::vector<uint8_t> bytes = good.Encode();
  bytes.push_back(0);
  Status trailing = LoadModuleTreeFromFfiBlob(bytes, nullptr, "trailing.so").status();
  EXPECT_NE(trailing.message().find("bytes after the last module"), std::string::npos) << trailing.message();
  bytes = good.Encode();
  for (size_t n = 0; n < bytes.size(); ++n)
    EXPECT_FALSE(LoadModuleTreeFromFfiBlob({bytes.data(), n}, nullptr, "truncated.so").ok()) << n;
}

// --- Device payloads between the eras' forms.

std::vector<uint8_t> OpenClPayload(const std::vector<std::string>& tags) {
  ByteWriter w;
  w.WriteString("cl");
  w.WriteU64(1);
  w.WriteString("add_kernel");
  w.WriteString("");
  w.WriteU64(2);
  for (int i = 0; i < 2; ++i) w.WritePod<uint8_t>(3), w.WritePod<uint8_t>(64), w.WritePod<uint16_t>(1);
  w.WriteU64(tags.size());
  for (const std::string& t : tags) w.WriteString(t);
  w.WriteString("__kernel void add_kernel(__global float* a, __global float* b) {}");
  return w.Take();
}

TEST(DevicePayloads, RoundTripBetweenTheErasForms) {
  const std::vector<uint8_t> v018 = OpenClPayload({"blockIdx.x", "threadIdx.x"});
  HETRT_ASSERT_OK_AND_ASSIGN(auto v022, DevicePayloadToFfiForm("opencl", v018, true, "k.so"));
  EXPECT_EQ(v022.size(), v018.size() + 8 + 2 * 4);  // arg_extra_tags: count + one i32 per argument
  HETRT_ASSERT_OK_AND_ASSIGN(auto back, DevicePayloadToPackedForm("opencl", v022, "k.so"));
  EXPECT_EQ(back, v018);
  // Kinds whose payload did not change pass through.
  const std::vector<uint8_t> other{1, 2, 3};
  EXPECT_EQ(DevicePayloadToPackedForm("metal", other, "k.so").value(), other);
}

TEST(DevicePayloads, V024TagNamesAndWrappedShadersAreRead) {
  HETRT_ASSERT_OK_AND_ASSIGN(
      auto v024, DevicePayloadToFfiForm("opencl", OpenClPayload({"blockIdx.x", "tirx.use_dyn_shared_memory"}), true,
                                        "k.so"));
  HETRT_ASSERT_OK_AND_ASSIGN(auto back, DevicePayloadToPackedForm("opencl", v024, "k.so"));
  EXPECT_EQ(back, OpenClPayload({"blockIdx.x", "tir.use_dyn_shared_memory"}));

  ByteWriter vulkan;
  vulkan.WriteString("vulkan");
  vulkan.WriteU64(0);  // no functions
  vulkan.WriteU64(1);
  vulkan.WriteString("k");
  vulkan.WritePod<uint32_t>(1);
  vulkan.WriteU64(2);
  vulkan.WritePod<uint32_t>(0x07230203), vulkan.WritePod<uint32_t>(0x00010000);
  const std::vector<uint8_t> plain = vulkan.Take();
  for (bool wrap : {false, true}) {
    HETRT_ASSERT_OK_AND_ASSIGN(auto ffi, DevicePayloadToFfiForm("vulkan", plain, wrap, "k.so"));
    HETRT_ASSERT_OK_AND_ASSIGN(auto again, DevicePayloadToPackedForm("vulkan", ffi, "k.so"));
    EXPECT_EQ(again, plain) << wrap;
  }
}

TEST(DevicePayloads, WhatThePluginsCannotRunIsRefusedByName) {
  auto expect = [](Result<std::vector<uint8_t>> r, const std::string& needle) {
    ASSERT_FALSE(r.ok()) << needle;
    EXPECT_NE(r.status().message().find(needle), std::string::npos) << r.status().message();
  };
  auto v022 = DevicePayloadToFfiForm("opencl", OpenClPayload({"blockIdx.x", "clusterCtaIdx.x"}), true, "k.so");
  expect(DevicePayloadToPackedForm("opencl", *v022, "k.so"), "launch tag 'clusterCtaIdx.x'");

  // A TensorMap argument: arg_extra_tags [0, 1], whose last i32 ends where the code string starts.
  std::vector<uint8_t> tma = *DevicePayloadToFfiForm("opencl", OpenClPayload({}), true, "k.so");
  const size_t code_bytes = 8 + std::strlen("__kernel void add_kernel(__global float* a, __global float* b) {}");
  tma[tma.size() - code_bytes - 4] = 1;
  expect(DevicePayloadToPackedForm("opencl", tma, "k.so"), "a CUDA TensorMap");

  ByteWriter cuda;
  cuda.WriteString("cuda");
  cuda.WriteU64(0);
  cuda.WriteString("extern \"C\" __global__ void k() {}");
  expect(DevicePayloadToPackedForm("cuda", cuda.Take(), "k.so"), "CUDA C++ source");

  std::vector<uint8_t> trailing = *v022;
  trailing.push_back(0);
  expect(DevicePayloadToPackedForm("opencl", trailing, "k.so"), "trailing byte");
}

}  // namespace
}  // namespace hetrt
