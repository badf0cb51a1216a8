// The Vulkan plugin on a real Vulkan device (lavapipe in CI): hetrt's kernel
// set against the CPU, CPU+Vulkan models exported here (.so and .tar) under
// both executors, TVM's blob format read and written byte for byte, scalar
// packing (push constants and uniform buffers), malformed input, and what is
// Vulkan's own in streams, events and clocks. What every backend does (copies,
// memory, streams, events, instances) is the conformance kit (sdk/conformance/), which runs on
// Vulkan too.
// ctest runs the suite with HETRT_VULKAN_VALIDATION=1: every test then fails
// on any message VK_LAYER_KHRONOS_validation reports.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <thread>

#include "device_checks.h"
#include "device_client.h"
#include "hetrt/sdk/byte_stream.h"
#include "hetrt/exec/graph_model.h"
#include "hetrt/graph_builder.h"
#include "hetrt/module/module_loader.h"
#include "hetrt/module_export.h"
#include "kernel_runs.h"
#include "kernel_set.h"
#include "test_support.h"
#include "two_branch_model.h"
#include "vulkan_attributes.h"
#include "vulkan_spirv/many_scalars.h"
#include "vulkan_spirv/mix_scalars.h"

namespace hetrt {
namespace {

constexpr DLDevice kVk{kDLVulkan, 0};
constexpr DLDevice kHost{kDLCPU, 0};
constexpr DLDataType kF32{kDLFloat, 32, 1};
constexpr DLDataType kU8{kDLUInt, 8, 1};

using testing::Random;
using testing::ReadText;

Plugin* Vk() { return PluginRegistry::Global().ForDevice(kVk).value(); }

int64_t ValidationMessages() {
  auto n = Vk()->AttributeInt(kVk, HETRT_VULKAN_ATTR_VALIDATION_MESSAGES);
  return n.ok() ? *n : 0;
}

// Skips without a Vulkan device; fails a test during which the validation
// layer reported anything.
class VulkanTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto plugin = PluginRegistry::Global().ForDevice(kVk);
    if (!plugin.ok()) HETRT_MISSING("vulkan", "no Vulkan device: " << plugin.status().message());
    messages_before_ = ValidationMessages();
  }
  void TearDown() override {
    if (!PluginRegistry::Global().ForDevice(kVk).ok()) return;
    EXPECT_EQ(ValidationMessages(), messages_before_) << "VK_LAYER_KHRONOS_validation reported messages (see stderr)";
  }
  int64_t messages_before_ = 0;
};

std::string TempPath(const std::string& name) {
  return ::testing::TempDir() + "/hetrt_vk_" + std::to_string(getpid()) + "_" + name;
}

// A missing layer must fail the suite, not skip it as "no device".
TEST(VulkanValidation, LayerIsOnWhenAsked) {
  const char* asked = std::getenv("HETRT_VULKAN_VALIDATION");
  if (asked == nullptr || std::string(asked) == "0")
    HETRT_MISSING("vulkan-validation", "HETRT_VULKAN_VALIDATION is not set");
  HETRT_ASSERT_OK_AND_ASSIGN(Plugin * plugin, PluginRegistry::Global().ForDeviceType(kDLVulkan));
  HETRT_ASSERT_OK_AND_ASSIGN(auto count, plugin->CountDevices(kDLVulkan));
  ASSERT_EQ(count.unavailable_reason.find("VK_LAYER_KHRONOS_validation"), std::string::npos)
      << count.unavailable_reason;
  if (count.count == 0) HETRT_MISSING("vulkan", "no Vulkan device: " << count.unavailable_reason);
  HETRT_ASSERT_OK_AND_ASSIGN(int64_t on, plugin->AttributeInt(kVk, HETRT_VULKAN_ATTR_VALIDATION_ENABLED));
  EXPECT_EQ(on, 1);
}

// ---------------------------------------------------------------- kernel set

// One op of the set on `device` (kernel_runs.h).
Result<Tensor> RunOne(kernels::Op op, const std::vector<Tensor>& inputs, std::vector<int64_t> out, int32_t device) {
  return testing::RunKernelOp(op, inputs, std::move(out), device);
}

TEST_F(VulkanTest, EveryKernelOfTheSetMatchesTheCpuKernel) {
  std::vector<testing::KernelCase> cases = testing::KernelCases();
  // More elements than 65535 groups of 64 cover: the shader strides over the rest.
  cases.push_back({"add_strided", kernels::Op::kAdd, {{4200000}, {4200000}}, {4200000}});
  uint32_t seed = 1;
  for (const testing::KernelCase& c : cases) {
    SCOPED_TRACE(c.name);
    std::vector<Tensor> inputs;
    for (const auto& s : c.inputs) inputs.push_back(Random(s, seed++));
    HETRT_ASSERT_OK_AND_ASSIGN(Tensor expected, RunOne(c.op, inputs, c.output, kDLCPU));
    HETRT_ASSERT_OK_AND_ASSIGN(Tensor out, RunOne(c.op, inputs, c.output, kDLVulkan));
    EXPECT_TRUE(testing::TensorsClose(out, expected, 1e-5, 1e-5));
  }
}

