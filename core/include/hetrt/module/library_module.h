// The host-library module: a dlopen'ed shared object whose exported packed
// functions (the operator kernels TVM compiled) are looked up with dlsym.
#pragma once

#include <memory>
#include <string>

#include "hetrt/module/module.h"

namespace hetrt {

class LibraryModule final : public Module {
 public:
  // dlopen + fill the library's TVM backend pointers. The module context
  // (__tvm_module_ctx) is set once the tree is built: see InstallContext.
  static Result<std::shared_ptr<LibraryModule>> Open(const std::string& path);
  ~LibraryModule() override;

  Result<const PackedFunc*> GetOwnFunction(std::string_view name) override;
  std::vector<std::string> ListFunctionNames() const override;
  std::string Describe() const override { return path_; }
  bool IsHostLibrary() const override { return true; }

  // A raw symbol address (data or code), nullptr when absent.
  void* FindSymbol(const char* name) const;
  // Points the library's __tvm_module_ctx at this module (GetFuncFromEnv's root).
  bool InstallContext();
  const std::string& path() const { return path_; }
  void* dl_handle() const { return handle_; }

 private:
  LibraryModule(std::string path, void* handle);

  std::string path_;
  void* handle_;
  uintptr_t base_ = 0;  // load address, to tell this library's symbols from its dependencies'
  FunctionTable functions_;
};

}  // namespace hetrt
