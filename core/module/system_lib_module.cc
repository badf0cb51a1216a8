#include "hetrt/module/system_lib_module.h"

#include "hetrt/tvm_abi/system_lib_registry.h"

namespace hetrt {
namespace {

// Names TVM reserves for runtime variables and entry points: never a kernel.
bool IsReservedName(std::string_view name) { return name.rfind("__", 0) == 0; }

}  // namespace

Result<const PackedFunc*> SystemLibModule::GetOwnFunction(std::string_view name) {
  if (const PackedFunc* known = functions_.Find(name)) return known;
  const std::string key(name);
  if (IsReservedName(key)) return static_cast<const PackedFunc*>(nullptr);
  const SystemLibRegistry& registry = SystemLibRegistry::Global();
  void* address = nullptr;
  if (!prefix_.empty()) {
    HETRT_ASSIGN_OR_RETURN(address, registry.Find(prefix_ + key));
  }
  if (address == nullptr) {
    HETRT_ASSIGN_OR_RETURN(address, registry.Find(key));
  }
  if (address == nullptr) return static_cast<const PackedFunc*>(nullptr);
  return functions_.Keep(key, {reinterpret_cast<hetrt_packed_cfunc_t>(address), nullptr});
}

std::vector<std::string> SystemLibModule::ListFunctionNames() const {
  std::vector<std::string> names;
  for (const std::string& name : SystemLibRegistry::Global().Names()) {
    if (name.rfind(prefix_, 0) != 0) continue;
    std::string own = name.substr(prefix_.size());
    if (!IsReservedName(own)) names.push_back(std::move(own));
  }
  return names;
}

std::string SystemLibModule::Describe() const {
  return prefix_.empty() ? "system library" : "system library, prefix '" + prefix_ + "'";
}

Result<void*> SystemLibModule::FindRuntimeSymbol(const std::string& name) const {
  return SystemLibRegistry::Global().Find(prefix_ + name);
}

Status SystemLibModule::InstallContext() {
  HETRT_ASSIGN_OR_RETURN(void* ctx, FindRuntimeSymbol("__tvm_module_ctx"));
  if (ctx != nullptr) *static_cast<void**>(ctx) = static_cast<FunctionEnvironment*>(this);
  return OkStatus();
}

}  // namespace hetrt
