// `hetrt run MODEL`: load, bind inputs, run, print (and save) the outputs.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <numeric>

#include "commands.h"
#include "hetrt/base/dtype.h"
#include "hetrt/exec/open_model.h"
#include "hetrt/exec/relax_executor.h"
#include "hetrt/exec/whole_model_executor.h"
#include "hetrt/formats/npy.h"
#include "hetrt/formats/params.h"

namespace hetrt::cli {
namespace {

struct RunArgs : ModelArgs {
  std::string save_outputs;
  std::vector<std::string> input_files;
  // For a whole-model device (a plugin that runs the model file itself).
  std::string transport, board;
  std::vector<std::string> device_options;
  int repeat = 1;
  int threads = 0;
};

std::string FirstValues(const Tensor& t, int count) {
  std::string s;
  const int64_t n = std::min<int64_t>(t.num_elements(), count);
  char buf[48];
  for (int64_t i = 0; i < n; ++i) {
    const DLDataType d = t.dtype();
    if (d.code == kDLFloat && d.bits == 32)
      std::snprintf(buf, sizeof buf, "%.6g", t.data_as<float>()[i]);
    else if (d.code == kDLFloat && d.bits == 64)
      std::snprintf(buf, sizeof buf, "%.6g", t.data_as<double>()[i]);
    else if (d.code == kDLInt && d.bits == 32)
      std::snprintf(buf, sizeof buf, "%d", t.data_as<int32_t>()[i]);
    else if (d.code == kDLInt && d.bits == 64)
      std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(t.data_as<int64_t>()[i]));
    else if (d.bits == 8)
      std::snprintf(buf, sizeof buf, "%d", d.code == kDLInt ? t.data_as<int8_t>()[i] : t.data_as<uint8_t>()[i]);
    else
      return "(" + DataTypeToString(d) + ")";
    s += (i ? ", " : "") + std::string(buf);
  }
  if (t.num_elements() > n) s += ", ...";
  return s;
}

int Run(const RunArgs& args) {
  WarnAboutUnusedPlugins();
  if (!args.params.empty() && args.graph.empty())
    return Fail("--params goes with --graph (a deploy.so carries its own params)");
  ModelSpec spec{args.model, args.graph, args.params, args.function, args.devices};
  if (!args.transport.empty()) spec.device_options.emplace_back("transport", args.transport);
  if (!args.board.empty()) spec.device_options.emplace_back("board", args.board);
  for (const std::string& kv : args.device_options) {
    const size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) return Fail("--device-option takes KEY=VALUE, got '" + kv + "'");
    spec.device_options.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
  }
  spec.sequential = args.sequential;
  spec.staged_copies = args.staged_copies;
  if (args.threads > 0) {
    auto cpu = PluginRegistry::Global().ForDeviceType(kDLCPU);
    if (!cpu.ok()) return Fail(cpu.status().message());
    Status s = (*cpu)->SetOption("num_threads", std::to_string(args.threads));
    if (!s.ok()) return Fail(s.message());
  }
  auto model = OpenModel(spec);
  if (!model.ok()) return Fail(model.status().message());
  Executor* executor = model->executor.get();
  auto* whole = dynamic_cast<WholeModelExecutor*>(executor);
  Executor& ex = *executor;

  std::vector<bool> bound(static_cast<size_t>(ex.NumInputs()), false);
  for (int i = 0; i < ex.NumInputs(); ++i) bound[static_cast<size_t>(i)] = true;
  for (int i : ex.UnboundInputs()) bound[static_cast<size_t>(i)] = false;
  auto bind = [&](const std::string& name, const Tensor& value, const std::string& from) -> bool {
    const int index = ex.InputIndex(name);
    if (index < 0) return true;  // like load_params: names that are not inputs are ignored
    Status s = ex.SetInput(index, value);
    if (!s.ok()) {
      Fail(from + ": " + s.message());
      return false;
    }
    bound[static_cast<size_t>(index)] = true;
    return true;
  };
  for (const std::string& file : args.inputs) {
    auto inputs = LoadParamDictFile(file);
    if (!inputs.ok()) return Fail(inputs.status().message());
    for (const auto& p : *inputs)
      if (!bind(p.name, p.tensor, file)) return 1;
  }
  for (const std::string& spec : args.input_files) {
    auto eq = spec.find('=');
    if (eq == std::string::npos || eq == 0) return Fail("--input takes NAME=FILE.npy, got '" + spec + "'");
    const std::string name = spec.substr(0, eq), path = spec.substr(eq + 1);
    if (ex.InputIndex(name) < 0) return Fail("--input " + name + ": the model has no input named '" + name + "'");
    auto tensor = LoadNpyFile(path);
    if (!tensor.ok()) return Fail(tensor.status().message());
    if (!bind(name, *tensor, path)) return 1;
  }
  for (int i = 0; i < ex.NumInputs(); ++i)
    if (!bound[static_cast<size_t>(i)]) {
      // A Relax function's inputs have no storage before they are given.
      if (dynamic_cast<RelaxExecutor*>(&ex) != nullptr)
        return Fail(args.model + ": input '" + ex.InputName(i) + "' was not given (--inputs FILE.params or --input " +
                    ex.InputName(i) + "=FILE.npy)");
      std::fprintf(stderr, "hetrt: warning: input '%s' was not given; it holds whatever the memory held\n",
                   ex.InputName(i).c_str());
    }

