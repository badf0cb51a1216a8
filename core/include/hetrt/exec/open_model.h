// The one way to open a model. Given a file (and device names as a user
// writes them), it decides what the file is and opens it with the right
// executor: a model file a whole-model plugin runs on the one device named
// (a Model Library Format tarball on "micro" or "cpu"), a graph factory, an
// AOT factory or a Relax executable at the root of a deploy.so, or a graph
// triple (lib.so + graph.json + params). `hetrt run`, `hetrt bench`,
// `hetrt serve` and Python open models through it.
//
// Thread contract: thread-safe (each call opens its own model).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "hetrt/device/whole_model.h"
#include "hetrt/exec/graph_model.h"
#include "hetrt/relax/vm.h"

namespace hetrt {

struct ModelSpec {
  std::string path;  // deploy.so, lib.so (with graph_json), an MLF .tar, "system-lib[:PREFIX]"
  std::string graph_json = {};
  std::string params = {};    // a triple's params, or a Relax executable's weights
  std::string function = {};  // a Relax executable's function ("": main)
  // Ordered, as `--device` takes them: "cpu", "opencl:1", "micro".
  std::vector<std::string> devices = {"cpu"};
  PluginOptions device_options = {};  // for a whole-model device (transport, board, ...)
  bool sequential = false;            // graph executor options
  bool staged_copies = false;
  PluginRegistry* plugins = nullptr;  // nullptr: PluginRegistry::Global()
};

Result<Model> OpenModel(const ModelSpec& spec);

// A Relax executable's virtual machine on `devices` (in vm_initialization
// order), for programs that call its functions by name: the LLM engine.
Result<std::unique_ptr<RelaxVirtualMachine>> OpenRelaxVm(const std::string& library, std::vector<DLDevice> devices,
                                                         PluginRegistry* plugins = nullptr);

// A language-model folder: a library beside a tensor cache (tensor-cache.json
// in it or in its params/), which the LLM engine opens.
bool IsLlmModelFolder(const std::string& path);
// The folder's tensor-cache folder (itself or its params/), or "" when none.
std::string LlmWeightsFolder(const std::string& folder);
// The folder's one library (.so); an error naming what it found otherwise.
Result<std::string> LlmLibraryIn(const std::string& folder);

}  // namespace hetrt
