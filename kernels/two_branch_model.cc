#include "two_branch_model.h"

#include <cmath>
#include <random>

#include "kernel_set.h"

namespace hetrt::kernels {
namespace {

Tensor RandomTensor(std::vector<int64_t> shape, std::mt19937& rng, float scale) {
  Tensor t = Tensor::EmptyHost(std::move(shape), {kDLFloat, 32, 1}).value();
  std::uniform_real_distribution<float> dist(-scale, scale);
  for (int64_t i = 0; i < t.num_elements(); ++i) t.data_as<float>()[i] = dist(rng);
  return t;
}

}  // namespace

Result<GraphBuilder::Built> BuildTwoBranchModel(int32_t accel, const TwoBranchShape& shape) {
  GraphBuilder b;
  std::mt19937 rng(9);
  const GraphBuilder::TensorSpec act{{shape.rows, shape.width}, {kDLFloat, 32, 1}};
  const float scale = 1.f / std::sqrt(static_cast<float>(shape.width));
  const GraphBuilder::Value data = b.AddInput("data", act);
  GraphBuilder::Value branch_out[2];
  const int32_t devices[2] = {kDLCPU, accel};
  const char* names[2] = {"cpu", "accel"};
  const bool wanted[2] = {shape.cpu_branch, shape.accel_branch};
  if (!wanted[0] && !wanted[1]) return InvalidArgument("a two-branch model needs at least one branch");
  for (int br = 0; br < 2; ++br) {
    if (!wanted[br]) continue;
    const int32_t device = devices[br];
    HETRT_ASSIGN_OR_RETURN(std::string dense, FunctionName(Op::kDense, device));
    HETRT_ASSIGN_OR_RETURN(std::string relu, FunctionName(Op::kRelu, device));
    GraphBuilder::Value x = data;
    for (int l = 0; l < shape.layers; ++l) {
      const std::string prefix = std::string(names[br]) + "_" + std::to_string(l);
      auto w = b.AddParam(prefix + "_w", RandomTensor({shape.width, shape.width}, rng, scale), device);
      auto bias = b.AddParam(prefix + "_b", RandomTensor({shape.width}, rng, 0.1f), device);
      x = b.AddOp1(prefix + "_dense", dense, {x, w, bias}, act, device);
      x = b.AddOp1(prefix + "_relu", relu, {x}, act, device);
    }
    branch_out[br] = x;
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