TEST_F(VulkanTest, KernelsRefuseTensorsOfAnotherDeviceWithTheirName) {
  // A Vulkan graph whose inputs the executor places on Vulkan: fine. Calling
  // the host launcher with CPU tensors is the error the check exists for.
  std::vector<Tensor> inputs = {Random({2, 5}, 1), Random({3, 4}, 2), Random({3}, 3)};  // K mismatch
  auto out = RunOne(kernels::Op::kDense, inputs, {2, 3}, kDLVulkan);
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("hetrt_vk_dense: shapes do not agree"), std::string::npos)
      << out.status().message();
}

// ---------------------------------------------------------------- models

// The two-branch model (CPU branch + Vulkan branch, __copy nodes between),
// built once per accelerator and exported as `extension`: a .so, or a .tar
// (host objects + devc.c, TVM's export_library form) that is unpacked and
// linked here the way a user of the .tar would.
std::string TwoBranchLibrary(int32_t accel, const std::string& extension) {
  const std::string path = TempPath("two_branch_" + std::to_string(accel) + extension);
  const std::string library = extension == ".tar" ? path + ".linked.so" : path;
  // Built once per process: a file of that name may be another run's (a
  // reused pid), made by another build (a sanitizer's) that this one cannot load.
  static std::set<std::string> built_here;
  if (!built_here.insert(library).second) return library;
  auto built = kernels::BuildTwoBranchModel(accel);
  EXPECT_TRUE(built.ok()) << built.status().ToString();
  Status s = kernels::ExportGraph(built->graph_json, built->params, std::vector<int32_t>{accel}, path);
  EXPECT_TRUE(s.ok()) << s.ToString();
  if (extension != ".tar") return path;
  const std::string dir = path + ".d";
  std::filesystem::create_directories(dir);
  EXPECT_EQ(std::system(("tar xf " + path + " -C " + dir).c_str()), 0);
  std::vector<std::string> members;
  for (const auto& e : std::filesystem::directory_iterator(dir)) members.push_back(e.path().string());
  EXPECT_TRUE(std::count(members.begin(), members.end(), dir + "/devc.c")) << "no devc.c in " << path;
  s = LinkSharedLibrary(members, library, {});
  EXPECT_TRUE(s.ok()) << s.ToString();
  return library;
}

Result<Tensor> RunTwoBranch(const std::string& library, GraphExecutor::Options options, const Tensor& input) {
  HETRT_ASSIGN_OR_RETURN(GraphModel m, OpenGraphModel({library}, options));
  HETRT_RETURN_IF_ERROR(m.executor->SetInput("data", input));
  HETRT_RETURN_IF_ERROR(m.executor->Run());
  return m.executor->GetOutput(0);
}

TEST_F(VulkanTest, CpuPlusVulkanModelMatchesAllCpuAsSoAndTarInEveryExecutorMode) {
  const Tensor input = Random({16, 256}, 42);
  GraphExecutor::Options cpu;
  cpu.devices = {kHost};
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor reference, RunTwoBranch(TwoBranchLibrary(kDLCPU, ".so"), cpu, input));
  for (const char* extension : {".so", ".tar"}) {
    for (int mode = 0; mode < 4; ++mode) {
      const bool sequential = mode & 1, staged = mode & 2;
      SCOPED_TRACE(std::string(extension) + (sequential ? " sequential" : " async") + (staged ? " staged copies" : ""));
      GraphExecutor::Options options;
      options.devices = {kHost, kVk};
      options.sequential = sequential;
      options.staged_copies = staged;
      HETRT_ASSERT_OK_AND_ASSIGN(Tensor out, RunTwoBranch(TwoBranchLibrary(kDLVulkan, extension), options, input));
      EXPECT_TRUE(testing::TensorsClose(out, reference, 1e-5, 1e-5));
    }
  }
}

// The plugin's other paths under a whole model: staged copies (as on a
// discrete GPU), a submission per command, descriptor pools.
TEST_F(VulkanTest, ModelMatchesOnEveryPluginPath) {
  const Tensor input = Random({16, 256}, 11);
  GraphExecutor::Options cpu;
  cpu.devices = {kHost};
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor reference, RunTwoBranch(TwoBranchLibrary(kDLCPU, ".so"), cpu, input));
  const std::pair<const char*, const char*> paths[] = {
      {"direct_mapping", "0"}, {"batch_limit", "1"}, {"push_descriptors", "0"}};
  const std::pair<const char*, const char*> defaults[] = {
      {"direct_mapping", "1"}, {"batch_limit", "256"}, {"push_descriptors", "1"}};
  for (size_t p = 0; p < std::size(paths); ++p) {
    SCOPED_TRACE(std::string(paths[p].first) + "=" + paths[p].second);
    HETRT_ASSERT_OK(Vk()->SetOption(paths[p].first, paths[p].second));
    for (bool sequential : {false, true}) {
      GraphExecutor::Options options;
      options.devices = {kHost, kVk};
      options.sequential = sequential;
      auto out = RunTwoBranch(TwoBranchLibrary(kDLVulkan, ".so"), options, input);
      if (out.ok())
        EXPECT_TRUE(testing::TensorsClose(*out, reference, 1e-5, 1e-5)) << sequential;
      else
        ADD_FAILURE() << out.status().ToString();
    }
    HETRT_ASSERT_OK(Vk()->SetOption(defaults[p].first, defaults[p].second));
  }
}

