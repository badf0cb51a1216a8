#include "graph_io.h"

#include <nlohmann/json.hpp>

#include "hetrt/sdk/tensor_layout.h"

namespace hetrt::micro {
namespace {

using nlohmann::json;

// attrs.<key> is ["list_<kind>", [values...]] in TVM's graph JSON.
const json* AttrList(const json& graph, const char* key) {
  if (!graph.contains("attrs") || !graph["attrs"].is_object() || !graph["attrs"].contains(key)) return nullptr;
  const json& attr = graph["attrs"][key];
  if (!attr.is_array() || attr.size() != 2 || !attr[1].is_array()) return nullptr;
  return &attr[1];
}

}  // namespace

Result<GraphIo> ReadGraphIo(const std::string& graph_json, const std::string& source) {
  constexpr int kDeepestGraph = 32;  // a graph is a handful of levels deep
  bool too_deep = false;
  json graph = json::parse(
      graph_json, [&](int depth, json::parse_event_t, json&) { return !(too_deep |= depth > kDeepestGraph); }, false);
  if (too_deep || graph.is_discarded() || !graph.is_object()) return DataLoss(source + ": not a graph JSON object");
  const json* dtypes = AttrList(graph, "dltype");
  const json* shapes = AttrList(graph, "shape");
  for (const char* key : {"nodes", "arg_nodes", "heads", "node_row_ptr"})
    if (!graph.contains(key) || !graph[key].is_array()) return DataLoss(source + ": no '" + key + "' list");
  if (dtypes == nullptr || shapes == nullptr) return DataLoss(source + ": no attrs.dltype or attrs.shape");
  const json& nodes = graph["nodes"];
  const json& row_ptr = graph["node_row_ptr"];
  auto spec = [&](const json& node_id, const json& output, std::string name) -> Result<TensorSpec> {
    if (!node_id.is_number_unsigned() || node_id.get<size_t>() >= nodes.size() ||
        node_id.get<size_t>() >= row_ptr.size() || !output.is_number_unsigned())
      return DataLoss(source + ": a node reference out of range");
    const json& first = row_ptr[node_id.get<size_t>()];
    if (!first.is_number_unsigned()) return DataLoss(source + ": node_row_ptr holds a non-index");
    const size_t entry = first.get<size_t>() + output.get<size_t>();
    if (entry >= dtypes->size() || entry >= shapes->size())
      return DataLoss(source + ": entry " + std::to_string(entry) + " has no dtype or shape");
    const json& dtype = (*dtypes)[entry];
    const auto type = dtype.is_string() ? sdk::DtypeFromName(dtype.get<std::string>()) : std::nullopt;
    if (!type) return DataLoss(source + ": entry " + std::to_string(entry) + " has a bad dtype");
    TensorSpec t{std::move(name), *type, 0, {}};
    for (const json& dim : (*shapes)[entry])
      if (dim.is_number_integer()) t.shape.push_back(dim.get<int64_t>());
    const auto bytes = sdk::DenseBytes(t.shape, t.dtype);
    if (!bytes) return DataLoss(source + ": entry " + std::to_string(entry) + " has a bad shape");
    t.bytes = static_cast<size_t>(*bytes);
    return t;
  };
  GraphIo io;
  for (const json& id : graph["arg_nodes"]) {
    const bool named = id.is_number_unsigned() && id.get<size_t>() < nodes.size() &&
                       nodes[id.get<size_t>()].is_object() && nodes[id.get<size_t>()].value("name", json()).is_string();
    if (!named) return DataLoss(source + ": an arg node without a name");
    HETRT_ASSIGN_OR_RETURN(TensorSpec t, spec(id, json(0u), nodes[id.get<size_t>()]["name"].get<std::string>()));
    io.inputs.push_back(std::move(t));
  }
  for (const json& head : graph["heads"]) {
    if (!head.is_array() || head.size() < 2) return DataLoss(source + ": a head that is not [node, index, version]");
    HETRT_ASSIGN_OR_RETURN(TensorSpec t, spec(head[0], head[1], "output_" + std::to_string(io.outputs.size())));
    io.outputs.push_back(std::move(t));
  }
  return io;
}

}  // namespace hetrt::micro
