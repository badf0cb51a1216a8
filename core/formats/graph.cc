#include "hetrt/formats/graph.h"

#include <algorithm>
#include <limits>

#include "hetrt/base/dtype.h"
#include "hetrt/base/json_document.h"
#include "hetrt/base/tensor.h"

namespace hetrt {
namespace {

using nlohmann::json;

constexpr uint32_t kMaxOutputs = 1u << 16;

class GraphParser {
 public:
  explicit GraphParser(std::string source) : source_(std::move(source)) {}

  Result<Graph> Parse(std::string_view text) {
    HETRT_ASSIGN_OR_RETURN(const json root, ParseJsonDocument(text, source_));
    if (root.is_discarded()) return Error("", "not valid JSON");
    if (!root.is_object()) return Error("", "top level must be an object");
    static const char* kRequired[] = {"nodes", "arg_nodes", "heads", "attrs", "node_row_ptr"};
    for (const char* key : kRequired)
      if (!root.contains(key)) return Error(key, "missing");
    for (const auto& item : root.items()) {
      const std::string& key = item.key();
      if (std::find_if(std::begin(kRequired), std::end(kRequired), [&](const char* k) { return key == k; }) ==
              std::end(kRequired) &&
          key != "metadata")
        return Error(key, "unknown top-level key");
    }
    HETRT_RETURN_IF_ERROR(ParseNodes(root["nodes"]));
    HETRT_RETURN_IF_ERROR(ParseRowPtr(root["node_row_ptr"]));
    HETRT_RETURN_IF_ERROR(CheckNodeInputs());
    HETRT_RETURN_IF_ERROR(ParseArgNodes(root["arg_nodes"]));
    HETRT_RETURN_IF_ERROR(ParseEntryList(root["heads"], "heads", &graph_.heads));
    HETRT_RETURN_IF_ERROR(ParseAttrs(root["attrs"]));
    HETRT_RETURN_IF_ERROR(CheckSpecialNodes());
    return std::move(graph_);
  }

 private:
  Status Error(const std::string& where, const std::string& what) const {
    return InvalidArgument(source_ + ": graph JSON" + (where.empty() ? "" : ": " + where) + ": " + what);
  }
  std::string NodeWhere(size_t nid) const {
    std::string s = "node " + std::to_string(nid);
    if (nid < graph_.nodes.size() && !graph_.nodes[nid].name.empty()) s += " ('" + graph_.nodes[nid].name + "')";
    return s;
  }

  static bool ToU32(const json& v, uint32_t* out) {
    if (!v.is_number_integer()) return false;
    const auto x = v.get<int64_t>();
    if (x < 0 || x > std::numeric_limits<uint32_t>::max()) return false;
    *out = static_cast<uint32_t>(x);
    return true;
  }

  static bool ParseUintString(const json& v, uint32_t* out) {
    if (!v.is_string()) return false;
    const std::string& s = v.get_ref<const std::string&>();
    if (s.empty() || s.size() > 9 || !std::all_of(s.begin(), s.end(), ::isdigit)) return false;
    *out = static_cast<uint32_t>(std::stoul(s));
    return true;
  }

  Status ParseEntry(const json& v, const std::string& where, GraphEntryRef* out) const {
    if (!v.is_array() || v.size() < 2 || v.size() > 3)
      return Error(where, "an entry must be [node_id, index] or [node_id, index, version]");
    if (!ToU32(v[0], &out->node_id) || !ToU32(v[1], &out->index) || (v.size() == 3 && !ToU32(v[2], &out->version)))
      return Error(where, "entry values must be non-negative integers");
    return OkStatus();
  }

