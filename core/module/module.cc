#include "hetrt/module/module.h"

#include <unordered_set>

#include "hetrt/base/last_error.h"

namespace hetrt {

Status CallPackedFunc(const PackedFunc& func, hetrt_value_t* args, int32_t* type_codes, int32_t num_args,
                      hetrt_value_t* ret, int32_t* ret_type_code) {
  hetrt_value_t unused_ret;
  int32_t unused_code = HETRT_TYPE_NULL;
  ClearLastError();
  int32_t rc = func.call(args, type_codes, num_args, ret ? ret : &unused_ret,
                         ret_type_code ? ret_type_code : &unused_code, func.resource);
  if (rc != 0) {
    std::string message = LastErrorMessage();
    return Internal(message.empty() ? "function failed with code " + std::to_string(rc) : message);
  }
  return OkStatus();
}

const PackedFunc* FunctionTable::Find(std::string_view name) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = functions_.find(std::string(name));
  return it == functions_.end() ? nullptr : it->second.get();
}

const PackedFunc* FunctionTable::Keep(std::string name, PackedFunc func) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto [it, inserted] = functions_.try_emplace(std::move(name), nullptr);
  if (inserted) it->second = std::make_unique<PackedFunc>(func);
  return it->second.get();
}

Result<const PackedFunc*> Module::GetFunction(std::string_view name) {
  // Depth-first over the import DAG, each module once (shared imports would
  // otherwise be searched once per path).
  std::vector<Module*> stack{this};
  std::unordered_set<Module*> visited{this};
  while (!stack.empty()) {
    Module* m = stack.back();
    stack.pop_back();
    HETRT_ASSIGN_OR_RETURN(const PackedFunc* found, m->GetOwnFunction(name));
    if (found != nullptr) return found;
    for (auto it = m->imports_.rbegin(); it != m->imports_.rend(); ++it)
      if (visited.insert(it->get()).second) stack.push_back(it->get());
  }
  return static_cast<const PackedFunc*>(nullptr);
}

Result<const PackedFunc*> Module::GetFunctionFromEnv(std::string_view name) {
  std::lock_guard<std::mutex> lock(env_cache_mutex_);
  if (auto it = env_cache_.find(std::string(name)); it != env_cache_.end()) return it->second;
  const PackedFunc* found = nullptr;
  for (const auto& import : imports_) {
    HETRT_ASSIGN_OR_RETURN(found, import->GetFunction(name));
    if (found != nullptr) break;
  }
  if (found == nullptr) found = GlobalFunctionRegistry::Get().Find(name);
  if (found == nullptr) {
    std::string searched;
    for (const auto& import : imports_) searched += (searched.empty() ? "" : ", ") + import->type_key();
    return NotFound("function '" + std::string(name) + "' not found in the imports of module '" + type_key_ + "' (" +
                    (searched.empty() ? "no imports" : searched) + ") nor among global functions");
  }
  env_cache_.emplace(std::string(name), found);
  return found;
}

Result<const PackedFunc*> UnloadedModule::GetOwnFunction(std::string_view name) {
  return reason_.WithContext("cannot look up '" + std::string(name) + "' in module '" + type_key() + "'");
}

std::string UnloadedModule::Describe() const {
  return "not loaded (" + std::to_string(bytes_.size()) + " bytes): " + reason_.message();
}

}  // namespace hetrt
