// hetrt._hetrt: the extension behind the `hetrt` Python package.
#include "bindings.h"

PYBIND11_MODULE(_hetrt, m) {
  m.doc() = "hetrt's core, bound with pybind11; use the `hetrt` package.";
  hetrt::python::RegisterErrors(m);
  hetrt::python::RegisterTensor(m);
  hetrt::python::RegisterModules(m);
  hetrt::python::RegisterExecutor(m);
  hetrt::python::RegisterRelaxVM(m);
  hetrt::python::RegisterKernels(m);
  hetrt::python::RegisterLlm(m);
}