  Status ParseNodes(const json& nodes) {
    if (!nodes.is_array()) return Error("nodes", "must be an array");
    if (nodes.empty()) return Error("nodes", "empty graph");
    graph_.nodes.resize(nodes.size());
    for (size_t nid = 0; nid < nodes.size(); ++nid) {
      const json& n = nodes[nid];
      GraphNode& node = graph_.nodes[nid];
      if (!n.is_object()) return Error(NodeWhere(nid), "must be an object");
      if (!n.contains("op") || !n["op"].is_string()) return Error(NodeWhere(nid), "'op' must be a string");
      if (!n.contains("name") || !n["name"].is_string()) return Error(NodeWhere(nid), "'name' must be a string");
      node.name = n["name"].get<std::string>();
      const std::string op = n["op"].get<std::string>();
      if (op == "null") {
        node.kind = GraphNode::Kind::kInput;
      } else if (op == "tvm_op") {
        node.kind = GraphNode::Kind::kOp;
      } else {
        return Error(NodeWhere(nid), "unknown op '" + op + "' (expected 'null' or 'tvm_op')");
      }
      if (n.contains("inputs")) {
        const json& inputs = n["inputs"];
        if (!inputs.is_array()) return Error(NodeWhere(nid) + " inputs", "must be an array");
        node.inputs.resize(inputs.size());
        for (size_t k = 0; k < inputs.size(); ++k)
          HETRT_RETURN_IF_ERROR(ParseEntry(inputs[k], NodeWhere(nid) + " input " + std::to_string(k), &node.inputs[k]));
      }
      const char* attrs_key = n.contains("attrs") ? "attrs" : (n.contains("attr") ? "attr" : nullptr);
      if (node.kind == GraphNode::Kind::kInput) {
        if (!node.inputs.empty()) return Error(NodeWhere(nid), "an input node has inputs");
        continue;
      }
      if (attrs_key == nullptr) return Error(NodeWhere(nid), "operator node without 'attrs'");
      const json& attrs = n[attrs_key];
      if (!attrs.is_object()) return Error(NodeWhere(nid) + " attrs", "must be an object");
      if (!attrs.contains("func_name") || !attrs["func_name"].is_string() ||
          attrs["func_name"].get_ref<const std::string&>().empty())
        return Error(NodeWhere(nid) + " attrs.func_name", "missing or not a non-empty string");
      node.func_name = attrs["func_name"].get<std::string>();
      uint32_t num_inputs = 0, num_outputs = 0, flatten = 0;
      if (!attrs.contains("num_inputs") || !ParseUintString(attrs["num_inputs"], &num_inputs))
        return Error(NodeWhere(nid) + " attrs.num_inputs", "missing or not an integer string");
      if (!attrs.contains("num_outputs") || !ParseUintString(attrs["num_outputs"], &num_outputs))
        return Error(NodeWhere(nid) + " attrs.num_outputs", "missing or not an integer string");
      if (attrs.contains("flatten_data") && !ParseUintString(attrs["flatten_data"], &flatten))
        return Error(NodeWhere(nid) + " attrs.flatten_data", "not an integer string");
      if (num_inputs != node.inputs.size())
        return Error(NodeWhere(nid) + " attrs.num_inputs", "says " + std::to_string(num_inputs) + " but the node has " +
                                                               std::to_string(node.inputs.size()) + " inputs");
      if (num_outputs == 0 || num_outputs > kMaxOutputs)
        return Error(NodeWhere(nid) + " attrs.num_outputs", "must be 1.." + std::to_string(kMaxOutputs));
      node.num_outputs = num_outputs;
      node.flatten_data = flatten != 0;
    }
    return OkStatus();
  }

  Status ParseRowPtr(const json& v) {
    if (!v.is_array()) return Error("node_row_ptr", "must be an array");
    if (v.size() != graph_.nodes.size() + 1)
      return Error("node_row_ptr", "has " + std::to_string(v.size()) + " values for " +
                                       std::to_string(graph_.nodes.size()) + " nodes (expected nodes + 1)");
    graph_.node_row_ptr.resize(v.size());
    for (size_t i = 0; i < v.size(); ++i)
      if (!ToU32(v[i], &graph_.node_row_ptr[i])) return Error("node_row_ptr", "values must be non-negative integers");
    if (graph_.node_row_ptr[0] != 0) return Error("node_row_ptr", "must start at 0");
    for (size_t nid = 0; nid < graph_.nodes.size(); ++nid) {
      const uint64_t outputs = graph_.nodes[nid].kind == GraphNode::Kind::kOp ? graph_.nodes[nid].num_outputs : 1;
      if (uint64_t{graph_.node_row_ptr[nid]} + outputs != graph_.node_row_ptr[nid + 1])
        return Error("node_row_ptr", NodeWhere(nid) + " has " + std::to_string(outputs) +
                                         " outputs but node_row_ptr steps from " +
                                         std::to_string(graph_.node_row_ptr[nid]) + " to " +
                                         std::to_string(graph_.node_row_ptr[nid + 1]));
    }
    return OkStatus();
  }

  Status CheckEntry(const GraphEntryRef& ref, const std::string& where) const {
    if (ref.node_id >= graph_.nodes.size())
      return Error(where, "node id " + std::to_string(ref.node_id) + " out of range (" +
                              std::to_string(graph_.nodes.size()) + " nodes)");
    const uint32_t outputs = graph_.node_row_ptr[ref.node_id + 1] - graph_.node_row_ptr[ref.node_id];
    if (ref.index >= outputs)
      return Error(where, "output index " + std::to_string(ref.index) + " but " + NodeWhere(ref.node_id) + " has " +
                              std::to_string(outputs) + " output(s)");
    return OkStatus();
  }

