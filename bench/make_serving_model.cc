// Writes a model for the serving benchmarks as <dir>/deploy.so:
//   two_stage   the CPU+OpenCL two-stage model (kernels::kServingTwoStageShape),
//               for bench/serve_overlap.py;
//   large_relu  relu over a [1536, 1024] float32 tensor: 6 MiB in, 6 MiB out
//               and next to no compute, for bench/serve_load.py's cost of
//               moving large tensors.
// Usage: make_serving_model KIND DIR
#include <cstdio>
#include <string>

#include "hetrt/graph_builder.h"
#include "kernel_set.h"
#include "two_stage_model.h"
#include "write_model.h"

namespace {

using hetrt::GraphBuilder;
using hetrt::Result;

Result<GraphBuilder::Built> BuildLargeRelu() {
  GraphBuilder b;
  const GraphBuilder::TensorSpec spec{{1536, 1024}, {kDLFloat, 32, 1}};
  HETRT_ASSIGN_OR_RETURN(std::string relu, hetrt::kernels::FunctionName(hetrt::kernels::Op::kRelu, kDLCPU));
  b.AddOutput(b.AddOp1("relu", relu, {b.AddInput("data", spec)}, spec, kDLCPU));
  return b.Build();
}

}  // namespace

int main(int argc, char** argv) {
  const std::string kind = argc == 3 ? argv[1] : "";
  if (kind != "two_stage" && kind != "large_relu") {
    std::fprintf(stderr, "usage: %s two_stage|large_relu DIR\n", argv[0]);
    return 2;
  }
  if (kind == "two_stage")
    return hetrt::kernels::WriteDeployLibrary(
        hetrt::kernels::BuildTwoStageModel(kDLOpenCL, hetrt::kernels::kServingTwoStageShape), kDLOpenCL, argv[2]);
  return hetrt::kernels::WriteDeployLibrary(BuildLargeRelu(), kDLCPU, argv[2]);
}
