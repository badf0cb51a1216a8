#include "hetrt/graph_builder.h"

#include <nlohmann/json.hpp>

#include <limits>
#include <map>

#include "hetrt/base/dtype.h"

namespace hetrt {

GraphBuilder::Value GraphBuilder::AddInput(const std::string& name, TensorSpec spec, int32_t device_type) {
  nodes_.push_back({false, name, "", {}, {std::move(spec)}, device_type});
  return {static_cast<uint32_t>(nodes_.size() - 1), 0};
}

GraphBuilder::Value GraphBuilder::AddParam(const std::string& name, Tensor value, int32_t device_type) {
  Value v = AddInput(name, {value.shape(), value.dtype()}, device_type);
  params_.push_back({name, std::move(value)});
  return v;
}

std::vector<GraphBuilder::Value> GraphBuilder::AddOp(const std::string& name, const std::string& func_name,
                                                     std::vector<Value> inputs, std::vector<TensorSpec> outputs,
                                                     int32_t device_type) {
  nodes_.push_back({true, name, func_name, std::move(inputs), std::move(outputs), device_type});
  std::vector<Value> values;
  for (uint32_t k = 0; k < nodes_.back().outputs.size(); ++k)
    values.push_back({static_cast<uint32_t>(nodes_.size() - 1), k});
  return values;
}

Result<GraphBuilder::Built> GraphBuilder::Build() const {
  // Checks first: every reference points at an earlier node's existing output.
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const Node& n = nodes_[i];
    if (n.is_op && n.outputs.empty()) return InvalidArgument("node '" + n.name + "' has no outputs");
    for (const Value& v : n.inputs)
      if (v.node >= i || v.index >= nodes_[v.node].outputs.size())
        return InvalidArgument("node '" + n.name + "' uses a value that is not an earlier node's output");
  }
  for (const Value& v : outputs_)
    if (v.node >= nodes_.size() || v.index >= nodes_[v.node].outputs.size())
      return InvalidArgument("graph output refers to no node output");
  if (outputs_.empty()) return InvalidArgument("the graph has no outputs");

