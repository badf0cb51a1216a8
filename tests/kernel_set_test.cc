// hetrt's own kernels (CPU, OpenCL, CUDA) against reference loops written here,
// each through the whole path: builder -> export -> load -> run.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <filesystem>
#include <random>

#include <unistd.h>

#include "hetrt/exec/factory_modules.h"
#include "hetrt/exec/graph_model.h"
#include "hetrt/graph_builder.h"
#include "hetrt/module_export.h"
#include "kernel_runs.h"
#include "kernel_set.h"
#include "test_support.h"

namespace hetrt {
namespace {

using testing::Random;

using kernels::Op;
using Spec = GraphBuilder::TensorSpec;
Spec F32(std::vector<int64_t> s) { return {std::move(s), {kDLFloat, 32, 1}}; }

// The op through the whole path on `device` (kernel_runs.h).
Result<Tensor> RunOne(Op op, const std::vector<Tensor>& inputs, Spec out, int32_t device) {
  return testing::RunKernelOp(op, inputs, std::move(out.shape), device);
}

Tensor Reference(Op op, const std::vector<Tensor>& in, const std::vector<int64_t>& out_shape) {
  Tensor y = Tensor::EmptyHost(out_shape, {kDLFloat, 32, 1}).value();
  float* o = y.data_as<float>();
  auto x = [&](size_t i) { return in[i].data_as<float>(); };
  switch (op) {
    case Op::kAdd:
    case Op::kMul:
      for (int64_t i = 0; i < y.num_elements(); ++i) o[i] = op == Op::kAdd ? x(0)[i] + x(1)[i] : x(0)[i] * x(1)[i];
      break;
    case Op::kRelu:
      for (int64_t i = 0; i < y.num_elements(); ++i) o[i] = std::max(x(0)[i], 0.f);
      break;
    case Op::kDense: {
      const int64_t n = out_shape[0], m = out_shape[1], k = in[1].shape()[1];
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < m; ++j) {
          double acc = x(2)[j];
          for (int64_t t = 0; t < k; ++t) acc += double(x(0)[i * k + t]) * x(1)[j * k + t];
          o[i * m + j] = static_cast<float>(acc);
        }
      break;
    }
    case Op::kSoftmax: {
      const int64_t c = out_shape.back(), rows = y.num_elements() / c;
      for (int64_t r = 0; r < rows; ++r) {
        double mx = -DBL_MAX, sum = 0;
        for (int64_t i = 0; i < c; ++i) mx = std::max(mx, double(x(0)[r * c + i]));
        for (int64_t i = 0; i < c; ++i) sum += std::exp(x(0)[r * c + i] - mx);
        for (int64_t i = 0; i < c; ++i) o[r * c + i] = static_cast<float>(std::exp(x(0)[r * c + i] - mx) / sum);
      }
      break;
    }
    case Op::kConv2d: {
      const auto& xs = in[0].shape();
      const auto& ws = in[1].shape();
      const int64_t C = xs[1], H = xs[2], W = xs[3], O = ws[0], KH = ws[2], KW = ws[3], OH = out_shape[2],
                    OW = out_shape[3];
      const int64_t pad = (OH - H + KH - 1) / 2;
      for (int64_t oc = 0; oc < O; ++oc)
        for (int64_t i = 0; i < OH; ++i)
          for (int64_t j = 0; j < OW; ++j) {
            double acc = x(2)[oc];
            for (int64_t c = 0; c < C; ++c)
              for (int64_t u = 0; u < KH; ++u)
                for (int64_t v = 0; v < KW; ++v) {
                  const int64_t yy = i + u - pad, xx = j + v - pad;
                  if (yy >= 0 && yy < H && xx >= 0 && xx < W)
                    acc += double(x(0)[(c * H + yy) * W + xx]) * x(1)[((oc * C + c) * KH + u) * KW + v];
                }
            o[(oc * OH + i) * OW + j] = static_cast<float>(acc);
          }
      break;
    }
    case Op::kMaxPool: {
      const auto& xs = in[0].shape();
      const int64_t P = xs[0] * xs[1], H = xs[2], W = xs[3], OH = out_shape[2], OW = out_shape[3];
      for (int64_t p = 0; p < P; ++p)
        for (int64_t i = 0; i < OH; ++i)
          for (int64_t j = 0; j < OW; ++j) {
            float m = -FLT_MAX;
            for (int64_t u = 0; u < H / OH; ++u)
              for (int64_t v = 0; v < W / OW; ++v)
                m = std::max(m, x(0)[(p * H + i * (H / OH) + u) * W + j * (W / OW) + v]);
            o[(p * OH + i) * OW + j] = m;
          }
      break;
    }
  }
  return y;
}

void CheckAll(int32_t device) {
  uint32_t seed = 1;
  for (const testing::KernelCase& c : testing::KernelCases()) {
    SCOPED_TRACE(c.name);
    std::vector<Tensor> inputs;
    for (const auto& s : c.inputs) inputs.push_back(Random(s, seed++));
    HETRT_ASSERT_OK_AND_ASSIGN(Tensor out, RunOne(c.op, inputs, F32(c.output), device));
    EXPECT_TRUE(testing::TensorsClose(out, Reference(c.op, inputs, c.output), 1e-5, 1e-5));
  }
}

TEST(KernelSet, CpuKernelsMatchReferenceLoops) { CheckAll(kDLCPU); }

TEST(KernelSet, OpenClKernelsMatchReferenceLoops) {
  HETRT_REQUIRE_OPENCL();
  CheckAll(kDLOpenCL);
}

// On a GPU, or on the fake CUDA driver (ctest's fake_driver.KernelSet.*),
// which runs cuda_kernels.cu as host code.
TEST(KernelSet, CudaKernelsMatchReferenceLoops) {
  auto device = PluginRegistry::Global().ForDevice({kDLCUDA, 0});
  if (!device.ok()) GTEST_SKIP() << "no CUDA device: " << device.status().message();
  // Compiled by nvcc at build time: missing without the CUDA toolkit.
  if (Status built = kernels::FunctionName(kernels::Op::kAdd, kDLCUDA).status(); !built.ok())
    HETRT_MISSING("cuda-toolkit", built.message());
  if (Status usable = kernels::CudaKernelsRunOn(**device, {kDLCUDA, 0}); !usable.ok()) GTEST_SKIP() << usable.message();
  CheckAll(kDLCUDA);
}

TEST(KernelSet, KernelsRefuseMismatchedShapesWithTheirName) {
  std::vector<Tensor> inputs = {Random({2, 5}, 1), Random({3, 4}, 2), Random({3}, 3)};  // K mismatch
  auto out = RunOne(Op::kDense, inputs, F32({2, 3}), kDLCPU);
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("hetrt_dense: shapes do not agree"), std::string::npos)
      << out.status().message();
}

}  // namespace
}  // namespace hetrt
