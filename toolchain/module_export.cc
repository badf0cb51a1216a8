#include "hetrt/module_export.h"

#include <archive.h>
#include <archive_entry.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>

#include "hetrt/sdk/byte_stream.h"
#include "hetrt/formats/device_payloads.h"

namespace hetrt {
namespace {

constexpr const char* kLibKey = "_lib";

struct Indexed {
  std::vector<const Module*> slots;       // one per index; host libraries share one slot
  std::map<const Module*, size_t> index;  // every module -> its slot
  int lib_slot = -1;
};

// Depth-first pre-order over imports; host libraries merge into one slot
// numbered when the first of them is reached, so a parent always precedes
// its children.
Status IndexModules(const Module& m, Indexed& out, std::set<const Module*>& on_path) {
  if (out.index.count(&m)) return OkStatus();
  if (!on_path.insert(&m).second) return FailedPrecondition("module tree has a cycle at '" + m.type_key() + "'");
  if (m.IsHostLibrary()) {
    if (out.lib_slot < 0) {
      out.lib_slot = static_cast<int>(out.slots.size());
      out.slots.push_back(&m);
    }
    out.index[&m] = static_cast<size_t>(out.lib_slot);
  } else {
    out.index[&m] = out.slots.size();
    out.slots.push_back(&m);
  }
  for (const auto& import : m.imports()) HETRT_RETURN_IF_ERROR(IndexModules(*import, out, on_path));
  on_path.erase(&m);
  return OkStatus();
}

std::string QuoteArg(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

Status WriteTar(const std::vector<std::pair<std::string, std::string>>& members, const std::string& output) {
  archive* a = archive_write_new();
  archive_write_set_format_pax_restricted(a);
  if (archive_write_open_filename(a, output.c_str()) != ARCHIVE_OK) {
    const char* message = archive_error_string(a);
    std::string why = message ? message : "unknown libarchive error";
    archive_write_free(a);
    return InvalidArgument("cannot write '" + output + "': " + why);
  }
  for (const auto& [name, path] : members) {
    auto bytes = ReadFileBytes(path);
    if (!bytes.ok()) {
      archive_write_free(a);
      return bytes.status();
    }
    archive_entry* e = archive_entry_new();
    archive_entry_set_pathname(e, name.c_str());
    archive_entry_set_size(e, static_cast<la_int64_t>(bytes->size()));
    archive_entry_set_filetype(e, AE_IFREG);
    archive_entry_set_perm(e, 0644);
    archive_write_header(a, e);
    archive_write_data(a, bytes->data(), bytes->size());
    archive_entry_free(e);
  }
  archive_write_close(a);
  archive_write_free(a);
  return OkStatus();
}

// CSR: the children of each slot (the _lib slot gathers every host module's imports).
std::vector<std::vector<uint64_t>> ChildrenOf(const Indexed& indexed) {
  std::vector<std::vector<uint64_t>> children(indexed.slots.size());
  for (const auto& [module, slot] : indexed.index)
    for (const auto& import : module->imports()) {
      const size_t child = indexed.index.at(import.get());
      auto& list = children[slot];
      if (child != slot && std::find(list.begin(), list.end(), child) == list.end()) list.push_back(child);
    }
  // Within one slot, keep the imports' own order (index order matches it).
  for (auto& list : children) std::sort(list.begin(), list.end());
  return children;
}

// The CSR arrays: row pointers (n + 1), then the children, each a u64 vector.
void WriteImportTree(const std::vector<std::vector<uint64_t>>& children, ByteWriter& out) {
  out.WriteU64(children.size() + 1);
  uint64_t offset = 0;
  out.WriteU64(0);
  for (const auto& list : children) out.WriteU64(offset += list.size());
  out.WriteU64(offset);
  for (const auto& list : children)
    for (uint64_t c : list) out.WriteU64(c);
}

// The blob symbol: u64 length, then the payload.
std::vector<uint8_t> WithLengthPrefix(ByteWriter& payload) {
  ByteWriter symbol;
  symbol.WriteU64(payload.bytes().size());
  symbol.WriteBytes(payload.bytes());
  return symbol.Take();
}

// TVM v0.22+'s layout (docs/tvm-ffi.md (b)).
Result<std::vector<uint8_t>> SerializeFfiTree(const Indexed& indexed) {
  ByteWriter payload;
  WriteImportTree(ChildrenOf(indexed), payload);
  for (size_t i = 0; i < indexed.slots.size(); ++i) {
    const Module* m = indexed.slots[i];
    if (static_cast<int>(i) == indexed.lib_slot) {
      payload.WriteString(kLibKey);
      continue;
    }
    const std::string where = "module " + std::to_string(i) + " ('" + m->type_key() + "')";
    HETRT_ASSIGN_OR_RETURN(auto bytes, m->SaveToBinary(), where);
    // A Relax executable's bytes are u64 length + image already: v0.22's framing.
    const bool relax = m->type_key().rfind("relax.", 0) == 0;
    payload.WriteString(relax ? std::string("relax.VMExecutable") : m->type_key());
    if (relax) {
      payload.WriteBytes(bytes);
      continue;
    }
    HETRT_ASSIGN_OR_RETURN(auto converted, DevicePayloadToFfiForm(m->type_key(), bytes, /*wrap_vulkan_shaders=*/true, where));
    payload.WriteU64(converted.size());
    payload.WriteBytes(converted);
  }
  return WithLengthPrefix(payload);
}

}  // namespace

Result<std::vector<uint8_t>> SerializeModuleTree(const Module& root, LibraryAbi abi) {
  Indexed indexed;
  std::set<const Module*> on_path;
  HETRT_RETURN_IF_ERROR(IndexModules(root, indexed, on_path));
  if (abi == LibraryAbi::kTvmFfi) return SerializeFfiTree(indexed);
  ByteWriter payload;
  payload.WriteU64(indexed.slots.size() + 1);  // + the import tree entry
  for (size_t i = 0; i < indexed.slots.size(); ++i) {
    const Module* m = indexed.slots[i];
    if (static_cast<int>(i) == indexed.lib_slot) {
      payload.WriteString(kLibKey);
      continue;
    }
    payload.WriteString(m->type_key());
    HETRT_ASSIGN_OR_RETURN(auto bytes, m->SaveToBinary(),
                           "module " + std::to_string(i) + " ('" + m->type_key() + "')");
    payload.WriteBytes(bytes);
  }
  payload.WriteString("_import_tree");
  WriteImportTree(ChildrenOf(indexed), payload);
  return WithLengthPrefix(payload);
}

std::string EmitDevcC(std::span<const uint8_t> blob, const DevcOptions& options) {
  const std::string symbol = (options.system_lib ? options.symbol_prefix : std::string()) +
                             (options.abi == LibraryAbi::kTvmFfi ? "__tvm_ffi__library_bin" : "__tvm_dev_mblob");
  std::string out;
  out.reserve(blob.size() * 2 + 1024);
  out += "/* Generated by hetrt: the module blob (" + symbol + ") of an exported library. */\n";
  out += "#ifdef __cplusplus\nextern \"C\" {\n#endif\n";
  out += "__attribute__((visibility(\"default\"), aligned(1)))\n";
  out += "const unsigned char " + symbol + "[" + std::to_string(blob.size()) + "] =\n\"";
  // One string literal per ~100 source bytes; printable ASCII as itself,
  // everything else as a 3-digit octal escape (never ambiguous with what
  // follows). The spelling of each byte value is computed once.
  static const auto kSpelling = [] {
    std::array<std::string, 256> table;
    for (int b = 0; b < 256; ++b) {
      if (b >= 0x20 && b < 0x7f && b != '"' && b != '\\' && b != '?') {
        table[static_cast<size_t>(b)] = std::string(1, static_cast<char>(b));
      } else {
        char esc[5];
        std::snprintf(esc, sizeof esc, "\\%03o", b);
        table[static_cast<size_t>(b)] = esc;
      }
    }
    return table;
  }();
  size_t column = 0;
  for (uint8_t b : blob) {
    const std::string& spelled = kSpelling[b];
    out += spelled;
    column += spelled.size();
    if (column >= 100) {
      out += "\"\n\"";
      column = 0;
    }
  }
  out += "\";\n";
  if (options.system_lib) {
    // Before main(), as TVM's system-lib devc does (a constructor: valid C too).
    out += "int TVMBackendRegisterSystemLibSymbol(const char* name, void* ptr);\n";
    out += "__attribute__((constructor)) static void " + symbol + "_register(void) {\n";
    out += "  TVMBackendRegisterSystemLibSymbol(\"" + symbol + "\", (void*)" + symbol + ");\n}\n";
  }
  out += "#ifdef __cplusplus\n}\n#endif\n";
  return out;
}

Status LinkSharedLibrary(const std::vector<std::string>& inputs, const std::string& output,
                         const LinkOptions& options) {
  std::string cmd = QuoteArg(options.compiler) + " -shared -fPIC -O2 -o " + QuoteArg(output);
  for (const auto& in : inputs) cmd += " " + QuoteArg(in);
  for (const auto& f : options.flags) cmd += " " + QuoteArg(f);
  cmd += " 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return Unavailable("cannot run the compiler '" + options.compiler + "'");
  std::string log;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, pipe)) log.append(buf, n);
  const int rc = pclose(pipe);
  if (rc != 0)
    return FailedPrecondition("linking '" + output + "' with '" + options.compiler + "' failed (exit " +
                              std::to_string(WIFEXITED(rc) ? WEXITSTATUS(rc) : rc) + "):\n" + log);
  return OkStatus();
}

