// The graph executor's face: create (plan, storage, bindings, call frames),
// inputs, outputs and parameters. The run loop is graph_runner.cc, the lanes
// and steps it issues graph_lanes.cc, profiled runs graph_profiler.cc.
#include "exec/graph_executor_impl.h"

#include <cstring>

#include "hetrt/base/dtype.h"
#include "hetrt/base/log.h"

namespace hetrt {
namespace {

// The plan's questions, answered by the executor's plugins.
PlanDeviceFacts FactsOf(const PluginRegistry& plugins) {
  PlanDeviceFacts facts;
  facts.shares_host_memory = [&plugins](DLDevice d) {
    Plugin* p = plugins.PluginOfDeviceType(d.device_type);
    return p != nullptr && p->SharesHostMemory(d);
  };
  facts.has_copy_streams = [&plugins](DLDevice d) {
    Plugin* p = plugins.PluginOfDeviceType(d.device_type);
    return p != nullptr && Device(p, d).HasCopyStreams();
  };
  facts.plugin_of = [&plugins](DLDevice d) {
    const auto& all = plugins.plugins();
    Plugin* p = plugins.PluginOfDeviceType(d.device_type);
    for (size_t i = 0; p != nullptr && i < all.size(); ++i)
      if (all[i].get() == p) return static_cast<int>(i);
    return -1;
  };
  facts.copy_provider = [&plugins](DLDevice src, DLDevice dst) -> std::optional<DLDevice> {
    Plugin* p = plugins.CopyProvider(src, dst);
    if (p == nullptr) return std::nullopt;
    // The side the plugin serves (the CPU plugin between two host buffers).
    return p->ServesDeviceType(src.device_type) && src.device_type != kDLCPU ? src
           : p->ServesDeviceType(dst.device_type)                            ? dst
                                                                             : src;
  };
  return facts;
}

}  // namespace

GraphExecutor::Impl::~Impl() {
  // Device work of the last run may have failed after Run returned; nobody is
  // left to return it to, so it is logged rather than dropped.
  if (Status s = FinishPendingRun(); !s.ok())
    Log(LogLevel::kError, "graph executor", "destroyed with a failed run pending: " + s.message());
}

Result<std::unique_ptr<GraphExecutor>> GraphExecutor::Create(std::string_view graph_json, std::shared_ptr<Module> lib,
                                                             Options options) {
  HETRT_ASSIGN_OR_RETURN(Graph graph, ParseGraphJson(graph_json, "graph"));
  return Create(std::make_shared<const Graph>(std::move(graph)), std::move(lib), std::move(options));
}

Result<std::unique_ptr<GraphExecutor>> GraphExecutor::Create(std::shared_ptr<const Graph> graph,
                                                             std::shared_ptr<Module> lib, Options options) {
  auto impl = std::make_unique<Impl>();
  HETRT_RETURN_IF_ERROR(impl->Init(std::move(graph), std::move(lib), std::move(options)));
  return std::unique_ptr<GraphExecutor>(new GraphExecutor(std::move(impl)));
}

GraphExecutor::GraphExecutor(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
GraphExecutor::~GraphExecutor() = default;

// The face: every call goes to the Impl (the run loop's forwarders are in
// graph_runner.cc and graph_profiler.cc, beside the code they call).
int GraphExecutor::NumInputs() const { return impl_->NumInputs(); }
int GraphExecutor::NumOutputs() const { return impl_->NumOutputs(); }
const std::string& GraphExecutor::InputName(int index) const { return impl_->InputName(index); }
std::string GraphExecutor::OutputName(int index) const { return impl_->OutputName(index); }
std::vector<int> GraphExecutor::UnboundInputs() const { return impl_->UnboundInputs(); }
const Tensor& GraphExecutor::InputTensor(int index) const { return impl_->InputTensor(index); }
const Tensor& GraphExecutor::OutputTensor(int index) const { return impl_->OutputTensor(index); }
Status GraphExecutor::SetInput(int index, const Tensor& value) { return impl_->SetInput(index, value); }
Status GraphExecutor::SetInputZeroCopy(int index, const Tensor& value) {
  return impl_->SetInputZeroCopy(index, value);
}
bool GraphExecutor::InputBindsInPlace(int index) const { return impl_->InputBindsInPlace(index); }
bool GraphExecutor::InputTakesInPlace(int index, const Tensor& value) const {
  return impl_->InputTakesInPlace(index, value);
}
bool GraphExecutor::OutputBindsInPlace(int index) const { return impl_->OutputBindsInPlace(index); }
Status GraphExecutor::SetOutputZeroCopy(int index, const Tensor& value) {
  return impl_->SetOutputZeroCopy(index, value);
}
Status GraphExecutor::LoadParams(std::span<const uint8_t> bytes) { return impl_->LoadParams(bytes); }
Result<Tensor> GraphExecutor::GetOutput(int index) const { return impl_->GetOutput(index); }
Status GraphExecutor::CopyOutputTo(int index, Tensor& out) const { return impl_->CopyOutputTo(index, out); }
DLDevice GraphExecutor::EntryDevice(uint32_t eid) const { return impl_->plan_.entry_devices[eid]; }
const Graph& GraphExecutor::graph() const { return *impl_->graph_; }
std::vector<std::pair<DLDevice, uint64_t>> GraphExecutor::StorageBytesPerDevice() const {
  return impl_->StorageBytesPerDevice();
}

Status GraphExecutor::Impl::Init(std::shared_ptr<const Graph> graph, std::shared_ptr<Module> lib, Options options) {
  graph_ = std::move(graph);
  lib_ = std::move(lib);
  plugins_ = options.plugins ? options.plugins : &PluginRegistry::Global();
  options_ = std::move(options);
  // Every device the graph uses must exist before anything is planned on it.
  HETRT_ASSIGN_OR_RETURN(std::vector<DLDevice> placed, PlaceEntries(*graph_, options_.devices));
  for (const DLDevice& d : options_.devices)
    for (const DLDevice& e : placed)
      if (SameDevice(e, d)) {
        HETRT_RETURN_IF_ERROR(plugins_->ForDevice(d).status());
        break;
      }
  GraphPlanOptions plan_options{options_.devices, options_.sequential, options_.staged_copies};
  HETRT_ASSIGN_OR_RETURN(plan_, PlanGraph(*graph_, plan_options, FactsOf(*plugins_)));
  HETRT_RETURN_IF_ERROR(AllocateStorage());
  if (options_.params) HETRT_RETURN_IF_ERROR(BindParams(*options_.params, /*allow_in_place=*/true));
  HETRT_RETURN_IF_ERROR(PrepareCalls());
  PlanInPlaceInputs();
  return BuildSteps();
}

Status GraphExecutor::Impl::AllocateStorage() {
  const Graph& g = *graph_;
  const uint32_t num_sids = static_cast<uint32_t>(plan_.storage.size());
  // Storage of params that can be used in place is never allocated.
  std::vector<bool> sid_skipped(num_sids, false);
  if (options_.params) {
    for (uint32_t nid : g.arg_nodes) {
      const uint32_t eid = g.entry_id(nid, 0);
      const uint32_t sid = g.storage_ids[eid];
      const NamedTensor* p = FindParam(*options_.params, g.nodes[nid].name);
      if (p && plan_.storage[sid].entries.size() == 1 && plan_.entry_devices[eid].device_type == kDLCPU &&
          p->tensor.device().device_type == kDLCPU && p->tensor.nbytes() == g.entry_bytes(eid) &&
          reinterpret_cast<uintptr_t>(p->tensor.data()) % kTensorAlignment == 0)
        sid_skipped[sid] = true;
    }
  }
  storage_.resize(num_sids);
  storage_host_.assign(num_sids, nullptr);
  for (uint32_t sid = 0; sid < num_sids; ++sid) {
    const StoragePlan& plan = plan_.storage[sid];
    if (plan.entries.empty() || sid_skipped[sid]) continue;
    HETRT_ASSIGN_OR_RETURN(Device device, plugins_->DeviceFor(plan.device));
    const std::vector<int64_t> shape{static_cast<int64_t>(plan.bytes)};
    Result<Tensor> t = Status(StatusCode::kInternal, "not allocated");
    // Host-visible where the device shares host memory, so copies to and from
    // the host become memcpys; device memory when the plugin refuses.
    if (plan.host_visible) {
      Allocator& allocator = device.allocator(HETRT_MEMORY_HOST_VISIBLE);
      t = Tensor::Empty(shape, DLDataType{kDLUInt, 8, 1}, allocator);
      if (t.ok()) storage_host_[sid] = allocator.HostPointer(t->data());
    }
    if (!t.ok()) t = Tensor::Empty(shape, DLDataType{kDLUInt, 8, 1}, device.allocator());
    if (!t.ok()) return t.status().WithContext("storage " + std::to_string(sid) + " on " + DeviceToString(plan.device));
    storage_[sid] = std::move(t).value();
  }
  own_storage_host_ = storage_host_;
  const uint32_t n = g.num_entries();
  entries_.resize(n);
  storage_borrowed_.assign(num_sids, false);
  entry_aliases_.resize(n);
  for (uint32_t e = 0; e < n; ++e) {
    const Tensor& s = storage_[g.storage_ids[e]];
    if (!s.defined()) {
      entries_[e] = Tensor::Borrow(nullptr, plan_.entry_devices[e], g.shapes[e], g.dtypes[e]);
      continue;
    }
    HETRT_ASSIGN_OR_RETURN(entries_[e], s.View(g.shapes[e], g.dtypes[e]));
  }
  return OkStatus();
}

Status GraphExecutor::Impl::BindParams(const std::vector<NamedTensor>& params, bool allow_in_place) {
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

Status GraphExecutor::Impl::PrepareCalls() {
  const Graph& g = *graph_;
  steps_.resize(plan_.steps.size());
  for (size_t i = 0; i < plan_.steps.size(); ++i) {
    if (plan_.steps[i].kind != PlannedStep::Kind::kKernel) continue;
    const uint32_t nid = plan_.steps[i].node_id;
    const GraphNode& node = g.nodes[nid];
    auto func = lib_->GetFunction(node.func_name);
    if (!func.ok()) return func.status().WithContext("node " + std::to_string(nid) + " ('" + node.name + "')");
    if (*func == nullptr)
      return NotFound("node " + std::to_string(nid) + " ('" + node.name + "'): function '" + node.func_name +
                      "' not found in module '" + lib_->type_key() + "' or its imports");
    OpCall& call = steps_[i].call;
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
  }
  // Every value now points at a DLTensor that will not move: entries_ and the
  // flattened copies are never resized after this point.
  return OkStatus();
}

const std::string& GraphExecutor::Impl::InputName(int index) const {
  return graph_->nodes[graph_->arg_nodes[static_cast<size_t>(index)]].name;
}

std::string GraphExecutor::Impl::OutputName(int index) const {
  const GraphEntryRef& h = graph_->heads[static_cast<size_t>(index)];
  return graph_->nodes[h.node_id].name + ":" + std::to_string(h.index);
}

std::vector<int> GraphExecutor::Impl::UnboundInputs() const {
  std::vector<int> unbound;
  for (int i = 0; i < NumInputs(); ++i)
    if (!options_.params || FindParam(*options_.params, InputName(i)) == nullptr) unbound.push_back(i);
  return unbound;
}

const Tensor& GraphExecutor::Impl::InputTensor(int index) const {
  return entries_[graph_->entry_id(graph_->arg_nodes[static_cast<size_t>(index)], 0)];
}

const Tensor& GraphExecutor::Impl::OutputTensor(int index) const {
  return entries_[graph_->entry_id(graph_->heads[static_cast<size_t>(index)])];
}

Status GraphExecutor::Impl::CheckInputValue(int index, const Tensor& value, const char* what) const {
  if (index < 0 || index >= NumInputs())
    return OutOfRange(std::string(what) + ": input index " + std::to_string(index) + " out of range (" +
                      std::to_string(NumInputs()) + " inputs)");
  const uint32_t eid = graph_->entry_id(graph_->arg_nodes[static_cast<size_t>(index)], 0);
  if (value.dtype() != graph_->dtypes[eid] || value.nbytes() != graph_->entry_bytes(eid))
    return InvalidArgument(std::string(what) + " '" + InputName(index) + "': got " + ShapeToString(value.shape()) +
                           " " + DataTypeToString(value.dtype()) + ", the graph expects " +
                           ShapeToString(graph_->shapes[eid]) + " " + DataTypeToString(graph_->dtypes[eid]));
  return OkStatus();
}

Status GraphExecutor::Impl::SetInput(int index, const Tensor& value) {
  HETRT_RETURN_IF_ERROR(CheckInputValue(index, value, "set_input"));
  HETRT_RETURN_IF_ERROR(FinishPendingRun());
  const uint32_t eid = graph_->entry_id(graph_->arg_nodes[static_cast<size_t>(index)], 0);
  const uint32_t sid = graph_->storage_ids[eid];
  HETRT_RETURN_IF_ERROR(DetachStorage(sid));
  if (storage_host_[sid] != nullptr && value.device().device_type == kDLCPU) {
    std::memcpy(storage_host_[sid], static_cast<const uint8_t*>(value.data()) + value.dl()->byte_offset,
                value.nbytes());
    return OkStatus();
  }
  return plugins_->CopyTensor(value, entries_[eid]);
}

Status GraphExecutor::Impl::DetachStorage(uint32_t sid) {
  if (!storage_borrowed_[sid]) return OkStatus();
  if (storage_[sid].defined()) {  // the executor's own buffer, kept while caller memory stood in
    RebindStorage(sid, storage_[sid].data());
    storage_host_[sid] = own_storage_host_[sid];
    storage_borrowed_[sid] = false;
    return OkStatus();
  }
  // Bound to memory someone else owns: take a private buffer, sized for every
  // entry of the storage id, rather than write into it.
  const StoragePlan& plan = plan_.storage[sid];
  HETRT_ASSIGN_OR_RETURN(Device device, plugins_->DeviceFor(plan.device));
  HETRT_ASSIGN_OR_RETURN(
      storage_[sid], Tensor::Empty({static_cast<int64_t>(plan.bytes)}, DLDataType{kDLUInt, 8, 1}, device.allocator()));
  RebindStorage(sid, storage_[sid].data());
  storage_host_[sid] = nullptr;  // device memory: copies go through the plugin
  own_storage_host_[sid] = nullptr;
  storage_borrowed_[sid] = false;
  return OkStatus();
}

void GraphExecutor::Impl::RebindStorage(uint32_t sid, void* data) {
  for (uint32_t eid : plan_.storage[sid].entries) RebindEntry(eid, data);
}

void GraphExecutor::Impl::RebindEntry(uint32_t eid, void* data) {
  entries_[eid].dl()->data = data;
  for (DLTensor* alias : entry_aliases_[eid]) alias->data = data;
}

Status GraphExecutor::Impl::SetInputZeroCopy(int index, const Tensor& value) {
  HETRT_RETURN_IF_ERROR(CheckInputValue(index, value, "set_input_zero_copy"));
  const uint32_t eid = graph_->entry_id(graph_->arg_nodes[static_cast<size_t>(index)], 0);
  const DLDevice want = plan_.entry_devices[eid];
  if (value.device().device_type != want.device_type || value.device().device_id != want.device_id)
    return InvalidArgument("set_input_zero_copy '" + InputName(index) + "': the tensor is on " +
                           DeviceToString(value.device()) + " but the input lives on " + DeviceToString(want));
  if (reinterpret_cast<uintptr_t>(value.data()) % kTensorAlignment != 0)
    return InvalidArgument("set_input_zero_copy '" + InputName(index) + "': data must be 64-byte aligned");
  const uint32_t sid = graph_->storage_ids[eid];
  // Entries planned into the same storage follow the input into caller memory:
  // one larger than the input would write past its end.
  if (plan_.storage[sid].bytes > value.nbytes())
    return InvalidArgument("set_input_zero_copy '" + InputName(index) + "': the graph plans a tensor of " +
                           std::to_string(plan_.storage[sid].bytes) +
                           " bytes into this input's storage (the input has " + std::to_string(value.nbytes()) +
                           "); use set_input");
  HETRT_RETURN_IF_ERROR(FinishPendingRun());
  // Every entry viewing the input's storage (e.g. __nop reshapes of it) follows.
  RebindStorage(sid, value.data());
  storage_borrowed_[sid] = true;
  storage_host_[sid] = nullptr;  // caller memory: copies go through the plugin
  return OkStatus();
}

// An input binds in place when only it and no-op views of it live in its
// storage: a kernel's output there would be written into the caller's memory
// (or past its end, when larger).
void GraphExecutor::Impl::PlanInPlaceInputs() {
  const Graph& g = *graph_;
  std::vector<bool> written(plan_.storage.size(), false);
  for (uint32_t nid = 0; nid < g.nodes.size(); ++nid) {
    const GraphNode& node = g.nodes[nid];
    if (node.kind != GraphNode::Kind::kOp || node.func_name == kNopFunction) continue;
    for (uint32_t k = 0; k < node.num_outputs; ++k) written[g.storage_ids[g.entry_id(nid, k)]] = true;
  }
  inputs_bind_in_place_.clear();
  for (uint32_t nid : g.arg_nodes) {
    const uint32_t eid = g.entry_id(nid, 0);
    const uint32_t sid = g.storage_ids[eid];
    inputs_bind_in_place_.push_back(!written[sid] && plan_.storage[sid].bytes == g.entry_bytes(eid));
  }
}

bool GraphExecutor::Impl::InputBindsInPlace(int index) const {
  return index >= 0 && index < NumInputs() && inputs_bind_in_place_[static_cast<size_t>(index)];
}

bool GraphExecutor::Impl::InputTakesInPlace(int index, const Tensor& value) const {
  if (!InputBindsInPlace(index)) return false;
  const DLDevice want = InputTensor(index).device();
  return SameDevice(value.device(), want) && value.dl()->byte_offset == 0 &&
         reinterpret_cast<uintptr_t>(value.data()) % kTensorAlignment == 0;
}

bool GraphExecutor::Impl::OutputBindsInPlace(int index) const {
  if (index < 0 || index >= NumOutputs()) return false;
  const Graph& g = *graph_;
  const uint32_t eid = g.entry_id(g.heads[static_cast<size_t>(index)]);
  // Two outputs that are one tensor would be written to the last one bound.
  for (size_t h = 0; h < g.heads.size(); ++h)
    if (static_cast<int>(h) != index && g.entry_id(g.heads[h]) == eid) return false;
  return true;
}

Status GraphExecutor::Impl::SetOutputZeroCopy(int index, const Tensor& value) {
  if (index < 0 || index >= NumOutputs())
    return OutOfRange("set_output_zero_copy: output index " + std::to_string(index) + " out of range");
  const uint32_t eid = graph_->entry_id(graph_->heads[static_cast<size_t>(index)]);
  if (!OutputBindsInPlace(index))
    return InvalidArgument("set_output_zero_copy " + OutputName(index) +
                           ": another output of the graph is the same tensor, and only one memory can receive it; "
                           "read this one with get_output");
  if (value.dtype() != graph_->dtypes[eid] || value.nbytes() != graph_->entry_bytes(eid))
    return InvalidArgument("set_output_zero_copy " + OutputName(index) + ": got " + ShapeToString(value.shape()) + " " +
                           DataTypeToString(value.dtype()) + ", the graph produces " +
                           ShapeToString(graph_->shapes[eid]) + " " + DataTypeToString(graph_->dtypes[eid]));
  const DLDevice want = plan_.entry_devices[eid];
  if (value.device().device_type != want.device_type || value.device().device_id != want.device_id)
    return InvalidArgument("set_output_zero_copy " + OutputName(index) + ": the tensor is on " +
                           DeviceToString(value.device()) + " but the output lives on " + DeviceToString(want));
  HETRT_RETURN_IF_ERROR(FinishPendingRun());
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
  storage_host_[graph_->storage_ids[eid]] = nullptr;  // one entry left the storage: copies go through the plugin
  return OkStatus();
}

Status GraphExecutor::Impl::LoadParams(std::span<const uint8_t> bytes) {
  HETRT_RETURN_IF_ERROR(FinishPendingRun());
  HETRT_ASSIGN_OR_RETURN(auto params, ReadParamDict(bytes, "params"));
  return BindParams(params, /*allow_in_place=*/false);
}

Result<Tensor> GraphExecutor::Impl::GetOutput(int index) const {
  if (index < 0 || index >= NumOutputs())
    return OutOfRange("get_output: index " + std::to_string(index) + " out of range (" + std::to_string(NumOutputs()) +
                      " outputs)");
  HETRT_RETURN_IF_ERROR(FinishPendingRun());
  const Tensor& out = OutputTensor(index);
  const uint32_t sid = graph_->storage_ids[graph_->entry_id(graph_->heads[static_cast<size_t>(index)])];
  if (out.device().device_type != kDLCPU && storage_host_[sid] != nullptr) {
    HETRT_ASSIGN_OR_RETURN(Tensor host, Tensor::EmptyHost(out.shape(), out.dtype()));
    std::memcpy(host.data(), storage_host_[sid], host.nbytes());
    return host;
  }
  return plugins_->ToHost(out);
}

Status GraphExecutor::Impl::CopyOutputTo(int index, Tensor& out) const {
  if (index < 0 || index >= NumOutputs()) return OutOfRange("output index out of range");
  HETRT_RETURN_IF_ERROR(FinishPendingRun());
  return plugins_->CopyTensor(OutputTensor(index), out);
}

std::vector<std::pair<DLDevice, uint64_t>> GraphExecutor::Impl::StorageBytesPerDevice() const {
  std::vector<std::pair<DLDevice, uint64_t>> result;
  for (const Tensor& s : storage_) {
    if (!s.defined()) continue;
    bool merged = false;
    for (auto& [d, bytes] : result)
      if (SameDevice(d, s.device())) {
        bytes += s.capacity_bytes();
        merged = true;
      }
    if (!merged) result.emplace_back(s.device(), s.capacity_bytes());
  }
  return result;
}

}  // namespace hetrt
