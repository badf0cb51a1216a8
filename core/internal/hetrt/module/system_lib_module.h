// The host-library module of a system library: host code linked into the
// program itself (TVM's --system-lib), whose symbols were registered with
// TVMBackendRegisterSystemLibSymbol (SystemLibRegistry) instead of being
// found with dlsym. LoadSystemLib (module_loader.h) builds the tree over it.
#pragma once

#include <string>

#include "hetrt/module/module.h"

namespace hetrt {

// Thread contract: thread-safe, as Module (reads the process's system-lib registry).
class SystemLibModule final : public Module {
 public:
  // `prefix`: TVM's system-lib prefix, which tells models linked into one
  // program apart ("" for a model built without one).
  explicit SystemLibModule(std::string prefix) : Module("library"), prefix_(std::move(prefix)) {}

  // A function registered as prefix + name, else as name (TVM's lookup order).
  Result<const PackedFunc*> GetOwnFunction(std::string_view name) override;
  // The registered functions under this prefix, without it.
  std::vector<std::string> ListFunctionNames() const override;
  std::string Describe() const override;
  bool IsHostLibrary() const override { return true; }

  // The address of a runtime variable ("__tvm_module_ctx", "__tvm_dev_mblob")
  // of this library: registered as prefix + name only, so that one model never
  // picks up another's. nullptr when absent.
  Result<void*> FindRuntimeSymbol(const std::string& name) const;
  // Points the library's __tvm_module_ctx at this module, if it registered one.
  Status InstallContext();
  const std::string& prefix() const { return prefix_; }

 private:
  std::string prefix_;
  FunctionTable functions_;
};

}  // namespace hetrt
