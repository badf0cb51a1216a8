// hetrt.Tensor, numpy views and DLPack both ways. Nothing here copies unless
// it must: host tensors become numpy arrays over the same memory (the array's
// base keeps the tensor, and so its owner, alive); numpy arrays and DLPack
// producers are borrowed while a PyTensor holds them.
#include <dlpack/dlpack.h>
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include "bindings.h"
#include "hetrt/base/dtype.h"
#include "hetrt/plugin_host/plugin_registry.h"

namespace hetrt::python {
namespace {

py::dtype NumpyDtype(DLDataType type) {
  const std::string name = DataTypeToString(type);
  if (type.lanes != 1) throw StatusError(InvalidArgument("numpy has no dtype for " + name + " (vector lanes)"));
  try {
    return py::dtype(name);
  } catch (const py::error_already_set&) {
    throw StatusError(InvalidArgument("numpy has no dtype " + name));
  }
}

// From the descriptor's kind and size (no string parsing on the input path);
// other kinds go through the core's parser, which names what it refuses.
DLDataType DtypeOf(const py::array& array) {
  const py::dtype dtype = array.dtype();
  const auto bits = static_cast<uint8_t>(dtype.itemsize() * 8);
  switch (dtype.kind()) {
    case 'f': return {kDLFloat, bits, 1};
    case 'i': return {kDLInt, bits, 1};
    case 'u': return {kDLUInt, bits, 1};
    case 'b': return {kDLUInt, 1, 1};  // TVM's bool
    default: return Unwrap(ParseDataType(py::str(dtype.attr("name")).cast<std::string>()));
  }
}

bool IsNativeByteOrder(const py::dtype& dtype) {
  constexpr char kForeign = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? '>' : '<';
  return dtype.byteorder() != kForeign;
}

std::vector<int64_t> ShapeOf(const DLTensor& dl) { return {dl.shape, dl.shape + dl.ndim}; }

bool IsHost(DLDevice device) { return device.device_type == kDLCPU; }

// A numpy array over a host tensor's memory; `self` (the hetrt.Tensor) is its base.
py::array ViewOf(const py::object& self) {
  const PyTensor& t = self.cast<const PyTensor&>();
  const DLTensor& dl = *t.tensor.dl();
  py::dtype dtype = NumpyDtype(dl.dtype);
  std::vector<py::ssize_t> shape(dl.shape, dl.shape + dl.ndim), strides(shape.size());
  py::ssize_t stride = dtype.itemsize();
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = stride;
    stride *= shape[i];
  }
  return py::array(dtype, shape, strides, static_cast<const uint8_t*>(dl.data) + dl.byte_offset, self);
}

// numpy view for host tensors; for device tensors, a host copy.
py::array HostArray(const py::object& self) {
  const PyTensor& t = self.cast<const PyTensor&>();
  if (IsHost(t.tensor.device())) return ViewOf(self);
  Tensor host;
  {
    py::gil_scoped_release release;
    host = Unwrap(PluginRegistry::Global().ToHost(t.tensor));
  }
  return ViewOf(py::cast(PyTensor{std::move(host), nullptr}));
}

// Consumes a "dltensor" capsule (renamed "used_dltensor", as the protocol asks);
// the producer's deleter runs when the last PyTensor over it goes.
PyTensor FromCapsule(py::handle capsule) {
  auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule.ptr(), "dltensor"));
  if (managed == nullptr) throw py::error_already_set();  // not a DLPack capsule, or consumed already
  PyCapsule_SetName(capsule.ptr(), "used_dltensor");
  std::shared_ptr<void> owner(managed, [](void* p) {
    auto* m = static_cast<DLManagedTensor*>(p);
    if (m->deleter == nullptr || !Py_IsInitialized()) return;
    py::gil_scoped_acquire gil;  // producers' deleters may touch Python objects
    m->deleter(m);
  });
  const DLTensor& dl = managed->dl_tensor;
  const std::vector<int64_t> shape = ShapeOf(dl);
  if (dl.strides != nullptr) {
    int64_t expected = 1;
    for (int i = dl.ndim; i-- > 0;) {
      if (shape[static_cast<size_t>(i)] != 1 && dl.strides[i] != expected)
        throw StatusError(InvalidArgument("the DLPack tensor is strided (shape " + ShapeToString(shape) +
                                          "); hetrt takes compact row-major tensors"));
      expected *= shape[static_cast<size_t>(i)];
    }
  }
  if (dl.byte_offset != 0 && !IsHost(dl.device))
    throw StatusError(InvalidArgument("the DLPack tensor on " + DeviceToString(dl.device) +
                                      " has a byte offset; hetrt takes device tensors at offset 0"));
  void* data = static_cast<uint8_t*>(dl.data) + dl.byte_offset;
  return {Tensor::Borrow(data, dl.device, shape, dl.dtype), std::move(owner)};
}

PyTensor FromDlpack(py::handle value) {
  if (PyCapsule_CheckExact(value.ptr())) return FromCapsule(value);
  if (!py::hasattr(value, "__dlpack__"))
    throw py::type_error("from_dlpack takes an object with __dlpack__ or a DLPack capsule");
  return FromCapsule(value.attr("__dlpack__")());
}

// What a "dltensor" capsule we hand out points at: the tensor (and so its
// owner) stays alive until the consumer calls the deleter.
struct DlpackExport {
  DLManagedTensor managed{};
  PyTensor tensor;
};

