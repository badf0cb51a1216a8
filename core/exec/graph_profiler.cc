// Profiled runs: every node at its true place in time. Host nodes by the host
// clock; device nodes by timing events around them on their stream, mapped
// onto the host clock with the plugin's device clock.
#include <algorithm>

#include "hetrt/base/host_clock.h"
#include "hetrt/base/last_error.h"
#include "exec/graph_executor_impl.h"
#include "tvm_abi/backend_routes.h"

namespace hetrt {

Status GraphExecutor::RunProfiled(RunProfile* profile) { return impl_->RunProfiled(profile); }

Status GraphExecutor::Impl::RunProfiled(RunProfile* profile) {
  *profile = RunProfile{};
  for (const Lane& lane : lanes_) profile->lanes.push_back(lane.name);
  if (lanes_.empty()) profile->lanes.push_back("host");
  HETRT_RETURN_IF_ERROR(FinishPendingRun());
  for (const Lane& lane : lanes_)
    if (!lane.is_host() && !lane.device.CanTime())
      return Unimplemented("plugin '" + lane.device.plugin()->name() +
                           "' cannot time device work (it needs events, event_timestamp and device_clock)");
  // Timing events around every device step, made once.
  for (Step& step : steps_) {
    const Lane& lane = lanes_[step.lane];
    if (lane.is_host() || step.timing_start) continue;
    HETRT_ASSIGN_OR_RETURN(step.timing_start, Event::Create(lane.device, HETRT_EVENT_TIMING));
    HETRT_ASSIGN_OR_RETURN(step.timing_end, Event::Create(lane.device, HETRT_EVENT_TIMING));
  }
  ClearLastError();
  BackendRoutesScope backend(options_.plugins ? options_.plugins->backend_routes() : nullptr);
  profile->nodes.reserve(steps_.size());
  profile->run_start_ns = HostNowNs();
  if (!steps_.empty()) HETRT_RETURN_IF_ERROR(RunSteps<true>(profile));
  HETRT_RETURN_IF_ERROR(FinishPendingRun());
  HETRT_RETURN_IF_ERROR(CopyOutputsBoundToInputs());
  // Device timestamps onto the host clock: one clock reading per lane device.
  std::vector<int64_t> offset(lanes_.size(), 0);
  for (uint32_t l = 1; l < lanes_.size(); ++l) {
    HETRT_ASSIGN_OR_RETURN(Device::ClockReading clock, lanes_[l].device.Clock());
    offset[l] = static_cast<int64_t>(clock.host_ns) - static_cast<int64_t>(clock.device_ns);
    profile->clock_uncertainty_ns = std::max(profile->clock_uncertainty_ns, clock.uncertainty_ns);
  }
  std::vector<uint64_t> lane_end(lanes_.size(), 0);
  for (size_t k = 0; k < plan_.order.size(); ++k) {
    const Step& step = steps_[plan_.order[k]];
    NodeTrace& t = profile->nodes[k];
    if (!lanes_[step.lane].is_host()) {
      HETRT_ASSIGN_OR_RETURN(uint64_t start, step.timing_start.Timestamp());
      HETRT_ASSIGN_OR_RETURN(uint64_t end, step.timing_end.Timestamp());
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

}  // namespace hetrt