  // 1. Emit nodes in order, inserting one __copy per (value, device) crossing.
  struct OutNode {
    const Node* source;  // null for inserted copies
    std::string name, func_name;
    std::vector<std::pair<uint32_t, uint32_t>> inputs;  // (emitted node, index)
    std::vector<TensorSpec> outputs;
    int32_t device_type;
  };
  std::vector<OutNode> out;
  std::vector<uint32_t> emitted(nodes_.size());
  std::map<std::tuple<uint32_t, uint32_t, int32_t>, uint32_t> copies;  // (emitted node, index, device) -> copy node
  int copy_count = 0;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const Node& n = nodes_[i];
    OutNode o{&n, n.name, n.func_name, {}, n.outputs, n.device_type};
    for (const Value& v : n.inputs) {
      uint32_t src = emitted[v.node];
      const int32_t src_device = out[src].device_type;
      if (src_device != n.device_type) {
        auto key = std::make_tuple(src, v.index, n.device_type);
        auto it = copies.find(key);
        if (it == copies.end()) {
          const std::string copy_name = copy_count == 0 ? "__copy" : "__copy_" + std::to_string(copy_count);
          ++copy_count;
          out.push_back({nullptr, copy_name, "__copy", {{src, v.index}}, {out[src].outputs[v.index]}, n.device_type});
          it = copies.emplace(key, static_cast<uint32_t>(out.size() - 1)).first;
        }
        o.inputs.push_back({it->second, 0});
      } else {
        o.inputs.push_back({src, v.index});
      }
    }
    emitted[i] = static_cast<uint32_t>(out.size());
    out.push_back(std::move(o));
  }

  // 2. Entries and their last use.
  std::vector<uint32_t> row_ptr{0};
  for (const OutNode& o : out) row_ptr.push_back(row_ptr.back() + static_cast<uint32_t>(o.outputs.size()));
  const uint32_t num_entries = row_ptr.back();
  constexpr uint32_t kForever = std::numeric_limits<uint32_t>::max();
  std::vector<uint32_t> last_use(num_entries, 0);
  for (uint32_t nid = 0; nid < out.size(); ++nid)
    for (const auto& [src, idx] : out[nid].inputs) last_use[row_ptr[src] + idx] = nid;
  for (uint32_t nid = 0; nid < out.size(); ++nid)
    if (!out[nid].source || out[nid].source->is_op)
      continue;
    else
      last_use[row_ptr[nid]] = kForever;  // inputs and params live throughout
  std::vector<std::pair<uint32_t, uint32_t>> heads;
  for (const Value& v : outputs_) {
    heads.push_back({emitted[v.node], v.index});
    last_use[row_ptr[emitted[v.node]] + v.index] = kForever;
  }

  // 3. Storage by liveness: an op's outputs take the smallest free storage on
  // their device that fits (else a new one); its inputs are freed after, so an
  // output never shares memory with an input of the same node.
  auto bytes_of = [](const TensorSpec& s) {
    uint64_t n = DataTypeBytes(s.dtype);
    for (int64_t d : s.shape) n *= static_cast<uint64_t>(d);
    return n;
  };
  struct Storage {
    int32_t device_type;
    uint64_t bytes;
    bool free;
  };
  std::vector<Storage> storage;
  std::vector<uint32_t> sid(num_entries);
  for (uint32_t nid = 0; nid < out.size(); ++nid) {
    const OutNode& o = out[nid];
    for (uint32_t k = 0; k < o.outputs.size(); ++k) {
      const uint32_t eid = row_ptr[nid] + k;
      const uint64_t need = bytes_of(o.outputs[k]);
      int best = -1;
      for (size_t s = 0; s < storage.size(); ++s)
        if (storage[s].free && storage[s].device_type == o.device_type && storage[s].bytes >= need &&
            (best < 0 || storage[s].bytes < storage[static_cast<size_t>(best)].bytes))
          best = static_cast<int>(s);
      const bool reusable = o.source == nullptr || o.source->is_op;  // inputs/params keep their own
      if (best < 0 || !reusable) {
        storage.push_back({o.device_type, need, false});
        sid[eid] = static_cast<uint32_t>(storage.size() - 1);
      } else {
        storage[static_cast<size_t>(best)].free = false;
        sid[eid] = static_cast<uint32_t>(best);
      }
    }
    // Outputs nobody reads, and inputs read for the last time, free their
    // storage only now that all of this node's outputs have theirs.
    for (uint32_t k = 0; k < o.outputs.size(); ++k) {
      const uint32_t eid = row_ptr[nid] + k;
      if (last_use[eid] == 0 && (o.source == nullptr || o.source->is_op)) storage[sid[eid]].free = true;
    }
    for (const auto& [src, idx] : o.inputs) {
      const uint32_t eid = row_ptr[src] + idx;
      if (last_use[eid] == nid) storage[sid[eid]].free = true;
    }
  }

  // 4. JSON.
  nlohmann::json nodes = nlohmann::json::array(), arg_nodes = nlohmann::json::array();
  std::vector<std::string> dltypes;
  std::vector<std::vector<int64_t>> shapes;
  std::vector<int32_t> devices;
  for (uint32_t nid = 0; nid < out.size(); ++nid) {
    const OutNode& o = out[nid];
    nlohmann::json node;
    const bool is_input = o.source && !o.source->is_op;
    node["op"] = is_input ? "null" : "tvm_op";
    node["name"] = o.name;
    nlohmann::json inputs = nlohmann::json::array();
    for (const auto& [src, idx] : o.inputs) inputs.push_back({src, idx, 0});
    node["inputs"] = inputs;
    if (!is_input)
      node["attrs"] = {{"func_name", o.func_name},
                       {"num_inputs", std::to_string(o.inputs.size())},
                       {"num_outputs", std::to_string(o.outputs.size())},
                       {"flatten_data", "0"}};
    else
      arg_nodes.push_back(nid);
    nodes.push_back(node);
    for (const TensorSpec& s : o.outputs) {
      dltypes.push_back(DataTypeToString(s.dtype));
      shapes.push_back(s.shape);
      devices.push_back(o.device_type);
    }
  }
  nlohmann::json heads_json = nlohmann::json::array();
  for (const auto& [n, i] : heads) heads_json.push_back({n, i, 0});
  nlohmann::json root = {
      {"nodes", nodes},
      {"arg_nodes", arg_nodes},
      {"heads", heads_json},
      {"node_row_ptr", row_ptr},
      {"attrs",
       {{"dltype", {"list_str", dltypes}},
        {"shape", {"list_shape", shapes}},
        {"storage_id", {"list_int", sid}},
        {"device_index", {"list_int", devices}}}},
  };
  Built built;
  built.graph_json = root.dump();
  built.params = params_;
  HETRT_ASSIGN_OR_RETURN(built.graph, ParseGraphJson(built.graph_json, "GraphBuilder"), "the builder produced an invalid graph (a bug)");
  return built;
}

}  // namespace hetrt
