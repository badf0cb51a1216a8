// The AOT executor of TVM's C++ runtime: the library describes its inputs and
// outputs in a C metadata struct (get_c_metadata), and one entry function
// (<mod_name>___tvm_main__) runs the whole model.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "hetrt/exec/executor.h"
#include "hetrt/module/module.h"
#include "hetrt/plugin_host/plugin_registry.h"

namespace hetrt {

// Thread contract: thread-compatible, as every Executor (one thread at a time).
class AotExecutor final : public Executor {
 public:
  // `root` is an AotExecutorFactory (or any module whose imports define
  // get_c_metadata and the entry function). AOT runs on one CPU device.
  static Result<std::unique_ptr<AotExecutor>> Create(std::shared_ptr<Module> root, std::vector<DLDevice> devices,
                                                     PluginRegistry* plugins = nullptr);

  int NumInputs() const override { return static_cast<int>(inputs_.size()); }
  int NumOutputs() const override { return static_cast<int>(outputs_.size()); }
  const std::string& InputName(int index) const override { return input_names_[static_cast<size_t>(index)]; }
  std::string OutputName(int index) const override { return output_names_[static_cast<size_t>(index)]; }
  TensorSpec InputSpec(int index) const override { return SpecOf(inputs_[static_cast<size_t>(index)]); }
  TensorSpec OutputSpec(int index) const override { return SpecOf(outputs_[static_cast<size_t>(index)]); }
  Status SetInput(int index, const Tensor& value) override;
  using Executor::SetInput;
  Status Run() override;
  Result<Tensor> GetOutput(int index) const override;
  const std::string& module_name() const { return module_name_; }

 private:
  AotExecutor() = default;
  std::shared_ptr<Module> root_;
  PluginRegistry* plugins_ = nullptr;
  PluginRegistry* backend_registry_ = nullptr;  // NULL: the global registry serves compiled code
  std::string module_name_;
  std::vector<std::string> input_names_, output_names_;
  std::vector<Tensor> inputs_, outputs_, pools_;
  const PackedFunc* main_ = nullptr;
  std::vector<hetrt_value_t> args_;
  std::vector<int32_t> codes_;
};

}  // namespace hetrt
