// One served version of a model: its instances (each its own executor on its
// own thread; executors are not shared across threads), the bounded request
// queue in front of them, dynamic batching, and the numbers /metrics reports.
// A request may also run on the thread that submitted it (see Submit).
#pragma once

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "hetrt/serve/inference.h"
#include "model_config.h"
#include "model_files.h"
#include "served_model.h"

namespace hetrt {
class PluginRegistry;
}

namespace hetrt::serve {

struct ModelVersionStats {
  std::atomic<uint64_t> success{0}, failure{0}, rejected{0};  // rejected: queue full or stopping
  std::atomic<uint64_t> queue_ns{0}, request_ns{0};           // summed over requests
  std::atomic<uint64_t> executions{0};
  static constexpr size_t kBatchBuckets = 65;  // executions by rows run (64+ in the last)
  std::array<std::atomic<uint64_t>, kBatchBuckets> executions_by_rows{};
};

struct InstanceStats {
  std::string devices;  // "cpu,opencl"
  std::atomic<uint64_t> busy_ns{0}, executions{0};
  // Bytes the instance copied between requests and its executor: inputs not
  // bound in place (unaligned, for a device, packed into a batch) and outputs
  // read back after the run or sliced out of a batch. A graph on host memory
  // copies none: the request's inputs and the response's outputs are its own.
  std::atomic<uint64_t> input_bytes_copied{0}, output_bytes_copied{0};
  // Every kProfileEvery-th run of a graph model is profiled: node time summed
  // per executor lane ("host", "opencl:0 compute", ...) over those runs.
  static constexpr uint64_t kProfileEvery = 64;
  mutable std::mutex lanes_mutex;
  uint64_t profiled_runs = 0;               // under lanes_mutex
  std::map<std::string, uint64_t> lane_ns;  // under lanes_mutex
};

// A model's own plugin instances, with config.json's parameters applied: an
// unknown plugin or option, or a value the plugin refuses, is an error naming
// the parameter.
Result<std::shared_ptr<PluginRegistry>> OpenPluginsWith(const std::vector<PluginSetting>& settings);

class ModelVersion final : public ServedModel {
 public:
  // `plugins`: the model's own plugin instances (config.json parameters), or
  // nullptr for the process-wide ones.
  static Result<std::unique_ptr<ModelVersion>> Open(const std::string& name, int64_t version,
                                                    const ModelVersionFiles& files, const ModelConfig& config,
                                                    std::shared_ptr<PluginRegistry> plugins = nullptr);
  ~ModelVersion() override;
  ModelVersion(const ModelVersion&) = delete;
  ModelVersion& operator=(const ModelVersion&) = delete;

  const std::string& name() const override { return name_; }
  int64_t version() const override { return version_; }
  const ModelMetadata& metadata() const override { return metadata_; }
  ModelVersion* tensor_model() override { return this; }

  // Who submits a request, which decides whether its thread may run requests.
  // Either runs its own request only when an instance is idle, nothing is
  // queued and the model's runs are short (kShortRunNs): a long run
  // gains little from skipping the hand-off to the instance's thread, and
  // belongs on that thread (its scheduling policy, see Serve).
  enum class Caller {
    // Waits for its response anyway (a REST worker): runs its own request,
    // never anyone else's.
    kBlocking,
    // Serves other connections too (a gRPC callback thread): runs its own
    // request only when no other is in flight, and never anyone else's.
    kEventLoop,
  };
  static constexpr uint64_t kShortRunNs = 1'000'000;

  // Validates and queues the request, or runs it on this thread. `done` is
  // called exactly once: before Submit returns (a bad request, a full queue, a
  // request run here) or later on the thread that ran it.
  void Submit(InferRequest request, InferDone done, Caller caller);
  // Rejects new requests, lets queued and running ones finish, joins the
  // instances. Idempotent.
  void Stop() override;

  const ModelVersionStats& stats() const { return stats_; }
  std::vector<const InstanceStats*> instance_stats() const;
  uint64_t uptime_ns() const;
  int64_t in_flight() const { return in_flight_.load(std::memory_order_relaxed); }

 private:
  struct Instance;
  struct Pending;
  ModelVersion() = default;
  Status InitMetadata();
  Status WarmUp();
  Status CheckRequest(InferRequest& request, int64_t& rows, std::vector<int>& outputs) const;
  using Batch = std::vector<std::unique_ptr<Pending>>;
  void Serve(Instance& instance);
  void Release(Instance& instance);
  Instance* TakeIdleInstance();
  bool AnyInstanceIdle() const;
  void TakeBatch(std::unique_lock<std::mutex>& lock, Batch& batch);
  std::vector<Result<InferResponse>> Execute(Instance& instance, const Batch& batch);
  void Answer(Batch& batch, std::vector<Result<InferResponse>>& answers);
  Status RunBatch(Instance& instance, const Batch& batch, int64_t rows, std::vector<Result<InferResponse>>& answers);

  std::string name_;
  int64_t version_ = 0;
  ModelConfig config_;
  ModelMetadata metadata_;
  std::vector<int> input_index_;  // metadata input i -> executor input index
  int64_t compiled_batch_ = 0;    // N of the batch axis when batching; 0 otherwise
  int64_t batch_capacity_ = 0;    // rows one execution takes: min(max_batch_size, N)
  bool symbolic_batch_ = false;   // N is symbolic: a run takes exactly the rows given
  int64_t batch_target_ = 0;      // rows after which a batch stops waiting (largest preferred size)
  uint64_t start_ns_ = 0;

  std::shared_ptr<PluginRegistry> plugins_;  // declared before instances_: it outlives them
  std::vector<std::unique_ptr<Instance>> instances_;
  mutable std::mutex mutex_;
  std::condition_variable queued_;
  std::deque<std::unique_ptr<Pending>> queue_;
  bool stopping_ = false;
  std::atomic<int64_t> in_flight_{0};
  ModelVersionStats stats_;
};

}  // namespace hetrt::serve
