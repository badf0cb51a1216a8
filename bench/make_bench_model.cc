// Writes a model for the benchmarks into DIR:
//   two_stage     the CPU+OpenCL two-stage model (kernels::kServingTwoStageShape)
//                 as DIR/deploy.so, for bench/serve_overlap.py;
//   large_relu    relu over a [1536, 1024] float32 tensor as DIR/deploy.so: 6 MiB
//                 in, 6 MiB out and next to no compute, for bench/serve_load.py's
//                 cost of moving large tensors;
//   small_relu    relu over a [1, 784] float32 tensor (mlp's input) as
//                 DIR/deploy.so: a model that costs next to nothing, so that
//                 serve_load.py's ratios show what the server itself adds;
//   two_branch_ACCEL  (ACCEL: opencl, vulkan, cuda) the two-branch model
//                 (kernels/two_branch_model.h) as a graph (DIR/graph.so) and as
//                 a Relax executable over the same kernels (DIR/relax.so), with
//                 DIR/inputs.params: `hetrt bench` compares the two executors
//                 instruction by instruction.
// Usage: make_bench_model KIND DIR
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "hetrt/formats/params.h"
#include "hetrt/graph_builder.h"
#include "kernel_set.h"
#include "two_branch_model.h"
#include "two_stage_model.h"
#include "write_model.h"

namespace {

using hetrt::GraphBuilder;
using hetrt::Result;
using hetrt::Status;

Result<GraphBuilder::Built> BuildRelu(std::vector<int64_t> shape) {
  GraphBuilder b;
  const GraphBuilder::TensorSpec spec{std::move(shape), {kDLFloat, 32, 1}};
  HETRT_ASSIGN_OR_RETURN(std::string relu, hetrt::kernels::FunctionName(hetrt::kernels::Op::kRelu, kDLCPU));
  b.AddOutput(b.AddOp1("relu", relu, {b.AddInput("data", spec)}, spec, kDLCPU));
  return b.Build();
}

Status WriteTwoBranch(int32_t accel, const std::string& dir) {
  const hetrt::kernels::TwoBranchShape shape;
  HETRT_ASSIGN_OR_RETURN(GraphBuilder::Built built, hetrt::kernels::BuildTwoBranchModel(accel, shape));
  HETRT_RETURN_IF_ERROR(
      hetrt::kernels::ExportGraph(built.graph_json, built.params, std::vector<int32_t>{accel}, dir + "/graph.so"));
  HETRT_RETURN_IF_ERROR(hetrt::kernels::ExportRelax(built.graph_json, built.params, dir + "/relax.so").status());
  HETRT_ASSIGN_OR_RETURN(hetrt::Tensor data, hetrt::Tensor::EmptyHost({shape.rows, shape.width}, {kDLFloat, 32, 1}));
  std::fill_n(data.data_as<float>(), data.num_elements(), 0.5f);
  HETRT_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, hetrt::WriteParamDict({{"data", data}}));
  std::ofstream out(dir + "/inputs.params", std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!out) return hetrt::Unavailable("cannot write " + dir + "/inputs.params");
  std::printf("%s/graph.so %s/relax.so %s/inputs.params\n", dir.c_str(), dir.c_str(), dir.c_str());
  return hetrt::OkStatus();
}

int Report(const Status& status) {
  if (status.ok()) return 0;
  std::fprintf(stderr, "%s\n", status.message().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string kind = argc == 3 ? argv[1] : "";
  const std::string dir = argc == 3 ? argv[2] : "";
  std::error_code made;
  if (!dir.empty() && !std::filesystem::create_directories(dir, made) && made) {
    std::fprintf(stderr, "cannot make %s: %s\n", dir.c_str(), made.message().c_str());
    return 1;
  }
  if (kind == "two_stage")
    return hetrt::kernels::WriteDeployLibrary(
        hetrt::kernels::BuildTwoStageModel(kDLOpenCL, hetrt::kernels::kServingTwoStageShape), kDLOpenCL, dir);
  if (kind == "large_relu") return hetrt::kernels::WriteDeployLibrary(BuildRelu({1536, 1024}), kDLCPU, dir);
  if (kind == "small_relu") return hetrt::kernels::WriteDeployLibrary(BuildRelu({1, 784}), kDLCPU, dir);
  if (kind == "two_branch_opencl") return Report(WriteTwoBranch(kDLOpenCL, dir));
  if (kind == "two_branch_vulkan") return Report(WriteTwoBranch(kDLVulkan, dir));
  if (kind == "two_branch_cuda") return Report(WriteTwoBranch(kDLCUDA, dir));
  std::fprintf(stderr,
               "usage: %s two_stage|large_relu|small_relu|two_branch_opencl|two_branch_vulkan|two_branch_cuda DIR\n",
               argv[0]);
  return 2;
}
