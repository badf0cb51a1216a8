// `hetrt demo`: models built inside hetrt (an MLP and a small CNN), their layers
// placed across the CPU and every other device that has a plugin, a device and
// kernels here, exported into a deploy library, loaded back, run, and checked
// against the same model run on the CPU alone.
#include <unistd.h>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <random>

#include "commands.h"
#include "hetrt/base/dtype.h"
#include "hetrt/exec/factory_modules.h"
#include "hetrt/exec/graph_model.h"
#include "hetrt/graph_builder.h"
#include "hetrt/module_export.h"
#include "kernel_set.h"

namespace hetrt::cli {
namespace {

using kernels::Op;
using Spec = GraphBuilder::TensorSpec;
using Value = GraphBuilder::Value;

Spec F32(std::vector<int64_t> shape) { return {std::move(shape), {kDLFloat, 32, 1}}; }

Tensor RandomTensor(std::vector<int64_t> shape, std::mt19937& rng, float scale) {
  Tensor t = Tensor::EmptyHost(std::move(shape), {kDLFloat, 32, 1}).value();
  std::uniform_real_distribution<float> dist(-scale, scale);
  for (int64_t i = 0; i < t.num_elements(); ++i) t.data_as<float>()[i] = dist(rng);
  return t;
}

// Adds layers to a builder; heavy layers go to `accel`, the rest to the CPU.
class ModelBuilder {
 public:
  explicit ModelBuilder(int32_t accel) : accel_(accel), rng_(2026) {}
  GraphBuilder& graph() { return b_; }

  Result<Value> Dense(const std::string& name, Value x, int64_t in, int64_t out) {
    auto w = b_.AddParam(name + "_w", RandomTensor({out, in}, rng_, 1.f / std::sqrt(static_cast<float>(in))), accel_);
    auto bias = b_.AddParam(name + "_b", RandomTensor({out}, rng_, 0.1f), accel_);
    return Layer(name, Op::kDense, {x, w, bias}, F32({1, out}), accel_);
  }
  Result<Value> Conv(const std::string& name, Value x, int64_t c, int64_t o, int64_t hw) {
    auto w = b_.AddParam(name + "_w", RandomTensor({o, c, 3, 3}, rng_, 1.f / std::sqrt(9.f * c)), accel_);
    auto bias = b_.AddParam(name + "_b", RandomTensor({o}, rng_, 0.1f), accel_);
    return Layer(name, Op::kConv2d, {x, w, bias}, F32({1, o, hw, hw}), accel_);
  }
  Result<Value> Relu(const std::string& name, Value x, Spec spec) { return Layer(name, Op::kRelu, {x}, spec, kDLCPU); }
  Result<Value> Pool(const std::string& name, Value x, Spec spec) {
    return Layer(name, Op::kMaxPool, {x}, spec, kDLCPU);
  }
  Result<Value> Softmax(const std::string& name, Value x, Spec spec) {
    return Layer(name, Op::kSoftmax, {x}, spec, accel_);
  }