py::capsule ToCapsule(const PyTensor& tensor) {
  auto* e = new DlpackExport{{}, tensor};
  e->managed.dl_tensor = *e->tensor.tensor.dl();  // its shape points into e->tensor
  e->managed.manager_ctx = e;
  e->managed.deleter = [](DLManagedTensor* m) {
    py::gil_scoped_acquire gil;  // the owner may be a Python object
    delete static_cast<DlpackExport*>(m->manager_ctx);
  };
  PyObject* capsule = PyCapsule_New(&e->managed, "dltensor", [](PyObject* cap) {
    // Never consumed: the capsule still owns the tensor.
    if (!PyCapsule_IsValid(cap, "dltensor")) return;
    auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(cap, "dltensor"));
    m->deleter(m);
  });
  if (capsule == nullptr) {
    delete e;
    throw py::error_already_set();
  }
  return py::reinterpret_steal<py::capsule>(capsule);
}

py::object EmptyHost(std::vector<int64_t> shape, const std::string& dtype) {
  Tensor t = Unwrap(Tensor::EmptyHost(std::move(shape), Unwrap(ParseDataType(dtype))));
  return ViewOf(py::cast(PyTensor{std::move(t), nullptr}));
}

}  // namespace

std::shared_ptr<void> KeepAlive(py::handle object) {
  object.inc_ref();
  return std::shared_ptr<void>(object.ptr(), [](void* p) {
    if (!Py_IsInitialized()) return;
    py::gil_scoped_acquire gil;
    Py_DECREF(static_cast<PyObject*>(p));
  });
}

PyTensor ToTensor(py::handle value, bool* private_copy) {
  *private_copy = false;
  if (py::isinstance<PyTensor>(value)) return value.cast<PyTensor>();
  if (!py::isinstance<py::array>(value) && (PyCapsule_CheckExact(value.ptr()) || py::hasattr(value, "__dlpack__")))
    return FromDlpack(value);
  py::array array = py::isinstance<py::array>(value) ? py::reinterpret_borrow<py::array>(value)
                                                     : py::array(py::module_::import("numpy").attr("asarray")(value));
  const DLDataType dtype = DtypeOf(array);
  const std::vector<int64_t> shape(array.shape(), array.shape() + array.ndim());
  if ((array.flags() & py::array::c_style) && IsNativeByteOrder(array.dtype())) {
    *private_copy = !array.is(value);  // numpy made it from a list, a scalar, ...
    return {Tensor::Borrow(const_cast<void*>(array.data()), DLDevice{kDLCPU, 0}, shape, dtype), KeepAlive(array)};
  }
  // One copy, into 64-byte aligned memory of our own, in native byte order.
  *private_copy = true;
  py::object fresh = py::cast(PyTensor{Unwrap(Tensor::EmptyHost(shape, dtype)), nullptr});
  py::module_::import("numpy").attr("copyto")(ViewOf(fresh), array);
  return fresh.cast<PyTensor>();
}

void RegisterTensor(py::module_& m) {
  py::class_<PyTensor>(m, "Tensor", R"doc(
A tensor on a device, in the shape of TVM's NDArray. Host tensors are views:
numpy() / np.asarray() / np.from_dlpack() share the memory, and keep what owns
it (an executor, a numpy array, a DLPack producer) alive.)doc")
      .def_property_readonly("shape", [](const PyTensor& t) { return py::tuple(py::cast(t.tensor.shape())); })
      .def_property_readonly("dtype", [](const PyTensor& t) { return DataTypeToString(t.tensor.dtype()); })
      .def_property_readonly("device",
                             [](const PyTensor& t) {
                               return py::make_tuple(static_cast<int>(t.tensor.device().device_type),
                                                     t.tensor.device().device_id);
                             })
      .def_property_readonly("nbytes", [](const PyTensor& t) { return t.tensor.nbytes(); })
      .def_property_readonly(
          "data_ptr",
          [](const PyTensor& t) { return reinterpret_cast<uintptr_t>(t.tensor.data()) + t.tensor.dl()->byte_offset; },
          "Address of the first element (a device handle for device memory).")
      .def(
          "numpy", [](py::object self) { return HostArray(self); },
          "A numpy array: a view of host memory (no copy), a host copy of device memory.")
      .def(
          "__array__",
          [](py::object self, py::object dtype, py::object copy) {
            py::object array = HostArray(self);
            if (!dtype.is_none()) array = array.attr("astype")(dtype, py::arg("copy") = false);
            if (!copy.is_none() && copy.cast<bool>()) array = array.attr("copy")();
            return array;
          },
          py::arg("dtype") = py::none(), py::arg("copy") = py::none())
      .def(
          "__dlpack__",
          [](const PyTensor& t, py::object /*stream: host memory needs no sync*/) { return ToCapsule(t); },
          py::arg("stream") = py::none())
      .def("__dlpack_device__",
           [](const PyTensor& t) {
             return py::make_tuple(static_cast<int>(t.tensor.device().device_type), t.tensor.device().device_id);
           })
      .def("__repr__", [](const PyTensor& t) {
        return "hetrt.Tensor(shape=" + ShapeToString(t.tensor.shape()) +
               ", dtype=" + DataTypeToString(t.tensor.dtype()) + ", device=" + DeviceToString(t.tensor.device()) + ")";
      });
  m.def("from_dlpack", &FromDlpack, py::arg("value"),
        "A hetrt.Tensor over a DLPack producer's memory (an object with __dlpack__, or a capsule); no copy.");
  m.def(
      "tensor",
      [](py::handle value) {
        bool private_copy = false;
        return ToTensor(value, &private_copy);
      },
      py::arg("value"), "A hetrt.Tensor over `value`: no copy for C-contiguous native arrays and DLPack producers.");
  m.def("empty", &EmptyHost, py::arg("shape"), py::arg("dtype") = "float32",
        "An uninitialised numpy array in 64-byte aligned memory: inputs and outputs bound from it "
        "are used without a copy.");
}

}  // namespace hetrt::python
