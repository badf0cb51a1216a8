#include "hetrt/exec/graph_plan.h"

#include <algorithm>

#include "hetrt/base/dtype.h"
#include "hetrt/exec/schedule_plan.h"

namespace hetrt {
namespace {

bool IsHost(DLDevice d) { return d.device_type == kDLCPU; }

class Planner {
 public:
  Planner(const Graph& graph, const GraphPlanOptions& options, const PlanDeviceFacts& facts)
      : g_(graph), options_(options), facts_(facts) {}

  Result<GraphPlan> Plan() {
    HETRT_ASSIGN_OR_RETURN(plan_.entry_devices, PlaceEntries(g_, options_.devices));
    PlanStorage();
    plan_.lanes.push_back(PlannedLane{});  // the host thread
    HETRT_RETURN_IF_ERROR(PlanSteps());
    Schedule();
    return std::move(plan_);
  }

 private:
  void PlanStorage() {
    plan_.storage.assign(g_.num_storage(), StoragePlan{});
    for (uint32_t e = 0; e < g_.num_entries(); ++e) {
      StoragePlan& s = plan_.storage[g_.storage_ids[e]];
      s.bytes = std::max(s.bytes, g_.entry_bytes(e));
      s.entries.push_back(e);
      s.device = plan_.entry_devices[e];
    }
    for (StoragePlan& s : plan_.storage)
      s.host_visible = !s.entries.empty() && !IsHost(s.device) && !options_.staged_copies && SharesHost(s.device);
  }

  bool SharesHost(DLDevice d) {
    for (const auto& [device, shares] : shares_host_)
      if (SameDevice(device, d)) return shares;
    shares_host_.emplace_back(d, facts_.shares_host_memory(d));
    return shares_host_.back().second;
  }

  uint32_t LaneOf(DLDevice device, bool copy) {
    if (IsHost(device)) return kHostLane;
    for (uint32_t l = 1; l < plan_.lanes.size(); ++l)
      if (SameDevice(plan_.lanes[l].device, device) && plan_.lanes[l].copy == copy) return l;
    plan_.lanes.push_back(PlannedLane{device, copy});
    return static_cast<uint32_t>(plan_.lanes.size() - 1);
  }
  // Copies go to a copy stream where the device has them (never in sequential runs).
  uint32_t CopyLaneOf(DLDevice device) {
    return LaneOf(device, !options_.sequential && facts_.has_copy_streams(device));
  }

  Status PlanSteps() {
    for (uint32_t nid = 0; nid < g_.nodes.size(); ++nid) {
      const GraphNode& node = g_.nodes[nid];
      if (node.kind != GraphNode::Kind::kOp || node.func_name == kNopFunction) continue;
      PlannedStep step;
      step.node_id = nid;
      if (node.func_name == kCopyFunction) {
        HETRT_RETURN_IF_ERROR(PlanCopy(node, step));
        plan_.host_only = false;
      } else {
        step.lane = LaneOf(plan_.entry_devices[g_.entry_id(nid, 0)], false);
        plan_.host_only &= step.lane == kHostLane;
      }
      plan_.steps.push_back(std::move(step));
    }
    return OkStatus();
  }

  Status PlanCopy(const GraphNode& node, PlannedStep& step) {
    step.src_eid = g_.entry_id(node.inputs[0]);
    step.dst_eid = g_.entry_id(step.node_id, 0);
    step.nbytes = g_.entry_bytes(step.src_eid);
    const DLDevice src = plan_.entry_devices[step.src_eid], dst = plan_.entry_devices[step.dst_eid];
    const bool src_host = IsHost(src), dst_host = IsHost(dst);
    const bool src_addressable = src_host || plan_.storage[g_.storage_ids[step.src_eid]].host_visible;
    const bool dst_addressable = dst_host || plan_.storage[g_.storage_ids[step.dst_eid]].host_visible;
    const int src_plugin = src_host ? -1 : facts_.plugin_of(src);
    const int dst_plugin = dst_host ? -1 : facts_.plugin_of(dst);
    step.copier = facts_.copy_provider(src, dst);
    if ((src_host && dst_host) || ((src_host || dst_host) && src_addressable && dst_addressable)) {
      step.kind = PlannedStep::Kind::kHostCopy;
      step.lane = kHostLane;
      if (options_.sequential && (!src_host || !dst_host))
        step.sync_lane = static_cast<int32_t>(LaneOf(src_host ? dst : src, false));
    } else if (step.copier && (src_host || dst_host || src_plugin == dst_plugin)) {
      step.kind = PlannedStep::Kind::kPluginCopy;
      step.lane = CopyLaneOf(src_host ? dst : src);
      // Blocking on the source's stream: the destination's earlier work must end first.
      if (options_.sequential && !src_host && !dst_host && !SameDevice(src, dst))
        step.sync_lane = static_cast<int32_t>(LaneOf(dst, false));
    } else {
      // Two plugins: the source's plugin copies into host staging, the
      // destination's out of it, each on the compute stream of its device.
      if (src_plugin < 0 || dst_plugin < 0)
        return Unimplemented("node " + std::to_string(step.node_id) + " ('" + node.name +
                             "', __copy): no plugin copies " + DeviceToString(src) + " -> " + DeviceToString(dst));
      step.kind = PlannedStep::Kind::kStagedCopy;
      step.lane = kHostLane;
      step.src_lane = LaneOf(src, false);
      step.dst_lane = LaneOf(dst, false);
    }
    return OkStatus();
  }