TEST_F(VulkanTest, RepeatedRunsAndProfiledRunsStayCorrect) {
  const Tensor input = Random({16, 256}, 7);
  GraphExecutor::Options cpu;
  cpu.devices = {kHost};
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor reference, RunTwoBranch(TwoBranchLibrary(kDLCPU, ".so"), cpu, input));
  GraphExecutor::Options options;
  options.devices = {kHost, kVk};
  HETRT_ASSERT_OK_AND_ASSIGN(GraphModel m, OpenGraphModel({TwoBranchLibrary(kDLVulkan, ".so")}, options));
  HETRT_ASSERT_OK(m.executor->SetInput("data", input));
  for (int i = 0; i < 5; ++i) HETRT_ASSERT_OK(m.executor->Run());
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor out, m.executor->GetOutput(0));
  EXPECT_TRUE(testing::TensorsClose(out, reference, 1e-5, 1e-5));
  GraphExecutor::RunProfile profile;
  HETRT_ASSERT_OK(m.executor->RunProfiled(&profile));
  bool timed_vulkan_node = false;
  for (const auto& t : profile.nodes) {
    EXPECT_LE(t.start_ns, t.end_ns);
    timed_vulkan_node |= t.device.device_type == kDLVulkan;
  }
  EXPECT_TRUE(timed_vulkan_node);
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor again, m.executor->GetOutput(0));
  EXPECT_TRUE(testing::TensorsClose(again, reference, 1e-5, 1e-5));
}

TEST_F(VulkanTest, CliRunsAndBenchesAHeterogeneousModel) {
  const std::string lib = TwoBranchLibrary(kDLVulkan, ".so");
  const std::string inputs = TempPath("inputs.params"), outputs = TempPath("outputs.params"), log = TempPath("cli.log");
  const Tensor input = Random({16, 256}, 3);
  HETRT_ASSERT_OK_AND_ASSIGN(auto bytes, WriteParamDict({{"data", input}}));
  {
    std::ofstream out(inputs, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  }
  const std::string run = std::string(HETRT_CLI) + " run " + lib + " --device cpu --device vulkan --inputs " + inputs +
                          " --save-outputs " + outputs + " > /dev/null 2> " + log;
  ASSERT_EQ(std::system(run.c_str()), 0) << run << "\n" << ReadText(log);
  EXPECT_EQ(ReadText(log).find("validation"), std::string::npos) << ReadText(log);
  HETRT_ASSERT_OK_AND_ASSIGN(auto saved, LoadParamDictFile(outputs));
  GraphExecutor::Options options;
  options.devices = {kHost, kVk};
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor expected, RunTwoBranch(lib, options, input));
  EXPECT_TRUE(testing::TensorsClose(saved[0].tensor, expected, 1e-6, 1e-6));
  const std::string bench =
      std::string(HETRT_CLI) + " bench " + lib + " --device cpu --device vulkan > " + log + " 2>&1";
  ASSERT_EQ(std::system(bench.c_str()), 0) << ReadText(log);
  EXPECT_NE(ReadText(log).find("vulkan"), std::string::npos) << ReadText(log);
  EXPECT_EQ(ReadText(log).find("validation"), std::string::npos) << ReadText(log);
}

TEST_F(VulkanTest, PipelinesAreCachedOnDiskWhenAsked) {
  const std::string cache = TempPath("cache");
  std::filesystem::remove_all(cache);
  std::filesystem::create_directories(cache);
  const std::string cmd = "HETRT_VULKAN_CACHE_DIR=" + cache + " " + HETRT_CLI + " run " +
                          TwoBranchLibrary(kDLVulkan, ".so") + " --device cpu --device vulkan > /dev/null 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(cache)) files += e.path().extension() == ".vkpipelinecache";
  EXPECT_EQ(files, 1);
  ASSERT_EQ(std::system(cmd.c_str()), 0);  // the second run starts from it
}

TEST_F(VulkanTest, NoDriverIsReportedWithTheReason) {
  const std::string out = TempPath("no_icd.txt");
  const std::string hide = "VK_DRIVER_FILES=/nonexistent.json VK_ICD_FILENAMES=/nonexistent.json ";
  ASSERT_EQ(std::system((hide + HETRT_CLI + " plugins > " + out).c_str()), 0);
  EXPECT_NE(ReadText(out).find("device vulkan: 0 device(s) - no Vulkan driver"), std::string::npos) << ReadText(out);
  const std::string run =
      hide + HETRT_CLI + " run " + TwoBranchLibrary(kDLVulkan, ".so") + " --device cpu --device vulkan 2> " + out;
  EXPECT_NE(std::system(run.c_str()), 0);
  EXPECT_NE(ReadText(out).find("no vulkan device is available: no Vulkan driver"), std::string::npos) << ReadText(out);
}

