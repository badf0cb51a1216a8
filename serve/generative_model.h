// One served version of a language model (docs/serving-llm.md): its instances
// (each an LlmEngine driven by a scheduler thread of its own), the bounded
// queue of requests waiting for KV-cache pages in front of them, and the
// numbers /metrics reports.
//
// A request is checked whole when it arrives (a bad one, or one that can never
// fit the context or the cache, is refused at once), then waits in the queue,
// first come first served, until an instance has the pages its prompt plus
// max_tokens need and room in its batch. Each scheduler loops: take
// cancellations and queued requests that fit, then one engine step (the next
// prefill chunk, one decode of every running sequence), then hand each token
// to its request's sink. Requests join and leave between steps.
//
// Thread contract: thread-safe. Start and Cancel from any thread; sinks are
// called on the scheduler threads.
#pragma once

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "hetrt/serve/generation.h"
#include "histogram.h"
#include "model_config.h"
#include "model_files.h"
#include "served_model.h"

namespace hetrt {
class PluginRegistry;
}

namespace hetrt::serve {

// Latency buckets (seconds) of the LLM histograms: vLLM's span (1 ms .. 60 s
// for time to first token) with finer steps below 10 ms, where a small
// model's tokens come.
inline constexpr double kLatencyBuckets[] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                             0.1,    0.25,    0.5,    1,     2.5,    5,     10,   30,    60};

struct GenerativeModelStats {
  Histogram time_to_first_token{kLatencyBuckets}, inter_token_latency{kLatencyBuckets},
      e2e_request_latency{kLatencyBuckets}, request_queue_time{kLatencyBuckets};
  std::atomic<uint64_t> prompt_tokens{0}, generation_tokens{0};
  std::atomic<uint64_t> steps{0};
  // CPU time the scheduler threads spent inside engine steps, on their own
  // thread (the CPU plugin's workers add theirs): what the rest of the
  // process's CPU is compared with to find the server's own cost per token.
  std::atomic<uint64_t> step_thread_cpu_ns{0};
  // Requests ended, by finish reason (kFinishReasons' order).
  static constexpr std::array<const char*, 5> kFinishReasons = {kFinishLength, kFinishStop, kFinishCancelled,
                                                                kFinishShutdown, kFinishError};
  std::array<std::atomic<uint64_t>, 5> finished{};
  // Requests refused with 503: the queue was full, they waited past the
  // queue timeout, the server was shutting down.
  std::atomic<uint64_t> rejected_queue_full{0}, rejected_queue_timeout{0}, rejected_shutdown{0};
  // Gauges, summed over instances, updated after each step.
  std::atomic<int64_t> running{0}, waiting{0};
  std::atomic<int64_t> pages_total{0}, pages_reserved{0}, pages_used{0};
};

class GenerativeModel final : public ServedModel {
 public:
  // `plugins`: the model's own plugin instances (config.json parameters), or
  // nullptr for the process-wide ones.
  static Result<std::unique_ptr<GenerativeModel>> Open(const std::string& name, int64_t version,
                                                       const ModelVersionFiles& files, const ModelConfig& config,
                                                       std::shared_ptr<PluginRegistry> plugins = nullptr);
  ~GenerativeModel() override;
  GenerativeModel(const GenerativeModel&) = delete;
  GenerativeModel& operator=(const GenerativeModel&) = delete;

  const std::string& name() const override { return name_; }
  int64_t version() const override { return version_; }
  const ModelMetadata& metadata() const override { return metadata_; }
  GenerativeModel* generative_model() override { return this; }

  // Queues a generation. Errors, for which `sink` is never called:
  // InvalidArgument (the request; one that can never fit), Unavailable (the
  // queue is full, the model is stopping).
  Result<std::shared_ptr<Generation>> Start(GenerateRequest request, GenerationSink sink);

  // Shutdown in two steps: StopAdmission refuses new requests and those still
  // queued (kRefused), running ones go on; EndRunning ends those with
  // "shutdown" at the next step boundary. Stop does both and joins.
  void StopAdmission();
  void EndRunning();
  void Stop() override;
  // Requests queued or running (not yet sent their last event).
  int64_t active() const { return active_.load(std::memory_order_acquire); }

  const GenerativeModelStats& stats() const { return stats_; }

 private:
  struct Pending;
  struct Shared;
  struct Instance;
  GenerativeModel() = default;
  void Schedule(Instance& instance);

  std::string name_;
  int64_t version_ = 0;
  ModelMetadata metadata_;
  GenerationConfig generation_;
  size_t max_queue_size_ = 0;
  std::shared_ptr<PluginRegistry> plugins_;  // declared before instances_: it outlives them
  std::shared_ptr<Shared> shared_;           // the queue; requests' handles hold it too
  std::vector<std::unique_ptr<Instance>> instances_;
  std::atomic<int64_t> active_{0};
  GenerativeModelStats stats_;
};

}  // namespace hetrt::serve
