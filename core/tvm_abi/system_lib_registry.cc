#include "hetrt/tvm_abi/system_lib_registry.h"

#include <algorithm>
#include <cstdio>

namespace hetrt {
namespace {

std::string AddressText(const void* address) {
  char text[32];
  std::snprintf(text, sizeof text, "%p", address);
  return text;
}

}  // namespace

SystemLibRegistry& SystemLibRegistry::Global() {
  // Leaked on purpose: a destructor at exit could run before the destructors
  // of objects that still look symbols up.
  static SystemLibRegistry* registry = new SystemLibRegistry();
  return *registry;
}

Status SystemLibRegistry::Register(const char* name, void* address) {
  if (name == nullptr) return InvalidArgument("system library: a symbol registered with a NULL name");
  if (address == nullptr)
    return InvalidArgument("system library: symbol '" + std::string(name) + "' has a NULL address");
  std::lock_guard<std::mutex> lock(mutex_);
  auto [it, inserted] = symbols_.try_emplace(name, Entry{address, nullptr});
  if (inserted || it->second.address == address) return OkStatus();
  it->second.conflicting = address;
  return FailedPrecondition("system library: symbol '" + std::string(name) + "' registered twice (at " +
                            AddressText(it->second.address) + ", then at " + AddressText(address) +
                            "); two models linked into one program need distinct system-lib prefixes");
}

Result<void*> SystemLibRegistry::Find(std::string_view name) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = symbols_.find(std::string(name));
  if (it == symbols_.end()) return static_cast<void*>(nullptr);
  if (it->second.conflicting != nullptr)
    return FailedPrecondition("system library: symbol '" + std::string(name) + "' was registered twice (at " +
                              AddressText(it->second.address) + " and at " + AddressText(it->second.conflicting) +
                              "), so which one is meant is unknown; give each model its own system-lib prefix");
  return it->second.address;
}

std::vector<std::string> SystemLibRegistry::Names() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::string> names;
  names.reserve(symbols_.size());
  for (const auto& [name, entry] : symbols_) names.push_back(name);
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace hetrt
