// The executor factories that sit at the root of a TVM deploy.so: module
// types the executor layer loads from a blob (it registers their loaders with
// the module loader, which knows nothing of executors).
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hetrt/sdk/byte_stream.h"
#include "hetrt/exec/graph_executor.h"
#include "hetrt/formats/params.h"
#include "hetrt/module/module.h"

namespace hetrt {

// type_key "GraphExecutorFactory": graph JSON + params + module name. Its first
// import is the host library that holds the operator functions.
// Thread contract (both factories): thread-safe, as Module; the graph is parsed once under a lock.
class GraphExecutorFactoryModule final : public Module {
 public:
  GraphExecutorFactoryModule(std::string graph_json, std::vector<NamedTensor> params, std::string module_name)
      : Module("GraphExecutorFactory"),
        graph_json_(std::move(graph_json)),
        params_(std::make_shared<const std::vector<NamedTensor>>(std::move(params))),
        module_name_(std::move(module_name)) {}

  static Result<std::shared_ptr<Module>> Load(ByteReader& reader);
  Result<std::vector<uint8_t>> SaveToBinary() const override;

  Result<const PackedFunc*> GetOwnFunction(std::string_view) override {
    return static_cast<const PackedFunc*>(nullptr);
  }
  std::vector<std::string> ListFunctionNames() const override;
  std::string Describe() const override;

  const std::string& graph_json() const { return graph_json_; }
  // Shared so that executors can bind weights without copying them.
  const std::shared_ptr<const std::vector<NamedTensor>>& params() const { return params_; }
  const std::string& module_name() const { return module_name_; }
  // A copy without params (TVM's remove_params).
  std::shared_ptr<GraphExecutorFactoryModule> WithoutParams() const;
  // TVM's factory["default"](devices...): an executor over the first import
  // (the host library) with this factory's params bound, shared and uncopied.
  // `options.params` is ignored. The parsed graph is cached and shared.
  Result<std::unique_ptr<GraphExecutor>> CreateExecutor(GraphExecutor::Options options);

 private:
  std::string graph_json_;
  std::shared_ptr<const std::vector<NamedTensor>> params_;
  std::string module_name_;
  std::mutex graph_mutex_;
  std::shared_ptr<const Graph> graph_;  // parsed on first use
};

// type_key "AotExecutorFactory": params + module name (no graph).
class AotExecutorFactoryModule final : public Module {
 public:
  AotExecutorFactoryModule(std::vector<NamedTensor> params, std::string module_name)
      : Module("AotExecutorFactory"), params_(std::move(params)), module_name_(std::move(module_name)) {}
  static Result<std::shared_ptr<Module>> Load(ByteReader& reader);
  Result<const PackedFunc*> GetOwnFunction(std::string_view) override {
    return static_cast<const PackedFunc*>(nullptr);
  }
  std::vector<std::string> ListFunctionNames() const override { return {module_name_}; }
  std::string Describe() const override;
  Result<std::vector<uint8_t>> SaveToBinary() const override;
  const std::vector<NamedTensor>& params() const { return params_; }
  const std::string& module_name() const { return module_name_; }

 private:
  std::vector<NamedTensor> params_;
  std::string module_name_;
};

}  // namespace hetrt
