#include "hetrt/graph_executor.h"

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <mutex>

#include "hetrt/dtype.h"
#include "hetrt/schedule_plan.h"
#include "tvm_abi/tvm_backend_abi.h"

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

// A host thread (lane 0) or one device stream the executor created.
struct GraphExecutor::Lane {
  Plugin* plugin = nullptr;  // NULL for the host lane
  DLDevice device{kDLCPU, 0};
  hetrt_stream_t* stream = nullptr;
  bool copy = false;  // a copy stream
  std::string name;
};

// One call_ as the run loop issues it: what to execute, on which lane, which
// events to wait for first and whether to record one after.
struct GraphExecutor::Step {
  enum class Kind : uint8_t {
    kKernel,      // a packed function (device kernels enqueue on the lane's stream)
    kHostCopy,    // memcpy between host addresses (host memory or host-visible device memory)
    kPluginCopy,  // a plugin's copy() on the lane's stream
    kStagedCopy,  // two plugins: src -> pinned staging -> dst, blocking
  };
  Kind kind = Kind::kKernel;
  uint32_t call = 0;
  uint32_t lane = 0;
  hetrt_event_t* event = nullptr;  // recorded after the step when another lane waits for it
  std::vector<uint32_t> host_waits, stream_waits, deps;  // step indices
  // Copies.
  DLTensor* src = nullptr;
  DLTensor* dst = nullptr;
  uint32_t src_sid = 0, dst_sid = 0;
  uint64_t nbytes = 0;
  int32_t sync_lane = -1;  // sequential mode: finish this lane's work first
  Plugin* copier = nullptr;
  hetrt_copy_args_t copy_args{};
  Plugin* copier2 = nullptr;  // kStagedCopy: the destination side
  hetrt_copy_args_t copy_args2{};
  Tensor staging;
  // Timing events of profiled runs (created on first use).
  hetrt_event_t* timing_start = nullptr;
  hetrt_event_t* timing_end = nullptr;
};

namespace {

uint64_t HostNowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

bool SameDevice(DLDevice a, DLDevice b) { return a.device_type == b.device_type && a.device_id == b.device_id; }

void DestroyEvent(Plugin* plugin, DLDevice device, hetrt_event_t*& event) {
  if (event == nullptr || plugin == nullptr) return;
  auto args = AbiArgs<hetrt_event_args_t>();
  args.self = plugin->instance();
  args.device = device;
  args.event = event;
  (void)plugin->Consume(plugin->device_api()->event_destroy(&args));
  event = nullptr;
}

Result<hetrt_event_t*> CreateEvent(Plugin* plugin, DLDevice device, uint32_t flags) {
  auto args = AbiArgs<hetrt_event_create_args_t>();
  args.self = plugin->instance();
  args.device = device;
  args.flags = flags;
  HETRT_RETURN_IF_ERROR(plugin->Consume(plugin->device_api()->event_create(&args)));
  return args.event;
}

Status RecordEvent(Plugin* plugin, DLDevice device, hetrt_event_t* event, hetrt_stream_t* stream) {
  auto args = AbiArgs<hetrt_event_record_args_t>();
  args.self = plugin->instance();
  args.device = device;
  args.event = event;
  args.stream = stream;
  return plugin->Consume(plugin->device_api()->event_record(&args));
}

Result<uint64_t> EventTimestamp(Plugin* plugin, DLDevice device, hetrt_event_t* event) {
  auto args = AbiArgs<hetrt_event_timestamp_args_t>();
  args.self = plugin->instance();
  args.device = device;
  args.event = event;
  if (plugin->device_api()->event_timestamp == nullptr)
    return Unimplemented("plugin '" + plugin->name() + "' has no event timestamps");
  HETRT_RETURN_IF_ERROR(plugin->Consume(plugin->device_api()->event_timestamp(&args)));
  return args.device_ns;
}

Status SynchronizeStream(Plugin* plugin, DLDevice device, hetrt_stream_t* stream) {
  auto args = AbiArgs<hetrt_stream_args_t>();
  args.self = plugin->instance();
  args.device = device;
  args.stream = stream;
  return plugin->Consume(plugin->device_api()->stream_synchronize(&args));
}

}  // namespace

