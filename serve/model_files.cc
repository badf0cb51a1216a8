#include "model_files.h"

#include <algorithm>
#include <charconv>
#include <filesystem>

#include "hetrt/exec/open_model.h"

namespace hetrt::serve {
namespace fs = std::filesystem;

namespace {

bool EndsWith(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string Join(const std::vector<std::string>& names) {
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

}  // namespace

Result<std::vector<std::string>> ListModels(const std::string& repository) {
  std::error_code ec;
  if (!fs::is_directory(repository, ec)) return NotFound("model repository '" + repository + "' is not a folder");
  std::vector<std::string> models;
  for (const auto& entry : fs::directory_iterator(repository, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name[0] == '.' || !entry.is_directory(ec)) continue;
    models.push_back(name);
  }
  if (ec) return Unavailable("model repository '" + repository + "': " + ec.message());
  std::sort(models.begin(), models.end());
  return models;
}

Result<std::vector<int64_t>> ListVersions(const std::string& model_dir) {
  std::error_code ec;
  std::vector<int64_t> versions;
  for (const auto& entry : fs::directory_iterator(model_dir, ec)) {
    if (!entry.is_directory(ec)) continue;
    const std::string name = entry.path().filename().string();
    int64_t v = -1;
    auto [end, err] = std::from_chars(name.data(), name.data() + name.size(), v);
    if (err == std::errc() && end == name.data() + name.size() && v >= 0) versions.push_back(v);
  }
  if (ec) return Unavailable("model folder '" + model_dir + "': " + ec.message());
  std::sort(versions.begin(), versions.end());
  return versions;
}

Result<ModelVersionFiles> FindModelFiles(const std::string& version_dir) {
  ModelVersionFiles files;
  if (IsLlmModelFolder(version_dir)) {  // a tensor cache: tensor-cache.json here or in params/
    files.kind = ModelVersionFiles::Kind::kLanguageModel;
    files.llm_folder = version_dir;
    return files;
  }
  std::error_code ec;
  std::vector<std::string> libraries, tars, params;
  bool graph_json = false;
  for (const auto& entry : fs::directory_iterator(version_dir, ec)) {
    if (!entry.is_regular_file(ec)) continue;  // follows symlinks
    const std::string name = entry.path().filename().string();
    if (name == "graph.json")
      graph_json = true;
    else if (EndsWith(name, ".so"))
      libraries.push_back(name);
    else if (EndsWith(name, ".tar"))
      tars.push_back(name);
    else if (name == "params" || name == "params.params" || name == "params.bin")
      params.push_back(name);
  }
  if (ec) return Unavailable("model version folder '" + version_dir + "': " + ec.message());
  std::sort(libraries.begin(), libraries.end());
  const std::string dir = version_dir + "/";
  const char* expected =
      "expected one of: a deploy .so (a Relax one + its weights' params); graph.json + one lib .so (+ params); a "
      "Model Library Format .tar; a language model's .so beside its tensor cache (tensor-cache.json)";
  if (!tars.empty()) {
    if (tars.size() > 1 || !libraries.empty() || graph_json)
      return InvalidArgument(version_dir + ": more than one model (" + Join(tars) + " " + Join(libraries) + "); " +
                             expected);
    files.kind = ModelVersionFiles::Kind::kMlf;
    files.mlf = dir + tars[0];
    return files;
  }
  if (libraries.size() != 1)
    return InvalidArgument(
        version_dir + ": " +
        (libraries.empty() ? std::string("no model file") : "several libraries (" + Join(libraries) + ")") + "; " +
        expected);
  files.graph.library = dir + libraries[0];
  if (params.size() > 1) return InvalidArgument(version_dir + ": several params files (" + Join(params) + ")");
  // A triple's params, or the weights of a Relax executable that takes them as parameters.
  if (!params.empty()) files.graph.params = dir + params[0];
  if (graph_json) {
    files.kind = ModelVersionFiles::Kind::kGraphTriple;
    files.graph.graph_json = dir + "graph.json";
  }
  return files;
}

}  // namespace hetrt::serve
