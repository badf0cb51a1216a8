// hetrt._hetrt.Executor: one graph, AOT or micro executor, with the GIL
// released around every call into it (so threads run executors in parallel)
// and a lock so that two threads never drive the same executor at once.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <chrono>
#include <mutex>

#include "bindings.h"
#include "hetrt/base/dtype.h"
#include "hetrt/exec/aot_executor.h"
#include "hetrt/exec/factory_modules.h"
#include "hetrt/exec/graph_executor.h"
#include "hetrt/exec/graph_model.h"
#include "hetrt/exec/open_model.h"
#include "hetrt/exec/relax_executor.h"
#include "hetrt/exec/whole_model_executor.h"

namespace hetrt::python {
namespace {

// Everything an executor needs alive. Tensors handed to Python that view the
// executor's storage hold the session, so they outlive the Python executor.
struct Session {
  std::shared_ptr<Module> root;  // the library whose kernels the executor calls
  // Caller memory bound zero-copy, per input / output (declared before the
  // executor so that it is released after it).
  std::vector<std::shared_ptr<PyTensor>> input_bindings, output_bindings;
  std::unique_ptr<Executor> executor;
  GraphExecutor* graph = nullptr;       // the executor, when it is a graph executor
  WholeModelExecutor* whole = nullptr;  // the executor, when a whole-model plugin runs it
  std::string kind;
  std::mutex mutex;
};

py::tuple DeviceTuple(DLDevice d) { return py::make_tuple(static_cast<int>(d.device_type), d.device_id); }

py::object TensorInfo(const Tensor& t) {
  return py::make_tuple(py::tuple(py::cast(t.shape())), DataTypeToString(t.dtype()));
}

class PyExecutor {
 public:
  explicit PyExecutor(std::shared_ptr<Session> session) : s_(std::move(session)) {
    s_->input_bindings.resize(static_cast<size_t>(s_->executor->NumInputs()));
    s_->output_bindings.resize(static_cast<size_t>(s_->executor->NumOutputs()));
  }

  static PyExecutor FromModule(std::shared_ptr<Module> root, const std::vector<std::pair<int, int>>& devices,
                               bool sequential, bool staged_copies) {
    auto s = std::make_shared<Session>();
    GraphExecutor::Options options;
    options.devices.clear();
    for (auto [type, id] : devices) options.devices.push_back(DLDevice{static_cast<DLDeviceType>(type), id});
    if (options.devices.empty()) options.devices.push_back(DLDevice{kDLCPU, 0});
    // Every device asked for must exist, used by the graph or not: a typo
    // should not pass silently.
    for (const DLDevice& d : options.devices) Unwrap(PluginRegistry::Global().ForDevice(d));
    options.sequential = sequential;
    options.staged_copies = staged_copies;
    s->root = root;
    {
      // The core decides which executor the root takes (hetrt/exec/graph_model.h).
      py::gil_scoped_release release;
      s->executor = Unwrap(CreateModelExecutor(root, {"the loaded module"}, options));
    }
    s->graph = dynamic_cast<GraphExecutor*>(s->executor.get());
    s->kind = s->graph != nullptr                                            ? "graph"
              : dynamic_cast<AotExecutor*>(s->executor.get()) != nullptr      ? "aot"
              : dynamic_cast<RelaxExecutor*>(s->executor.get()) != nullptr    ? "relax"
                                                                             : "executor";
    return PyExecutor(std::move(s));
  }

  // A Model Library Format graph or AOT model, through the plugin that runs
  // whole models (ABI 2.1): on the C runtime in this process ("cpu"), or
  // (host_driven) on the device "micro".
  static PyExecutor FromMlf(const std::string& path, bool host_driven) {
    auto s = std::make_shared<Session>();
    py::gil_scoped_release release;
    // The core's front door decides (a whole-model plugin runs MLF on the device named).
    ModelSpec spec{path};
    spec.devices = {host_driven ? "micro" : "cpu"};
    Model model = Unwrap(OpenModel(spec));
    s->whole = dynamic_cast<WholeModelExecutor*>(model.executor.get());
    if (s->whole == nullptr)
      throw StatusError(InvalidArgument(path + " is not a Model Library Format model a whole-model plugin runs"));
    s->executor = std::move(model.executor);
    s->kind = host_driven ? "micro" : "mlf";
    return PyExecutor(std::move(s));
  }

