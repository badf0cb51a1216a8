// Which calling convention a TVM-compiled library speaks (docs/tvm-ffi.md
// (a)): TVM's packed functions (v0.14 to v0.20: __tvm_dev_mblob, TVMValue and
// type codes) or tvm-ffi (v0.22+: __tvm_ffi__library_bin, TVMFFIAny). It
// decides the blob layout, the constant tags of a Relax image and how
// functions are called.
#pragma once

namespace hetrt {

enum class LibraryAbi { kPackedFunc, kTvmFfi };

inline const char* LibraryAbiName(LibraryAbi abi) {
  return abi == LibraryAbi::kTvmFfi ? "tvm-ffi (TVM v0.22+)" : "packed functions (TVM v0.20 or older)";
}

}  // namespace hetrt
