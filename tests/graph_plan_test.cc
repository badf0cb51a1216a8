// The graph executor's plan is pure data: placement, storage, lanes, copy
// routes and waits follow from the graph, the device list and a table of
// device facts. No plugin is loaded here.
#include <gtest/gtest.h>

#include <map>

#include "hetrt/exec/graph_plan.h"
#include "test_support.h"

namespace hetrt {
namespace {

constexpr DLDevice kCpu{kDLCPU, 0};
constexpr DLDevice kCl{kDLOpenCL, 0};
constexpr DLDevice kVk{kDLVulkan, 0};

// x (cpu) -> __copy -> [dev] add -> __copy -> y (cpu); `dev` is a device type.
Graph CopyInKernelCopyOut(int dev) {
  const std::string d = std::to_string(dev);
  const std::string json = R"({"nodes": [
      {"op": "null", "name": "x", "inputs": []},
      {"op": "tvm_op", "name": "to_dev", "inputs": [[0, 0, 0]],
       "attrs": {"func_name": "__copy", "num_inputs": "1", "num_outputs": "1"}},
      {"op": "tvm_op", "name": "add", "inputs": [[1, 0, 0]],
       "attrs": {"func_name": "fused_add", "num_inputs": "1", "num_outputs": "1"}},
      {"op": "tvm_op", "name": "to_host", "inputs": [[2, 0, 0]],
       "attrs": {"func_name": "__copy", "num_inputs": "1", "num_outputs": "1"}},
      {"op": "tvm_op", "name": "host_add", "inputs": [[3, 0, 0]],
       "attrs": {"func_name": "fused_add", "num_inputs": "1", "num_outputs": "1"}}],
    "arg_nodes": [0], "heads": [[4, 0, 0]], "node_row_ptr": [0, 1, 2, 3, 4, 5],
    "attrs": {"dltype": ["list_str", ["float32", "float32", "float32", "float32", "float32"]],
              "shape": ["list_shape", [[4], [4], [4], [4], [4]]],
              "storage_id": ["list_int", [0, 1, 2, 3, 4]],
              "device_index": ["list_int", [1, )" +
                           d + ", " + d + R"(, 1, 1]]}})";
  return ParseGraphJson(json, "test graph").value();
}

// A table of facts: which devices share host memory or have copy streams,
// which plugin serves each type, and whether a plugin copies to another's device.
struct Facts {
  std::map<int, bool> shares_host, copy_streams;
  std::map<int, int> plugin_of{{kDLCPU, 0}, {kDLOpenCL, 1}, {kDLVulkan, 2}};
  bool cross_plugin_copies = false;
  PlanDeviceFacts Get() const {
    PlanDeviceFacts f;
    f.shares_host_memory = [this](DLDevice d) {
      return shares_host.count(d.device_type) && shares_host.at(d.device_type);
    };
    f.has_copy_streams = [this](DLDevice d) {
      return copy_streams.count(d.device_type) && copy_streams.at(d.device_type);
    };
    f.plugin_of = [this](DLDevice d) { return plugin_of.at(d.device_type); };
    f.copy_provider = [this](DLDevice src, DLDevice dst) -> std::optional<DLDevice> {
      if (src.device_type != kDLCPU && dst.device_type != kDLCPU && src.device_type != dst.device_type &&
          !cross_plugin_copies)
        return std::nullopt;
      return src.device_type != kDLCPU ? src : dst;
    };
    return f;
  }
};

GraphPlanOptions Devices(std::vector<DLDevice> devices, bool sequential = false, bool staged = false) {
  return GraphPlanOptions{std::move(devices), sequential, staged};
}

TEST(GraphPlan, EntriesGoToTheFirstListedDeviceOfTheirType) {
  const Graph g = CopyInKernelCopyOut(kDLOpenCL);
  HETRT_ASSERT_OK_AND_ASSIGN(auto placed, PlaceEntries(g, {kCpu, DLDevice{kDLOpenCL, 1}, kCl}));
  EXPECT_EQ(placed[0].device_type, kDLCPU);
  EXPECT_EQ(placed[1].device_type, kDLOpenCL);
  EXPECT_EQ(placed[1].device_id, 1) << "the first listed OpenCL device";
  auto missing = PlaceEntries(g, {kCpu});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(missing.status().message().find("entry 1"), std::string::npos) << missing.status().message();
  EXPECT_NE(missing.status().message().find("--device opencl"), std::string::npos) << missing.status().message();
}

TEST(GraphPlan, DeviceSharingHostMemoryGetsHostVisibleStorageAndMemcpyCopies) {
  Facts facts;
  facts.shares_host[kDLOpenCL] = true;
  HETRT_ASSERT_OK_AND_ASSIGN(GraphPlan plan,
                             PlanGraph(CopyInKernelCopyOut(kDLOpenCL), Devices({kCpu, kCl}), facts.Get()));
  ASSERT_EQ(plan.steps.size(), 4u);
  EXPECT_TRUE(plan.storage[1].host_visible);
  EXPECT_FALSE(plan.storage[0].host_visible) << "host storage is host memory already";
  EXPECT_EQ(plan.steps[0].kind, PlannedStep::Kind::kHostCopy);
  EXPECT_EQ(plan.steps[0].lane, 0u);
  EXPECT_EQ(plan.steps[2].kind, PlannedStep::Kind::kHostCopy);
  ASSERT_TRUE(plan.steps[0].copier.has_value()) << "the plugin copy stays ready for zero-copy rebinding";
  EXPECT_FALSE(plan.host_only);
  // The device kernel runs on OpenCL's compute lane; the host copy after it waits for its event.
  EXPECT_EQ(plan.lanes.size(), 2u);
  EXPECT_EQ(plan.steps[1].lane, 1u);
  EXPECT_TRUE(plan.steps[1].records_event);
  EXPECT_EQ(plan.steps[2].host_waits, std::vector<uint32_t>{1});
}

TEST(GraphPlan, StagedCopiesOptionRoutesThroughThePluginOnItsCopyStream) {
  Facts facts;
  facts.shares_host[kDLOpenCL] = true;
  facts.copy_streams[kDLOpenCL] = true;
  HETRT_ASSERT_OK_AND_ASSIGN(GraphPlan plan,
                             PlanGraph(CopyInKernelCopyOut(kDLOpenCL), Devices({kCpu, kCl}, false, true), facts.Get()));
  EXPECT_FALSE(plan.storage[1].host_visible);
  ASSERT_EQ(plan.steps[0].kind, PlannedStep::Kind::kPluginCopy);
  const PlannedLane& lane = plan.lanes[plan.steps[0].lane];
  EXPECT_TRUE(lane.copy);
  EXPECT_EQ(lane.device.device_type, kDLOpenCL);
  // The kernel on the compute stream waits for the copy stream's event, on the device.
  EXPECT_EQ(plan.steps[1].stream_waits, std::vector<uint32_t>{0});
  // Copies on device streams that touch host memory are waited for before a run returns.
  EXPECT_FALSE(plan.final_waits.empty());
  for (uint32_t w : plan.final_waits) EXPECT_TRUE(plan.steps[w].records_event);
}

TEST(GraphPlan, SequentialRunsKeepNodeOrderWithoutEventsAndSyncBeforeCopies) {
  Facts facts;
  HETRT_ASSERT_OK_AND_ASSIGN(GraphPlan plan,
                             PlanGraph(CopyInKernelCopyOut(kDLOpenCL), Devices({kCpu, kCl}, true), facts.Get()));
  EXPECT_EQ(plan.order, (std::vector<uint32_t>{0, 1, 2, 3}));
  for (const PlannedStep& s : plan.steps) {
    EXPECT_FALSE(s.records_event);
    EXPECT_TRUE(s.host_waits.empty() && s.stream_waits.empty());
    EXPECT_FALSE(plan.lanes[s.lane].copy) << "no copy streams in sequential runs";
  }
  EXPECT_TRUE(plan.final_waits.empty());
}

TEST(GraphPlan, TwoPluginsThatCannotCopyToEachOtherStageThroughTheHost) {
  // x (cpu) -> opencl -> vulkan: the middle copy has no direct route.
  const std::string json = R"({"nodes": [
      {"op": "null", "name": "x", "inputs": []},
      {"op": "tvm_op", "name": "to_cl", "inputs": [[0, 0, 0]],
       "attrs": {"func_name": "__copy", "num_inputs": "1", "num_outputs": "1"}},
      {"op": "tvm_op", "name": "to_vk", "inputs": [[1, 0, 0]],
       "attrs": {"func_name": "__copy", "num_inputs": "1", "num_outputs": "1"}}],
    "arg_nodes": [0], "heads": [[2, 0, 0]], "node_row_ptr": [0, 1, 2, 3],
    "attrs": {"dltype": ["list_str", ["float32", "float32", "float32"]],
              "shape": ["list_shape", [[4], [4], [4]]], "storage_id": ["list_int", [0, 1, 2]],
              "device_index": ["list_int", [1, 4, 7]]}})";
  const Graph g = ParseGraphJson(json, "test graph").value();
  Facts facts;
  HETRT_ASSERT_OK_AND_ASSIGN(GraphPlan plan, PlanGraph(g, Devices({kCpu, kCl, kVk}), facts.Get()));
  const PlannedStep& staged = plan.steps[1];
  ASSERT_EQ(staged.kind, PlannedStep::Kind::kStagedCopy);
  EXPECT_EQ(staged.lane, 0u) << "the host drives both halves";
  EXPECT_EQ(plan.lanes[staged.src_lane].device.device_type, kDLOpenCL);
  EXPECT_EQ(plan.lanes[staged.dst_lane].device.device_type, kDLVulkan);
  EXPECT_EQ(staged.nbytes, 16u);
  facts.cross_plugin_copies = true;
  HETRT_ASSERT_OK_AND_ASSIGN(GraphPlan direct, PlanGraph(g, Devices({kCpu, kCl, kVk}), facts.Get()));
  EXPECT_EQ(direct.steps[1].kind, PlannedStep::Kind::kStagedCopy) << "a copy between two plugins is staged even "
                                                                     "when one could copy: neither owns both sides";
  facts.plugin_of[kDLVulkan] = 1;  // one plugin serving both: it copies directly
  HETRT_ASSERT_OK_AND_ASSIGN(GraphPlan same, PlanGraph(g, Devices({kCpu, kCl, kVk}), facts.Get()));
  EXPECT_EQ(same.steps[1].kind, PlannedStep::Kind::kPluginCopy);
}

TEST(GraphPlan, CpuOnlyGraphIsHostOnlyWithOneLaneAndNoWaits) {
  const Graph g = CopyInKernelCopyOut(kDLCPU);
  Facts facts;
  HETRT_ASSERT_OK_AND_ASSIGN(GraphPlan plan, PlanGraph(g, Devices({kCpu}), facts.Get()));
  EXPECT_EQ(plan.lanes.size(), 1u);
  // __copy between two host entries is a memcpy on the host lane.
  EXPECT_EQ(plan.steps[0].kind, PlannedStep::Kind::kHostCopy);
  EXPECT_FALSE(plan.host_only) << "a graph with __copy nodes takes the step loop";
  for (const PlannedStep& s : plan.steps) EXPECT_TRUE(s.host_waits.empty() && s.stream_waits.empty());
  EXPECT_EQ(plan.storage.size(), 5u);
  EXPECT_EQ(plan.storage[2].bytes, 16u);
}

}  // namespace
}  // namespace hetrt
