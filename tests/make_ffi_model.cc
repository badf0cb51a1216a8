// make_ffi_model OUT.so: writes a model library in TVM v0.23+'s form
// (tvm_ffi_model_support.h), main(x: float32[2, 4]) -> x + [0.5, 1, 1.5, 2],
// for the Python and serving tests of the new eras.
#include <cstdio>

#include "tvm_ffi_model_support.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_ffi_model OUT.so\n");
    return 2;
  }
  hetrt::Status s = hetrt::testing::ExportFfiModel(hetrt::testing::ServedFfiModelExecutable(), argv[1]);
  if (!s.ok()) {
    std::fprintf(stderr, "make_ffi_model: %s\n", s.message().c_str());
    return 1;
  }
  return 0;
}
