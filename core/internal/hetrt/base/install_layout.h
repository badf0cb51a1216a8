// Where hetrt's own files are, found from the core library's location so that a
// build tree and an installed prefix work alike, with no environment variables:
//   <libdir>/libhetrt_core.so
//   <libdir>/hetrt-plugins/          plugins every registry loads by default
//   <libdir>/hetrt/kernels/          kernel objects the exporter links
//   <libdir>/../share/hetrt/         data: C headers for generated code, ...
// (A one-folder layout such as the Python package keeps data in <libdir>/share/hetrt.)
#pragma once

#include <string>

namespace hetrt {

// The folder holding libhetrt_core.so ("." if the loader cannot say).
std::string CoreLibraryDir();
// <libdir>/hetrt-plugins
std::string DefaultPluginDir();
// <libdir>/hetrt/kernels
std::string KernelObjectDir();
// <libdir>/../share/hetrt, or <libdir>/share/hetrt when that exists
std::string DataDir();
// <libdir>/../share/hetrt/include: tvm/runtime/*.h and dlpack/dlpack.h, what
// TVM-generated C code (MLF, AOT, devc.c) compiles against.
std::string GeneratedCodeIncludeDir();

}  // namespace hetrt
