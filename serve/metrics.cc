#include "metrics.h"

#include <cstdio>

namespace hetrt::serve {
namespace {

// Label values are model names (folder names): escape what the format requires.
std::string Escaped(const std::string& value) {
  std::string out;
  for (char c : value) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

class Writer {
 public:
  void Family(const char* name, const char* type, const char* help) {
    text_ += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
  }
  void Sample(const char* name, const std::string& labels, double value) {
    char number[40];
    std::snprintf(number, sizeof number, "%.17g", value);
    text_ += std::string(name) + "{" + labels + "} " + number + "\n";
  }
  std::string& text() { return text_; }

 private:
  std::string text_;
};

std::string ModelLabels(const ModelVersion& v) {
  return "model=\"" + Escaped(v.name()) + "\",version=\"" + std::to_string(v.version()) + "\"";
}

}  // namespace

std::string RenderMetrics(const std::vector<std::shared_ptr<const ModelVersion>>& versions) {
  Writer w;
  auto each = [&](const char* name, const char* type, const char* help, auto&& emit) {
    w.Family(name, type, help);
    for (const auto& v : versions) emit(*v, ModelLabels(*v));
  };
  auto load = [](const std::atomic<uint64_t>& a) { return static_cast<double>(a.load(std::memory_order_relaxed)); };
  each("hetrt_inference_requests_total", "counter",
       "Inference requests by outcome (rejected: queue full or unloading).",
       [&](const ModelVersion& v, const std::string& l) {
         w.Sample("hetrt_inference_requests_total", l + ",status=\"success\"", load(v.stats().success));
         w.Sample("hetrt_inference_requests_total", l + ",status=\"failure\"", load(v.stats().failure));
         w.Sample("hetrt_inference_requests_total", l + ",status=\"rejected\"", load(v.stats().rejected));
       });
  each("hetrt_inference_queue_seconds_total", "counter", "Time requests waited in the queue, summed.",
       [&](const ModelVersion& v, const std::string& l) {
         w.Sample("hetrt_inference_queue_seconds_total", l, load(v.stats().queue_ns) / 1e9);
       });
  each("hetrt_inference_request_seconds_total", "counter", "Time from arrival to response, summed over requests.",
       [&](const ModelVersion& v, const std::string& l) {
         w.Sample("hetrt_inference_request_seconds_total", l, load(v.stats().request_ns) / 1e9);
       });
  each("hetrt_inference_executions_total", "counter",
       "Executor runs by the rows they carried (batch_size; 1 for unbatched models).",
       [&](const ModelVersion& v, const std::string& l) {
         for (size_t rows = 1; rows < ModelVersionStats::kBatchBuckets; ++rows) {
           const double n = load(v.stats().executions_by_rows[rows]);
           if (n > 0)
             w.Sample("hetrt_inference_executions_total", l + ",batch_size=\"" + std::to_string(rows) + "\"", n);
         }
       });
  each("hetrt_inference_in_flight", "gauge", "Requests queued or running.",
       [&](const ModelVersion& v, const std::string& l) {
         w.Sample("hetrt_inference_in_flight", l, static_cast<double>(v.in_flight()));
       });
  // Families with a sample per instance, labelled with its index and device list.
  auto each_instance = [&](const char* name, const char* type, const char* help, auto&& emit) {
    each(name, type, help, [&](const ModelVersion& v, const std::string& l) {
      int i = 0;
      for (const InstanceStats* s : v.instance_stats())
        emit(v, *s, l + ",instance=\"" + std::to_string(i++) + "\",devices=\"" + Escaped(s->devices) + "\"");
    });
  };
  each_instance("hetrt_instance_compute_seconds_total", "counter",
                "Time each instance spent running its executor (inputs in, run, outputs out), by device lane list.",
                [&](const ModelVersion&, const InstanceStats& s, const std::string& l) {
                  w.Sample("hetrt_instance_compute_seconds_total", l, load(s.busy_ns) / 1e9);
                });
  each_instance("hetrt_instance_executions_total", "counter", "Executor runs per instance.",
                [&](const ModelVersion&, const InstanceStats& s, const std::string& l) {
                  w.Sample("hetrt_instance_executions_total", l, load(s.executions));
                });
  each_instance("hetrt_instance_copied_bytes_total", "counter",
                "Bytes each instance copied between requests and its executor, by direction: inputs it could not "
                "bind in place (unaligned, for a device, packed into a batch), outputs read back after the run.",
                [&](const ModelVersion&, const InstanceStats& s, const std::string& l) {
                  w.Sample("hetrt_instance_copied_bytes_total", l + ",direction=\"input\"", load(s.input_bytes_copied));
                  w.Sample("hetrt_instance_copied_bytes_total", l + ",direction=\"output\"",
                           load(s.output_bytes_copied));
                });
  each_instance("hetrt_instance_sampled_runs_total", "counter",
                "Runs profiled per instance (every 64th run of a graph model) for the lane times below.",
                [&](const ModelVersion&, const InstanceStats& s, const std::string& l) {
                  std::lock_guard<std::mutex> lock(s.lanes_mutex);
                  w.Sample("hetrt_instance_sampled_runs_total", l, static_cast<double>(s.profiled_runs));
                });
  each_instance("hetrt_instance_lane_compute_seconds_total", "counter",
                "Node time per executor lane (host, each device's compute and copy streams) over the profiled runs; "
                "divided by hetrt_instance_sampled_runs_total: the compute time per run on each device lane.",
                [&](const ModelVersion&, const InstanceStats& s, const std::string& l) {
                  std::lock_guard<std::mutex> lock(s.lanes_mutex);
                  for (const auto& [lane, ns] : s.lane_ns)
                    w.Sample("hetrt_instance_lane_compute_seconds_total", l + ",lane=\"" + Escaped(lane) + "\"",
                             static_cast<double>(ns) / 1e9);
                });
  each_instance("hetrt_instance_utilization", "gauge",
                "Busy time over time since the version loaded, per instance (0..1).",
                [&](const ModelVersion& v, const InstanceStats& s, const std::string& l) {
                  const double up = static_cast<double>(v.uptime_ns());
                  w.Sample("hetrt_instance_utilization", l, up > 0 ? load(s.busy_ns) / up : 0.0);
                });
  return std::move(w.text());
}

}  // namespace hetrt::serve
