// A Model Library Format model compiled with hetrt's C runtime into a shared
// library and loaded into this process (the "inproc" transport). The arena is
// host memory of a given size; the run reports its peaks, which size the
// static arenas of device builds.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "hetrt/sdk/mlf_package.h"
#include "host_files.h"
#include "model_session.h"

namespace hetrt::micro {

// Names, dtypes, shapes and sizes of a model's inputs and outputs: from the
// graph (graph models) or metadata.json (AOT; flat when it has no shape).
Status DescribeModelIo(const MlfPackage& mlf, std::vector<TensorSpec>& inputs, std::vector<TensorSpec>& outputs);

class InProcessModel final : public ModelSession {
 public:
  static Result<std::unique_ptr<InProcessModel>> Build(const MlfPackage& mlf, const CompileOptions& options,
                                                       size_t arena_bytes = 64u << 20);
  ~InProcessModel() override;

  const std::vector<TensorSpec>& inputs() const override { return inputs_; }
  const std::vector<TensorSpec>& outputs() const override { return outputs_; }
  Status SetInput(int index, std::span<const uint8_t> bytes) override;
  Status Run() override;
  Status GetOutput(int index, std::span<uint8_t> out) const override;
  using ModelSession::GetOutput;

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
