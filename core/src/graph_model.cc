#include "hetrt/graph_model.h"

#include "hetrt/byte_stream.h"
#include "hetrt/factory_modules.h"
#include "hetrt/module_loader.h"

namespace hetrt {

Result<GraphModel> OpenGraphModel(const GraphModelFiles& files, GraphExecutor::Options options) {
  GraphModel model;
  LoadOptions load;
  load.plugins = options.plugins;
  HETRT_ASSIGN_OR_RETURN(model.root, LoadModuleFile(files.library, load));
  if (files.graph_json.empty()) {
    auto* factory = dynamic_cast<GraphExecutorFactoryModule*>(model.root.get());
    if (factory == nullptr)
      return InvalidArgument(files.library + ": the root module is '" + model.root->type_key() +
                             "', not a GraphExecutorFactory; pass --graph (and --params) for a lib.so");
    auto executor = factory->CreateExecutor(std::move(options));
    if (!executor.ok()) return executor.status().WithContext(files.library);
    model.executor = std::move(executor).value();
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
  auto executor = GraphExecutor::Create(std::make_shared<const Graph>(std::move(graph).value()),
                                        model.root, std::move(options));
  if (!executor.ok()) return executor.status().WithContext(files.graph_json);
  model.executor = std::move(executor).value();
  return model;
}

}  // namespace hetrt
