// hetrt._hetrt.KernelLibrary: tvm-ffi kernels (Triton, TileLang, TVM) from
// Python. Arguments are numpy arrays, DLPack tensors, hetrt.Tensor and Python
// scalars and strings; the kernel sees the arrays' own memory (destination
// passing writes into them). A kernel's raised error becomes the Python
// exception its kind names (ValueError, TypeError, ...), RuntimeError for
// kinds Python has no class for, with the kernel and library in the message.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <optional>

#include "bindings.h"
#include "hetrt/module/kernel_library.h"
#include "hetrt/plugin_host/plugin_registry.h"

namespace hetrt::python {
namespace {

// The built-in exception a kernel's error kind names, or RuntimeError.
PyObject* ExceptionOfKind(const std::string& kind) {
  static const std::pair<const char*, PyObject*> kinds[] = {
      {"ValueError", PyExc_ValueError},       {"TypeError", PyExc_TypeError},
      {"IndexError", PyExc_IndexError},       {"KeyError", PyExc_KeyError},
      {"AttributeError", PyExc_AttributeError}, {"NotImplementedError", PyExc_NotImplementedError},
      {"MemoryError", PyExc_MemoryError},     {"RuntimeError", PyExc_RuntimeError},
  };
  for (const auto& [name, cls] : kinds)
    if (kind == name) return cls;
  return PyExc_RuntimeError;
}

class PyKernel {
 public:
  explicit PyKernel(Kernel kernel) : kernel_(std::move(kernel)) {}
  const std::string& name() const { return kernel_.name(); }

  py::object Call(const py::args& args) {
    std::vector<FfiValue> values;
    std::vector<std::shared_ptr<void>> keep;  // Python memory the tensors borrow, held through the call
    for (size_t i = 0; i < args.size(); ++i) values.push_back(ToValue(args[i], i, keep));
    FfiRaised raised;
    std::optional<Result<FfiValue>> result;
    {
      py::gil_scoped_release release;
      result.emplace(kernel_.Call(values, &raised));
    }
    if (!result->ok()) {
      if (raised.kind.empty()) throw StatusError(result->status());
      py::object error = py::reinterpret_steal<py::object>(
          PyObject_CallFunction(ExceptionOfKind(raised.kind), "s", result->status().message().c_str()));
      if (!error) throw py::error_already_set();
      error.attr("kind") = raised.kind;
      error.attr("kernel_message") = raised.message;
      PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(error.ptr())), error.ptr());
      throw py::error_already_set();
    }
    return ToPython(std::move(*result).value());
  }

 private:
  FfiValue ToValue(py::handle value, size_t index, std::vector<std::shared_ptr<void>>& keep, int depth = 0) {
    if (value.is_none()) return FfiValue{};
    if (py::isinstance<py::bool_>(value)) return FfiValue{value.cast<bool>()};
    if (py::isinstance<py::int_>(value)) return FfiValue{value.cast<int64_t>()};
    if (py::isinstance<py::float_>(value)) return FfiValue{value.cast<double>()};
    if (py::isinstance<py::str>(value)) return FfiValue{value.cast<std::string>()};
    // A tuple or list is an Array, as tvm-ffi's Python package passes it.
    if (py::isinstance<py::tuple>(value) || py::isinstance<py::list>(value)) {
      if (depth >= 64)  // a list that holds itself would recurse for ever
        throw StatusError(InvalidArgument("argument " + std::to_string(index) + " of kernel '" + kernel_.name() +
                                          "': lists or tuples nested deeper than 64"));
      FfiArray array;
      for (py::handle item : value) array.items.push_back(ToValue(item, index, keep, depth + 1));
      return FfiValue{std::move(array)};
    }
    bool private_copy = false;
    PyTensor t = ToTensor(value, &private_copy);
    // A kernel may write into any tensor it gets: a copy of the caller's
    // array would take those writes and drop them.
    if (private_copy && py::isinstance<py::array>(value))
      throw StatusError(InvalidArgument("argument " + std::to_string(index) + " of kernel '" + kernel_.name() +
                                        "' is a numpy array that is not C-contiguous in native byte order: kernels "
                                        "get the array's own memory; pass numpy.ascontiguousarray(x)"));
    keep.push_back(t.owner);
    return FfiValue{t.tensor};
  }

  static py::object ToPython(FfiValue value) {
    if (std::holds_alternative<std::monostate>(value)) return py::none();
    if (auto* b = std::get_if<bool>(&value)) return py::bool_(*b);
    if (auto* i = std::get_if<int64_t>(&value)) return py::int_(*i);
    if (auto* f = std::get_if<double>(&value)) return py::float_(*f);
    if (auto* s = std::get_if<std::string>(&value)) return py::str(*s);
    if (auto* shape = std::get_if<FfiShape>(&value)) return py::tuple(py::cast(shape->dims));
    if (auto* array = std::get_if<FfiArray>(&value)) {
      py::list items;
      for (FfiValue& item : array->items) items.append(ToPython(std::move(item)));
      return items;
    }
    Tensor& t = std::get<Tensor>(value);
    if (t.device().device_type == kDLCPU) return py::cast(PyTensor{std::move(t), nullptr});
    return py::cast(PyTensor{Unwrap(PluginRegistry::Global().ToHost(t)), nullptr});
  }

  Kernel kernel_;
};

}  // namespace

void RegisterKernels(py::module_& m) {
  py::class_<PyKernel>(m, "Kernel", "One kernel of a tvm-ffi kernel library; call it with its arguments.")
      .def_property_readonly("name", &PyKernel::name)
      .def("__call__", &PyKernel::Call)
      .def("__repr__", [](const PyKernel& k) { return "<hetrt.Kernel " + k.name() + ">"; });
  py::class_<KernelLibrary, std::shared_ptr<KernelLibrary>>(m, "KernelLibrary",
                                                           "A shared library of tvm-ffi kernels (__tvm_ffi_<name>).")
      .def_property_readonly("path", &KernelLibrary::path)
      .def_property_readonly("names", &KernelLibrary::names)
      .def("__getitem__", [](const KernelLibrary& l, const std::string& name) { return PyKernel(Unwrap(l.Find(name))); })
      .def("__contains__",
           [](const KernelLibrary& l, const std::string& name) {
             return std::binary_search(l.names().begin(), l.names().end(), name);
           })
      .def("__iter__", [](const KernelLibrary& l) { return py::iter(py::cast(l.names())); })
      .def("__len__", [](const KernelLibrary& l) { return l.names().size(); })
      .def("metadata", [](const KernelLibrary& l, const std::string& name) { return Unwrap(l.Metadata(name)); })
      .def("doc", [](const KernelLibrary& l, const std::string& name) { return Unwrap(l.Doc(name)); })
      .def(
          "register_global_functions",
          [](KernelLibrary& l, const std::string& prefix) { Check(l.RegisterGlobalFunctions(prefix)); },
          py::arg("prefix") = "",
          "Makes every kernel a global function named prefix + name, which models' extern calls reach.");
  m.def(
      "load_kernels",
      [](const std::string& path) {
        py::gil_scoped_release release;
        return Unwrap(KernelLibrary::Open(path));
      },
      py::arg("path"));
}

}  // namespace hetrt::python
