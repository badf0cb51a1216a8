#include "kernel_runs.h"

#include <unistd.h>

#include <filesystem>

#include "hetrt/exec/graph_model.h"
#include "hetrt/graph_builder.h"
#include "test_support.h"

namespace hetrt::testing {

const std::vector<KernelCase>& KernelCases() {
  using kernels::Op;
  static const std::vector<KernelCase> cases = {
      {"add", Op::kAdd, {{2, 37}, {2, 37}}, {2, 37}},
      {"mul", Op::kMul, {{5, 13}, {5, 13}}, {5, 13}},
      {"relu", Op::kRelu, {{3, 100}}, {3, 100}},
      {"dense", Op::kDense, {{2, 70}, {33, 70}, {33}}, {2, 33}},
      {"softmax", Op::kSoftmax, {{3, 17}}, {3, 17}},
      {"conv2d_pad1", Op::kConv2d, {{1, 3, 9, 9}, {4, 3, 3, 3}, {4}}, {1, 4, 9, 9}},
      {"conv2d_valid", Op::kConv2d, {{1, 2, 7, 6}, {3, 2, 3, 3}, {3}}, {1, 3, 5, 4}},
      {"maxpool", Op::kMaxPool, {{1, 3, 8, 6}}, {1, 3, 4, 3}},
  };
  return cases;
}

Result<Tensor> RunKernelOp(kernels::Op op, const std::vector<Tensor>& inputs, std::vector<int64_t> out,
                           int32_t device) {
  GraphBuilder b;
  std::vector<GraphBuilder::Value> values;
  for (size_t i = 0; i < inputs.size(); ++i)
    values.push_back(b.AddInput("in" + std::to_string(i), {inputs[i].shape(), inputs[i].dtype()}, device));
  HETRT_ASSIGN_OR_RETURN(std::string fn, kernels::FunctionName(op, device));
  b.AddOutput(b.AddOp1("op", fn, values, {std::move(out), {kDLFloat, 32, 1}}, device));
  HETRT_ASSIGN_OR_RETURN(auto built, b.Build());
  static int counter = 0;
  const std::string path =
      ::testing::TempDir() + "/hetrt_kernel_" + std::to_string(getpid()) + "_" + std::to_string(counter++) + ".so";
  HETRT_RETURN_IF_ERROR(kernels::ExportGraph(built.graph_json, built.params, std::vector<int32_t>{device}, path));
  GraphExecutor::Options options;
  options.devices = {{kDLCPU, 0}};
  if (device != kDLCPU) options.devices.push_back({static_cast<DLDeviceType>(device), 0});
  HETRT_ASSIGN_OR_RETURN(GraphModel m, OpenGraphModel({path}, options));
  for (size_t i = 0; i < inputs.size(); ++i)
    HETRT_RETURN_IF_ERROR(m.executor->SetInput(static_cast<int>(i), inputs[i]));
  HETRT_RETURN_IF_ERROR(m.executor->Run());
  auto result = m.executor->GetOutput(0);
  std::filesystem::remove(path);
  return result;
}

}  // namespace hetrt::testing
