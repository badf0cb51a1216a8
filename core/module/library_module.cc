#include "hetrt/module/library_module.h"

#include <dlfcn.h>
#include <link.h>

#include <cstring>

#include "hetrt/sdk/byte_stream.h"
#include "hetrt/formats/elf_symbols.h"
#include "hetrt/tvm_abi/tvm_ffi_values.h"
#include "tvm_abi/tvm_backend_abi.h"

namespace hetrt {
namespace {

constexpr const char* kEntryName = "__tvm_main__";
constexpr std::string_view kFfiPrefix = "__tvm_ffi_";
constexpr std::string_view kFfiLibraryPrefix = "__tvm_ffi__";

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
  for (auto& [name, function] : ffi_lookups_) ReleaseFfiObject(function);
}

Result<std::shared_ptr<LibraryModule>> LibraryModule::Open(const std::string& path) {
  // tvm-ffi libraries call the shim's functions by symbol (v0.24+ leave one
  // undefined), so it is in the global scope before any library is opened.
  // Packed-function libraries do not need it: a missing shim fails only them.
  const Status shim = LoadTvmFfiShim();
  // dlopen treats a name without '/' as a search; make relative paths explicit.
  std::string resolved = path.find('/') == std::string::npos ? "./" + path : path;
  dlerror();
  void* handle = dlopen(resolved.c_str(), RTLD_LAZY | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    return InvalidArgument("cannot load library '" + path + "': " + (why ? why : "dlopen failed"));
  }
  auto module = std::shared_ptr<LibraryModule>(new LibraryModule(path, handle));
  for (const char* v021 : {"__tvm_ffi_library_bin", "__tvm_ffi_library_ctx"})
    if (dlsym(handle, v021) != nullptr)
      return Unimplemented("library '" + path + "' was built by TVM v0.21 (it defines " + v021 +
                           "), whose transitional tvm-ffi ABI hetrt does not run; rebuild it with TVM v0.22 or later, "
                           "or v0.20 or earlier");
  const bool ffi = dlsym(handle, "__tvm_ffi__library_bin") != nullptr || dlsym(handle, "__tvm_ffi__library_ctx") != nullptr;
  if (ffi) {
    HETRT_RETURN_IF_ERROR(shim, "library '" + path + "' speaks tvm-ffi");
    module->abi_ = LibraryAbi::kTvmFfi;
    InstallTvmFfiPointers(handle);
  } else {
    InstallBackendPointers(handle);
  }
  link_map* map = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr) module->base_ = map->l_addr;
  return module;
}

void* LibraryModule::FindSymbol(const char* name) const { return dlsym(handle_, name); }

bool LibraryModule::InstallContext() {
  if (abi_ == LibraryAbi::kTvmFfi) return InstallTvmFfiContext(handle_, this);
  return InstallModuleContext(handle_, this);
}

Result<hetrt_ffi_object_t*> LibraryModule::LookupFfiFunction(std::string_view name) {
  std::lock_guard<std::mutex> lock(ffi_lookups_mutex_);
  if (auto it = ffi_lookups_.find(name); it != ffi_lookups_.end()) return it->second;
  HETRT_ASSIGN_OR_RETURN(const PackedFunc* function, GetFunctionFromEnv(name));
  hetrt_ffi_object_t* object = MakeFfiFunctionFromPacked(*function, std::string(name));
  ffi_lookups_.emplace(std::string(name), object);
  return object;
}

Result<const PackedFunc*> LibraryModule::GetOwnFunction(std::string_view name) {
  if (const PackedFunc* known = functions_.Find(name)) return known;
  if (abi_ == LibraryAbi::kTvmFfi) {
    const std::string symbol = std::string(kFfiPrefix) + std::string(name);
    void* address = FindSymbol(symbol.c_str());
    if (address == nullptr || !IsOwnSymbol(address, base_, STT_FUNC)) return static_cast<const PackedFunc*>(nullptr);
    return functions_.Keep(std::string(name), MakePackedFromFfiFunction(reinterpret_cast<hetrt_ffi_safe_call_t>(address)));
  }
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
  for (const ElfSymbol& s : *symbols) {
    if (!s.is_function || !s.is_defined) continue;
    const std::string_view name = s.name;
    if (abi_ == LibraryAbi::kTvmFfi) {
      if (name.starts_with(kFfiPrefix) && !name.starts_with(kFfiLibraryPrefix))
        names.emplace_back(name.substr(kFfiPrefix.size()));
    } else if (!IsRuntimeSymbol(s.name)) {
      names.push_back(s.name);
    }
  }
  return names;
}

}  // namespace hetrt
