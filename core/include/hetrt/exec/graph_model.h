// Opening a model in TVM's forms: a single-file deploy.so (GraphExecutorFactory
// or AotExecutorFactory root) or the classic triple graph.json + lib.so + params.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "hetrt/exec/graph_executor.h"
#include "hetrt/module/module.h"

namespace hetrt {

struct GraphModelFiles {
  // deploy.so, or lib.so of a triple; "system-lib" (or "system-lib:PREFIX")
  // for the system library linked into this program (LoadSystemLib).
  std::string library;
  std::string graph_json = {};  // set for a triple
  std::string params = {};      // optional: a triple's params; a Relax executable's weights
  std::string function = {};    // Relax executables: the function to run ("" = main)
};

struct GraphModel {
  std::shared_ptr<Module> root;
  std::unique_ptr<GraphExecutor> executor;
};

// The system-lib prefix `library` names ("system-lib" -> "", "system-lib:m1_"
// -> "m1_"); nullopt for a file path.
std::optional<std::string> SystemLibPrefix(const std::string& library);

// `options.params` is ignored: params come from the factory or the params file.
Result<GraphModel> OpenGraphModel(const GraphModelFiles& files, GraphExecutor::Options options);

// Any runnable model: a graph deploy.so or triple, an AOT deploy.so, or a
// Relax executable (its function `files.function` on `options.devices`, in
// vm_initialization order).
struct Model {
  std::shared_ptr<Module> root;
  std::unique_ptr<Executor> executor;
};
Result<Model> OpenModel(const GraphModelFiles& files, GraphExecutor::Options options);
// The executor for a module tree already loaded from `files.library` (what
// OpenModel does after loading): the root decides which.
Result<std::unique_ptr<Executor>> CreateModelExecutor(std::shared_ptr<Module> root, const GraphModelFiles& files,
                                                      GraphExecutor::Options options);

}  // namespace hetrt
