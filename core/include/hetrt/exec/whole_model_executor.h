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

#include "hetrt/exec/executor.h"
#include "hetrt/plugin_host/plugin_registry.h"

namespace hetrt {

using PluginOptions = std::vector<std::pair<std::string, std::string>>;

class WholeModelExecutor final : public Executor {
 public:
  // What the model costs on its device (zeros where the plugin cannot tell).
  struct Report {
    uint64_t arena_bytes_used = 0, arena_bytes_total = 0, metadata_bytes = 0;
    uint64_t last_run_instructions = 0, last_run_device_ns = 0;
    std::string text;
  };

  // Opens `path` with the plugin of `registry` that runs it on `device`.
  static Result<std::unique_ptr<WholeModelExecutor>> Open(const std::string& path, const std::string& device,
                                                          const PluginOptions& options = {},
                                                          const PluginRegistry& registry = PluginRegistry::Global());
  ~WholeModelExecutor() override;

  int NumInputs() const override { return static_cast<int>(inputs_.size()); }
  int NumOutputs() const override { return static_cast<int>(outputs_.size()); }
  const std::string& InputName(int index) const override { return inputs_[static_cast<size_t>(index)].name; }
  std::string OutputName(int index) const override { return outputs_[static_cast<size_t>(index)].name; }
  std::vector<int> UnboundInputs() const override;
  Status SetInput(int index, const Tensor& value) override;
  using Executor::SetInput;
  Status Run() override;
  Result<Tensor> GetOutput(int index) const override;

  DLDataType InputDtype(int index) const { return inputs_[static_cast<size_t>(index)].dtype; }
  const std::vector<int64_t>& InputShape(int index) const { return inputs_[static_cast<size_t>(index)].shape; }
  DLDataType OutputDtype(int index) const { return outputs_[static_cast<size_t>(index)].dtype; }
  const std::vector<int64_t>& OutputShape(int index) const { return outputs_[static_cast<size_t>(index)].shape; }
  Result<Report> GetReport() const;
  const Plugin& plugin() const { return *plugin_; }

 private:
  struct Io {
    std::string name;
    DLDataType dtype;
    std::vector<int64_t> shape;
    uint64_t nbytes = 0;
  };
  WholeModelExecutor() = default;
  std::shared_ptr<Plugin> plugin_;  // kept alive while the model lives
  hetrt_whole_model_t* model_ = nullptr;
  std::vector<Io> inputs_, outputs_;
};

// The optional project hooks of the plugin serving `device`: write a
// self-contained project for a model (summary text back), and run one.
Result<std::string> GenerateWholeModelProject(const std::string& device, const std::string& model_path,
                                              const std::string& output_dir, const PluginOptions& options = {},
                                              const PluginRegistry& registry = PluginRegistry::Global());
struct ProjectRunResult {
  int exit_code = 0;
  std::string output;
};
Result<ProjectRunResult> RunWholeModelProject(const std::string& device, const std::string& project_dir,
                                              const PluginOptions& options = {},
                                              const PluginRegistry& registry = PluginRegistry::Global());

}  // namespace hetrt
