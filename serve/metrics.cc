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

std::string ModelLabels(const ServedModel& v) {
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

std::string RenderGenerativeMetrics(const std::vector<std::shared_ptr<const GenerativeModel>>& models) {
  if (models.empty()) return {};
  Writer w;
  auto each = [&](const char* name, const char* type, const char* help, auto&& emit) {
    w.Family(name, type, help);
    for (const auto& m : models) emit(m->stats(), ModelLabels(*m));
  };
  auto load = [](const auto& a) { return static_cast<double>(a.load(std::memory_order_relaxed)); };
  auto histogram = [&](const char* name, const char* help, const Histogram GenerativeModelStats::*member) {
    w.Family(name, "histogram", help);
    const std::string bucket = std::string(name) + "_bucket";
    for (const auto& m : models) {
      const Histogram& h = m->stats().*member;
      const std::string l = ModelLabels(*m);
      uint64_t cumulative = 0;
      char le[40];
      for (size_t i = 0; i < h.bounds().size(); ++i) {
        cumulative += h.bucket(i);
        std::snprintf(le, sizeof le, "%g", h.bounds()[i]);
        w.Sample(bucket.c_str(), l + ",le=\"" + le + "\"", static_cast<double>(cumulative));
      }
      cumulative += h.bucket(h.bounds().size());
      w.Sample(bucket.c_str(), l + ",le=\"+Inf\"", static_cast<double>(cumulative));
      w.Sample((std::string(name) + "_sum").c_str(), l, h.sum());
      w.Sample((std::string(name) + "_count").c_str(), l, static_cast<double>(cumulative));
    }
  };
  histogram("hetrt_llm_time_to_first_token_seconds", "Time from a request's arrival to its first token.",
            &GenerativeModelStats::time_to_first_token);
  histogram("hetrt_llm_inter_token_latency_seconds", "Time between a request's consecutive tokens.",
            &GenerativeModelStats::inter_token_latency);
  histogram("hetrt_llm_e2e_request_latency_seconds", "Time from a request's arrival to its last event.",
            &GenerativeModelStats::e2e_request_latency);
  histogram("hetrt_llm_request_queue_time_seconds", "Time a request waited for KV-cache pages.",
            &GenerativeModelStats::request_queue_time);
  each("hetrt_llm_prompt_tokens_total", "counter", "Prompt tokens of admitted requests.",
       [&](const GenerativeModelStats& s, const std::string& l) {
         w.Sample("hetrt_llm_prompt_tokens_total", l, load(s.prompt_tokens));
       });
  each("hetrt_llm_generation_tokens_total", "counter", "Tokens generated.",
       [&](const GenerativeModelStats& s, const std::string& l) {
         w.Sample("hetrt_llm_generation_tokens_total", l, load(s.generation_tokens));
       });
  each("hetrt_llm_engine_steps_total", "counter", "Engine steps (a prefill chunk and one decode of every sequence).",
       [&](const GenerativeModelStats& s, const std::string& l) {
         w.Sample("hetrt_llm_engine_steps_total", l, load(s.steps));
       });
  each("hetrt_llm_engine_step_thread_cpu_seconds_total", "counter",
       "CPU time the scheduler threads spent inside engine steps on their own thread (the CPU plugin's workers, "
       "threads hetrt-cpu-*, add theirs); the rest of the process's CPU is the server's own.",
       [&](const GenerativeModelStats& s, const std::string& l) {
         w.Sample("hetrt_llm_engine_step_thread_cpu_seconds_total", l, load(s.step_thread_cpu_ns) / 1e9);
       });
  each("hetrt_llm_request_success_total", "counter", "Requests ended, by finish reason.",
       [&](const GenerativeModelStats& s, const std::string& l) {
         for (size_t i = 0; i < s.finished.size(); ++i)
           w.Sample("hetrt_llm_request_success_total",
                    l + ",finished_reason=\"" + GenerativeModelStats::kFinishReasons[i] + "\"", load(s.finished[i]));
       });
  each("hetrt_llm_requests_rejected_total", "counter",
       "Requests answered 503 before admission: the queue was full, they waited past queue_timeout_ms, shutdown.",
       [&](const GenerativeModelStats& s, const std::string& l) {
         w.Sample("hetrt_llm_requests_rejected_total", l + ",reason=\"queue_full\"", load(s.rejected_queue_full));
         w.Sample("hetrt_llm_requests_rejected_total", l + ",reason=\"queue_timeout\"", load(s.rejected_queue_timeout));
         w.Sample("hetrt_llm_requests_rejected_total", l + ",reason=\"shutdown\"", load(s.rejected_shutdown));
       });
  each("hetrt_llm_num_preemptions_total", "counter",
       "Sequences preempted: always 0 (admission reserves a request's pages, so a running one never runs out).",
       [&](const GenerativeModelStats&, const std::string& l) { w.Sample("hetrt_llm_num_preemptions_total", l, 0); });
  each("hetrt_llm_num_requests_running", "gauge", "Sequences in the engines.",
       [&](const GenerativeModelStats& s, const std::string& l) {
         w.Sample("hetrt_llm_num_requests_running", l, load(s.running));
       });
  each("hetrt_llm_num_requests_waiting", "gauge", "Requests waiting for KV-cache pages.",
       [&](const GenerativeModelStats& s, const std::string& l) {
         w.Sample("hetrt_llm_num_requests_waiting", l, load(s.waiting));
       });
  each("hetrt_llm_kv_cache_usage_perc", "gauge", "KV-cache pages reserved by admitted requests over all (0..1).",
       [&](const GenerativeModelStats& s, const std::string& l) {
         const double total = load(s.pages_total);
         w.Sample("hetrt_llm_kv_cache_usage_perc", l, total > 0 ? load(s.pages_reserved) / total : 0.0);
       });
  each("hetrt_llm_kv_cache_pages", "gauge", "KV-cache pages holding tokens now (used) and not (free).",
       [&](const GenerativeModelStats& s, const std::string& l) {
         w.Sample("hetrt_llm_kv_cache_pages", l + ",state=\"used\"", load(s.pages_used));
         w.Sample("hetrt_llm_kv_cache_pages", l + ",state=\"free\"", load(s.pages_total) - load(s.pages_used));
       });
  return std::move(w.text());
}

}  // namespace hetrt::serve
