#include "hetrt/exec/whole_model_executor.h"

#include "hetrt/base/dtype.h"

namespace hetrt {

Result<std::unique_ptr<WholeModelExecutor>> WholeModelExecutor::Open(const std::string& path, const std::string& device,
                                                                     const PluginOptions& options,
                                                                     const PluginRegistry& registry) {
  HETRT_ASSIGN_OR_RETURN(Plugin * plugin, registry.ForWholeModel(path, device));
  HETRT_ASSIGN_OR_RETURN(WholeModel model, WholeModel::Create(*plugin, path, device, options));
  return std::unique_ptr<WholeModelExecutor>(new WholeModelExecutor(std::move(model)));
}

Status WholeModelExecutor::SetInput(int index, const Tensor& value) {
  if (index < 0 || index >= NumInputs()) return OutOfRange("set_input: index " + std::to_string(index));
  const WholeModelIo& io = input(index);
  if (value.nbytes() != io.nbytes || value.dtype() != io.dtype)
    return InvalidArgument("set_input '" + io.name + "': got " + std::to_string(value.nbytes()) + " bytes of " +
                           DataTypeToString(value.dtype()) + ", the model wants " + std::to_string(io.nbytes) +
                           " bytes of " + DataTypeToString(io.dtype));
  if (value.device().device_type != kDLCPU)
    return InvalidArgument("set_input '" + io.name + "': a whole-model device takes host tensors");
  return model_.SetInput(index, value.host_bytes().data(), value.nbytes());
}

Status WholeModelExecutor::Run() { return model_.Run(); }

Result<Tensor> WholeModelExecutor::GetOutput(int index) const {
  if (index < 0 || index >= NumOutputs()) return OutOfRange("get_output: index " + std::to_string(index));
  const WholeModelIo& io = output(index);
  HETRT_ASSIGN_OR_RETURN(Tensor t, Tensor::EmptyHost(io.shape, io.dtype));
  if (t.nbytes() != io.nbytes)
    return DataLoss("plugin '" + plugin().name() + "': output '" + io.name + "' is " + std::to_string(io.nbytes) +
                    " bytes, its shape and dtype make " + std::to_string(t.nbytes()));
  HETRT_RETURN_IF_ERROR(model_.GetOutput(index, t.data(), t.nbytes()));
  return t;
}

Result<std::string> GenerateWholeModelProject(const std::string& device, const std::string& model_path,
                                              const std::string& output_dir, const PluginOptions& options,
                                              const PluginRegistry& registry) {
  HETRT_ASSIGN_OR_RETURN(Plugin * plugin, registry.ForWholeModel(model_path, device));
  return WholeModel::GenerateProject(*plugin, model_path, device, output_dir, options);
}

Result<ProjectRunResult> RunWholeModelProject(const std::string& device, const std::string& project_dir,
                                              const PluginOptions& options, const PluginRegistry& registry) {
  HETRT_ASSIGN_OR_RETURN(Plugin * plugin, registry.ForWholeModelDevice(device));
  return WholeModel::RunProject(*plugin, project_dir, options);
}

}  // namespace hetrt
