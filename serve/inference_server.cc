#include "hetrt/serve/inference_server.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <future>
#include <optional>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "generative_model.h"
#include "hetrt/base/log.h"
#include "metrics.h"
#include "model_config.h"
#include "model_files.h"
#include "model_version.h"

#ifndef HETRT_SERVE_VERSION
#define HETRT_SERVE_VERSION "0"
#endif

namespace hetrt::serve {
namespace {

struct ModelEntry {
  bool wanted = false;  // asked to be loaded (at start or by the repository API)
  std::string state = "UNAVAILABLE";
  std::string reason = "not loaded";
  std::map<int64_t, std::shared_ptr<ServedModel>> versions;  // the loaded ones
  // The model's own plugin instances (config.json parameters) and the settings
  // they were opened with: kept across reloads while the settings stay the
  // same, since a library is loaded through one set of plugins at a time.
  std::shared_ptr<PluginRegistry> plugins;
  std::vector<PluginSetting> plugin_settings;
};

// A model name is one folder of the repository: no separators, no "..".
Status CheckModelName(const std::string& name) {
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos ||
      name.find('\\') != std::string::npos || name.find('\0') != std::string::npos)
    return InvalidArgument("'" + name + "' is not a model name (one folder of the model repository)");
  return OkStatus();
}

Result<std::string> ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound("cannot read " + path);
  std::ostringstream s;
  s << in.rdbuf();
  if (s.str().size() > (1u << 20)) return InvalidArgument(path + ": over 1 MiB; a config is a few lines of JSON");
  return s.str();
}

Result<std::vector<int64_t>> SelectVersions(const std::string& dir, const ModelConfig& config) {
  HETRT_ASSIGN_OR_RETURN(std::vector<int64_t> present, ListVersions(dir));
  if (present.empty()) return NotFound(dir + ": no numeric version folder (expected " + dir + "/1/ and so on)");
  std::vector<int64_t> chosen;
  switch (config.version_policy) {
    case ModelConfig::VersionPolicy::kAll: chosen = present; break;
    case ModelConfig::VersionPolicy::kLatest:
      chosen.assign(present.end() - std::min<ptrdiff_t>(config.latest_versions, static_cast<ptrdiff_t>(present.size())),
                    present.end());
      break;
    case ModelConfig::VersionPolicy::kSpecific:
      for (int64_t v : config.specific_versions) {
        if (std::find(present.begin(), present.end(), v) == present.end())
          return NotFound(dir + ": version_policy names version " + std::to_string(v) + ", which has no folder");
        chosen.push_back(v);
      }
      break;
  }
  return chosen;
}

// The tensor model an infer request needs, or why `found` is not one.
Result<ModelVersion*> TensorModel(const Result<ServedModel*>& found) {
  if (!found.ok()) return found.status();
  if (ModelVersion* tensor = (*found)->tensor_model()) return tensor;
  const std::string& name = (*found)->name();
  return InvalidArgument("model '" + name + "' is a language model: send its requests to POST /v2/models/" + name +
                         "/generate or /generate_stream (gRPC: ModelStreamInfer)");
}

}  // namespace

struct InferenceServer::State {
  mutable std::mutex mutex;  // guards models
  std::map<std::string, ModelEntry> models;
  std::mutex load_mutex;  // one load or unload at a time
  bool draining = false;  // under mutex
  // Infer calls in progress and InferAsync requests not yet answered: raised
  // under mutex (after the draining check) or within a call, lowered under
  // mutex (Finished), which signals `idle` when it reaches 0.
  std::atomic<int64_t> in_flight{0};
  std::condition_variable idle;
  // Readiness observers: called under observers_mutex (so removal waits for a
  // call in progress), never under mutex.
  std::mutex observers_mutex;
  std::map<int, std::function<void()>> observers;
  int next_observer = 0;

  void NotifyReadiness() {
    std::lock_guard<std::mutex> lock(observers_mutex);
    for (auto& [id, observer] : observers) observer();
  }