GraphExecutor::~GraphExecutor() {
  (void)FinishPendingRun();
  for (Step& step : steps_) {
    if (step.lane >= lanes_.size()) continue;
    const Lane& lane = lanes_[step.lane];
    DestroyEvent(lane.plugin, lane.device, step.event);
    DestroyEvent(lane.plugin, lane.device, step.timing_start);
    DestroyEvent(lane.plugin, lane.device, step.timing_end);
  }
  for (Lane& lane : lanes_) {
    if (lane.plugin == nullptr || lane.stream == nullptr) continue;
    auto args = AbiArgs<hetrt_stream_args_t>();
    args.self = lane.plugin->instance();
    args.device = lane.device;
    args.stream = lane.stream;
    (void)lane.plugin->Consume(lane.plugin->device_api()->stream_destroy(&args));
  }
}

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
  HETRT_RETURN_IF_ERROR(ex->PlanSteps());
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
  // Devices whose memory is host memory get host-visible storage, so copies
  // to and from the host become memcpys through its host address.
  std::vector<std::pair<DLDevice, bool>> shares_host;
  auto host_visible = [&](Plugin* plugin, DLDevice d) {
    if (d.device_type == kDLCPU || options_.staged_copies) return false;
    for (const auto& [device, shares] : shares_host)
      if (SameDevice(device, d)) return shares;
    shares_host.emplace_back(d, plugin->SharesHostMemory(d));
    return shares_host.back().second;
  };
  storage_host_.assign(num_sids, nullptr);
  for (uint32_t sid = 0; sid < num_sids; ++sid) {
    if (storage_entries_[sid].empty() || sid_skipped[sid]) continue;
    const DLDevice device = sid_device[sid];
    HETRT_ASSIGN_OR_RETURN(Plugin * plugin, plugins_->ForDevice(device));
    const std::vector<int64_t> shape{static_cast<int64_t>(storage_bytes_[sid])};
    Result<Tensor> t = Status(StatusCode::kInternal, "not allocated");
    if (host_visible(plugin, device)) {
      Allocator& allocator = plugin->DeviceAllocator(device, HETRT_MEMORY_HOST_VISIBLE);
      t = Tensor::Empty(shape, DLDataType{kDLUInt, 8, 1}, allocator);
      if (t.ok()) storage_host_[sid] = allocator.HostPointer(t->data());
    }
    if (!t.ok()) t = Tensor::Empty(shape, DLDataType{kDLUInt, 8, 1}, plugin->DeviceAllocator(device));
    if (!t.ok()) return t.status().WithContext("storage " + std::to_string(sid) + " on " + DeviceToString(device));
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

Status GraphExecutor::DetachStorage(uint32_t sid) {
  if (!storage_borrowed_[sid]) return OkStatus();
  // Bound to memory someone else owns: take a private buffer, sized for every
  // entry of the storage id, rather than write into it.
  const DLDevice device = entry_devices_[storage_entries_[sid][0]];
  HETRT_ASSIGN_OR_RETURN(Plugin * plugin, plugins_->ForDevice(device));
  HETRT_ASSIGN_OR_RETURN(storage_[sid], Tensor::Empty({static_cast<int64_t>(storage_bytes_[sid])},
                                                      DLDataType{kDLUInt, 8, 1}, plugin->DeviceAllocator(device)));
  RebindStorage(sid, storage_[sid].data());
  storage_host_[sid] = nullptr;  // device memory: copies go through the plugin
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
  HETRT_RETURN_IF_ERROR(FinishPendingRun());
  // Every entry viewing the input's storage (e.g. __nop reshapes of it) follows.
  RebindStorage(graph_->storage_ids[eid], value.data());
  storage_borrowed_[graph_->storage_ids[eid]] = true;
  storage_host_[graph_->storage_ids[eid]] = nullptr;  // caller memory: copies go through the plugin
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

Status GraphExecutor::LoadParams(std::span<const uint8_t> bytes) {
  HETRT_RETURN_IF_ERROR(FinishPendingRun());
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

Status GraphExecutor::CreateLanes() {
  lanes_.clear();
  Lane host;
  host.name = "host";
  lanes_.push_back(std::move(host));
  return OkStatus();
}

Status GraphExecutor::PlanSteps() {
  const Graph& g = *graph_;
  HETRT_RETURN_IF_ERROR(CreateLanes());
  auto lane_of = [&](DLDevice device, bool copy) -> Result<uint32_t> {
    if (device.device_type == kDLCPU) return kHostLane;
    for (uint32_t l = 1; l < lanes_.size(); ++l)
      if (SameDevice(lanes_[l].device, device) && lanes_[l].copy == copy) return l;
    Plugin* plugin = plugins_->PluginOfDeviceType(device.device_type);
    if (plugin == nullptr) return plugins_->ForDeviceType(device.device_type).status();
    const hetrt_device_api_t* dev = plugin->device_api();
    if (dev->stream_synchronize == nullptr)
      return Unimplemented("plugin '" + plugin->name() + "' cannot synchronize " + DeviceToString(device));
    const bool own_streams = dev->stream_create && dev->stream_destroy && dev->stream_set_current;
    if (!options_.sequential && !own_streams)
      return Unimplemented("plugin '" + plugin->name() + "' lacks the streams an asynchronous run needs "
                           "(stream_create, stream_destroy, stream_set_current; run with sequential execution)");
    auto args = AbiArgs<hetrt_stream_create_args_t>();
    if (own_streams) {  // else the device's default stream
      args.self = plugin->instance();
      args.device = device;
      args.kind = copy ? HETRT_STREAM_COPY : HETRT_STREAM_COMPUTE;
      HETRT_RETURN_IF_ERROR(plugin->Consume(dev->stream_create(&args)).WithContext(
          "creating a " + std::string(copy ? "copy" : "compute") + " stream on " + DeviceToString(device)));
    }
    Lane lane;
    lane.plugin = plugin;
    lane.device = device;
    lane.stream = args.stream;
    lane.copy = copy;
    lane.name = DeviceToString(device) + (copy ? " copy" : " compute");
    lanes_.push_back(std::move(lane));
    return static_cast<uint32_t>(lanes_.size() - 1);
  };
  auto copy_lane = [&](DLDevice device) -> Result<uint32_t> {
    Plugin* plugin = plugins_->PluginOfDeviceType(device.device_type);
    bool own = false;
    if (!options_.sequential && plugin != nullptr) {
      auto streams = plugin->AttributeInt(device, HETRT_DEVICE_ATTR_COPY_STREAMS);
      own = streams.ok() && *streams == 1;
    }
    return lane_of(device, own);
  };
  auto plugin_copy_args = [&](Plugin* plugin, DLDevice src, DLDevice dst, const Lane& lane, bool blocking) {
    auto a = AbiArgs<hetrt_copy_args_t>();
    a.self = plugin->instance();
    a.src_device = src;
    a.dst_device = dst;
    a.stream = lane.stream;
    a.flags = blocking ? HETRT_COPY_BLOCKING : 0;
    return a;
  };

  host_calls_.clear();
  for (const OpCall& c : calls_)
    if (c.kind == OpCall::Kind::kKernel)
      host_calls_.push_back({c.fn, c.resource, &arg_values_[c.args_begin], &arg_codes_[c.args_begin], c.num_args});
  steps_.assign(calls_.size(), Step{});
  host_only_ = true;
  std::vector<ScheduleStep> plan_steps(calls_.size());
  for (uint32_t i = 0; i < calls_.size(); ++i) {
    const OpCall& c = calls_[i];
    Step& step = steps_[i];
    step.call = i;
    const GraphNode& node = g.nodes[c.node_id];
    ScheduleStep& ps = plan_steps[i];
    for (const GraphEntryRef& in : node.inputs) ps.reads.push_back(g.storage_ids[g.entry_id(in)]);
    for (uint32_t k = 0; k < node.num_outputs; ++k) ps.writes.push_back(g.storage_ids[g.entry_id(c.node_id, k)]);
    if (c.kind == OpCall::Kind::kKernel) {
      HETRT_ASSIGN_OR_RETURN(step.lane, lane_of(entry_devices_[g.entry_id(c.node_id, 0)], false));
      host_only_ &= step.lane == kHostLane;
      ps.lane = step.lane;
      continue;
    }
    host_only_ = false;
    step.src = entries_[c.copy_src].dl();
    step.dst = entries_[c.copy_dst].dl();
    step.src_sid = g.storage_ids[c.copy_src];
    step.dst_sid = g.storage_ids[c.copy_dst];
    step.nbytes = g.entry_bytes(c.copy_src);
    const DLDevice src = entry_devices_[c.copy_src], dst = entry_devices_[c.copy_dst];
    const bool src_host = src.device_type == kDLCPU, dst_host = dst.device_type == kDLCPU;
    const bool src_addressable = src_host || storage_host_[step.src_sid] != nullptr;
    const bool dst_addressable = dst_host || storage_host_[step.dst_sid] != nullptr;
    Plugin* src_plugin = src_host ? nullptr : plugins_->PluginOfDeviceType(src.device_type);
    Plugin* dst_plugin = dst_host ? nullptr : plugins_->PluginOfDeviceType(dst.device_type);
    Plugin* provider = plugins_->CopyProvider(src, dst);
    if ((src_host && dst_host) ||
        ((src_host || dst_host) && src_addressable && dst_addressable && !options_.staged_copies)) {
      step.kind = Step::Kind::kHostCopy;
      step.lane = kHostLane;
      if (options_.sequential && (!src_host || !dst_host)) {
        HETRT_ASSIGN_OR_RETURN(uint32_t l, lane_of(src_host ? dst : src, false));
        step.sync_lane = static_cast<int32_t>(l);
      }
      // Used if zero-copy binding later takes a side's host address away.
      if (provider != nullptr) {
        step.copier = provider;
        step.copy_args = plugin_copy_args(provider, src, dst, Lane{}, true);
      }
    } else if (provider != nullptr && (src_host || dst_host || src_plugin == dst_plugin)) {
      step.kind = Step::Kind::kPluginCopy;
      HETRT_ASSIGN_OR_RETURN(step.lane, copy_lane(src_host ? dst : src));
      step.copier = provider;
      step.copy_args = plugin_copy_args(provider, src, dst, lanes_[step.lane], options_.sequential);
      if (options_.sequential && !src_host && !dst_host && !SameDevice(src, dst)) {
        // Blocking on the source's stream; the destination's earlier work must end first.
        HETRT_ASSIGN_OR_RETURN(uint32_t l, lane_of(dst, false));
        step.sync_lane = static_cast<int32_t>(l);
      }
    } else {
      // Two plugins: the source's plugin copies into pinned staging, the
      // destination's out of it, each on the compute stream of its device.
      if (src_plugin == nullptr || dst_plugin == nullptr)
        return NodeError(i, Unimplemented("no plugin copies " + DeviceToString(src) + " -> " + DeviceToString(dst)));
      step.kind = Step::Kind::kStagedCopy;
      step.lane = kHostLane;
      HETRT_ASSIGN_OR_RETURN(uint32_t src_lane, lane_of(src, false));
      HETRT_ASSIGN_OR_RETURN(uint32_t dst_lane, lane_of(dst, false));
      Allocator& pinned = src_plugin->DeviceAllocator(src, HETRT_MEMORY_HOST_PINNED);
      auto staging = Tensor::Empty({static_cast<int64_t>(step.nbytes)}, DLDataType{kDLUInt, 8, 1}, pinned);
      if (!staging.ok()) staging = Tensor::EmptyHost({static_cast<int64_t>(step.nbytes)}, DLDataType{kDLUInt, 8, 1});
      if (!staging.ok()) return NodeError(i, staging.status());
      step.staging = std::move(staging).value();
      void* host = pinned.HostPointer(step.staging.data());
      if (host == nullptr) host = step.staging.data();
      step.copier = src_plugin;
      step.copy_args = plugin_copy_args(src_plugin, src, DLDevice{kDLCPU, 0}, lanes_[src_lane], true);
      step.copy_args.dst = host;
      step.copier2 = dst_plugin;
      step.copy_args2 = plugin_copy_args(dst_plugin, DLDevice{kDLCPU, 0}, dst, lanes_[dst_lane], true);
      step.copy_args2.src = host;
    }
    ps.lane = step.lane;
  }
  // A stream waits only for events of its own device (a plugin may not order
  // work across its devices, e.g. two OpenCL platforms); other waits are the host's.
  std::vector<uint32_t> lane_group(lanes_.size(), 0);
  for (uint32_t l = 1; l < lanes_.size(); ++l) {
    lane_group[l] = l;
    for (uint32_t k = 1; k < l; ++k)
      if (SameDevice(lanes_[k].device, lanes_[l].device)) {
        lane_group[l] = lane_group[k];
        break;
      }
  }
  for (const Lane& lane : lanes_) {
    if (lane.plugin == nullptr) continue;
    const hetrt_device_api_t* dev = lane.plugin->device_api();
    if (!options_.sequential && (dev->event_create == nullptr || dev->event_destroy == nullptr ||
                                 dev->event_record == nullptr || dev->event_synchronize == nullptr ||
                                 dev->stream_wait_event == nullptr))
      return Unimplemented("plugin '" + lane.plugin->name() + "' lacks the events an asynchronous run needs "
                           "(run with sequential execution)");
  }
  SchedulePlan plan = PlanSchedule(plan_steps, lane_group, options_.sequential || host_only_);
  order_ = std::move(plan.order);
  for (uint32_t i = 0; i < steps_.size(); ++i) {
    Step& step = steps_[i];
    if (!options_.sequential) {
      step.host_waits = std::move(plan.host_waits[i]);
      step.stream_waits = std::move(plan.stream_waits[i]);
    }
    step.deps = std::move(plan.deps[i]);
    const Lane& lane = lanes_[step.lane];
    if (!options_.sequential && plan.records_event[i] && lane.plugin != nullptr) {
      auto event = CreateEvent(lane.plugin, lane.device, 0);
      if (!event.ok()) return NodeError(i, event.status());
      step.event = *event;
    }
  }
  // Run() ends with host memory final: copies on device streams that read or
  // write host memory (inputs the caller may refill, CPU outputs) are waited for.
  if (!options_.sequential) {
    std::vector<int64_t> last_touching_host(lanes_.size(), -1);
    for (uint32_t i : order_) {
      const Step& step = steps_[i];
      if (step.kind == Step::Kind::kPluginCopy && lanes_[step.lane].plugin != nullptr &&
          (step.src->device.device_type == kDLCPU || step.dst->device.device_type == kDLCPU))
        last_touching_host[step.lane] = i;
    }
    for (int64_t i : last_touching_host) {
      if (i < 0) continue;
      Step& step = steps_[static_cast<size_t>(i)];
      if (step.event == nullptr) {
        const Lane& lane = lanes_[step.lane];
        HETRT_ASSIGN_OR_RETURN(step.event, CreateEvent(lane.plugin, lane.device, 0));
      }
      final_waits_.push_back(static_cast<uint32_t>(i));
    }
  }
  saved_streams_.assign(lanes_.size(), nullptr);
  return OkStatus();
}

Status GraphExecutor::FinishPendingRun() const {
  if (!pending_.load(std::memory_order_acquire)) return OkStatus();
  std::lock_guard<std::mutex> lock(pending_mutex_);
  if (!pending_.load(std::memory_order_relaxed)) return OkStatus();
  Status first;
  for (const Lane& lane : lanes_) {
    if (lane.plugin == nullptr) continue;
    Status s = SynchronizeStream(lane.plugin, lane.device, lane.stream);
    if (first.ok() && !s.ok()) first = s.WithContext("device work of the last run failed on " + lane.name);
  }
  pending_.store(false, std::memory_order_release);
  return first;
}

Status GraphExecutor::WaitForEvent(const Step& producer) const {
  const Lane& lane = lanes_[producer.lane];
  auto args = AbiArgs<hetrt_event_args_t>();
  args.self = lane.plugin->instance();
  args.device = lane.device;
  args.event = producer.event;
  return lane.plugin->Consume(lane.plugin->device_api()->event_synchronize(&args));
}

namespace {
// The step's prepared copy() with this run's buffers (zero copy may rebind them).
template <typename StepT>
Status PluginCopy(const StepT& step) {
  hetrt_copy_args_t args = step.copy_args;
  args.src = step.src->data;
  args.src_offset = step.src->byte_offset;
  args.dst = step.dst->data;
  args.dst_offset = step.dst->byte_offset;
  args.nbytes = step.nbytes;
  return step.copier->Consume(step.copier->device_api()->copy(&args));
}
}  // namespace

Status GraphExecutor::ExecuteStep(const Step& step) {
  switch (step.kind) {
    case Step::Kind::kKernel: {
      const OpCall& c = calls_[step.call];
      hetrt_value_t ret;
      int32_t ret_code;
      if (c.fn(&arg_values_[c.args_begin], &arg_codes_[c.args_begin], c.num_args, &ret, &ret_code, c.resource) != 0)
          [[unlikely]]
        return KernelError();
      return OkStatus();
    }
    case Step::Kind::kHostCopy: {
      if (step.sync_lane >= 0) {
        const Lane& lane = lanes_[static_cast<size_t>(step.sync_lane)];
        HETRT_RETURN_IF_ERROR(SynchronizeStream(lane.plugin, lane.device, lane.stream));
      }
      const bool src_host = step.src->device.device_type == kDLCPU;
      const bool dst_host = step.dst->device.device_type == kDLCPU;
      const void* from = src_host ? step.src->data : storage_host_[step.src_sid];
      void* to = dst_host ? step.dst->data : storage_host_[step.dst_sid];
      if (from == nullptr || to == nullptr) [[unlikely]] {  // rebound to memory the host cannot address
        if (step.copier == nullptr)
          return plugins_->CopyBytes(step.src->data, step.src->byte_offset, step.src->device, step.dst->data,
                                     step.dst->byte_offset, step.dst->device, step.nbytes);
        return PluginCopy(step);
      }
      std::memcpy(static_cast<uint8_t*>(to) + (dst_host ? step.dst->byte_offset : 0),
                  static_cast<const uint8_t*>(from) + (src_host ? step.src->byte_offset : 0), step.nbytes);
      return OkStatus();
    }
    case Step::Kind::kPluginCopy: {
      if (step.sync_lane >= 0) {
        const Lane& lane = lanes_[static_cast<size_t>(step.sync_lane)];
        HETRT_RETURN_IF_ERROR(SynchronizeStream(lane.plugin, lane.device, lane.stream));
      }
      return PluginCopy(step);
    }
    case Step::Kind::kStagedCopy: {
      hetrt_copy_args_t in = step.copy_args;
      in.src = step.src->data;
      in.src_offset = step.src->byte_offset;
      in.nbytes = step.nbytes;
      HETRT_RETURN_IF_ERROR(step.copier->Consume(step.copier->device_api()->copy(&in)));
      hetrt_copy_args_t out = step.copy_args2;
      out.dst = step.dst->data;
      out.dst_offset = step.dst->byte_offset;
      out.nbytes = step.nbytes;
      return step.copier2->Consume(step.copier2->device_api()->copy(&out));
    }
  }
  return Internal("unknown step kind");
}

namespace {
// Makes the executor's compute streams current on this thread for a run, so
// kernels that TVM host code launches land there, and restores them after.
// `saved` has a slot per lane (allocated at create time).
template <typename Lanes>
class CurrentStreams {
 public:
  CurrentStreams(const Lanes& lanes, std::vector<hetrt_stream_t*>& saved) : lanes_(lanes), saved_(saved) {}
  Status Set() {
    for (; set_ < lanes_.size(); ++set_) {
      const auto& lane = lanes_[set_];
      if (lane.plugin == nullptr || lane.copy || lane.plugin->device_api()->stream_set_current == nullptr) continue;
      auto args = AbiArgs<hetrt_stream_current_args_t>();
      args.self = lane.plugin->instance();
      args.device = lane.device;
      args.stream = lane.stream;
      Status s = lane.plugin->Consume(lane.plugin->device_api()->stream_set_current(&args));
      if (!s.ok()) [[unlikely]]
        return s.WithContext("making the executor's stream current on " + lane.name);
      saved_[set_] = args.previous;
    }
    return OkStatus();
  }
  ~CurrentStreams() {
    for (size_t i = 0; i < set_; ++i) {
      const auto& lane = lanes_[i];
      if (lane.plugin == nullptr || lane.copy || lane.plugin->device_api()->stream_set_current == nullptr) continue;
      auto args = AbiArgs<hetrt_stream_current_args_t>();
      args.self = lane.plugin->instance();
      args.device = lane.device;
      args.stream = saved_[i];
      (void)lane.plugin->Consume(lane.plugin->device_api()->stream_set_current(&args));
    }
  }

 private:
  const Lanes& lanes_;
  std::vector<hetrt_stream_t*>& saved_;
  size_t set_ = 0;
};
}  // namespace

Status GraphExecutor::Run() {
  ClearLastError();  // a kernel failing without a message must not show an old one
  BackendRegistryScope backend(options_.plugins);  // compiled code reaches this executor's plugins
  if (host_only_) [[likely]] {
    // Every node is a CPU kernel: the plain loop over calls whose argument
    // pointers were resolved at create time, at the direct-call floor.
    hetrt_value_t ret;
    int32_t ret_code;
    const HostCall* const begin = host_calls_.data();
    const HostCall* const end = begin + host_calls_.size();
    for (const HostCall* c = begin; c != end; ++c)
      if (c->fn(c->args, c->codes, c->num_args, &ret, &ret_code, c->resource) != 0) [[unlikely]]
        return NodeError(static_cast<size_t>(c - begin), KernelError());
  } else {
    HETRT_RETURN_IF_ERROR(FinishPendingRun());
    HETRT_RETURN_IF_ERROR(RunSteps<false>(nullptr));
  }
  if (!output_copies_.empty()) {
    HETRT_RETURN_IF_ERROR(FinishPendingRun());
    for (auto& [eid, dst] : output_copies_) HETRT_RETURN_IF_ERROR(plugins_->CopyTensor(entries_[eid], dst));
  }
  return OkStatus();
}

template <bool kProfile>
Status GraphExecutor::RunSteps(RunProfile* profile) {
  CurrentStreams<std::vector<Lane>> current(lanes_, saved_streams_);
  HETRT_RETURN_IF_ERROR(current.Set());
  pending_.store(lanes_.size() > 1, std::memory_order_release);
  for (uint32_t index : order_) {
    const Step& step = steps_[index];
    const Lane& lane = lanes_[step.lane];
    [[maybe_unused]] uint64_t submit_ns = 0, wait_ns = 0, start_ns = 0;
    if constexpr (kProfile) submit_ns = HostNowNs();
    for (uint32_t w : step.host_waits) {
      Status s = WaitForEvent(steps_[w]);
      if (!s.ok()) [[unlikely]]
        return NodeError(w, s);
    }
    for (uint32_t w : step.stream_waits) {
      auto args = AbiArgs<hetrt_stream_wait_event_args_t>();
      args.self = lane.plugin->instance();
      args.device = lane.device;
      args.stream = lane.stream;
      args.event = steps_[w].event;
      Status s = lane.plugin->Consume(lane.plugin->device_api()->stream_wait_event(&args));
      if (!s.ok()) [[unlikely]]
        return NodeError(index, s);
    }
    if constexpr (kProfile) {
      start_ns = HostNowNs();
      wait_ns = start_ns - submit_ns;
      if (lane.plugin != nullptr) {
        Status s = RecordEvent(lane.plugin, lane.device, step.timing_start, lane.stream);
        if (!s.ok()) return NodeError(index, s);
      }
    }
    Status s = ExecuteStep(step);
    if (!s.ok()) [[unlikely]]
      return NodeError(index, s);
    if constexpr (kProfile) {
      GraphExecutor::NodeTrace t;
      t.node_id = calls_[index].node_id;
      t.device = entry_devices_[calls_[index].kind == OpCall::Kind::kCopy ? calls_[index].copy_dst
                                                                          : graph_->entry_id(t.node_id, 0)];
      t.lane = step.lane;
      t.submit_ns = submit_ns;
      t.start_ns = start_ns;
      t.end_ns = HostNowNs();
      t.wait_ns = lane.plugin == nullptr ? wait_ns : 0;
      t.bytes = step.nbytes;
      for (uint32_t d : step.deps) t.waited_for.push_back(calls_[d].node_id);
      if (lane.plugin != nullptr) {
        Status r = RecordEvent(lane.plugin, lane.device, step.timing_end, lane.stream);
        if (!r.ok()) return NodeError(index, r);
      }
      profile->nodes.push_back(std::move(t));
    }
    if (step.event != nullptr) {
      Status r = RecordEvent(lane.plugin, lane.device, step.event, lane.stream);
      if (!r.ok()) [[unlikely]]
        return NodeError(index, r);
    }
  }
  for (uint32_t w : final_waits_) {
    Status s = WaitForEvent(steps_[w]);
    if (!s.ok()) [[unlikely]]
      return NodeError(w, s);
  }
  return OkStatus();
}

Status GraphExecutor::RunProfiled(RunProfile* profile) {
  *profile = RunProfile{};
  for (const Lane& lane : lanes_) profile->lanes.push_back(lane.name);
  if (lanes_.empty()) profile->lanes.push_back("host");
  HETRT_RETURN_IF_ERROR(FinishPendingRun());
  // Timing events around every device step, made once.
  for (const Lane& lane : lanes_) {
    if (lane.plugin == nullptr) continue;
    const hetrt_device_api_t* dev = lane.plugin->device_api();
    if (!dev->event_create || !dev->event_record || !dev->event_destroy || !dev->event_timestamp || !dev->device_clock)
      return Unimplemented("plugin '" + lane.plugin->name() + "' cannot time device work (it needs events, "
                           "event_timestamp and device_clock)");
  }
  for (uint32_t i = 0; i < steps_.size(); ++i) {
    Step& step = steps_[i];
    const Lane& lane = lanes_[step.lane];
    if (lane.plugin == nullptr || step.timing_start != nullptr) continue;
    HETRT_ASSIGN_OR_RETURN(step.timing_start, CreateEvent(lane.plugin, lane.device, HETRT_EVENT_TIMING));
    HETRT_ASSIGN_OR_RETURN(step.timing_end, CreateEvent(lane.plugin, lane.device, HETRT_EVENT_TIMING));
  }
  ClearLastError();
  BackendRegistryScope backend(options_.plugins);
  profile->run_start_ns = HostNowNs();
  profile->nodes.reserve(steps_.size());
  if (!steps_.empty()) HETRT_RETURN_IF_ERROR(RunSteps<true>(profile));
  HETRT_RETURN_IF_ERROR(FinishPendingRun());
  for (auto& [eid, dst] : output_copies_) HETRT_RETURN_IF_ERROR(plugins_->CopyTensor(entries_[eid], dst));
  // Device timestamps onto the host clock: one clock reading per lane device.
  std::vector<int64_t> offset(lanes_.size(), 0);
  for (uint32_t l = 1; l < lanes_.size(); ++l) {
    const Lane& lane = lanes_[l];
    auto args = AbiArgs<hetrt_device_clock_args_t>();
    args.self = lane.plugin->instance();
    args.device = lane.device;
    HETRT_RETURN_IF_ERROR(lane.plugin->Consume(lane.plugin->device_api()->device_clock(&args)));
    offset[l] = static_cast<int64_t>(args.host_ns) - static_cast<int64_t>(args.device_ns);
    profile->clock_uncertainty_ns = std::max(profile->clock_uncertainty_ns, args.uncertainty_ns);
  }
  std::vector<uint64_t> lane_end(lanes_.size(), 0);
  for (size_t k = 0; k < order_.size(); ++k) {
    const Step& step = steps_[order_[k]];
    NodeTrace& t = profile->nodes[k];
    const Lane& lane = lanes_[step.lane];
    if (lane.plugin != nullptr) {
      HETRT_ASSIGN_OR_RETURN(uint64_t start, EventTimestamp(lane.plugin, lane.device, step.timing_start));
      HETRT_ASSIGN_OR_RETURN(uint64_t end, EventTimestamp(lane.plugin, lane.device, step.timing_end));
      // A marker completes when the work before it has: the step started no
      // earlier than it was issued.
      t.start_ns = std::max(t.start_ns, static_cast<uint64_t>(static_cast<int64_t>(start) + offset[step.lane]));
      t.end_ns = std::max(t.start_ns, static_cast<uint64_t>(static_cast<int64_t>(end) + offset[step.lane]));
      if (!step.stream_waits.empty()) {
        const uint64_t ready = std::max(t.submit_ns, lane_end[step.lane]);
        t.wait_ns = t.start_ns > ready ? t.start_ns - ready : 0;
      }
    }
    lane_end[step.lane] = std::max(lane_end[step.lane], t.end_ns);
    profile->run_end_ns = std::max(profile->run_end_ns, t.end_ns);
  }
  return OkStatus();
}

Result<Tensor> GraphExecutor::GetOutput(int index) const {
  if (index < 0 || index >= NumOutputs())
    return OutOfRange("get_output: index " + std::to_string(index) + " out of range (" +
                      std::to_string(NumOutputs()) + " outputs)");
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

Status GraphExecutor::CopyOutputTo(int index, Tensor& out) const {
  if (index < 0 || index >= NumOutputs()) return OutOfRange("output index out of range");
  HETRT_RETURN_IF_ERROR(FinishPendingRun());
  return plugins_->CopyTensor(OutputTensor(index), out);
}

Status GraphExecutor::Synchronize() {
  HETRT_RETURN_IF_ERROR(FinishPendingRun());
  for (const DLDevice& d : options_.devices) {
    if (d.device_type == kDLCPU) continue;
    Plugin* plugin = plugins_->PluginOfDeviceType(d.device_type);
    if (plugin == nullptr || plugin->device_api()->stream_synchronize == nullptr) continue;
    HETRT_RETURN_IF_ERROR(SynchronizeStream(plugin, d, nullptr));
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