  const std::string& kind() const { return s_->kind; }
  int num_inputs() const { return s_->executor->NumInputs(); }
  int num_outputs() const { return s_->executor->NumOutputs(); }
  std::string input_name(int i) const { return s_->executor->InputName(CheckInput(i)); }
  std::string output_name(int i) const { return s_->executor->OutputName(CheckOutput(i)); }
  int input_index(const std::string& name) const { return s_->executor->InputIndex(name); }
  std::vector<int> unbound_inputs() const { return s_->executor->UnboundInputs(); }

  // (shape, dtype), or None where the executor does not say.
  py::object input_info(int i) const {
    CheckInput(i);
    if (s_->graph) return TensorInfo(s_->graph->InputTensor(i));
    if (s_->whole)
      return py::make_tuple(py::tuple(py::cast(s_->whole->InputShape(i))), DataTypeToString(s_->whole->InputDtype(i)));
    return py::none();
  }
  py::object output_info(int i) const {
    CheckOutput(i);
    if (s_->graph) return TensorInfo(s_->graph->OutputTensor(i));
    return py::none();
  }

  // Sets inputs [(index, value), ...]: binds a value's memory as the input
  // when asked (zero_copy) and the device, dtype, size and 64-byte alignment
  // allow; copies it otherwise. Then runs, when asked. One GIL release and
  // one lock for all of it. Returns, per input, whether the caller's memory
  // is now the input.
  std::vector<bool> SetInputs(const std::vector<std::pair<int, py::handle>>& inputs, bool zero_copy, bool run) {
    struct Pending {
      int index;
      std::shared_ptr<PyTensor> tensor;
      bool bind, private_copy;
    };
    std::vector<Pending> pending;
    pending.reserve(inputs.size());
    for (const auto& [index, value] : inputs) {
      CheckInput(index);
      bool private_copy = false;
      auto tensor = std::make_shared<PyTensor>(ToTensor(value, &private_copy));
      // A private copy is nobody else's memory: binding it is the same as copying it in.
      const bool bind = (zero_copy || private_copy) && CanBind(index, tensor->tensor);
      pending.push_back({index, std::move(tensor), bind, private_copy});
    }
    size_t applied = 0;
    Status status;
    Locked([&] {
      for (; applied < pending.size(); ++applied) {
        const Pending& p = pending[applied];
        status = p.bind ? s_->graph->SetInputZeroCopy(p.index, p.tensor->tensor)
                        : s_->executor->SetInput(p.index, p.tensor->tensor);
        if (!status.ok()) return;
      }
      if (run) status = s_->executor->Run();
    });
    // What was applied before a failure stays applied: its memory must be held.
    std::vector<bool> bound;
    for (size_t i = 0; i < applied; ++i) {
      Pending& p = pending[i];
      bound.push_back(p.bind && !p.private_copy);
      s_->input_bindings[static_cast<size_t>(p.index)] = p.bind ? std::move(p.tensor) : nullptr;
    }
    Check(status);
    return bound;
  }

  void SetOutputZeroCopy(int index, py::handle value) {
    CheckOutput(index);
    RequireGraph("set_output_zero_copy");
    if (py::isinstance<py::array>(value) && !value.cast<py::array>().writeable())
      throw StatusError(InvalidArgument("set_output_zero_copy: the array is read-only"));
    bool private_copy = false;
    auto tensor = std::make_shared<PyTensor>(ToTensor(value, &private_copy));
    if (private_copy)
      throw StatusError(InvalidArgument("set_output_zero_copy: the array must be C-contiguous, in native byte order"));
    {
      py::gil_scoped_release release;
      std::lock_guard<std::mutex> lock(s_->mutex);
      Check(s_->graph->SetOutputZeroCopy(index, tensor->tensor));
    }
    s_->output_bindings[static_cast<size_t>(index)] = tensor;
  }

