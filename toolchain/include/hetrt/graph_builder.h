// Building graph-executor models inside hetrt: inputs, params and kernel nodes
// with a device each; the builder does the placement work TVM's compiler does:
// device_index per entry, a __copy node wherever a tensor crosses devices, and
// storage ids planned by liveness with reuse. Output: graph JSON + params.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "hetrt/formats/graph.h"
#include "hetrt/formats/params.h"

namespace hetrt {

// Thread contract: thread-compatible (one thread builds a graph).
class GraphBuilder {
 public:
  // A tensor in the graph: output `index` of node `node` (builder numbering).
  struct Value {
    uint32_t node = 0;
    uint32_t index = 0;
  };
  struct TensorSpec {
    std::vector<int64_t> shape;
    DLDataType dtype{kDLFloat, 32, 1};
  };

  Value AddInput(const std::string& name, TensorSpec spec, int32_t device_type = kDLCPU);
  // A weight: an input bound to `value` (host memory), placed on `device_type`.
  Value AddParam(const std::string& name, Tensor value, int32_t device_type = kDLCPU);
  // A kernel call: `func_name` takes inputs then outputs (the packed-ABI order).
  std::vector<Value> AddOp(const std::string& name, const std::string& func_name, std::vector<Value> inputs,
                           std::vector<TensorSpec> outputs, int32_t device_type = kDLCPU);
  Value AddOp1(const std::string& name, const std::string& func_name, std::vector<Value> inputs, TensorSpec output,
               int32_t device_type = kDLCPU) {
    return AddOp(name, func_name, std::move(inputs), {std::move(output)}, device_type)[0];
  }
  void AddOutput(Value value) { outputs_.push_back(value); }

  struct Built {
    std::string graph_json;
    std::vector<NamedTensor> params;
    Graph graph;  // the same graph, parsed back (validated)
  };
  Result<Built> Build() const;

 private:
  struct Node {
    bool is_op = false;
    std::string name, func_name;
    std::vector<Value> inputs;
    std::vector<TensorSpec> outputs;
    int32_t device_type = kDLCPU;
  };
  std::vector<Node> nodes_;
  std::vector<NamedTensor> params_;
  std::vector<Value> outputs_;
};

}  // namespace hetrt