  Result<std::shared_ptr<ServedModel>> Find(const std::string& model, const std::string& version) const;
  template <typename Use>
  void Run(const std::string& model, const std::string& version, Use&& use);
  void Finished();  // a call or a request left in_flight
};

Result<std::shared_ptr<ServedModel>> InferenceServer::State::Find(const std::string& model,
                                                                  const std::string& version) const {
  auto it = models.find(model);
  if (it == models.end()) return NotFound("unknown model '" + model + "'");
  const ModelEntry& entry = it->second;
  if (entry.versions.empty())
    return Unavailable("model '" + model + "' is not ready" + (entry.reason.empty() ? "" : ": " + entry.reason));
  if (version.empty()) return entry.versions.rbegin()->second;
  for (const auto& [number, served] : entry.versions)
    if (std::to_string(number) == version) return served;
  std::string loaded;
  for (const auto& [number, served] : entry.versions) loaded += (loaded.empty() ? "" : ", ") + std::to_string(number);
  return NotFound("model '" + model + "' has no version '" + version + "' loaded (loaded: " + loaded + ")");
}

InferenceServer::InferenceServer(ServerOptions options)
    : options_(std::move(options)), state_(std::make_shared<State>()) {}

InferenceServer::~InferenceServer() { Drain(); }

Result<std::unique_ptr<InferenceServer>> InferenceServer::Create(const ServerOptions& options) {
  std::unique_ptr<InferenceServer> server(new InferenceServer(options));
  HETRT_ASSIGN_OR_RETURN(std::vector<std::string> models, ListModels(options.model_repository));
  const std::vector<std::string>& wanted = options.initial_models.empty() ? models : options.initial_models;
  for (const std::string& model : models) server->state_->models[model];  // listed in the index, not loaded
  for (const std::string& model : wanted) {
    Status s = server->Load(model);
    if (!s.ok()) Log(LogLevel::kError, "serve", "model '" + model + "' is not served: " + s.message());
  }
  return server;
}

bool InferenceServer::Live() const { return true; }

bool InferenceServer::Ready() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  if (state_->draining) return false;
  for (const auto& [name, entry] : state_->models)
    if (entry.wanted && entry.versions.empty()) return false;
  return true;
}

std::string InferenceServer::Version() const { return HETRT_SERVE_VERSION; }

std::vector<std::string> InferenceServer::Extensions() const { return {"binary_tensor_data", "model_repository"}; }

Result<ModelMetadata> InferenceServer::Metadata(const std::string& model, const std::string& version) const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  HETRT_ASSIGN_OR_RETURN(std::shared_ptr<ServedModel> served, state_->Find(model, version));
  ModelMetadata metadata = served->metadata();
  for (const auto& [number, v] : state_->models.at(model).versions) metadata.versions.push_back(std::to_string(number));
  return metadata;
}

Result<bool> InferenceServer::ModelReady(const std::string& model, const std::string& version) const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  auto found = state_->Find(model, version);
  if (found.ok()) return !state_->draining;
  if (found.status().code() == StatusCode::kNotFound && state_->models.count(model) == 0) return found.status();
  return false;
}

Result<InferResponse> InferenceServer::Infer(InferRequest request) {
  std::optional<Result<InferResponse>> answer;
  state_->Run(request.model, request.version, [&](Result<ServedModel*> found) {
    Result<ModelVersion*> served = TensorModel(found);
    if (!served.ok()) {
      answer = Result<InferResponse>(served.status());
      return;
    }
    std::promise<Result<InferResponse>> answered;
    std::future<Result<InferResponse>> response = answered.get_future();
    (*served)->Submit(
        std::move(request), [&answered](Result<InferResponse> a) { answered.set_value(std::move(a)); },
        ModelVersion::Caller::kBlocking);
    answer = response.get();  // within the call, which Drain waits for
  });
  return std::move(*answer);
}

