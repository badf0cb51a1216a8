#include "hetrt/module/module_loader.h"

#include <dlfcn.h>
#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <map>
#include <mutex>
#include <unordered_map>

#include "hetrt/module/library_module.h"
#include "hetrt/module/metadata_module.h"
#include "hetrt/module/system_lib_module.h"
#include "module/blob_loading.h"

namespace hetrt {
namespace {

constexpr const char* kImportTreeKey = "_import_tree";
constexpr const char* kBlobSymbol = "__tvm_dev_mblob";
constexpr const char* kFfiBlobSymbol = "__tvm_ffi__library_bin";

std::mutex g_loader_mutex;
std::map<std::pair<LibraryAbi, std::string>, BlobLoader>& CoreLoaders() {
  static std::map<std::pair<LibraryAbi, std::string>, BlobLoader> loaders = {
      {{LibraryAbi::kPackedFunc, "metadata_module"}, &MetadataModule::Load},
  };
  return loaders;
}

}  // namespace

const BlobLoader* FindCoreLoader(const std::string& type_key, LibraryAbi abi) {
  std::lock_guard<std::mutex> lock(g_loader_mutex);
  auto it = CoreLoaders().find({abi, type_key});
  return it == CoreLoaders().end() ? nullptr : &it->second;
}

Status ReadU64Vector(ByteReader& r, std::vector<uint64_t>* out, const char* field) {
  uint64_t count = 0;
  HETRT_RETURN_IF_ERROR(r.ReadCount(&count, sizeof(uint64_t), field));
  out->resize(static_cast<size_t>(count));
  for (uint64_t& v : *out) HETRT_RETURN_IF_ERROR(r.ReadU64(&v, field));
  return OkStatus();
}

Status ReadImportTree(ByteReader& r, ImportTree* tree) {
  HETRT_RETURN_IF_ERROR(ReadU64Vector(r, &tree->row_ptr, "_import_tree row_ptr"));
  return ReadU64Vector(r, &tree->child_indices, "_import_tree child_indices");
}

Status ValidateImportTree(const ImportTree& tree, size_t n, const std::string& source) {
  auto bad = [&](const std::string& why) { return DataLoss(source + ": _import_tree: " + why); };
  if (tree.row_ptr.size() != n + 1)
    return bad("row_ptr has " + std::to_string(tree.row_ptr.size()) + " entries, expected " + std::to_string(n + 1) +
               " for " + std::to_string(n) + " modules");
  if (tree.row_ptr[0] != 0) return bad("row_ptr[0] must be 0");
  for (size_t i = 0; i < n; ++i)
    if (tree.row_ptr[i] > tree.row_ptr[i + 1]) return bad("row_ptr decreases at index " + std::to_string(i));
  if (tree.row_ptr[n] != tree.child_indices.size())
    return bad("row_ptr ends at " + std::to_string(tree.row_ptr[n]) + " but there are " +
               std::to_string(tree.child_indices.size()) + " child indices");
  for (size_t i = 0; i < n; ++i)
    for (uint64_t a = tree.row_ptr[i]; a < tree.row_ptr[i + 1]; ++a)
      for (uint64_t b = tree.row_ptr[i]; b < a; ++b)
        if (tree.child_indices[a] == tree.child_indices[b])
          return bad("module " + std::to_string(i) + " imports module " + std::to_string(tree.child_indices[a]) +
                     " twice");
  for (size_t k = 0; k < tree.child_indices.size(); ++k)
    if (tree.child_indices[k] >= n)
      return bad("child index " + std::to_string(tree.child_indices[k]) + " at position " + std::to_string(k) +
                 " is out of range (" + std::to_string(n) + " modules)");
  // Iterative DFS with colours: 0 new, 1 on the stack, 2 done.
  std::vector<uint8_t> colour(n, 0);
  for (size_t start = 0; start < n; ++start) {
    if (colour[start]) continue;
    std::vector<std::pair<size_t, uint64_t>> stack{{start, tree.row_ptr[start]}};
    colour[start] = 1;
    while (!stack.empty()) {
      auto& [node, next] = stack.back();
      if (next == tree.row_ptr[node + 1]) {
        colour[node] = 2;
        stack.pop_back();
        continue;
      }
      size_t child = static_cast<size_t>(tree.child_indices[next++]);
      if (colour[child] == 1) return bad("module " + std::to_string(child) + " imports itself through a cycle");
      if (colour[child] == 0) {
        colour[child] = 1;
        stack.push_back({child, tree.row_ptr[child]});
      }
    }
  }
  return OkStatus();
}

namespace {

// Where the trailing "_import_tree" entry starts, if the payload ends with one.
// Used only to step over a module nobody can parse (inspection).
size_t FindTrailingImportTree(std::span<const uint8_t> payload, size_t from) {
  const size_t key_len = std::strlen(kImportTreeKey);
  for (size_t p = from; p + 8 + key_len <= payload.size(); ++p) {
    uint64_t len;
    std::memcpy(&len, payload.data() + p, 8);
    if (len != key_len || std::memcmp(payload.data() + p + 8, kImportTreeKey, key_len) != 0) continue;
    ByteReader probe(payload.subspan(p + 8 + key_len), "probe");
    ImportTree tree;
    if (ReadImportTree(probe, &tree).ok() && probe.remaining() == 0) return p;
  }
  return payload.size();
}

// The symbol's size, when the dynamic symbol table records it (0 if unknown).
uint64_t SymbolSize(void* address) {
  Dl_info info;
  ElfW(Sym)* sym = nullptr;
  if (dladdr1(address, &info, reinterpret_cast<void**>(&sym), RTLD_DL_SYMENT) && sym) return sym->st_size;
  return 0;
}

// Bytes from `address` to the end of the loaded segment that contains it: a hard
// bound for reading a blob whose symbol size is unknown.
uint64_t BytesToSegmentEnd(const void* address) {
  struct Query {
    uintptr_t address;
    uint64_t bytes;
  } query{reinterpret_cast<uintptr_t>(address), 0};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        auto* q = static_cast<Query*>(data);
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& ph = info->dlpi_phdr[i];
          if (ph.p_type != PT_LOAD) continue;
          uintptr_t begin = info->dlpi_addr + ph.p_vaddr;
          uintptr_t end = begin + ph.p_filesz;  // file-backed part only
          if (q->address >= begin && q->address < end) {
            q->bytes = end - q->address;
            return 1;
          }
        }
        return 0;
      },
      &query);
  return query.bytes;
}

