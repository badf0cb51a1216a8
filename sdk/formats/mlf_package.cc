#include "hetrt/sdk/mlf_package.h"

#include <archive.h>
#include <archive_entry.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "hetrt/sdk/tensor_layout.h"

namespace hetrt {
namespace {

using nlohmann::json;

// "./a/b.c" -> "a/b.c"; empty for a path that must be refused.
std::string NormalizeEntryPath(std::string path, std::string* why) {
  while (path.rfind("./", 0) == 0) path.erase(0, 2);
  if (path.empty() || path == ".") return ".";  // the root itself
  if (path.front() == '/') {
    *why = "absolute path";
    return "";
  }
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    const std::string part = path.substr(start, end - start);
    if (part == "..") {
      *why = "'..' in the path";
      return "";
    }
    start = end + 1;
  }
  if (!path.empty() && path.back() == '/') path.pop_back();
  return path;
}

bool Skipped(const std::string& path) {
  return path.rfind("runtime/", 0) == 0 || path == "runtime" || path.rfind("templates/", 0) == 0 || path == "templates";
}

Result<uint64_t> UInt(const json& j, const char* key, const std::string& where) {
  if (!j.contains(key)) return uint64_t{0};
  if (!j[key].is_number_unsigned() && !(j[key].is_number_integer() && j[key].get<int64_t>() >= 0))
    return DataLoss(where + "." + key + " must be a non-negative integer");
  return j[key].get<uint64_t>();
}

Status ParseMemory(const json& memory, const std::string& where, MlfMetadata* out) {
  if (!memory.is_object()) return DataLoss(where + " must be an object");
  auto add = [&](const std::string& name, const json& entry, const std::string& at) -> Status {
    if (!entry.is_object()) return DataLoss(at + " must be an object");
    MlfFunctionMemory m;
    m.name = name;
    HETRT_ASSIGN_OR_RETURN(uint64_t device, UInt(entry, "device", at));
    m.device = static_cast<int32_t>(device);
    HETRT_ASSIGN_OR_RETURN(m.workspace_bytes, UInt(entry, "workspace_size_bytes", at));
    HETRT_ASSIGN_OR_RETURN(m.constants_bytes, UInt(entry, "constants_size_bytes", at));
    HETRT_ASSIGN_OR_RETURN(m.io_bytes, UInt(entry, "io_size_bytes", at));
    out->memory.push_back(m);
    return OkStatus();
  };
  const json& functions = memory.contains("functions") ? memory["functions"] : memory;  // v7 nests them
  if (functions.contains("main")) {
    if (!functions["main"].is_array()) return DataLoss(where + ".main must be a list");
    for (const json& e : functions["main"]) {
      HETRT_RETURN_IF_ERROR(add("main", e, where + ".main"));
      for (const char* kind : {"inputs", "outputs"}) {
        if (!e.contains(kind) || !e[kind].is_object()) continue;
        auto& list = std::string(kind) == "inputs" ? out->inputs : out->outputs;
        for (const auto& item : e[kind].items()) {
          const json& v = item.value();
          if (!v.is_object() || !v.contains("dtype") || !v["dtype"].is_string())
            return DataLoss(where + ".main." + kind + "." + item.key() + " needs a dtype");
          HETRT_ASSIGN_OR_RETURN(uint64_t bytes, UInt(v, "size", where + ".main." + kind));
          list.push_back({item.key(), v["dtype"].get<std::string>(), bytes});
        }
      }
    }
  }
  if (functions.contains("operator_functions")) {
    const json& ops = functions["operator_functions"];
    if (ops.is_array()) {  // v7: [{function_name, workspace: [...]}]
      for (const json& op : ops) {
        if (!op.is_object() || !op.contains("function_name") || !op["function_name"].is_string())
          return DataLoss(where + ".operator_functions entries need a function_name");
        for (const json& w : op.value("workspace", json::array()))
          HETRT_RETURN_IF_ERROR(add(op["function_name"], w, where + ".operator_functions"));
      }
    } else if (ops.is_object()) {  // v5: {name: [...]}
      for (const auto& item : ops.items()) {
        if (!item.value().is_array()) return DataLoss(where + ".operator_functions." + item.key() + " must be a list");
        for (const json& w : item.value()) HETRT_RETURN_IF_ERROR(add(item.key(), w, where + ".operator_functions"));
      }
    } else {
      return DataLoss(where + ".operator_functions must be a list or an object");
    }
  }
  return OkStatus();
}

// "(1, 784), float32" -> shape and dtype; false when it is not that form.
bool ParseRelayTensorType(std::string_view text, std::vector<int64_t>* shape, std::string* dtype) {
  const size_t open = text.find('('), close = text.find(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) return false;
  shape->clear();
  std::string_view dims = text.substr(open + 1, close - open - 1);
  while (!dims.empty()) {
    const size_t comma = dims.find(',');
    std::string_view d = dims.substr(0, comma);
    while (!d.empty() && d.front() == ' ') d.remove_prefix(1);
    while (!d.empty() && d.back() == ' ') d.remove_suffix(1);
    if (!d.empty()) {
      int64_t v = 0;
      for (char c : d) {
        if (c < '0' || c > '9' || v > (int64_t{1} << 50)) return false;  // symbolic dims: no shape
        v = v * 10 + (c - '0');
      }
      shape->push_back(v);
    }
    if (comma == std::string_view::npos) break;
    dims.remove_prefix(comma + 1);
  }
  std::string_view rest = text.substr(close + 1);
  const size_t start = rest.find_first_not_of(", ");
  if (start == std::string_view::npos) return false;
  rest = rest.substr(start);
  *dtype = std::string(rest.substr(0, rest.find_first_of("] ")));
  return !dtype->empty();
}

// Shapes of main's inputs (by name) and outputs (in order) from the Relay text
// TVM puts in src/<model>.relay, e.g.
//   def @main(%data: Tensor[(1, 784), float32], ...) -> Tensor[(1, 10), float32] {
//   def @main(...) -> (Tensor[(1, 10), float32], Tensor[(2), int32]) {
// A shape is kept only when it agrees with the metadata's byte size and dtype.
void ApplyRelayShapes(std::string_view relay, MlfMetadata* md) {
  const size_t def = relay.find("def @main(");
  if (def == std::string_view::npos) return;
  const size_t body = relay.find('{', def);
  std::string_view signature = relay.substr(def, body == std::string_view::npos ? std::string_view::npos : body - def);
  const size_t arrow = signature.rfind("->");
  auto fits = [](const MlfTensorInfo& t, const std::vector<int64_t>& shape, const std::string& dtype) {
    const auto type = sdk::DtypeFromName(dtype);
    if (!type || dtype != t.dtype) return false;
    const auto bytes = sdk::DenseBytes(shape, *type);
    return bytes && *bytes == t.bytes;
  };
  auto tensors = [](std::string_view text) {
    std::vector<std::pair<std::vector<int64_t>, std::string>> found;
    for (size_t at = text.find("Tensor["); at != std::string_view::npos; at = text.find("Tensor[", at + 7)) {
      std::vector<int64_t> shape;
      std::string dtype;
      if (ParseRelayTensorType(text.substr(at + 7), &shape, &dtype)) found.emplace_back(shape, dtype);
    }
    return found;
  };
  if (arrow != std::string_view::npos) {
    const auto outs = tensors(signature.substr(arrow));
    if (outs.size() == md->outputs.size())
      for (size_t i = 0; i < outs.size(); ++i)
        if (fits(md->outputs[i], outs[i].first, outs[i].second)) md->outputs[i].shape = outs[i].first;
  }
  for (MlfTensorInfo& in : md->inputs) {
    const std::string key = "%" + in.name + ": Tensor[";
    const size_t at = signature.find(key);
    if (at == std::string_view::npos || (arrow != std::string_view::npos && at > arrow)) continue;
    std::vector<int64_t> shape;
    std::string dtype;
    if (ParseRelayTensorType(signature.substr(at + key.size()), &shape, &dtype) && fits(in, shape, dtype))
      in.shape = shape;
  }
}

Result<MlfMetadata> ParseMetadata(const std::vector<uint8_t>& bytes, const std::string& source) {
  const std::string where = source + ": metadata.json";
  // Nesting is bounded before anything is built: metadata.json is a few
  // levels deep, and a hostile one must not exhaust the stack.
  constexpr int kDeepestMetadata = 64;
  bool too_deep = false;
  const json::parser_callback_t depth_limit = [&](int depth, json::parse_event_t, json&) {
    too_deep |= depth > kDeepestMetadata;
    return !too_deep;
  };
  json root;
  try {
    root = json::parse(bytes.begin(), bytes.end(), depth_limit, false);
  } catch (const std::bad_alloc&) {
    return ResourceExhausted(where + ": out of memory parsing it");
  }
  if (too_deep) return DataLoss(where + ": JSON nests deeper than " + std::to_string(kDeepestMetadata) + " levels");
  if (root.is_discarded() || !root.is_object()) return DataLoss(where + ": not a JSON object");
  MlfMetadata md;
  if (!root.contains("version") || !root["version"].is_number_integer())
    return DataLoss(where + ": no integer 'version'");
  md.version = root["version"].get<int>();
  const json* model = &root;
  if (md.version == 7) {
    if (!root.contains("modules") || !root["modules"].is_object() || root["modules"].size() != 1)
      return DataLoss(where + ": version 7 needs 'modules' with exactly one model");
    model = &root["modules"].begin().value();
    md.model_name = root["modules"].begin().key();
  } else if (md.version == 5) {
    if (!root.contains("model_name") || !root["model_name"].is_string()) return DataLoss(where + ": no 'model_name'");
    md.model_name = root["model_name"];
  } else {
    return Unimplemented(where + ": version " + std::to_string(md.version) + " (hetrt reads versions 5 and 7)");
  }
  if (model->contains("model_name") && (*model)["model_name"].is_string()) md.model_name = (*model)["model_name"];
  if (md.model_name.empty() || md.model_name.find_first_of("/\\.") != std::string::npos)
    return DataLoss(where + ": bad model name '" + md.model_name + "'");
  if (!model->contains("executors") || !(*model)["executors"].is_array())
    return DataLoss(where + ": no 'executors' list");
  for (const json& e : (*model)["executors"]) {
    if (!e.is_string()) return DataLoss(where + ": executors must be strings");
    md.executors.push_back(e);
  }
  if (model->contains("target")) {
    const json& t = (*model)["target"];
    if (t.is_array()) {
      for (const json& s : t)
        if (s.is_string()) md.targets.push_back(s);
    } else if (t.is_object()) {
      for (const auto& item : t.items())
        if (item.value().is_string()) md.targets.push_back(item.value());
    }
  }
  if (model->contains("export_datetime") && (*model)["export_datetime"].is_string())
    md.export_datetime = (*model)["export_datetime"];
  if (model->contains("memory")) HETRT_RETURN_IF_ERROR(ParseMemory((*model)["memory"], where + ": memory", &md));
  return md;
}

}  // namespace

