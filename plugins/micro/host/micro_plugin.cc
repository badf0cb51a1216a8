// libhetrt_plugin_micro.so: hetrt's micro device behind the plugin ABI's
// whole-model table (ABI 2.2, with its sample model). It declares the devices "micro" (a device
// program, a board over a serial port or a socket, firmware on an emulated
// board) and "cpu" (the same C runtime in this process), the transports and
// the boards; everything else is micro_device.cc.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "boards.h"
#include "hetrt/plugin_abi.h"
#include "hetrt/sdk/entry.h"
#include "hetrt/sdk/error.h"
#include "hetrt/sdk/status_error.h"
#include "micro_device.h"
#include "sample_model.h"

struct hetrt_instance {
  std::string reason, summary, output;  // strings handed out until the next call
  hetrt::micro::SampleModel sample;
  const uint8_t* sample_input = nullptr;
  const uint8_t* sample_output = nullptr;
};

struct hetrt_whole_model {
  std::unique_ptr<hetrt::micro::MicroModel> model;
  std::string report;
};

namespace {

using hetrt::micro::MicroModel;
inline constexpr char kLabel[] = "micro plugin";
template <auto F>
using Entry = hetrt::sdk::Entry<F, kLabel>;

using hetrt::sdk::ToError;

hetrt::micro::OptionMap Options(const hetrt_option_t* options, size_t count) {
  hetrt::micro::OptionMap map;
  for (size_t i = 0; options && i < count; ++i)
    if (options[i].key) map[options[i].key] = options[i].value ? options[i].value : "";
  return map;
}

hetrt_error_t* NoModel() { return hetrt::sdk::MakeError(HETRT_STATUS_INVALID_ARGUMENT, "NULL model"); }

hetrt_error_t* InstanceCreate(hetrt_instance_create_args_t* args) {
  args->instance = new hetrt_instance();
  return nullptr;
}

hetrt_error_t* InstanceDestroy(hetrt_instance_destroy_args_t* args) {
  delete args->self;
  return nullptr;
}

hetrt_error_t* SetOption(hetrt_set_option_args_t* args) {
  return hetrt::sdk::MakeErrorf(HETRT_STATUS_NOT_FOUND,
                                "micro plugin: no instance option '%s' (options go with "
                                "each model: %s)",
                                args->key ? args->key : "", hetrt::micro::kModelOptionKeys);
}

hetrt_error_t* Accepts(hetrt_whole_model_accepts_args_t* args) {
  args->reason = nullptr;
  args->self->reason = args->path ? hetrt::micro::WhyNotMlf(args->path) : "no path";
  args->accepted = args->self->reason.empty();
  if (!args->accepted) args->reason = args->self->reason.c_str();
  return nullptr;
}

hetrt_error_t* Create(hetrt_whole_model_create_args_t* args) {
  if (args->path == nullptr || args->device == nullptr)
    return hetrt::sdk::MakeError(HETRT_STATUS_INVALID_ARGUMENT, "micro: create needs a path and a device");
  auto model = hetrt::micro::OpenMicroModel(args->path, args->device, Options(args->options, args->num_options));
  if (!model.ok()) return ToError(model.status().WithContext(args->path));
  args->model = new hetrt_whole_model{std::move(model).value(), {}};
  return nullptr;
}

hetrt_error_t* Destroy(hetrt_whole_model_args_t* args) {
  delete args->model;
  return nullptr;
}

hetrt_error_t* IoCount(hetrt_whole_model_io_count_args_t* args) {
  if (!args->model) return NoModel();
  args->num_inputs = args->model->model->session().NumInputs();
  args->num_outputs = args->model->model->session().NumOutputs();
  return nullptr;
}

hetrt_error_t* IoInfo(hetrt_whole_model_io_info_args_t* args) {
  if (!args->model) return NoModel();
  const hetrt::micro::ModelSession& m = args->model->model->session();
  const auto& list = args->kind == HETRT_IO_INPUT ? m.inputs() : m.outputs();
  if (args->kind != HETRT_IO_INPUT && args->kind != HETRT_IO_OUTPUT)
    return hetrt::sdk::MakeErrorf(HETRT_STATUS_INVALID_ARGUMENT, "micro: io kind %d", args->kind);
  if (args->index < 0 || static_cast<size_t>(args->index) >= list.size())
    return hetrt::sdk::MakeErrorf(HETRT_STATUS_OUT_OF_RANGE, "micro: no %s %d", args->kind ? "output" : "input",
                                  args->index);
  const auto& t = list[static_cast<size_t>(args->index)];
  args->name = t.name.c_str();
  args->dtype = t.dtype;
  args->shape = t.shape.data();
  args->ndim = static_cast<int32_t>(t.shape.size());
  args->nbytes = t.bytes;
  return nullptr;
}

hetrt_error_t* SetInput(hetrt_whole_model_tensor_args_t* args) {
  if (!args->model) return NoModel();
  if (args->data == nullptr && args->nbytes != 0)
    return hetrt::sdk::MakeError(HETRT_STATUS_INVALID_ARGUMENT, "micro: set_input without data");
  const auto* data = static_cast<const uint8_t*>(args->data);
  return ToError(args->model->model->session().SetInput(args->index, {data, static_cast<size_t>(args->nbytes)}));
}

hetrt_error_t* Run(hetrt_whole_model_args_t* args) {
  if (!args->model) return NoModel();
  return ToError(args->model->model->session().Run());
}

hetrt_error_t* GetOutput(hetrt_whole_model_tensor_args_t* args) {
  if (!args->model) return NoModel();
  if (args->data == nullptr && args->nbytes != 0)
    return hetrt::sdk::MakeError(HETRT_STATUS_INVALID_ARGUMENT, "micro: get_output without a buffer");
  auto* data = static_cast<uint8_t*>(args->data);
  return ToError(args->model->model->session().GetOutput(args->index, {data, static_cast<size_t>(args->nbytes)}));
}

hetrt_error_t* Report(hetrt_whole_model_report_args_t* args) {
  if (!args->model) return NoModel();
  auto report = args->model->model->Report();
  if (!report.ok()) return ToError(report.status());
  args->model->report = report->text;
  args->arena_bytes_used = report->arena_used;
  args->arena_bytes_total = report->arena_total;
  args->metadata_bytes = report->metadata_budget;
  args->last_run_instructions = report->instructions;
  args->last_run_device_ns = report->device_ns;
  args->text = args->model->report.c_str();
  return nullptr;
}

hetrt_error_t* ProjectGenerate(hetrt_whole_model_project_args_t* args) {
  if (args->path == nullptr || args->output_dir == nullptr)
    return hetrt::sdk::MakeError(HETRT_STATUS_INVALID_ARGUMENT, "micro: project needs a model and a folder");
  auto summary = hetrt::micro::GenerateProject(args->path, args->output_dir, Options(args->options, args->num_options));
  if (!summary.ok()) return ToError(summary.status().WithContext(args->path));
  args->self->summary = std::move(summary).value();
  args->summary = args->self->summary.c_str();
  return nullptr;
}

hetrt_error_t* ProjectRun(hetrt_whole_model_project_run_args_t* args) {
  if (args->project_dir == nullptr) return hetrt::sdk::MakeError(HETRT_STATUS_INVALID_ARGUMENT, "micro: no folder");
  auto run = hetrt::micro::RunProjectOnQemu(args->project_dir, Options(args->options, args->num_options));
  if (!run.ok()) return ToError(run.status());
  args->self->output = run->output;
  args->exit_code = run->exit_code;
  args->output = args->self->output.c_str();
  return nullptr;
}

hetrt_error_t* Sample(hetrt_whole_model_sample_args_t* args) {
  if (args->dir == nullptr) return hetrt::sdk::MakeError(HETRT_STATUS_INVALID_ARGUMENT, "micro: sample needs a folder");
  auto sample = hetrt::micro::WriteSampleModel(args->dir);
  if (!sample.ok()) return ToError(sample.status());
  hetrt_instance& self = *args->self;
  self.sample = std::move(sample).value();
  self.sample_input = self.sample.input.data();
  self.sample_output = self.sample.expected_output.data();
  args->path = self.sample.path.c_str();
  args->device = "cpu";  // in this process: no board, emulator or device program needed
  args->options = nullptr;
  args->num_options = 0;
  args->inputs = &self.sample_input;
  args->num_inputs = 1;
  args->expected_outputs = &self.sample_output;
  args->num_outputs = 1;
  return nullptr;
}

const char* const kDevices[] = {"micro", "cpu"};
const char* const kTransports[] = {"inproc", "pipe", "serial", "tcp", "qemu"};
const char* const kFormats[] = {"mlf"};

const char* const* BoardNames() {
  static const std::vector<const char*> names = [] {
    std::vector<const char*> out;
    for (const auto& b : hetrt::micro::Boards()) out.push_back(b.name.c_str());
    return out;
  }();
  return names.data();
}

const hetrt_whole_model_api_t* WholeModelTable() {
  static const hetrt_whole_model_api_t table = {
      sizeof(hetrt_whole_model_api_t),
      kDevices,
      2,
      kTransports,
      5,
      BoardNames(),
      hetrt::micro::Boards().size(),
      kFormats,
      1,
      Entry<Accepts>::Call,
      Entry<Create>::Call,
      Entry<Destroy>::Call,
      Entry<IoCount>::Call,
      Entry<IoInfo>::Call,
      Entry<SetInput>::Call,
      Entry<Run>::Call,
      Entry<GetOutput>::Call,
      Entry<Report>::Call,
      Entry<ProjectGenerate>::Call,
      Entry<ProjectRun>::Call,
      Entry<Sample>::Call,
  };
  return &table;
}

}  // namespace

extern "C" HETRT_PLUGIN_EXPORT const hetrt_plugin_api_t* hetrt_plugin_get_api(void) {
  static const hetrt_plugin_api_t api = [] {
    hetrt_plugin_api_t a{};
    a.struct_size = sizeof(hetrt_plugin_api_t);
    a.abi_major = HETRT_PLUGIN_ABI_MAJOR;
    a.abi_minor = HETRT_PLUGIN_ABI_MINOR;
    a.name = "micro";
    a.version = "0.2.0";
    a.error_message = hetrt::sdk::ErrorMessage;
    a.error_destroy = hetrt::sdk::ErrorDestroy;
    a.instance_create = Entry<InstanceCreate>::Call;
    a.instance_destroy = Entry<InstanceDestroy>::Call;
    a.set_option = Entry<SetOption>::Call;
    a.whole_model = WholeModelTable();
    return a;
  }();
  return &api;
}
