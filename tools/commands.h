// Sub-commands of the `hetrt` CLI. Each registers its options on the app and
// returns the function that runs it (exit code; errors already printed).
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <vector>

#include "hetrt/base/dtype.h"

namespace hetrt {
class RelaxExecutableModule;
class RelaxExecutor;
}

namespace hetrt::cli {

using Command = std::function<int()>;

Command AddInspectCommand(CLI::App& app);
Command AddPluginsCommand(CLI::App& app);
Command AddRunCommand(CLI::App& app);
Command AddExportCommand(CLI::App& app);
Command AddDemoCommand(CLI::App& app);
Command AddMlfCommand(CLI::App& app);
Command AddMicroCommand(CLI::App& app);
Command AddBenchCommand(CLI::App& app);
Command AddServeCommand(CLI::App& app);
Command AddGenerateCommand(CLI::App& app);

// An integer option in [min, max] with a message that says so in words
// ("--threads must be between 1 and 1024, got 0").
CLI::Validator IntInRange(const std::string& option, int64_t min, int64_t max);

// `hetrt inspect`'s part for a Relax executable: functions, constants,
// bytecode, and the builtins and kernels each function calls.
void PrintRelaxSummary(const RelaxExecutableModule& module);
// `hetrt inspect`'s part for a language model: functions, metadata, KV cache,
// weight records (`weights`: its tensor-cache folder, "" when unknown).
void PrintLlmSummary(const std::string& library, const std::string& weights);
// `hetrt bench`'s part for a language-model folder.
int BenchLlm(const std::string& model_dir, const std::string& device, int repeat, int warmup, const std::string& trace);
// `hetrt bench`'s part for a Relax executable (inputs already set).
int BenchRelax(RelaxExecutor& executor, int repeat, int warmup, const std::string& trace);

// One warning line on stderr when the global registry could not use some
// plugin path entry (a missing folder, a file that is not a plugin, an ABI
// mismatch); `hetrt plugins` has the details.
void WarnAboutUnusedPlugins();

// What `run` and `bench` share: the model files, inputs, devices and executor mode.
struct ModelArgs {
  std::string model, graph, params, function;
  std::vector<std::string> inputs;  // param-dict files, merged in order
  std::vector<std::string> devices{"cpu"};
  bool sequential = false, staged_copies = false;
};
// A sub-command running a model: registers MODEL, --graph, --params, --inputs, --function,
// --device, --sequential and --staged-copies into `args`.
CLI::App* AddModelCommand(CLI::App& app, const std::string& name, const std::string& description, ModelArgs& args,
                          const std::string& model_help);

// Order statistics of timings (`hetrt bench`): the value at fraction p (0..1), and the mean.
double Percentile(std::vector<double> values, double p);
double Mean(const std::vector<double>& values);

// Prints "hetrt: error: <message>" to stderr and returns 1.
int Fail(const std::string& message);

// --device values ("cpu", "opencl:1", ...) as DLDevices; names in `handled_elsewhere`
// (e.g. "micro") are skipped.
Result<std::vector<DLDevice>> ParseDeviceList(const std::vector<std::string>& names,
                                              const std::vector<std::string>& handled_elsewhere = {});

}  // namespace hetrt::cli
