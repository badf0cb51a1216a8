#include "hetrt/exec/graph_model.h"

#include "hetrt/sdk/byte_stream.h"
#include "hetrt/exec/aot_executor.h"
#include "hetrt/exec/factory_modules.h"
#include "hetrt/exec/relax_executor.h"
#include "hetrt/module/module_loader.h"

namespace hetrt {

namespace {

// A graph executor over an already loaded library (deploy.so root or lib.so).
Result<GraphModel> CreateGraphModel(std::shared_ptr<Module> root, const GraphModelFiles& files,
                                    GraphExecutor::Options options) {
  GraphModel model;
  model.root = std::move(root);
  if (files.graph_json.empty()) {
    auto* factory = dynamic_cast<GraphExecutorFactoryModule*>(model.root.get());
    if (factory == nullptr)
      return InvalidArgument(files.library + ": the root module is '" + model.root->type_key() +
                             "', not an executor factory, AOT factory or Relax executable; for a lib.so pass --graph "
                             "(and --params), or graph= (and params=) in Python");
    HETRT_ASSIGN_OR_RETURN(model.executor, factory->CreateExecutor(std::move(options)), files.library);
    return model;
  }
  HETRT_ASSIGN_OR_RETURN(auto graph_bytes, ReadFileBytes(files.graph_json));
  const std::string graph_text(graph_bytes.begin(), graph_bytes.end());
  auto graph = ParseGraphJson(graph_text, files.graph_json);
  if (!graph.ok()) return graph.status();
  if (!files.params.empty()) {
    auto params = LoadParamDictFile(files.params);
    if (!params.ok()) return params.status();
    options.params = std::make_shared<const std::vector<NamedTensor>>(std::move(params).value());
  } else {
    options.params = nullptr;
  }
  auto executor =
      GraphExecutor::Create(std::make_shared<const Graph>(std::move(graph).value()), model.root, std::move(options));
  if (!executor.ok()) return executor.status().WithContext(files.graph_json);
  model.executor = std::move(executor).value();
  return model;
}

Result<std::shared_ptr<Module>> LoadRoot(const GraphModelFiles& files, PluginRegistry* plugins) {
  LoadOptions load;
  load.plugins = plugins;
  if (auto prefix = SystemLibPrefix(files.library)) return LoadSystemLib(*prefix, load);
  return LoadModuleFile(files.library, load);
}

}  // namespace

std::optional<std::string> SystemLibPrefix(const std::string& library) {
  constexpr std::string_view kSpelling = "system-lib";
  if (library == kSpelling) return std::string();
  if (library.size() > kSpelling.size() && library.compare(0, kSpelling.size(), kSpelling) == 0 &&
      library[kSpelling.size()] == ':')
    return library.substr(kSpelling.size() + 1);
  return std::nullopt;
}

Result<GraphModel> OpenGraphModel(const GraphModelFiles& files, GraphExecutor::Options options) {
  HETRT_ASSIGN_OR_RETURN(auto root, LoadRoot(files, options.plugins));
  return CreateGraphModel(std::move(root), files, std::move(options));
}

}  // namespace hetrt

namespace hetrt {

Result<std::unique_ptr<Executor>> CreateModelExecutor(std::shared_ptr<Module> root, const GraphModelFiles& files,
                                                      GraphExecutor::Options options) {
  if (files.graph_json.empty() && dynamic_cast<RelaxExecutableModule*>(root.get()) != nullptr) {
    RelaxVirtualMachine::Options vm_options;
    vm_options.devices = options.devices;
    vm_options.plugins = options.plugins;
    HETRT_ASSIGN_OR_RETURN(auto vm, RelaxVirtualMachine::Create(root, std::move(vm_options)), files.library);
    HETRT_ASSIGN_OR_RETURN(auto executor,
                           RelaxExecutor::Create(std::move(vm), files.function.empty() ? "main" : files.function),
                           files.library);
    if (!files.params.empty()) {  // weights passed as parameters, bound once
      HETRT_ASSIGN_OR_RETURN(auto params, LoadParamDictFile(files.params));
      HETRT_RETURN_IF_ERROR(executor->BindParams(params), files.params);
    }
    return std::unique_ptr<Executor>(std::move(executor));
  }
  if (!files.function.empty())
    return InvalidArgument(files.library + ": a function name ('" + files.function +
                           "') goes with a Relax executable; the root module is '" + root->type_key() + "'");
  if (files.graph_json.empty() && dynamic_cast<AotExecutorFactoryModule*>(root.get()) != nullptr) {
    HETRT_ASSIGN_OR_RETURN(auto executor, AotExecutor::Create(root, options.devices, options.plugins), files.library);
    return std::unique_ptr<Executor>(std::move(executor));
  }
  HETRT_ASSIGN_OR_RETURN(GraphModel graph, CreateGraphModel(std::move(root), files, std::move(options)));
  return std::unique_ptr<Executor>(std::move(graph.executor));
}

Result<Model> OpenModel(const GraphModelFiles& files, GraphExecutor::Options options) {
  HETRT_ASSIGN_OR_RETURN(auto root, LoadRoot(files, options.plugins));
  HETRT_ASSIGN_OR_RETURN(auto executor, CreateModelExecutor(root, files, std::move(options)));
  return Model{std::move(root), std::move(executor)};
}

}  // namespace hetrt
