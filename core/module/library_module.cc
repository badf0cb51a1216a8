#include "hetrt/module/library_module.h"

#include <dlfcn.h>
#include <link.h>

#include <cstring>

#include "hetrt/base/byte_stream.h"
#include "hetrt/formats/elf_symbols.h"
#include "tvm_abi/tvm_backend_abi.h"

namespace hetrt {
namespace {

constexpr const char* kEntryName = "__tvm_main__";

// Symbols every TVM library carries that are not operator functions.
bool IsRuntimeSymbol(const std::string& name) {
  return name.rfind("__", 0) == 0 || name.rfind("_ITM_", 0) == 0 || name == "_init" || name == "_fini" ||
         name == "get_c_metadata";
}

// True when `address` is a symbol of `type` (STT_FUNC/STT_OBJECT) defined by
// the object loaded at `base`, not by one of its dependencies (libc, libm).
bool IsOwnSymbol(void* address, uintptr_t base, unsigned char type) {
  Dl_info info;
  ElfW(Sym)* sym = nullptr;
  if (!dladdr1(address, &info, reinterpret_cast<void**>(&sym), RTLD_DL_SYMENT) || sym == nullptr) return false;
  return reinterpret_cast<uintptr_t>(info.dli_fbase) == base && ELF64_ST_TYPE(sym->st_info) == type &&
         info.dli_saddr == address;
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
  auto module = std::shared_ptr<LibraryModule>(new LibraryModule(path, handle));
  link_map* map = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr) module->base_ = map->l_addr;
  return module;
}

void* LibraryModule::FindSymbol(const char* name) const { return dlsym(handle_, name); }

bool LibraryModule::InstallContext() { return InstallModuleContext(handle_, this); }

Result<const PackedFunc*> LibraryModule::GetOwnFunction(std::string_view name) {
  if (const PackedFunc* known = functions_.Find(name)) return known;
  std::string symbol(name);
  if (name == kEntryName) {
    // __tvm_main__ is a data symbol holding the real entry function's name.
    void* entry = FindSymbol(kEntryName);
    if (entry == nullptr || !IsOwnSymbol(entry, base_, STT_OBJECT)) return static_cast<const PackedFunc*>(nullptr);
    symbol.assign(static_cast<const char*>(entry), strnlen(static_cast<const char*>(entry), 1024));
  }
  // Only functions this library defines are packed functions: never a data
  // symbol, nor libc's abort/free reached through the dependency chain.
  void* address = FindSymbol(symbol.c_str());
  if (address == nullptr || !IsOwnSymbol(address, base_, STT_FUNC)) return static_cast<const PackedFunc*>(nullptr);
  return functions_.Keep(std::string(name), {reinterpret_cast<hetrt_packed_cfunc_t>(address), nullptr});
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
