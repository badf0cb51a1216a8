#include "hetrt/tvm_abi/global_functions.h"

namespace hetrt {

GlobalFunctionRegistry& GlobalFunctionRegistry::Get() {
  static GlobalFunctionRegistry registry;
  return registry;
}

Status GlobalFunctionRegistry::Register(const std::string& name, PackedFunc func, std::shared_ptr<void> owner) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto [it, inserted] = functions_.emplace(name, nullptr);
  if (!inserted) {
    if (it->second->func.call == func.call && it->second->func.resource == func.resource) return OkStatus();
    return FailedPrecondition("global function '" + name + "' is already registered");
  }
  it->second = std::make_unique<Entry>(Entry{func, std::move(owner)});
  return OkStatus();
}

Status GlobalFunctionRegistry::RegisterAll(const std::vector<std::pair<std::string, PackedFunc>>& functions,
                                           const std::shared_ptr<void>& owner) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& [name, func] : functions)
    if (functions_.count(name) != 0) return FailedPrecondition("global function '" + name + "' is already registered");
  for (const auto& [name, func] : functions) functions_[name] = std::make_unique<Entry>(Entry{func, owner});
  return OkStatus();
}

const PackedFunc* GlobalFunctionRegistry::Find(std::string_view name) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = functions_.find(std::string(name));
  return it == functions_.end() ? nullptr : &it->second->func;
}

std::vector<std::string> GlobalFunctionRegistry::Names() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::string> names;
  for (const auto& [name, f] : functions_) names.push_back(name);
  return names;
}

}  // namespace hetrt
