#include "hetrt/exec/schedule_plan.h"

#include <algorithm>
#include <unordered_map>

namespace hetrt {
namespace {

void AddUnique(std::vector<uint32_t>& v, uint32_t x) {
  if (std::find(v.begin(), v.end(), x) == v.end()) v.push_back(x);
}

// Hazards in the given (sequential) order: read after write, write after
// read, write after write on one storage id.
std::vector<std::vector<uint32_t>> Hazards(const std::vector<ScheduleStep>& steps) {
  struct Access {
    int64_t writer = -1;
    std::vector<uint32_t> readers;  // since the last write
  };
  std::unordered_map<uint32_t, Access> storage;
  std::vector<std::vector<uint32_t>> deps(steps.size());
  auto depend = [&](uint32_t step, int64_t on) {
    if (on >= 0 && static_cast<uint32_t>(on) != step) AddUnique(deps[step], static_cast<uint32_t>(on));
  };
  for (uint32_t i = 0; i < steps.size(); ++i) {
    for (uint32_t sid : steps[i].reads) depend(i, storage[sid].writer);
    for (uint32_t sid : steps[i].writes) {
      Access& a = storage[sid];
      depend(i, a.writer);
      for (uint32_t r : a.readers) depend(i, r);
    }
    for (uint32_t sid : steps[i].reads) AddUnique(storage[sid].readers, i);
    for (uint32_t sid : steps[i].writes) {
      Access& a = storage[sid];
      a.writer = i;
      a.readers.clear();
    }
  }
  for (auto& d : deps) std::sort(d.begin(), d.end());
  return deps;
}

}  // namespace

SchedulePlan PlanSchedule(const std::vector<ScheduleStep>& steps, const std::vector<uint32_t>& lane_group,
                          bool keep_order) {
  SchedulePlan plan;
  const size_t n = steps.size();
  const std::vector<std::vector<uint32_t>> hazards = Hazards(steps);
  // Only dependencies across lanes need events; the rest is issue order.
  plan.deps.resize(n);
  for (uint32_t i = 0; i < n; ++i)
    for (uint32_t d : hazards[i])
      if (steps[d].lane != steps[i].lane) plan.deps[i].push_back(d);
  // A device stream keeps its steps in their given order; host steps may be
  // reordered within their hazards.
  std::vector<int64_t> lane_prev(n, -1);
  {
    std::unordered_map<uint32_t, int64_t> last;
    for (uint32_t i = 0; i < n; ++i) {
      if (steps[i].lane == kHostLane) continue;
      auto it = last.find(steps[i].lane);
      lane_prev[i] = it == last.end() ? -1 : it->second;
      last[steps[i].lane] = i;
    }
  }
  auto group_of = [&](uint32_t lane) { return lane < lane_group.size() ? lane_group[lane] : lane; };
  // A device step may be issued once every host step it depends on has run;
  // device deps of the same group become stream waits, others host waits.
  auto needs_host_wait = [&](uint32_t step, uint32_t dep) {
    const uint32_t lane = steps[step].lane, dep_lane = steps[dep].lane;
    if (dep_lane == kHostLane) return false;  // issue order covers it
    return lane == kHostLane || group_of(lane) != group_of(dep_lane);
  };

  // Issue order: list scheduling. Among ready steps prefer device work (so
  // streams fill early), then host work that device work waits for, then host
  // work that needs no new host wait, then the earliest step.
  std::vector<bool> issued(n, false);
  std::vector<uint32_t> position(n, 0);  // index of a step within its lane's issue order
  std::unordered_map<uint32_t, uint32_t> lane_count;
  // host_waited[lane] = highest position of `lane` the host has waited for (+1).
  std::unordered_map<uint32_t, uint32_t> host_waited;
  auto ready = [&](uint32_t i) {
    if (issued[i] || (lane_prev[i] >= 0 && !issued[static_cast<size_t>(lane_prev[i])])) return false;
    for (uint32_t d : hazards[i])
      if (!issued[d]) return false;
    return true;
  };
  auto waits_anew = [&](uint32_t i) {
    for (uint32_t d : plan.deps[i])
      if (needs_host_wait(i, d) && host_waited[steps[d].lane] < position[d] + 1) return true;
    return false;
  };
  // Host steps device work waits for (copies to a device) go first among host steps.
  std::vector<bool> feeds_device(n, false);
  for (uint32_t i = 0; i < n; ++i)
    if (steps[i].lane != kHostLane)
      for (uint32_t d : plan.deps[i])
        if (steps[d].lane == kHostLane) feeds_device[d] = true;
  plan.order.reserve(n);
  uint32_t first_unissued = 0;
  while (plan.order.size() < n) {
    while (first_unissued < n && issued[first_unissued]) ++first_unissued;
    int64_t pick = -1;
    if (keep_order) {
      pick = first_unissued;
    } else {
      int64_t feeder = -1, host_free = -1, earliest = -1;
      for (uint32_t i = first_unissued; i < n && pick < 0; ++i) {
        if (!ready(i)) continue;
        if (steps[i].lane != kHostLane) {
          pick = i;
        } else if (!waits_anew(i)) {
          if (feeder < 0 && feeds_device[i]) feeder = i;
          if (host_free < 0) host_free = i;
        }
        if (earliest < 0) earliest = i;
      }
      if (pick < 0) pick = feeder >= 0 ? feeder : host_free >= 0 ? host_free : earliest;
    }
    const auto i = static_cast<uint32_t>(pick);
    issued[i] = true;
    position[i] = lane_count[steps[i].lane]++;
    for (uint32_t d : plan.deps[i])
      if (needs_host_wait(i, d)) host_waited[steps[d].lane] = std::max(host_waited[steps[d].lane], position[d] + 1);
    plan.order.push_back(i);
  }

  // Waits, pruned along the issue order: a lane that already waited for a
  // later point of another in-order lane need not wait again.
  plan.host_waits.assign(n, {});
  plan.stream_waits.assign(n, {});
  plan.records_event.assign(n, false);
  std::unordered_map<uint64_t, uint32_t> waited;  // (waiter lane or host, waited lane) -> position + 1
  auto key = [](uint64_t waiter, uint64_t lane) { return (waiter << 32) | lane; };
  constexpr uint64_t kHostWaiter = 0xffffffffu;
  for (uint32_t i : plan.order) {
    // Latest dep per waited lane and kind.
    for (uint32_t d : plan.deps[i]) {
      const bool host = needs_host_wait(i, d);
      if (!host && steps[d].lane == kHostLane) continue;
      const uint64_t k = key(host ? kHostWaiter : steps[i].lane, steps[d].lane);
      if (waited[k] >= position[d] + 1) continue;
      // Work issued after the host saw that point complete needs no stream wait.
      if (!host && waited[key(kHostWaiter, steps[d].lane)] >= position[d] + 1) continue;
      // Keep only the latest dep of that lane among this step's deps.
      bool superseded = false;
      for (uint32_t other : plan.deps[i])
        if (other != d && steps[other].lane == steps[d].lane && position[other] > position[d] &&
            needs_host_wait(i, other) == host)
          superseded = true;
      if (superseded) continue;
      waited[k] = position[d] + 1;
      (host ? plan.host_waits : plan.stream_waits)[i].push_back(d);
      plan.records_event[d] = true;
    }
  }
  return plan;
}

}  // namespace hetrt
