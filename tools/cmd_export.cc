// `hetrt export`: host code + device modules (+ graph + params) -> one .so or .tar.
#include <cstdio>

#include "commands.h"
#include "hetrt/sdk/byte_stream.h"
#include "hetrt/exec/factory_modules.h"
#include "hetrt/mlf.h"
#include "hetrt/module/module_loader.h"
#include "hetrt/module_export.h"
#include "hetrt/plugin_host/plugin_registry.h"

namespace hetrt::cli {
namespace {

struct ExportArgs {
  std::string mlf, output, graph, params, module_name = "default", compiler = "cc";
  std::vector<std::string> host, device_modules, cflags;
  bool mlf_output = false;
};

// --mlf: the graph, params and C sources (.c; .h as headers) as Model Library Format.
int ExportMlf(const ExportArgs& args) {
  if (args.graph.empty()) return Fail("--mlf needs --graph");
  if (!args.device_modules.empty()) return Fail("Model Library Format holds host C code only (no --device-module)");
  MlfGraphModel model;
  model.model_name = args.module_name;
  auto graph = ReadFileBytes(args.graph);
  if (!graph.ok()) return Fail(graph.status().message());
  model.graph_json.assign(graph->begin(), graph->end());
  if (!args.params.empty()) {
    auto params = LoadParamDictFile(args.params);
    if (!params.ok()) return Fail(params.status().message());
    model.params = std::move(params).value();
  }
  for (const std::string& path : args.host) {
    auto text = ReadFileBytes(path);
    if (!text.ok()) return Fail(text.status().message());
    const std::string name = path.substr(path.find_last_of('/') + 1);
    const bool header = name.size() > 2 && name.compare(name.size() - 2, 2, ".h") == 0;
    const bool source = name.size() > 2 && name.compare(name.size() - 2, 2, ".c") == 0;
    if (!header && !source) return Fail(path + ": Model Library Format holds C sources (.c) and headers (.h)");
    (header ? model.headers : model.sources).emplace_back(name, std::string(text->begin(), text->end()));
  }
  Status s = WriteMlf(model, args.output);
  if (!s.ok()) return Fail(s.message());
  std::printf("exported %s (Model Library Format, model '%s')\n", args.output.c_str(), model.model_name.c_str());
  return 0;
}

// TYPE_KEY=FILE: a device module's bytes (what its SaveToBinary writes). With a
// plugin for the type the bytes are validated by loading them; without one they
// pass through unchanged (exporting for a device this machine lacks).
Result<std::shared_ptr<Module>> DeviceModuleFromFile(const std::string& spec) {
  const auto eq = spec.find('=');
  if (eq == std::string::npos || eq == 0)
    return InvalidArgument("--device-module takes TYPE_KEY=FILE, got '" + spec + "'");
  const std::string type_key = spec.substr(0, eq), path = spec.substr(eq + 1);
  HETRT_ASSIGN_OR_RETURN(auto bytes, ReadFileBytes(path));
  auto plugin = PluginRegistry::Global().ForTypeKey(type_key);
  if (!plugin.ok()) {
    std::fprintf(stderr, "hetrt: warning: %s: no plugin for '%s', its bytes are packed unchecked\n", path.c_str(),
                 type_key.c_str());
    return std::shared_ptr<Module>(std::make_shared<UnloadedModule>(type_key, std::move(bytes), plugin.status()));
  }
  ByteReader reader(bytes, path);
  HETRT_ASSIGN_OR_RETURN(auto module, PluginModule::Load(*plugin, type_key, reader), path);
  if (reader.remaining() != 0)
    return DataLoss(path + ": " + std::to_string(reader.remaining()) + " bytes after the '" + type_key + "' module");
  return module;
}

int Export(const ExportArgs& args) {
  if (args.mlf_output && args.mlf.empty()) return ExportMlf(args);
  if (args.mlf_output) {  // MLF in, MLF out: rewrite (normalizes the tarball)
    auto in = MlfPackage::Read(args.mlf);
    if (!in.ok()) return Fail(in.status().message());
    auto model = MlfGraphModelOf(*in);
    if (!model.ok()) return Fail(args.mlf + ": " + model.status().message());
    Status s = WriteMlf(*model, args.output);
    if (!s.ok()) return Fail(s.message());
    std::printf("exported %s (Model Library Format)\n", args.output.c_str());
    return 0;
  }
  if (!args.mlf.empty()) {
    if (!args.host.empty() || !args.device_modules.empty() || !args.graph.empty() || !args.params.empty())
      return Fail("a Model Library Format tarball carries its own code, graph and params: give it alone");
    auto mlf = MlfPackage::Read(args.mlf);
    if (!mlf.ok()) return Fail(mlf.status().message());
    Status s = ExportMlfToLibrary(*mlf, args.output, {args.compiler, args.cflags});
    if (!s.ok()) return Fail(args.mlf + ": " + s.message());
    std::printf("exported %s (model '%s' from %s)\n", args.output.c_str(), mlf->metadata().model_name.c_str(),
                args.mlf.c_str());
    return 0;
  }
  if (args.host.empty()) return Fail("export needs host code: --host FILE.c|FILE.o (repeatable), or an MLF tarball");
  auto host = std::make_shared<PendingHostLibrary>();
  for (const std::string& spec : args.device_modules) {
    auto device = DeviceModuleFromFile(spec);
    if (!device.ok()) return Fail(device.status().message());
    host->Import(std::move(device).value());
  }
  std::shared_ptr<Module> root = host;
  if (!args.graph.empty()) {
    auto graph = ReadFileBytes(args.graph);
    if (!graph.ok()) return Fail(graph.status().message());
    std::vector<NamedTensor> params;
    if (!args.params.empty()) {
      auto loaded = LoadParamDictFile(args.params);
      if (!loaded.ok()) return Fail(loaded.status().message());
      params = std::move(loaded).value();
    }
    std::string graph_text(graph->begin(), graph->end());
    auto parsed = ParseGraphJson(graph_text, args.graph);  // refuse a broken graph now, not at load time
    if (!parsed.ok()) return Fail(parsed.status().message());
    root = std::make_shared<GraphExecutorFactoryModule>(std::move(graph_text), std::move(params), args.module_name);
    root->Import(host);
  } else if (!args.params.empty()) {
    return Fail("--params goes with --graph");
  }
  Status s = ExportLibrary(*root, args.host, args.output, {args.compiler, args.cflags});
  if (!s.ok()) return Fail(s.message());
  std::printf("exported %s\n", args.output.c_str());
  return 0;
}

}  // namespace

Command AddExportCommand(CLI::App& app) {
  auto* cmd = app.add_subcommand("export", "Link host code, device modules, graph and params into one library");
  auto args = std::make_shared<ExportArgs>();
  cmd->add_option("MLF", args->mlf, "a Model Library Format tarball (graph model with C host code)");
  cmd->add_option("-o,--output", args->output, "output: .so (linked) or .tar (inputs + devc.c)")->required();
  cmd->add_option("--host", args->host, "host C source or object file, repeatable")->take_all();
  cmd->add_option("--device-module", args->device_modules, "TYPE_KEY=FILE, a device module's bytes, repeatable");
  cmd->add_option("--graph", args->graph, "graph.json: makes a GraphExecutorFactory deploy library");
  cmd->add_option("--params", args->params, "params file bound into the factory");
  cmd->add_option("--module-name", args->module_name, "factory module name (default 'default')");
  cmd->add_option("--cc", args->compiler, "compiler/linker (default cc; a cross compiler works)");
  cmd->add_option("--cflag", args->cflags, "extra compiler flag, repeatable")->allow_extra_args(false);
  cmd->add_flag("--mlf", args->mlf_output,
                "write Model Library Format (graph + params + C sources; --module-name names the model)");
  return [args] { return Export(*args); };
}

}  // namespace hetrt::cli
