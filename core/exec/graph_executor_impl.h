// The graph executor's state and the code behind its face (graph_executor.h
// forwards to it): storage per storage id, call frames, the lanes and steps
// built from the plan, and the run loop. Private to core/exec.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "hetrt/exec/graph_executor.h"
#include "hetrt/exec/graph_plan.h"
#include "hetrt/exec/graph_steps.h"
#include "hetrt/module/module.h"

namespace hetrt {

struct GraphExecutor::Impl {
  ~Impl();
  // graph_executor.cc: plans the graph on the devices, allocates, binds, prepares.
  Status Init(std::shared_ptr<const Graph> graph, std::shared_ptr<Module> lib, Options options);

  // What the face forwards (graph_executor.h says what each does).
  int NumInputs() const { return static_cast<int>(graph_->arg_nodes.size()); }
  int NumOutputs() const { return static_cast<int>(graph_->heads.size()); }
  const std::string& InputName(int index) const;
  std::string OutputName(int index) const;
  std::vector<int> UnboundInputs() const;
  const Tensor& InputTensor(int index) const;
  const Tensor& OutputTensor(int index) const;
  Status SetInput(int index, const Tensor& value);
  Status SetInputZeroCopy(int index, const Tensor& value);
  bool InputBindsInPlace(int index) const;
  bool InputTakesInPlace(int index, const Tensor& value) const;
  bool OutputBindsInPlace(int index) const;
  Status SetOutputZeroCopy(int index, const Tensor& value);
  Status LoadParams(std::span<const uint8_t> bytes);
  Status Run();
  Status Synchronize();
  Status RunProfiled(RunProfile* profile);
  Result<Tensor> GetOutput(int index) const;
  Status CopyOutputTo(int index, Tensor& out) const;
  std::vector<std::pair<DLDevice, uint64_t>> StorageBytesPerDevice() const;

  using OpCall = KernelCall;
  using Lane = GraphLane;
  using Step = GraphStep;
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
  void PlanInPlaceInputs();
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
  std::vector<void*> own_storage_host_;                // storage_host_ of storage_ itself (while rebound too)
  std::vector<bool> inputs_bind_in_place_;             // per input: InputBindsInPlace (fixed by the plan)
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
