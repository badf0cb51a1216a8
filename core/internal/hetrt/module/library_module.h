// The host-library module: a dlopen'ed shared object whose exported
// functions (the operator kernels TVM compiled) are looked up with dlsym.
// Either ABI (hetrt/base/library_abi.h): packed functions under their own
// names, or tvm-ffi functions as __tvm_ffi_<name>, which it hands out as
// packed functions so executors call both alike.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "hetrt/base/library_abi.h"
#include "hetrt/module/module.h"
#include "hetrt/tvm_abi/tvm_ffi_context.h"

namespace hetrt {

// Thread contract: thread-safe, as Module (lookups cache under a lock).
class LibraryModule final : public Module, public FfiFunctionEnvironment {
 public:
  // dlopen + fill the library's context pointers for its ABI (told by its
  // symbols: __tvm_ffi__library_bin / __tvm_ffi__library_ctx mean tvm-ffi;
  // TVM v0.21's one-underscore names are refused). The module context is set
  // once the tree is built: see InstallContext.
  static Result<std::shared_ptr<LibraryModule>> Open(const std::string& path);
  ~LibraryModule() override;

  LibraryAbi abi() const { return abi_; }
  // tvm-ffi libraries' lookups (device kernels, __tvm_set_device, externs):
  // the imports, then the global functions, as Function objects kept here.
  Result<hetrt_ffi_object_t*> LookupFfiFunction(std::string_view name) override;

  Result<const PackedFunc*> GetOwnFunction(std::string_view name) override;
  std::vector<std::string> ListFunctionNames() const override;
  std::string Describe() const override { return path_; }
  bool IsHostLibrary() const override { return true; }

  // A raw symbol address (data or code), nullptr when absent.
  void* FindSymbol(const char* name) const;
  // Points the library's module context (__tvm_module_ctx, or
  // __tvm_ffi__library_ctx) at this module (the lookups' root).
  bool InstallContext();
  const std::string& path() const { return path_; }
  void* dl_handle() const { return handle_; }

 private:
  LibraryModule(std::string path, void* handle);

  std::string path_;
  void* handle_;
  uintptr_t base_ = 0;  // load address, to tell this library's symbols from its dependencies'
  LibraryAbi abi_ = LibraryAbi::kPackedFunc;
  FunctionTable functions_;
  std::mutex ffi_lookups_mutex_;
  std::map<std::string, hetrt_ffi_object_t*, std::less<>> ffi_lookups_;  // released with the module
};

}  // namespace hetrt