void InferenceServer::InferAsync(InferRequest request, InferDone done) {
  state_->Run(request.model, request.version, [&](Result<ServedModel*> found) {
    Result<ModelVersion*> served = TensorModel(found);
    if (!served.ok()) return done(served.status());
    // The request is in flight, for Drain, until it is answered.
    state_->in_flight.fetch_add(1, std::memory_order_relaxed);
    (*served)->Submit(
        std::move(request),
        [state = state_.get(), done = std::move(done)](Result<InferResponse> answer) {
          done(std::move(answer));
          state->Finished();
        },
        ModelVersion::Caller::kEventLoop);
  });
}

// Under the lock: Drain must not see 0 until this thread is done with the
// state (it may stop the versions, and the server may go, right after).
void InferenceServer::State::Finished() {
  std::lock_guard<std::mutex> lock(mutex);
  if (in_flight.fetch_sub(1, std::memory_order_relaxed) == 1) idle.notify_all();
}

// Calls `use` with the served version (or why there is none) and keeps it for
// the call. Drain waits for the calls in progress here, and for the requests
// they leave queued (InferAsync).
template <typename Use>
void InferenceServer::State::Run(const std::string& model, const std::string& version, Use&& use) {
  std::shared_ptr<ServedModel> served;
  Status refused = OkStatus();
  {
    std::lock_guard<std::mutex> lock(mutex);
    Result<std::shared_ptr<ServedModel>> found =
        draining ? Result<std::shared_ptr<ServedModel>>(Unavailable("the server is shutting down"))
                 : Find(model, version);
    if (found.ok()) {
      served = std::move(found).value();
      in_flight.fetch_add(1, std::memory_order_relaxed);
    } else {
      refused = found.status();
    }
  }
  // Errors too are answered without the lock: `use` may call the server.
  if (!refused.ok()) return use(Result<ServedModel*>(refused));
  use(Result<ServedModel*>(served.get()));
  served.reset();
  Finished();
}

std::vector<RepositoryEntry> InferenceServer::Index(bool ready_only) const {
  // Folders added since the start are listed too (then loadable by name).
  std::vector<std::string> folders;
  if (auto listed = ListModels(options_.model_repository); listed.ok()) folders = std::move(listed).value();
  std::lock_guard<std::mutex> lock(state_->mutex);
  std::map<std::string, const ModelEntry*> all;
  static const ModelEntry kUnloaded;
  for (const std::string& f : folders) all[f] = &kUnloaded;
  for (const auto& [name, entry] : state_->models) all[name] = &entry;
  std::vector<RepositoryEntry> index;
  for (const auto& [name, entry] : all) {
    if (entry->versions.empty()) {
      if (!ready_only) index.push_back({name, "", entry->state, entry->reason});
      continue;
    }
    for (const auto& [number, v] : entry->versions) index.push_back({name, std::to_string(number), "READY", ""});
  }
  return index;
}