namespace {
// libarchive may have no message to give (NULL).
std::string ArchiveError(archive* a) {
  const char* m = archive_error_string(a);
  return m ? m : "unknown libarchive error";
}
struct ArchiveCloser {
  archive* a;
  ~ArchiveCloser() { archive_read_free(a); }
};
archive* NewTarReader() {
  archive* a = archive_read_new();
  archive_read_support_format_tar(a);
  archive_read_support_filter_all(a);  // .tar.gz etc.
  return a;
}
}  // namespace

Result<MlfPackage> MlfPackage::Read(const std::string& path, const MlfLimits& limits) {
  ArchiveCloser closer{NewTarReader()};
  if (archive_read_open_filename(closer.a, path.c_str(), 1 << 16) != ARCHIVE_OK)
    return InvalidArgument("cannot open '" + path + "': " + ArchiveError(closer.a));
  return ReadArchive(closer.a, path, limits);
}

Result<MlfPackage> MlfPackage::ReadBytes(std::span<const uint8_t> bytes, const std::string& source,
                                         const MlfLimits& limits) {
  ArchiveCloser closer{NewTarReader()};
  if (archive_read_open_memory(closer.a, bytes.data(), bytes.size()) != ARCHIVE_OK)
    return DataLoss(source + ": not a tar archive: " + ArchiveError(closer.a));
  return ReadArchive(closer.a, source, limits);
}

