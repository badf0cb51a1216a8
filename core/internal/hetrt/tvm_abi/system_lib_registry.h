// The symbols a system library registers (TVM's --system-lib): host code
// linked into a program calls TVMBackendRegisterSystemLibSymbol(name, address)
// from static constructors, before main(), for each packed function, for its
// "__tvm_module_ctx" variable and for its "__tvm_dev_mblob" (the devc.c of a
// system-lib export). LoadSystemLib (module_loader.h) builds a module tree
// from them.
#pragma once

#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "hetrt/base/status.h"

namespace hetrt {

// Thread contract: thread-safe (static constructors register while other threads may look up).
class SystemLibRegistry {
 public:
  // Process-wide and never destroyed: registration runs in static
  // constructors, in whatever order the program's objects are initialised.
  static SystemLibRegistry& Global();

  // Records `address` under `name`. The same name with the same address again
  // is accepted (nothing changes); with another address it is an error, the
  // first address stays, and the name is marked as conflicting so that every
  // later lookup of it fails too (a static constructor's return value is
  // usually ignored). NULL name or address: an error.
  Status Register(const char* name, void* address);
  // The address registered under `name`, nullptr when none; an error naming
  // both addresses when two were registered under it.
  Result<void*> Find(std::string_view name) const;
  // Every registered name, sorted.
  std::vector<std::string> Names() const;

 private:
  SystemLibRegistry() = default;
  struct Entry {
    void* address = nullptr;
    void* conflicting = nullptr;  // the second address offered, if any
  };
  mutable std::mutex mutex_;
  std::unordered_map<std::string, Entry> symbols_;
};

}  // namespace hetrt
