// The run loop. CPU-only graphs run as a plain loop over resolved calls (the
// direct-call floor); others issue each step on its lane in the planned
// order, with only the waits the plan found.
#include <cstring>

#include "hetrt/base/host_clock.h"
#include "hetrt/base/last_error.h"
#include "exec/graph_executor_impl.h"
#include "tvm_abi/backend_routes.h"

namespace hetrt {
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
      if (!Switches(lanes_[set_])) continue;
      const auto& lane = lanes_[set_];
      Status s = lane.device.SetCurrentStream(lane.stream.handle(), &saved_[set_]);
      if (!s.ok()) [[unlikely]]
        return s.WithContext("making the executor's stream current on " + lane.name);
    }
    return OkStatus();
  }
  ~CurrentStreams() {
    for (size_t i = 0; i < set_; ++i)
      if (Switches(lanes_[i])) (void)lanes_[i].device.SetCurrentStream(saved_[i]);
  }

 private:
  template <typename Lane>
  static bool Switches(const Lane& lane) {
    return !lane.is_host() && !lane.copy && lane.device.CanSetCurrentStream();
  }
  const Lanes& lanes_;
  std::vector<hetrt_stream_t*>& saved_;
  size_t set_ = 0;
};

}  // namespace

Status GraphExecutor::Impl::KernelError() {
  std::string message = LastErrorMessage();
  if (message.empty()) message = "the kernel failed without reporting why";
  return Internal(message);
}

Status GraphExecutor::Impl::NodeError(size_t step_index, const Status& status) const {
  const uint32_t nid = plan_.steps[step_index].node_id;
  const GraphNode& node = graph_->nodes[nid];
  return status.WithContext("node " + std::to_string(nid) + " ('" + node.name + "', " + node.func_name + ")");
}

Status GraphExecutor::Run() { return impl_->Run(); }
Status GraphExecutor::Synchronize() { return impl_->Synchronize(); }

