// hetrt: run, inspect and benchmark TVM-compiled models on mixed hardware.
#include <cstdio>
#include <map>

#include "commands.h"
#include "hetrt/plugin_host/plugin_registry.h"

namespace hetrt::cli {

CLI::App* AddModelCommand(CLI::App& app, const std::string& name, const std::string& description, ModelArgs& args,
                          const std::string& model_help) {
  CLI::App* cmd = app.add_subcommand(name, description);
  cmd->add_option("MODEL", args.model, model_help)->required();
  cmd->add_option("--graph", args.graph, "graph.json (with a lib.so)");
  cmd->add_option("--params", args.params, "params file (with --graph)");
  cmd->add_option("--inputs", args.inputs,
                  "param-dict file of inputs, matched by name to the model's inputs; repeatable (files merge, so "
                  "weights can stay in a file of their own)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd->add_option("--function", args.function, "Relax executables: the function to run (default main)");
  cmd->add_option("--device", args.devices, "cpu[:N], opencl[:N], ...; repeatable, in order")->take_all();
  cmd->add_flag("--sequential", args.sequential, "one node at a time, every copy blocking (TVM's order)");
  cmd->add_flag("--staged-copies", args.staged_copies,
                "copies through the plugin even where a device shares host memory");
  return cmd;
}

int Fail(const std::string& message) {
  std::fprintf(stderr, "hetrt: error: %s\n", message.c_str());
  return 1;
}

void WarnAboutUnusedPlugins() {
  const auto& problems = PluginRegistry::Global().problems();
  if (problems.empty()) return;
  std::string line;
  for (const auto& p : problems) {
    if (!line.empty()) line += "; ";
    line.append(p.path).append(": ");
    if (p.reason.size() > 80)
      line.append(p.reason, 0, 77).append("...");
    else
      line += p.reason;
  }
  std::fprintf(stderr, "hetrt: warning: plugin path entries not used: %s (see `hetrt plugins`)\n", line.c_str());
}

CLI::Validator IntInRange(const std::string& option, int64_t min, int64_t max) {
  return CLI::Validator(
      [option, min, max](std::string& text) -> std::string {
        int64_t value = 0;
        if (!CLI::detail::lexical_cast(text, value) || value < min || value > max)
          return option + " must be an integer between " + std::to_string(min) + " and " + std::to_string(max) +
                 ", got '" + text + "'";
        return {};
      },
      "INT in [" + std::to_string(min) + ", " + std::to_string(max) + "]");
}

Result<std::vector<DLDevice>> ParseDeviceList(const std::vector<std::string>& names,
                                              const std::vector<std::string>& handled_elsewhere) {
  std::vector<DLDevice> devices;
  for (const std::string& name : names) {
    bool skip = false;
    for (const std::string& other : handled_elsewhere) skip |= name == other;
    if (skip) continue;
    HETRT_ASSIGN_OR_RETURN(DLDevice device, ParseDevice(name));
    devices.push_back(device);
  }
  return devices;
}

}  // namespace hetrt::cli

int main(int argc, char** argv) {
  using namespace hetrt::cli;
  CLI::App app{"hetrt: a runtime for TVM-compiled models on CPUs, GPUs and microcontrollers"};
  app.require_subcommand(1);
  std::map<CLI::App*, Command> commands;
  auto add = [&](Command (*adder)(CLI::App&)) {
    Command command = adder(app);
    commands[app.get_subcommands({}).back()] = std::move(command);
  };
  add(&AddInspectCommand);
  add(&AddPluginsCommand);
  add(&AddRunCommand);
  add(&AddExportCommand);
  add(&AddDemoCommand);
  add(&AddMlfCommand);
  add(&AddMicroCommand);
  add(&AddServeCommand);
  add(&AddBenchCommand);
  add(&AddGenerateCommand);
  CLI11_PARSE(app, argc, argv);
  // The last line of defence: every error should already be a message, but an
  // exception that escapes a command still ends as one, never as an abort.
  try {
    for (CLI::App* sub : app.get_subcommands()) return commands.at(sub)();
  } catch (const std::bad_alloc&) {
    return Fail("out of memory (an input asked for more than this machine has; this is a bug worth reporting)");
  } catch (const std::exception& e) {
    return Fail(std::string("unexpected error: ") + e.what());
  } catch (...) {
    return Fail("unexpected error");
  }
  return 1;
}
