// `hetrt inspect MODEL`: the module tree, exported functions, and a graph summary.
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>

#include "commands.h"
#include "hetrt/base/dtype.h"
#include "hetrt/base/tensor.h"
#include "hetrt/exec/factory_modules.h"
#include "hetrt/exec/open_model.h"
#include "hetrt/formats/graph.h"
#include "hetrt/module/kernel_library.h"
#include "hetrt/module/module_loader.h"
#include "hetrt/relax/vm.h"

namespace hetrt::cli {
namespace {

void PrintTree(const Module& module, int depth, std::set<const Module*>& seen) {
  std::string indent(static_cast<size_t>(depth) * 2, ' ');
  std::string description = module.Describe();
  std::printf("%s- %s%s%s\n", indent.c_str(), module.type_key().c_str(), description.empty() ? "" : ": ",
              description.c_str());
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

void PrintGraphSummary(const GraphExecutorFactoryModule& factory) {
  auto graph = ParseGraphJson(factory.graph_json(), "GraphExecutorFactory");
  if (!graph.ok()) {
    std::printf("graph: invalid: %s\n", graph.status().message().c_str());
    return;
  }
  const Graph& g = *graph;
  size_t ops = 0, copies = 0, nops = 0;
  std::map<std::string, int> kernels;
  for (const auto& n : g.nodes) {
    if (n.kind != GraphNode::Kind::kOp) continue;
    ++ops;
    if (n.func_name == "__copy")
      ++copies;
    else if (n.func_name == "__nop")
      ++nops;
    else
      ++kernels[n.func_name];
  }
  std::printf(
      "graph: %zu nodes (%zu inputs, %zu ops: %zu kernels over %zu functions, %zu __copy, %zu __nop), "
      "%u entries, %u storage ids\n",
      g.nodes.size(), g.arg_nodes.size(), ops, ops - copies - nops, kernels.size(), copies, nops, g.num_entries(),
      g.num_storage());
  std::printf("inputs:\n");
  for (uint32_t nid : g.arg_nodes) {
    const uint32_t eid = g.entry_id(nid, 0);
    const bool is_param = FindParam(*factory.params(), g.nodes[nid].name) != nullptr;
    std::printf("  %s: %s %s%s%s\n", g.nodes[nid].name.c_str(), ShapeToString(g.shapes[eid]).c_str(),
                DataTypeToString(g.dtypes[eid]).c_str(),
                g.device_types.empty() ? "" : (" on " + DeviceTypeName(g.device_types[eid])).c_str(),
                is_param ? " (param)" : "");
  }
  std::printf("outputs:\n");
  for (size_t i = 0; i < g.heads.size(); ++i) {
    const uint32_t eid = g.entry_id(g.heads[i]);
    std::printf("  output_%zu (%s:%u): %s %s\n", i, g.nodes[g.heads[i].node_id].name.c_str(), g.heads[i].index,
                ShapeToString(g.shapes[eid]).c_str(), DataTypeToString(g.dtypes[eid]).c_str());
  }
  std::map<int32_t, std::pair<int, uint64_t>> per_device;  // entries, storage bytes
  std::vector<uint64_t> sid_bytes(g.num_storage(), 0);
  std::vector<int32_t> sid_device(g.num_storage(), kDLCPU);
  for (uint32_t e = 0; e < g.num_entries(); ++e) {
    const int32_t dev = g.device_types.empty() ? kDLCPU : g.device_types[e];
    ++per_device[dev].first;
    sid_bytes[g.storage_ids[e]] = std::max(sid_bytes[g.storage_ids[e]], g.entry_bytes(e));
    sid_device[g.storage_ids[e]] = dev;
  }
  for (size_t sid = 0; sid < sid_bytes.size(); ++sid) per_device[sid_device[sid]].second += sid_bytes[sid];
  std::printf("devices%s:\n", g.device_types.empty() ? " (no device_index: all on the first device)" : "");
  for (const auto& [dev, v] : per_device) {
    // A model is inspected where it may not run: say why a device is missing.
    auto plugin = dev == kDLCPU ? Result<Plugin*>(nullptr)
                                : PluginRegistry::Global().ForDevice({static_cast<DLDeviceType>(dev), 0});
    std::printf("  %s: %d entries, %llu bytes of storage%s\n", DeviceTypeName(dev).c_str(), v.first,
                static_cast<unsigned long long>(v.second),
                plugin.ok() ? "" : ("; not available here: " + plugin.status().message()).c_str());
  }
  std::printf("ops:\n");
  for (const auto& [name, count] : kernels) std::printf("  %s x%d\n", name.c_str(), count);
}

// Which TVM release family wrote the file, and the calling convention its
// functions use, from the root's type_key (docs/tvm-ffi.md (a)).
std::string FormatOf(const Module& root) {
  const std::string& key = root.type_key();
  if (auto* relax = dynamic_cast<const RelaxExecutableModule*>(&root)) {
    const RelaxExecutable& exe = *relax->executable();
    if (exe.abi == LibraryAbi::kTvmFfi)
      return std::string("TVM ") + (exe.v2 ? "v0.23+" : "v0.22") + " Relax VM executable (tvm-ffi ABI, " +
             (exe.v2 ? "V2" : "V1") + " image)";
    if (key == RelaxExecutableModule::kTypeKey) return "TVM v0.14-v0.19 Relax VM executable (packed-function ABI)";
    return "TVM v0.20 Relax VM executable (packed-function ABI)";
  }
  if (key == "GraphExecutorFactory" || key == "AotExecutorFactory")
    return "TVM v0.19 or older " + key + " (packed-function ABI)";
  if (key == "library") return "host library without a blob (packed-function ABI)";
  return key;
}

// A library of tvm-ffi kernels (no model): its kernels, with the signature
// and documentation the library itself gives.
int PrintKernelLibrary(const std::string& path) {
  auto library = KernelLibrary::Open(path);
  if (!library.ok()) return Fail(library.status().message());
  const std::vector<std::string>& names = (*library)->names();
  std::printf("%s\nformat: tvm-ffi kernel library (TVM v0.22+ ABI or a foreign compiler's; no model blob): %zu kernels\n",
              path.c_str(), names.size());
  for (const std::string& name : names) {
    std::printf("  %s", name.c_str());
    auto metadata = (*library)->Metadata(name);
    if (!metadata.ok()) {
      std::printf("  (metadata: %s)", metadata.status().message().c_str());
    } else if (!metadata->empty()) {
      std::printf("  %s", metadata->c_str());
    }
    auto doc = (*library)->Doc(name);
    if (doc.ok() && !doc->empty()) std::printf("\n    %s", doc->c_str());
    std::printf("\n");
  }
  return 0;
}

}  // namespace

Command AddInspectCommand(CLI::App& app) {
  auto* cmd = app.add_subcommand("inspect", "Print a model's module tree and graph summary, or a kernel library's kernels");
  auto model = std::make_shared<std::string>();
  cmd->add_option("MODEL", *model, "exported library (.so), or a language model's folder")->required();
  return [model] {
    if (IsKernelLibraryFile(*model)) return PrintKernelLibrary(*model);
    std::string library = *model, weights;
    if (IsLlmModelFolder(*model)) {  // the folder's one library, and its weights
      auto found = LlmLibraryIn(*model);
      if (!found.ok()) return Fail(found.status().message());
      library = *found;
      weights = LlmWeightsFolder(*model);
    } else {
      weights = LlmWeightsFolder(std::filesystem::path(*model).parent_path().string());
    }
    LoadOptions options;
    options.keep_unloadable = true;  // show the tree even without every plugin
    auto root = LoadModuleFile(library, options);
    if (!root.ok()) return Fail(root.status().message());
    std::printf("%s\nformat: %s\nmodule tree:\n", library.c_str(), FormatOf(**root).c_str());
    std::set<const Module*> seen;
    PrintTree(**root, 1, seen);
    if (auto* factory = dynamic_cast<GraphExecutorFactoryModule*>(root->get())) PrintGraphSummary(*factory);
    if (auto* relax = dynamic_cast<RelaxExecutableModule*>(root->get())) {
      PrintRelaxSummary(*relax);
      bool llm = false;
      for (const RelaxFunction& f : relax->executable()->functions)
        llm |= f.name == "create_tir_paged_kv_cache" || f.name == "create_flashinfer_paged_kv_cache";
      if (llm) PrintLlmSummary(library, weights);
    }
    return 0;
  };
}

}  // namespace hetrt::cli
