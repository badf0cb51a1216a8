// Shared pieces of the hetrt Python extension: errors as exceptions, tensors
// that keep their memory's owner alive, and the registration functions of
// each part.
#pragma once

#include <pybind11/pybind11.h>

#include <exception>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "hetrt/base/status.h"
#include "hetrt/base/tensor.h"

namespace hetrt::python {

namespace py = pybind11;

// A core Status on its way to Python; the translator turns it into the
// exception class of its code, carrying the core's message unchanged.
class StatusError : public std::exception {
 public:
  explicit StatusError(Status status) : status_(std::move(status)) {}
  const Status& status() const { return status_; }
  const char* what() const noexcept override { return status_.message().c_str(); }

 private:
  Status status_;
};

inline void Check(const Status& status) {
  if (!status.ok()) throw StatusError(status);
}
template <typename T>
T Unwrap(Result<T> result) {
  if (!result.ok()) throw StatusError(result.status());
  return std::move(result).value();
}

// A tensor seen from Python. `tensor` may be a view of memory that `owner`
// keeps alive: an executor's storage, a numpy array, a DLPack producer's buffer.
struct PyTensor {
  Tensor tensor;
  std::shared_ptr<void> owner;
};

// The bytes of a Python bytes object (valid while it lives).
// A dict from (key, value) pairs: C++ records handed to Python as plain data.
inline py::dict Dict(std::initializer_list<std::pair<const char*, py::object>> items) {
  py::dict d;
  for (const auto& [key, value] : items) d[key] = value;
  return d;
}

inline std::span<const uint8_t> BytesOf(const py::bytes& bytes) {
  const std::string_view view = bytes;
  return {reinterpret_cast<const uint8_t*>(view.data()), view.size()};
}

// Holds a Python object from C++; the reference is dropped with the GIL held,
// whichever thread releases the last owner.
std::shared_ptr<void> KeepAlive(py::handle object);

// Any accepted input value as a compact tensor: a hetrt.Tensor, a DLPack
// capsule, an object with __dlpack__, or anything numpy.asarray takes.
// `private_copy` says whether the memory is a fresh buffer made here (the
// caller's array was not C-contiguous, not native byte order, or not an array).
PyTensor ToTensor(py::handle value, bool* private_copy);

void RegisterErrors(py::module_& m);
void RegisterTensor(py::module_& m);
void RegisterModules(py::module_& m);
void RegisterExecutor(py::module_& m);
void RegisterRelaxVM(py::module_& m);
void RegisterKernels(py::module_& m);
void RegisterLlm(py::module_& m);

}  // namespace hetrt::python
