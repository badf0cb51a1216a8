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

#include <atomic>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "hetrt/exec/executor.h"
#include "hetrt/exec/graph_plan.h"
#include "hetrt/exec/graph_steps.h"
#include "hetrt/formats/graph.h"
#include "hetrt/formats/params.h"
#include "hetrt/module/module.h"
#include "hetrt/plugin_host/plugin_registry.h"

namespace hetrt {

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
  int NumInputs() const override { return static_cast<int>(graph_->arg_nodes.size()); }
  int NumOutputs() const override { return static_cast<int>(graph_->heads.size()); }
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
  // Binds caller memory as the input (same device, shape, dtype; 64-byte aligned).
  Status SetInputZeroCopy(int index, const Tensor& value);
  // Makes output `index` be written straight into caller memory.
  Status SetOutputZeroCopy(int index, const Tensor& value);
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
  DLDevice EntryDevice(uint32_t eid) const { return plan_.entry_devices[eid]; }
  const Graph& graph() const { return *graph_; }
  // Bytes of executor-owned storage per device (params used in place excluded).
  std::vector<std::pair<DLDevice, uint64_t>> StorageBytesPerDevice() const;

 private:
  using OpCall = KernelCall;
  using Lane = GraphLane;
  using Step = GraphStep;
  GraphExecutor() = default;
  // graph_executor.cc: storage, bindings, call frames.
  Status AllocateStorage();
  Status BindParams(const std::vector<NamedTensor>& params, bool allow_in_place);
  Status PrepareCalls();
  Status CheckInputValue(int index, const Tensor& value, const char* what) const;
  // Gives storage bound to memory the executor does not own (a shared param,
  // a zero-copy input) a buffer of its own before the executor writes it.
  Status DetachStorage(uint32_t sid);
  // Points every entry of a storage id (and their flattened aliases) at `data`.
  void RebindStorage(uint32_t sid, void* data);
  void RebindEntry(uint32_t eid, void* data);
  // graph_lanes.cc: lanes, streams, events and prepared copies from the plan.
  Status BuildSteps();
  Status BuildLanes();
  Status BuildCopy(uint32_t index, Step& step, const PlannedStep& planned);
  // graph_runner.cc: the run loop.
  template <bool kProfile>
  Status RunSteps(RunProfile* profile);
  Status ExecuteStep(const Step& step);
  Status FinishPendingRun() const;
  Status CopyOutputsBoundToInputs();
  Status NodeError(size_t step_index, const Status& status) const;
  static Status KernelError();  // the failed kernel's message, or a note that it gave none

  std::shared_ptr<const Graph> graph_;
  std::shared_ptr<Module> lib_;
  Options options_;
  PluginRegistry* plugins_ = nullptr;
  GraphPlan plan_;
  std::vector<Tensor> storage_;                        // per storage id (undefined when unused or borrowed)
  std::vector<bool> storage_borrowed_;                 // sid points at memory the executor must not write
  std::vector<void*> storage_host_;                    // per sid: host address of device storage, or NULL
  std::vector<Tensor> entries_;                        // per eid, views of storage_ or bound memory
  std::vector<std::vector<DLTensor*>> entry_aliases_;  // flattened copies of an eid's DLTensor
  std::vector<hetrt_value_t> arg_values_;
  std::vector<int32_t> arg_codes_;
  std::vector<std::unique_ptr<DLTensor>> flat_tensors_;
  std::vector<std::unique_ptr<int64_t>> flat_shapes_;
  std::vector<std::pair<uint32_t, Tensor>> output_copies_;  // outputs that alias an input
  // Declared before steps_: their events go before the lanes' streams.
  std::vector<Lane> lanes_;
  std::vector<Step> steps_;  // same index as plan_.steps
  struct HostCall {          // the CPU-only run loop's record (one per step then)
    hetrt_packed_cfunc_t fn;
    void* resource;
    hetrt_value_t* args;
    int32_t* codes;
    int32_t num_args;
  };
  std::vector<HostCall> host_calls_;
  std::vector<hetrt_stream_t*> saved_streams_;  // per lane: the stream that was current before a run
  mutable std::atomic<bool> pending_{false};    // device work of the last run may still be running
  mutable std::mutex pending_mutex_;
};

}  // namespace hetrt
