#include "model_version.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "batching.h"
#include "hetrt/exec/open_model.h"
#include "hetrt/exec/relax_executor.h"
#include "hetrt/base/dtype.h"
#include "hetrt/base/log.h"
#include "hetrt/exec/whole_model_executor.h"
#include "hetrt/plugin_host/plugin_registry.h"

namespace hetrt::serve {
namespace {

uint64_t NowNs() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

std::string ShapeText(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string Joined(const std::vector<std::string>& names) {
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "" : ",") + n;
  return s;
}

// A profiled run whose node times, summed per lane, feed the per-lane metrics.
Status RunSampled(GraphExecutor& graph, InstanceStats& stats) {
  GraphExecutor::RunProfile profile;
  HETRT_RETURN_IF_ERROR(graph.RunProfiled(&profile));
  std::lock_guard<std::mutex> lock(stats.lanes_mutex);
  ++stats.profiled_runs;
  for (const auto& node : profile.nodes)
    if (node.lane < profile.lanes.size() && node.end_ns > node.start_ns)
      stats.lane_ns[profile.lanes[node.lane]] += node.end_ns - node.start_ns;
  return OkStatus();
}

// Names the thread (ps, top, perf, the tests). With several instances it runs
// SCHED_BATCH: its wake-up (its device stage done, a request queued) then does
// not preempt another instance's CPU stage on the same core, so two requests'
// CPU stages run one after the other instead of time-sliced side by side, and
// each hands its device the next stage sooner: the devices overlap. With one
// instance there is nothing to overlap, and the default policy wakes it
// soonest. SCHED_BATCH needs no privilege (it never raises a priority); if it
// is refused the thread keeps the default.
void SetUpInstanceThread(std::thread& thread, bool several_instances) {
  pthread_setname_np(thread.native_handle(), "hetrt-instance");
  if (!several_instances) return;
  sched_param param{};
  param.sched_priority = 0;
  if (const int error = pthread_setschedparam(thread.native_handle(), SCHED_BATCH, &param); error != 0)
    Log(LogLevel::kWarning, "serve",
        std::string("an instance thread keeps the default scheduling policy (SCHED_BATCH: ") + std::strerror(error) +
            ")");
}

}  // namespace

Result<std::shared_ptr<PluginRegistry>> OpenPluginsWith(const std::vector<PluginSetting>& settings) {
  std::shared_ptr<PluginRegistry> registry = PluginRegistry::Discover({});
  for (const PluginSetting& setting : settings) {
    const std::string parameter = "parameters: " + setting.plugin + "." + setting.key;
    Plugin* plugin = nullptr;
    std::string names;
    for (const auto& p : registry->plugins()) {
      if (p->name() == setting.plugin) plugin = p.get();
      names += (names.empty() ? "" : ", ") + p->name();
    }
    if (plugin == nullptr) return NotFound(parameter + ": no plugin named '" + setting.plugin + "' (found: " + names + ")");
    HETRT_RETURN_IF_ERROR(plugin->SetOption(setting.key, setting.value), parameter + "='" + setting.value + "'");
  }
  return registry;
}

struct ModelVersion::Instance {
  Model model;  // the executor and the module tree it runs (none for a whole-model one)
  Executor* executor = nullptr;
  GraphExecutor* graph = nullptr;  // the same executor when it is a graph one (profiled runs)
  // Per output: the graph writes it straight into the tensor the answer
  // carries (GraphExecutor::OutputBindsInPlace), sparing a copy per run. Every
  // run binds each such output, to a fresh tensor, or to `output_scratch`
  // when no request of the run asked for it.
  std::vector<bool> outputs_in_place;
  std::vector<Tensor> output_scratch;
  InstanceStats stats;
  bool busy = false;  // under mutex_: its thread or a caller is running it
  // A run's time, averaged over the last few (the warm-up's at first): whether
  // an event-loop caller may run it.
  std::atomic<uint64_t> recent_run_ns{0};
  std::thread thread;
};

struct ModelVersion::Pending {
  InferRequest request;
  std::vector<int> outputs;  // output indices to return, in order
  int64_t rows = 0;          // rows on the batch axis (0 when not batching)
  uint64_t enqueued_ns = 0;
  InferDone done;
};

Result<std::unique_ptr<ModelVersion>> ModelVersion::Open(const std::string& name, int64_t version,
                                                         const ModelVersionFiles& files, const ModelConfig& config,
                                                         std::shared_ptr<PluginRegistry> plugins) {
  std::unique_ptr<ModelVersion> mv(new ModelVersion());
  mv->plugins_ = plugins;
  mv->name_ = name;
  mv->version_ = version;
  mv->config_ = config;
  const std::string where = "model '" + name + "' version " + std::to_string(version);
  for (const InstanceGroup& group : config.instance_groups) {
    for (int i = 0; i < group.count; ++i) {
      auto instance = std::make_unique<Instance>();
      instance->stats.devices = Joined(group.devices);
      ModelSpec spec{files.kind == ModelVersionFiles::Kind::kMlf ? files.mlf : files.graph.library,
                     files.graph.graph_json, files.graph.params,
                     config.function != "main" ? config.function : std::string(), group.devices};
      spec.plugins = plugins.get();
      if (files.kind == ModelVersionFiles::Kind::kMlf && group.devices.size() != 1)
        return InvalidArgument(where + ": a Model Library Format model runs on one device, got '" +
                               instance->stats.devices + "'");
      HETRT_ASSIGN_OR_RETURN(instance->model, OpenModel(spec), where);
      instance->executor = instance->model.executor.get();
      instance->graph = dynamic_cast<GraphExecutor*>(instance->executor);
      mv->instances_.push_back(std::move(instance));
    }
  }
  if (mv->instances_.empty()) return InvalidArgument(where + ": no instances");
  const bool relax = dynamic_cast<RelaxExecutor*>(mv->instances_[0]->executor) != nullptr;
  mv->metadata_.platform = relax                                                 ? "hetrt_relax_vm"
                           : files.kind == ModelVersionFiles::Kind::kMlf           ? "hetrt_mlf"
                           : files.kind == ModelVersionFiles::Kind::kGraphTriple ? "hetrt_graph"
                                                                                 : "hetrt_library";
  HETRT_RETURN_IF_ERROR(mv->InitMetadata(), where);
  // Which of its outputs each graph instance writes in place.
  for (auto& instance : mv->instances_) {
    const GraphExecutor* graph = instance->graph;
    auto on_cpu = [](const Tensor& t) { return t.device().device_type == kDLCPU; };
    for (int o = 0; o < static_cast<int>(mv->metadata_.outputs.size()); ++o)
      instance->outputs_in_place.push_back(graph != nullptr && on_cpu(graph->OutputTensor(o)) &&
                                           graph->OutputBindsInPlace(o));
    instance->output_scratch.resize(mv->metadata_.outputs.size());
  }
  HETRT_RETURN_IF_ERROR(mv->WarmUp(), where + ": warm-up run on zeros failed");
  mv->start_ns_ = NowNs();
  for (auto& instance : mv->instances_) {
    Instance* raw = instance.get();
    instance->thread = std::thread([mv = mv.get(), raw] { mv->Serve(*raw); });
    SetUpInstanceThread(instance->thread, mv->instances_.size() > 1);
  }
  return mv;
}

ModelVersion::~ModelVersion() { Stop(); }

Status ModelVersion::InitMetadata() {
  metadata_.name = name_;
  const Executor& ex = *instances_[0]->executor;
  for (int index : ex.UnboundInputs()) {
    const TensorSpec spec = ex.InputSpec(index);
    const std::string datatype = ProtocolDataType(spec.dtype);
    if (datatype.empty())
      return Unimplemented("input '" + ex.InputName(index) + "' has dtype " + DataTypeToString(spec.dtype) +
                           ", which the inference protocol cannot name");
    metadata_.inputs.push_back({ex.InputName(index), datatype, spec.shape});
    input_index_.push_back(index);
  }
  for (int i = 0; i < ex.NumOutputs(); ++i) {
    const TensorSpec spec = ex.OutputSpec(i);
    const std::string datatype = ProtocolDataType(spec.dtype);
    if (datatype.empty())
      return Unimplemented("output " + std::to_string(i) + " has dtype " + DataTypeToString(spec.dtype) +
                           ", which the inference protocol cannot name");
    metadata_.outputs.push_back({"output_" + std::to_string(i), datatype, spec.shape});
  }
  if (config_.max_batch_size <= 0) return OkStatus();
  // Batching needs one batch axis N, the first, on every input and output.
  int64_t n = -1;
  for (const auto* list : {&metadata_.inputs, &metadata_.outputs})
    for (const TensorMetadata& t : *list) {
      if (t.shape.empty())
        return InvalidArgument("max_batch_size " + std::to_string(config_.max_batch_size) +
                               " needs a batch axis, but '" + t.name + "' is a scalar");
      if (n >= 0 && t.shape[0] != n)
        return InvalidArgument("max_batch_size needs the same first dimension on every input and output; '" + t.name +
                               "' has shape " + ShapeText(t.shape) + ", others " + std::to_string(n));
      n = t.shape[0];
    }
  symbolic_batch_ = n < 0;
  if (symbolic_batch_) n = config_.max_batch_size;  // any N: batches are as large as the config allows
  if (config_.max_batch_size > n)
    return InvalidArgument("max_batch_size " + std::to_string(config_.max_batch_size) +
                           " exceeds the batch dimension the model was compiled with (" + std::to_string(n) + ")");
  compiled_batch_ = n;
  batch_capacity_ = config_.max_batch_size;
  batch_target_ = batch_capacity_;
  if (!config_.preferred_batch_sizes.empty())
    batch_target_ = *std::max_element(config_.preferred_batch_sizes.begin(), config_.preferred_batch_sizes.end());
  for (auto* list : {&metadata_.inputs, &metadata_.outputs})
    for (TensorMetadata& t : *list) t.shape[0] = -1;
  return OkStatus();
}

// One run per instance on zero inputs, before any instance thread starts.
// TVM's generated code looks kernels up lazily and caches the handles in the
// library's globals, which all instances of a library share; filling those
// caches here, on one thread, means the instance threads (started after)
// only ever read them. It also moves first-run costs out of the first request.
Status ModelVersion::WarmUp() {
  for (auto& instance : instances_) {
    Executor& ex = *instance->executor;
    for (int index : input_index_) {
      TensorSpec spec = ex.InputSpec(index);
      // Symbolic dims: the largest batch the model takes (so the largest
      // buffers are made now), 1 elsewhere.
      for (size_t d = 0; d < spec.shape.size(); ++d)
        if (spec.shape[d] < 0) spec.shape[d] = d == 0 && compiled_batch_ > 0 ? batch_capacity_ : 1;
      HETRT_ASSIGN_OR_RETURN(Tensor zeros, Tensor::EmptyHost(spec.shape, spec.dtype));
      std::memset(zeros.data(), 0, zeros.nbytes());
      HETRT_RETURN_IF_ERROR(ex.SetInput(index, zeros));
    }
    const uint64_t start = NowNs();
    HETRT_RETURN_IF_ERROR(ex.Run());
    HETRT_RETURN_IF_ERROR(ex.Synchronize());
    instance->recent_run_ns.store(NowNs() - start, std::memory_order_relaxed);
  }
  return OkStatus();
}

Status ModelVersion::CheckRequest(InferRequest& request, int64_t& rows, std::vector<int>& outputs) const {
  // Inputs: every one given once, by name, with the model's dtype and shape.
  std::vector<InferTensor> ordered(metadata_.inputs.size());
  std::vector<bool> seen(metadata_.inputs.size(), false);
  rows = 0;
  for (InferTensor& given : request.inputs) {
    size_t i = 0;
    while (i < metadata_.inputs.size() && metadata_.inputs[i].name != given.name) ++i;
    if (i == metadata_.inputs.size()) {
      std::string names;
      for (const TensorMetadata& t : metadata_.inputs) names += (names.empty() ? "" : ", ") + t.name;
      return InvalidArgument("model '" + name_ + "' has no input named '" + given.name + "' (inputs: " + names + ")");
    }
    if (seen[i]) return InvalidArgument("input '" + given.name + "' is given twice");
    seen[i] = true;
    const TensorMetadata& want = metadata_.inputs[i];
    const std::string got_type = ProtocolDataType(given.tensor.dtype());
    if (got_type != want.datatype)
      return InvalidArgument("input '" + given.name + "': datatype " + got_type + ", expected " + want.datatype);
    const std::vector<int64_t>& shape = given.tensor.shape();
    bool fits = shape.size() == want.shape.size();
    for (size_t d = 0; fits && d < shape.size(); ++d)
      fits = want.shape[d] < 0 ? shape[d] >= 1 : shape[d] == want.shape[d];
    if (fits && compiled_batch_ > 0) {
      fits = shape[0] <= batch_capacity_;
      if (rows != 0 && shape[0] != rows)
        return InvalidArgument("input '" + given.name + "' has " + std::to_string(shape[0]) +
                               " rows; the other inputs have " + std::to_string(rows));
      rows = shape[0];
    }
    if (!fits) {
      std::string expected = ShapeText(want.shape);
      if (compiled_batch_ > 0) expected += " with the first dimension between 1 and " + std::to_string(batch_capacity_);
      return InvalidArgument("input '" + given.name + "': shape " + ShapeText(shape) + ", expected " + expected);
    }
    ordered[i] = std::move(given);
  }
  for (size_t i = 0; i < seen.size(); ++i)
    if (!seen[i]) return InvalidArgument("input '" + metadata_.inputs[i].name + "' is missing");
  request.inputs = std::move(ordered);

  outputs.clear();
  for (const std::string& name : request.outputs) {
    size_t o = 0;
    while (o < metadata_.outputs.size() && metadata_.outputs[o].name != name) ++o;
    if (o == metadata_.outputs.size())
      return InvalidArgument("model '" + name_ + "' has no output named '" + name + "' (outputs: output_0 .. output_" +
                             std::to_string(metadata_.outputs.size() - 1) + ")");
    if (std::find(outputs.begin(), outputs.end(), static_cast<int>(o)) != outputs.end())
      return InvalidArgument("output '" + name + "' is requested twice");
    outputs.push_back(static_cast<int>(o));
  }
  if (outputs.empty())
    for (size_t o = 0; o < metadata_.outputs.size(); ++o) outputs.push_back(static_cast<int>(o));
  return OkStatus();
}

void ModelVersion::Submit(InferRequest request, InferDone done, Caller caller) {
  auto pending = std::make_unique<Pending>();
  pending->enqueued_ns = NowNs();
  if (Status checked = CheckRequest(request, pending->rows, pending->outputs); !checked.ok()) return done(checked);
  pending->request = std::move(request);
  pending->done = std::move(done);
  Instance* inline_instance = nullptr;
  bool wake = false;
  Status refused = OkStatus();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) {
      refused = Unavailable("model '" + name_ + "' version " + std::to_string(version_) + " is being unloaded");
    } else if (queue_.size() >= static_cast<size_t>(config_.max_queue_size)) {
      refused = Unavailable("model '" + name_ + "': the request queue is full (max_queue_size " +
                            std::to_string(config_.max_queue_size) + "); retry later");
    } else {
      // Nothing waiting and an instance idle: this thread runs it, sparing two
      // thread hand-offs (the instance's thread and back) on the latency path.
      // An event-loop caller does so only when its request is the only one in
      // flight: under load its thread is needed to read the other connections,
      // and the instance's thread runs the queue back to back (gRPC at
      // concurrency 16: 1.4x the requests/s, a fifth less CPU per request).
      // Dynamic batching always goes through the queue (the instance's thread
      // collects the batch).
      const bool alone = in_flight_.fetch_add(1, std::memory_order_relaxed) == 0;
      if (!config_.dynamic_batching && queue_.empty() && (alone || caller == Caller::kBlocking))
        inline_instance = TakeIdleInstance();
      if (inline_instance == nullptr) {
        queue_.push_back(std::move(pending));
        // A busy instance looks at the queue when its run ends: waking its
        // thread now would only put it back to sleep. A batching thread waits
        // for more rows while its instance is busy.
        wake = config_.dynamic_batching || AnyInstanceIdle();
      }
    }
  }
  if (!refused.ok()) {
    stats_.rejected.fetch_add(1, std::memory_order_relaxed);
    return pending->done(refused);
  }
  if (inline_instance == nullptr) {
    if (wake) queued_.notify_all();
    return;
  }
  Batch batch;
  batch.push_back(std::move(pending));
  std::vector<Result<InferResponse>> answers = Execute(*inline_instance, batch);
  // Free before answering: the caller's next request finds the instance idle.
  Release(*inline_instance);
  Answer(batch, answers);
}

