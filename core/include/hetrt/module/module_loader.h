// Loading TVM-exported libraries: dlopen the host code, read __tvm_dev_mblob,
// load each blob with the loader of its type_key (core or plugin), rebuild the
// import tree, and give compiled code its module context.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "hetrt/sdk/byte_stream.h"
#include "hetrt/base/library_abi.h"
#include "hetrt/device/device_module.h"
#include "hetrt/module/module.h"
#include "hetrt/plugin_host/plugin_registry.h"

namespace hetrt {

struct LoadOptions {
  PluginRegistry* plugins = nullptr;  // nullptr: PluginRegistry::Global()
  // Keep going past a type_key nobody loads (an UnloadedModule takes its place)
  // so a tree can be inspected without every plugin; running it then fails.
  bool keep_unloadable = false;
  // Set by LoadModuleFile: the blob is a read-only mapping of the library, whose
  // pages can be dropped once parsed.
  bool payload_is_file_mapping = false;
};

// Loads a .so (with or without a blob). The root is module 0 of the blob, or
// the library module itself when the file has no blob.
Result<std::shared_ptr<Module>> LoadModuleFile(const std::string& path, const LoadOptions& options = {});

// Loads the system library linked into this program (TVM's runtime.SystemLib):
// the functions host code compiled with --system-lib registered before main(),
// the module tree of the __tvm_dev_mblob its devc.c registered, and its
// __tvm_module_ctx pointed at the library module. `prefix` selects one of
// several models linked into one program (TVM's system-lib prefix). The tree
// is built once per prefix and kept for the life of the process (compiled code
// caches handles into it); later calls return it.
Result<std::shared_ptr<Module>> LoadSystemLib(const std::string& prefix = "", const LoadOptions& options = {});

// Builds a module tree from a blob payload (the bytes after the u64 length
// prefix). `library` fills the "_lib" slot; it may be null when the blob has
// none. Exposed for tests and fuzzing.
Result<std::shared_ptr<Module>> LoadModuleTreeFromBlob(std::span<const uint8_t> payload,
                                                       std::shared_ptr<Module> library, const std::string& source,
                                                       const LoadOptions& options = {});

// Splits a symbol's bytes (u64 LE length prefix + payload) into the payload,
// checking the prefix against the bytes that are really there.
Result<std::span<const uint8_t>> BlobPayload(std::span<const uint8_t> symbol_bytes, const std::string& source);

// The same for TVM v0.22+'s __tvm_ffi__library_bin layout (docs/tvm-ffi.md
// (b)): the import tree first, every payload length-prefixed, device payloads
// converted to the form plugins read.
Result<std::shared_ptr<Module>> LoadModuleTreeFromFfiBlob(std::span<const uint8_t> payload,
                                                          std::shared_ptr<Module> library, const std::string& source,
                                                          const LoadOptions& options = {});

// Loaders for blobs of core module types, keyed by type_key and the ABI of
// the blobs they appear in.
using BlobLoader = std::function<Result<std::shared_ptr<Module>>(ByteReader& reader)>;
void RegisterCoreLoader(const std::string& type_key, BlobLoader loader, LibraryAbi abi = LibraryAbi::kPackedFunc);

// A module living in a plugin (opencl, cuda, ...), seen through the module table.
// Thread contract: thread-safe, as Module.
class PluginModule final : public Module {
 public:
  // Loads from the start of `reader`'s remaining bytes and advances it.
  static Result<std::shared_ptr<Module>> Load(Plugin* plugin, const std::string& type_key, ByteReader& reader);
  Result<const PackedFunc*> GetOwnFunction(std::string_view name) override;
  std::vector<std::string> ListFunctionNames() const override;
  std::string Describe() const override;
  Result<std::vector<uint8_t>> SaveToBinary() const override;
  Plugin* plugin() const { return module_.plugin(); }
  hetrt_plugin_module_t* handle() const { return module_.handle(); }

 private:
  PluginModule(std::string type_key, DeviceModule module) : Module(std::move(type_key)), module_(std::move(module)) {}
  DeviceModule module_;  // keeps the plugin instance it lives in alive
  std::mutex mutex_;
  std::unordered_map<std::string, std::unique_ptr<PackedFunc>> functions_;
};

}  // namespace hetrt
