// The graph executor's plan, worked out once at create time from the graph,
// the device list and a few facts about the devices: where every entry lives
// (placement by device_index), one buffer per storage id, the lanes (the host
// thread and device streams), and every step a run issues (kernels and the
// route of each __copy) in order with its waits. Pure data: it allocates
// nothing and calls no plugin, so it is unit-tested with a table of facts.
#pragma once

#include <dlpack/dlpack.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "hetrt/base/status.h"
#include "hetrt/formats/graph.h"

namespace hetrt {

// What the plan asks of the devices (the executor answers from its plugins).
struct PlanDeviceFacts {
  // The device's memory is host memory: its storage is host-visible and
  // copies between it and the host are memcpys.
  std::function<bool(DLDevice)> shares_host_memory;
  // Copies to and from the device get a stream of their own (overlapping compute).
  std::function<bool(DLDevice)> has_copy_streams;
  // An id of the plugin instance serving the device (equal ids: one plugin).
  std::function<int(DLDevice)> plugin_of;
  // The device (src or dst) whose plugin copies src -> dst directly; nullopt
  // when no plugin can (the copy is staged through host memory).
  std::function<std::optional<DLDevice>(DLDevice src, DLDevice dst)> copy_provider;
};

struct GraphPlanOptions {
  std::vector<DLDevice> devices{DLDevice{kDLCPU, 0}};
  bool sequential = false;     // one step at a time, every copy blocking
  bool staged_copies = false;  // copies through plugins even where memcpy would do
};

struct StoragePlan {
  DLDevice device{kDLCPU, 0};
  uint64_t bytes = 0;             // its largest entry
  std::vector<uint32_t> entries;  // the eids viewing it (empty: unused)
  bool host_visible = false;      // ask the plugin for host-addressable memory
};

// Lane 0 is the host thread; the others are streams of one device.
struct PlannedLane {
  DLDevice device{kDLCPU, 0};
  bool copy = false;  // a copy stream (else the device's compute stream)
};

struct PlannedStep {
  enum class Kind : uint8_t {
    kKernel,      // a packed function (device kernels enqueue on the lane's stream)
    kHostCopy,    // memcpy between host addresses (host or host-visible memory)
    kPluginCopy,  // a plugin's copy() on the lane's stream
    kStagedCopy,  // two plugins: src -> host staging -> dst, each on its compute lane
  };
  Kind kind = Kind::kKernel;
  uint32_t node_id = 0;
  uint32_t lane = 0;
  // Copies: entries, bytes, and the device whose plugin copies (kHostCopy:
  // the fallback when zero-copy binding takes a host address away).
  uint32_t src_eid = 0, dst_eid = 0;
  uint64_t nbytes = 0;
  std::optional<DLDevice> copier;
  uint32_t src_lane = 0, dst_lane = 0;  // kStagedCopy: each side's compute lane
  int32_t sync_lane = -1;               // sequential runs: finish this lane's work first
  // Earlier steps on other lanes it must follow; the host's waits for them
  // and its stream's (asynchronous runs only).
  std::vector<uint32_t> deps, host_waits, stream_waits;
  bool records_event = false;  // another lane waits for it
};

struct GraphPlan {
  std::vector<DLDevice> entry_devices;  // per eid
  std::vector<StoragePlan> storage;     // per storage id
  std::vector<PlannedLane> lanes;
  std::vector<PlannedStep> steps;     // one per op node that does something, in node order
  std::vector<uint32_t> order;        // issue order of steps
  std::vector<uint32_t> final_waits;  // steps a run waits for before it returns (host memory final)
  bool host_only = true;              // every step is a CPU kernel
};

// Each entry's device: the first listed device of the entry's device_index
// type (the first device when the graph has none). INVALID_ARGUMENT names the
// entry and the missing device type.
Result<std::vector<DLDevice>> PlaceEntries(const Graph& graph, const std::vector<DLDevice>& devices);

Result<GraphPlan> PlanGraph(const Graph& graph, const GraphPlanOptions& options, const PlanDeviceFacts& facts);

}  // namespace hetrt
