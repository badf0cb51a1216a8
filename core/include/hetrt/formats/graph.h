// TVM graph-executor JSON: the parsed, validated form. Every inconsistency is
// reported with the node (or entry) and the field; once parsed, the executor
// trusts it.
#pragma once

#include <dlpack/dlpack.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "hetrt/base/status.h"

namespace hetrt {

// The two func_names the executor itself implements.
inline constexpr const char* kNopFunction = "__nop";
inline constexpr const char* kCopyFunction = "__copy";

struct GraphEntryRef {
  uint32_t node_id = 0;
  uint32_t index = 0;
  uint32_t version = 0;
};

struct GraphNode {
  enum class Kind { kInput, kOp };
  Kind kind = Kind::kInput;
  std::string name;
  std::vector<GraphEntryRef> inputs;
  // Operator nodes only.
  std::string func_name;  // a kernel symbol, or "__nop" / "__copy"
  uint32_t num_outputs = 1;
  bool flatten_data = false;
};

struct Graph {
  std::vector<GraphNode> nodes;
  std::vector<uint32_t> arg_nodes;   // input index i = arg_nodes[i]
  std::vector<GraphEntryRef> heads;  // output i = heads[i]
  std::vector<uint32_t> node_row_ptr;
  // Indexed by entry id (eid).
  std::vector<std::vector<int64_t>> shapes;
  std::vector<DLDataType> dtypes;
  std::vector<uint32_t> storage_ids;
  std::vector<int32_t> device_types;        // empty when the graph has no device_index
  std::vector<std::string> storage_scopes;  // empty when absent

  uint32_t num_entries() const { return static_cast<uint32_t>(shapes.size()); }
  uint32_t entry_id(GraphEntryRef ref) const { return node_row_ptr[ref.node_id] + ref.index; }
  uint32_t entry_id(uint32_t node_id, uint32_t index) const { return node_row_ptr[node_id] + index; }
  // Bytes of one entry: prod(shape) * bytes per element.
  uint64_t entry_bytes(uint32_t eid) const;
  uint32_t num_storage() const;
};

Result<Graph> ParseGraphJson(std::string_view text, const std::string& source);

}  // namespace hetrt