// ---------------------------------------------------------------- the blob format

struct FunctionSpec {
  std::string name;
  std::vector<DLDataType> args;
  std::vector<std::string> tags{"blockIdx.x", "threadIdx.x"};
  std::string info_name = {};  // TVM writes it empty
};
struct ShaderSpec {
  std::string name;
  uint32_t flag;
  std::vector<uint32_t> words;
};

std::vector<uint8_t> VulkanBlob(const std::vector<FunctionSpec>& functions, const std::vector<ShaderSpec>& shaders) {
  ByteWriter w;
  w.WriteString("vulkan");
  w.WriteU64(functions.size());
  for (const FunctionSpec& f : functions) {
    w.WriteString(f.name);
    w.WriteString(f.info_name);
    w.WriteU64(f.args.size());
    for (const DLDataType& t : f.args) w.WritePod(t.code), w.WritePod(t.bits), w.WritePod(t.lanes);
    w.WriteU64(f.tags.size());
    for (const std::string& tag : f.tags) w.WriteString(tag);
  }
  w.WriteU64(shaders.size());
  for (const ShaderSpec& s : shaders) {
    w.WriteString(s.name);
    w.WritePod(s.flag);
    w.WriteU64(s.words.size());
    for (uint32_t word : s.words) w.WritePod(word);
  }
  return w.Take();
}

constexpr DLDataType kHandle{kDLOpaqueHandle, 64, 1}, kI32{kDLInt, 32, 1}, kI64{kDLInt, 64, 1}, kF64{kDLFloat, 64, 1},
    kU32{kDLUInt, 32, 1};

std::vector<uint32_t> Words(const uint32_t* words, size_t n) { return {words, words + n}; }
std::vector<uint32_t> MixWords() { return Words(mix_scalars, std::size(mix_scalars)); }
std::vector<uint32_t> ManyWords() { return Words(many_scalars, std::size(many_scalars)); }

// mix_scalars(y, n, f32, i64, f64, u32): push constants. many_scalars: n and
// 16 more (f32, i64, f64, u32 four times) in a uniform buffer.
FunctionSpec MixSpec() { return {"mix_scalars", {kHandle, kI32, kF32, kI64, kF64, kU32}}; }
FunctionSpec ManySpec() {
  FunctionSpec f{"many_scalars", {kHandle, kI32}};
  for (int k = 0; k < 4; ++k) f.args.insert(f.args.end(), {kF32, kI64, kF64, kU32});
  return f;
}
std::vector<uint8_t> ScalarsBlob() {
  return VulkanBlob({ManySpec(), MixSpec()}, {{"mix_scalars", 0, MixWords()}, {"many_scalars", 1, ManyWords()}});
}

Result<std::shared_ptr<Module>> LoadVkModule(const std::vector<uint8_t>& blob) {
  ByteReader r(blob, "test vulkan blob");
  HETRT_ASSIGN_OR_RETURN(Plugin * vk, PluginRegistry::Global().ForTypeKey("vulkan"));
  return PluginModule::Load(vk, "vulkan", r);
}

std::vector<uint8_t> Saved(const Module& m) {
  auto bytes = m.SaveToBinary();
  EXPECT_TRUE(bytes.ok()) << bytes.status().ToString();
  return bytes.ok() ? *bytes : std::vector<uint8_t>{};
}

TEST_F(VulkanTest, ModulesReadBackByteForByte) {
  // Maps in a non-sorted order, a FunctionInfo name that is not empty, an
  // unused flag bit, a dynamic-shared-memory tag: all kept as they were.
  FunctionSpec mix = MixSpec();
  mix.info_name = "kept";
  mix.tags.push_back("tir.use_dyn_shared_memory");
  const auto blob =
      VulkanBlob({ManySpec(), mix}, {{"mix_scalars", 0x100, MixWords()}, {"many_scalars", 1, ManyWords()}});
  HETRT_ASSERT_OK_AND_ASSIGN(auto m, LoadVkModule(blob));
  EXPECT_EQ(Saved(*m), blob);
  // hetrt's own kernel set: bytes -> module -> bytes, and through an exported library.
  HETRT_ASSERT_OK_AND_ASSIGN(auto set_bytes, kernels::VulkanModuleBytes());
  HETRT_ASSERT_OK_AND_ASSIGN(auto set, LoadVkModule(set_bytes));
  EXPECT_EQ(Saved(*set), set_bytes);
  HETRT_ASSERT_OK_AND_ASSIGN(auto root, LoadModuleFile(TwoBranchLibrary(kDLVulkan, ".so")));
  const std::vector<const Module*> found = testing::ModulesOfType(*root, "vulkan");
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(Saved(*found[0]), set_bytes);
}

// ---------------------------------------------------------------- launches

