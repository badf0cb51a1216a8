// A model in two stages run one after the other: dense + relu layers on the
// CPU, then more on an accelerator. Within one request the devices take
// turns, so only concurrent requests (several executors) keep both busy: the
// shape that shows what serving instances buy on mixed hardware (serve bench).
#pragma once

#include "dense_stack.h"

namespace hetrt::kernels {

struct TwoStageShape {
  int cpu_layers = 4;    // dense + relu pairs on the CPU
  int accel_layers = 4;  // ... then on the accelerator
  int64_t rows = 16;
  int64_t width = 256;
};

// The serving benchmarks' model (serve_bench, make_bench_model): on
// PoCL, with each device on a core of its own, its stages take about equally
// long (~1.8 ms each on the 2-core development machine).
inline constexpr TwoStageShape kServingTwoStageShape{6, 3, 64, 128};

// data [rows, width] -> CPU stack -> `accel` stack -> output (on `accel`).
// Weights are fixed pseudo-random values.
Result<GraphBuilder::Built> BuildTwoStageModel(int32_t accel, const TwoStageShape& shape = {});

}  // namespace hetrt::kernels
