// An Executor over a whole-model plugin (ABI 2.1's whole_model table): the
// model runs on a device the plugin drives itself (a microcontroller, an
// emulated board, a device program); inputs and outputs cross as host bytes.
// Tools reach such devices only through this: `hetrt run MODEL --device micro`
// is "a model file a whole-model plugin accepts, on the device named micro".
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "hetrt/device/whole_model.h"
#include "hetrt/exec/executor.h"
#include "hetrt/plugin_host/plugin_registry.h"

namespace hetrt {

// Thread contract: thread-compatible, as Executor.
class WholeModelExecutor final : public Executor {
 public:
  using Report = WholeModelReport;

  // Opens `path` with the plugin of `registry` that runs it on `device`.
  static Result<std::unique_ptr<WholeModelExecutor>> Open(const std::string& path, const std::string& device,
                                                          const PluginOptions& options = {},
                                                          const PluginRegistry& registry = PluginRegistry::Global());

  int NumInputs() const override { return static_cast<int>(model_.inputs().size()); }
  int NumOutputs() const override { return static_cast<int>(model_.outputs().size()); }
  const std::string& InputName(int index) const override { return input(index).name; }
  std::string OutputName(int index) const override { return output(index).name; }
  TensorSpec InputSpec(int index) const override { return {input(index).dtype, input(index).shape}; }
  TensorSpec OutputSpec(int index) const override { return {output(index).dtype, output(index).shape}; }
  Status SetInput(int index, const Tensor& value) override;
  using Executor::SetInput;
  Status Run() override;
  Result<Tensor> GetOutput(int index) const override;

  DLDataType InputDtype(int index) const { return input(index).dtype; }
  const std::vector<int64_t>& InputShape(int index) const { return input(index).shape; }
  DLDataType OutputDtype(int index) const { return output(index).dtype; }
  const std::vector<int64_t>& OutputShape(int index) const { return output(index).shape; }
  Result<Report> GetReport() const { return model_.Report(); }
  const Plugin& plugin() const { return model_.plugin(); }

 private:
  explicit WholeModelExecutor(WholeModel model) : model_(std::move(model)) {}
  const WholeModelIo& input(int index) const { return model_.inputs()[static_cast<size_t>(index)]; }
  const WholeModelIo& output(int index) const { return model_.outputs()[static_cast<size_t>(index)]; }
  WholeModel model_;
};

// The optional project hooks of the plugin serving `device`: write a
// self-contained project for a model (summary text back), and run one.
Result<std::string> GenerateWholeModelProject(const std::string& device, const std::string& model_path,
                                              const std::string& output_dir, const PluginOptions& options = {},
                                              const PluginRegistry& registry = PluginRegistry::Global());
using ProjectRunResult = WholeModel::ProjectRun;
Result<ProjectRunResult> RunWholeModelProject(const std::string& device, const std::string& project_dir,
                                              const PluginOptions& options = {},
                                              const PluginRegistry& registry = PluginRegistry::Global());

}  // namespace hetrt