// After the tree is built the blob is not needed again; give its pages back
// (they are file-backed and read-only, so this only drops them from memory).
void ReleaseBlobPages(const uint8_t* data, uint64_t size) {
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  uintptr_t begin = (reinterpret_cast<uintptr_t>(data) + page - 1) & ~(page - 1);
  uintptr_t end = (reinterpret_cast<uintptr_t>(data) + size) & ~(page - 1);
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

// One live tree per loaded library. dlopen of a path already open returns the
// same handle, hence the same __tvm_module_ctx and the same function caches in
// the compiled code; a second tree would leave those pointing into whichever
// tree died first.
struct LiveTree {
  std::weak_ptr<Module> root;
  std::shared_ptr<Module> kept;  // set for a tree that lives as long as the process
  bool keep_unloadable;
  PluginRegistry* plugins;
};
std::mutex g_live_mutex;
std::map<void*, LiveTree>& LiveTrees() {
  static std::map<void*, LiveTree> trees;
  return trees;
}

// The first module nobody could load, if any (such trees came from inspection).
const UnloadedModule* FindUnloaded(const Module& m) {
  if (auto* u = dynamic_cast<const UnloadedModule*>(&m)) return u;
  for (const auto& i : m.imports())
    if (const UnloadedModule* u = FindUnloaded(*i)) return u;
  return nullptr;
}

// `existing`, the live root of `tree` loaded before for `source`, if `options` may share it.
Result<std::shared_ptr<Module>> ReuseTree(std::shared_ptr<Module> existing, const LiveTree& tree,
                                          const LoadOptions& options, PluginRegistry* plugins,
                                          const std::string& source) {
  if (tree.plugins != plugins)
    return FailedPrecondition(source + " is already loaded through another plugin registry" +
                              (tree.kept ? " (for the life of the process)" : "; release it first"));
  if (tree.keep_unloadable && !options.keep_unloadable)
    if (const UnloadedModule* u = FindUnloaded(*existing)) return u->reason().WithContext(source);
  return existing;
}

}  // namespace

