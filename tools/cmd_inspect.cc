// `hetrt inspect MODEL`: the module tree, exported functions, and a graph summary.
#include <cstdio>
#include <set>

#include "commands.h"
#include "hetrt/factory_modules.h"
#include "hetrt/module_loader.h"

namespace hetrt::cli {
namespace {

void PrintTree(const Module& module, int depth, std::set<const Module*>& seen) {
  std::string indent(static_cast<size_t>(depth) * 2, ' ');
  std::string description = module.Describe();
  std::printf("%s- %s%s%s\n", indent.c_str(), module.type_key().c_str(),
              description.empty() ? "" : ": ", description.c_str());
  if (!seen.insert(&module).second) {
    std::printf("%s  (shown above)\n", indent.c_str());
    return;
  }
  auto names = module.ListFunctionNames();
  if (!names.empty()) {
    std::printf("%s  functions (%zu):", indent.c_str(), names.size());
    for (const auto& n : names) std::printf(" %s", n.c_str());
    std::printf("\n");
  }
  for (const auto& import : module.imports()) PrintTree(*import, depth + 1, seen);
}

}  // namespace

Command AddInspectCommand(CLI::App& app) {
  auto* cmd = app.add_subcommand("inspect", "Print a model's module tree and graph summary");
  auto model = std::make_shared<std::string>();
  cmd->add_option("MODEL", *model, "exported library (.so)")->required();
  return [model] {
    LoadOptions options;
    options.keep_unloadable = true;  // show the tree even without every plugin
    auto root = LoadModuleFile(*model, options);
    if (!root.ok()) return Fail(root.status().message());
    std::printf("%s\nmodule tree:\n", model->c_str());
    std::set<const Module*> seen;
    PrintTree(**root, 1, seen);
    return 0;
  };
}

}  // namespace hetrt::cli