  std::vector<double> ms;
  for (int r = 0; r < std::max(1, args.repeat); ++r) {
    const auto start = std::chrono::steady_clock::now();
    Status s = ex.Run();
    if (s.ok()) s = ex.Synchronize();  // time the device work, not just its enqueueing
    const auto end = std::chrono::steady_clock::now();
    if (!s.ok()) return Fail(args.model + ": " + s.message());
    ms.push_back(std::chrono::duration<double, std::milli>(end - start).count());
  }
  std::vector<NamedTensor> outputs;
  for (int i = 0; i < ex.NumOutputs(); ++i) {
    auto out = ex.GetOutput(i);
    if (!out.ok()) return Fail(out.status().message());
    std::printf("output_%d (%s): shape %s %s [%s]\n", i, ex.OutputName(i).c_str(), ShapeToString(out->shape()).c_str(),
                DataTypeToString(out->dtype()).c_str(), FirstValues(*out, 8).c_str());
    outputs.push_back({"output_" + std::to_string(i), std::move(out).value()});
  }
  std::vector<double> sorted = ms;
  std::sort(sorted.begin(), sorted.end());
  auto fmt = [](double v) {
    char buf[32];
    if (v < 1.0)
      std::snprintf(buf, sizeof buf, "%.2f us", v * 1000.0);
    else
      std::snprintf(buf, sizeof buf, "%.3f ms", v);
    return std::string(buf);
  };
  std::printf("time per run: mean %s, median %s, min %s over %zu run(s)\n",
              fmt(std::accumulate(ms.begin(), ms.end(), 0.0) / static_cast<double>(ms.size())).c_str(),
              fmt(sorted[sorted.size() / 2]).c_str(), fmt(sorted.front()).c_str(), ms.size());
  if (whole != nullptr) {
    auto report = whole->GetReport();
    std::printf("%s\n", report.ok() ? report->text.c_str() : report.status().message().c_str());
  }
  if (!args.save_outputs.empty()) {
    auto bytes = WriteParamDict(outputs);
    if (!bytes.ok()) return Fail(bytes.status().message());
    Status s = WriteFileBytes(args.save_outputs, *bytes);
    if (!s.ok()) return Fail(s.message());
    std::printf("saved %zu output(s) to %s\n", outputs.size(), args.save_outputs.c_str());
  }
  return 0;
}

}  // namespace

Command AddRunCommand(CLI::App& app) {
  auto args = std::make_shared<RunArgs>();
  auto* cmd = AddModelCommand(app, "run", "Run a model (graph, AOT, Relax VM, MLF) and print its outputs", *args,
                              "deploy.so, lib.so with --graph, or a model file a whole-model plugin runs (MLF .tar)");
  cmd->add_option("--input", args->input_files, "NAME=FILE.npy, repeatable");
  cmd->add_option("--transport", args->transport,
                  "whole-model device (micro): pipe, qemu, tcp:HOST:PORT, serial:PATH[,BAUD]");
  cmd->add_option("--board", args->board, "whole-model device (micro): an emulated board, e.g. mps2-an386");
  cmd->add_option("--device-option", args->device_options, "KEY=VALUE for the whole-model device's plugin, repeatable");
  cmd->add_option("--save-outputs", args->save_outputs, "write outputs as a param dict (output_0, ...)");
  cmd->add_option("--repeat", args->repeat, "runs to time")->check(IntInRange("--repeat", 1, 100000000));
  cmd->add_option("--threads", args->threads, "CPU threads for parallel kernels")
      ->check(IntInRange("--threads", 1, 1024));
  return [args] { return Run(*args); };
}

}  // namespace hetrt::cli
