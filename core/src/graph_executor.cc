#include "hetrt/graph_executor.h"

#include <chrono>
#include <cstring>

#include "hetrt/dtype.h"
#include "tvm_backend_abi.h"

namespace hetrt {

struct GraphExecutor::OpCall {
  enum class Kind : uint8_t { kKernel, kCopy };
  Kind kind;
  int32_t num_args;
  uint32_t args_begin;
  uint32_t node_id;
  hetrt_packed_cfunc_t fn;
  void* resource;
  uint32_t copy_src;  // eids, for copies
  uint32_t copy_dst;
};

GraphExecutor::~GraphExecutor() = default;

Result<std::unique_ptr<GraphExecutor>> GraphExecutor::Create(std::string_view graph_json,
                                                             std::shared_ptr<Module> lib,
                                                             Options options) {
  HETRT_ASSIGN_OR_RETURN(Graph graph, ParseGraphJson(graph_json, "graph"));
  return Create(std::make_shared<const Graph>(std::move(graph)), std::move(lib), std::move(options));
}

Result<std::unique_ptr<GraphExecutor>> GraphExecutor::Create(std::shared_ptr<const Graph> graph,
                                                             std::shared_ptr<Module> lib,
                                                             Options options) {
  if (options.devices.empty()) return InvalidArgument("an executor needs at least one device");
  std::unique_ptr<GraphExecutor> ex(new GraphExecutor());
  ex->graph_ = std::move(graph);
  ex->lib_ = std::move(lib);
  ex->plugins_ = options.plugins ? options.plugins : &PluginRegistry::Global();
  ex->options_ = std::move(options);
  HETRT_RETURN_IF_ERROR(ex->PlanStorage());
  if (ex->options_.params) HETRT_RETURN_IF_ERROR(ex->BindParams(*ex->options_.params, /*allow_in_place=*/true));
  HETRT_RETURN_IF_ERROR(ex->PrepareCalls());
  return ex;
}

Status GraphExecutor::PlanStorage() {
  const Graph& g = *graph_;
  const uint32_t n = g.num_entries();
  // Placement: device_index holds a device *type*; the entry goes to the first
  // listed device of that type.
  entry_devices_.resize(n);
  for (uint32_t e = 0; e < n; ++e) {
    if (g.device_types.empty()) {
      entry_devices_[e] = options_.devices[0];
      continue;
    }
    const int32_t type = g.device_types[e];
    bool found = false;
    for (const DLDevice& d : options_.devices) {
      if (d.device_type == type) {
        entry_devices_[e] = d;
        found = true;
        break;
      }
    }
    if (!found) {
      std::string listed;
      for (const DLDevice& d : options_.devices) listed += (listed.empty() ? "" : ", ") + DeviceToString(d);
      return InvalidArgument("the graph places entry " + std::to_string(e) + " on " +
                             DeviceTypeName(type) + " but the executor's devices are " + listed +
                             " (add --device " + DeviceTypeName(type) + ")");
    }
  }
  for (const DLDevice& d : options_.devices) {
    bool used = false;
    for (const DLDevice& e : entry_devices_) used |= e.device_type == d.device_type && e.device_id == d.device_id;
    if (used) HETRT_RETURN_IF_ERROR(plugins_->ForDevice(d).status());
  }
  // One buffer per storage id, sized by the largest entry that uses it.
  const uint32_t num_sids = g.num_storage();
  storage_bytes_.assign(num_sids, 0);
  storage_entries_.assign(num_sids, {});
  for (uint32_t e = 0; e < n; ++e) {
    storage_bytes_[g.storage_ids[e]] = std::max(storage_bytes_[g.storage_ids[e]], g.entry_bytes(e));
    storage_entries_[g.storage_ids[e]].push_back(e);
  }
  // Storage of params that can be used in place is never allocated.
  std::vector<bool> sid_skipped(num_sids, false);
  if (options_.params) {
    for (uint32_t nid : g.arg_nodes) {
      const uint32_t eid = g.entry_id(nid, 0);
      const uint32_t sid = g.storage_ids[eid];
      const NamedTensor* p = FindParam(*options_.params, g.nodes[nid].name);
      if (p && storage_entries_[sid].size() == 1 && entry_devices_[eid].device_type == kDLCPU &&
          p->tensor.device().device_type == kDLCPU && p->tensor.nbytes() == g.entry_bytes(eid) &&
          reinterpret_cast<uintptr_t>(p->tensor.data()) % kTensorAlignment == 0)
        sid_skipped[sid] = true;
    }
  }
  storage_.resize(num_sids);
  std::vector<DLDevice> sid_device(num_sids);
  for (uint32_t e = 0; e < n; ++e) sid_device[g.storage_ids[e]] = entry_devices_[e];
  for (uint32_t sid = 0; sid < num_sids; ++sid) {
    if (storage_entries_[sid].empty() || sid_skipped[sid]) continue;
    HETRT_ASSIGN_OR_RETURN(Plugin * plugin, plugins_->ForDevice(sid_device[sid]));
    auto t = Tensor::Empty({static_cast<int64_t>(storage_bytes_[sid])}, DLDataType{kDLUInt, 8, 1},
                           plugin->DeviceAllocator(sid_device[sid]));
    if (!t.ok()) return t.status().WithContext("storage " + std::to_string(sid) + " on " + DeviceToString(sid_device[sid]));
    storage_[sid] = std::move(t).value();
  }
  entries_.resize(n);
  storage_borrowed_.assign(num_sids, false);
  entry_aliases_.resize(n);
  for (uint32_t e = 0; e < n; ++e) {
    const Tensor& s = storage_[g.storage_ids[e]];
    if (!s.defined()) {
      entries_[e] = Tensor::Borrow(nullptr, entry_devices_[e], g.shapes[e], g.dtypes[e]);
      continue;
    }
    HETRT_ASSIGN_OR_RETURN(entries_[e], s.View(g.shapes[e], g.dtypes[e]));
  }
  return OkStatus();
}

Status GraphExecutor::BindParams(const std::vector<NamedTensor>& params, bool allow_in_place) {
  const Graph& g = *graph_;
  for (size_t i = 0; i < g.arg_nodes.size(); ++i) {
    const uint32_t nid = g.arg_nodes[i];
    const NamedTensor* p = FindParam(params, g.nodes[nid].name);
    if (p == nullptr) continue;
    const uint32_t eid = g.entry_id(nid, 0);
    if (p->tensor.nbytes() != g.entry_bytes(eid) || p->tensor.dtype() != g.dtypes[eid])
      return InvalidArgument("param '" + p->name + "' is " + ShapeToString(p->tensor.shape()) + " " +
                             DataTypeToString(p->tensor.dtype()) + " but the graph expects " +
                             ShapeToString(g.shapes[eid]) + " " + DataTypeToString(g.dtypes[eid]));
    if (allow_in_place && !storage_[g.storage_ids[eid]].defined()) {
      // Used in place: a view of the shared param with the graph's shape.
      entries_[eid] = Tensor::Borrow(p->tensor.data(), p->tensor.device(), g.shapes[eid], g.dtypes[eid]);
      storage_borrowed_[g.storage_ids[eid]] = true;
      continue;
    }
    HETRT_RETURN_IF_ERROR(SetInput(static_cast<int>(i), p->tensor));
  }
  return OkStatus();
}

Status GraphExecutor::PrepareCalls() {
  const Graph& g = *graph_;
  for (uint32_t nid = 0; nid < g.nodes.size(); ++nid) {
    const GraphNode& node = g.nodes[nid];
    if (node.kind != GraphNode::Kind::kOp || node.func_name == kNopFunction) continue;
    OpCall call{};
    call.node_id = nid;
    if (node.func_name == kCopyFunction) {
      call.kind = OpCall::Kind::kCopy;
      call.copy_src = g.entry_id(node.inputs[0]);
      call.copy_dst = g.entry_id(nid, 0);
      calls_.push_back(call);
      continue;
    }
    auto func = lib_->GetFunction(node.func_name);
    if (!func.ok()) return func.status().WithContext("node " + std::to_string(nid) + " ('" + node.name + "')");
    if (*func == nullptr)
      return NotFound("node " + std::to_string(nid) + " ('" + node.name + "'): function '" +
                      node.func_name + "' not found in module '" + lib_->type_key() + "' or its imports");
    call.kind = OpCall::Kind::kKernel;
    call.fn = (*func)->call;
    call.resource = (*func)->resource;
    call.args_begin = static_cast<uint32_t>(arg_values_.size());
    std::vector<uint32_t> eids;
    for (const GraphEntryRef& in : node.inputs) eids.push_back(g.entry_id(in));
    for (uint32_t k = 0; k < node.num_outputs; ++k) eids.push_back(g.entry_id(nid, k));
    for (uint32_t eid : eids) {
      DLTensor* arg = entries_[eid].dl();
      if (node.flatten_data) {
        // A 1-D copy of the entry's DLTensor; kept in sync when the entry is rebound.
        auto shape = std::make_unique<int64_t>(entries_[eid].num_elements());
        auto flat = std::make_unique<DLTensor>(*arg);
        flat->ndim = 1;
        flat->shape = shape.get();
        arg = flat.get();
        entry_aliases_[eid].push_back(arg);
        flat_shapes_.push_back(std::move(shape));
        flat_tensors_.push_back(std::move(flat));
      }
      arg_values_.push_back(hetrt_value_t{.v_handle = arg});
      arg_codes_.push_back(HETRT_TYPE_DLTENSOR);
    }
    call.num_args = static_cast<int32_t>(eids.size());
    calls_.push_back(call);
  }
  // Every value now points at a DLTensor that will not move: entries_ and the
  // flattened copies are never resized after this point.
  return OkStatus();
}

const std::string& GraphExecutor::InputName(int index) const {
  return graph_->nodes[graph_->arg_nodes[static_cast<size_t>(index)]].name;
}

std::string GraphExecutor::OutputName(int index) const {
  const GraphEntryRef& h = graph_->heads[static_cast<size_t>(index)];
  return graph_->nodes[h.node_id].name + ":" + std::to_string(h.index);
}

std::vector<int> GraphExecutor::UnboundInputs() const {
  std::vector<int> unbound;
  for (int i = 0; i < NumInputs(); ++i)
    if (!options_.params || FindParam(*options_.params, InputName(i)) == nullptr) unbound.push_back(i);
  return unbound;
}

const Tensor& GraphExecutor::InputTensor(int index) const {
  return entries_[graph_->entry_id(graph_->arg_nodes[static_cast<size_t>(index)], 0)];
}

const Tensor& GraphExecutor::OutputTensor(int index) const {
  return entries_[graph_->entry_id(graph_->heads[static_cast<size_t>(index)])];
}

DLDevice GraphExecutor::EntryDevice(uint32_t eid) const { return entry_devices_[eid]; }

Status GraphExecutor::CheckInputValue(int index, const Tensor& value, const char* what) const {
  if (index < 0 || index >= NumInputs())
    return OutOfRange(std::string(what) + ": input index " + std::to_string(index) + " out of range (" +
                      std::to_string(NumInputs()) + " inputs)");
  const uint32_t eid = graph_->entry_id(graph_->arg_nodes[static_cast<size_t>(index)], 0);
  if (value.dtype() != graph_->dtypes[eid] || value.nbytes() != graph_->entry_bytes(eid))
    return InvalidArgument(std::string(what) + " '" + InputName(index) + "': got " +
                           ShapeToString(value.shape()) + " " + DataTypeToString(value.dtype()) +
                           ", the graph expects " + ShapeToString(graph_->shapes[eid]) + " " +
                           DataTypeToString(graph_->dtypes[eid]));
  return OkStatus();
}

Status GraphExecutor::SetInput(int index, const Tensor& value) {
  HETRT_RETURN_IF_ERROR(CheckInputValue(index, value, "set_input"));
  const uint32_t eid = graph_->entry_id(graph_->arg_nodes[static_cast<size_t>(index)], 0);
  HETRT_RETURN_IF_ERROR(DetachStorage(graph_->storage_ids[eid]));
  return plugins_->CopyTensor(value, entries_[eid]);
}

Status GraphExecutor::DetachStorage(uint32_t sid) {
  if (!storage_borrowed_[sid]) return OkStatus();
  // Bound to memory someone else owns: take a private buffer, sized for every
  // entry of the storage id, rather than write into it.
  const DLDevice device = entry_devices_[storage_entries_[sid][0]];
  HETRT_ASSIGN_OR_RETURN(Plugin * plugin, plugins_->ForDevice(device));
  HETRT_ASSIGN_OR_RETURN(storage_[sid], Tensor::Empty({static_cast<int64_t>(storage_bytes_[sid])},
                                                      DLDataType{kDLUInt, 8, 1}, plugin->DeviceAllocator(device)));
  RebindStorage(sid, storage_[sid].data());
  storage_borrowed_[sid] = false;
  return OkStatus();
}

void GraphExecutor::RebindStorage(uint32_t sid, void* data) {
  for (uint32_t eid : storage_entries_[sid]) RebindEntry(eid, data);
}

void GraphExecutor::RebindEntry(uint32_t eid, void* data) {
  entries_[eid].dl()->data = data;
  for (DLTensor* alias : entry_aliases_[eid]) alias->data = data;
}

Status GraphExecutor::SetInputZeroCopy(int index, const Tensor& value) {
  HETRT_RETURN_IF_ERROR(CheckInputValue(index, value, "set_input_zero_copy"));
  const uint32_t eid = graph_->entry_id(graph_->arg_nodes[static_cast<size_t>(index)], 0);
  const DLDevice want = entry_devices_[eid];
  if (value.device().device_type != want.device_type || value.device().device_id != want.device_id)
    return InvalidArgument("set_input_zero_copy '" + InputName(index) + "': the tensor is on " +
                           DeviceToString(value.device()) + " but the input lives on " + DeviceToString(want));
  if (reinterpret_cast<uintptr_t>(value.data()) % kTensorAlignment != 0)
    return InvalidArgument("set_input_zero_copy '" + InputName(index) + "': data must be 64-byte aligned");
  // Every entry viewing the input's storage (e.g. __nop reshapes of it) follows.
  RebindStorage(graph_->storage_ids[eid], value.data());
  storage_borrowed_[graph_->storage_ids[eid]] = true;
  return OkStatus();
}

Status GraphExecutor::SetOutputZeroCopy(int index, const Tensor& value) {
  if (index < 0 || index >= NumOutputs())
    return OutOfRange("set_output_zero_copy: output index " + std::to_string(index) + " out of range");
  const uint32_t eid = graph_->entry_id(graph_->heads[static_cast<size_t>(index)]);
  if (value.dtype() != graph_->dtypes[eid] || value.nbytes() != graph_->entry_bytes(eid))
    return InvalidArgument("set_output_zero_copy " + OutputName(index) + ": got " +
                           ShapeToString(value.shape()) + " " + DataTypeToString(value.dtype()) +
                           ", the graph produces " + ShapeToString(graph_->shapes[eid]) + " " +
                           DataTypeToString(graph_->dtypes[eid]));
  const DLDevice want = entry_devices_[eid];
  if (value.device().device_type != want.device_type || value.device().device_id != want.device_id)
    return InvalidArgument("set_output_zero_copy " + OutputName(index) + ": the tensor is on " +
                           DeviceToString(value.device()) + " but the output lives on " + DeviceToString(want));
  const GraphNode& producer = graph_->nodes[graph_->heads[static_cast<size_t>(index)].node_id];
  if (producer.kind == GraphNode::Kind::kInput || producer.func_name == kNopFunction) {
    // The output is (an alias of) an input: nothing writes it, so copy at the end of Run.
    for (auto& [bound_eid, dst] : output_copies_)
      if (bound_eid == eid) {
        dst = value;
        return OkStatus();
      }
    output_copies_.emplace_back(eid, value);
    return OkStatus();
  }
  if (reinterpret_cast<uintptr_t>(value.data()) % kTensorAlignment != 0)
    return InvalidArgument("set_output_zero_copy " + OutputName(index) + ": data must be 64-byte aligned");
  RebindEntry(eid, value.data());
  return OkStatus();
}

Status GraphExecutor::LoadParams(std::span<const uint8_t> bytes) {
  HETRT_ASSIGN_OR_RETURN(auto params, ReadParamDict(bytes, "params"));
  return BindParams(params, /*allow_in_place=*/false);
}

Status GraphExecutor::KernelError() {
  std::string message = LastErrorMessage();
  if (message.empty()) message = "the kernel failed without reporting why";
  return Internal(message);
}

Status GraphExecutor::NodeError(size_t op_index, const Status& status) const {
  const uint32_t nid = calls_[op_index].node_id;
  const GraphNode& node = graph_->nodes[nid];
  return status.WithContext("node " + std::to_string(nid) + " ('" + node.name + "', " + node.func_name + ")");
}

Status GraphExecutor::Run() {
  ClearLastError();  // a kernel failing without a message must not show an old one
  hetrt_value_t ret;
  int32_t ret_code;
  const size_t n = calls_.size();
  for (size_t i = 0; i < n; ++i) {
    const OpCall& c = calls_[i];
    if (c.kind == OpCall::Kind::kKernel) [[likely]] {
      if (c.fn(&arg_values_[c.args_begin], &arg_codes_[c.args_begin], c.num_args, &ret, &ret_code,
               c.resource) != 0) [[unlikely]]
        return NodeError(i, KernelError());
    } else {
      Status s = plugins_->CopyTensor(entries_[c.copy_src], entries_[c.copy_dst]);
      if (!s.ok()) return NodeError(i, s);
    }
  }
  for (auto& [eid, dst] : output_copies_) HETRT_RETURN_IF_ERROR(plugins_->CopyTensor(entries_[eid], dst));
  return OkStatus();
}

Status GraphExecutor::RunProfiled(std::vector<NodeTime>* times) {
  struct Pending {
    Plugin* plugin = nullptr;
    hetrt_event_t* start = nullptr;
    hetrt_event_t* end = nullptr;
  };
  times->clear();
  std::vector<Pending> pending(calls_.size());
  hetrt_value_t ret;
  int32_t ret_code;
  Status status;
  for (size_t i = 0; i < calls_.size() && status.ok(); ++i) {
    const OpCall& c = calls_[i];
    const DLDevice device = entry_devices_[graph_->entry_id(c.node_id, 0)];
    const hetrt_device_api_t* dev = nullptr;
    if (device.device_type != kDLCPU) {
      auto plugin = plugins_->ForDeviceType(device.device_type);
      if (plugin.ok() && (dev = (*plugin)->device_api()) && dev->event_create && dev->event_record &&
          dev->event_elapsed_ms) {
        Pending& p = pending[i];
        p.plugin = *plugin;
        if (!p.plugin->Consume(dev->event_create(device, &p.start)).ok() ||
            !p.plugin->Consume(dev->event_create(device, &p.end)).ok() ||
            !p.plugin->Consume(dev->event_record(device, p.start, nullptr)).ok()) {
          if (p.start) (void)p.plugin->Consume(dev->event_destroy(device, p.start));
          if (p.end) (void)p.plugin->Consume(dev->event_destroy(device, p.end));
          p.plugin = nullptr;  // time this node with the wall clock instead
        }
      }
    }
    const auto t0 = std::chrono::steady_clock::now();
    if (c.kind == OpCall::Kind::kKernel) {
      if (c.fn(&arg_values_[c.args_begin], &arg_codes_[c.args_begin], c.num_args, &ret, &ret_code, c.resource) != 0)
        status = NodeError(i, KernelError());
    } else {
      Status s = plugins_->CopyTensor(entries_[c.copy_src], entries_[c.copy_dst]);
      if (!s.ok()) status = NodeError(i, s);
    }
    const auto t1 = std::chrono::steady_clock::now();
    double ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
    if (pending[i].plugin != nullptr) {
      Plugin* p = pending[i].plugin;
      const hetrt_device_api_t* d = p->device_api();
      double device_ms = 0;
      if (p->Consume(d->event_record(device, pending[i].end, nullptr)).ok() &&
          p->Consume(d->event_elapsed_ms(device, pending[i].start, pending[i].end, &device_ms)).ok())
        ms = device_ms;
      (void)p->Consume(d->event_destroy(device, pending[i].start));
      (void)p->Consume(d->event_destroy(device, pending[i].end));
    }
    times->push_back({c.node_id, device, ms});
  }
  if (status.ok())
    for (auto& [eid, dst] : output_copies_) HETRT_RETURN_IF_ERROR(plugins_->CopyTensor(entries_[eid], dst));
  return status;
}

Result<Tensor> GraphExecutor::GetOutput(int index) const {
  if (index < 0 || index >= NumOutputs())
    return OutOfRange("get_output: index " + std::to_string(index) + " out of range (" +
                      std::to_string(NumOutputs()) + " outputs)");
  return plugins_->ToHost(OutputTensor(index));
}

Status GraphExecutor::CopyOutputTo(int index, Tensor& out) const {
  if (index < 0 || index >= NumOutputs()) return OutOfRange("output index out of range");
  return plugins_->CopyTensor(OutputTensor(index), out);
}

Status GraphExecutor::Synchronize() {
  for (const DLDevice& d : options_.devices) {
    if (d.device_type == kDLCPU) continue;
    auto plugin = plugins_->ForDeviceType(d.device_type);
    if (!plugin.ok()) continue;
    const hetrt_device_api_t* dev = (*plugin)->device_api();
    if (dev && dev->synchronize) HETRT_RETURN_IF_ERROR((*plugin)->Consume(dev->synchronize(d, nullptr)));
  }
  return OkStatus();
}

std::vector<std::pair<DLDevice, uint64_t>> GraphExecutor::StorageBytesPerDevice() const {
  std::vector<std::pair<DLDevice, uint64_t>> result;
  for (const Tensor& s : storage_) {
    if (!s.defined()) continue;
    bool merged = false;
    for (auto& [d, bytes] : result)
      if (d.device_type == s.device().device_type && d.device_id == s.device().device_id) {
        bytes += s.capacity_bytes();
        merged = true;
      }
    if (!merged) result.emplace_back(s.device(), s.capacity_bytes());
  }
  return result;
}

}  // namespace hetrt
