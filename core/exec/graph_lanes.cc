// From the plan to what the run loop issues: a stream per device lane, an
// event per step another lane waits for, prepared copies, and the flat list of
// calls the CPU-only loop runs.
#include "hetrt/base/dtype.h"
#include "exec/graph_executor_impl.h"

namespace hetrt {

Status GraphExecutor::Impl::BuildLanes() {
  lanes_.clear();
  lanes_.reserve(plan_.lanes.size());
  for (const PlannedLane& planned : plan_.lanes) {
    Lane lane;
    lane.copy = planned.copy;
    if (lanes_.empty()) {  // lane 0: the host thread
      lane.name = "host";
      lanes_.push_back(std::move(lane));
      continue;
    }
    HETRT_ASSIGN_OR_RETURN(lane.device, plugins_->DeviceFor(planned.device));
    const Device& device = lane.device;
    const std::string plugin = "plugin '" + device.plugin()->name() + "'";
    if (!device.CanSynchronize())
      return Unimplemented(plugin + " cannot synchronize " + DeviceToString(planned.device));
    if (!options_.sequential && !device.HasStreams())
      return Unimplemented(plugin +
                           " lacks the streams an asynchronous run needs "
                           "(stream_create, stream_destroy, stream_set_current; run with sequential execution)");
    if (!options_.sequential && !device.HasEvents())
      return Unimplemented(plugin + " lacks the events an asynchronous run needs (run with sequential execution)");
    if (device.HasStreams()) {  // else the device's default stream
      auto stream = Stream::Create(device, planned.copy ? HETRT_STREAM_COPY : HETRT_STREAM_COMPUTE);
      if (!stream.ok())
        return stream.status().WithContext("creating a " + std::string(planned.copy ? "copy" : "compute") +
                                           " stream on " + DeviceToString(planned.device));
      lane.stream = std::move(stream).value();
    } else {
      lane.stream = Stream::Default(device);
    }
    lane.name = DeviceToString(planned.device) + (planned.copy ? " copy" : " compute");
    lanes_.push_back(std::move(lane));
  }
  saved_streams_.assign(lanes_.size(), nullptr);
  return OkStatus();
}

Status GraphExecutor::Impl::BuildCopy(uint32_t index, Step& step, const PlannedStep& planned) {
  const Graph& g = *graph_;
  step.src = entries_[planned.src_eid].dl();
  step.dst = entries_[planned.dst_eid].dl();
  step.src_sid = g.storage_ids[planned.src_eid];
  step.dst_sid = g.storage_ids[planned.dst_eid];
  step.nbytes = planned.nbytes;
  step.sync_lane = planned.sync_lane;
  const DLDevice src = plan_.entry_devices[planned.src_eid], dst = plan_.entry_devices[planned.dst_eid];
  auto copier = [&](DLDevice side) -> Result<Device> {
    Plugin* plugin = plugins_->PluginOfDeviceType(side.device_type);
    if (plugin == nullptr) return plugins_->ForDeviceType(side.device_type).status();
    return Device(plugin, side);
  };
  switch (planned.kind) {
    case PlannedStep::Kind::kKernel: break;
    case PlannedStep::Kind::kHostCopy:
      // Used if zero-copy binding later takes a side's host address away.
      if (planned.copier) {
        HETRT_ASSIGN_OR_RETURN(Device d, copier(*planned.copier));
        step.copy = PreparedCopy(d, src, dst, nullptr, /*blocking=*/true);
      }
      break;
    case PlannedStep::Kind::kPluginCopy: {
      HETRT_ASSIGN_OR_RETURN(Device d, copier(*planned.copier));
      step.copy = PreparedCopy(d, src, dst, lanes_[planned.lane].stream.handle(), options_.sequential);
      break;
    }
    case PlannedStep::Kind::kStagedCopy: {
      // The source's plugin copies into pinned staging, the destination's out
      // of it, each blocking on the compute stream of its device.
      const Device& from = lanes_[planned.src_lane].device;
      const Device& to = lanes_[planned.dst_lane].device;
      Allocator& pinned = from.allocator(HETRT_MEMORY_HOST_PINNED);
      auto staging = Tensor::Empty({static_cast<int64_t>(step.nbytes)}, DLDataType{kDLUInt, 8, 1}, pinned);
      if (!staging.ok()) staging = Tensor::EmptyHost({static_cast<int64_t>(step.nbytes)}, DLDataType{kDLUInt, 8, 1});
      if (!staging.ok()) return NodeError(index, staging.status());
      step.staging = std::move(staging).value();
      step.staging_host = pinned.HostPointer(step.staging.data());
      if (step.staging_host == nullptr) step.staging_host = step.staging.data();
      step.copy = PreparedCopy(from, src, DLDevice{kDLCPU, 0}, lanes_[planned.src_lane].stream.handle(), true);
      step.copy_out = PreparedCopy(to, DLDevice{kDLCPU, 0}, dst, lanes_[planned.dst_lane].stream.handle(), true);
      break;
    }
  }
  return OkStatus();
}

Status GraphExecutor::Impl::BuildSteps() {
  HETRT_RETURN_IF_ERROR(BuildLanes());
  host_calls_.clear();
  for (uint32_t i = 0; i < plan_.steps.size(); ++i) {
    const PlannedStep& planned = plan_.steps[i];
    Step& step = steps_[i];
    step.kind = planned.kind;
    step.node_id = planned.node_id;
    step.lane = planned.lane;
    step.host_waits = planned.host_waits;
    step.stream_waits = planned.stream_waits;
    step.deps = planned.deps;
    if (planned.kind == PlannedStep::Kind::kKernel) {
      const OpCall& c = step.call;
      host_calls_.push_back({c.fn, c.resource, &arg_values_[c.args_begin], &arg_codes_[c.args_begin], c.num_args});
    } else {
      HETRT_RETURN_IF_ERROR(BuildCopy(i, step, planned));
    }
    if (planned.records_event) {
      auto event = Event::Create(lanes_[step.lane].device);
      if (!event.ok()) return NodeError(i, event.status());
      step.event = std::move(event).value();
    }
  }
  if (!plan_.host_only) host_calls_.clear();  // only the CPU-only loop reads them
  return OkStatus();
}

}  // namespace hetrt
