// A library of tvm-ffi kernels: a shared object that exports __tvm_ffi_<name>
// functions and no model (no blob). Other compilers emit these (Triton,
// TileLang, ...), and so does TVM v0.22+ for a plain TIR module; hetrt loads
// one and calls its kernels with tensors on any plugin device
// (docs/tvm-ffi.md (i); docs/kernel-libraries.md).
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hetrt/base/status.h"
#include "hetrt/tvm_abi/tvm_ffi_context.h"
#include "hetrt/tvm_abi/tvm_ffi_values.h"

namespace hetrt {

class KernelLibrary;

// One kernel of a library; keeps the library loaded.
// Thread contract: thread-safe: calls may come from any thread at once, as
// far as the kernel itself allows.
class Kernel {
 public:
  const std::string& name() const { return name_; }
  // Calls it. Tensors go as Tensor objects the kernel may keep (it takes a
  // reference); a kernel's raised error becomes a Status naming the kernel,
  // the library, the error's kind and message; `raised` gets kind and message.
  Result<FfiValue> Call(std::span<const FfiValue> args, FfiRaised* raised = nullptr) const;

 private:
  friend class KernelLibrary;
  std::shared_ptr<const KernelLibrary> library_;
  std::string name_;
  std::string what_;  // "kernel 'add_one' in libk.so"
  hetrt_ffi_safe_call_t function_ = nullptr;
};

// Thread contract: thread-safe once opened (lookups from its code are serialized).
class KernelLibrary : public std::enable_shared_from_this<KernelLibrary>, public FfiFunctionEnvironment {
 public:
  // Loads `path` (RTLD_NOW: a symbol hetrt does not provide fails here, by
  // name) and fills the context pointers TVM's generated code defines
  // (workspace, parallel launch, errors, function lookup). A TVM model
  // library (one with a blob) is refused: open it as a model. So is TVM v0.21's
  // transitional ABI.
  static Result<std::shared_ptr<KernelLibrary>> Open(const std::string& path);
  ~KernelLibrary();
  KernelLibrary(const KernelLibrary&) = delete;
  KernelLibrary& operator=(const KernelLibrary&) = delete;

  const std::string& path() const { return path_; }
  // The kernels' names (symbols without the __tvm_ffi_ prefix), sorted.
  const std::vector<std::string>& names() const { return names_; }
  // NOT_FOUND listing the kernels there are.
  Result<Kernel> Find(std::string_view name) const;
  // What __tvm_ffi__metadata_<name> / __tvm_ffi__doc_<name> return (JSON, text);
  // empty when the library has no such function.
  Result<std::string> Metadata(std::string_view name) const;
  Result<std::string> Doc(std::string_view name) const;

  // Registers every kernel as a global function named `prefix` + its name, so
  // that models' extern calls reach it (a Relax call_packed, TVM host code's
  // lookups); the library stays loaded for as long as the process runs. Fails,
  // registering none, when a name is taken.
  Status RegisterGlobalFunctions(const std::string& prefix = "");

  // What the library's code looks up (__tvm_set_device, extern functions):
  // a kernel library has no imports, so hetrt's global functions.
  Result<hetrt_ffi_object_t*> LookupFfiFunction(std::string_view name) override;

 private:
  KernelLibrary(std::string path, void* handle) : path_(std::move(path)), handle_(handle) {}
  Result<std::string> CallStringFunction(const std::string& symbol, std::string_view name) const;

  std::string path_;
  void* handle_;
  std::vector<std::string> names_;
  std::mutex lookups_mutex_;
  std::map<std::string, hetrt_ffi_object_t*, std::less<>> lookups_;  // kept until the library goes
};

// Whether the dynamic symbols of a file name tvm-ffi kernels and no model
// blob: what `hetrt inspect` and the model loader use to tell the two apart.
bool IsKernelLibraryFile(const std::string& path);

}  // namespace hetrt
