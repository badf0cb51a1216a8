#include "generative_model.h"

#include <pthread.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <map>

#include "hetrt/base/log.h"
#include "hetrt/llm/engine.h"
#include "hetrt/relax/paged_kv_cache.h"

namespace hetrt::serve {
namespace {

using Clock = std::chrono::steady_clock;

uint64_t ThreadCpuNs() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<uint64_t>(t.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(t.tv_nsec);
}

double SecondsBetween(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

size_t FinishIndex(const char* reason) {
  const auto& reasons = GenerativeModelStats::kFinishReasons;
  for (size_t i = 0; i < reasons.size(); ++i)
    if (std::string_view(reasons[i]) == reason) return i;
  return reasons.size() - 1;  // error
}

const char* FinishOf(FinishReason reason) {
  switch (reason) {
    case FinishReason::kLength: return kFinishLength;
    case FinishReason::kStop: return kFinishStop;
    case FinishReason::kCancelled: return kFinishCancelled;
    case FinishReason::kNone:
    case FinishReason::kError: break;
  }
  return kFinishError;
}

// A request's generation settings, the model's defaults where it left them
// out; its stop tokens and the model's both end it.
GenerationRequest Resolve(GenerateRequest request, const GenerationConfig& d) {
  GenerationRequest g;
  g.prompt = std::move(request.input_ids);
  g.max_tokens = request.max_tokens.value_or(d.max_tokens);
  g.sampling.temperature = static_cast<float>(request.temperature.value_or(d.temperature));
  g.sampling.top_p = static_cast<float>(request.top_p.value_or(d.top_p));
  g.sampling.top_k = static_cast<int>(std::clamp<int64_t>(request.top_k.value_or(d.top_k), -1, INT32_MAX));
  g.sampling.repetition_penalty = static_cast<float>(request.repetition_penalty.value_or(d.repetition_penalty));
  g.sampling.presence_penalty = static_cast<float>(request.presence_penalty.value_or(d.presence_penalty));
  g.sampling.frequency_penalty = static_cast<float>(request.frequency_penalty.value_or(d.frequency_penalty));
  g.sampling.has_seed = request.seed.has_value();
  g.sampling.seed = request.seed.value_or(0);
  g.stop_token_ids = std::move(request.stop_token_ids);
  g.stop_token_ids.insert(g.stop_token_ids.end(), d.stop_token_ids.begin(), d.stop_token_ids.end());
  return g;
}

}  // namespace

// One request, from Start to its last event; also the handle a frontend holds.
struct GenerativeModel::Pending final : Generation, std::enable_shared_from_this<Pending> {
  std::shared_ptr<Shared> shared;
  GenerationRequest request;
  GenerationSink sink;
  Clock::time_point arrival, deadline;
  // Under shared->mutex.
  enum class State { kQueued, kRunning, kDone } state = State::kQueued;
  bool cancel = false;
  Instance* instance = nullptr;  // kRunning: where it runs
  // The scheduler's own (the thread of `instance`).
  int64_t engine_id = -1;
  int64_t generated = 0;
  Clock::time_point last_token;

  int64_t version = 0;

