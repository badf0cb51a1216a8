// The graph executor: storage per storage_id per device, placement per
// device_index, call frames prepared once, and a run loop that allocates
// nothing, locks nothing and looks nothing up by name.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "hetrt/executor.h"
#include "hetrt/graph.h"
#include "hetrt/module.h"
#include "hetrt/params.h"
#include "hetrt/plugin_registry.h"

namespace hetrt {

using SharedParams = std::shared_ptr<const std::vector<NamedTensor>>;

class GraphExecutor final : public Executor {
 public:
  struct Options {
    std::vector<DLDevice> devices{DLDevice{kDLCPU, 0}};
    PluginRegistry* plugins = nullptr;  // nullptr: PluginRegistry::Global()
    // Params bound at creation (by name, graph inputs only). Host params on a
    // CPU entry are used in place, not copied; the executor never writes into them.
    SharedParams params;
  };

  // `lib` provides the operator functions (looked up with its imports).
  static Result<std::unique_ptr<GraphExecutor>> Create(std::shared_ptr<const Graph> graph,
                                                       std::shared_ptr<Module> lib, Options options);
  static Result<std::unique_ptr<GraphExecutor>> Create(std::string_view graph_json,
                                                       std::shared_ptr<Module> lib, Options options);
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

  struct NodeTime {
    uint32_t node_id;
    DLDevice device;    // where the node's output lives
    double device_ms;   // device time from plugin events; wall time for CPU nodes
  };
  // Run() that also times every node: CPU nodes with the wall clock, device
  // nodes with events recorded on their device around the node. Slower than
  // Run() (it synchronizes); for benchmarks and `hetrt bench`, never the hot path.
  Status RunProfiled(std::vector<NodeTime>* times);
  Result<Tensor> GetOutput(int index) const override;
  // Copies output `index` into `out` (any device).
  Status CopyOutputTo(int index, Tensor& out) const;

  // Where each node's outputs live (for tools): device of entry eid.
  DLDevice EntryDevice(uint32_t eid) const;
  const Graph& graph() const { return *graph_; }
  // Bytes of executor-owned storage per device (params used in place excluded).
  std::vector<std::pair<DLDevice, uint64_t>> StorageBytesPerDevice() const;

 private:
  struct OpCall;
  GraphExecutor() = default;
  Status PlanStorage();
  Status BindParams(const std::vector<NamedTensor>& params, bool allow_in_place);
  Status PrepareCalls();
  Status CheckInputValue(int index, const Tensor& value, const char* what) const;
  // Gives storage bound to memory the executor does not own (a shared param,
  // a zero-copy input) a buffer of its own before the executor writes it.
  Status DetachStorage(uint32_t sid);
  // Points every entry of a storage id (and their flattened aliases) at `data`.
  void RebindStorage(uint32_t sid, void* data);
  void RebindEntry(uint32_t eid, void* data);
  Status NodeError(size_t op_index, const Status& status) const;
  static Status KernelError();  // the failed kernel's message, or a note that it gave none

  std::shared_ptr<const Graph> graph_;
  std::shared_ptr<Module> lib_;
  Options options_;
  PluginRegistry* plugins_ = nullptr;
  std::vector<DLDevice> entry_devices_;
  std::vector<Tensor> storage_;          // per storage id (undefined when unused or borrowed)
  std::vector<uint64_t> storage_bytes_;  // per storage id: its largest entry
  std::vector<bool> storage_borrowed_;   // sid points at memory the executor must not write
  std::vector<std::vector<uint32_t>> storage_entries_;  // sid -> the eids that view it
  std::vector<Tensor> entries_;          // per eid, views of storage_ or bound memory
  std::vector<std::vector<DLTensor*>> entry_aliases_;  // flattened copies of an eid's DLTensor
  std::vector<OpCall> calls_;
  std::vector<hetrt_value_t> arg_values_;
  std::vector<int32_t> arg_codes_;
  std::vector<std::unique_ptr<DLTensor>> flat_tensors_;
  std::vector<std::unique_ptr<int64_t>> flat_shapes_;
  std::vector<std::pair<uint32_t, Tensor>> output_copies_;  // outputs that alias an input
};

}  // namespace hetrt