  void Run() {
    Locked([&] { Check(s_->executor->Run()); });
  }
  void Synchronize() {
    Locked([&] { Check(s_->executor->Synchronize()); });
  }

  // Graph executors: host outputs are views of the executor's storage (valid
  // until the next run writes them), device outputs are views after a
  // synchronize. Other executors: a host copy.
  PyTensor GetOutput(int index) {
    CheckOutput(index);
    PyTensor out;
    Locked([&] {
      if (s_->graph) {
        const Tensor& view = s_->graph->OutputTensor(index);
        if (view.device().device_type != kDLCPU) Check(s_->graph->Synchronize());
        out = PyTensor{view, s_};
      } else {
        out = PyTensor{Unwrap(s_->executor->GetOutput(index)), nullptr};
      }
    });
    return out;
  }

  // The input's storage as the kernels see it (graph executors).
  PyTensor InputTensor(int index) {
    CheckInput(index);
    RequireGraph("input tensors");
    return PyTensor{s_->graph->InputTensor(index), s_};
  }

  void LoadParams(const py::bytes& bytes) {
    RequireGraph("load_params");
    const std::span<const uint8_t> view = BytesOf(bytes);
    Locked([&] { Check(s_->graph->LoadParams(view)); });
  }

  // Seconds per run for each of `repeat` rounds of `number` runs (each round
  // ends with a synchronize), after `warmup` runs.
  std::vector<double> TimeRuns(int repeat, int number, int warmup) {
    if (repeat < 1 || number < 1 || warmup < 0)
      throw StatusError(InvalidArgument("benchmark: repeat and number must be >= 1, warmup >= 0"));
    std::vector<double> seconds;
    Locked([&] {
      for (int i = 0; i < warmup; ++i) {
        Check(s_->executor->Run());
        Check(s_->executor->Synchronize());
      }
      for (int r = 0; r < repeat; ++r) {
        const auto start = std::chrono::steady_clock::now();
        for (int n = 0; n < number; ++n) Check(s_->executor->Run());
        Check(s_->executor->Synchronize());
        const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
        seconds.push_back(elapsed.count() / number);
      }
    });
    return seconds;
  }

  // One RunProfiled as plain data (times in ns on the host's monotonic clock).
  py::dict RunProfiled() {
    RequireGraph("profile");
    GraphExecutor::RunProfile profile;
    Locked([&] { Check(s_->graph->RunProfiled(&profile)); });
    py::list nodes;
    for (const auto& n : profile.nodes)
      nodes.append(Dict({{"node_id", py::cast(n.node_id)},
                         {"device", DeviceTuple(n.device)},
                         {"lane", py::cast(n.lane)},
                         {"submit_ns", py::cast(n.submit_ns)},
                         {"start_ns", py::cast(n.start_ns)},
                         {"end_ns", py::cast(n.end_ns)},
                         {"wait_ns", py::cast(n.wait_ns)},
                         {"bytes", py::cast(n.bytes)},
                         {"waited_for", py::cast(n.waited_for)}}));
    return Dict({{"lanes", py::cast(profile.lanes)},
                 {"nodes", std::move(nodes)},
                 {"run_start_ns", py::cast(profile.run_start_ns)},
                 {"run_end_ns", py::cast(profile.run_end_ns)},
                 {"clock_uncertainty_ns", py::cast(profile.clock_uncertainty_ns)}});
  }

