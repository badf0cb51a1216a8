// `hetrt plugins`: what is installed, what it serves, and why a device is missing.
#include <cstdio>

#include "commands.h"
#include "hetrt/dtype.h"
#include "hetrt/plugin_registry.h"

namespace hetrt::cli {

Command AddPluginsCommand(CLI::App& app) {
  app.add_subcommand("plugins", "List the plugins found, their devices and module types");
  return [] {
    PluginRegistry& registry = PluginRegistry::Global();
    std::printf("search path:\n");
    for (const auto& p : registry.search_paths()) std::printf("  %s\n", p.c_str());
    std::printf("plugins:\n");
    if (registry.plugins().empty()) std::printf("  (none)\n");
    for (const auto& plugin : registry.plugins()) {
      const auto* api = plugin->api();
      std::printf("  %s %s (ABI %u.%u) %s\n", plugin->name().c_str(), plugin->version().c_str(),
                  api->abi_major, api->abi_minor, plugin->path().c_str());
      for (int32_t type : plugin->device_types()) {
        auto count = plugin->CountDevices(type);
        if (!count.ok()) {
          std::printf("    device %s: error: %s\n", DeviceTypeName(type).c_str(),
                      count.status().message().c_str());
          continue;
        }
        std::printf("    device %s: %d device(s)", DeviceTypeName(type).c_str(), count->count);
        if (count->count == 0)
          std::printf(" - %s", count->unavailable_reason.empty() ? "no reason given"
                                                                 : count->unavailable_reason.c_str());
        std::printf("\n");
        for (int32_t id = 0; id < count->count; ++id) {
          const DLDevice device{static_cast<DLDeviceType>(type), id};
          std::printf("      %s: %s\n", DeviceToString(device).c_str(), plugin->DeviceName(device).c_str());
          // What the asynchronous executor uses: shared memory turns copies into memcpys.
          std::string traits;
          if (plugin->SharesHostMemory(device)) traits += "shares host memory";
          if (auto streams = plugin->AttributeInt(device, HETRT_DEVICE_ATTR_COPY_STREAMS); streams.ok() && *streams == 1)
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
      if (const auto* par = plugin->parallel_api(); par && par->num_threads) {
        auto args = AbiArgs<hetrt_parallel_num_threads_args_t>();
        args.self = plugin->instance();
        if (plugin->Consume(par->num_threads(&args)).ok())
          std::printf("    parallel launch: %d thread(s)\n", args.num_threads);
      }
    }
    if (!registry.problems().empty()) {
      std::printf("not used:\n");
      for (const auto& problem : registry.problems())
        std::printf("  %s: %s\n", problem.path.c_str(), problem.reason.c_str());
    }
    return 0;
  };
}

}  // namespace hetrt::cli
