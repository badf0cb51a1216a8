// A stack of dense + relu layers on one device with fixed pseudo-random
// weights: the building block of the models hetrt builds for itself (the
// two-branch and two-stage models of benches and tests).
#pragma once

#include <random>
#include <string>

#include "hetrt/graph_builder.h"

namespace hetrt::kernels {

struct DenseStackShape {
  int layers = 4;       // dense + relu pairs
  int64_t rows = 16;    // batch rows
  int64_t width = 256;  // features in and out of every dense layer
};

// x [rows, width] -> `layers` x (dense + relu) on `device`; weights and biases
// become params named "<prefix>_<layer>_w" / "_b", drawn from `rng`.
Result<GraphBuilder::Value> AddDenseStack(GraphBuilder& b, GraphBuilder::Value x, int32_t device,
                                          const std::string& prefix, const DenseStackShape& shape, std::mt19937& rng);

}  // namespace hetrt::kernels
