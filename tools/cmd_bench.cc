// `hetrt bench MODEL`: per-node and per-device timings (mean, median, p99)
// over repeated runs, and a Chrome trace (chrome://tracing, Perfetto).
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

#include "commands.h"
#include "hetrt/base/dtype.h"
#include "hetrt/exec/open_model.h"
#include "hetrt/exec/relax_executor.h"

namespace hetrt::cli {
namespace {

struct BenchArgs : ModelArgs {
  std::string trace;
  int repeat = 50;
  int warmup = 3;
};

std::string ShapesOf(const Graph& g, const std::vector<uint32_t>& eids) {
  std::string s;
  for (uint32_t e : eids)
    s += (s.empty() ? "" : " ") + ShapeToString(g.shapes[e]) + " " + DataTypeToString(g.dtypes[e]);
  return s;
}

// One run as Chrome trace "X" events at their true times, one track per lane.
nlohmann::json TraceOf(const GraphExecutor& ex, const GraphExecutor::RunProfile& run) {
  const Graph& g = ex.graph();
  nlohmann::json events = nlohmann::json::array();
  for (size_t lane = 0; lane < run.lanes.size(); ++lane)
    events.push_back(
        {{"name", "thread_name"}, {"ph", "M"}, {"pid", 0}, {"tid", lane}, {"args", {{"name", run.lanes[lane]}}}});
  auto us = [&](uint64_t ns) { return static_cast<double>(ns - run.run_start_ns) / 1000.0; };
  for (const auto& t : run.nodes) {
    const GraphNode& n = g.nodes[t.node_id];
    std::vector<uint32_t> in, out;
    for (const auto& r : n.inputs) in.push_back(g.entry_id(r));
    for (uint32_t k = 0; k < n.num_outputs; ++k) out.push_back(g.entry_id(t.node_id, k));
    nlohmann::json args = {{"kernel", n.func_name},
                           {"inputs", ShapesOf(g, in)},
                           {"outputs", ShapesOf(g, out)},
                           {"device", DeviceToString(t.device)},
                           {"wait_us", static_cast<double>(t.wait_ns) / 1000.0}};
    std::string name = n.name;
    if (n.func_name == kCopyFunction) {
      const double seconds = static_cast<double>(t.end_ns - t.start_ns) / 1e9;
      char label[96];
      std::snprintf(label, sizeof label, "__copy %llu B, %.2f GB/s", static_cast<unsigned long long>(t.bytes),
                    seconds > 0 ? static_cast<double>(t.bytes) / seconds / 1e9 : 0.0);
      name = label;
      args["bytes"] = t.bytes;
    }
    nlohmann::json waited = nlohmann::json::array();
    for (uint32_t w : t.waited_for) waited.push_back(g.nodes[w].name);
    args["waited_for"] = waited;
    events.push_back({{"name", name},
                      {"cat", n.func_name},
                      {"ph", "X"},
                      {"ts", us(t.start_ns)},
                      {"dur", static_cast<double>(t.end_ns - t.start_ns) / 1000.0},
                      {"pid", 0},
                      {"tid", t.lane},
                      {"args", args}});
    if (t.submit_ns < t.start_ns && run.lanes[t.lane] != "host")  // when the host issued it
      events.push_back(
          {{"name", "issue " + n.name}, {"ph", "i"}, {"s", "t"}, {"ts", us(t.submit_ns)}, {"pid", 0}, {"tid", 0}});
  }
  return nlohmann::json{
      {"traceEvents", events},
      {"displayTimeUnit", "ms"},
      {"otherData", {{"clock_uncertainty_us", static_cast<double>(run.clock_uncertainty_ns) / 1000.0}}}};
}

int Bench(const BenchArgs& args) {
  WarnAboutUnusedPlugins();
  if (IsLlmModelFolder(args.model)) {
    if (args.devices.size() != 1) return Fail("a language model runs on one device: pass one --device");
    return BenchLlm(args.model, args.devices[0], args.repeat, args.warmup, args.trace);
  }
  ModelSpec spec{args.model, args.graph, args.params, args.function, args.devices};
  spec.sequential = args.sequential;
  spec.staged_copies = args.staged_copies;
  auto model = OpenModel(spec);
  if (!model.ok()) return Fail(model.status().message());
  for (const std::string& file : args.inputs) {
    auto inputs = LoadParamDictFile(file);
    if (!inputs.ok()) return Fail(inputs.status().message());
    for (const auto& p : *inputs)
      if (model->executor->InputIndex(p.name) >= 0)
        if (Status s = model->executor->SetInput(p.name, p.tensor); !s.ok()) return Fail(file + ": " + s.message());
  }
  if (auto* relax = dynamic_cast<RelaxExecutor*>(model->executor.get()))
    return BenchRelax(*relax, args.repeat, args.warmup, args.trace);
  auto* graph = dynamic_cast<GraphExecutor*>(model->executor.get());
  if (graph == nullptr)
    return Fail(args.model + ": hetrt bench profiles graph and Relax models, not AOT or whole-model ones");
  GraphExecutor& ex = *graph;
  GraphExecutor::RunProfile run;
  for (int i = 0; i < args.warmup; ++i)
    if (Status s = ex.RunProfiled(&run); !s.ok()) return Fail(s.message());
  std::map<size_t, std::vector<double>> per_node, waiting;  // by position in issue order
  std::optional<GraphExecutor::RunProfile> first;
  std::vector<double> totals;
  for (int r = 0; r < args.repeat; ++r) {
    if (Status s = ex.RunProfiled(&run); !s.ok()) return Fail(s.message());
    for (size_t k = 0; k < run.nodes.size(); ++k) {
      per_node[k].push_back(run.nodes[k].ms());
      waiting[k].push_back(static_cast<double>(run.nodes[k].wait_ns) / 1e6);
    }
    totals.push_back(static_cast<double>(run.run_end_ns - run.run_start_ns) / 1e6);
    if (!first) first = run;
  }
  const Graph& g = ex.graph();
  std::printf("%-40s %-20s %10s %10s %10s %10s\n", "node", "lane", "mean us", "median us", "p99 us", "waiting us");
  std::map<std::string, double> per_lane;
  for (size_t k = 0; k < run.nodes.size(); ++k) {
    const auto& t = run.nodes[k];
    const std::string& lane = run.lanes[t.lane];
    per_lane[lane] += Mean(per_node[k]);
    std::printf("%-40s %-20s %10.2f %10.2f %10.2f %10.2f\n", g.nodes[t.node_id].name.substr(0, 40).c_str(),
                lane.c_str(), 1000 * Mean(per_node[k]), 1000 * Percentile(per_node[k], 0.5),
                1000 * Percentile(per_node[k], 0.99), 1000 * Mean(waiting[k]));
  }
  std::printf("busy per lane (mean per run):");
  for (const auto& [lane, ms] : per_lane) std::printf(" %s %.3f ms", lane.c_str(), ms);
  std::printf("\nrun (profiled, issue to last end): mean %.3f ms, median %.3f ms, p99 %.3f ms over %d runs (%s)\n",
              Mean(totals), Percentile(totals, 0.5), Percentile(totals, 0.99), args.repeat,
              args.sequential ? "sequential" : "asynchronous");
  if (!args.trace.empty()) {
    std::ofstream out(args.trace);
    out << TraceOf(ex, *first).dump(1);
    if (!out) return Fail("cannot write " + args.trace);
    std::printf("trace: %s (open in chrome://tracing or ui.perfetto.dev)\n", args.trace.c_str());
  }
  return 0;
}

}  // namespace

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5))];
}

double Mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / static_cast<double>(v.size());
}

Command AddBenchCommand(CLI::App& app) {
  auto args = std::make_shared<BenchArgs>();
  auto* cmd = AddModelCommand(app, "bench", "Per-node (graph) or per-instruction (Relax VM) and per-device timings, and a Chrome trace",
                              *args, "deploy.so (graph or Relax), or lib.so with --graph");
  cmd->add_option("--repeat", args->repeat, "timed runs")->check(IntInRange("--repeat", 1, 100000000));
  cmd->add_option("--warmup", args->warmup, "untimed runs first")->check(IntInRange("--warmup", 0, 100000000));
  cmd->add_option("--trace", args->trace, "write a Chrome trace JSON of one run");
  return [args] { return Bench(*args); };
}

}  // namespace hetrt::cli