 private:
  Result<Value> Layer(const std::string& name, Op op, std::vector<Value> inputs, Spec out, int32_t device) {
    HETRT_ASSIGN_OR_RETURN(std::string fn, kernels::FunctionName(op, device));
    return b_.AddOp1(name, fn, std::move(inputs), std::move(out), device);
  }
  int32_t accel_;
  std::mt19937 rng_;
  GraphBuilder b_;
};

struct DemoModel {
  std::string name, description;
  Spec input;
  std::function<Result<GraphBuilder::Built>(int32_t accel)> build;
};

std::vector<DemoModel> Models() {
  DemoModel mlp{"mlp", "784 -> 256 -> 128 -> 10, dense + relu + softmax", F32({1, 784}),
                [](int32_t accel) -> Result<GraphBuilder::Built> {
                  ModelBuilder m(accel);
                  Value x = m.graph().AddInput("data", F32({1, 784}));
                  HETRT_ASSIGN_OR_RETURN(x, m.Dense("dense1", x, 784, 256));
                  HETRT_ASSIGN_OR_RETURN(x, m.Relu("relu1", x, F32({1, 256})));
                  HETRT_ASSIGN_OR_RETURN(x, m.Dense("dense2", x, 256, 128));
                  HETRT_ASSIGN_OR_RETURN(x, m.Relu("relu2", x, F32({1, 128})));
                  HETRT_ASSIGN_OR_RETURN(x, m.Dense("dense3", x, 128, 10));
                  HETRT_ASSIGN_OR_RETURN(x, m.Softmax("softmax", x, F32({1, 10})));
                  m.graph().AddOutput(x);
                  return m.graph().Build();
                }};
  DemoModel cnn{"cnn", "3x32x32 -> conv 16 -> pool -> conv 32 -> pool -> dense 10 -> softmax", F32({1, 3, 32, 32}),
                [](int32_t accel) -> Result<GraphBuilder::Built> {
                  ModelBuilder m(accel);
                  Value x = m.graph().AddInput("data", F32({1, 3, 32, 32}));
                  HETRT_ASSIGN_OR_RETURN(x, m.Conv("conv1", x, 3, 16, 32));
                  HETRT_ASSIGN_OR_RETURN(x, m.Relu("relu1", x, F32({1, 16, 32, 32})));
                  HETRT_ASSIGN_OR_RETURN(x, m.Pool("pool1", x, F32({1, 16, 16, 16})));
                  HETRT_ASSIGN_OR_RETURN(x, m.Conv("conv2", x, 16, 32, 16));
                  HETRT_ASSIGN_OR_RETURN(x, m.Relu("relu2", x, F32({1, 32, 16, 16})));
                  HETRT_ASSIGN_OR_RETURN(x, m.Pool("pool2", x, F32({1, 32, 8, 8})));
                  HETRT_ASSIGN_OR_RETURN(x, m.Dense("dense", x, 32 * 8 * 8, 10));
                  HETRT_ASSIGN_OR_RETURN(x, m.Softmax("softmax", x, F32({1, 10})));
                  m.graph().AddOutput(x);
                  return m.graph().Build();
                }};
  return {mlp, cnn};
}

struct RunResult {
  Tensor output;
  double ms_per_run = 0;
  std::map<std::string, double> ms_per_device;                 // "cpu", "opencl", "vulkan", "cuda", "copies"
  std::vector<std::pair<std::string, std::string>> placement;  // node, device
};

Result<RunResult> ExportAndRun(const DemoModel& model, int32_t accel, const std::string& dir, const Tensor& input,
                               const std::vector<DLDevice>& devices) {
  HETRT_ASSIGN_OR_RETURN(auto built, model.build(accel));
  const std::string path = dir + "/" + model.name + "_" + DeviceTypeName(accel) + ".so";
  HETRT_RETURN_IF_ERROR(kernels::ExportGraph(built.graph_json, built.params, std::vector<int32_t>{accel}, path));

  GraphExecutor::Options options;
  options.devices = devices;
  HETRT_ASSIGN_OR_RETURN(GraphModel m, OpenGraphModel({path}, options));
  GraphExecutor& ex = *m.executor;
  HETRT_RETURN_IF_ERROR(ex.SetInput("data", input));
  HETRT_RETURN_IF_ERROR(ex.Run());  // warm-up: builds device programs
  HETRT_RETURN_IF_ERROR(ex.Synchronize());
  RunResult result;
  constexpr int kRuns = 20;
  GraphExecutor::RunProfile profile;
  for (int i = 0; i < kRuns; ++i) {
    HETRT_RETURN_IF_ERROR(ex.RunProfiled(&profile));
    for (const auto& t : profile.nodes) {
      const GraphNode& n = ex.graph().nodes[t.node_id];
      const std::string key = n.func_name == kCopyFunction ? "copies" : DeviceTypeName(t.device.device_type);
      result.ms_per_device[key] += t.ms() / kRuns;
    }
  }
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kRuns; ++i) {
    HETRT_RETURN_IF_ERROR(ex.Run());
    HETRT_RETURN_IF_ERROR(ex.Synchronize());
  }
  result.ms_per_run =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() / kRuns;
  for (const auto& t : profile.nodes) {
    const GraphNode& n = ex.graph().nodes[t.node_id];
    result.placement.emplace_back(n.name, DeviceTypeName(t.device.device_type));
  }
  HETRT_ASSIGN_OR_RETURN(result.output, ex.GetOutput(0));
  return result;
}

int Demo(const std::string& keep_dir) {
  namespace fs = std::filesystem;
  const std::string dir =
      keep_dir.empty() ? (fs::temp_directory_path() / ("hetrt-demo-" + std::to_string(getpid()))).string() : keep_dir;
  fs::create_directories(dir);
  PluginRegistry& registry = PluginRegistry::Global();
  std::vector<DLDevice> devices{{kDLCPU, 0}};
  std::vector<int32_t> accelerators;
  // Devices with a plugin, a device and kernels in hetrt's set.
  for (int32_t type :
       {static_cast<int32_t>(kDLOpenCL), static_cast<int32_t>(kDLVulkan), static_cast<int32_t>(kDLCUDA)}) {
    const DLDevice device{static_cast<DLDeviceType>(type), 0};
    auto plugin = registry.ForDevice(device);
    Status kernels = kernels::FunctionName(Op::kAdd, type).status();
    if (kernels.ok() && plugin.ok() && type == kDLCUDA) kernels = kernels::CudaKernelsRunOn(**plugin, device);
    if (plugin.ok() && !kernels.ok()) {
      std::printf("device %s: not used (%s)\n", DeviceTypeName(type).c_str(), kernels.message().c_str());
    } else if (plugin.ok()) {
      devices.push_back({static_cast<DLDeviceType>(type), 0});
      accelerators.push_back(type);
      std::printf("device %s: %s\n", DeviceTypeName(type).c_str(),
                  (*plugin)->DeviceName({static_cast<DLDeviceType>(type), 0}).c_str());
    } else {
      std::printf("device %s: not used (%s)\n", DeviceTypeName(type).c_str(), plugin.status().message().c_str());
    }
  }
  std::printf("device cpu: %s\n\n", registry.ForDeviceType(kDLCPU).ok()
                                        ? (*registry.ForDeviceType(kDLCPU))->DeviceName({kDLCPU, 0}).c_str()
                                        : "host");
  bool all_match = true;
  std::mt19937 rng(7);
  for (const DemoModel& model : Models()) {
    Tensor input = RandomTensor(model.input.shape, rng, 1.f);
    auto reference = ExportAndRun(model, kDLCPU, dir, input, devices);
    if (!reference.ok()) return Fail(model.name + ": " + reference.status().message());
    std::printf("== %s (%s)\n", model.name.c_str(), model.description.c_str());
    std::printf("   all on cpu: %.3f ms per run\n", reference->ms_per_run);
    for (int32_t accel : accelerators) {
      auto mixed = ExportAndRun(model, accel, dir, input, devices);
      if (!mixed.ok()) return Fail(model.name + " on " + DeviceTypeName(accel) + ": " + mixed.status().message());
      std::printf("   placement:");
      for (const auto& [node, device] : mixed->placement) std::printf(" %s@%s", node.c_str(), device.c_str());
      std::printf("\n   cpu + %s: %.3f ms per run;", DeviceTypeName(accel).c_str(), mixed->ms_per_run);
      for (const auto& [device, ms] : mixed->ms_per_device) std::printf(" %s %.3f ms", device.c_str(), ms);
      double max_diff = 0;
      for (int64_t i = 0; i < mixed->output.num_elements(); ++i)
        max_diff = std::max(max_diff, static_cast<double>(std::fabs(mixed->output.data_as<float>()[i] -
                                                                    reference->output.data_as<float>()[i])));
      const bool match = max_diff <= 1e-5;
      all_match &= match;
      std::printf("\n   check against all-cpu: max |diff| = %.3g %s\n", max_diff, match ? "OK" : "MISMATCH");
    }
    std::printf("   output: [");
    for (int64_t i = 0; i < reference->output.num_elements(); ++i)
      std::printf("%s%.4f", i ? ", " : "", reference->output.data_as<float>()[i]);
    std::printf("]\n\n");
  }
  if (accelerators.empty()) std::printf("(no device besides the CPU: nothing was placed elsewhere)\n");
  if (keep_dir.empty())
    fs::remove_all(dir);
  else
    std::printf("exported libraries kept in %s\n", dir.c_str());
  return all_match ? 0 : Fail("device results differ from the CPU's");
}

}  // namespace

Command AddDemoCommand(CLI::App& app) {
  auto* cmd = app.add_subcommand("demo", "Build, place, export, load and run hetrt's own models on every device here");
  auto keep = std::make_shared<std::string>();
  cmd->add_option("--keep", *keep, "keep the exported libraries in this folder");
  return [keep] { return Demo(*keep); };
}

}  // namespace hetrt::cli