// Calls `kernel` with `y`, then the scalar values, then blockIdx.x/threadIdx.x.
Status Launch(Module& m, const std::string& kernel, void* y, std::vector<hetrt_value_t> scalars,
              std::vector<int32_t> scalar_codes, int64_t groups) {
  std::vector<hetrt_value_t> args{{.v_handle = y}};
  std::vector<int32_t> codes{HETRT_TYPE_HANDLE};
  args.insert(args.end(), scalars.begin(), scalars.end());
  codes.insert(codes.end(), scalar_codes.begin(), scalar_codes.end());
  args.push_back({.v_int64 = groups});
  args.push_back({.v_int64 = 8});
  codes.insert(codes.end(), {HETRT_TYPE_INT, HETRT_TYPE_INT});
  return testing::CallKernel(m, kVk, kernel, std::move(args), std::move(codes));
}

// Scalars after n, and what the shader computes from them: y[i] = i + sum (k+1) s_k.
struct Scalars {
  std::vector<hetrt_value_t> values;
  std::vector<int32_t> codes;
  double sum = 0;
};
Scalars MakeScalars(int n, int count, int seed) {
  Scalars s;
  s.values.push_back({.v_int64 = n});
  s.codes.push_back(HETRT_TYPE_INT);
  for (int k = 1; k < count; ++k) {
    const int64_t v = (seed * 37 + k * 11) % 97 - 40;
    double as_used = static_cast<double>(v);
    switch ((k - 1) % 4) {
      case 0:  // float32, narrowed from the double value
        as_used = static_cast<float>(v + 0.25);
        s.values.push_back({.v_float64 = v + 0.25});
        s.codes.push_back(HETRT_TYPE_FLOAT);
        break;
      case 1:  // int64 beyond 32 bits
        as_used = static_cast<double>(v * 4294967296LL);
        s.values.push_back({.v_int64 = v * 4294967296LL});
        s.codes.push_back(HETRT_TYPE_INT);
        break;
      case 2:
        as_used = v + 0.125;
        s.values.push_back({.v_float64 = v + 0.125});
        s.codes.push_back(HETRT_TYPE_FLOAT);
        break;
      default:  // uint32, narrowed from the int64 value
        as_used = static_cast<double>(v + 1000);
        s.values.push_back({.v_int64 = v + 1000});
        s.codes.push_back(HETRT_TYPE_INT);
    }
    s.sum += (k)*as_used;
  }
  return s;
}

TEST_F(VulkanTest, ScalarsArePackedAsTvmDoesInPushConstantsAndUniformBuffers) {
  HETRT_ASSERT_OK_AND_ASSIGN(auto m, LoadVkModule(ScalarsBlob()));
  Plugin* vk = Vk();
  constexpr int kN = 20;
  // Three UBO dispatches and one push-constant dispatch recorded before any
  // wait: each UBO dispatch must keep its own scalars, and one submission
  // carries them all.
  std::vector<Tensor> outs;
  for (int i = 0; i < 4; ++i) {
    HETRT_ASSERT_OK_AND_ASSIGN(Tensor t, Tensor::Empty({kN}, {kDLFloat, 64, 1}, vk->DeviceAllocator(kVk)));
    outs.push_back(std::move(t));
  }
  HETRT_ASSERT_OK_AND_ASSIGN(int64_t before, vk->AttributeInt(kVk, HETRT_VULKAN_ATTR_SUBMISSIONS));
  std::vector<Scalars> scalars;
  for (int i = 0; i < 4; ++i) {
    const bool ubo = i < 3;
    scalars.push_back(MakeScalars(kN, ubo ? 17 : 5, i));
    HETRT_ASSERT_OK(Launch(*m, ubo ? "many_scalars" : "mix_scalars", outs[i].data(), scalars[i].values,
                           scalars[i].codes, (kN + 7) / 8));
  }
  HETRT_ASSERT_OK_AND_ASSIGN(int64_t after_launches, vk->AttributeInt(kVk, HETRT_VULKAN_ATTR_SUBMISSIONS));
  EXPECT_EQ(after_launches, before);  // recorded, not submitted
  for (int i = 0; i < 4; ++i) {
    SCOPED_TRACE(i);
    HETRT_ASSERT_OK_AND_ASSIGN(Tensor host, PluginRegistry::Global().ToHost(outs[i]));
    for (int j = 0; j < kN; ++j) EXPECT_EQ(host.data_as<double>()[j], j + scalars[i].sum) << j;
  }
  HETRT_ASSERT_OK_AND_ASSIGN(int64_t after_reads, vk->AttributeInt(kVk, HETRT_VULKAN_ATTR_SUBMISSIONS));
  EXPECT_EQ(after_reads, before + 1);  // the first read submitted the whole batch
}

