#include "hetrt/exec/factory_modules.h"

#include "hetrt/module/module_loader.h"
#include "hetrt/sdk/ndarray_format.h"

namespace hetrt {
namespace {

// The module loader learns the factory types from here, when the core loads.
[[maybe_unused]] const bool g_factory_loaders_registered = [] {
  RegisterCoreLoader("GraphExecutorFactory", &GraphExecutorFactoryModule::Load);
  RegisterCoreLoader("GraphRuntimeFactory", &GraphExecutorFactoryModule::Load);  // legacy name
  RegisterCoreLoader("AotExecutorFactory", &AotExecutorFactoryModule::Load);
  return true;
}();

// u64 count, names, then count NDArrays: the factories' param section.
Result<std::vector<NamedTensor>> ReadFactoryParams(ByteReader& r) {
  uint64_t count = 0, names_count = 0;
  HETRT_RETURN_IF_ERROR(r.ReadCount(&count, sdk::kLeastParamBytes, "factory param count"));
  HETRT_RETURN_IF_ERROR(r.ReadCount(&names_count, sdk::kLeastParamBytes, "factory param names count"));
  if (names_count != count)
    return r.Error("factory param names",
                   std::to_string(names_count) + " names for " + std::to_string(count) + " params");
  HETRT_ASSIGN_OR_RETURN(std::vector<NamedTensor> params, ReadParamNames(r, count, "factory param name"));
  for (auto& p : params) {
    HETRT_ASSIGN_OR_RETURN(p.tensor, ReadNDArray(r), "factory param '" + p.name + "'");
    r.ReleaseConsumedPages();
  }
  return params;
}

std::string ParamSummary(const std::vector<NamedTensor>& params) {
  uint64_t bytes = 0;
  for (const auto& p : params) bytes += p.tensor.nbytes();
  return std::to_string(params.size()) + " params, " + std::to_string(bytes) + " bytes";
}

}  // namespace

Result<std::shared_ptr<Module>> GraphExecutorFactoryModule::Load(ByteReader& r) {
  std::string graph_json, module_name;
  HETRT_RETURN_IF_ERROR(r.ReadString(&graph_json, "GraphExecutorFactory graph_json"));
  HETRT_ASSIGN_OR_RETURN(auto params, ReadFactoryParams(r));
  HETRT_RETURN_IF_ERROR(r.ReadString(&module_name, "GraphExecutorFactory module_name"));
  if (module_name.empty()) return r.Error("GraphExecutorFactory module_name", "empty");
  return std::shared_ptr<Module>(
      std::make_shared<GraphExecutorFactoryModule>(std::move(graph_json), std::move(params), std::move(module_name)));
}

// u64 count, names, arrays: the inverse of ReadFactoryParams.
static Status WriteFactoryParams(const std::vector<NamedTensor>& params, ByteWriter& w) {
  w.WriteU64(params.size());
  w.WriteU64(params.size());
  for (const auto& p : params) w.WriteString(p.name);
  for (const auto& p : params) {
    HETRT_RETURN_IF_ERROR(WriteNDArray(p.tensor, w), "factory param '" + p.name + "'");
  }
  return OkStatus();
}

Result<std::vector<uint8_t>> GraphExecutorFactoryModule::SaveToBinary() const {
  ByteWriter w;
  w.WriteString(graph_json_);
  HETRT_RETURN_IF_ERROR(WriteFactoryParams(*params_, w));
  w.WriteString(module_name_);
  return w.Take();
}

Result<std::vector<uint8_t>> AotExecutorFactoryModule::SaveToBinary() const {
  ByteWriter w;
  HETRT_RETURN_IF_ERROR(WriteFactoryParams(params_, w));
  w.WriteString(module_name_);
  return w.Take();
}

std::vector<std::string> GraphExecutorFactoryModule::ListFunctionNames() const {
  return {module_name_, "get_graph_json", "get_graph_params", "remove_params"};
}

std::string GraphExecutorFactoryModule::Describe() const {
  return "module_name '" + module_name_ + "', graph JSON " + std::to_string(graph_json_.size()) + " bytes, " +
         ParamSummary(*params_);
}

std::shared_ptr<GraphExecutorFactoryModule> GraphExecutorFactoryModule::WithoutParams() const {
  auto copy = std::make_shared<GraphExecutorFactoryModule>(graph_json_, std::vector<NamedTensor>{}, module_name_);
  for (const auto& import : imports()) copy->Import(import);
  return copy;
}

Result<std::unique_ptr<GraphExecutor>> GraphExecutorFactoryModule::CreateExecutor(GraphExecutor::Options options) {
  if (imports().empty())
    return FailedPrecondition("GraphExecutorFactory '" + module_name_ + "' has no host library import");
  std::shared_ptr<const Graph> graph;
  {
    std::lock_guard<std::mutex> lock(graph_mutex_);
    if (!graph_) {
      HETRT_ASSIGN_OR_RETURN(Graph parsed, ParseGraphJson(graph_json_, "GraphExecutorFactory '" + module_name_ + "'"));
      graph_ = std::make_shared<const Graph>(std::move(parsed));
    }
    graph = graph_;
  }
  options.params = params_;
  return GraphExecutor::Create(std::move(graph), imports()[0], std::move(options));
}

Result<std::shared_ptr<Module>> AotExecutorFactoryModule::Load(ByteReader& r) {
  HETRT_ASSIGN_OR_RETURN(auto params, ReadFactoryParams(r));
  std::string module_name;
  HETRT_RETURN_IF_ERROR(r.ReadString(&module_name, "AotExecutorFactory module_name"));
  if (module_name.empty()) return r.Error("AotExecutorFactory module_name", "empty");
  return std::shared_ptr<Module>(std::make_shared<AotExecutorFactoryModule>(std::move(params), std::move(module_name)));
}

std::string AotExecutorFactoryModule::Describe() const {
  return "module_name '" + module_name_ + "', " + ParamSummary(params_);
}

}  // namespace hetrt