void RegisterCoreLoader(const std::string& type_key, BlobLoader loader, LibraryAbi abi) {
  std::lock_guard<std::mutex> lock(g_loader_mutex);
  CoreLoaders()[{abi, type_key}] = std::move(loader);
}

Result<std::span<const uint8_t>> BlobPayload(std::span<const uint8_t> symbol_bytes, const std::string& source) {
  ByteReader r(symbol_bytes, source);
  uint64_t nbytes = 0;
  HETRT_RETURN_IF_ERROR(r.ReadU64(&nbytes, "blob length prefix"));
  if (nbytes > r.remaining())
    return r.Error("blob length prefix", "says " + std::to_string(nbytes) + " bytes but only " +
                                             std::to_string(r.remaining()) + " follow in the symbol");
  return symbol_bytes.subspan(8, static_cast<size_t>(nbytes));
}

Result<std::shared_ptr<Module>> LoadModuleTreeFromBlob(std::span<const uint8_t> payload,
                                                       std::shared_ptr<Module> library, const std::string& source,
                                                       const LoadOptions& options) {
  PluginRegistry& plugins = options.plugins ? *options.plugins : PluginRegistry::Global();
  ByteReader r(payload, source);
  if (options.payload_is_file_mapping) r.EnableReleaseOfConsumedPages();
  uint64_t count = 0;
  // Each entry holds at least its type_key's u64 length.
  HETRT_RETURN_IF_ERROR(r.ReadCount(&count, sizeof(uint64_t), "blob entry count"));
  if (count > kMaxModules)
    return r.Error("blob entry count",
                   std::to_string(count) + " modules (at most " + std::to_string(kMaxModules) + " are accepted)");
  std::vector<std::shared_ptr<Module>> modules;
  ImportTree tree;
  bool has_tree = false;
  bool has_lib = false;
  for (uint64_t i = 0; i < count; ++i) {
    std::string type_key;
    HETRT_RETURN_IF_ERROR(r.ReadString(&type_key, "blob entry type_key"));
    const std::string where = "blob entry " + std::to_string(i) + " ('" + type_key + "')";
    if (has_tree) return r.Error(where, "entries after _import_tree");
    if (type_key == kImportTreeKey) {
      HETRT_RETURN_IF_ERROR(ReadImportTree(r, &tree));
      has_tree = true;
      continue;
    }
    if (type_key == kLibKey) {
      if (has_lib) return r.Error(where, "more than one _lib entry");
      if (!library) return r.Error(where, "the blob names a host library but none was loaded");
      has_lib = true;
      modules.push_back(library);
      continue;
    }
    if (type_key.empty()) return r.Error(where, "empty type_key");
    const size_t start = r.offset();
    Result<std::shared_ptr<Module>> loaded = Internal("no loader ran");  // every branch below assigns or returns
    if (const BlobLoader* loader = FindCoreLoader(type_key, LibraryAbi::kPackedFunc)) {
      loaded = (*loader)(r);
    } else if (auto plugin = plugins.ForTypeKey(type_key); plugin.ok()) {
      loaded = PluginModule::Load(*plugin, type_key, r);
    } else if (options.keep_unloadable) {
      size_t end = FindTrailingImportTree(payload, start);
      std::span<const uint8_t> skipped;
      HETRT_RETURN_IF_ERROR(r.ReadBytes(end - start, &skipped, where));
      loaded = std::shared_ptr<Module>(std::make_shared<UnloadedModule>(
          type_key, std::vector<uint8_t>(skipped.begin(), skipped.end()), plugin.status()));
    } else {
      return plugin.status().WithContext(source + ": " + where);
    }
    HETRT_RETURN_IF_ERROR(loaded.status(), where);
    modules.push_back(std::move(loaded).value());
  }
  if (r.remaining() != 0) return r.Error("blob", std::to_string(r.remaining()) + " bytes after the last entry");
  if (modules.empty()) return DataLoss(source + ": blob holds no modules");

  if (has_tree) {
    HETRT_RETURN_IF_ERROR(ValidateImportTree(tree, modules.size(), source));
    for (size_t i = 0; i < modules.size(); ++i)
      for (uint64_t k = tree.row_ptr[i]; k < tree.row_ptr[i + 1]; ++k)
        modules[i]->Import(modules[static_cast<size_t>(tree.child_indices[k])]);
    if (library && !has_lib) return DataLoss(source + ": blob has an _import_tree but no _lib entry for the host code");
    return modules[0];
  }
  // Legacy form: the library is the root and imports every other module.
  if (!library) return DataLoss(source + ": legacy blob (no _import_tree) without a host library");
  for (auto& m : modules)
    if (m != library) library->Import(m);
  return library;
}