Result<MlfPackage> MlfPackage::ReadArchive(archive* a, const std::string& path, const MlfLimits& limits) {
  MlfPackage pkg;
  pkg.source_ = path;
  uint64_t total = 0, entries = 0;
  archive_entry* entry = nullptr;
  for (;;) {
    const int rc = archive_read_next_header(a, &entry);
    if (rc == ARCHIVE_EOF) break;
    if (rc != ARCHIVE_OK && rc != ARCHIVE_WARN)
      return DataLoss(path + ": corrupt or truncated tar: " + ArchiveError(a));
    if (++entries > limits.max_entries)
      return DataLoss(path + ": more than " + std::to_string(limits.max_entries) + " entries");
    const char* raw = archive_entry_pathname(entry);
    const std::string name = raw ? raw : "";
    std::string why;
    const std::string rel = NormalizeEntryPath(name, &why);
    if (rel.empty()) return InvalidArgument(path + ": entry '" + name + "' refused: " + why);
    const mode_t type = archive_entry_filetype(entry);
    if (type == AE_IFDIR) continue;
    if (archive_entry_hardlink(entry) != nullptr || type == AE_IFLNK)
      return InvalidArgument(path + ": entry '" + name + "' refused: links are not allowed");
    if (type != AE_IFREG) return InvalidArgument(path + ": entry '" + name + "' refused: not a regular file");
    if (Skipped(rel)) continue;
    const la_int64_t size = archive_entry_size(entry);
    if (size < 0 || static_cast<uint64_t>(size) > limits.max_entry_bytes)
      return InvalidArgument(path + ": entry '" + name + "' is " + std::to_string(size) + " bytes (limit " +
                             std::to_string(limits.max_entry_bytes) + ")");
    total += static_cast<uint64_t>(size);
    if (total > limits.max_total_bytes)
      return InvalidArgument(path + ": contents exceed " + std::to_string(limits.max_total_bytes) + " bytes");
    std::vector<uint8_t> data(static_cast<size_t>(size));
    size_t got = 0;
    while (got < data.size()) {
      const la_ssize_t n = archive_read_data(a, data.data() + got, data.size() - got);
      if (n <= 0) return DataLoss(path + ": entry '" + name + "' is truncated");
      got += static_cast<size_t>(n);
    }
    if (!pkg.files_.emplace(rel, std::move(data)).second)
      return InvalidArgument(path + ": entry '" + rel + "' appears twice");
  }
  const auto* md = pkg.Find("metadata.json");
  if (md == nullptr) return DataLoss(path + ": no metadata.json (not a Model Library Format tarball)");
  HETRT_ASSIGN_OR_RETURN(pkg.metadata_, ParseMetadata(*md, path));
  if (const auto* relay = pkg.Find("src/" + pkg.metadata_.model_name + ".relay"))
    ApplyRelayShapes({reinterpret_cast<const char*>(relay->data()), relay->size()}, &pkg.metadata_);
  return pkg;
}

