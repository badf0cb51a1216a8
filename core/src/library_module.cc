#include "hetrt/library_module.h"

#include <dlfcn.h>

#include <cstring>

#include "hetrt/byte_stream.h"
#include "hetrt/elf_symbols.h"
#include "tvm_backend_abi.h"

namespace hetrt {
namespace {

constexpr const char* kEntryName = "__tvm_main__";

// Symbols every TVM library carries that are not operator functions.
bool IsRuntimeSymbol(const std::string& name) {
  return name.rfind("__", 0) == 0 || name.rfind("_ITM_", 0) == 0 || name == "_init" ||
         name == "_fini" || name == "get_c_metadata";
}

}  // namespace

LibraryModule::LibraryModule(std::string path, void* handle)
    : Module("library"), path_(std::move(path)), handle_(handle) {}

LibraryModule::~LibraryModule() {
  if (handle_ != nullptr) dlclose(handle_);
}

Result<std::shared_ptr<LibraryModule>> LibraryModule::Open(const std::string& path) {
  // dlopen treats a name without '/' as a search; make relative paths explicit.
  std::string resolved = path.find('/') == std::string::npos ? "./" + path : path;
  dlerror();
  void* handle = dlopen(resolved.c_str(), RTLD_LAZY | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    return InvalidArgument("cannot load library '" + path + "': " + (why ? why : "dlopen failed"));
  }
  InstallBackendPointers(handle);
  return std::shared_ptr<LibraryModule>(new LibraryModule(path, handle));
}

void* LibraryModule::FindSymbol(const char* name) const { return dlsym(handle_, name); }

bool LibraryModule::InstallContext() { return InstallModuleContext(handle_, this); }

Result<const PackedFunc*> LibraryModule::GetOwnFunction(std::string_view name) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::string key(name);
  if (auto it = functions_.find(key); it != functions_.end()) return it->second.get();
  std::string symbol = key;
  if (key == kEntryName) {
    // __tvm_main__ is a data symbol holding the real entry function's name.
    const char* entry = static_cast<const char*>(FindSymbol(kEntryName));
    if (entry == nullptr) return static_cast<const PackedFunc*>(nullptr);
    symbol = entry;
  }
  void* address = FindSymbol(symbol.c_str());
  if (address == nullptr) return static_cast<const PackedFunc*>(nullptr);
  auto func = std::make_unique<PackedFunc>();
  func->call = reinterpret_cast<hetrt_packed_cfunc_t>(address);
  func->resource = nullptr;
  const PackedFunc* result = func.get();
  functions_.emplace(std::move(key), std::move(func));
  return result;
}

std::vector<std::string> LibraryModule::ListFunctionNames() const {
  std::vector<std::string> names;
  auto bytes = ReadFileBytes(path_);
  if (!bytes.ok()) return names;
  auto symbols = ReadElfDynamicSymbols(*bytes, path_);
  if (!symbols.ok()) return names;
  for (const ElfSymbol& s : *symbols)
    if (s.is_function && s.is_defined && !IsRuntimeSymbol(s.name)) names.push_back(s.name);
  return names;
}

}  // namespace hetrt
