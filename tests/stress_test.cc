// One module loaded once, 8 executors on 8 threads, different inputs per
// thread, every output checked against the same input run alone.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <thread>

#include "hetrt/exec/factory_modules.h"
#include "hetrt/exec/graph_model.h"
#include "test_support.h"

namespace hetrt {
namespace {

constexpr int kThreads = 8;

// Each thread's inputs: the fixture's, scaled and shifted by the thread index.
std::vector<NamedTensor> InputsFor(const std::vector<NamedTensor>& base, int thread) {
  std::vector<NamedTensor> inputs;
  for (const auto& p : base) {
    Tensor t = Tensor::EmptyHost(p.tensor.shape(), p.tensor.dtype()).value();
    std::memcpy(t.data(), p.tensor.data(), t.nbytes());
    if (t.dtype().code == kDLFloat && t.dtype().bits == 32)
      for (int64_t i = 0; i < t.num_elements(); ++i)
        t.data_as<float>()[i] = t.data_as<float>()[i] * (1.f + 0.1f * thread) + 0.01f * thread;
    inputs.push_back({p.name, std::move(t)});
  }
  return inputs;
}

void StressModel(const std::string& model, std::vector<DLDevice> devices, int runs) {
  HETRT_REQUIRE_FIXTURE(dir, model);
  GraphExecutor::Options options;
  options.devices = std::move(devices);
  HETRT_ASSERT_OK_AND_ASSIGN(GraphModel m, OpenGraphModel({dir + "/deploy.so"}, options));
  auto* factory = dynamic_cast<GraphExecutorFactoryModule*>(m.root.get());
  ASSERT_NE(factory, nullptr);
  HETRT_ASSERT_OK_AND_ASSIGN(auto base, LoadParamDictFile(dir + "/inputs.params"));
  // References: each thread's inputs run alone, before any concurrency.
  std::vector<std::vector<NamedTensor>> inputs(kThreads);
  std::vector<std::vector<Tensor>> expected(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    inputs[t] = InputsFor(base, t);
    for (const auto& p : inputs[t]) HETRT_ASSERT_OK(m.executor->SetInput(p.name, p.tensor));
    HETRT_ASSERT_OK(m.executor->Run());
    for (int i = 0; i < m.executor->NumOutputs(); ++i) {
      HETRT_ASSERT_OK_AND_ASSIGN(Tensor out, m.executor->GetOutput(i));
      expected[t].push_back(std::move(out));
    }
  }
  std::vector<std::unique_ptr<GraphExecutor>> executors;
  for (int t = 0; t < kThreads; ++t) {
    HETRT_ASSERT_OK_AND_ASSIGN(auto ex, factory->CreateExecutor(options));
    executors.push_back(std::move(ex));
  }
  std::atomic<int> failures{0}, mismatches{0}, checked{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      GraphExecutor& ex = *executors[t];
      for (const auto& p : inputs[t])
        if (!ex.SetInput(p.name, p.tensor).ok()) return void(failures++);
      for (int r = 0; r < runs; ++r) {
        if (!ex.Run().ok()) return void(failures++);
        for (int i = 0; i < ex.NumOutputs(); ++i) {
          auto out = ex.GetOutput(i);
          if (!out.ok()) return void(failures++);
          const Tensor& want = expected[t][static_cast<size_t>(i)];
          if (out->nbytes() != want.nbytes() || std::memcmp(out->data(), want.data(), want.nbytes()) != 0) mismatches++;
          checked++;
        }
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(mismatches.load(), 0) << "of " << checked.load() << " outputs checked";
  EXPECT_EQ(checked.load(), kThreads * runs * m.executor->NumOutputs());
}

TEST(Stress, EightExecutorsOnEightThreadsOverOneCpuModel) { StressModel("mlp", {{kDLCPU, 0}}, 200); }

TEST(Stress, EightExecutorsOnEightThreadsOverOneCpuPlusOpenClModel) {
  HETRT_REQUIRE_OPENCL();
  StressModel("hetero_opencl_seed", {{kDLCPU, 0}, {kDLOpenCL, 0}}, 100);
}

// On a GPU, or on the fake CUDA driver (ctest's fake_driver.Stress.*).
TEST(Stress, EightExecutorsOnEightThreadsOverOneCpuPlusCudaModel) {
  if (auto cuda = PluginRegistry::Global().ForDevice({kDLCUDA, 0}); !cuda.ok())
    GTEST_SKIP() << "no CUDA device: " << cuda.status().message();
  StressModel("hetero_cuda_seed", {{kDLCPU, 0}, {kDLCUDA, 0}}, 100);
}

}  // namespace
}  // namespace hetrt