Result<std::shared_ptr<Module>> LoadModuleFile(const std::string& path, const LoadOptions& options) {
  std::lock_guard<std::mutex> live_lock(g_live_mutex);
  HETRT_ASSIGN_OR_RETURN(std::shared_ptr<LibraryModule> library, LibraryModule::Open(path));
  PluginRegistry* plugins = options.plugins ? options.plugins : &PluginRegistry::Global();
  auto& live = LiveTrees();
  if (auto it = live.find(library->dl_handle()); it != live.end()) {
    // `library` (a second dlopen reference) is released on return.
    if (std::shared_ptr<Module> existing = it->second.root.lock())
      return ReuseTree(std::move(existing), it->second, options, plugins, path);
  }
  std::shared_ptr<Module> root = library;
  const bool ffi = library->abi() == LibraryAbi::kTvmFfi;
  const char* blob_symbol = ffi ? kFfiBlobSymbol : kBlobSymbol;
  if (ffi && library->FindSymbol(kBlobSymbol) != nullptr)
    return DataLoss(path + " has both " + kBlobSymbol + " (TVM v0.20 or older) and tvm-ffi symbols (v0.22+): "
                           "its parts disagree about which TVM wrote it");
  if (auto* blob = static_cast<const uint8_t*>(library->FindSymbol(blob_symbol))) {
    uint64_t available = SymbolSize(const_cast<uint8_t*>(blob));
    const uint64_t segment = BytesToSegmentEnd(blob);
    if (available == 0 || (segment != 0 && available > segment)) available = segment;
    if (available < 8) return DataLoss(path + ": " + blob_symbol + " is shorter than its 8-byte length prefix");
    const std::string source = path + ": " + blob_symbol;
    HETRT_ASSIGN_OR_RETURN(auto payload, BlobPayload({blob, static_cast<size_t>(available)}, source));
    LoadOptions mapped = options;
    mapped.payload_is_file_mapping = true;
    HETRT_ASSIGN_OR_RETURN(root, ffi ? LoadModuleTreeFromFfiBlob(payload, library, source, mapped)
                                     : LoadModuleTreeFromBlob(payload, library, source, mapped));
    ReleaseBlobPages(payload.data(), payload.size());
  }
  library->InstallContext();
  live[library->dl_handle()] = {root, nullptr, options.keep_unloadable, plugins};
  return root;
}

namespace {
// One tree per system-lib prefix for the rest of the process, as TVM keeps
// them: the host code is never unloaded, and it caches the function handles
// it got through __tvm_module_ctx in its own static variables. Leaked on
// purpose: nothing may tear the trees down at exit while such code could run.
std::map<std::string, LiveTree>& SystemLibTrees() {
  static auto* trees = new std::map<std::string, LiveTree>();
  return *trees;
}
}  // namespace

