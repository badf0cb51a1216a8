#include "hetrt/exec/whole_model_executor.h"

#include <cstring>

#include "hetrt/base/dtype.h"

namespace hetrt {
namespace {

std::vector<hetrt_option_t> AbiOptions(const PluginOptions& options) {
  std::vector<hetrt_option_t> out;
  for (const auto& [key, value] : options) out.push_back({key.c_str(), value.c_str()});
  return out;
}

}  // namespace

Result<std::unique_ptr<WholeModelExecutor>> WholeModelExecutor::Open(const std::string& path, const std::string& device,
                                                                     const PluginOptions& options,
                                                                     const PluginRegistry& registry) {
  HETRT_ASSIGN_OR_RETURN(Plugin * plugin, registry.ForWholeModel(path, device));
  const hetrt_whole_model_api_t* api = plugin->whole_model_api();
  std::unique_ptr<WholeModelExecutor> ex(new WholeModelExecutor());
  ex->plugin_ = plugin->shared_from_this();
  const auto abi_options = AbiOptions(options);
  auto create = AbiArgs<hetrt_whole_model_create_args_t>();
  create.self = plugin->instance();
  create.path = path.c_str();
  create.device = device.c_str();
  create.options = abi_options.data();
  create.num_options = abi_options.size();
  HETRT_RETURN_IF_ERROR(plugin->Consume(api->create(&create)));
  ex->model_ = create.model;
  auto count = AbiArgs<hetrt_whole_model_io_count_args_t>();
  count.model = ex->model_;
  HETRT_RETURN_IF_ERROR(plugin->Consume(api->io_count(&count)));
  for (int32_t kind : {HETRT_IO_INPUT, HETRT_IO_OUTPUT}) {
    const int32_t n = kind == HETRT_IO_INPUT ? count.num_inputs : count.num_outputs;
    for (int32_t i = 0; i < n; ++i) {
      auto info = AbiArgs<hetrt_whole_model_io_info_args_t>();
      info.model = ex->model_;
      info.kind = kind;
      info.index = i;
      HETRT_RETURN_IF_ERROR(plugin->Consume(api->io_info(&info)));
      if (info.ndim < 0 || (info.ndim > 0 && info.shape == nullptr))
        return DataLoss("plugin '" + plugin->name() + "' gave tensor " + std::to_string(i) + " no shape");
      Io io{info.name ? info.name : "", info.dtype, {info.shape, info.shape + info.ndim}, info.nbytes};
      (kind == HETRT_IO_INPUT ? ex->inputs_ : ex->outputs_).push_back(std::move(io));
    }
  }
  return ex;
}

WholeModelExecutor::~WholeModelExecutor() {
  if (model_ == nullptr) return;
  auto args = AbiArgs<hetrt_whole_model_args_t>();
  args.model = model_;
  (void)plugin_->Consume(plugin_->whole_model_api()->destroy(&args));
}

std::vector<int> WholeModelExecutor::UnboundInputs() const {
  std::vector<int> all;
  for (int i = 0; i < NumInputs(); ++i) all.push_back(i);
  return all;
}

Status WholeModelExecutor::SetInput(int index, const Tensor& value) {
  if (index < 0 || index >= NumInputs()) return OutOfRange("set_input: index " + std::to_string(index));
  const Io& io = inputs_[static_cast<size_t>(index)];
  if (value.nbytes() != io.nbytes || value.dtype() != io.dtype)
    return InvalidArgument("set_input '" + io.name + "': got " + std::to_string(value.nbytes()) + " bytes of " +
                           DataTypeToString(value.dtype()) + ", the model wants " + std::to_string(io.nbytes) +
                           " bytes of " + DataTypeToString(io.dtype));
  if (value.device().device_type != kDLCPU)
    return InvalidArgument("set_input '" + io.name + "': a whole-model device takes host tensors");
  auto args = AbiArgs<hetrt_whole_model_tensor_args_t>();
  args.model = model_;
  args.index = index;
  args.data = const_cast<void*>(static_cast<const void*>(value.host_bytes().data()));
  args.nbytes = value.nbytes();
  return plugin_->Consume(plugin_->whole_model_api()->set_input(&args));
}

Status WholeModelExecutor::Run() {
  auto args = AbiArgs<hetrt_whole_model_args_t>();
  args.model = model_;
  return plugin_->Consume(plugin_->whole_model_api()->run(&args));
}

Result<Tensor> WholeModelExecutor::GetOutput(int index) const {
  if (index < 0 || index >= NumOutputs()) return OutOfRange("get_output: index " + std::to_string(index));
  const Io& io = outputs_[static_cast<size_t>(index)];
  HETRT_ASSIGN_OR_RETURN(Tensor t, Tensor::EmptyHost(io.shape, io.dtype));
  if (t.nbytes() != io.nbytes)
    return DataLoss("plugin '" + plugin_->name() + "': output '" + io.name + "' is " + std::to_string(io.nbytes) +
                    " bytes, its shape and dtype make " + std::to_string(t.nbytes()));
  auto args = AbiArgs<hetrt_whole_model_tensor_args_t>();
  args.model = model_;
  args.index = index;
  args.data = t.data();
  args.nbytes = t.nbytes();
  HETRT_RETURN_IF_ERROR(plugin_->Consume(plugin_->whole_model_api()->get_output(&args)));
  return t;
}

Result<WholeModelExecutor::Report> WholeModelExecutor::GetReport() const {
  auto args = AbiArgs<hetrt_whole_model_report_args_t>();
  args.model = model_;
  HETRT_RETURN_IF_ERROR(plugin_->Consume(plugin_->whole_model_api()->report(&args)));
  return Report{args.arena_bytes_used, args.arena_bytes_total, args.metadata_bytes, args.last_run_instructions,
                args.last_run_device_ns, args.text ? args.text : ""};
}

Result<std::string> GenerateWholeModelProject(const std::string& device, const std::string& model_path,
                                              const std::string& output_dir, const PluginOptions& options,
                                              const PluginRegistry& registry) {
  HETRT_ASSIGN_OR_RETURN(Plugin * plugin, registry.ForWholeModel(model_path, device));
  const auto* api = plugin->whole_model_api();
  if (!HETRT_STRUCT_HAS(api, hetrt_whole_model_api_t, project_generate) || api->project_generate == nullptr)
    return Unimplemented("plugin '" + plugin->name() + "' writes no projects");
  const auto abi_options = AbiOptions(options);
  auto args = AbiArgs<hetrt_whole_model_project_args_t>();
  args.self = plugin->instance();
  args.path = model_path.c_str();
  args.device = device.c_str();
  args.output_dir = output_dir.c_str();
  args.options = abi_options.data();
  args.num_options = abi_options.size();
  HETRT_RETURN_IF_ERROR(plugin->Consume(api->project_generate(&args)));
  return std::string(args.summary ? args.summary : "");
}

Result<ProjectRunResult> RunWholeModelProject(const std::string& device, const std::string& project_dir,
                                              const PluginOptions& options, const PluginRegistry& registry) {
  HETRT_ASSIGN_OR_RETURN(Plugin * plugin, registry.ForWholeModelDevice(device));
  const auto* api = plugin->whole_model_api();
  if (!HETRT_STRUCT_HAS(api, hetrt_whole_model_api_t, project_run) || api->project_run == nullptr)
    return Unimplemented("plugin '" + plugin->name() + "' runs no projects");
  const auto abi_options = AbiOptions(options);
  auto args = AbiArgs<hetrt_whole_model_project_run_args_t>();
  args.self = plugin->instance();
  args.project_dir = project_dir.c_str();
  args.options = abi_options.data();
  args.num_options = abi_options.size();
  HETRT_RETURN_IF_ERROR(plugin->Consume(api->project_run(&args)));
  return ProjectRunResult{args.exit_code, args.output ? args.output : ""};
}

}  // namespace hetrt