Status GraphExecutor::Impl::Run() {
  ClearLastError();  // a kernel failing without a message must not show an old one
  // Compiled code reaches this executor's plugins.
  BackendRoutesScope backend(options_.plugins ? options_.plugins->backend_routes() : nullptr);
  if (plan_.host_only) [[likely]] {
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
  return CopyOutputsBoundToInputs();
}

Status GraphExecutor::Impl::CopyOutputsBoundToInputs() {
  if (output_copies_.empty()) return OkStatus();
  HETRT_RETURN_IF_ERROR(FinishPendingRun());
  for (auto& [eid, dst] : output_copies_) HETRT_RETURN_IF_ERROR(plugins_->CopyTensor(entries_[eid], dst));
  return OkStatus();
}

Status GraphExecutor::Impl::FinishPendingRun() const {
  if (!pending_.load(std::memory_order_acquire)) return OkStatus();
  std::lock_guard<std::mutex> lock(pending_mutex_);
  if (!pending_.load(std::memory_order_relaxed)) return OkStatus();
  Status first;
  for (const Lane& lane : lanes_) {
    if (lane.is_host()) continue;
    Status s = lane.stream.Synchronize();
    if (first.ok() && !s.ok()) first = s.WithContext("device work of the last run failed on " + lane.name);
  }
  pending_.store(false, std::memory_order_release);
  return first;
}

Status GraphExecutor::Impl::ExecuteStep(const Step& step) {
  if (step.sync_lane >= 0 && step.kind != PlannedStep::Kind::kKernel)
    HETRT_RETURN_IF_ERROR(lanes_[static_cast<size_t>(step.sync_lane)].stream.Synchronize());
  switch (step.kind) {
    case PlannedStep::Kind::kKernel: {
      const OpCall& c = step.call;
      hetrt_value_t ret;
      int32_t ret_code;
      if (c.fn(&arg_values_[c.args_begin], &arg_codes_[c.args_begin], c.num_args, &ret, &ret_code, c.resource) != 0)
          [[unlikely]]
        return KernelError();
      return OkStatus();
    }
    case PlannedStep::Kind::kHostCopy: {
      const bool src_host = step.src->device.device_type == kDLCPU;
      const bool dst_host = step.dst->device.device_type == kDLCPU;
      const void* from = src_host ? step.src->data : storage_host_[step.src_sid];
      void* to = dst_host ? step.dst->data : storage_host_[step.dst_sid];
      if (from == nullptr || to == nullptr) [[unlikely]] {  // rebound to memory the host cannot address
        if (!step.copy.valid())
          return plugins_->CopyBytes(step.src->data, step.src->byte_offset, step.src->device, step.dst->data,
                                     step.dst->byte_offset, step.dst->device, step.nbytes);
        return step.copy.Issue(step.src->data, step.src->byte_offset, step.dst->data, step.dst->byte_offset,
                               step.nbytes);
      }
      std::memcpy(static_cast<uint8_t*>(to) + (dst_host ? step.dst->byte_offset : 0),
                  static_cast<const uint8_t*>(from) + (src_host ? step.src->byte_offset : 0), step.nbytes);
      return OkStatus();
    }
    case PlannedStep::Kind::kPluginCopy:
      return step.copy.Issue(step.src->data, step.src->byte_offset, step.dst->data, step.dst->byte_offset, step.nbytes);
    case PlannedStep::Kind::kStagedCopy:
      HETRT_RETURN_IF_ERROR(step.copy.Issue(step.src->data, step.src->byte_offset, step.staging_host, 0, step.nbytes));
      return step.copy_out.Issue(step.staging_host, 0, step.dst->data, step.dst->byte_offset, step.nbytes);
  }
  return Internal("unknown step kind");
}

template <bool kProfile>
Status GraphExecutor::Impl::RunSteps(RunProfile* profile) {
  CurrentStreams<std::vector<Lane>> current(lanes_, saved_streams_);
  HETRT_RETURN_IF_ERROR(current.Set());
  pending_.store(lanes_.size() > 1, std::memory_order_release);
  for (uint32_t index : plan_.order) {
    const Step& step = steps_[index];
    const Lane& lane = lanes_[step.lane];
    [[maybe_unused]] uint64_t submit_ns = 0, wait_ns = 0, start_ns = 0;
    if constexpr (kProfile) submit_ns = HostNowNs();
    for (uint32_t w : step.host_waits) {
      Status s = steps_[w].event.Synchronize();
      if (!s.ok()) [[unlikely]]
        return NodeError(w, s);
    }
    for (uint32_t w : step.stream_waits) {
      Status s = lane.stream.Wait(steps_[w].event.handle());
      if (!s.ok()) [[unlikely]]
        return NodeError(index, s);
    }
    if constexpr (kProfile) {
      start_ns = HostNowNs();
      wait_ns = start_ns - submit_ns;
      if (!lane.is_host())
        if (Status s = step.timing_start.Record(lane.stream.handle()); !s.ok()) return NodeError(index, s);
    }
    Status s = ExecuteStep(step);
    if (!s.ok()) [[unlikely]]
      return NodeError(index, s);
    if constexpr (kProfile) {
      NodeTrace t;
      t.node_id = step.node_id;
      const PlannedStep& planned = plan_.steps[index];
      t.device = plan_.entry_devices[planned.kind == PlannedStep::Kind::kKernel ? graph_->entry_id(t.node_id, 0)
                                                                                : planned.dst_eid];
      t.lane = step.lane;
      t.submit_ns = submit_ns;
      t.start_ns = start_ns;
      t.end_ns = HostNowNs();
      t.wait_ns = lane.is_host() ? wait_ns : 0;
      t.bytes = step.nbytes;
      for (uint32_t d : step.deps) t.waited_for.push_back(steps_[d].node_id);
      if (!lane.is_host())
        if (Status r = step.timing_end.Record(lane.stream.handle()); !r.ok()) return NodeError(index, r);
      profile->nodes.push_back(std::move(t));
    }
    if (step.event) {
      Status r = step.event.Record(lane.stream.handle());
      if (!r.ok()) [[unlikely]]
        return NodeError(index, r);
    }
  }
  for (uint32_t w : plan_.final_waits) {
    Status s = steps_[w].event.Synchronize();
    if (!s.ok()) [[unlikely]]
      return NodeError(w, s);
  }
  return OkStatus();
}

template Status GraphExecutor::Impl::RunSteps<true>(RunProfile* profile);

Status GraphExecutor::Impl::Synchronize() {
  HETRT_RETURN_IF_ERROR(FinishPendingRun());
  for (const DLDevice& d : options_.devices) {
    if (d.device_type == kDLCPU) continue;
    Plugin* plugin = plugins_->PluginOfDeviceType(d.device_type);
    if (plugin == nullptr || !plugin->CanSynchronize()) continue;
    HETRT_RETURN_IF_ERROR(Device(plugin, d).Synchronize(nullptr));
  }
  return OkStatus();
}

}  // namespace hetrt
