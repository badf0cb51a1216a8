#include "hetrt/exec/open_model.h"

#include <algorithm>
#include <filesystem>
#include "hetrt/base/dtype.h"

#include "hetrt/exec/whole_model_executor.h"
#include "hetrt/module/module_loader.h"
#include "hetrt/relax/tensor_cache.h"

namespace hetrt {

std::string LlmWeightsFolder(const std::string& folder) {
  namespace fs = std::filesystem;
  for (const fs::path& dir : {fs::path(folder), fs::path(folder) / "params"})
    if (!TensorCacheIndex::IndexFileIn(dir.string()).empty()) return dir.string();
  return "";
}

bool IsLlmModelFolder(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_directory(path, ec) && !LlmWeightsFolder(path).empty();
}

Result<std::string> LlmLibraryIn(const std::string& folder) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::vector<std::string> found;
  for (const auto& entry : fs::directory_iterator(folder, ec))
    if (entry.is_regular_file() && entry.path().extension() == ".so") found.push_back(entry.path().string());
  if (found.size() == 1) return found[0];
  std::sort(found.begin(), found.end());
  std::string names;
  for (const std::string& f : found) names += " " + fs::path(f).filename().string();
  return InvalidArgument("model folder '" + folder + "' must hold one library (.so), found " +
                         std::to_string(found.size()) + (names.empty() ? "" : ":" + names));
}

Result<std::unique_ptr<RelaxVirtualMachine>> OpenRelaxVm(const std::string& library, std::vector<DLDevice> devices,
                                                         PluginRegistry* plugins) {
  LoadOptions load;
  load.plugins = plugins;
  HETRT_ASSIGN_OR_RETURN(auto root, LoadModuleFile(library, load));
  RelaxVirtualMachine::Options options;
  options.devices = std::move(devices);
  options.plugins = plugins;
  HETRT_ASSIGN_OR_RETURN(auto vm, RelaxVirtualMachine::Create(std::move(root), std::move(options)), library);
  return vm;
}

Result<Model> OpenModel(const ModelSpec& spec) {
  if (IsLlmModelFolder(spec.path))
    return InvalidArgument("'" + spec.path +
                           "' is a language model (a library beside a tensor cache): run it with "
                           "`hetrt generate`, Python's hetrt.llm.Engine or serve it with `hetrt serve`");
  const PluginRegistry& registry = spec.plugins ? *spec.plugins : PluginRegistry::Global();
  // A model file that a whole-model plugin runs on the one device named.
  std::string why_not_whole;
  if (spec.graph_json.empty() && spec.devices.size() == 1) {
    auto found = registry.ForWholeModel(spec.path, spec.devices[0]);
    if (found.ok()) {
      HETRT_ASSIGN_OR_RETURN(auto executor, WholeModelExecutor::Open(spec.path, spec.devices[0], spec.device_options,
                                                                     registry));
      return Model{nullptr, std::move(executor)};
    }
    // Said only where no device plugin serves the name either (a deploy.so on
    // "cpu" fails with the loader's own message).
    auto as_device = ParseDevice(spec.devices[0]);
    const bool device_plugin = as_device.ok() && registry.PluginOfDeviceType(as_device->device_type) != nullptr;
    if (!device_plugin && registry.ForWholeModelDevice(spec.devices[0]).ok()) why_not_whole = found.status().message();
  }
  const std::string whole_hint = why_not_whole.empty() ? "" : " (whole-model devices: " + why_not_whole + ")";
  if (!spec.device_options.empty())
    return InvalidArgument("device options (transport, board, ...) go with a whole-model device" +
                           (why_not_whole.empty() ? std::string() : ": " + why_not_whole));
  GraphExecutor::Options options;
  options.devices.clear();
  for (const std::string& name : spec.devices) {
    auto device = ParseDevice(name);
    if (!device.ok()) return Status(device.status().code(), device.status().message() + whole_hint);
    options.devices.push_back(*device);
  }
  if (options.devices.empty()) options.devices.push_back({kDLCPU, 0});
  options.sequential = spec.sequential;
  options.staged_copies = spec.staged_copies;
  options.plugins = spec.plugins;
  auto model = OpenModel(GraphModelFiles{spec.path, spec.graph_json, spec.params, spec.function}, options);
  if (!model.ok()) return Status(model.status().code(), model.status().message() + whole_hint);
  return model;
}

}  // namespace hetrt