Status InferenceServer::Load(const std::string& model) {
  HETRT_RETURN_IF_ERROR(CheckModelName(model));
  std::lock_guard<std::mutex> load_lock(state_->load_mutex);
  const std::string dir = options_.model_repository + "/" + model;
  auto fail = [&](const Status& s) {
    {
      std::lock_guard<std::mutex> lock(state_->mutex);
      ModelEntry& entry = state_->models[model];
      entry.wanted = true;
      entry.reason = s.message();
      if (entry.versions.empty()) entry.state = "UNAVAILABLE";
    }
    state_->NotifyReadiness();
    return s;
  };
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    if (state_->draining) return Unavailable("the server is shutting down");
  }
  auto models = ListModels(options_.model_repository);
  if (!models.ok()) return fail(models.status());
  if (std::find(models->begin(), models->end(), model) == models->end())
    return NotFound("no model '" + model + "' in the repository " + options_.model_repository);
  ModelConfig config;
  const std::string config_path = dir + "/config.json";
  if (std::ifstream(config_path).good()) {
    auto text = ReadText(config_path);
    if (!text.ok()) return fail(text.status());
    auto parsed = ParseModelConfig(*text, config_path);
    if (!parsed.ok()) return fail(parsed.status());
    config = std::move(parsed).value();
    // The server's plugin defaults, then the model's own (the later setting wins).
    if (!config.plugin_settings.empty())
      config.plugin_settings.insert(config.plugin_settings.begin(), options_.plugin_defaults.begin(),
                                    options_.plugin_defaults.end());
  }
  auto chosen = SelectVersions(dir, config);
  if (!chosen.ok()) return fail(chosen.status());
  std::shared_ptr<PluginRegistry> plugins;
  if (!config.plugin_settings.empty()) {
    {
      std::lock_guard<std::mutex> lock(state_->mutex);
      const ModelEntry& entry = state_->models[model];
      if (entry.plugins && entry.plugin_settings == config.plugin_settings) plugins = entry.plugins;
    }
    if (!plugins) {
      auto opened_plugins = OpenPluginsWith(config.plugin_settings);
      if (!opened_plugins.ok()) return fail(opened_plugins.status().WithContext(config_path));
      plugins = std::move(opened_plugins).value();
    }
  }
  // A library is loaded through one set of plugins at a time: a reload that
  // changes them (other parameters, or parameters added or dropped) stops the
  // versions served now before the new ones open. The model is unavailable
  // meanwhile; a reload that keeps them swaps versions without a gap.
  bool plugins_change = false;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    const ModelEntry& entry = state_->models[model];
    plugins_change = !entry.versions.empty() && entry.plugins != plugins;
  }
  if (plugins_change)
    if (Status s = RetireVersions(model, "reloading with other plugin settings"); !s.ok()) return fail(s);
  std::map<int64_t, std::shared_ptr<ServedModel>> opened;
  for (int64_t version : *chosen) {
    auto files = FindModelFiles(dir + "/" + std::to_string(version));
    if (!files.ok()) return fail(files.status());
    if (files->kind == ModelVersionFiles::Kind::kLanguageModel) {
      auto served = GenerativeModel::Open(model, version, *files, config, plugins);
      if (!served.ok()) return fail(served.status());
      opened[version] = std::move(served).value();
      continue;
    }
    if (config.has_generation)
      return fail(InvalidArgument(config_path + ": 'generation' is for language models; version " +
                                  std::to_string(version) + " is a tensor model"));
    auto served = ModelVersion::Open(model, version, *files, config, plugins);
    if (!served.ok()) return fail(served.status());
    opened[version] = std::move(served).value();
  }
  std::map<int64_t, std::shared_ptr<ServedModel>> retired;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    ModelEntry& entry = state_->models[model];
    retired.swap(entry.versions);
    entry.versions = std::move(opened);
    entry.plugins = std::move(plugins);
    entry.plugin_settings = config.plugin_settings;
    entry.wanted = true;
    entry.state = "READY";
    entry.reason.clear();
  }
  // The versions replaced finish what they queued; callers holding them get
  // their responses, new requests already go to the new versions.
  state_->NotifyReadiness();
  for (auto& [number, v] : retired) v->Stop();
  std::fprintf(stderr, "hetrt serve: model '%s' loaded (%zu version(s))\n", model.c_str(), chosen->size());
  return OkStatus();
}

Status InferenceServer::RetireVersions(const std::string& model, const std::string& reason) {
  std::map<int64_t, std::shared_ptr<ServedModel>> retired;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    ModelEntry& entry = state_->models[model];
    retired.swap(entry.versions);
    entry.state = "UNAVAILABLE";
    entry.reason = reason;
  }
  state_->NotifyReadiness();
  for (auto& [number, v] : retired) v->Stop();
  // Callers that were answered still hold their version for a moment; its
  // library must be released before another set of plugins loads it.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (auto& [number, v] : retired)
    while (v.use_count() > 1) {
      if (std::chrono::steady_clock::now() > deadline)
        return Unavailable("model '" + model + "' version " + std::to_string(number) +
                           " is still in use 10 s after it stopped; try the reload again");
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  return OkStatus();
}

