// The asynchronous executor's plan, worked out once at create time: which
// steps depend on which across lanes (the host thread, device streams), the
// order in which the host thread issues them, and the few event waits that
// order needs. Pure logic over storage ids, so it is property-tested alone.
#pragma once

#include <cstdint>
#include <vector>

namespace hetrt {

inline constexpr uint32_t kHostLane = 0;

struct ScheduleStep {
  // kHostLane: runs on the host thread. Other lanes are in-order device
  // streams; the host only enqueues their work.
  uint32_t lane = kHostLane;
  std::vector<uint32_t> reads;   // storage ids the step reads
  std::vector<uint32_t> writes;  // storage ids the step writes
};

struct SchedulePlan {
  // Step indices in the order the host thread issues them (a topological
  // order of `deps`).
  std::vector<uint32_t> order;
  // Per step: earlier steps on other lanes it must follow (read after write,
  // write after read, write after write on the same storage).
  std::vector<std::vector<uint32_t>> deps;
  // Per step: events the host waits for before issuing it, and events its
  // stream waits for (pruned: a wait already implied by an earlier wait on the
  // same in-order lane is left out).
  std::vector<std::vector<uint32_t>> host_waits;
  std::vector<std::vector<uint32_t>> stream_waits;
  // Per step: whether anyone waits for it (it records an event each run).
  std::vector<bool> records_event;
};

// `lane_group[l]` names the plugin instance behind lane l: a stream can wait
// only for events of its own group, other waits become host waits.
// `keep_order` issues steps in their given order (sequential runs, tests).
SchedulePlan PlanSchedule(const std::vector<ScheduleStep>& steps, const std::vector<uint32_t>& lane_group,
                          bool keep_order);

}  // namespace hetrt