  void Cancel() override;
  int64_t model_version() const override { return version; }
};

struct GenerativeModel::Shared {
  std::mutex mutex;
  std::condition_variable wake;  // schedulers wait here for work
  std::deque<std::shared_ptr<Pending>> queue;
  std::vector<std::shared_ptr<Pending>> cancels;  // running requests to end, each taken by its instance
  bool admitting = true;
  bool end_running = false;
  bool stopping = false;
};

void GenerativeModel::Pending::Cancel() {
  {
    std::lock_guard<std::mutex> lock(shared->mutex);
    if (state == State::kDone || cancel) return;
    cancel = true;
    // A queued request is dropped by whichever scheduler looks first; a
    // running one by its own.
    if (state == State::kRunning) shared->cancels.push_back(shared_from_this());
  }
  shared->wake.notify_all();
}

struct GenerativeModel::Instance {
  std::unique_ptr<LlmEngine> engine;
  std::map<int64_t, std::shared_ptr<Pending>> running;  // by engine id; the scheduler's
  std::thread thread;
  // This instance's part of the gauges (its scheduler writes, the model sums).
  int64_t pages_reserved = 0, pages_used = 0, num_running = 0;
  // What its last admission pass left: free pages and batch room (under
  // Shared::mutex). Only its own admissions lower them, so another scheduler
  // may count on them until this one looks again.
  int64_t free_pages_seen = 0, room_seen = 0;
};

Result<std::unique_ptr<GenerativeModel>> GenerativeModel::Open(const std::string& name, int64_t version,
                                                               const ModelVersionFiles& files,
                                                               const ModelConfig& config,
                                                               std::shared_ptr<PluginRegistry> plugins) {
  std::unique_ptr<GenerativeModel> m(new GenerativeModel());
  const std::string where = "model '" + name + "' version " + std::to_string(version);
  m->name_ = name;
  m->version_ = version;
  m->generation_ = config.generation;
  m->max_queue_size_ = static_cast<size_t>(config.max_queue_size);
  m->plugins_ = plugins;
  m->shared_ = std::make_shared<Shared>();
  if (config.dynamic_batching)
    return InvalidArgument(where +
                           ": 'dynamic_batching' is for tensor models; a language model batches its "
                           "sequences every step (max_batch_size bounds them)");
  for (const InstanceGroup& group : config.instance_groups) {
    if (group.devices.size() != 1)
      return InvalidArgument(where + ": a language model instance runs on one device, got " +
                             std::to_string(group.devices.size()) + " in its instance_group");
    for (int i = 0; i < group.count; ++i) {
      LlmEngineOptions options;
      options.model_dir = files.llm_folder;
      options.device = group.devices[0];
      options.max_batch_size = config.max_batch_size;
      options.max_total_seq_len = config.generation.kv_cache_tokens;
      options.prefill_chunk_size = config.generation.prefill_chunk_size;
      options.plugins = plugins.get();
      auto instance = std::make_unique<Instance>();
      HETRT_ASSIGN_OR_RETURN(instance->engine, LlmEngine::Open(options), where);
      m->instances_.push_back(std::move(instance));
    }
  }
  if (m->instances_.empty()) return InvalidArgument(where + ": no instances");
  // The defaults must make a valid request (their ranges are the sampler's).
  const LlmModelInfo& info = m->instances_[0]->engine->info();
  GenerateRequest probe;
  probe.input_ids = {0};
  probe.max_tokens = 0;
  if (Status s = m->instances_[0]->engine->CheckRequest(Resolve(probe, config.generation)); !s.ok())
    return InvalidArgument(where + ": config.json's generation settings: " + s.message());

  ModelMetadata& md = m->metadata_;
  md.name = name;
  md.platform = "hetrt_llm";
  md.inputs.push_back({"input_ids", "INT32", {-1}});
  for (const GenerationParameter& p : GenerationParameters())
    md.inputs.push_back({p.name, p.datatype, {std::string_view(p.name) == "stop_token_ids" ? -1 : 1}});
  md.outputs.push_back({"output_ids", "INT32", {-1}});
  md.generative = true;
  md.generative_facts = {{"vocab_size", info.vocab_size},
                         {"context_window", info.context_window_size},
                         {"max_batch_size", info.max_batch_size},
                         {"prefill_chunk_size", info.prefill_chunk_size},
                         {"kv_cache_pages", info.num_total_pages},
                         {"page_size", info.page_size},
                         {"instances", static_cast<int64_t>(m->instances_.size())}};
  int64_t pages = 0;
  for (const auto& instance : m->instances_) pages += instance->engine->info().num_total_pages;
  m->stats_.pages_total = pages;
  for (auto& instance : m->instances_) {
    Instance* raw = instance.get();
    instance->thread = std::thread([m = m.get(), raw] { m->Schedule(*raw); });
    pthread_setname_np(instance->thread.native_handle(), "hetrt-llm");
  }
  return m;
}

GenerativeModel::~GenerativeModel() { Stop(); }

Result<std::shared_ptr<Generation>> GenerativeModel::Start(GenerateRequest request, GenerationSink sink) {
  auto pending = std::make_shared<Pending>();
  pending->shared = shared_;
  pending->sink = std::move(sink);
  pending->version = version_;
  pending->request = Resolve(std::move(request), generation_);
  // Every instance opened the same library: one's checks hold for all.
  HETRT_RETURN_IF_ERROR(instances_[0]->engine->CheckRequest(pending->request));
  pending->arrival = Clock::now();
  pending->deadline = pending->arrival + std::chrono::milliseconds(generation_.queue_timeout_ms);
  {
    std::lock_guard<std::mutex> lock(shared_->mutex);
    if (!shared_->admitting) {
      stats_.rejected_shutdown.fetch_add(1, std::memory_order_relaxed);
      return Unavailable("model '" + name_ + "' is shutting down");
    }
    if (shared_->queue.size() >= max_queue_size_) {
      stats_.rejected_queue_full.fetch_add(1, std::memory_order_relaxed);
      return Unavailable("model '" + name_ + "': " + std::to_string(shared_->queue.size()) +
                         " requests already wait for KV-cache pages (max_queue_size); retry later");
    }
    shared_->queue.push_back(pending);
    stats_.waiting.store(static_cast<int64_t>(shared_->queue.size()), std::memory_order_relaxed);
    active_.fetch_add(1, std::memory_order_acq_rel);
  }
  shared_->wake.notify_all();
  return std::shared_ptr<Generation>(std::move(pending));
}

// The scheduler of one instance (see the header). Events are sent without the
// lock: a sink may take the frontend's locks, and Cancel takes this one.
void GenerativeModel::Schedule(Instance& instance) {
  LlmEngine& engine = *instance.engine;
  const LlmModelInfo& info = engine.info();
  Shared& shared = *shared_;
  struct Ended {
    std::shared_ptr<Pending> request;
    GenerationEvent event;
  };
  std::vector<Ended> ended;                        // requests to end this pass (refused, cancelled, shutdown)
  std::vector<std::shared_ptr<Pending>> admitted;  // taken from the queue this pass
  std::vector<std::shared_ptr<Pending>> finished;  // ended by the step
  // The gauges: this instance's numbers, folded into the model's sums.
  auto UpdateGauges = [&] {
    const PagedKvLayout& layout = engine.kv_cache().layout();
    const int64_t reserved = info.num_total_pages - engine.unreserved_pages();
    const int64_t used = layout.num_total_pages() - layout.num_available_pages();
    const int64_t running = static_cast<int64_t>(engine.num_running() + engine.num_waiting());
    stats_.pages_reserved.fetch_add(reserved - instance.pages_reserved, std::memory_order_relaxed);
    stats_.pages_used.fetch_add(used - instance.pages_used, std::memory_order_relaxed);
    stats_.running.fetch_add(running - instance.num_running, std::memory_order_relaxed);
    instance.pages_reserved = reserved;
    instance.pages_used = used;
    instance.num_running = running;
  };
  auto Send = [this](Pending& p, GenerationEvent& e) {
    e.model_version = version_;
    p.sink(e);
  };
  auto refuse = [&](std::shared_ptr<Pending> p, Status why) {
    p->state = Pending::State::kDone;
    GenerationEvent e;
    e.kind = GenerationEvent::Kind::kRefused;
    e.status = std::move(why);
    ended.push_back({std::move(p), std::move(e)});
  };
  // Sends the last events of `ended`: their sequences leave the engine first,
  // and /metrics says so before their clients hear of the end.
  auto deliver = [&](Clock::time_point now) {
    if (ended.empty()) return;
    for (Ended& e : ended)
      if (e.request->engine_id >= 0) {
        engine.Cancel(e.request->engine_id);
        instance.running.erase(e.request->engine_id);
      }
    UpdateGauges();
    for (Ended& e : ended) {
      if (e.event.kind == GenerationEvent::Kind::kEnd) {
        stats_.finished[FinishIndex(e.event.finish_reason)].fetch_add(1, std::memory_order_relaxed);
        stats_.e2e_request_latency.Observe(SecondsBetween(e.request->arrival, now));
      }
      Send(*e.request, e.event);
      active_.fetch_sub(1, std::memory_order_acq_rel);
    }
    ended.clear();
  };
  // Under shared.mutex: whether another instance's last pass left room and
  // pages for `need` (its own admissions alone lower what it left).
  auto fits_another_instance = [&](int64_t need) {
    for (const auto& other : instances_)
      if (other.get() != &instance && other->room_seen > 0 && other->free_pages_seen >= need) return true;
    return false;
  };
  auto end_running = [&](const std::shared_ptr<Pending>& p, const char* reason, Status why) {
    p->state = Pending::State::kDone;
    GenerationEvent e;
    e.kind = GenerationEvent::Kind::kEnd;
    e.finish_reason = reason;
    e.status = std::move(why);
    e.prompt_tokens = static_cast<int64_t>(p->request.prompt.size());
    e.completion_tokens = p->generated;
    ended.push_back({p, std::move(e)});
  };
  for (;;) {
    ended.clear();
    admitted.clear();
    {
      std::unique_lock<std::mutex> lock(shared.mutex);
      for (;;) {
        // Cancelled or refused at shutdown while queued.
        for (auto it = shared.queue.begin(); it != shared.queue.end();) {
          std::shared_ptr<Pending>& p = *it;
          if (p->cancel) {  // its client left: it ended, as one cancelled while running
            stats_.finished[FinishIndex(kFinishCancelled)].fetch_add(1, std::memory_order_relaxed);
            refuse(std::move(p), FailedPrecondition("cancelled while waiting for KV-cache pages"));
          } else if (!shared.admitting) {
            stats_.rejected_shutdown.fetch_add(1, std::memory_order_relaxed);
            refuse(std::move(p), Unavailable("model '" + name_ + "' is shutting down"));
          } else {
            ++it;
            continue;
          }
          it = shared.queue.erase(it);
        }
        // This instance's cancellations.
        for (auto it = shared.cancels.begin(); it != shared.cancels.end();) {
          if ((*it)->instance != &instance) {
            ++it;
            continue;
          }
          if ((*it)->state == Pending::State::kRunning) end_running(*it, kFinishCancelled, OkStatus());
          it = shared.cancels.erase(it);
        }
        if (shared.end_running)
          for (auto& [id, p] : instance.running)
            if (p->state == Pending::State::kRunning)
              end_running(p, kFinishShutdown, Unavailable("the server is shutting down"));
        // First come, first served: the head waits until it fits.
        int64_t free_pages = engine.unreserved_pages();
        int64_t room = info.max_batch_size - static_cast<int64_t>(engine.num_running() + engine.num_waiting());
        while (!shared.queue.empty() && room > 0) {
          std::shared_ptr<Pending>& head = shared.queue.front();
          const int64_t need = engine.PagesFor(head->request);
          if (need > free_pages) break;
          free_pages -= need;
          --room;
          head->state = Pending::State::kRunning;
          head->instance = &instance;
          admitted.push_back(std::move(head));
          shared.queue.pop_front();
        }
        instance.free_pages_seen = free_pages;
        instance.room_seen = room;
        // Timed out: only what no instance can take. A request that fits when a
        // scheduler next looks runs however long the step before took (and
        // queue_timeout_ms 0 means "admit now or refuse"); one another
        // instance has room for waits for that instance's pass.
        const auto now = Clock::now();
        for (auto it = shared.queue.begin(); it != shared.queue.end();) {
          if (now < (*it)->deadline || fits_another_instance(engine.PagesFor((*it)->request))) {
            ++it;
            continue;
          }
          stats_.rejected_queue_timeout.fetch_add(1, std::memory_order_relaxed);
          refuse(std::move(*it),
                 Unavailable("model '" + name_ + "': waited " + std::to_string(generation_.queue_timeout_ms) +
                             " ms for KV-cache pages (queue_timeout_ms); retry later"));
          it = shared.queue.erase(it);
        }
        stats_.waiting.store(static_cast<int64_t>(shared.queue.size()), std::memory_order_relaxed);
        if (!ended.empty() || !admitted.empty() || engine.HasWork()) break;
        if (shared.stopping) return;
        // Idle: sleep until work comes or a request times out (one past its
        // time that another instance will take is that one's).
        auto next_deadline = Clock::time_point::max();
        for (const auto& p : shared.queue)
          if (p->deadline > now) next_deadline = std::min(next_deadline, p->deadline);
        if (next_deadline == Clock::time_point::max())
          shared.wake.wait(lock);
        else
          shared.wake.wait_until(lock, next_deadline);
      }
    }
    const auto now = Clock::now();
    // Ends first: their pages go back before the step admits anyone.
    deliver(now);
    for (std::shared_ptr<Pending>& p : admitted) {
      auto id = engine.AddRequest(p->request);
      if (!id.ok()) {  // checked at Start; only an engine fault gets here
        std::lock_guard<std::mutex> lock(shared.mutex);
        end_running(p, kFinishError, id.status());
        continue;
      }
      p->engine_id = *id;
      instance.running.emplace(*id, p);
      stats_.request_queue_time.Observe(SecondsBetween(p->arrival, now));
      stats_.prompt_tokens.fetch_add(p->request.prompt.size(), std::memory_order_relaxed);
      GenerationEvent e;
      e.kind = GenerationEvent::Kind::kAdmitted;
      Send(*p, e);
    }
    deliver(now);
    if (!engine.HasWork()) continue;
    // One step; its tokens go out at once.
    finished.clear();
    const uint64_t step_cpu = ThreadCpuNs();
    auto events = engine.Step();
    stats_.step_thread_cpu_ns.fetch_add(ThreadCpuNs() - step_cpu, std::memory_order_relaxed);
    stats_.steps.fetch_add(1, std::memory_order_relaxed);
    const auto stepped = Clock::now();
    UpdateGauges();  // (the requests the step finished have left the engine)
    if (!events.ok()) {
      Log(LogLevel::kError, "serve", "model '" + name_ + "': a step failed: " + events.status().message());
      {
        std::lock_guard<std::mutex> lock(shared.mutex);
        // The model's fault, not the requests': a 500 whatever code the step gave.
        const Status fault = Internal("a step of model '" + name_ + "' failed: " + events.status().message());
        for (auto& [id, p] : instance.running) end_running(p, kFinishError, fault);
      }
      deliver(stepped);
    } else {
      for (const TokenEvent& t : *events) {
        auto it = instance.running.find(t.request);
        if (it == instance.running.end()) continue;
        Pending& p = *it->second;
        GenerationEvent e;
        e.token = t.token;
        if (t.token >= 0) {
          (p.generated == 0 ? stats_.time_to_first_token : stats_.inter_token_latency)
              .Observe(SecondsBetween(p.generated == 0 ? p.arrival : p.last_token, stepped));
          p.last_token = stepped;
          ++p.generated;
          stats_.generation_tokens.fetch_add(1, std::memory_order_relaxed);
        }
        if (t.finish == FinishReason::kNone) {
          e.kind = GenerationEvent::Kind::kToken;
          Send(p, e);
          continue;
        }
        e.kind = GenerationEvent::Kind::kEnd;
        e.finish_reason = FinishOf(t.finish);
        if (t.finish == FinishReason::kError) e.status = Internal(t.error);
        e.prompt_tokens = static_cast<int64_t>(p.request.prompt.size());
        e.completion_tokens = p.generated;
        stats_.finished[FinishIndex(e.finish_reason)].fetch_add(1, std::memory_order_relaxed);
        stats_.e2e_request_latency.Observe(SecondsBetween(p.arrival, stepped));
        finished.push_back(it->second);
        instance.running.erase(it);
        Send(p, e);
      }
      if (!finished.empty()) {
        std::lock_guard<std::mutex> lock(shared.mutex);
        for (auto& p : finished) p->state = Pending::State::kDone;
      }
      active_.fetch_sub(static_cast<int64_t>(finished.size()), std::memory_order_acq_rel);
    }
  }
}

void GenerativeModel::StopAdmission() {
  {
    std::lock_guard<std::mutex> lock(shared_->mutex);
    shared_->admitting = false;
  }
  shared_->wake.notify_all();
}

void GenerativeModel::EndRunning() {
  {
    std::lock_guard<std::mutex> lock(shared_->mutex);
    shared_->admitting = false;
    shared_->end_running = true;
  }
  shared_->wake.notify_all();
}

void GenerativeModel::Stop() {
  EndRunning();
  // The schedulers end what runs at their next pass, then see `stopping`.
  {
    std::lock_guard<std::mutex> lock(shared_->mutex);
    shared_->stopping = true;
  }
  shared_->wake.notify_all();
  for (auto& instance : instances_)
    if (instance->thread.joinable()) instance->thread.join();
}

}  // namespace hetrt::serve
