// The template's end-to-end check, built against the installed hetrt only:
//
//   sim_model build DIR     builds a small model with hetrt's graph builder
//                           (x on the CPU, add + relu on the simulated device,
//                           a doubling back on the CPU: __copy nodes both
//                           ways), exports DIR/deploy.so with hetrt's exporter
//                           (the sim module inside), writes DIR/inputs.params
//                           and DIR/expected.params, runs it in this process on
//                           cpu + ext_dev and checks the output.
//   sim_model compare A B   compares two param files' output_0 (for a run of
//                           the exported model through the `hetrt` CLI).
//
// The sim plugin is found like any plugin: HETRT_PLUGIN_PATH, then the
// install's plugin folder.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "hetrt/sdk/byte_stream.h"
#include "hetrt/exec/factory_modules.h"
#include "hetrt/exec/graph_model.h"
#include "hetrt/formats/params.h"
#include "hetrt/graph_builder.h"
#include "hetrt/module/module_loader.h"
#include "hetrt/module_export.h"
#include "hetrt/plugin_host/plugin_registry.h"

namespace {

using namespace hetrt;

constexpr int64_t kCount = 64;
constexpr DLDataType kF32{kDLFloat, 32, 1};

Result<Tensor> HostTensor(const std::vector<float>& values) {
  HETRT_ASSIGN_OR_RETURN(Tensor t, Tensor::EmptyHost({static_cast<int64_t>(values.size())}, kF32));
  std::memcpy(t.data_as<float>(), values.data(), values.size() * sizeof(float));
  return t;
}

// The sim module the exported library carries: the kernels the host code launches.
std::vector<uint8_t> SimModuleBlob() {
  std::vector<uint8_t> blob = {'S', 'I', 'M', 'M', 'O', 'D', '0', '1'};
  auto u32 = [&](uint32_t v) {
    blob.insert(blob.end(), reinterpret_cast<uint8_t*>(&v), reinterpret_cast<uint8_t*>(&v) + 4);
  };
  const char* names[] = {"sim_add_kernel", "sim_relu_kernel"};
  u32(2);
  for (const char* name : names) {
    u32(static_cast<uint32_t>(std::strlen(name)));
    blob.insert(blob.end(), name, name + std::strlen(name));
  }
  return blob;
}

Status Build(const std::string& dir) {
  std::vector<float> x(kCount), w(kCount), expected(kCount);
  for (int64_t i = 0; i < kCount; ++i) {
    x[i] = std::sin(0.37f * static_cast<float>(i)) * 3.0f;
    w[i] = 0.5f - 0.03f * static_cast<float>(i);
    expected[i] = 2.0f * std::max(x[i] + w[i], 0.0f);
  }
  GraphBuilder g;
  const GraphBuilder::TensorSpec spec{{kCount}, kF32};
  HETRT_ASSIGN_OR_RETURN(Tensor w_tensor, HostTensor(w));
  auto in = g.AddInput("x", spec, kDLCPU);
  auto weight = g.AddParam("w", std::move(w_tensor), kDLExtDev);
  auto sum = g.AddOp1("add", "sim_model_add", {in, weight}, spec, kDLExtDev);
  auto relu = g.AddOp1("relu", "sim_model_relu", {sum}, spec, kDLExtDev);
  g.AddOutput(g.AddOp1("double", "sim_model_double_on_cpu", {relu}, spec, kDLCPU));
  HETRT_ASSIGN_OR_RETURN(GraphBuilder::Built built, g.Build());

  // The module tree TVM's export_library writes: factory -> host code -> sim module.
  HETRT_ASSIGN_OR_RETURN(Plugin * sim, PluginRegistry::Global().ForTypeKey("sim"));
  const std::vector<uint8_t> blob = SimModuleBlob();
  ByteReader reader(blob, "sim module");
  HETRT_ASSIGN_OR_RETURN(std::shared_ptr<Module> sim_module, PluginModule::Load(sim, "sim", reader));
  auto factory = std::make_shared<GraphExecutorFactoryModule>(built.graph_json, built.params, "default");
  auto host = std::make_shared<PendingHostLibrary>();
  factory->Import(host);
  host->Import(sim_module);
  const std::string deploy = dir + "/deploy.so";
  HETRT_RETURN_IF_ERROR(
      ExportLibrary(*factory, {SIM_MODEL_HOST_SOURCE}, deploy, {.flags = {"-I" SIM_DLPACK_INCLUDE_DIR}}));

  HETRT_ASSIGN_OR_RETURN(Tensor x_tensor, HostTensor(x));
  HETRT_ASSIGN_OR_RETURN(Tensor expected_tensor, HostTensor(expected));
  HETRT_ASSIGN_OR_RETURN(auto inputs, WriteParamDict({{"x", x_tensor}}));
  HETRT_RETURN_IF_ERROR(WriteFileBytes(dir + "/inputs.params", inputs));
  HETRT_ASSIGN_OR_RETURN(auto outputs, WriteParamDict({{"output_0", expected_tensor}}));
  HETRT_RETURN_IF_ERROR(WriteFileBytes(dir + "/expected.params", outputs));

  // Load it back and run it here: x is copied to the simulated device, the
  // result copied back to the CPU.
  GraphExecutor::Options options;
  options.devices = {{kDLCPU, 0}, {kDLExtDev, 0}};
  HETRT_ASSIGN_OR_RETURN(GraphModel model, OpenGraphModel({deploy}, options));
  HETRT_RETURN_IF_ERROR(model.executor->SetInput("x", x_tensor));
  HETRT_RETURN_IF_ERROR(model.executor->Run());
  HETRT_ASSIGN_OR_RETURN(Tensor out, model.executor->GetOutput(0));
  for (int64_t i = 0; i < kCount; ++i)
    if (std::fabs(out.data_as<float>()[i] - expected[i]) > 1e-6f)
      return Internal("output " + std::to_string(i) + " is " + std::to_string(out.data_as<float>()[i]) + ", expected " +
                      std::to_string(expected[i]));
  std::printf("sim model: %s runs on cpu + ext_dev (sim plugin %s) and matches the reference (%lld values)\n",
              deploy.c_str(), sim->version().c_str(), static_cast<long long>(kCount));
  return OkStatus();
}

Status Compare(const std::string& a, const std::string& b) {
  HETRT_ASSIGN_OR_RETURN(auto first, LoadParamDictFile(a));
  HETRT_ASSIGN_OR_RETURN(auto second, LoadParamDictFile(b));
  const NamedTensor* x = FindParam(first, "output_0");
  const NamedTensor* y = FindParam(second, "output_0");
  if (x == nullptr || y == nullptr) return NotFound("output_0 missing in " + a + " or " + b);
  if (x->tensor.nbytes() != y->tensor.nbytes()) return InvalidArgument("output sizes differ");
  const int64_t n = static_cast<int64_t>(x->tensor.nbytes() / sizeof(float));
  for (int64_t i = 0; i < n; ++i)
    if (std::fabs(x->tensor.data_as<float>()[i] - y->tensor.data_as<float>()[i]) > 1e-6f)
      return Internal("output_0[" + std::to_string(i) + "] differs between " + a + " and " + b);
  std::printf("sim model: %s and %s agree (%lld values)\n", a.c_str(), b.c_str(), static_cast<long long>(n));
  return OkStatus();
}

}  // namespace

int main(int argc, char** argv) {
  Status status = argc == 3 && std::string(argv[1]) == "build" ? Build(argv[2])
                  : argc == 4 && std::string(argv[1]) == "compare"
                      ? Compare(argv[2], argv[3])
                      : InvalidArgument("usage: sim_model build DIR | sim_model compare A.params B.params");
  if (!status.ok()) {
    std::fprintf(stderr, "sim_model: %s\n", status.message().c_str());
    return 1;
  }
  return 0;
}