Status ExportLibrary(const Module& root, const std::vector<std::string>& host_inputs, const std::string& output,
                     const LinkOptions& options) {
  HETRT_ASSIGN_OR_RETURN(auto blob, SerializeModuleTree(root));
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path dir = fs::temp_directory_path() / ("hetrt-export-" + std::to_string(getpid()) + "-" +
                                                    std::to_string(reinterpret_cast<uintptr_t>(&root)));
  fs::create_directories(dir, ec);
  if (ec) return Unavailable("cannot create " + dir.string() + ": " + ec.message());
  const std::string devc = (dir / "devc.c").string();
  const std::string source = EmitDevcC(blob);
  Status status = WriteFileBytes(devc, {reinterpret_cast<const uint8_t*>(source.data()), source.size()});
  if (status.ok()) {
    if (output.size() > 4 && output.compare(output.size() - 4, 4, ".tar") == 0) {
      std::vector<std::pair<std::string, std::string>> members;
      for (const auto& in : host_inputs) members.emplace_back(fs::path(in).filename().string(), in);
      members.emplace_back("devc.c", devc);
      status = WriteTar(members, output);
    } else {
      std::vector<std::string> inputs = host_inputs;
      inputs.push_back(devc);
      status = LinkSharedLibrary(inputs, output, options);
    }
  }
  fs::remove_all(dir, ec);
  return status;
}

}  // namespace hetrt
