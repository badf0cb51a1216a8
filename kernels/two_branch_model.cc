#include "two_branch_model.h"

#include <random>

#include "dense_stack.h"
#include "kernel_set.h"

namespace hetrt::kernels {

Result<GraphBuilder::Built> BuildTwoBranchModel(int32_t accel, const TwoBranchShape& shape) {
  GraphBuilder b;
  std::mt19937 rng(9);
  const GraphBuilder::TensorSpec act{{shape.rows, shape.width}, {kDLFloat, 32, 1}};
  const DenseStackShape stack{shape.layers, shape.rows, shape.width};
  const GraphBuilder::Value data = b.AddInput("data", act);
  GraphBuilder::Value branch_out[2];
  const int32_t devices[2] = {kDLCPU, accel};
  const char* names[2] = {"cpu", "accel"};
  const bool wanted[2] = {shape.cpu_branch, shape.accel_branch};
  if (!wanted[0] && !wanted[1]) return InvalidArgument("a two-branch model needs at least one branch");
  for (int br = 0; br < 2; ++br) {
    if (!wanted[br]) continue;
    HETRT_ASSIGN_OR_RETURN(branch_out[br], AddDenseStack(b, data, devices[br], names[br], stack, rng));
  }
  if (!wanted[0] || !wanted[1]) {
    b.AddOutput(branch_out[wanted[0] ? 0 : 1]);
    return b.Build();
  }
  HETRT_ASSIGN_OR_RETURN(std::string add, FunctionName(Op::kAdd, kDLCPU));
  b.AddOutput(b.AddOp1("join", add, {branch_out[0], branch_out[1]}, act, kDLCPU));
  return b.Build();
}

}  // namespace hetrt::kernels