Status InferenceServer::Unload(const std::string& model) {
  HETRT_RETURN_IF_ERROR(CheckModelName(model));
  std::lock_guard<std::mutex> load_lock(state_->load_mutex);
  std::map<int64_t, std::shared_ptr<ServedModel>> retired;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    auto it = state_->models.find(model);
    if (it == state_->models.end()) return NotFound("unknown model '" + model + "'");
    retired.swap(it->second.versions);
    it->second.plugins.reset();  // gone with the last version that runs on them
    it->second.plugin_settings.clear();
    it->second.wanted = false;
    it->second.state = "UNAVAILABLE";
    it->second.reason = "unloaded";
  }
  state_->NotifyReadiness();
  for (auto& [number, v] : retired) v->Stop();
  return OkStatus();
}

std::string InferenceServer::MetricsText() const {
  std::vector<std::shared_ptr<const ModelVersion>> versions;
  std::vector<std::shared_ptr<const GenerativeModel>> generative;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    for (const auto& [name, entry] : state_->models)
      for (const auto& [number, v] : entry.versions) {
        if (ModelVersion* tensor = v->tensor_model()) versions.emplace_back(v, tensor);  // aliasing: keeps `v`
        if (GenerativeModel* llm = v->generative_model()) generative.emplace_back(v, llm);
      }
  }
  return RenderMetrics(versions) + RenderGenerativeMetrics(generative);
}

Result<std::shared_ptr<Generation>> InferenceServer::Generate(GenerateRequest request, GenerationSink sink) {
  std::optional<Result<std::shared_ptr<Generation>>> started;
  state_->Run(request.model, request.version, [&](Result<ServedModel*> found) {
    GenerativeModel* llm = found.ok() ? (*found)->generative_model() : nullptr;
    if (!found.ok())
      started.emplace(found.status());
    else if (llm == nullptr)
      started.emplace(
          InvalidArgument("model '" + (*found)->name() + "' is not a language model: send its requests to /infer"));
    else
      started.emplace(llm->Start(std::move(request), std::move(sink)));
  });
  return std::move(*started);
}

int InferenceServer::AddReadinessObserver(std::function<void()> observer) {
  std::lock_guard<std::mutex> lock(state_->observers_mutex);
  state_->observers.emplace(state_->next_observer, std::move(observer));
  return state_->next_observer++;
}

void InferenceServer::RemoveReadinessObserver(int id) {
  std::lock_guard<std::mutex> lock(state_->observers_mutex);
  state_->observers.erase(id);
}

void InferenceServer::BeginDrain() {
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    if (state_->draining) return;
    state_->draining = true;
  }
  state_->NotifyReadiness();
}

void InferenceServer::Drain() {
  const auto deadline = std::chrono::steady_clock::now() + options_.drain_timeout;
  BeginDrain();
  {
    std::unique_lock<std::mutex> lock(state_->mutex);
    state_->idle.wait(lock, [&] { return state_->in_flight == 0; });
  }
  std::lock_guard<std::mutex> load_lock(state_->load_mutex);
  // Language models: nothing new is admitted and what is queued is refused;
  // running sequences go on until the deadline, then end with "shutdown".
  std::vector<GenerativeModel*> generating;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    for (auto& [name, entry] : state_->models)
      for (auto& [number, v] : entry.versions)
        if (GenerativeModel* llm = v->generative_model()) generating.push_back(llm);
  }
  for (GenerativeModel* llm : generating) llm->StopAdmission();
  auto busy = [&] {
    return std::any_of(generating.begin(), generating.end(), [](GenerativeModel* m) { return m->active() > 0; });
  };
  while (busy() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  for (GenerativeModel* llm : generating) llm->EndRunning();
  while (busy()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  // Stopped without the state lock: Stop joins instance threads, which may
  // still be on their way out of a request's bookkeeping.
  std::vector<std::shared_ptr<ServedModel>> served;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    for (auto& [name, entry] : state_->models)
      for (auto& [number, v] : entry.versions) served.push_back(v);
  }
  for (const auto& v : served) v->Stop();
}

}  // namespace hetrt::serve
