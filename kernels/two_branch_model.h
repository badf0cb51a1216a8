// A model with two independent branches of equal work, one on the CPU and one
// on an accelerator, joined at the end: the shape where an asynchronous
// executor can keep both devices busy at once (bench, tests).
#pragma once

#include "hetrt/graph_builder.h"

namespace hetrt::kernels {

struct TwoBranchShape {
  int layers = 4;       // dense + relu pairs per branch
  int64_t rows = 16;    // batch rows
  int64_t width = 256;  // features in and out of every dense layer
  // Leave one branch out to time the other alone (the output is then that branch's).
  bool cpu_branch = true;
  bool accel_branch = true;
};

// data [rows, width] -> CPU branch and `accel` branch (dense + relu each) ->
// add on the CPU. With accel = kDLCPU both branches run on the CPU (the
// reference). Weights are fixed pseudo-random values.
Result<GraphBuilder::Built> BuildTwoBranchModel(int32_t accel, const TwoBranchShape& shape = {});

}  // namespace hetrt::kernels