const std::vector<uint8_t>* MlfPackage::Find(const std::string& path) const {
  auto it = files_.find(path);
  return it == files_.end() ? nullptr : &it->second;
}

std::vector<std::string> MlfPackage::HostCode() const {
  std::vector<std::string> code;
  for (const auto& [path, data] : files_) {
    const bool c =
        path.rfind("codegen/host/src/", 0) == 0 && path.size() > 2 && path.compare(path.size() - 2, 2, ".c") == 0;
    const bool o =
        path.rfind("codegen/host/lib/", 0) == 0 && path.size() > 2 && path.compare(path.size() - 2, 2, ".o") == 0;
    if (c || o) code.push_back(path);
  }
  return code;
}

Result<std::string> MlfPackage::GraphJson() const {
  for (const std::string& p :
       {"executor-config/graph/" + metadata_.model_name + ".graph", std::string("executor-config/graph/graph.json")})
    if (const auto* g = Find(p)) return std::string(g->begin(), g->end());
  return NotFound(source_ + ": no graph JSON (executor-config/graph/" + metadata_.model_name + ".graph)");
}

const std::vector<uint8_t>* MlfPackage::Params() const {
  return Find("parameters/" + metadata_.model_name + ".params");
}

bool MlfPackage::HasExecutor(const std::string& name) const {
  return std::find(metadata_.executors.begin(), metadata_.executors.end(), name) != metadata_.executors.end();
}

Status MlfPackage::ExtractTo(const std::string& dir) const {
  namespace fs = std::filesystem;
  for (const auto& [path, data] : files_) {
    const fs::path target = fs::path(dir) / path;  // paths were validated at read time
    std::error_code ec;
    fs::create_directories(target.parent_path(), ec);
    if (ec) return Unavailable("cannot create " + target.parent_path().string() + ": " + ec.message());
    std::ofstream out(target, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
    if (!out.flush()) return Unavailable("cannot write " + target.string());
  }
  return OkStatus();
}

}  // namespace hetrt
