// `hetrt plugins`: what is installed, what it serves, and why a device is missing.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "commands.h"
#include "hetrt/base/dtype.h"
#include "hetrt/plugin_host/plugin_registry.h"

namespace hetrt::cli {

namespace {

// Loads one plugin file in a child process: a plugin that crashes or hangs in
// instance_create or a device query is named instead of taking `hetrt` down.
// Returns "" when it loaded, else why not.
std::string CheckInChildProcess(const std::string& file) {
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) return std::string("cannot fork to check it: ") + std::strerror(errno);
  if (pid == 0) {
    PluginRegistry::Options options;
    options.search_paths = {file};
    auto registry = PluginRegistry::Discover(options);
    for (const auto& plugin : registry->plugins())
      for (int32_t type : plugin->device_types()) (void)plugin->CountDevices(type);
    std::_Exit(0);
  }
  constexpr int kTimeoutMs = 20000;
  int status = 0;
  for (int waited = 0;; waited += 10) {
    const pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (done < 0) return std::string("waitpid failed: ") + std::strerror(errno);
    if (waited >= kTimeoutMs) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return "did not finish loading within " + std::to_string(kTimeoutMs / 1000) + " s (killed)";
    }
    usleep(10000);
  }
  if (WIFSIGNALED(status))
    return "crashed while loading: killed by signal " + std::to_string(WTERMSIG(status)) + " (" +
           strsignal(WTERMSIG(status)) + ")";
  if (WIFEXITED(status) && WEXITSTATUS(status) != 0)
    return "exited with status " + std::to_string(WEXITSTATUS(status)) + " while loading";
  return "";
}

}  // namespace

Command AddPluginsCommand(CLI::App& app) {
  auto* cmd = app.add_subcommand("plugins", "List the plugins found, their devices and module types");
  auto check = std::make_shared<bool>(false);
  cmd->add_flag("--check", *check, "load each plugin in a child process first, so one that crashes is named");
  return [check] {
    std::unique_ptr<PluginRegistry> checked;
    std::vector<PluginProblem> crashed;
    if (*check) {
      std::vector<std::string> safe;
      for (const std::string& file : PluginRegistry::CandidateFiles(PluginRegistry::DefaultSearchPaths())) {
        std::string why = CheckInChildProcess(file);
        if (why.empty())
          safe.push_back(file);
        else
          crashed.push_back({file, why});
      }
      PluginRegistry::Options options;
      options.search_paths = safe.empty() ? std::vector<std::string>{"/nonexistent"} : safe;
      checked = PluginRegistry::Discover(options);
    }
    PluginRegistry& registry = checked ? *checked : PluginRegistry::Global();
    std::printf("search path:\n");
    // With --check the parent loads nothing it has not checked: not even the global registry.
    for (const auto& p : checked ? PluginRegistry::DefaultSearchPaths() : registry.search_paths())
      std::printf("  %s\n", p.c_str());
    std::printf("plugins:\n");
    if (registry.plugins().empty()) std::printf("  (none)\n");
    for (const auto& plugin : registry.plugins()) {
      std::printf("  %s %s (ABI %s) %s\n", plugin->name().c_str(), plugin->version().c_str(),
                  plugin->abi_version().c_str(), plugin->path().c_str());
      for (int32_t type : plugin->device_types()) {
        auto count = plugin->CountDevices(type);
        if (!count.ok()) {
          std::printf("    device %s: error: %s\n", DeviceTypeName(type).c_str(), count.status().message().c_str());
          continue;
        }
        std::printf("    device %s: %d device(s)", DeviceTypeName(type).c_str(), count->count);
        if (count->count == 0)
          std::printf(" - %s",
                      count->unavailable_reason.empty() ? "no reason given" : count->unavailable_reason.c_str());
        std::printf("\n");
        for (int32_t id = 0; id < count->count; ++id) {
          const DLDevice device{static_cast<DLDeviceType>(type), id};
          std::printf("      %s: %s\n", DeviceToString(device).c_str(), plugin->DeviceName(device).c_str());
          // What the asynchronous executor uses: shared memory turns copies into memcpys.
          std::string traits;
          if (plugin->SharesHostMemory(device)) traits += "shares host memory";
          if (auto streams = plugin->AttributeInt(device, HETRT_DEVICE_ATTR_COPY_STREAMS);
              streams.ok() && *streams == 1)
            traits += std::string(traits.empty() ? "" : ", ") + "copy streams";
          if (auto total = plugin->AttributeInt(device, HETRT_DEVICE_ATTR_TOTAL_MEMORY); total.ok() && *total > 0)
            traits += std::string(traits.empty() ? "" : ", ") + std::to_string(*total >> 20) + " MiB";
          if (!traits.empty()) std::printf("        %s\n", traits.c_str());
        }
      }
      auto keys = plugin->type_keys();
      if (!keys.empty()) {
        std::printf("    type_keys:");
        for (const auto& k : keys) std::printf(" %s", k.c_str());
        std::printf("\n");
      }
      if (plugin->RunsWholeModels()) {  // ABI 2.1: runs whole models on devices it drives itself
        auto join = [](const std::vector<std::string>& names) {
          std::string out;
          for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
          return out.empty() ? std::string("(none)") : out;
        };
        std::printf("    whole models (%s) on devices: %s\n", join(plugin->whole_model_formats()).c_str(),
                    join(plugin->whole_model_devices()).c_str());
        std::printf("      transports: %s\n", join(plugin->whole_model_transports()).c_str());
        std::printf("      boards: %s\n", join(plugin->whole_model_boards()).c_str());
      }
      if (auto threads = plugin->NumThreads(); threads.ok())
        std::printf("    parallel launch: %d thread(s)\n", *threads);
    }
    std::vector<PluginProblem> problems = crashed;
    for (const auto& p : registry.problems())
      if (!(checked && p.path == "/nonexistent")) problems.push_back(p);
    if (!problems.empty()) {
      std::printf("not used:\n");
      for (const auto& problem : problems) std::printf("  %s: %s\n", problem.path.c_str(), problem.reason.c_str());
    }
    return 0;
  };
}

}  // namespace hetrt::cli
