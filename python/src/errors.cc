// Core errors as Python exceptions: hetrt.Error (a RuntimeError) and, per
// status code, a subclass that is also the matching built-in exception, so
// `except ValueError` and `except hetrt.Error` both work. The message is the
// core's, unchanged; `code` holds the status code's name.
#include <array>

#include "bindings.h"

namespace hetrt::python {
namespace {

struct ErrorClass {
  StatusCode code;
  const char* name;
  PyObject* builtin;  // the second base, or NULL
};

constexpr size_t kNumCodes = static_cast<size_t>(StatusCode::kInternal) + 1;
std::array<PyObject*, kNumCodes> g_classes{};  // per code; live for the process
PyObject* g_error = nullptr;

}  // namespace

void RegisterErrors(py::module_& m) {
  g_error =
      PyErr_NewExceptionWithDoc("hetrt.Error", "An error reported by the hetrt core.", PyExc_RuntimeError, nullptr);
  m.add_object("Error", py::handle(g_error));
  const ErrorClass classes[] = {
      {StatusCode::kInvalidArgument, "InvalidArgumentError", PyExc_ValueError},
      {StatusCode::kNotFound, "NotFoundError", PyExc_LookupError},
      {StatusCode::kOutOfRange, "OutOfRangeError", PyExc_IndexError},
      {StatusCode::kDataLoss, "DataLossError", nullptr},
      {StatusCode::kUnimplemented, "UnimplementedError", PyExc_NotImplementedError},
      {StatusCode::kUnavailable, "UnavailableError", nullptr},
      {StatusCode::kResourceExhausted, "ResourceExhaustedError", PyExc_MemoryError},
      {StatusCode::kFailedPrecondition, "FailedPreconditionError", nullptr},
      {StatusCode::kInternal, "InternalError", nullptr},
  };
  g_classes.fill(g_error);
  for (const ErrorClass& c : classes) {
    py::tuple bases =
        c.builtin ? py::make_tuple(py::handle(g_error), py::handle(c.builtin)) : py::make_tuple(py::handle(g_error));
    PyObject* cls = PyErr_NewException((std::string("hetrt.") + c.name).c_str(), bases.ptr(), nullptr);
    if (cls == nullptr) throw py::error_already_set();
    g_classes[static_cast<size_t>(c.code)] = cls;
    m.add_object(c.name, py::handle(cls));
  }
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const StatusError& e) {
      PyObject* cls = g_classes[static_cast<size_t>(e.status().code())];
      py::object error =
          py::reinterpret_steal<py::object>(PyObject_CallFunction(cls, "s", e.status().message().c_str()));
      if (!error) return;  // the call set its own exception
      error.attr("code") = StatusCodeName(e.status().code());
      PyErr_SetObject(cls, error.ptr());
    }
  });
}

}  // namespace hetrt::python
