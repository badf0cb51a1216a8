#include <gtest/gtest.h>

#include <random>
#include <set>

#include "hetrt/exec/graph_executor.h"
#include "hetrt/graph_builder.h"
#include "hetrt/module/module_loader.h"
#include "test_support.h"

namespace hetrt {
namespace {

using Spec = GraphBuilder::TensorSpec;
const Spec kVec{{1, 10}, {kDLFloat, 32, 1}};

// Last node that reads each entry (the defining node when nobody does); heads live to the end.
std::vector<uint32_t> LastUse(const Graph& g) {
  std::vector<uint32_t> last(g.num_entries(), 0);
  for (uint32_t nid = 0; nid < g.nodes.size(); ++nid)
    for (uint32_t k = g.node_row_ptr[nid]; k < g.node_row_ptr[nid + 1]; ++k) last[k] = nid;
  for (uint32_t nid = 0; nid < g.nodes.size(); ++nid)
    for (const auto& in : g.nodes[nid].inputs) last[g.entry_id(in)] = std::max(last[g.entry_id(in)], nid);
  for (const auto& h : g.heads) last[g.entry_id(h)] = static_cast<uint32_t>(g.nodes.size());
  for (uint32_t nid : g.arg_nodes) last[g.entry_id(nid, 0)] = static_cast<uint32_t>(g.nodes.size());
  return last;
}

uint32_t DefiningNode(const Graph& g, uint32_t eid) {
  uint32_t nid = 0;
  while (g.node_row_ptr[nid + 1] <= eid) ++nid;
  return nid;
}

// Storage is never shared between live tensors, nor across devices.
void ExpectStorageSafe(const Graph& g) {
  const auto last = LastUse(g);
  for (uint32_t a = 0; a < g.num_entries(); ++a)
    for (uint32_t b = a + 1; b < g.num_entries(); ++b) {
      if (g.storage_ids[a] != g.storage_ids[b]) continue;
      EXPECT_EQ(g.device_types[a], g.device_types[b]) << "entries " << a << " and " << b;
      const uint32_t da = DefiningNode(g, a), db = DefiningNode(g, b);
      const bool disjoint = (da < db && last[a] < db) || (db < da && last[b] < da);
      EXPECT_TRUE(disjoint) << "entries " << a << " [" << da << "," << last[a] << "] and " << b << " [" << db << ","
                            << last[b] << "] share storage " << g.storage_ids[a] << " while both live";
    }
}

// Every cross-device edge goes through exactly one __copy, and copies go where their consumer is.
void ExpectCopiesAtEveryCrossing(const Graph& g) {
  for (uint32_t nid = 0; nid < g.nodes.size(); ++nid) {
    const GraphNode& n = g.nodes[nid];
    if (n.kind != GraphNode::Kind::kOp) continue;
    const int32_t here = g.device_types[g.entry_id(nid, 0)];
    for (const auto& in : n.inputs) {
      const int32_t there = g.device_types[g.entry_id(in)];
      if (n.func_name == "__copy") {
        EXPECT_NE(here, there) << "a __copy that crosses nothing at node " << nid;
        EXPECT_NE(g.nodes[in.node_id].func_name, "__copy") << "two copies in a row at node " << nid;
      } else {
        EXPECT_EQ(here, there) << "node " << nid << " ('" << n.name << "') reads another device without a __copy";
      }
    }
  }
  // At most one copy per (value, destination device).
  std::set<std::tuple<uint32_t, uint32_t, int32_t>> seen;
  for (uint32_t nid = 0; nid < g.nodes.size(); ++nid)
    if (g.nodes[nid].func_name == "__copy") {
      const auto& in = g.nodes[nid].inputs[0];
      EXPECT_TRUE(seen.insert({in.node_id, in.index, g.device_types[g.entry_id(nid, 0)]}).second)
          << "a value is copied to the same device twice";
    }
}

TEST(GraphBuilder, InsertsOneCopyPerCrossingAndPlacesEveryEntry) {
  GraphBuilder b;
  auto x = b.AddInput("x", kVec, kDLCPU);
  auto y = b.AddInput("y", kVec, kDLOpenCL);
  auto s = b.AddOp1("s", "add", {x, y}, kVec, kDLOpenCL);  // x crosses to OpenCL
  auto t = b.AddOp1("t", "add", {x, s}, kVec, kDLOpenCL);  // x again: the same copy is reused
  auto u = b.AddOp1("u", "log", {t}, kVec, kDLCPU);        // back to the CPU
  auto v = b.AddOp1("v", "add", {u, x}, kVec, kDLCPU);
  b.AddOutput(v);
  b.AddOutput(t);
  HETRT_ASSERT_OK_AND_ASSIGN(auto built, b.Build());
  const Graph& g = built.graph;
  int copies = 0;
  for (const auto& n : g.nodes) copies += n.func_name == "__copy";
  EXPECT_EQ(copies, 2);
  ExpectCopiesAtEveryCrossing(g);
  ExpectStorageSafe(g);
  EXPECT_EQ(g.heads.size(), 2u);
}

TEST(GraphBuilder, RandomGraphsKeepStorageSafeAndCopiesExact) {
  std::mt19937 rng(42);
  for (int trial = 0; trial < 200; ++trial) {
    GraphBuilder b;
    std::vector<GraphBuilder::Value> values;
    const int32_t devices[] = {kDLCPU, kDLOpenCL, kDLCUDA};
    for (int i = 0; i < 2; ++i)
      values.push_back(b.AddInput("in" + std::to_string(i),
                                  {{1, 1 + static_cast<int64_t>(rng() % 8)}, {kDLFloat, 32, 1}}, devices[rng() % 3]));
    const int ops = 3 + static_cast<int>(rng() % 20);
    for (int i = 0; i < ops; ++i) {
      std::vector<GraphBuilder::Value> inputs;
      for (int k = 0, n = 1 + static_cast<int>(rng() % 3); k < n; ++k) inputs.push_back(values[rng() % values.size()]);
      std::vector<Spec> outputs;
      for (int k = 0, n = 1 + static_cast<int>(rng() % 2); k < n; ++k)
        outputs.push_back({{1, 1 + static_cast<int64_t>(rng() % 8)}, {kDLFloat, 32, 1}});
      for (auto v : b.AddOp("op" + std::to_string(i), "f", inputs, outputs, devices[rng() % 3])) values.push_back(v);
    }
    b.AddOutput(values.back());
    if (rng() % 2) b.AddOutput(values[rng() % values.size()]);
    HETRT_ASSERT_OK_AND_ASSIGN(auto built, b.Build());
    ExpectCopiesAtEveryCrossing(built.graph);
    ExpectStorageSafe(built.graph);
    if (::testing::Test::HasFailure()) {
      ADD_FAILURE() << "trial " << trial << ": " << built.graph_json;
      return;
    }
  }
}

TEST(GraphBuilder, AChainOfTvmKernelsReusesStorageAndComputesTheSum) {
  HETRT_REQUIRE_FIXTURE(dir, "add3");
  GraphBuilder b;
  auto acc = b.AddInput("x", kVec);
  for (int i = 0; i < 6; ++i) {
    Tensor w = Tensor::EmptyHost({1, 10}, {kDLFloat, 32, 1}).value();
    for (int k = 0; k < 10; ++k) w.data_as<float>()[k] = static_cast<float>(i + 1);
    // Suffix appended, not prepended: GCC 12 warns falsely (-Warray-bounds,
    // bug 105329) on "w" + std::to_string(i) inlined here.
    const std::string index = std::to_string(i);
    auto p = b.AddParam(std::string("w").append(index), w);
    acc = b.AddOp1(std::string("add").append(index), "tvmgen_default_fused_add", {acc, p}, kVec);
  }
  b.AddOutput(acc);
  HETRT_ASSERT_OK_AND_ASSIGN(auto built, b.Build());
  ExpectStorageSafe(built.graph);
  // 7 inputs/params keep their own storage; 6 intermediates need only 2 buffers.
  EXPECT_EQ(built.graph.num_storage(), 7u + 2u);
  HETRT_ASSERT_OK_AND_ASSIGN(auto lib, LoadModuleFile(dir + "/lib.so"));
  GraphExecutor::Options options;
  options.params = std::make_shared<const std::vector<NamedTensor>>(built.params);
  HETRT_ASSERT_OK_AND_ASSIGN(auto ex, GraphExecutor::Create(built.graph_json, lib, options));
  Tensor x = Tensor::EmptyHost({1, 10}, {kDLFloat, 32, 1}).value();
  for (int k = 0; k < 10; ++k) x.data_as<float>()[k] = static_cast<float>(k);
  HETRT_ASSERT_OK(ex->SetInput("x", x));
  HETRT_ASSERT_OK(ex->Run());
  HETRT_ASSERT_OK_AND_ASSIGN(Tensor y, ex->GetOutput(0));
  for (int k = 0; k < 10; ++k) EXPECT_EQ(y.data_as<float>()[k], static_cast<float>(k) + 21.f);
}

TEST(GraphBuilder, RejectsValuesFromLaterNodesAndEmptyOutputs) {
  GraphBuilder b;
  auto x = b.AddInput("x", kVec);
  b.AddOp1("a", "f", {GraphBuilder::Value{5, 0}}, kVec);
  b.AddOutput(x);
  EXPECT_FALSE(b.Build().ok());
  GraphBuilder c;
  c.AddInput("x", kVec);
  EXPECT_FALSE(c.Build().ok());
}

}  // namespace
}  // namespace hetrt