Result<std::shared_ptr<Module>> LoadSystemLib(const std::string& prefix, const LoadOptions& options) {
  std::lock_guard<std::mutex> live_lock(g_live_mutex);
  PluginRegistry* plugins = options.plugins ? options.plugins : &PluginRegistry::Global();
  const std::string name = prefix.empty() ? std::string("the system library") : "system library '" + prefix + "'";
  if (auto it = SystemLibTrees().find(prefix); it != SystemLibTrees().end())
    return ReuseTree(it->second.kept, it->second, options, plugins, name);
  auto library = std::make_shared<SystemLibModule>(prefix);
  HETRT_ASSIGN_OR_RETURN(void* ctx, library->FindRuntimeSymbol("__tvm_module_ctx"));
  HETRT_ASSIGN_OR_RETURN(void* blob_address, library->FindRuntimeSymbol(kBlobSymbol));
  if (ctx == nullptr && blob_address == nullptr && library->ListFunctionNames().empty())
    return NotFound(name + " registered no symbols: link host code compiled with TVM's --system-lib (and its devc.c) " +
                    "into this program");
  std::shared_ptr<Module> root = library;
  if (const auto* blob = static_cast<const uint8_t*>(blob_address)) {
    // Only the blob's own length prefix says how long it is; it must at least
    // stay inside the loaded segment that holds it.
    const uint64_t available = BytesToSegmentEnd(blob);
    const std::string source = name + ": " + prefix + kBlobSymbol;
    if (available < 8)
      return DataLoss(source + " is not inside a loaded segment of the program (or shorter than 8 bytes)");
    HETRT_ASSIGN_OR_RETURN(auto payload, BlobPayload({blob, static_cast<size_t>(available)}, source));
    LoadOptions in_memory = options;
    in_memory.payload_is_file_mapping = false;
    HETRT_ASSIGN_OR_RETURN(root, LoadModuleTreeFromBlob(payload, library, source, in_memory));
  }
  // A tree missing a module (inspection) is neither kept nor given to the
  // host code as its context: it cannot run, and a later load may complete it.
  if (FindUnloaded(*root) != nullptr) return root;
  HETRT_RETURN_IF_ERROR(library->InstallContext());
  SystemLibTrees()[prefix] = {root, root, options.keep_unloadable, plugins};
  return root;
}

// ---------------------------------------------------------------- PluginModule

Result<std::shared_ptr<Module>> PluginModule::Load(Plugin* plugin, const std::string& type_key, ByteReader& reader) {
  uint64_t consumed = 0;
  HETRT_ASSIGN_OR_RETURN(DeviceModule module, DeviceModule::Load(*plugin, type_key, reader.Rest(), &consumed));
  HETRT_RETURN_IF_ERROR(reader.Skip(consumed, type_key));
  return std::shared_ptr<Module>(new PluginModule(type_key, std::move(module)));
}

Result<const PackedFunc*> PluginModule::GetOwnFunction(std::string_view name) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::string key(name);
  if (auto it = functions_.find(key); it != functions_.end()) return it->second.get();
  HETRT_ASSIGN_OR_RETURN(std::optional<PackedFunc> found, module_.Function(key));
  if (!found) return static_cast<const PackedFunc*>(nullptr);
  auto func = std::make_unique<PackedFunc>(*found);
  const PackedFunc* result = func.get();
  functions_.emplace(std::move(key), std::move(func));
  return result;
}

std::vector<std::string> PluginModule::ListFunctionNames() const {
  auto names = module_.FunctionNames();
  return names.ok() ? *names : std::vector<std::string>{};
}

std::string PluginModule::Describe() const { return "from plugin '" + plugin()->name() + "'"; }

Result<std::vector<uint8_t>> PluginModule::SaveToBinary() const {
  if (!plugin()->CanSaveModules())
    return Unimplemented("plugin '" + plugin()->name() + "' cannot save modules of type '" + type_key() + "'");
  return module_.Save();
}

}  // namespace hetrt