  void Schedule() {
    std::vector<ScheduleStep> schedule(plan_.steps.size());
    for (size_t i = 0; i < plan_.steps.size(); ++i) {
      const GraphNode& node = g_.nodes[plan_.steps[i].node_id];
      for (const GraphEntryRef& in : node.inputs) schedule[i].reads.push_back(g_.storage_ids[g_.entry_id(in)]);
      for (uint32_t k = 0; k < node.num_outputs; ++k)
        schedule[i].writes.push_back(g_.storage_ids[g_.entry_id(plan_.steps[i].node_id, k)]);
      schedule[i].lane = plan_.steps[i].lane;
    }
    // A stream waits only for events of its own device (a plugin may not order
    // work across its devices, e.g. two OpenCL platforms); other waits are the host's.
    std::vector<uint32_t> lane_group(plan_.lanes.size(), 0);
    for (uint32_t l = 1; l < plan_.lanes.size(); ++l) {
      lane_group[l] = l;
      for (uint32_t k = 1; k < l; ++k)
        if (SameDevice(plan_.lanes[k].device, plan_.lanes[l].device)) {
          lane_group[l] = lane_group[k];
          break;
        }
    }
    SchedulePlan s = PlanSchedule(schedule, lane_group, options_.sequential || plan_.host_only);
    plan_.order = std::move(s.order);
    for (size_t i = 0; i < plan_.steps.size(); ++i) {
      PlannedStep& step = plan_.steps[i];
      step.deps = std::move(s.deps[i]);
      if (options_.sequential) continue;
      step.host_waits = std::move(s.host_waits[i]);
      step.stream_waits = std::move(s.stream_waits[i]);
      step.records_event = s.records_event[i] && step.lane != kHostLane;
    }
    if (options_.sequential) return;
    // A run ends with host memory final: copies on device streams that read
    // or write host memory (inputs the caller may refill, CPU outputs) are waited for.
    std::vector<int64_t> last_touching_host(plan_.lanes.size(), -1);
    for (uint32_t i : plan_.order) {
      const PlannedStep& step = plan_.steps[i];
      if (step.kind == PlannedStep::Kind::kPluginCopy && step.lane != kHostLane &&
          (IsHost(plan_.entry_devices[step.src_eid]) || IsHost(plan_.entry_devices[step.dst_eid])))
        last_touching_host[step.lane] = i;
    }
    for (int64_t i : last_touching_host) {
      if (i < 0) continue;
      plan_.steps[static_cast<size_t>(i)].records_event = true;
      plan_.final_waits.push_back(static_cast<uint32_t>(i));
    }
  }

  const Graph& g_;
  const GraphPlanOptions& options_;
  const PlanDeviceFacts& facts_;
  GraphPlan plan_;
  std::vector<std::pair<DLDevice, bool>> shares_host_;
};

}  // namespace

Result<std::vector<DLDevice>> PlaceEntries(const Graph& graph, const std::vector<DLDevice>& devices) {
  if (devices.empty()) return InvalidArgument("an executor needs at least one device");
  std::vector<DLDevice> placed(graph.num_entries(), devices[0]);
  if (graph.device_types.empty()) return placed;
  for (uint32_t e = 0; e < graph.num_entries(); ++e) {
    const int32_t type = graph.device_types[e];
    auto it = std::find_if(devices.begin(), devices.end(), [&](const DLDevice& d) { return d.device_type == type; });
    if (it == devices.end()) {
      std::string listed;
      for (const DLDevice& d : devices) listed += (listed.empty() ? "" : ", ") + DeviceToString(d);
      return InvalidArgument("the graph places entry " + std::to_string(e) + " on " + DeviceTypeName(type) +
                             " but the executor's devices are " + listed + " (add --device " + DeviceTypeName(type) +
                             ")");
    }
    placed[e] = *it;
  }
  return placed;
}

Result<GraphPlan> PlanGraph(const Graph& graph, const GraphPlanOptions& options, const PlanDeviceFacts& facts) {
  return Planner(graph, options, facts).Plan();
}

}  // namespace hetrt