// A caller is done with `instance`: the instance's thread takes what queued
// meanwhile. (Handing the instance to a blocking caller waiting in the queue
// instead, to run its request on its own thread, was slower: the instance then
// idles while that caller wakes up, where its own thread, already awake,
// runs the queue back to back.)
void ModelVersion::Release(Instance& instance) {
  bool wake = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    instance.busy = false;
    // Stopping: the instance's thread may be waiting for this instance to be
    // free before it can see that nothing is left and exit.
    wake = !queue_.empty() || stopping_;
  }
  if (wake) queued_.notify_all();
}

// Under mutex_. Only an instance whose runs are short: a long run on an
// event-loop thread would hold up the connections it serves, and on any
// caller's thread it would miss the instance thread's scheduling.
ModelVersion::Instance* ModelVersion::TakeIdleInstance() {
  for (auto& instance : instances_) {
    if (instance->busy || instance->recent_run_ns.load(std::memory_order_relaxed) > kShortRunNs) continue;
    instance->busy = true;
    return instance.get();
  }
  return nullptr;
}

// Under mutex_.
bool ModelVersion::AnyInstanceIdle() const {
  for (const auto& instance : instances_)
    if (!instance->busy) return true;
  return false;
}

void ModelVersion::TakeBatch(std::unique_lock<std::mutex>& lock, Batch& batch) {
  batch.push_back(std::move(queue_.front()));
  queue_.pop_front();
  // Without dynamic_batching (Triton's meaning) each request runs alone, padded.
  if (compiled_batch_ <= 0 || !config_.dynamic_batching) return;
  int64_t rows = batch[0]->rows;
  const auto deadline = std::chrono::steady_clock::time_point(std::chrono::nanoseconds(batch[0]->enqueued_ns)) +
                        std::chrono::microseconds(config_.max_queue_delay_us);
  while (rows < batch_target_) {
    if (!queue_.empty()) {
      if (rows + queue_.front()->rows > batch_capacity_) break;  // FIFO: the next one starts the next batch
      rows += queue_.front()->rows;
      batch.push_back(std::move(queue_.front()));
      queue_.pop_front();
      continue;
    }
    if (stopping_ || config_.max_queue_delay_us == 0) break;
    if (queued_.wait_until(lock, deadline) == std::cv_status::timeout && queue_.empty()) break;
  }
}

