// A Model Library Format model compiled with hetrt's C runtime into a shared
// library and loaded into this process (the "inproc" transport). The arena is
// host memory of a given size; the run reports its peaks, which size the
// static arenas of device builds.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "hetrt/exec/executor.h"
#include "hetrt/mlf.h"
#include "hetrt/module_export.h"

namespace hetrt::micro {

struct TensorSpec {
  std::string name;
  DLDataType dtype{kDLFloat, 32, 1};
  std::vector<int64_t> shape;
  size_t bytes = 0;
};

// Names, dtypes, shapes and sizes of a model's inputs and outputs: from the
// graph (graph models) or metadata.json (AOT; flat when it has no shape).
Status DescribeModelIo(const MlfPackage& mlf, std::vector<TensorSpec>& inputs, std::vector<TensorSpec>& outputs);

class InProcessModel final : public Executor {
 public:
  static Result<std::unique_ptr<InProcessModel>> Build(const MlfPackage& mlf, const LinkOptions& options,
                                                       size_t arena_bytes = 64u << 20);
  ~InProcessModel() override;

  int NumInputs() const override { return static_cast<int>(inputs_.size()); }
  int NumOutputs() const override { return static_cast<int>(outputs_.size()); }
  const std::string& InputName(int index) const override { return inputs_[static_cast<size_t>(index)].name; }
  std::string OutputName(int index) const override { return outputs_[static_cast<size_t>(index)].name; }
  std::vector<int> UnboundInputs() const override;
  Status SetInput(int index, const Tensor& value) override;
  using Executor::SetInput;
  Status Run() override;
  Result<Tensor> GetOutput(int index) const override;

  const std::vector<TensorSpec>& inputs() const { return inputs_; }
  const std::vector<TensorSpec>& outputs() const { return outputs_; }
  DLDataType InputDtype(int index) const { return inputs_[static_cast<size_t>(index)].dtype; }
  const std::vector<int64_t>& InputShape(int index) const { return inputs_[static_cast<size_t>(index)].shape; }

  // Peak use so far of the model's arena (tensors + kernel workspace), of the
  // executor's separate memory, and the runtime's per-pool report.
  size_t ArenaPeakBytes() const;
  size_t ExecutorPeakBytes() const;
  size_t ArenaCapacity() const { return arena_.size(); }
  std::string ArenaReport() const;

 private:
  struct Api;
  InProcessModel() = default;
  std::unique_ptr<Api> api_;
  void* handle_ = nullptr;
  std::string dir_;
  std::vector<uint8_t> arena_, executor_arena_;
  std::vector<TensorSpec> inputs_, outputs_;
};

}  // namespace hetrt::micro
