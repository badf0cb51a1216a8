// The graph executor's run-time records: the call frames of kernels, the
// lanes with their streams, and the steps the run loop issues, each built from
// the GraphPlan at create time (graph_lanes.cc). Internal to the executor;
// public only because GraphExecutor holds them.
#pragma once

#include <string>
#include <vector>

#include "hetrt/base/tensor.h"
#include "hetrt/device/event.h"
#include "hetrt/device/prepared_copy.h"
#include "hetrt/device/stream.h"
#include "hetrt/exec/graph_plan.h"

namespace hetrt {

// A kernel's call frame, resolved once: function and argument slice.
struct KernelCall {
  hetrt_packed_cfunc_t fn = nullptr;
  void* resource = nullptr;
  int32_t num_args = 0;
  uint32_t args_begin = 0;
};

// The host thread (lane 0, no device) or one device stream the executor created.
struct GraphLane {
  Device device;  // invalid for the host lane
  Stream stream;
  bool copy = false;  // a copy stream
  std::string name;
  bool is_host() const { return !device.valid(); }
};

// One planned step as the run loop issues it.
struct GraphStep {
  PlannedStep::Kind kind = PlannedStep::Kind::kKernel;
  uint32_t node_id = 0;
  uint32_t lane = 0;
  KernelCall call;                                       // kernels
  Event event;                                           // recorded after the step when another lane waits for it
  std::vector<uint32_t> host_waits, stream_waits, deps;  // step indices
  // Copies.
  DLTensor* src = nullptr;
  DLTensor* dst = nullptr;
  uint32_t src_sid = 0, dst_sid = 0;
  uint64_t nbytes = 0;
  int32_t sync_lane = -1;  // sequential mode: finish this lane's work first
  PreparedCopy copy;       // kPluginCopy; kHostCopy's fallback; kStagedCopy: src -> staging
  PreparedCopy copy_out;   // kStagedCopy: staging -> dst
  Tensor staging;
  void* staging_host = nullptr;
  // Timing events of profiled runs (created on first use).
  Event timing_start, timing_end;
};

}  // namespace hetrt