void ModelVersion::Serve(Instance& instance) {
  Batch batch;
  for (;;) {
    batch.clear();
    {
      std::unique_lock<std::mutex> lock(mutex_);
      queued_.wait(lock, [&] { return (stopping_ && queue_.empty()) || (!queue_.empty() && !instance.busy); });
      if (queue_.empty()) return;  // stopping, nothing left
      instance.busy = true;
      TakeBatch(lock, batch);
    }
    std::vector<Result<InferResponse>> answers = Execute(instance, batch);
    Answer(batch, answers);
    std::lock_guard<std::mutex> lock(mutex_);
    instance.busy = false;
  }
}

// Runs the batch on `instance`: one answer per request, in order.
std::vector<Result<InferResponse>> ModelVersion::Execute(Instance& instance, const Batch& batch) {
  const uint64_t start = NowNs();
  int64_t rows = 0;
  for (const auto& p : batch) {
    stats_.queue_ns.fetch_add(start - p->enqueued_ns, std::memory_order_relaxed);
    rows += p->rows;
  }
  std::vector<Result<InferResponse>> answers;
  answers.reserve(batch.size());
  const Status status = RunBatch(instance, batch, rows, answers);
  if (!status.ok()) answers.assign(batch.size(), Result<InferResponse>(status));
  const uint64_t end = NowNs();
  instance.stats.busy_ns.fetch_add(end - start, std::memory_order_relaxed);
  const uint64_t recent = instance.recent_run_ns.load(std::memory_order_relaxed);
  instance.recent_run_ns.store((3 * recent + (end - start)) / 4, std::memory_order_relaxed);
  instance.stats.executions.fetch_add(1, std::memory_order_relaxed);
  stats_.executions.fetch_add(1, std::memory_order_relaxed);
  const size_t bucket =
      std::min<size_t>(static_cast<size_t>(compiled_batch_ > 0 ? rows : 1), ModelVersionStats::kBatchBuckets - 1);
  stats_.executions_by_rows[bucket].fetch_add(1, std::memory_order_relaxed);
  return answers;
}

