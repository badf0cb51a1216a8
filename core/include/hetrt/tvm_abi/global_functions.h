// Process-wide packed functions looked up by name when a module's imports lack
// them (TVM's global function registry): "__tvm_set_device", and what plugins
// list through global_functions.
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

namespace hetrt {

// A callable with the packed C signature; calling it is one indirect call.
using PackedFunc = hetrt_packed_func_t;

// Thread contract: thread-safe (one lock; lookups return plain function pointers).
class GlobalFunctionRegistry {
 public:
  static GlobalFunctionRegistry& Get();
  // Fails when the name is taken by another function. `owner` (the plugin the
  // function belongs to) is kept alive for as long as the name is registered:
  // compiled code and module caches hold the function forever.
  Status Register(const std::string& name, PackedFunc func, std::shared_ptr<void> owner = nullptr);
  // Every (name, function), or none when a name is taken (FAILED_PRECONDITION naming it).
  Status RegisterAll(const std::vector<std::pair<std::string, PackedFunc>>& functions,
                     const std::shared_ptr<void>& owner);
  const PackedFunc* Find(std::string_view name);
  std::vector<std::string> Names();

 private:
  std::mutex mutex_;
  struct Entry {
    PackedFunc func;
    std::shared_ptr<void> owner;
  };
  std::unordered_map<std::string, std::unique_ptr<Entry>> functions_;
};

}  // namespace hetrt
