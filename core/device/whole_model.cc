#include "hetrt/device/whole_model.h"

#include <utility>

namespace hetrt {
namespace {

std::vector<hetrt_option_t> AbiOptions(const PluginOptions& options) {
  std::vector<hetrt_option_t> out;
  for (const auto& [key, value] : options) out.push_back({key.c_str(), value.c_str()});
  return out;
}

}  // namespace

Result<bool> WholeModel::Accepts(Plugin& plugin, const std::string& path, const std::string& device,
                                 std::string* reason) {
  const hetrt_whole_model_api_t* api = plugin.whole_model_api();
  if (api == nullptr) return Unimplemented("plugin '" + plugin.name() + "' runs no whole models");
  auto args = AbiArgs<hetrt_whole_model_accepts_args_t>();
  args.self = plugin.instance();
  args.path = path.c_str();
  args.device = device.c_str();
  HETRT_RETURN_IF_ERROR(plugin.Call(api->accepts, &args, "whole_model.accepts"));
  if (!args.accepted && reason != nullptr) *reason = args.reason ? args.reason : "declined";
  return args.accepted != 0;
}

Result<WholeModel> WholeModel::Create(Plugin& plugin, const std::string& path, const std::string& device,
                                      const PluginOptions& options) {
  const hetrt_whole_model_api_t* api = plugin.whole_model_api();
  if (api == nullptr) return Unimplemented("plugin '" + plugin.name() + "' runs no whole models");
  const auto abi_options = AbiOptions(options);
  auto create = AbiArgs<hetrt_whole_model_create_args_t>();
  create.self = plugin.instance();
  create.path = path.c_str();
  create.device = device.c_str();
  create.options = abi_options.data();
  create.num_options = abi_options.size();
  HETRT_RETURN_IF_ERROR(plugin.Call(api->create, &create, "whole_model.create"));
  if (create.model == nullptr) return Internal("plugin '" + plugin.name() + "' created no model and gave no error");
  WholeModel model(plugin.shared_from_this(), create.model);
  HETRT_RETURN_IF_ERROR(model.ReadIo());
  return model;
}

Status WholeModel::ReadIo() {
  const hetrt_whole_model_api_t* api = plugin_->whole_model_api();
  auto count = AbiArgs<hetrt_whole_model_io_count_args_t>();
  count.model = model_;
  HETRT_RETURN_IF_ERROR(plugin_->Call(api->io_count, &count, "whole_model.io_count"));
  for (int32_t kind : {HETRT_IO_INPUT, HETRT_IO_OUTPUT}) {
    const int32_t n = kind == HETRT_IO_INPUT ? count.num_inputs : count.num_outputs;
    for (int32_t i = 0; i < n; ++i) {
      auto info = AbiArgs<hetrt_whole_model_io_info_args_t>();
      info.model = model_;
      info.kind = kind;
      info.index = i;
      HETRT_RETURN_IF_ERROR(plugin_->Call(api->io_info, &info, "whole_model.io_info"));
      if (info.ndim < 0 || (info.ndim > 0 && info.shape == nullptr))
        return DataLoss("plugin '" + plugin_->name() + "' gave tensor " + std::to_string(i) + " no shape");
      WholeModelIo io{info.name ? info.name : "", info.dtype, {info.shape, info.shape + info.ndim}, info.nbytes};
      (kind == HETRT_IO_INPUT ? inputs_ : outputs_).push_back(std::move(io));
    }
  }
  return OkStatus();
}

WholeModel::WholeModel(WholeModel&& other) noexcept
    : plugin_(std::move(other.plugin_)),
      model_(std::exchange(other.model_, nullptr)),
      inputs_(std::move(other.inputs_)),
      outputs_(std::move(other.outputs_)) {}

WholeModel& WholeModel::operator=(WholeModel&& other) noexcept {
  if (this != &other) {
    Reset();
    plugin_ = std::move(other.plugin_);
    model_ = std::exchange(other.model_, nullptr);
    inputs_ = std::move(other.inputs_);
    outputs_ = std::move(other.outputs_);
  }
  return *this;
}

WholeModel::~WholeModel() { Reset(); }

void WholeModel::Reset() {
  if (model_ == nullptr) return;
  auto args = AbiArgs<hetrt_whole_model_args_t>();
  args.model = model_;
  (void)plugin_->Call(plugin_->whole_model_api()->destroy, &args, "whole_model.destroy");  // the plugin logs
  model_ = nullptr;
}

Status WholeModel::SetInput(int32_t index, const void* data, uint64_t nbytes) const {
  auto args = AbiArgs<hetrt_whole_model_tensor_args_t>();
  args.model = model_;
  args.index = index;
  args.data = const_cast<void*>(data);
  args.nbytes = nbytes;
  return plugin_->Call(plugin_->whole_model_api()->set_input, &args, "whole_model.set_input");
}

Status WholeModel::Run() const {
  auto args = AbiArgs<hetrt_whole_model_args_t>();
  args.model = model_;
  return plugin_->Call(plugin_->whole_model_api()->run, &args, "whole_model.run");
}

Status WholeModel::GetOutput(int32_t index, void* data, uint64_t nbytes) const {
  auto args = AbiArgs<hetrt_whole_model_tensor_args_t>();
  args.model = model_;
  args.index = index;
  args.data = data;
  args.nbytes = nbytes;
  return plugin_->Call(plugin_->whole_model_api()->get_output, &args, "whole_model.get_output");
}

Result<WholeModelReport> WholeModel::Report() const {
  auto args = AbiArgs<hetrt_whole_model_report_args_t>();
  args.model = model_;
  HETRT_RETURN_IF_ERROR(plugin_->Call(plugin_->whole_model_api()->report, &args, "whole_model.report"));
  return WholeModelReport{args.arena_bytes_used,      args.arena_bytes_total,  args.metadata_bytes,
                          args.last_run_instructions, args.last_run_device_ns, args.text ? args.text : ""};
}

namespace {
// The project hooks are optional (a 2.1 table may end before them); both take
// the instance and the caller's options.
template <typename Args>
Status CallProjectHook(Plugin& plugin, hetrt_error_t* (*hook)(Args*), const PluginOptions& options, Args& args,
                       const char* what) {
  if (hook == nullptr) return Unimplemented("plugin '" + plugin.name() + "' " + what);
  const auto abi_options = AbiOptions(options);
  args.self = plugin.instance();
  args.options = abi_options.data();
  args.num_options = abi_options.size();
  return plugin.Consume(hook(&args));
}
}  // namespace

Result<std::string> WholeModel::GenerateProject(Plugin& plugin, const std::string& path, const std::string& device,
                                                const std::string& output_dir, const PluginOptions& options) {
  const auto* api = plugin.whole_model_api();
  auto args = AbiArgs<hetrt_whole_model_project_args_t>();
  args.path = path.c_str();
  args.device = device.c_str();
  args.output_dir = output_dir.c_str();
  const bool has = HETRT_STRUCT_HAS(api, hetrt_whole_model_api_t, project_generate);
  HETRT_RETURN_IF_ERROR(
      CallProjectHook(plugin, has ? api->project_generate : nullptr, options, args, "writes no projects"));
  return std::string(args.summary ? args.summary : "");
}

Result<WholeModel::ProjectRun> WholeModel::RunProject(Plugin& plugin, const std::string& project_dir,
                                                      const PluginOptions& options) {
  const auto* api = plugin.whole_model_api();
  auto args = AbiArgs<hetrt_whole_model_project_run_args_t>();
  args.project_dir = project_dir.c_str();
  const bool has = HETRT_STRUCT_HAS(api, hetrt_whole_model_api_t, project_run);
  HETRT_RETURN_IF_ERROR(CallProjectHook(plugin, has ? api->project_run : nullptr, options, args, "runs no projects"));
  return ProjectRun{args.exit_code, args.output ? args.output : ""};
}

}  // namespace hetrt
