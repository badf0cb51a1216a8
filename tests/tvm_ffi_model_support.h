// TVM v0.22+ model libraries made without TVM, for the tests: Relax
// executables over the kernels of tests/kernels/ffi_model_host.c, exported in
// the __tvm_ffi__library_bin layout with the host code linked in.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "hetrt/relax/vm.h"

namespace hetrt::testing {

// The bias every model adds: [0.5, 1, 1.5, 2].
Tensor FfiModelBias();

// main(x: float32[2, 4]) -> x + bias, checked and allocated as TVM's
// bytecode does (check_tensor_info, match_shape, alloc_storage/alloc_tensor).
RelaxExecutable ServedFfiModelExecutable();

// main(a, b, c): host function `name`(a, b, c), returning c (a V2 image): the
// host functions of tests/kernels/ffi_model_host.c that launch device kernels.
RelaxExecutable DeviceAddExecutable(const std::string& name);

// Writes `exe` (its abi must be kTvmFfi) to `path` as TVM v0.22+ would: the
// blob as devc.c, linked with the host code, whose imports are `device_modules`.
Status ExportFfiModel(const RelaxExecutable& exe, const std::string& path,
                      std::vector<std::shared_ptr<Module>> device_modules = {});

}  // namespace hetrt::testing
