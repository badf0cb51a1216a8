// Writing what the loader reads: a module tree as a __tvm_dev_mblob, that blob
// as a compact devc.c, and host objects + devc.c linked into one shared library
// (TVM's export_library), or packed into a .tar.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hetrt/base/library_abi.h"
#include "hetrt/module/module.h"

namespace hetrt {

// Stands for host code that an export will link in (object files or C sources):
// the "_lib" slot of a tree that has not been built into a library yet.
// Thread contract: thread-compatible (one export at a time uses it).
class PendingHostLibrary final : public Module {
 public:
  PendingHostLibrary() : Module("library") {}
  Result<const PackedFunc*> GetOwnFunction(std::string_view name) override {
    return FailedPrecondition("host code is not linked yet (looking up '" + std::string(name) + "')");
  }
  bool IsHostLibrary() const override { return true; }
  std::string Describe() const override { return "host code to be linked"; }
};

// The blob symbol's bytes: u64 length prefix + payload. Modules are numbered
// in depth-first pre-order, every host library sharing one "_lib" slot.
// LibraryAbi::kPackedFunc writes __tvm_dev_mblob's layout (entry count first,
// the CSR import tree last); kTvmFfi TVM v0.22+'s __tvm_ffi__library_bin (the
// import tree first, every payload length-prefixed, device payloads in their
// v0.21+ form, Vulkan shaders wrapped as v0.24+ writes them). A Relax
// executable's image is written as it is: its constant tags must already be
// the ABI's (RelaxExecutable::abi).
Result<std::vector<uint8_t>> SerializeModuleTree(const Module& root, LibraryAbi abi = LibraryAbi::kPackedFunc);

// How devc.c names and publishes the blob.
struct DevcOptions {
  // For a system library (TVM's --system-lib): a static constructor registers
  // the blob with TVMBackendRegisterSystemLibSymbol, and LoadSystemLib finds
  // it there once the object is linked into a program.
  bool system_lib = false;
  // TVM's system-lib prefix, in front of the symbol's name (system_lib only).
  std::string symbol_prefix = {};
  // __tvm_dev_mblob, or __tvm_ffi__library_bin for a tvm-ffi blob.
  LibraryAbi abi = LibraryAbi::kPackedFunc;
};
// C source defining `const unsigned char __tvm_dev_mblob[]` as string literals
// (compiles in seconds for tens of megabytes, unlike a list of integers).
std::string EmitDevcC(std::span<const uint8_t> blob_symbol, const DevcOptions& options = {});

struct LinkOptions {
  std::string compiler = "cc";          // or a cross compiler
  std::vector<std::string> flags = {};  // extra flags, e.g. --target/-march
};
// `cc -shared -fPIC -o output inputs...`; the error carries the compiler's output.
Status LinkSharedLibrary(const std::vector<std::string>& inputs, const std::string& output, const LinkOptions& options);

// Exports: host objects/C sources + the tree's blob as devc.c -> `output`
// (.so, or .tar holding the inputs and devc.c). The root's host library, if
// any, is not re-linked: pass its objects in `host_inputs`.
Status ExportLibrary(const Module& root, const std::vector<std::string>& host_inputs, const std::string& output,
                     const LinkOptions& options);

}  // namespace hetrt
