// The module tree: modules identified by type_key, each with ordered imports and
// named packed functions (TVM's runtime.Module, as a small C++ class).
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "hetrt/base/status.h"
#include "hetrt/plugin_abi.h"
#include "hetrt/tvm_abi/function_environment.h"
#include "hetrt/tvm_abi/global_functions.h"

namespace hetrt {

// Calls a packed function; a non-zero return becomes a Status carrying the
// message the callee reported through the last-error channel.
Status CallPackedFunc(const PackedFunc& func, hetrt_value_t* args, int32_t* type_codes, int32_t num_args,
                      hetrt_value_t* ret = nullptr, int32_t* ret_type_code = nullptr);

// The packed functions a module has handed out, by name, at addresses that
// stay valid for the module's lifetime (compiled code and caches keep them).
class FunctionTable {
 public:
  const PackedFunc* Find(std::string_view name) const;
  // Keeps `func` under `name` unless another thread got there first; the one kept.
  const PackedFunc* Keep(std::string name, PackedFunc func);

 private:
  mutable std::mutex mutex_;
  std::unordered_map<std::string, std::unique_ptr<PackedFunc>> functions_;
};

// Thread contract: thread-safe: functions may be looked up from any thread
// (the first lookup of a name wins); calling them is as safe as the code behind.
class Module : public FunctionEnvironment {
 public:
  explicit Module(std::string type_key) : type_key_(std::move(type_key)) {}
  ~Module() override = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  const std::string& type_key() const { return type_key_; }
  const std::vector<std::shared_ptr<Module>>& imports() const { return imports_; }
  void Import(std::shared_ptr<Module> module) { imports_.push_back(std::move(module)); }

  // This module's own function; nullptr when it has none of that name. The
  // pointer stays valid for the module's lifetime.
  virtual Result<const PackedFunc*> GetOwnFunction(std::string_view name) = 0;
  // Names of the functions this module defines, where known.
  virtual std::vector<std::string> ListFunctionNames() const { return {}; }
  // One line describing the module's payload for `hetrt inspect` (may be empty).
  virtual std::string Describe() const { return {}; }
  // The bytes this module contributes to a __tvm_dev_mblob (what its loader reads).
  virtual Result<std::vector<uint8_t>> SaveToBinary() const {
    return Unimplemented("module type '" + type_key_ + "' cannot be serialized");
  }
  // Host code that export links into the .so itself (the blob's "_lib" slot).
  virtual bool IsHostLibrary() const { return false; }

  // Own functions first, then the imports depth-first (GetFunction with query_imports).
  Result<const PackedFunc*> GetFunction(std::string_view name);
  // TVM's GetFuncFromEnv: the imports in order, then the global function registry;
  // the hit is cached. A missing name is a NOT_FOUND error naming the module.
  Result<const PackedFunc*> GetFunctionFromEnv(std::string_view name) override;

 private:
  std::string type_key_;
  std::vector<std::shared_ptr<Module>> imports_;
  std::mutex env_cache_mutex_;
  std::unordered_map<std::string, const PackedFunc*> env_cache_;
};

// A module found in a blob whose type_key no plugin could load. Only made when
// the caller asked to keep going (inspection); any function lookup fails with
// the reason.
class UnloadedModule final : public Module {
 public:
  UnloadedModule(std::string type_key, std::vector<uint8_t> bytes, Status reason)
      : Module(std::move(type_key)), bytes_(std::move(bytes)), reason_(std::move(reason)) {}
  Result<const PackedFunc*> GetOwnFunction(std::string_view name) override;
  std::string Describe() const override;
  // Passes the original bytes through, so a tree can be re-exported unchanged.
  Result<std::vector<uint8_t>> SaveToBinary() const override { return bytes_; }
  const Status& reason() const { return reason_; }

 private:
  std::vector<uint8_t> bytes_;
  Status reason_;
};

}  // namespace hetrt
