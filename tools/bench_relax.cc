// `hetrt bench` on a Relax executable: the time of every Call instruction of
// the function, by callee (kernel or builtin), by kind and by device lane,
// what the VM itself adds per instruction, and a Chrome trace of one call.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "hetrt/base/host_clock.h"
#include "hetrt/exec/relax_executor.h"

namespace hetrt::cli {
namespace {

const char* KindName(RelaxTraceEvent::Kind kind) {
  switch (kind) {
    case RelaxTraceEvent::Kind::kBuiltin: return "builtin";
    case RelaxTraceEvent::Kind::kKernel: return "kernel";
    case RelaxTraceEvent::Kind::kVmCall: return "vm call";
  }
  return "?";
}

std::string LaneOf(const RelaxTraceEvent& e) {
  return e.kind == RelaxTraceEvent::Kind::kKernel && e.device.device_type != kDLCPU ? DeviceToString(e.device)
                                                                                     : std::string("host");
}

nlohmann::json TraceOf(const RelaxExecutable& exe, const RelaxProfile& run) {
  nlohmann::json events = nlohmann::json::array();
  std::map<std::string, int> lanes{{"host", 0}};
  for (const RelaxTraceEvent& e : run.events) lanes.emplace(LaneOf(e), static_cast<int>(lanes.size()));
  for (const auto& [name, tid] : lanes)
    events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", 0}, {"tid", tid}, {"args", {{"name", name}}}});
  for (const RelaxTraceEvent& e : run.events)
    events.push_back({{"name", exe.functions[e.callee].name},
                      {"cat", KindName(e.kind)},
                      {"ph", "X"},
                      {"ts", static_cast<double>(e.start_ns - run.start_ns) / 1000.0},
                      {"dur", static_cast<double>(e.end_ns - e.start_ns) / 1000.0},
                      {"pid", 0},
                      {"tid", lanes[LaneOf(e)]},
                      {"args", {{"device", DeviceToString(e.device)}, {"depth", e.depth}}}});
  return {{"traceEvents", events}, {"displayTimeUnit", "ms"}};
}

}  // namespace

int BenchRelax(RelaxExecutor& ex, int repeat, int warmup, const std::string& trace) {
  RelaxVirtualMachine& vm = ex.vm();
  const RelaxExecutable& exe = vm.executable();
  for (int i = 0; i < warmup; ++i)
    if (Status s = ex.Run(); !s.ok()) return Fail(s.message());
  // Plain calls first: what a caller sees, with no timing inside.
  std::vector<double> plain;
  for (int r = 0; r < repeat; ++r) {
    const uint64_t t0 = HostNowNs();
    Status s = ex.Run();
    if (s.ok()) s = ex.Synchronize();
    if (!s.ok()) return Fail(s.message());
    plain.push_back(static_cast<double>(HostNowNs() - t0) / 1000.0);
  }
  const uint64_t instructions = vm.last_call_stats().instructions;
  // Profiled calls: one event per Call instruction. Keyed by position, as the
  // same callee may appear at several instructions.
  RelaxProfile run, first;
  std::map<std::pair<std::string, std::string>, std::vector<double>> per_callee;  // (lane, name) -> us per run
  std::map<std::string, double> per_kind, per_lane;
  std::vector<double> totals, own;
  for (int r = 0; r < repeat; ++r) {
    Status s = ex.RunProfiled(&run);
    if (!s.ok()) return Fail(s.message());
    std::map<std::pair<std::string, std::string>, double> this_run;
    double top_level = 0;
    for (const RelaxTraceEvent& e : run.events) {
      const double us = static_cast<double>(e.end_ns - e.start_ns) / 1000.0;
      if (e.depth == 0) top_level += us;
      if (e.kind == RelaxTraceEvent::Kind::kVmCall) continue;  // its contents are counted
      this_run[{LaneOf(e), exe.functions[e.callee].name}] += us;
      per_kind[KindName(e.kind)] += us / repeat;
      per_lane[LaneOf(e)] += us / repeat;
    }
    for (const auto& [key, us] : this_run) per_callee[key].push_back(us);
    const double total = static_cast<double>(run.end_ns - run.start_ns) / 1000.0;
    totals.push_back(total);
    own.push_back(total - top_level);
    if (r == 0) first = run;
  }
  std::printf("function '%s': %llu instructions per call\n", ex.function_name().c_str(),
              static_cast<unsigned long long>(instructions));
  std::printf("%-40s %-12s %10s %10s %10s\n", "callee", "lane", "mean us", "median us", "p99 us");
  for (const auto& [key, v] : per_callee)
    std::printf("%-40s %-12s %10.2f %10.2f %10.2f\n", key.second.substr(0, 40).c_str(), key.first.c_str(), Mean(v),
                Percentile(v, 0.5), Percentile(v, 0.99));
  std::printf("per kind (mean per call):");
  for (const auto& [kind, us] : per_kind) std::printf(" %s %.2f us", kind.c_str(), us);
  std::printf(", the VM's own loop %.2f us\n", Mean(own));
  std::printf("busy per lane (mean per call):");
  for (const auto& [lane, us] : per_lane) std::printf(" %s %.2f us", lane.c_str(), us);
  std::printf("\ncall (plain): mean %.2f us, median %.2f us, p99 %.2f us over %d calls", Mean(plain),
              Percentile(plain, 0.5), Percentile(plain, 0.99), repeat);
  if (per_lane.size() == 1 && instructions > 0) {  // host kernels only: their profiled time is their time
    const double vm_us = Mean(plain) - (per_kind.count("kernel") ? per_kind["kernel"] : 0);
    std::printf("; minus kernels: %.2f us, %.1f ns per instruction", vm_us,
                1000.0 * vm_us / static_cast<double>(instructions));
  }
  std::printf("\n");
  std::printf("call (profiled): mean %.2f us, median %.2f us, p99 %.2f us\n", Mean(totals), Percentile(totals, 0.5),
              Percentile(totals, 0.99));
  if (!trace.empty()) {
    std::ofstream out(trace);
    out << TraceOf(exe, first).dump(1);
    if (!out) return Fail("cannot write " + trace);
    std::printf("trace: %s (open in chrome://tracing or ui.perfetto.dev)\n", trace.c_str());
  }
  return 0;
}

}  // namespace hetrt::cli
