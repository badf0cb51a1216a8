// One op of hetrt's kernel set run the whole way: graph builder -> exporter ->
// loader -> graph executor on cpu:0 plus `device` (kernel_set_test compares
// it with reference loops, vulkan_test with the CPU kernels).
#pragma once

#include <vector>

#include "hetrt/base/tensor.h"
#include "kernel_set.h"

namespace hetrt::testing {

// An op of the set at shapes that reach its edges (odd sizes, padding).
struct KernelCase {
  const char* name;
  kernels::Op op;
  std::vector<std::vector<int64_t>> inputs;
  std::vector<int64_t> output;
};
// Every op of the set once or more.
const std::vector<KernelCase>& KernelCases();

// Every input a float32 graph input on `device`; the float32 output of shape `out`.
Result<Tensor> RunKernelOp(kernels::Op op, const std::vector<Tensor>& inputs, std::vector<int64_t> out, int32_t device);

}  // namespace hetrt::testing
