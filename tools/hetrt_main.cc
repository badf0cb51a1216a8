// hetrt: run, inspect and benchmark TVM-compiled models on mixed hardware.
#include <cstdio>
#include <map>

#include "commands.h"

namespace hetrt::cli {

int Fail(const std::string& message) {
  std::fprintf(stderr, "hetrt: error: %s\n", message.c_str());
  return 1;
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
  add(&AddBenchCommand);
  CLI11_PARSE(app, argc, argv);
  for (CLI::App* sub : app.get_subcommands()) return commands.at(sub)();
  return 1;
}
