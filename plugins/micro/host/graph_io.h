// The inputs and outputs of a TVM graph JSON (names, dtypes, shapes): all a
// micro build needs from the graph, whose nodes the C runtime itself executes.
#pragma once

#include <string>
#include <vector>

#include "model_session.h"

namespace hetrt::micro {

struct GraphIo {
  std::vector<TensorSpec> inputs;   // the graph's arg nodes, in order
  std::vector<TensorSpec> outputs;  // its heads, named output_<i>
};

Result<GraphIo> ReadGraphIo(const std::string& graph_json, const std::string& source);

}  // namespace hetrt::micro
