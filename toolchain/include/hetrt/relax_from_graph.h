// A graph model (graph JSON + params) as a Relax VM executable with the same
// kernels: hetrt's own way to make Relax executables for any device its
// kernel set covers (TVM makes them with relax.build; hetrt has no compiler).
// The bytecode is what relax.build emits for such a graph: parameter checks,
// alloc_storage/alloc_tensor per output on its device, one call per kernel,
// to_device per __copy, a tuple of the outputs.
#pragma once

#include <string>
#include <vector>

#include "hetrt/formats/graph.h"
#include "hetrt/formats/params.h"
#include "hetrt/formats/relax_executable.h"

namespace hetrt {

struct RelaxFromGraph {
  RelaxExecutable executable;
  // The devices `vm_initialization` must get, in order (accelerators in the
  // order they first appear, the CPU last).
  std::vector<DLDevice> devices;
};

// Graph inputs that are params become constants (tensors on the graph's
// device for them: a param placed on another device than devices[0] is
// copied there at the start of each call). Other inputs are `main`'s
// parameters, in arg_nodes order.
Result<RelaxFromGraph> RelaxExecutableFromGraph(const Graph& graph, const std::vector<NamedTensor>& params);

}  // namespace hetrt
