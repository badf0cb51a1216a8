#include "dense_stack.h"

#include <cmath>

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

Result<GraphBuilder::Value> AddDenseStack(GraphBuilder& b, GraphBuilder::Value x, int32_t device,
                                          const std::string& prefix, const DenseStackShape& shape, std::mt19937& rng) {
  HETRT_ASSIGN_OR_RETURN(std::string dense, FunctionName(Op::kDense, device));
  HETRT_ASSIGN_OR_RETURN(std::string relu, FunctionName(Op::kRelu, device));
  const GraphBuilder::TensorSpec act{{shape.rows, shape.width}, {kDLFloat, 32, 1}};
  const float scale = 1.f / std::sqrt(static_cast<float>(shape.width));
  for (int l = 0; l < shape.layers; ++l) {
    const std::string name = prefix + "_" + std::to_string(l);
    auto w = b.AddParam(name + "_w", RandomTensor({shape.width, shape.width}, rng, scale), device);
    auto bias = b.AddParam(name + "_b", RandomTensor({shape.width}, rng, 0.1f), device);
    x = b.AddOp1(name + "_dense", dense, {x, w, bias}, act, device);
    x = b.AddOp1(name + "_relu", relu, {x}, act, device);
  }
  return x;
}

}  // namespace hetrt::kernels
