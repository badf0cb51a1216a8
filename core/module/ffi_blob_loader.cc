// TVM v0.22+'s __tvm_ffi__library_bin (docs/tvm-ffi.md (b)):
//   vec<u64> indptr, vec<u64> child_indices,
//   N x { str kind; kind == "_lib" ? nothing : bytes payload }
// The import tree comes first and each payload says its length, so a module
// nobody loads can be stepped over exactly.
#include "hetrt/formats/device_payloads.h"
#include "hetrt/module/module_loader.h"
#include "module/blob_loading.h"

namespace hetrt {
namespace {

// The writer numbers modules in pre-order: every child comes after its parent.
// (This also rules out cycles.)
Status CheckChildrenFollowParents(const ImportTree& tree, size_t n, const std::string& source) {
  for (size_t i = 0; i < n; ++i)
    for (uint64_t k = tree.row_ptr[i]; k < tree.row_ptr[i + 1]; ++k)
      if (tree.child_indices[k] <= i)
        return DataLoss(source + ": import tree: module " + std::to_string(i) + " imports module " +
                        std::to_string(tree.child_indices[k]) + ", which does not come after it");
  return OkStatus();
}

// One non-_lib entry: `entry` is its payload with the u64 length in front.
Result<std::shared_ptr<Module>> LoadEntry(const std::string& kind, std::span<const uint8_t> entry,
                                          const std::string& where, const LoadOptions& options) {
  const std::span<const uint8_t> payload = entry.subspan(8);
  PluginRegistry& plugins = options.plugins ? *options.plugins : PluginRegistry::Global();
  auto consumed_all = [&](const ByteReader& r) -> Status {
    if (r.remaining() == 0) return OkStatus();
    return DataLoss(where + ": its loader read " + std::to_string(payload.size() - r.remaining()) + " of the " +
                    std::to_string(payload.size()) + " bytes of its payload");
  };
  if (const BlobLoader* loader = FindCoreLoader(kind, LibraryAbi::kTvmFfi)) {
    // Core payloads keep their v0.18 framing: the u64 length is theirs to read.
    ByteReader r(entry, where);
    HETRT_ASSIGN_OR_RETURN(std::shared_ptr<Module> module, (*loader)(r));
    HETRT_RETURN_IF_ERROR(consumed_all(r));
    return module;
  }
  auto plugin = plugins.ForTypeKey(kind);
  if (!plugin.ok()) {
    if (!options.keep_unloadable) return plugin.status().WithContext(where);
    return std::shared_ptr<Module>(
        std::make_shared<UnloadedModule>(kind, std::vector<uint8_t>(payload.begin(), payload.end()), plugin.status()));
  }
  HETRT_ASSIGN_OR_RETURN(std::vector<uint8_t> converted, DevicePayloadToPackedForm(kind, payload, where));
  ByteReader r(converted, where);
  HETRT_ASSIGN_OR_RETURN(std::shared_ptr<Module> module, PluginModule::Load(*plugin, kind, r), where);
  HETRT_RETURN_IF_ERROR(consumed_all(r));
  return module;
}

}  // namespace

Result<std::shared_ptr<Module>> LoadModuleTreeFromFfiBlob(std::span<const uint8_t> payload,
                                                          std::shared_ptr<Module> library, const std::string& source,
                                                          const LoadOptions& options) {
  ByteReader r(payload, source);
  ImportTree tree;
  HETRT_RETURN_IF_ERROR(ReadU64Vector(r, &tree.row_ptr, "import tree indptr"));
  HETRT_RETURN_IF_ERROR(ReadU64Vector(r, &tree.child_indices, "import tree child_indices"));
  if (tree.row_ptr.size() < 2) return DataLoss(source + ": the import tree describes no module");
  const size_t n = tree.row_ptr.size() - 1;
  if (n > kMaxModules)
    return DataLoss(source + ": " + std::to_string(n) + " modules (at most " + std::to_string(kMaxModules) +
                    " are accepted)");
  HETRT_RETURN_IF_ERROR(ValidateImportTree(tree, n, source));
  HETRT_RETURN_IF_ERROR(CheckChildrenFollowParents(tree, n, source));

  std::vector<std::shared_ptr<Module>> modules;
  bool has_lib = false;
  for (size_t i = 0; i < n; ++i) {
    std::string kind;
    HETRT_RETURN_IF_ERROR(r.ReadString(&kind, "module " + std::to_string(i) + " kind"));
    const std::string where = source + ": module " + std::to_string(i) + " ('" + kind + "')";
    if (kind.empty()) return DataLoss(where + ": empty kind");
    if (kind == kLibKey) {
      if (has_lib) return DataLoss(where + ": a second _lib entry");
      if (!library) return DataLoss(where + ": the blob names a host library but none was loaded");
      has_lib = true;
      modules.push_back(library);
      continue;
    }
    const size_t start = r.offset();
    uint64_t length = 0;
    HETRT_RETURN_IF_ERROR(r.ReadU64(&length, "module " + std::to_string(i) + " payload length"));
    std::span<const uint8_t> body;
    HETRT_RETURN_IF_ERROR(r.ReadBytes(length, &body, "module " + std::to_string(i) + " payload"));
    HETRT_ASSIGN_OR_RETURN(std::shared_ptr<Module> module,
                           LoadEntry(kind, payload.subspan(start, 8 + body.size()), where, options));
    modules.push_back(std::move(module));
  }
  if (r.remaining() != 0) return r.Error("blob", std::to_string(r.remaining()) + " bytes after the last module");
  if (library && !has_lib) return DataLoss(source + ": the blob has no _lib entry for the library's host code");
  for (size_t i = 0; i < n; ++i)
    for (uint64_t k = tree.row_ptr[i]; k < tree.row_ptr[i + 1]; ++k)
      modules[i]->Import(modules[static_cast<size_t>(tree.child_indices[k])]);
  return modules[0];
}

}  // namespace hetrt
