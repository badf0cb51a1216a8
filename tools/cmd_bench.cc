// `hetrt bench MODEL`: per-node and per-device timings (mean, median, p99)
// over repeated runs, and a Chrome trace (chrome://tracing, Perfetto).
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "hetrt/dtype.h"
#include "hetrt/graph_model.h"

namespace hetrt::cli {
namespace {

struct BenchArgs {
  std::string model, graph, params, inputs, trace;
  std::vector<std::string> devices{"cpu"};
  int repeat = 50;
  int warmup = 3;
};

double Percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5));
  return v[i];
}

int Bench(const BenchArgs& args) {
  GraphExecutor::Options options;
  auto devices = ParseDeviceList(args.devices);
  if (!devices.ok()) return Fail(devices.status().message());
  options.devices = std::move(devices).value();
  auto model = OpenGraphModel({args.model, args.graph, args.params}, options);
  if (!model.ok()) return Fail(model.status().message());
  GraphExecutor& ex = *model->executor;
  if (!args.inputs.empty()) {
    auto inputs = LoadParamDictFile(args.inputs);
    if (!inputs.ok()) return Fail(inputs.status().message());
    for (const auto& p : *inputs)
      if (ex.InputIndex(p.name) >= 0)
        if (Status s = ex.SetInput(p.name, p.tensor); !s.ok()) return Fail(s.message());
  }
  std::vector<GraphExecutor::NodeTime> times;
  for (int i = 0; i < args.warmup; ++i)
    if (Status s = ex.RunProfiled(&times); !s.ok()) return Fail(s.message());
  std::map<uint32_t, std::vector<double>> per_node;
  std::vector<std::vector<GraphExecutor::NodeTime>> runs;
  std::vector<double> totals;
  for (int r = 0; r < args.repeat; ++r) {
    if (Status s = ex.RunProfiled(&times); !s.ok()) return Fail(s.message());
    double total = 0;
    for (const auto& t : times) {
      per_node[t.node_id].push_back(t.device_ms);
      total += t.device_ms;
    }
    totals.push_back(total);
    if (r == 0) runs.push_back(times);
  }
  const Graph& g = ex.graph();
  std::printf("%-48s %-10s %10s %10s %10s\n", "node", "device", "mean us", "median us", "p99 us");
  std::map<std::string, double> per_device;
  for (const auto& t : times) {
    const auto& v = per_node[t.node_id];
    double mean = 0;
    for (double x : v) mean += x;
    mean /= static_cast<double>(v.size());
    const std::string device = DeviceToString(t.device);
    per_device[g.nodes[t.node_id].func_name == kCopyFunction ? "copies" : device] += mean;
    std::printf("%-48s %-10s %10.2f %10.2f %10.2f\n", g.nodes[t.node_id].name.substr(0, 48).c_str(), device.c_str(),
                1000 * mean, 1000 * Percentile(v, 0.5), 1000 * Percentile(v, 0.99));
  }
  std::printf("per device (mean per run):");
  for (const auto& [device, ms] : per_device) std::printf(" %s %.3f ms", device.c_str(), ms);
  std::printf("\nrun: mean %.3f ms, median %.3f ms, p99 %.3f ms over %d runs\n",
              [&] { double s = 0; for (double x : totals) s += x; return s / static_cast<double>(totals.size()); }(),
              Percentile(totals, 0.5), Percentile(totals, 0.99), args.repeat);
  if (!args.trace.empty()) {
    // One run laid out in time per device lane ("X" complete events, microseconds).
    nlohmann::json events = nlohmann::json::array();
    std::map<std::string, int> lanes;
    double clock_us = 0;
    for (const auto& t : runs.at(0)) {
      const std::string device = DeviceToString(t.device);
      const int lane = lanes.emplace(device, static_cast<int>(lanes.size())).first->second;
      events.push_back({{"name", g.nodes[t.node_id].name}, {"cat", g.nodes[t.node_id].func_name}, {"ph", "X"},
                        {"ts", clock_us}, {"dur", 1000 * t.device_ms}, {"pid", 0}, {"tid", lane}});
      clock_us += 1000 * t.device_ms;
    }
    for (const auto& [device, lane] : lanes)
      events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", 0}, {"tid", lane}, {"args", {{"name", device}}}});
    std::ofstream out(args.trace);
    out << nlohmann::json{{"traceEvents", events}, {"displayTimeUnit", "ms"}}.dump(1);
    if (!out) return Fail("cannot write " + args.trace);
    std::printf("trace: %s (open in chrome://tracing or ui.perfetto.dev)\n", args.trace.c_str());
  }
  return 0;
}

}  // namespace

Command AddBenchCommand(CLI::App& app) {
  auto* cmd = app.add_subcommand("bench", "Per-node and per-device timings of a graph model, and a Chrome trace");
  auto args = std::make_shared<BenchArgs>();
  cmd->add_option("MODEL", args->model, "deploy.so, or lib.so with --graph")->required();
  cmd->add_option("--graph", args->graph, "graph.json (with a lib.so)");
  cmd->add_option("--params", args->params, "params file (with --graph)");
  cmd->add_option("--inputs", args->inputs, "param-dict file of inputs");
  cmd->add_option("--device", args->devices, "cpu[:N], opencl[:N], ...; repeatable")->take_all();
  cmd->add_option("--repeat", args->repeat, "timed runs")->check(CLI::PositiveNumber);
  cmd->add_option("--warmup", args->warmup, "untimed runs first")->check(CLI::NonNegativeNumber);
  cmd->add_option("--trace", args->trace, "write a Chrome trace JSON of one run");
  return [args] { return Bench(*args); };
}

}  // namespace hetrt::cli