TEST_F(VulkanTest, DescriptorPoolsServeDevicesWithoutPushDescriptors) {
  Plugin* vk = Vk();
  HETRT_ASSERT_OK(vk->SetOption("push_descriptors", "0"));
  auto m = LoadVkModule(ScalarsBlob());  // pipelines are built at first launch, with the option read then
  HETRT_ASSERT_OK(vk->SetOption("push_descriptors", "1"));
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  HETRT_ASSERT_OK(vk->SetOption("push_descriptors", "0"));
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor y, Tensor::Empty({300 * 8}, {kDLFloat, 64, 1}, vk->DeviceAllocator(kVk)));
  const Scalars s = MakeScalars(8, 17, 5);
  Status launched = OkStatus();
  for (int i = 0; i < 300 && launched.ok(); ++i)  // more sets than one pool holds
    launched = Launch(**m, "many_scalars", y.data(), s.values, s.codes, 1);
  HETRT_ASSERT_OK(vk->SetOption("push_descriptors", "1"));
  HETRT_ASSERT_OK(launched);
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor host, PluginRegistry::Global().ToHost(y));
  for (int j = 0; j < 8; ++j) EXPECT_EQ(host.data_as<double>()[j], j + s.sum);
}

TEST_F(VulkanTest, WrongCallsAreErrorsNamingTheKernel) {
  HETRT_ASSERT_OK_AND_ASSIGN(auto m, LoadVkModule(ScalarsBlob()));
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor y, Tensor::Empty({8}, {kDLFloat, 64, 1}, Vk()->DeviceAllocator(kVk)));
  const Scalars s = MakeScalars(8, 5, 1);
  std::vector<hetrt_value_t> fewer(s.values.begin(), s.values.end() - 1);
  std::vector<int32_t> fewer_codes(s.codes.begin(), s.codes.end() - 1);
  Status st = Launch(*m, "mix_scalars", y.data(), fewer, fewer_codes, 1);
  EXPECT_NE(st.message().find("'mix_scalars': takes 8 arguments (1 buffers + 5 scalars + 2 launch values), got 7"),
            std::string::npos)
      << st.message();
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor host, Tensor::EmptyHost({8}, {kDLFloat, 64, 1}));
  st = Launch(*m, "mix_scalars", host.data(), s.values, s.codes, 1);
  EXPECT_NE(st.message().find("argument 0 is not a Vulkan buffer"), std::string::npos) << st.message();
  st = Launch(*m, "mix_scalars", y.data(), s.values, s.codes, int64_t{1} << 40);
  EXPECT_NE(st.message().find("exceeds the device's maxComputeWorkGroupCount"), std::string::npos) << st.message();
  HETRT_ASSERT_OK_AND_ASSIGN(const PackedFunc* none, m->GetFunction("nope"));
  EXPECT_EQ(none, nullptr);
}

// ---------------------------------------------------------------- malformed input

std::string LoadError(const std::vector<uint8_t>& blob) {
  auto m = LoadVkModule(blob);
  return m.ok() ? "(loaded)" : m.status().message();
}

TEST_F(VulkanTest, MalformedBlobsAndShadersAreErrors) {
  const auto blob = ScalarsBlob();
  for (size_t n = 0; n < blob.size(); n += n < 600 ? 1 : 97) {  // every prefix near the maps, then a sample
    std::vector<uint8_t> cut(blob.begin(), blob.begin() + static_cast<long>(n));
    EXPECT_NE(LoadError(cut), "(loaded)") << n;
  }
  // Random byte changes anywhere: an error or a module, never a crash.
  std::mt19937 rng(5);
  for (int i = 0; i < 300; ++i) {
    auto mutated = blob;
    mutated[rng() % mutated.size()] ^= static_cast<uint8_t>(1u << (rng() % 8));
    (void)LoadError(mutated);
  }
  auto expect = [](const std::string& message, const std::string& part) {
    EXPECT_NE(message.find(part), std::string::npos) << message;
  };
  // A word count larger than the words that follow.
  {
    auto words = MixWords();
    ByteWriter w;
    w.WriteString("vulkan");
    w.WriteU64(0);
    w.WriteU64(1);
    w.WriteString("mix_scalars");
    w.WritePod<uint32_t>(0);
    w.WriteU64(words.size() + 5);
    for (uint32_t x : words) w.WritePod(x);
    expect(LoadError(w.Take()),
           "shader 'mix_scalars': " + std::to_string(words.size() + 5) + " SPIR-V words announced");
  }
  // Not SPIR-V, too short, invalid, structurally broken with validation off.
  auto with_words = [&](std::vector<uint32_t> words) { return VulkanBlob({MixSpec()}, {{"mix_scalars", 0, words}}); };
  auto words = MixWords();
  words[0] = 0xdeadbeef;
  expect(LoadError(with_words(words)), "Vulkan shader 'mix_scalars': not SPIR-V (magic 0xdeadbeef");
  expect(LoadError(with_words({0x07230203, 0x10000})), "shorter than its 5-word header");
  words = MixWords();
  words[3] = 2;  // id bound below the ids in use
  expect(LoadError(with_words(words)), "Vulkan shader 'mix_scalars': invalid SPIR-V");
  words = MixWords();
  words[5] = 0;  // an instruction of zero words
  expect(LoadError(with_words(words)), "Vulkan shader 'mix_scalars': invalid SPIR-V");
  HETRT_ASSERT_OK(Vk()->SetOption("validate_spirv", "0"));
  const std::string unvalidated = LoadError(with_words(words));
  HETRT_ASSERT_OK(Vk()->SetOption("validate_spirv", "1"));
  expect(unvalidated, "malformed SPIR-V instruction at word 5");
  // An entry point the shader does not have, a function without a shader.
  FunctionSpec ghost = MixSpec();
  ghost.name = "ghost";
  expect(LoadError(VulkanBlob({ghost}, {{"ghost", 0, MixWords()}})),
         "'ghost': its shader has no GLCompute entry point named 'ghost' (found: mix_scalars)");
  expect(LoadError(VulkanBlob({MixSpec()}, {{"other", 0, MixWords()}})), "function 'mix_scalars' has no shader");
  // Argument lists that cannot match: a buffer after a scalar, fewer buffers
  // than the shader binds, a vector type, an unknown tag, another format.
  FunctionSpec bad = MixSpec();
  bad.args = {kI32, kHandle};
  expect(LoadError(VulkanBlob({bad}, {{"mix_scalars", 0, MixWords()}})), "a buffer argument follows a scalar");
  bad.args = {kI32};
  expect(LoadError(VulkanBlob({bad}, {{"mix_scalars", 0, MixWords()}})),
         "its shader reads binding 0 but the function passes 0 buffer(s)");
  bad.args = {kHandle, {kDLFloat, 32, 4}};
  expect(LoadError(VulkanBlob({bad}, {{"mix_scalars", 0, MixWords()}})), "unsupported argument type float32x4");
  bad = MixSpec();
  bad.tags = {"vthread"};
  expect(LoadError(VulkanBlob({bad}, {{"mix_scalars", 0, MixWords()}})), "unknown launch tag 'vthread'");
  auto spirv_fmt = ScalarsBlob();
  spirv_fmt[8] = 'x';
  expect(LoadError(spirv_fmt), "Vulkan module format 'xulkan'");
  expect(LoadError(VulkanBlob({MixSpec(), MixSpec()}, {{"mix_scalars", 0, MixWords()}})), "listed twice");
}

