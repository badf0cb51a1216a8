// Triton's repository layout: DIR/<model>/<version>/ with one of
//   deploy .so (graph or AOT factory, or a Relax executable + params of its weights)
//   | graph.json + lib .so (+ params) | MLF .tar
//   | a language model: one .so beside a tensor cache (docs/serving-llm.md)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hetrt/base/status.h"
#include "hetrt/exec/graph_model.h"

namespace hetrt::serve {

struct ModelVersionFiles {
  enum class Kind { kLibrary, kGraphTriple, kMlf, kLanguageModel } kind = Kind::kLibrary;
  GraphModelFiles graph;  // kLibrary (graph.library only) and kGraphTriple
  std::string mlf;        // kMlf: the Model Library Format tarball
  std::string llm_folder;  // kLanguageModel: the version folder (LlmEngineOptions::model_dir)
};

// Model folders in a repository (names, sorted). Folders whose name starts with
// '.' are skipped.
Result<std::vector<std::string>> ListModels(const std::string& repository);
// Numeric version folders of a model, ascending.
Result<std::vector<int64_t>> ListVersions(const std::string& model_dir);
// What a version folder holds; errors name the folder and what was expected.
Result<ModelVersionFiles> FindModelFiles(const std::string& version_dir);

}  // namespace hetrt::serve