  // The graph's nodes and entries, to name what a profile measured.
  py::dict GraphInfo() const {
    RequireGraph("graph_info");
    const Graph& g = s_->graph->graph();
    py::list nodes;
    for (uint32_t id = 0; id < g.nodes.size(); ++id) {
      const GraphNode& n = g.nodes[id];
      std::vector<uint32_t> inputs, outputs;
      for (const auto& ref : n.inputs) inputs.push_back(g.entry_id(ref));
      for (uint32_t k = 0; k < n.num_outputs; ++k) outputs.push_back(g.entry_id(id, k));
      py::dict node;
      node["name"] = n.name;
      node["op"] = n.kind == GraphNode::Kind::kOp ? py::object(py::str(n.func_name)) : py::object(py::none());
      node["inputs"] = inputs;
      node["outputs"] = outputs;
      nodes.append(std::move(node));
    }
    py::list shapes, dtypes, devices;
    for (uint32_t eid = 0; eid < g.num_entries(); ++eid) {
      shapes.append(py::tuple(py::cast(g.shapes[eid])));
      dtypes.append(DataTypeToString(g.dtypes[eid]));
      devices.append(DeviceTuple(s_->graph->EntryDevice(eid)));
    }
    py::dict storage;
    for (const auto& [device, bytes] : s_->graph->StorageBytesPerDevice())
      storage[py::str(DeviceToString(device))] = bytes;
    py::dict out;
    out["nodes"] = std::move(nodes);
    out["shapes"] = std::move(shapes);
    out["dtypes"] = std::move(dtypes);
    out["devices"] = std::move(devices);
    out["storage_bytes"] = std::move(storage);
    return out;
  }

 private:
  template <typename F>
  void Locked(F&& f) const {
    py::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(s_->mutex);
    f();
  }
  int CheckInput(int i) const {
    if (i < 0 || i >= num_inputs())
      throw StatusError(OutOfRange("input index " + std::to_string(i) + " out of range (" +
                                   std::to_string(num_inputs()) + " inputs)"));
    return i;
  }
  int CheckOutput(int i) const {
    if (i < 0 || i >= num_outputs())
      throw StatusError(OutOfRange("output index " + std::to_string(i) + " out of range (" +
                                   std::to_string(num_outputs()) + " outputs)"));
    return i;
  }
  void RequireGraph(const char* what) const {
    if (s_->graph == nullptr)
      throw StatusError(
          Unimplemented(std::string(what) + " needs a graph executor; this is a '" + s_->kind + "' executor"));
  }
  // Zero-copy binding is the graph executor's: same device, 64-byte aligned.
  bool CanBind(int index, const Tensor& value) const {
    return s_->graph != nullptr && s_->graph->InputTakesInPlace(index, value);
  }

  std::shared_ptr<Session> s_;
};

}  // namespace

void RegisterExecutor(py::module_& m) {
  py::class_<PyExecutor>(m, "Executor", "The core executor behind hetrt.GraphModule.")
      .def_static("from_module", &PyExecutor::FromModule, py::arg("root"), py::arg("devices"),
                  py::arg("sequential") = false, py::arg("staged_copies") = false)
      .def_static("from_mlf", &PyExecutor::FromMlf, py::arg("path"), py::arg("host_driven") = false)
      .def_property_readonly("kind", &PyExecutor::kind)
      .def("num_inputs", &PyExecutor::num_inputs)
      .def("num_outputs", &PyExecutor::num_outputs)
      .def("input_name", &PyExecutor::input_name)
      .def("output_name", &PyExecutor::output_name)
      .def("input_index", &PyExecutor::input_index)
      .def("unbound_inputs", &PyExecutor::unbound_inputs)
      .def("input_info", &PyExecutor::input_info)
      .def("output_info", &PyExecutor::output_info)
      .def("set_inputs", &PyExecutor::SetInputs, py::arg("inputs"), py::arg("zero_copy") = false,
           py::arg("run") = false)
      .def("set_output_zero_copy", &PyExecutor::SetOutputZeroCopy)
      .def("run", &PyExecutor::Run)
      .def("synchronize", &PyExecutor::Synchronize)
      .def("get_output", &PyExecutor::GetOutput)
      .def("input_tensor", &PyExecutor::InputTensor)
      .def("load_params", &PyExecutor::LoadParams)
      .def("time_runs", &PyExecutor::TimeRuns)
      .def("run_profiled", &PyExecutor::RunProfiled)
      .def("graph_info", &PyExecutor::GraphInfo);
}

}  // namespace hetrt::python
