// hetrt._hetrt.RelaxVM: a Relax executable's VM for Python. Arguments come
// from numpy, DLPack, hetrt.Tensor, Python scalars and tuples; each tensor is
// moved to the device the function reads it on. Results come back as
// hetrt.Tensor (host memory; numpy and DLPack share it), tuples and scalars.
#include <pybind11/stl.h>

#include <map>

#include "bindings.h"
#include "hetrt/base/dtype.h"
#include "hetrt/exec/relax_executor.h"
#include "hetrt/plugin_host/plugin_registry.h"

namespace hetrt::python {
namespace {

class PyRelaxVM {
 public:
  PyRelaxVM(std::shared_ptr<Module> root, const std::vector<std::pair<int, int>>& devices, bool pooled) {
    RelaxVirtualMachine::Options options;
    options.devices.clear();
    for (const auto& [type, id] : devices) options.devices.push_back({static_cast<DLDeviceType>(type), id});
    options.allocator = pooled ? RelaxVirtualMachine::AllocatorKind::kPooled : RelaxVirtualMachine::AllocatorKind::kNaive;
    vm_ = Unwrap(RelaxVirtualMachine::Create(std::move(root), std::move(options)));
  }

  std::vector<std::string> FunctionNames() const { return vm_->FunctionNames(); }
  std::vector<std::string> ParamNames(const std::string& name) const {
    return vm_->ParamNames(Unwrap(vm_->FindFunction(name)));
  }
  std::vector<std::pair<int, int>> Devices() const {
    std::vector<std::pair<int, int>> out;
    for (const DLDevice& d : vm_->devices()) out.emplace_back(static_cast<int>(d.device_type), d.device_id);
    return out;
  }

  py::object Invoke(const std::string& name, const py::sequence& args) {
    const uint32_t function = Unwrap(vm_->FindFunction(name));
    const RelaxSignature& sig = Signature(function);
    if (py::len(args) != sig.params.size())
      throw StatusError(InvalidArgument("function '" + name + "' takes " + std::to_string(sig.params.size()) +
                                        " argument(s), got " + std::to_string(py::len(args))));
    std::vector<RelaxValue> values;
    std::vector<std::shared_ptr<void>> keep;  // borrowed Python memory, held through the call
    for (size_t i = 0; i < sig.params.size(); ++i) {
      const DLDevice device = vm_->devices()[static_cast<size_t>(sig.params[i].device_index)];
      values.push_back(ToValue(args[i], device, keep));
    }
    RelaxValue result;
    {
      py::gil_scoped_release release;
      result = Unwrap(vm_->Invoke(function, values));
    }
    return ToPython(result);
  }

 private:
  const RelaxSignature& Signature(uint32_t function) {
    auto it = signatures_.find(function);
    if (it == signatures_.end())
      it = signatures_.emplace(function, AnalyzeRelaxFunction(vm_->executable(), function, vm_->devices())).first;
    return it->second;
  }

  RelaxValue ToValue(py::handle value, DLDevice device, std::vector<std::shared_ptr<void>>& keep) {
    if (value.is_none()) return RelaxValue();
    if (py::isinstance<py::bool_>(value) || py::isinstance<py::int_>(value))
      return RelaxValue::Int(value.cast<int64_t>());
    if (py::isinstance<py::float_>(value)) return RelaxValue::Float(value.cast<double>());
    if (py::isinstance<py::tuple>(value) || py::isinstance<py::list>(value)) {
      RelaxTuple items;
      for (py::handle item : value) items.push_back(ToValue(item, device, keep));
      return RelaxValue::Tuple(std::move(items));
    }
    bool private_copy = false;
    PyTensor t = ToTensor(value, &private_copy);
    keep.push_back(t.owner);
    return RelaxValue::FromTensor(Unwrap(vm_->ToDevice(t.tensor, device)));
  }

  py::object ToPython(const RelaxValue& v) {
    switch (v.kind()) {
      case RelaxValue::Kind::kNull: return py::none();
      case RelaxValue::Kind::kInt: return py::int_(v.int_value());
      case RelaxValue::Kind::kFloat: return py::float_(v.float_value());
      case RelaxValue::Kind::kString: return py::str(v.string());
      case RelaxValue::Kind::kShape: return py::tuple(py::cast(v.shape()));
      case RelaxValue::Kind::kDataType: return py::str(DataTypeToString(v.dtype()));
      case RelaxValue::Kind::kTuple: {
        py::tuple out(v.tuple().size());
        for (size_t i = 0; i < v.tuple().size(); ++i) out[i] = ToPython(v.tuple()[i]);
        return out;
      }
      case RelaxValue::Kind::kTensor: {
        const Tensor& t = v.tensor();
        if (t.device().device_type == kDLCPU) return py::cast(PyTensor{t, nullptr});
        Check(vm_->Synchronize());
        return py::cast(PyTensor{Unwrap(vm_->plugins().ToHost(t)), nullptr});
      }
      default:
        throw StatusError(Unimplemented(std::string("a result of kind ") + RelaxValue::KindName(v.kind()) +
                                        " cannot be returned to Python"));
    }
  }

  std::unique_ptr<RelaxVirtualMachine> vm_;
  std::map<uint32_t, RelaxSignature> signatures_;
};

}  // namespace

void RegisterRelaxVM(py::module_& m) {
  py::class_<PyRelaxVM>(m, "RelaxVM", "A Relax executable's virtual machine (use hetrt.VirtualMachine).")
      .def(py::init<std::shared_ptr<Module>, const std::vector<std::pair<int, int>>&, bool>(), py::arg("root"),
           py::arg("devices"), py::arg("pooled") = true)
      .def("function_names", &PyRelaxVM::FunctionNames)
      .def("param_names", &PyRelaxVM::ParamNames, py::arg("name"))
      .def("devices", &PyRelaxVM::Devices)
      .def("invoke", &PyRelaxVM::Invoke, py::arg("name"), py::arg("args"));
}

}  // namespace hetrt::python