  // Nodes run in order, so every input must come from an earlier node; this
  // also rules out cycles.
  Status CheckNodeInputs() const {
    for (size_t nid = 0; nid < graph_.nodes.size(); ++nid) {
      const auto& inputs = graph_.nodes[nid].inputs;
      for (size_t k = 0; k < inputs.size(); ++k) {
        const std::string where = NodeWhere(nid) + " input " + std::to_string(k);
        HETRT_RETURN_IF_ERROR(CheckEntry(inputs[k], where));
        if (inputs[k].node_id >= nid)
          return Error(where, "refers to node " + std::to_string(inputs[k].node_id) +
                                  ", which does not come earlier (cycle or wrong order)");
      }
    }
    return OkStatus();
  }

  Status ParseArgNodes(const json& v) {
    if (!v.is_array()) return Error("arg_nodes", "must be an array");
    graph_.arg_nodes.resize(v.size());
    std::vector<bool> seen(graph_.nodes.size(), false);
    for (size_t i = 0; i < v.size(); ++i) {
      uint32_t nid = 0;
      if (!ToU32(v[i], &nid) || nid >= graph_.nodes.size())
        return Error("arg_nodes[" + std::to_string(i) + "]", "not a valid node id");
      if (graph_.nodes[nid].kind != GraphNode::Kind::kInput)
        return Error("arg_nodes[" + std::to_string(i) + "]", NodeWhere(nid) + " is not an input ('null') node");
      if (seen[nid]) return Error("arg_nodes[" + std::to_string(i) + "]", "node listed twice");
      seen[nid] = true;
      graph_.arg_nodes[i] = nid;
    }
    return OkStatus();
  }

  Status ParseEntryList(const json& v, const std::string& field, std::vector<GraphEntryRef>* out) {
    if (!v.is_array()) return Error(field, "must be an array");
    out->resize(v.size());
    for (size_t i = 0; i < v.size(); ++i) {
      const std::string where = field + "[" + std::to_string(i) + "]";
      HETRT_RETURN_IF_ERROR(ParseEntry(v[i], where, &(*out)[i]));
      HETRT_RETURN_IF_ERROR(CheckEntry((*out)[i], where));
    }
    return OkStatus();
  }

  // attrs values are [type_tag, list]; returns the list after checking the tag and length.
  Result<const json*> TaggedList(const json& attrs, const char* key, const char* tag, bool required) {
    if (!attrs.contains(key)) {
      if (required) return Error(std::string("attrs.") + key, "missing");
      return static_cast<const json*>(nullptr);
    }
    const json& v = attrs[key];
    if (!v.is_array() || v.size() != 2 || !v[0].is_string() || v[0].get_ref<const std::string&>() != tag ||
        !v[1].is_array())
      return Error(std::string("attrs.") + key, std::string("must be [\"") + tag + "\", [...]]");
    if (v[1].size() != num_entries_)
      return Error(std::string("attrs.") + key,
                   "has " + std::to_string(v[1].size()) + " values for " + std::to_string(num_entries_) + " entries");
    return &v[1];
  }