// ---------------------------------------------------------------- ABI 2.0

// The ABI calls on vulkan:0, through the conformance kit's client.
conformance::DeviceClient VkClient() { return {Vk(), kVk}; }
template <class T>
T ValueOrFail(Result<T> result) {
  EXPECT_TRUE(result.ok()) << result.status().message();
  return result.ok() ? result.value() : T{};
}
hetrt_stream_t* NewStream(int32_t kind = HETRT_STREAM_COMPUTE) { return ValueOrFail(VkClient().NewStream(kind)); }
void DestroyStream(hetrt_stream_t* stream) {
  const Status destroyed = VkClient().DestroyStream(stream);
  EXPECT_TRUE(destroyed.ok()) << destroyed.message();
}
hetrt_event_t* NewEvent(uint32_t flags = 0) { return ValueOrFail(VkClient().NewEvent(flags)); }
Status Record(hetrt_event_t* event, hetrt_stream_t* stream) { return VkClient().Record(event, stream); }
Status EventCall(hetrt_error_t* (*fn)(hetrt_event_args_t*), hetrt_event_t* event, int32_t* complete = nullptr) {
  return VkClient().EventCall(fn, event, complete);
}
Status SetCurrent(hetrt_stream_t* stream, hetrt_stream_t** previous = nullptr) {
  return VkClient().SetCurrentStream(stream, previous);
}
Status Synchronize(hetrt_stream_t* stream) { return VkClient().Synchronize(stream); }

TEST_F(VulkanTest, HostVisibleMemoryIsSharedWithKernelsAtEventBoundaries) {
  Plugin* vk = Vk();
  if (!vk->SharesHostMemory(kVk)) GTEST_SKIP() << "this Vulkan device does not share host memory";
  Allocator& visible = vk->DeviceAllocator(kVk, HETRT_MEMORY_HOST_VISIBLE);
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor y, Tensor::Empty({16}, {kDLFloat, 64, 1}, visible));
  auto* host = static_cast<double*>(visible.HostPointer(y.data()));
  ASSERT_NE(host, nullptr);
  HETRT_ASSERT_OK_AND_ASSIGN(auto m, LoadVkModule(ScalarsBlob()));
  const Scalars s = MakeScalars(16, 5, 9);
  HETRT_ASSERT_OK(Launch(*m, "mix_scalars", y.data(), s.values, s.codes, 2));
  HETRT_ASSERT_OK(Synchronize(nullptr));
  for (int i = 0; i < 16; ++i) EXPECT_EQ(host[i], i + s.sum);  // read in place
}