// Counted before anyone is answered: a caller reading /metrics after its
// response sees its own run.
void ModelVersion::Answer(Batch& batch, std::vector<Result<InferResponse>>& answers) {
  const uint64_t end = NowNs();
  for (size_t i = 0; i < batch.size(); ++i) {
    (answers[i].ok() ? stats_.success : stats_.failure).fetch_add(1, std::memory_order_relaxed);
    stats_.request_ns.fetch_add(end - batch[i]->enqueued_ns, std::memory_order_relaxed);
  }
  for (size_t i = 0; i < batch.size(); ++i) {
    InferDone done = std::move(batch[i]->done);
    batch[i].reset();  // the request's tensors go before its caller hears back
    done(std::move(answers[i]));
    // In flight until answered: what `done` submits is not alone.
    in_flight_.fetch_sub(1, std::memory_order_relaxed);
  }
}

// Runs the batch; on success `answers` holds one result per request, in order.
Status ModelVersion::RunBatch(Instance& instance, const Batch& batch, int64_t rows,
                              std::vector<Result<InferResponse>>& answers) {
  Executor& ex = *instance.executor;
  // Packed: several requests in one run, or (static shapes) fewer rows than N, zero-padded.
  const bool packed = compiled_batch_ > 0 && (batch.size() > 1 || (!symbolic_batch_ && rows != compiled_batch_));
  for (size_t i = 0; i < input_index_.size(); ++i) {
    const int index = input_index_[i];
    if (!packed) {
      // In place (a graph spares a copy of the input), the executor views the
      // request's tensor until the next run sets its inputs again; the
      // request outlives this run.
      const Tensor& given = batch[0]->request.inputs[i].tensor;
      if (instance.graph != nullptr && instance.graph->InputTakesInPlace(index, given))
        HETRT_RETURN_IF_ERROR(instance.graph->SetInputZeroCopy(index, given));
      else {
        HETRT_RETURN_IF_ERROR(ex.SetInput(index, given));
        instance.stats.input_bytes_copied.fetch_add(given.nbytes(), std::memory_order_relaxed);
      }
      continue;
    }
    TensorSpec spec = ex.InputSpec(index);
    if (symbolic_batch_) spec.shape = batch[0]->request.inputs[i].tensor.shape(), spec.shape[0] = rows;
    HETRT_ASSIGN_OR_RETURN(Tensor whole, Tensor::EmptyHost(spec.shape, spec.dtype));
    std::vector<const Tensor*> parts;
    for (const auto& p : batch) parts.push_back(&p->request.inputs[i].tensor);
    HETRT_RETURN_IF_ERROR(PackRows(parts, whole));
    HETRT_RETURN_IF_ERROR(ex.SetInput(index, whole));
    instance.stats.input_bytes_copied.fetch_add(2 * whole.nbytes(), std::memory_order_relaxed);  // packed, then set
  }
  // Each output the batch asks for reaches the host once, then is handed out
  // (sliced when packed): written there by the run where the graph takes the
  // output in place, else copied after it.
  std::vector<Tensor> results(metadata_.outputs.size());
  std::vector<bool> wanted(results.size(), false);
  for (const auto& p : batch)
    for (int o : p->outputs) wanted[static_cast<size_t>(o)] = true;
  for (size_t o = 0; o < results.size(); ++o) {
    if (!instance.outputs_in_place[o]) continue;
    Tensor* into = &instance.output_scratch[o];
    if (wanted[o]) into = &results[o];
    if (!into->defined()) {
      const TensorSpec spec = ex.OutputSpec(static_cast<int>(o));
      HETRT_ASSIGN_OR_RETURN(*into, Tensor::EmptyHost(spec.shape, spec.dtype));
    }
    HETRT_RETURN_IF_ERROR(instance.graph->SetOutputZeroCopy(static_cast<int>(o), *into));
  }
  if (instance.graph != nullptr &&
      instance.stats.executions.load(std::memory_order_relaxed) % InstanceStats::kProfileEvery == 0) {
    HETRT_RETURN_IF_ERROR(RunSampled(*instance.graph, instance.stats));
  } else {
    HETRT_RETURN_IF_ERROR(ex.Run());
  }
  HETRT_RETURN_IF_ERROR(ex.Synchronize());
  for (size_t o = 0; o < results.size(); ++o)
    if (wanted[o] && !results[o].defined()) {
      HETRT_ASSIGN_OR_RETURN(results[o], ex.GetOutput(static_cast<int>(o)));
      instance.stats.output_bytes_copied.fetch_add(results[o].nbytes(), std::memory_order_relaxed);
    }
  int64_t row = 0;
  for (const auto& p : batch) {
    InferResponse response;
    response.model = name_;
    response.version = std::to_string(version_);
    response.id = std::move(p->request.id);
    Status sliced = OkStatus();
    for (int o : p->outputs) {
      InferTensor out{metadata_.outputs[static_cast<size_t>(o)].name, results[static_cast<size_t>(o)]};
      if (packed) {
        auto slice = SliceRows(out.tensor, row, p->rows);
        if (!slice.ok()) {
          sliced = slice.status();
          break;
        }
        out.tensor = std::move(slice).value();
        instance.stats.output_bytes_copied.fetch_add(out.tensor.nbytes(), std::memory_order_relaxed);
      }
      response.outputs.push_back(std::move(out));
    }
    row += p->rows;
    if (sliced.ok())
      answers.emplace_back(std::move(response));
    else
      answers.emplace_back(sliced);
  }
  return OkStatus();
}

void ModelVersion::Stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  queued_.notify_all();
  for (auto& instance : instances_)
    if (instance->thread.joinable()) instance->thread.join();
}

std::vector<const InstanceStats*> ModelVersion::instance_stats() const {
  std::vector<const InstanceStats*> stats;
  for (const auto& instance : instances_) stats.push_back(&instance->stats);
  return stats;
}

uint64_t ModelVersion::uptime_ns() const { return NowNs() - start_ns_; }

}  // namespace hetrt::serve