  Status ParseAttrs(const json& attrs) {
    if (!attrs.is_object()) return Error("attrs", "must be an object");
    num_entries_ = graph_.node_row_ptr.back();
    for (const auto& [key, value] : attrs.items()) {
      if (key == "dltype" || key == "shape" || key == "storage_id" || key == "device_index" || key == "storage_scope")
        continue;
      // Unknown keys are tolerated only in the integer forms TVM itself skips.
      if (!value.is_array() || value.empty() || !value[0].is_string() ||
          (value[0] != "list_int" && value[0] != "size_t"))
        return Error("attrs." + key, "unknown attribute");
    }
    HETRT_ASSIGN_OR_RETURN(const json* dltypes, TaggedList(attrs, "dltype", "list_str", true));
    HETRT_ASSIGN_OR_RETURN(const json* shapes, TaggedList(attrs, "shape", "list_shape", true));
    HETRT_ASSIGN_OR_RETURN(const json* sids, TaggedList(attrs, "storage_id", "list_int", true));
    HETRT_ASSIGN_OR_RETURN(const json* devices, TaggedList(attrs, "device_index", "list_int", false));
    HETRT_ASSIGN_OR_RETURN(const json* scopes, TaggedList(attrs, "storage_scope", "list_str", false));
    graph_.dtypes.resize(num_entries_);
    graph_.shapes.resize(num_entries_);
    graph_.storage_ids.resize(num_entries_);
    for (uint32_t e = 0; e < num_entries_; ++e) {
      const std::string where = "entry " + std::to_string(e);
      const json& dt = (*dltypes)[e];
      if (!dt.is_string()) return Error("attrs.dltype[" + std::to_string(e) + "]", "must be a string");
      auto parsed = ParseDataType(dt.get<std::string>());
      if (!parsed.ok()) return Error("attrs.dltype[" + std::to_string(e) + "]", parsed.status().message());
      graph_.dtypes[e] = *parsed;
      const json& shape = (*shapes)[e];
      if (!shape.is_array()) return Error("attrs.shape[" + std::to_string(e) + "]", "must be an array");
      for (const json& d : shape) {
        if (!d.is_number_integer() || d.get<int64_t>() < 0)
          return Error("attrs.shape[" + std::to_string(e) + "]", "dimensions must be non-negative integers");
        graph_.shapes[e].push_back(d.get<int64_t>());
      }
      auto count = ShapeNumElements(graph_.shapes[e]);
      if (!count.ok() || static_cast<uint64_t>(*count) > (uint64_t{1} << 48) / DataTypeBytes(*parsed))
        return Error("attrs.shape[" + std::to_string(e) + "]", "shape too large");
      if (!ToU32((*sids)[e], &graph_.storage_ids[e]) || graph_.storage_ids[e] >= num_entries_)
        return Error("attrs.storage_id[" + std::to_string(e) + "]",
                     "must be an integer in [0, " + std::to_string(num_entries_) + ")");
    }
    if (devices != nullptr) {
      graph_.device_types.resize(num_entries_);
      for (uint32_t e = 0; e < num_entries_; ++e) {
        const json& d = (*devices)[e];
        if (!d.is_number_integer() || d.get<int64_t>() < 1 || d.get<int64_t>() > 64)
          return Error("attrs.device_index[" + std::to_string(e) + "]", "must be a DLPack device type (1..64)");
        graph_.device_types[e] = static_cast<int32_t>(d.get<int64_t>());
      }
      // One storage id lives on one device.
      std::vector<int32_t> sid_device(num_entries_, 0);
      for (uint32_t e = 0; e < num_entries_; ++e) {
        int32_t& dev = sid_device[graph_.storage_ids[e]];
        if (dev == 0) dev = graph_.device_types[e];
        if (dev != graph_.device_types[e])
          return Error("attrs.storage_id[" + std::to_string(e) + "]",
                       "storage " + std::to_string(graph_.storage_ids[e]) + " is shared by entries on " +
                           DeviceTypeName(dev) + " and " + DeviceTypeName(graph_.device_types[e]));
      }
    }
    if (scopes != nullptr) {
      for (const json& s : *scopes) {
        if (!s.is_string()) return Error("attrs.storage_scope", "values must be strings");
        graph_.storage_scopes.push_back(s.get<std::string>());
      }
    }
    return OkStatus();
  }

  Status CheckSpecialNodes() const {
    for (size_t nid = 0; nid < graph_.nodes.size(); ++nid) {
      const GraphNode& n = graph_.nodes[nid];
      if (n.kind != GraphNode::Kind::kOp) continue;
      if (n.func_name == kCopyFunction) {
        if (n.inputs.size() != 1 || n.num_outputs != 1)
          return Error(NodeWhere(nid), "__copy takes one input and one output");
        const uint32_t in = graph_.entry_id(n.inputs[0]);
        const uint32_t out = graph_.entry_id(static_cast<uint32_t>(nid), 0);
        if (graph_.entry_bytes(in) != graph_.entry_bytes(out))
          return Error(NodeWhere(nid), "__copy between entries of different sizes (" +
                                           std::to_string(graph_.entry_bytes(in)) + " vs " +
                                           std::to_string(graph_.entry_bytes(out)) + " bytes)");
      }
    }
    return OkStatus();
  }

  std::string source_;
  Graph graph_;
  uint32_t num_entries_ = 0;
};

}  // namespace

uint64_t Graph::entry_bytes(uint32_t eid) const {
  uint64_t n = 1;
  for (int64_t d : shapes[eid]) n *= static_cast<uint64_t>(d);
  return n * DataTypeBytes(dtypes[eid]);
}

uint32_t Graph::num_storage() const {
  uint32_t n = 0;
  for (uint32_t sid : storage_ids) n = std::max(n, sid + 1);
  return n;
}

Result<Graph> ParseGraphJson(std::string_view text, const std::string& source) {
  return GraphParser(source).Parse(text);
}

}  // namespace hetrt