TEST_F(VulkanTest, EventsCompleteWithoutAnExplicitFlushAndNeverRecordedOnesAreComplete) {
  hetrt_stream_t* stream = NewStream();
  hetrt_event_t* e = NewEvent();
  int32_t complete = 0;
  HETRT_ASSERT_OK(EventCall(Vk()->device_api()->event_query, e, &complete));
  EXPECT_EQ(complete, 1);  // never recorded
  HETRT_ASSERT_OK_AND_ASSIGN(auto m, LoadVkModule(ScalarsBlob()));
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor y, Tensor::Empty({8}, {kDLFloat, 64, 1}, Vk()->DeviceAllocator(kVk)));
  hetrt_stream_t* previous = nullptr;
  HETRT_ASSERT_OK(SetCurrent(stream, &previous));
  const Scalars s = MakeScalars(8, 5, 2);
  HETRT_ASSERT_OK(Launch(*m, "mix_scalars", y.data(), s.values, s.codes, 1));
  HETRT_ASSERT_OK(SetCurrent(previous));
  HETRT_ASSERT_OK(Record(e, stream));
  // Polling alone must see the work finish: a query submits the batch it waits for.
  for (int i = 0; i < 10000 && !complete; ++i) {
    HETRT_ASSERT_OK(EventCall(Vk()->device_api()->event_query, e, &complete));
    if (!complete) std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  EXPECT_EQ(complete, 1);
  HETRT_ASSERT_OK(EventCall(Vk()->device_api()->event_destroy, e));
  DestroyStream(stream);
}

// The kit's timestamp check (sdk/conformance/device_checks.h) with the sampled
// clock fallback, for devices without VK_EXT_calibrated_timestamps, on memory
// copied through the queue.
TEST_F(VulkanTest, EventTimestampsMapOntoTheHostClockWithTheSampledClock) {
  constexpr size_t kBytes = 8 << 20;
  HETRT_ASSERT_OK(Vk()->SetOption("direct_mapping", "0"));
  auto dev = Tensor::Empty({kBytes}, kU8, Vk()->DeviceAllocator(kVk));
  HETRT_ASSERT_OK(Vk()->SetOption("direct_mapping", "1"));
  ASSERT_TRUE(dev.ok()) << dev.status().message();
  HETRT_ASSERT_OK(Vk()->SetOption("calibrated_clock", "0"));
  conformance::CheckTimestampsOnTheHostClock(VkClient(), dev->data(), kBytes);
  HETRT_ASSERT_OK(Vk()->SetOption("calibrated_clock", "1"));
}

// (The current stream per thread: sdk/conformance/checks_events.cc.)
TEST_F(VulkanTest, KernelsGoToTheCurrentStream) {
  Plugin* vk = Vk();
  hetrt_stream_t* mine = NewStream();
  hetrt_stream_t* previous = nullptr;
  HETRT_ASSERT_OK(SetCurrent(mine, &previous));
  // A kernel launched now is recorded on `mine`: synchronizing it finishes the work.
  HETRT_ASSERT_OK_AND_ASSIGN(auto m, LoadVkModule(ScalarsBlob()));
  Allocator& memory =
      vk->SharesHostMemory(kVk) ? vk->DeviceAllocator(kVk, HETRT_MEMORY_HOST_VISIBLE) : vk->DeviceAllocator(kVk);
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor y, Tensor::Empty({8}, {kDLFloat, 64, 1}, memory));
  const Scalars s = MakeScalars(8, 5, 4);
  HETRT_ASSERT_OK(Launch(*m, "mix_scalars", y.data(), s.values, s.codes, 1));
  HETRT_ASSERT_OK(Synchronize(mine));
  if (auto* host = static_cast<double*>(memory.HostPointer(y.data()))) {
    for (int i = 0; i < 8; ++i) EXPECT_EQ(host[i], i + s.sum);
  }
  HETRT_ASSERT_OK(SetCurrent(previous, &previous));
  EXPECT_EQ(previous, mine);
  DestroyStream(mine);
}

// (Statistics, unknown attributes and copy routes: sdk/conformance/.)
TEST_F(VulkanTest, OptionsAndAttributes) {
  Plugin* vk = Vk();
  EXPECT_TRUE(vk->SetOption("wait_poll_us", "20").ok());
  EXPECT_EQ(vk->SetOption("wait_poll_us", "-3").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(vk->SetOption("direct_mapping", "2").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(vk->SetOption("no_such_option", "1").code(), StatusCode::kNotFound);
  EXPECT_TRUE(vk->SetOption("wait_poll_us", "-1").ok());  // back to the default: measured
  HETRT_ASSERT_OK_AND_ASSIGN(std::string name, vk->AttributeString(kVk, HETRT_DEVICE_ATTR_NAME));
  EXPECT_NE(name.find("Vulkan 1."), std::string::npos) << name;
  HETRT_ASSERT_OK_AND_ASSIGN(int64_t threads, vk->AttributeInt(kVk, HETRT_DEVICE_ATTR_MAX_THREADS_PER_BLOCK));
  EXPECT_GE(threads, 128);  // Vulkan's guaranteed minimum
  EXPECT_FALSE(vk->CanCopy({kDLOpenCL, 0}, kVk));
}

}  // namespace
}  // namespace hetrt
