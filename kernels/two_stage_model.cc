#include "two_stage_model.h"

#include <random>

namespace hetrt::kernels {

Result<GraphBuilder::Built> BuildTwoStageModel(int32_t accel, const TwoStageShape& shape) {
  GraphBuilder b;
  std::mt19937 rng(11);
  const GraphBuilder::Value data = b.AddInput("data", {{shape.rows, shape.width}, {kDLFloat, 32, 1}});
  HETRT_ASSIGN_OR_RETURN(GraphBuilder::Value cpu_out,
                         AddDenseStack(b, data, kDLCPU, "cpu", {shape.cpu_layers, shape.rows, shape.width}, rng));
  HETRT_ASSIGN_OR_RETURN(GraphBuilder::Value accel_out,
                         AddDenseStack(b, cpu_out, accel, "accel", {shape.accel_layers, shape.rows, shape.width}, rng));
  b.AddOutput(accel_out);
  return b.Build();
}

}  // namespace hetrt::kernels
