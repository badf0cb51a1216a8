// The graph executor: storage per storage_id per device, placement per
// device_index, call frames and copy plans prepared once, and a run loop that
// allocates nothing, locks nothing and looks nothing up by name.
//
// Asynchronous by default: each device's nodes go to a stream of the
// executor's own, copies to a copy stream (or, between the host and a device
// that shares host memory, a host memcpy through the device buffer's host
// address), and a node waits only for events of the nodes it depends on in
// other lanes. The host thread issues everything in a precomputed order and
// runs CPU nodes itself; it blocks only where a CPU node reads device results,
// and at Synchronize / GetOutput.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hetrt/exec/executor.h"
#include "hetrt/formats/graph.h"
#include "hetrt/formats/params.h"
#include "hetrt/plugin_host/plugin_registry.h"

namespace hetrt {

class Module;
using SharedParams = std::shared_ptr<const std::vector<NamedTensor>>;

// Thread contract: thread-compatible, as every Executor (one thread at a time).
class GraphExecutor final : public Executor {
 public:
  struct Options {
    std::vector<DLDevice> devices{DLDevice{kDLCPU, 0}};
    PluginRegistry* plugins = nullptr;  // nullptr: PluginRegistry::Global()
    // Params bound at creation (by name, graph inputs only). Host params on a
    // CPU entry are used in place, not copied; the executor never writes into them.
    SharedParams params;
    // Today's TVM order: one node at a time, every copy blocking.
    bool sequential = false;
    // Copies always through the plugin's copy call, even to and from devices
    // that share host memory (for comparison with the shared-memory path).
    bool staged_copies = false;
  };

  // `lib` provides the operator functions (looked up with its imports).
  static Result<std::unique_ptr<GraphExecutor>> Create(std::shared_ptr<const Graph> graph, std::shared_ptr<Module> lib,
                                                       Options options);
  static Result<std::unique_ptr<GraphExecutor>> Create(std::string_view graph_json, std::shared_ptr<Module> lib,
                                                       Options options);
  ~GraphExecutor() override;

  // Graph inputs (user inputs and params), in arg_nodes order.
  int NumInputs() const override;
  int NumOutputs() const override;
  const std::string& InputName(int index) const override;
  // "<node name>:<i>" of output i (TVM's naming).
  std::string OutputName(int index) const override;
  // Graph inputs not bound to a param.
  std::vector<int> UnboundInputs() const override;
  const Tensor& InputTensor(int index) const;
  TensorSpec InputSpec(int index) const override { return SpecOf(InputTensor(index)); }
  TensorSpec OutputSpec(int index) const override { return SpecOf(OutputTensor(index)); }
  const Tensor& OutputTensor(int index) const;  // a view on the device

  // Copies into the input's storage (host -> device when placed on a device).
  Status SetInput(int index, const Tensor& value) override;
  using Executor::SetInput;
  // Binds caller memory as the input (same device, shape, dtype; 64-byte
  // aligned) until the next SetInput / SetInputZeroCopy of that input. Refused
  // when the graph plans a larger tensor into the input's storage.
  Status SetInputZeroCopy(int index, const Tensor& value);
  // Whether caller memory (on the input's device) can stand in for input
  // `index` with nothing written into it: no kernel's output shares the
  // input's storage. Decided once, at creation.
  bool InputBindsInPlace(int index) const;
  // Whether `value` itself can: InputBindsInPlace, and on the input's device,
  // at offset 0, 64-byte aligned (what SetInputZeroCopy takes).
  bool InputTakesInPlace(int index, const Tensor& value) const;
  // Makes output `index` be written straight into caller memory, by this run
  // and every later one until it is bound again. Refused for an output that is
  // the same tensor as another output (OutputBindsInPlace).
  Status SetOutputZeroCopy(int index, const Tensor& value);
  // Whether output `index` can be bound to memory of its own: no other output
  // is the same tensor.
  bool OutputBindsInPlace(int index) const;
  // TVM's load_params: a param dict; names that are not graph inputs are ignored.
  Status LoadParams(std::span<const uint8_t> bytes);
  Status Run() override;
  Status Synchronize() override;

  // One node of a profiled run, on the host clock (CLOCK_MONOTONIC ns).
  struct NodeTrace {
    uint32_t node_id = 0;
    DLDevice device{kDLCPU, 0};  // where the node's output lives
    uint32_t lane = 0;           // index into RunProfile::lanes
    uint64_t submit_ns = 0;      // when the host began issuing it
    uint64_t start_ns = 0;       // when it ran (device times mapped onto the host clock)
    uint64_t end_ns = 0;
    uint64_t wait_ns = 0;              // time its lane sat blocked on another lane first
    uint64_t bytes = 0;                // copies: bytes moved
    std::vector<uint32_t> waited_for;  // node ids in other lanes it had to follow
    double ms() const { return static_cast<double>(end_ns - start_ns) / 1e6; }
  };
  struct RunProfile {
    std::vector<std::string> lanes;             // "host", "opencl:0 compute", "opencl:0 copy", ...
    std::vector<NodeTrace> nodes;               // in issue order
    uint64_t run_start_ns = 0, run_end_ns = 0;  // Run() entry to the end of the last work
    uint64_t clock_uncertainty_ns = 0;          // worst device-clock mapping error
  };
  // Run() with every node timed at its true place in time: host nodes by the
  // host clock, device nodes by timing events around them on their stream,
  // mapped onto the host clock with the plugin's device clock. Slower than
  // Run() (extra events, a final synchronize); for `hetrt bench`, never the hot path.
  Status RunProfiled(RunProfile* profile);
  Result<Tensor> GetOutput(int index) const override;
  // Copies output `index` into `out` (any device).
  Status CopyOutputTo(int index, Tensor& out) const;

  // Where each node's outputs live (for tools): device of entry eid.
  DLDevice EntryDevice(uint32_t eid) const;
  const Graph& graph() const;
  // Bytes of executor-owned storage per device (params used in place excluded).
  std::vector<std::pair<DLDevice, uint64_t>> StorageBytesPerDevice() const;

 private:
  // Storage, call frames, lanes and steps, and the run loop
  // (core/exec/graph_executor_impl.h): kept out of this header.
  struct Impl;
  explicit GraphExecutor(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace hetrt
