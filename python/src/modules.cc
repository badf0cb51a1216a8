// Loading: the module tree of an exported library, a graph triple made into
// the same tree a deploy.so has, Model Library Format packages; and what the
// plugin host found (plugins, devices, why a device is missing).
#include <pybind11/stl.h>

#include "bindings.h"
#include "hetrt/sdk/byte_stream.h"
#include "hetrt/base/dtype.h"
#include "hetrt/exec/factory_modules.h"
#include "hetrt/formats/graph.h"
#include "hetrt/formats/params.h"
#include "hetrt/mlf.h"
#include "hetrt/module/module_loader.h"
#include "hetrt/plugin_host/plugin_registry.h"

namespace hetrt::python {
namespace {

std::shared_ptr<Module> Load(const std::string& path, bool keep_unloadable) {
  LoadOptions options;
  options.keep_unloadable = keep_unloadable;
  py::gil_scoped_release release;
  return Unwrap(LoadModuleFile(path, options));
}

// TVM's graph_executor.create(graph_json, lib, ...) as a module tree: a
// GraphExecutorFactory importing `lib`, exactly what a deploy.so holds.
// `params` is a param-dict file path, its bytes, or None.
std::shared_ptr<Module> GraphFactory(const std::string& graph_json, const std::string& source,
                                     std::shared_ptr<Module> lib, py::object params) {
  std::vector<NamedTensor> dict;
  if (py::isinstance<py::bytes>(params)) {
    dict = Unwrap(ReadParamDict(BytesOf(params.cast<py::bytes>()), "params"));
  } else if (!params.is_none()) {
    dict = Unwrap(LoadParamDictFile(params.cast<std::string>()));
  }
  Unwrap(ParseGraphJson(graph_json, source));  // errors name the file now, not at create
  auto factory = std::make_shared<GraphExecutorFactoryModule>(graph_json, std::move(dict), "default");
  factory->Import(std::move(lib));
  return factory;
}

std::string ReadText(const std::string& path) {
  const std::vector<uint8_t> bytes = Unwrap(ReadFileBytes(path));
  return {bytes.begin(), bytes.end()};
}

py::dict MlfMetadataDict(const MlfMetadata& md) {
  auto io = [](const std::vector<MlfTensorInfo>& infos) {
    py::list out;
    for (const auto& t : infos) {
      py::dict d;
      d["name"] = t.name;
      d["dtype"] = t.dtype;
      d["bytes"] = t.bytes;
      out.append(std::move(d));
    }
    return out;
  };
  py::list memory;
  for (const auto& f : md.memory)
    memory.append(Dict({{"name", py::cast(f.name)},
                        {"device", py::cast(f.device)},
                        {"workspace_bytes", py::cast(f.workspace_bytes)},
                        {"constants_bytes", py::cast(f.constants_bytes)},
                        {"io_bytes", py::cast(f.io_bytes)}}));
  py::dict d;
  d["version"] = md.version;
  d["model_name"] = md.model_name;
  d["executors"] = md.executors;
  d["targets"] = md.targets;
  d["export_datetime"] = md.export_datetime;
  d["memory"] = std::move(memory);
  d["inputs"] = io(md.inputs);
  d["outputs"] = io(md.outputs);
  return d;
}

py::list PluginsInfo() {
  PluginRegistry& registry = PluginRegistry::Global();
  py::list out;
  for (const auto& plugin : registry.plugins()) {
    py::list devices;
    for (int32_t type : plugin->device_types()) {
      py::dict entry;
      entry["type"] = DeviceTypeName(type);
      entry["device_type"] = type;
      auto count = plugin->CountDevices(type);
      py::list found;
      if (!count.ok()) {
        entry["count"] = 0;
        entry["reason"] = count.status().message();
      } else {
        entry["count"] = count->count;
        entry["reason"] = count->count == 0 ? py::object(py::str(count->unavailable_reason)) : py::object(py::none());
        for (int32_t id = 0; id < count->count; ++id) {
          const DLDevice device{static_cast<DLDeviceType>(type), id};
          py::dict d;
          d["device"] = DeviceToString(device);
          d["name"] = plugin->DeviceName(device);
          d["shares_host_memory"] = plugin->SharesHostMemory(device);
          found.append(std::move(d));
        }
      }
      entry["devices"] = std::move(found);
      devices.append(std::move(entry));
    }
    py::dict p;
    p["name"] = plugin->name();
    p["version"] = plugin->version();
    p["abi"] = plugin->abi_version();
    p["path"] = plugin->path();
    p["devices"] = std::move(devices);
    p["type_keys"] = plugin->type_keys();
    out.append(std::move(p));
  }
  return out;
}

// (True, "") when the device can be used; (False, the core's reason) otherwise.
std::pair<bool, std::string> DeviceStatus(int type, int id) {
  auto plugin = PluginRegistry::Global().ForDevice(DLDevice{static_cast<DLDeviceType>(type), id});
  return {plugin.ok(), plugin.ok() ? std::string() : plugin.status().message()};
}

}  // namespace

void RegisterModules(py::module_& m) {
  py::class_<Module, std::shared_ptr<Module>>(m, "Module", "A module of the tree (TVM's runtime.Module).")
      .def_property_readonly("type_key", &Module::type_key)
      .def_property_readonly("imports", &Module::imports)
      .def_property_readonly("function_names", &Module::ListFunctionNames)
      .def("describe", &Module::Describe)
      .def(
          "has_function",
          [](Module& self, const std::string& name) {
            auto f = self.GetFunction(name);
            return f.ok() && *f != nullptr;
          },
          "Whether the module or its imports define `name`.")
      .def_property_readonly("module_name",
                             [](Module& self) -> py::object {
                               if (auto* f = dynamic_cast<GraphExecutorFactoryModule*>(&self))
                                 return py::str(f->module_name());
                               if (auto* f = dynamic_cast<AotExecutorFactoryModule*>(&self))
                                 return py::str(f->module_name());
                               return py::none();
                             })
      .def_property_readonly("graph_json",
                             [](Module& self) -> py::object {
                               if (auto* f = dynamic_cast<GraphExecutorFactoryModule*>(&self))
                                 return py::str(f->graph_json());
                               return py::none();
                             })
      .def_property_readonly("param_names",
                             [](Module& self) {
                               std::vector<std::string> names;
                               if (auto* f = dynamic_cast<GraphExecutorFactoryModule*>(&self))
                                 for (const auto& p : *f->params()) names.push_back(p.name);
                               if (auto* f = dynamic_cast<AotExecutorFactoryModule*>(&self))
                                 for (const auto& p : f->params()) names.push_back(p.name);
                               return names;
                             })
      .def_property_readonly("unloaded_reason", [](Module& self) -> py::object {
        if (auto* u = dynamic_cast<UnloadedModule*>(&self)) return py::str(u->reason().message());
        return py::none();
      });
  m.def("load_module", &Load, py::arg("path"), py::arg("keep_unloadable") = false);
  m.def("graph_factory", &GraphFactory, py::arg("graph_json"), py::arg("source"), py::arg("lib"),
        py::arg("params") = py::none());
  m.def("read_text", &ReadText, py::arg("path"));
  // TVM's param-dict format (.params), the core's reader and writer.
  m.def("load_param_dict", [](const py::bytes& bytes) {
    py::dict out;
    for (auto& p : Unwrap(ReadParamDict(BytesOf(bytes), "params")))
      out[py::str(p.name)] = PyTensor{std::move(p.tensor), nullptr};
    return out;
  });
  m.def("save_param_dict", [](const py::dict& params) {
    std::vector<NamedTensor> dict;
    for (auto [name, value] : params) {
      bool private_copy = false;
      PyTensor t = ToTensor(value, &private_copy);
      if (t.tensor.device().device_type != kDLCPU) t.tensor = Unwrap(PluginRegistry::Global().ToHost(t.tensor));
      dict.push_back({name.cast<std::string>(), t.tensor});
    }
    const std::vector<uint8_t> bytes = Unwrap(WriteParamDict(dict));
    return py::bytes(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  });

  py::class_<MlfPackage, std::shared_ptr<MlfPackage>>(m, "MlfPackage", "A Model Library Format tarball.")
      .def_static("read",
                  [](const std::string& path) {
                    py::gil_scoped_release release;
                    return std::make_shared<MlfPackage>(Unwrap(MlfPackage::Read(path)));
                  })
      .def_property_readonly("metadata", [](const MlfPackage& p) { return MlfMetadataDict(p.metadata()); })
      .def_property_readonly("files", [](const MlfPackage& p) {
        std::vector<std::string> names;
        for (const auto& [name, bytes] : p.files()) names.push_back(name);
        return names;
      });

  m.def("plugins", &PluginsInfo, "Plugins the core loaded, with their devices (or why there are none).");
  m.def(
      "plugin_problems",
      [] {
        std::vector<std::pair<std::string, std::string>> out;
        for (const auto& p : PluginRegistry::Global().problems()) out.emplace_back(p.path, p.reason);
        return out;
      },
      "Plugin files or folders that were not used, and why.");
  m.def("plugin_search_paths", [] { return PluginRegistry::Global().search_paths(); });
  m.def("device_status", &DeviceStatus, py::arg("device_type"), py::arg("device_id"));
  m.def("parse_device", [](const std::string& text) {
    const DLDevice d = Unwrap(ParseDevice(text));
    return std::make_pair(static_cast<int>(d.device_type), d.device_id);
  });
  m.def("device_type_name", &DeviceTypeName);
  m.def(
      "set_num_threads",
      [](int threads) {
        Plugin* cpu = Unwrap(PluginRegistry::Global().ForDeviceType(kDLCPU));
        Check(cpu->SetOption("num_threads", std::to_string(threads)));
      },
      py::arg("threads"), "Threads the CPU plugin uses for parallel kernels.");
}

}  // namespace hetrt::python
